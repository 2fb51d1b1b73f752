#!/usr/bin/python3
"""A small ONNX model with its inputs and numpy reference, for the tests.

    make_model.py OUT.onnx IN.npz REF.npz [--batch B] [--dynamic-batch]

The model: x[B, 16] -> MatMul(fc1.weight[16, 32]) + fc1.bias -> Relu
-> Gemm(fc2.weight[8, 32], fc2.bias, transB=1) -> y[B, 8], opset 17, with
initializers of fixed values. The reference is computed here with numpy
(float64, rounded to float32), never by pipedream.

Uses Debian's /usr/bin/python3 with python3-onnx and python3-numpy.
"""

import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("inputs")
    parser.add_argument("reference")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--dynamic-batch", action="store_true")
    args = parser.parse_args()

    rng = np.random.default_rng(11)
    w1 = rng.standard_normal((16, 32)).astype(np.float32)
    b1 = rng.standard_normal((32,)).astype(np.float32)
    w2 = rng.standard_normal((8, 32)).astype(np.float32)
    b2 = rng.standard_normal((8,)).astype(np.float32)
    batch = "batch" if args.dynamic_batch else args.batch

    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "fc1.weight"], ["h0"], name="fc1"),
            helper.make_node("Add", ["h0", "fc1.bias"], ["h1"], name="fc1_bias"),
            helper.make_node("Relu", ["h1"], ["h2"], name="relu"),
            helper.make_node("Gemm", ["h2", "fc2.weight", "fc2.bias"], ["y"],
                             name="fc2", transB=1),
        ],
        "small_mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 8])],
        initializer=[
            numpy_helper.from_array(w1, "fc1.weight"),
            numpy_helper.from_array(b1, "fc1.bias"),
            numpy_helper.from_array(w2, "fc2.weight"),
            numpy_helper.from_array(b2, "fc2.bias"),
        ])
    model = helper.make_model(graph, producer_name="make_model.py",
                              opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, args.model)

    x = rng.standard_normal((args.batch, 16)).astype(np.float32)
    h = np.maximum(x.astype(np.float64) @ w1 + b1, 0.0)
    y = h @ w2.T.astype(np.float64) + b2
    np.savez(args.inputs, x=x)
    np.savez(args.reference, y=y.astype(np.float32))


if __name__ == "__main__":
    main()
