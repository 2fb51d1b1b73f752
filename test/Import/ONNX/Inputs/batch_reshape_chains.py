#!/usr/bin/python3
"""Random Reshape/Transpose chains over a static batch: never a silent change.

    batch_reshape_chains.py --bin BUILD/bin --count N [--seed S] [--work DIR]

Builds N random models x[2, 8, 32] -> (Reshape to a random factorization /
Transpose by a random permutation)* -> Reshape [2, 8, 32] -> y, and imports
each at batch 1 or 3. Every model is either refused with one error line or
its re-specialized inference bundle agrees, sample by sample, with the model
run at its own batch (batch_consistency.py). Prints `OK ...` with the counts
or `MISMATCH ...`; exits non-zero on a mismatch or a crash.
"""

import argparse
import os
import random
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))


def factorization(n, rng):
    out = []
    while n > 1:
        divisors = [d for d in range(2, n + 1) if n % d == 0][:6]
        d = rng.choice(divisors)
        out.append(d)
        n //= d
    if rng.random() < 0.3:
        out.insert(rng.randrange(len(out) + 1), 1)
    if rng.random() < 0.5:
        rng.shuffle(out)
    return out or [1]


def chain_model(rng):
    nodes, inits, cur, shape = [], [], "x", [2, 8, 32]
    for j in range(rng.randint(1, 4)):
        if rng.random() < 0.6:
            t = (factorization(512, rng) if rng.random() < 0.7
                 else [2] + factorization(256, rng))
            inits.append(numpy_helper.from_array(np.array(t, np.int64), f"t{j}"))
            nodes.append(helper.make_node("Reshape", [cur, f"t{j}"], [f"r{j}"],
                                          name=f"reshape{j}"))
            cur, shape = f"r{j}", t
        else:
            perm = list(range(len(shape)))
            rng.shuffle(perm)
            nodes.append(helper.make_node("Transpose", [cur], [f"p{j}"],
                                          perm=perm, name=f"transpose{j}"))
            cur, shape = f"p{j}", [shape[i] for i in perm]
    inits.append(numpy_helper.from_array(np.array([2, 8, 32], np.int64), "tf"))
    nodes.append(helper.make_node("Reshape", [cur, "tf"], ["y"], name="final"))
    graph = helper.make_graph(
        nodes, "chain", [helper.make_tensor_value_info("x", 1, [2, 8, 32])],
        [helper.make_tensor_value_info("y", 1, None)], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--count", type=int, default=10)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--work")
    args = p.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="batch-chains-")
    os.makedirs(work, exist_ok=True)
    rng = random.Random(args.seed)
    counts = {"agree": 0, "refused": 0}
    for i in range(args.count):
        path = os.path.join(work, f"chain{i}.onnx")
        onnx.save(chain_model(rng), path)
        batch = rng.choice([1, 3])
        r = subprocess.run(
            [os.path.join(args.bin, "pipedream-translate"), "--import-onnx",
             path, "--input-shape", f"x={batch}x8x32", "-o", os.devnull],
            capture_output=True, text=True)
        if r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1:
            counts["refused"] += 1
            continue
        if r.returncode != 0:
            print(f"MISMATCH {path}: exit {r.returncode}: {r.stderr[-300:]}")
            return 1
        c = subprocess.run(
            [sys.executable, os.path.join(HERE, "batch_consistency.py"),
             "--bin", args.bin, "--model", path, "--input", "x", "--batch",
             str(batch), "--work", os.path.join(work, f"w{i}")],
            capture_output=True, text=True)
        if c.returncode:
            print(f"MISMATCH {path} at batch {batch}: {c.stdout.strip()}")
            return 1
        counts["agree"] += 1
    print(f"OK {args.count} chains: {counts['agree']} agree with the model "
          f"per sample, {counts['refused']} refused")
    return 0


if __name__ == "__main__":
    sys.exit(main())
