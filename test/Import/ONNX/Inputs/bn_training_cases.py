#!/usr/bin/python3
"""BatchNormalization with training_mode=1 for batchnorm-training-mode.test:
a valid model with the running statistics outputs used, and invalid ones.

    bn_training_cases.py DIR
"""

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT


def bn(name, x_shape, stat_shape, outputs=("y", "rm", "rv")):
    inits = [numpy_helper.from_array(np.full(shape, 0.5, np.float32), n)
             for n, shape in [("s", [3]), ("b", [3]), ("m", stat_shape),
                              ("v", stat_shape)]]
    node = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"],
                            list(outputs), name="bn", training_mode=1,
                            momentum=0.75)
    graph = helper.make_graph(
        [node], name, [helper.make_tensor_value_info("x", F, x_shape)],
        [helper.make_tensor_value_info(o, F, None) for o in outputs], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
    m.ir_version = 8
    return m


def main():
    out = sys.argv[1]
    onnx.save(bn("ok", [2, 3, 4], [3]), f"{out}/bn_stats.onnx")
    onnx.save(bn("rank1", [3], [3], ("y",)), f"{out}/bn_rank1.onnx")
    onnx.save(bn("stats", [2, 3, 4], [4]), f"{out}/bn_bad_stats.onnx")


if __name__ == "__main__":
    main()
