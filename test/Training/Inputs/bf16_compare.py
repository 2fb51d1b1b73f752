#!/usr/bin/python3
"""Checks a `--dtype bf16` training run against PyTorch's bf16 recipe.

    bf16_compare.py --losses LOSS.csv --trained TRAINED.onnx
        [--reference test/Training/Inputs/bf16/reference.npz]
        [--same-as OTHER.onnx]

reference.npz comes from bf16_reference.py (torch 2.x, committed): the
losses and trained weights of the same model, data and SGD steps with every
matmul on bf16 operands (f32 accumulation, f32 master weights), and of the
plain f32 recipe. Every step's loss and every weight must be within RTOL of
the bf16 recipe (relative to the weight's largest entry; the losses
relative), and the run must be at least SEPARATION times closer to the bf16
recipe than to the f32 one in the weights (so a run that ignores --dtype
bf16 fails). `--same-as`: the trained weights must equal OTHER's bit for bit
(thread counts, the emulated kernel). Prints `OK ...` or `MISMATCH ...`.
"""

import argparse
import csv
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
RTOL = 1e-5
SEPARATION = 50.0


def weights(path):
    model = onnx.load(path)
    return {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--losses", required=True)
    p.add_argument("--trained", required=True)
    p.add_argument("--reference",
                   default=os.path.join(HERE, "bf16", "reference.npz"))
    p.add_argument("--same-as")
    args = p.parse_args()
    ref = np.load(args.reference)
    with open(args.losses) as f:
        ours = np.array([float(r["loss"]) for r in csv.DictReader(f)])
    got = weights(args.trained)
    bad = 0
    want = ref["bf16/losses"]
    if ours.shape != want.shape:
        print(f"MISMATCH {ours.size} losses, the reference has {want.size}")
        return 1
    loss_err = float(np.max(np.abs(ours - want) / np.abs(want)))
    loss_f32 = float(np.max(np.abs(ours - ref["f32/losses"]) /
                            np.abs(ref["f32/losses"])))
    if loss_err > RTOL:
        print(f"MISMATCH losses {ours} vs torch bf16 {want}")
        bad += 1
    worst = {"bf16": 0.0, "f32": 0.0}
    for key in ref.files:
        recipe, _, name = key.partition("/")
        if name == "losses":
            continue
        if name not in got:
            print(f"MISMATCH the trained model lacks {name}")
            bad += 1
            continue
        r = ref[key]
        err = float(np.max(np.abs(got[name].astype(np.float64) - r)) /
                    max(float(np.max(np.abs(r))), 1e-12))
        worst[recipe] = max(worst[recipe], err)
        if recipe == "bf16" and err > RTOL:
            print(f"MISMATCH weight {name} differs from torch bf16 by {err:.3g}")
            bad += 1
    if worst["f32"] < SEPARATION * worst["bf16"]:
        print(f"MISMATCH the weights are not closer to torch bf16 "
              f"({worst['bf16']:.3g}) than to torch f32 ({worst['f32']:.3g}): "
              f"not a bf16 run?")
        bad += 1
    if args.same_as:
        other = weights(args.same_as)
        for name, value in got.items():
            if not np.array_equal(value, other.get(name)):
                print(f"MISMATCH weight {name} differs from {args.same_as}")
                bad += 1
    if not bad:
        print(f"OK bf16: losses {' '.join(f'{v:.6f}' for v in ours)}; vs torch "
              f"bf16: losses {loss_err:.2g}, weights {worst['bf16']:.2g}; vs "
              f"torch f32: losses {loss_f32:.2g}, weights {worst['f32']:.2g}"
              + ("; bitwise equal to " + os.path.basename(args.same_as)
                 if args.same_as else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
