#!/opt/venv/bin/python
"""Exports the GPT test model with torch 2's dynamo exporter (static batch).

    /opt/venv/bin/python models/export_dynamo.py OUT.onnx [--batch B]

The module is export_torch.py's `gpt` built with the same seed, so its
weights equal those test/Training/Inputs/torch_compare.py trains with
torch 1.13. `torch.onnx.export(..., dynamo=True)` writes what torch 1.13
cannot: opset 20 (Gelu as one op), Split-18 with num_outputs, shape
targets as initializers (one Reshape target shared by three nodes), and a
static batch everywhere (the default; --batch 2). The committed
test/Training/Inputs/gpt-dynamo-static2.onnx is this script's output; it
needs torch >= 2.5 with onnxscript (the /opt/venv of the development
machine), not CI's torch 1.13.
"""

import argparse
import os
import sys
import warnings

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_torch  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output")
    parser.add_argument("--batch", type=int, default=2)
    args = parser.parse_args()
    torch.manual_seed(0)
    model, example, input_name, output_name = export_torch.build(
        "gpt", args.batch)
    model.eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (example,), args.output,
                          input_names=[input_name],
                          output_names=[output_name], dynamo=True,
                          external_data=False, verbose=False)


if __name__ == "__main__":
    main()
