#!/usr/bin/python3
"""Two training runs agree: compare_runs.py A.csv B.csv A.onnx B.onnx RTOL

Compares the loss logs step by step and every initializer of the two
trained models (relative to the tensor's largest entry); prints
`losses agree` and `weights agree`, or `MISMATCH ...` and exits 1."""

import csv
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def losses(path):
    with open(path) as f:
        return [float(r["loss"]) for r in csv.DictReader(f)]


def weights(path):
    return {i.name: numpy_helper.to_array(i)
            for i in onnx.load(path).graph.initializer}


def main():
    a_csv, b_csv, a_onnx, b_onnx, rtol = sys.argv[1:6]
    rtol = float(rtol)
    la, lb = losses(a_csv), losses(b_csv)
    if len(la) != len(lb) or not la or any(
            abs(x - y) > rtol * max(abs(y), 1e-12) for x, y in zip(la, lb)):
        print(f"MISMATCH losses {la} vs {lb}")
        return 1
    print("losses agree")
    wa, wb = weights(a_onnx), weights(b_onnx)
    if set(wa) != set(wb):
        print(f"MISMATCH initializers {sorted(wa)} vs {sorted(wb)}")
        return 1
    for name, x in wa.items():
        y = wb[name]
        scale = max(float(np.max(np.abs(y))) if y.size else 0.0, 1e-12)
        if x.shape != y.shape or (x.size and float(np.max(np.abs(
                x.astype(np.float64) - y))) > rtol * scale):
            print(f"MISMATCH weight {name}")
            return 1
    print("weights agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
