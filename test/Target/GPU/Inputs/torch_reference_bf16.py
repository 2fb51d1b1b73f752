#!/usr/bin/python3
"""PyTorch reference of `--dtype bf16` inference for models/export_torch.py.

    torch_reference_bf16.py SRC_ROOT MODEL IN.npz REF.npz [--batch B]

Rebuilds MODEL as export_torch.py does (same seed, same weights) and runs
it in eval mode on the inputs of IN.npz (written by torch_reference.py)
with every matrix product in the mixed-precision recipe of docs/GPU.md:
operands rounded to bf16 (round-to-nearest-even, torch's
`.bfloat16()`), products of those summed in f32 (torch's f32 matmul on the
rounded values), the product rounded to bf16, then the bias (if any)
added in f32. Everything else (softmax, layer norm, GELU, batch norm,
pooling) stays f32. Writes REF.npz named after the graph output. The
reference is PyTorch's, never pipedream's.

Uses Debian's /usr/bin/python3 with python3-torch and python3-numpy.
"""

import argparse
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F


def rb(x):
    """x rounded to bf16 (round-to-nearest-even), as f32."""
    return x.bfloat16().float()


def install_bf16_products():
    linear, conv2d, matmul = F.linear, F.conv2d, torch.Tensor.__matmul__

    def bf16_linear(x, w, b=None):
        y = rb(linear(rb(x), rb(w)))
        return y if b is None else y + b

    def bf16_conv2d(x, w, b=None, *args, **kwargs):
        y = rb(conv2d(rb(x), rb(w), None, *args, **kwargs))
        return y if b is None else y + b.view(1, -1, 1, 1)

    def bf16_matmul(a, b):
        return rb(matmul(rb(a), rb(b)))

    F.linear = bf16_linear
    F.conv2d = bf16_conv2d
    torch.Tensor.__matmul__ = bf16_matmul


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("src_root")
    parser.add_argument("model")
    parser.add_argument("inputs")
    parser.add_argument("reference")
    parser.add_argument("--batch", type=int, default=2)
    args = parser.parse_args()

    sys.path.insert(0, os.path.join(args.src_root, "models"))
    import export_torch

    torch.manual_seed(0)
    model, example, input_name, output_name = export_torch.build(
        args.model, args.batch)
    model.eval()
    x = torch.from_numpy(np.load(args.inputs)[input_name])
    install_bf16_products()
    with torch.no_grad():
        y = model(x)
    np.savez(args.reference, **{output_name: y.numpy()})


if __name__ == "__main__":
    main()
