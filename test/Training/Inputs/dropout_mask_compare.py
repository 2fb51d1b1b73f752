#!/usr/bin/python3
"""ONNX Dropout's mask output when pipedream trains the model: the mask must
be the one the dropout drew (nn.dropout_mask -> the nn.bernoulli draw).

    dropout_mask_compare.py --bin BUILD/bin --work DIR [--steps N] [--stages K]

Two ONNX models of one graph, h = x W1, (d, m) = Dropout(h, ratio 0.5),
out = (d + c * not(m) * h) W2, trained with the MSE loss:
- `mask`: reads Dropout's mask output m;
- `derived`: computes not(m) from the dropped values instead, d == 0 (h has
  no exact zeros: random float data), so it never reads the mask output.
Both draw the same mask (one dropout, same seed and step), so they train
identically exactly when m is the drawn mask. A mask that stayed all true
(inference semantics) or came from another draw makes the runs differ from
the first step: the dropped positions then carry c * h. Checked: every
step's loss and the trained weights equal within 1e-6 relative, the losses
change over the steps, and the eval-mode forward (`--inference` bundle of
`mask`) returns m all true and d = h.
Prints `OK ...` or `MISMATCH ...` lines; exits non-zero on a mismatch.
Uses Debian's python3-onnx and numpy.
"""

import argparse
import csv
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RTOL = 1e-6
BATCH, DIN, DH, DOUT = 8, 6, 16, 3


def model(read_mask, w1, w2):
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]),
             helper.make_node("Dropout", ["h", "ratio"], ["d", "m"], name="drop",
                              seed=0)]
    if read_mask:
        nodes.append(helper.make_node("Not", ["m"], ["dropped"]))
    else:
        nodes.append(helper.make_node("Equal", ["d", "zero"], ["dropped"]))
    nodes += [helper.make_node("Cast", ["dropped"], ["dropped_f"], to=TensorProto.FLOAT),
              helper.make_node("Mul", ["dropped_f", "h"], ["hd"]),
              helper.make_node("Mul", ["hd", "c"], ["hdc"]),
              helper.make_node("Add", ["d", "hdc"], ["z"]),
              helper.make_node("MatMul", ["z", "w2"], ["out"])]
    inits = [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")]
    # Constants as Constant nodes (initializers of float type would be
    # weights).
    consts = [helper.make_node("Constant", [], ["ratio"],
                               value=numpy_helper.from_array(np.array(0.5, np.float32))),
              helper.make_node("Constant", [], ["zero"],
                               value=numpy_helper.from_array(np.array(0.0, np.float32))),
              helper.make_node("Constant", [], ["c"],
                               value=numpy_helper.from_array(np.array(0.75, np.float32)))]
    graph = helper.make_graph(
        consts + nodes, "dropout_mask",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [BATCH, DIN])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [BATCH, DOUT])]
        + ([helper.make_tensor_value_info("m", TensorProto.BOOL, [BATCH, DH]),
            helper.make_tensor_value_info("d", TensorProto.FLOAT, [BATCH, DH])]
           if read_mask else []), inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def train(args, name, proto, data):
    path = os.path.join(args.work, f"{name}.onnx")
    onnx.save(proto, path)
    bundle = os.path.join(args.work, f"{name}.bundle")
    cmd = [os.path.join(args.bin, "pipedream-compile"), path, "-o", bundle,
           "--loss", "mse", "--optimizer", "sgd",
           "--lr", "0.05", "-O", "1"]
    if args.stages > 1:
        cmd += ["--stages", str(args.stages), "--schedule", "1f1b",
                "--microbatches", "4"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    log = os.path.join(args.work, f"{name}.csv")
    trained = os.path.join(args.work, f"{name}.trained.onnx")
    run = [os.path.join(args.bin, "pipedream-run"), bundle, "--data", data,
           "--steps", str(args.steps), "--loss-log", log, "--save-onnx", trained]
    if args.stages > 1:
        run += ["--transport", "threads"]
    subprocess.run(run, check=True, stdout=subprocess.DEVNULL)
    with open(log) as f:
        losses = [float(r["loss"]) for r in csv.DictReader(f)]
    weights = {i.name: numpy_helper.to_array(i)
               for i in onnx.load(trained).graph.initializer}
    return losses, weights


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--stages", type=int, default=1)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    rng = np.random.default_rng(5)
    w1 = (rng.standard_normal((DIN, DH)) * 0.4).astype(np.float32)
    w2 = (rng.standard_normal((DH, DOUT)) * 0.3).astype(np.float32)
    x = rng.standard_normal((BATCH, DIN)).astype(np.float32)
    target = rng.standard_normal((BATCH, DOUT)).astype(np.float32)
    data = os.path.join(args.work, "data.npz")
    np.savez(data, x=x, labels=target)

    bad = 0
    mask_losses, mask_w = train(args, "mask", model(True, w1, w2), data)
    derived_losses, derived_w = train(args, "derived", model(False, w1, w2), data)
    worst = 0.0
    for s, (a, b) in enumerate(zip(mask_losses, derived_losses)):
        rel = abs(a - b) / max(abs(b), 1e-12)
        worst = max(worst, rel)
        if rel > RTOL:
            print(f"MISMATCH step {s + 1} loss {a!r} (mask) vs {b!r} (derived)")
            bad += 1
    if len(mask_losses) != args.steps or len(derived_losses) != args.steps:
        print(f"MISMATCH {len(mask_losses)} / {len(derived_losses)} losses")
        bad += 1
    if len(set(mask_losses)) < 2:
        print(f"MISMATCH the loss did not change: {mask_losses}")
        bad += 1
    for name in ("w1", "w2"):
        ref = derived_w[name].astype(np.float64)
        rel = float(np.max(np.abs(mask_w[name] - ref))) / float(np.max(np.abs(ref)))
        worst = max(worst, rel)
        if rel > RTOL:
            print(f"MISMATCH weight {name} differs by {rel:.3g}")
            bad += 1
        if np.array_equal(mask_w[name], {"w1": w1, "w2": w2}[name]):
            print(f"MISMATCH weight {name} did not change")
            bad += 1

    # Eval mode: the inference bundle keeps everything, m all true, d = h.
    if args.stages == 1:
        path = os.path.join(args.work, "mask.onnx")
        bundle = os.path.join(args.work, "mask.inference")
        subprocess.run([os.path.join(args.bin, "pipedream-compile"), path, "-o",
                        bundle, "--inference", "-O", "1"], check=True,
                       stdout=subprocess.DEVNULL)
        feeds = os.path.join(args.work, "in.npz")
        np.savez(feeds, x=x)
        outs = os.path.join(args.work, "out.npz")
        subprocess.run([os.path.join(args.bin, "pipedream-run"), bundle,
                        "--inputs", feeds, "--outputs", outs], check=True,
                       stdout=subprocess.DEVNULL)
        got = np.load(outs)
        if not (got["m"].dtype == np.bool_ and got["m"].all()):
            print("MISMATCH eval-mode mask is not all true")
            bad += 1
        if not np.allclose(got["d"], x @ w1, rtol=1e-5, atol=1e-6):
            print("MISMATCH eval-mode dropout is not the identity")
            bad += 1
    if bad:
        sys.exit(1)
    where = f"{args.stages} stages, threads" if args.stages > 1 else "one rank"
    print(f"OK dropout mask ({where}): {args.steps} steps, worst relative "
          f"difference {worst:.3g}, losses {mask_losses[0]:.6f} -> {mask_losses[-1]:.6f}")


if __name__ == "__main__":
    main()
