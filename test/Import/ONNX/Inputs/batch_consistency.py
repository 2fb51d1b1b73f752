#!/usr/bin/python3
"""A re-specialized static batch computes what the model does per sample.

    batch_consistency.py --bin BUILD/bin --model M.onnx --input NAME
        --batch B [--work DIR]

The model (one float graph input NAME with a static batch B0, samples
independent of each other) is compiled twice as an inference bundle: at its
own batch (no re-specialization) and with `--input-shape NAME=B x ...`
(re-specialized). B random samples run through the second; the first runs
them B0 at a time (the last group padded by repeating a sample). Every
output row must agree (1e-6 relative to the largest entry). Prints `OK ...`
or `MISMATCH ...`; exits non-zero on a mismatch.
"""

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx


def run_bundle(bin_dir, model, bundle, name, x, work, shape=None):
    cmd = [os.path.join(bin_dir, "pipedream-compile"), model, "-o", bundle,
           "--inference"]
    if shape:
        cmd += ["--input-shape", f"{name}={shape}"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    inputs = os.path.join(work, "in.npz")
    outputs = os.path.join(work, "out.npz")
    np.savez(inputs, **{name: x})
    subprocess.run([os.path.join(bin_dir, "pipedream-run"), bundle,
                    "--inputs", inputs, "--outputs", outputs], check=True,
                   stdout=subprocess.DEVNULL)
    out = np.load(outputs)
    return {k: out[k] for k in out.files}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--input", required=True)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--work")
    args = p.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="batch-consistency-")
    os.makedirs(work, exist_ok=True)
    graph = onnx.load(args.model).graph
    vi = next(i for i in graph.input if i.name == args.input)
    dims = [d.dim_value for d in vi.type.tensor_type.shape.dim]
    b0 = dims[0]
    rng = np.random.default_rng(5)
    x = rng.standard_normal([args.batch] + dims[1:]).astype(np.float32)
    shape = "x".join(str(d) for d in [args.batch] + dims[1:])
    got = run_bundle(args.bin, args.model, os.path.join(work, "new"),
                     args.input, x, work, shape)
    rows = {k: [] for k in got}
    for start in range(0, args.batch, b0):
        group = x[start:start + b0]
        pad = b0 - group.shape[0]
        if pad:
            group = np.concatenate([group, np.repeat(group[-1:], pad, 0)])
        ref = run_bundle(args.bin, args.model, os.path.join(work, "own"),
                         args.input, group, work)
        for k in rows:
            rows[k].append(ref[k][:b0 - pad])
    bad = 0
    for k, v in got.items():
        ref = np.concatenate(rows[k])
        if v.shape != ref.shape:
            print(f"MISMATCH {k}: shape {v.shape}, per-sample {ref.shape}")
            bad += 1
            continue
        scale = max(float(np.max(np.abs(ref))), 1e-12)
        rel = float(np.max(np.abs(v.astype(np.float64) - ref))) / scale
        if rel > 1e-6:
            print(f"MISMATCH {k}: differs from the per-sample run by {rel:.3g}")
            bad += 1
        else:
            print(f"OK {k}: batch {b0} -> {args.batch}, {v.size} values, "
                  f"worst relative error {rel:.2g}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
