#!/usr/bin/python3
"""Writes constant_initializers.onnx: constants stored as float initializers.

    make_constant_initializers.py OUT_DIR

The shapes of what torch's dynamo exporter and onnxscript's optimizer leave
as initializers: an RMSNorm's exponent `two` and `eps` (rank 0), a float
`mask` only compared (Equal -> Where), rotary-style `cos`/`sin` tables
(Mul), an int64 `shape` for Reshape, and the parameters `w`, `b`.
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(0)
    init = [
        numpy_helper.from_array(rng.standard_normal((4, 4)).astype(np.float32), "w"),
        numpy_helper.from_array(np.zeros(4, np.float32), "b"),
        numpy_helper.from_array(np.array(2.0, np.float32), "two"),
        numpy_helper.from_array(np.array(1e-6, np.float32), "eps"),
        numpy_helper.from_array(np.array([1, 0, 1, 1], np.float32), "mask"),
        numpy_helper.from_array(np.array(0.0, np.float32), "zero"),
        numpy_helper.from_array(np.array(-1e4, np.float32), "neg_inf"),
        numpy_helper.from_array(np.cos(np.arange(8.0).reshape(2, 4)).astype(np.float32), "cos"),
        numpy_helper.from_array(np.sin(np.arange(8.0).reshape(2, 4)).astype(np.float32), "sin"),
        numpy_helper.from_array(np.array([2, 4], np.int64), "shape"),
    ]
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h0"]),
        helper.make_node("Add", ["h0", "b"], ["h"]),
        helper.make_node("Pow", ["h", "two"], ["sq"]),
        helper.make_node("ReduceMean", ["sq"], ["ms"], axes=[-1], keepdims=1),
        helper.make_node("Add", ["ms", "eps"], ["var"]),
        helper.make_node("Sqrt", ["var"], ["rms"]),
        helper.make_node("Div", ["h", "rms"], ["n"]),
        helper.make_node("Mul", ["n", "cos"], ["rc"]),
        helper.make_node("Mul", ["n", "sin"], ["rs"]),
        helper.make_node("Add", ["rc", "rs"], ["r"]),
        helper.make_node("Equal", ["mask", "zero"], ["masked"]),
        helper.make_node("Where", ["masked", "neg_inf", "r"], ["m"]),
        helper.make_node("Reshape", ["m", "shape"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "constant_initializers",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
        init)
    model = helper.make_model(graph, producer_name="make_constant_initializers",
                              opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out, "constant_initializers.onnx"))


if __name__ == "__main__":
    main()
