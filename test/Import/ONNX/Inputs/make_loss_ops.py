#!/usr/bin/python3
"""Writes small SoftmaxCrossEntropyLoss / NegativeLogLikelihoodLoss models.

    make_loss_ops.py OUT_DIR

sce.onnx: scores [2, 3, 4] (N, C, d1), labels [2, 4], class weights
initializer `cw`, ignore_index 1, both outputs (loss, log_prob).
nll_bad_reduction.onnx: reduction "max". nll_bad_target.onnx: a target of
shape [2, 5] for input [2, 3, 4].
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(out, name, nodes, inputs, outputs, init=()):
    graph = helper.make_graph(nodes, name, inputs, outputs, list(init))
    model = helper.make_model(graph, producer_name="make_loss_ops",
                              opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(model, os.path.join(out, name + ".onnx"))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    f = TensorProto.FLOAT
    i64 = TensorProto.INT64
    vi = helper.make_tensor_value_info
    cw = numpy_helper.from_array(np.array([1.0, 2.0, 0.5], np.float32), "cw")
    save(out, "sce",
         [helper.make_node("SoftmaxCrossEntropyLoss", ["s", "t", "cw"],
                           ["loss", "log_prob"], name="sce",
                           ignore_index=1, reduction="mean")],
         [vi("s", f, [2, 3, 4]), vi("t", i64, [2, 4])],
         [vi("loss", f, []), vi("log_prob", f, [2, 3, 4])], [cw])
    save(out, "nll_bad_reduction",
         [helper.make_node("NegativeLogLikelihoodLoss", ["x", "t"], ["loss"],
                           name="nll", reduction="max")],
         [vi("x", f, [2, 3, 4]), vi("t", i64, [2, 4])],
         [vi("loss", f, [])])
    save(out, "nll_bad_target",
         [helper.make_node("NegativeLogLikelihoodLoss", ["x", "t"], ["loss"],
                           name="nll", reduction="sum")],
         [vi("x", f, [2, 3, 4]), vi("t", i64, [2, 5])],
         [vi("loss", f, [])])


if __name__ == "__main__":
    main()
