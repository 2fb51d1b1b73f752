#!/usr/bin/python3
"""Det cases for det.test: matrices of size 1 to 5 (batched and not), with
numpy.linalg.det (LU, an independent implementation) as the reference, and
invalid models.

    det_cases.py OUT.onnx REF.npz [--f64]
    det_cases.py --invalid DIR
"""

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

SHAPES = {"d1": [2, 1, 1], "d2": [2, 2], "d3": [3, 3, 3], "d4": [2, 4, 4],
          "d5": [5, 5]}


def build(elem):
    nodes, ins, outs = [], [], []
    for name, shape in SHAPES.items():
        ins.append(helper.make_tensor_value_info(f"{name}_x", elem, shape))
        outs.append(helper.make_tensor_value_info(name, elem, None))
        nodes.append(helper.make_node("Det", [f"{name}_x"], [name], name=name))
    m = helper.make_model(helper.make_graph(nodes, "det", ins, outs),
                          opset_imports=[helper.make_opsetid("", 11)])
    m.ir_version = 8
    return m


def single(shape, elem=TensorProto.FLOAT):
    node = helper.make_node("Det", ["x"], ["y"], name="det")
    graph = helper.make_graph(
        [node], "bad", [helper.make_tensor_value_info("x", elem, shape)],
        [helper.make_tensor_value_info("y", elem, None)])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    m.ir_version = 8
    return m


def main():
    if sys.argv[1] == "--invalid":
        onnx.save(single([6, 6]), f"{sys.argv[2]}/det_6.onnx")
        onnx.save(single([2, 3]), f"{sys.argv[2]}/det_rect.onnx")
        return
    f64 = "--f64" in sys.argv[3:]
    onnx.save(build(TensorProto.DOUBLE if f64 else TensorProto.FLOAT),
              sys.argv[1])
    rng = np.random.default_rng(11)
    arrays = {}
    for name, shape in SHAPES.items():
        x = rng.uniform(-1, 1, shape).astype(np.float64 if f64 else np.float32)
        arrays[f"in.{name}_x"] = x
        arrays[f"out.{name}"] = np.linalg.det(x.astype(np.float64)).astype(x.dtype)
    np.savez(sys.argv[2], **arrays)


if __name__ == "__main__":
    main()
