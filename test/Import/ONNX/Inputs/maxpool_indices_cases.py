#!/usr/bin/python3
"""MaxPool with its Indices output beyond ONNX's two node conformance tests:
batch and channels > 1 (the index counts N and C), storage_order=1
(column-major spatial index), 1-D and 3-D pools, dilations, asymmetric
pads, ceil_mode, auto_pad; one ONNX model (opset 12) on one input per case.

    maxpool_indices_cases.py OUT.onnx
    maxpool_indices_cases.py --invalid DIR   (one small model per bad case)

Its onnxruntime reference is maxpool_indices_reference.npz
(make_reference.py); maxpool-indices.test compares against it.
"""

import sys

import onnx
from onnx import TensorProto, helper

F, I64 = TensorProto.FLOAT, TensorProto.INT64

CASES = [
    # name, input shape, attributes
    ("p2d", [2, 3, 5, 6], dict(kernel_shape=[2, 3], strides=[2, 1],
                               pads=[1, 0, 0, 2])),
    ("p2d_col", [2, 2, 5, 4], dict(kernel_shape=[3, 2], strides=[1, 2],
                                   pads=[1, 1, 1, 0], storage_order=1)),
    ("p2d_dil_ceil", [1, 2, 7, 7], dict(kernel_shape=[2, 2], strides=[2, 2],
                                        dilations=[2, 1], ceil_mode=1)),
    ("p2d_same", [1, 2, 5, 5], dict(kernel_shape=[3, 3], strides=[2, 2],
                                    auto_pad="SAME_UPPER")),
    ("p1d", [2, 2, 9], dict(kernel_shape=[3], strides=[2], pads=[1, 1])),
    ("p3d", [1, 2, 4, 3, 5], dict(kernel_shape=[2, 2, 3],
                                  strides=[2, 1, 2], pads=[0, 1, 1, 1, 0, 1])),
]


def build():
    nodes, ins, outs = [], [], []
    for name, shape, attrs in CASES:
        ins.append(helper.make_tensor_value_info(f"{name}_x", F, shape))
        outs.append(helper.make_tensor_value_info(f"{name}_y", F, None))
        outs.append(helper.make_tensor_value_info(f"{name}_i", I64, None))
        nodes.append(helper.make_node("MaxPool", [f"{name}_x"],
                                      [f"{name}_y", f"{name}_i"], name=name,
                                      **attrs))
    graph = helper.make_graph(nodes, "maxpool_indices", ins, outs)
    m = helper.make_model(graph, producer_name="maxpool_indices_cases",
                          opset_imports=[helper.make_opsetid("", 12)])
    m.ir_version = 7
    return m


def single(opset, **attrs):
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], name="pool",
                            kernel_shape=[2], **attrs)
    graph = helper.make_graph(
        [node], "bad", [helper.make_tensor_value_info("x", F, [1, 1, 4])],
        [helper.make_tensor_value_info("y", F, None),
         helper.make_tensor_value_info("i", I64, None)])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 7
    return m


INVALID = {
    "storage_order": lambda: single(12, storage_order=2),
    "opset1_indices": lambda: single(1),
}


def main():
    if sys.argv[1] == "--invalid":
        for name, make in INVALID.items():
            onnx.save(make(), f"{sys.argv[2]}/{name}.onnx")
        return
    onnx.save(build(), sys.argv[1])


if __name__ == "__main__":
    main()
