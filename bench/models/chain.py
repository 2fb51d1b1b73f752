#!/usr/bin/python3
"""A chain of N MatMul + Tanh layers as an ONNX file (issue 16: compile time
must grow linearly in the number of ops).

    bench/models/chain.py OUT.onnx [--layers N] [--dim D] [--batch B]
                          [--distinct]

y = tanh(... tanh(tanh(x @ W1) @ W2) ... @ WN), x: [B, D] f32, every W_i a
[D, D] initializer (seeded). With --distinct each layer gets its own width
D + (i % 4) so the layers' kernels are not all equal (deduplication cannot
hide a cost that grows with the model). Needs only onnx and numpy (Debian's
/usr/bin/python3).
"""

import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def build(layers, dim, batch, distinct=False, seed=0):
    rng = np.random.default_rng(seed)
    widths = [dim + (i % 4 if distinct else 0) for i in range(layers + 1)]
    nodes, inits = [], []
    prev = "x"
    for i in range(layers):
        w = (rng.standard_normal((widths[i], widths[i + 1])) /
             np.sqrt(widths[i])).astype(np.float32)
        inits.append(numpy_helper.from_array(w, "w%d" % i))
        nodes.append(helper.make_node("MatMul", [prev, "w%d" % i],
                                      ["m%d" % i], name="matmul%d" % i))
        out = "y" if i == layers - 1 else "t%d" % i
        nodes.append(helper.make_node("Tanh", ["m%d" % i], [out],
                                      name="tanh%d" % i))
        prev = out
    graph = helper.make_graph(
        nodes, "chain%d" % layers,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                       [batch, widths[0]])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                       [batch, widths[layers]])],
        inits)
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out")
    parser.add_argument("--layers", type=int, default=1000)
    parser.add_argument("--dim", type=int, default=16)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--distinct", action="store_true")
    args = parser.parse_args()
    if args.layers < 1 or args.dim < 1 or args.batch < 1:
        raise SystemExit("--layers, --dim and --batch must be positive")
    onnx.save(build(args.layers, args.dim, args.batch, args.distinct),
              args.out)


if __name__ == "__main__":
    main()
