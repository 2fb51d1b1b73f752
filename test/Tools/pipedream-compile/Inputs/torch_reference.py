#!/usr/bin/python3
"""Reference inputs and outputs for the models of models/export_torch.py.

    torch_reference.py SRC_ROOT MODEL IN.npz REF.npz [--batch B] [--seed S]
                       [--layers L]

Rebuilds MODEL exactly as export_torch.py does (same seed, so the same
weights as the exported ONNX file), draws fresh inputs from SEED and writes
them to IN.npz and PyTorch's eval-mode output to REF.npz, named after the
graph input and output. The reference is PyTorch's, never pipedream's.

Uses Debian's /usr/bin/python3 with python3-torch and python3-numpy.
"""

import argparse
import os
import sys

import numpy as np
import torch


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("src_root")
    parser.add_argument("model")
    parser.add_argument("inputs")
    parser.add_argument("reference")
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--layers", type=int, default=None,
                        help="GPT blocks (export_torch.py --layers)")
    args = parser.parse_args()

    sys.path.insert(0, os.path.join(args.src_root, "models"))
    import export_torch

    torch.manual_seed(0)
    model, example, input_name, output_name = export_torch.build(
        args.model, args.batch, layers=args.layers)
    model.eval()

    generator = torch.Generator().manual_seed(args.seed)
    if example.dtype == torch.int64:
        x = torch.randint(0, 64, tuple(example.shape), generator=generator)
    else:
        x = torch.randn(tuple(example.shape), generator=generator)
    with torch.no_grad():
        y = model(x)
    np.savez(args.inputs, **{input_name: x.numpy()})
    np.savez(args.reference, **{output_name: y.numpy()})


if __name__ == "__main__":
    main()
