#!/usr/bin/python3
"""Writes an f64 ONNX model of the ops the importer composes from nn ops
(ConvTranspose, Resize, InstanceNormalization, LRN,
MeanVarianceNormalization, LayerNormalization statistics, Pad, Tile,
DepthToSpace, Einsum, OneHot values, GatherElements, MaxUnpool, BatchNormalization training_mode=1) for
onnx-compositions.test, which imports it and checks the derivative rules of
the composition with gradcheck.py's finite differences.

    onnx_compositions.py OUT.onnx [OUTPUT...]

(only the named graph outputs, when given).

Uses Debian's /usr/bin/python3 with python3-onnx (1.12) and numpy.
"""

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F64, I64 = TensorProto.DOUBLE, TensorProto.INT64


def const(name, array):
    return helper.make_node("Constant", [], [name], name=name,
                            value=numpy_helper.from_array(np.asarray(array)))


def main(out, keep):
    nodes = [
        const("scales", np.array([1, 1, 2, 1.5])),
        const("sizes", np.array([1, 2, 4, 5], np.int64)),
        const("pads", np.array([0, 0, 1, 2, 0, 0, 1, 1], np.int64)),
        const("reps", np.array([1, 2, 1, 2], np.int64)),
        const("depth", np.array(3, np.int64)),
        const("ids", np.array([[0, 2, -1], [1, -3, 2]], np.int64)),
        const("gi", np.array([[[[0, 2, 1], [2, 2, 0]], [[1, 0, 0], [2, 1, 1]]]],
                             np.int64)),
        const("ui", np.array([[[[0, 3, 4], [9, 14, 23]],
                               [[24, 27, 30], [40, 45, 47]]]], np.int64)),
        helper.make_node("ConvTranspose", ["x", "w", "b"], ["ct"], name="ct",
                         strides=[2, 2], pads=[1, 0, 0, 1],
                         output_padding=[1, 0], group=2),
        helper.make_node("Resize", ["x", "", "scales"], ["rl"], name="rl",
                         mode="linear",
                         coordinate_transformation_mode="align_corners"),
        helper.make_node("Resize", ["x", "", "", "sizes"], ["rc"], name="rc",
                         mode="cubic", exclude_outside=1),
        helper.make_node("InstanceNormalization", ["x", "s", "b2"], ["in"],
                         name="in"),
        helper.make_node("LRN", ["x"], ["lrn"], name="lrn", size=3,
                         alpha=0.5, beta=0.75, bias=2.0),
        helper.make_node("MeanVarianceNormalization", ["x"], ["mvn"],
                         name="mvn"),
        helper.make_node("LayerNormalization", ["x", "g", "b3"],
                         ["ln", "mean", "inv"], name="ln", axis=2),
        helper.make_node("Pad", ["x", "pads"], ["pr"], name="pr",
                         mode="reflect"),
        helper.make_node("Pad", ["x", "pads"], ["pe"], name="pe", mode="edge"),
        helper.make_node("Tile", ["x", "reps"], ["ti"], name="ti"),
        helper.make_node("DepthToSpace", ["x4"], ["d2s"], name="d2s",
                         blocksize=2),
        helper.make_node("Einsum", ["a", "c"], ["es"], name="es",
                         equation="bij,bkj->bik"),
        helper.make_node("OneHot", ["ids", "depth", "vals"], ["oh"], name="oh",
                         axis=0),
        helper.make_node("GatherElements", ["x", "gi"], ["ge"], name="ge",
                         axis=3),
        helper.make_node("MaxUnpool", ["x", "ui"], ["mu"], name="mu",
                         kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("BatchNormalization", ["x", "s", "b2", "rm", "rv"],
                         ["bnt", "bnt_mean", "bnt_var"], name="bnt",
                         training_mode=1, momentum=0.8),
    ]
    ins = [helper.make_tensor_value_info(n, F64, s) for n, s in [
        ("x", [1, 2, 2, 3]), ("w", [2, 2, 3, 2]), ("b", [4]), ("s", [2]),
        ("b2", [2]), ("g", [2, 3]), ("b3", [2, 3]), ("x4", [1, 4, 2, 3]),
        ("a", [2, 3, 4]), ("c", [2, 2, 4]), ("vals", [2]), ("rm", [2]),
        ("rv", [2])]]
    outs = [helper.make_tensor_value_info(n, F64, None) for n in
            ["ct", "rl", "rc", "in", "lrn", "mvn", "ln", "mean", "inv", "pr",
             "pe", "ti", "d2s", "es", "oh", "ge", "mu", "bnt", "bnt_mean",
             "bnt_var"] if not keep or n in keep]
    graph = helper.make_graph(nodes, "compositions", ins, outs)
    m = helper.make_model(graph, producer_name="onnx_compositions",
                          opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
