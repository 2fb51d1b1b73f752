#!/usr/bin/python3
"""Inputs and the float64 reference output of a bench/models/chain.py model.

    chain_reference.py MODEL.onnx IN.npz REF.npz [--seed S]

Reads the MatMul + Tanh chain's weights from the ONNX file (independently
of pipedream), draws x from a seeded normal distribution and computes
y = tanh(... tanh(x @ W1) ... @ WN) in float64 with numpy; y is stored as
float32 (the bundle's dtype; compare.py's tolerance covers the rounding).
"""

import argparse

import numpy as np
import onnx
from onnx import numpy_helper


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model")
    parser.add_argument("inputs")
    parser.add_argument("reference")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    graph = onnx.load(args.model).graph
    weights = {t.name: numpy_helper.to_array(t).astype(np.float64)
               for t in graph.initializer}
    shape = [d.dim_value for d in graph.input[0].type.tensor_type.shape.dim]
    x = np.random.default_rng(args.seed).standard_normal(shape)
    value = {"x": x}
    for node in graph.node:
        if node.op_type == "MatMul":
            value[node.output[0]] = value[node.input[0]] @ weights[node.input[1]]
        elif node.op_type == "Tanh":
            value[node.output[0]] = np.tanh(value[node.input[0]])
        else:
            raise SystemExit("unexpected op %s" % node.op_type)
    np.savez(args.inputs, x=x.astype(np.float32))
    np.savez(args.reference, y=value["y"].astype(np.float32))


if __name__ == "__main__":
    main()
