#!/usr/bin/python3
"""Integer Clip (opset 12+) models for clip-integers.test, with numpy
references (`np.minimum(np.maximum(x, min), max)`, check_reference.py's
format):

  int_clip.onnx: int64 with constant bounds past 2^53 (a double bound
    would round them), int32 with bounds that are graph inputs, uint8 past
    the signed range, int8 with min > max (every element max), int64 with
    max only, and an int64 Clip of a constant (folded at import) whose
    result feeds an Add;
  int_clip_vector.onnx: a bound that is not a scalar (an error).

    int_clip_cases.py OUT_DIR
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    big = 2 ** 53
    a = np.array([big + 1, big + 3, -(big + 5), 7, big + 2, -3], np.int64)
    lo_a, hi_a = np.int64(-(big + 1)), np.int64(big + 1)
    b = np.array([[5, -9, 100], [0, 41, -40]], np.int32)
    lo_b, hi_b = np.int32(-10), np.int32(40)
    c = np.array([0, 130, 255, 127, 200, 3], np.uint8)
    lo_c, hi_c = np.uint8(128), np.uint8(250)
    d = np.array([-128, 0, 127, 5], np.int8)
    lo_d, hi_d = np.int8(9), np.int8(-2)
    e = np.array([3, 2 ** 62, -5], np.int64)
    hi_e = np.int64(2 ** 61 + 1)
    f_const = np.array([big + 7, -1, 12], np.int64)

    inits = [
        numpy_helper.from_array(lo_a.reshape(()), "lo_a"),
        numpy_helper.from_array(hi_a.reshape(()), "hi_a"),
        numpy_helper.from_array(lo_c.reshape(()), "lo_c"),
        numpy_helper.from_array(hi_c.reshape(()), "hi_c"),
        numpy_helper.from_array(lo_d.reshape(()), "lo_d"),
        numpy_helper.from_array(hi_d.reshape(()), "hi_d"),
        numpy_helper.from_array(hi_e.reshape(()), "hi_e"),
        numpy_helper.from_array(f_const, "f_const"),
        numpy_helper.from_array(np.int64(big + 3).reshape(()), "hi_f"),
    ]
    nodes = [
        helper.make_node("Clip", ["a", "lo_a", "hi_a"], ["ya"]),
        helper.make_node("Clip", ["b", "lo_b", "hi_b"], ["yb"]),
        helper.make_node("Clip", ["c", "lo_c", "hi_c"], ["yc"]),
        helper.make_node("Clip", ["d", "lo_d", "hi_d"], ["yd"]),
        helper.make_node("Clip", ["e", "", "hi_e"], ["ye"]),
        helper.make_node("Clip", ["f_const", "", "hi_f"], ["f_clipped"]),
        helper.make_node("Add", ["f_clipped", "f_in"], ["yf"]),
    ]

    def vi(name, dtype, shape):
        return helper.make_tensor_value_info(name, dtype, shape)
    graph = helper.make_graph(
        nodes, "int_clip",
        [vi("a", TensorProto.INT64, [6]), vi("b", TensorProto.INT32, [2, 3]),
         vi("lo_b", TensorProto.INT32, []), vi("hi_b", TensorProto.INT32, []),
         vi("c", TensorProto.UINT8, [6]), vi("d", TensorProto.INT8, [4]),
         vi("e", TensorProto.INT64, [3]), vi("f_in", TensorProto.INT64, [3])],
        [vi("ya", TensorProto.INT64, [6]), vi("yb", TensorProto.INT32, [2, 3]),
         vi("yc", TensorProto.UINT8, [6]), vi("yd", TensorProto.INT8, [4]),
         vi("ye", TensorProto.INT64, [3]), vi("yf", TensorProto.INT64, [3])],
        inits)
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out, "int_clip.onnx"))

    f_in = np.array([1, 2, 3], np.int64)
    clip = lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi)
    arrays = {"in.a": a, "in.b": b, "in.lo_b": lo_b, "in.hi_b": hi_b,
              "in.c": c, "in.d": d, "in.e": e, "in.f_in": f_in,
              "out.ya": clip(a, lo_a, hi_a), "out.yb": clip(b, lo_b, hi_b),
              "out.yc": clip(c, lo_c, hi_c), "out.yd": clip(d, lo_d, hi_d),
              "out.ye": np.minimum(e, hi_e),
              "out.yf": np.minimum(f_const, np.int64(big + 3)) + f_in}
    np.savez(os.path.join(out, "int_clip.npz"), **arrays)

    graph = helper.make_graph(
        [helper.make_node("Clip", ["x", "lo"], ["y"], name="clip_vector")],
        "int_clip_vector", [vi("x", TensorProto.INT64, [2])],
        [vi("y", TensorProto.INT64, [2])],
        [numpy_helper.from_array(np.array([1, 2], np.int64), "lo")])
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, os.path.join(out, "int_clip_vector.onnx"))


if __name__ == "__main__":
    main()
