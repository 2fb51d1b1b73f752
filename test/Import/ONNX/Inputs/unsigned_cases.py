#!/usr/bin/python3
"""Small ONNX models with unsigned integer tensors (uint8..uint64) for
unsigned.test: the ops whose lowering has unsigned semantics, an op that
has none (ArgMax: reported as not supported), a uint64 constant above
INT64_MAX in an order-dependent op (not evaluated at import), and a
training model with a uint8 initializer (frozen: never a parameter).

    unsigned_cases.py OUT_DIR

Writes OUT_DIR/*.onnx and, per executed model, OUT_DIR/NAME.npz with
`in.X` feeds and `out.Y` references computed with numpy's unsigned
arithmetic (check_reference.py's format). Uses Debian's python3-onnx.
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(model, out, name):
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out, name))


def reference(out, name, feeds, expected):
    arrays = {f"in.{k}": v for k, v in feeds.items()}
    arrays.update({f"out.{k}": v for k, v in expected.items()})
    np.savez(os.path.join(out, f"{name}.npz"), **arrays)


def max_pool_reference(x, attrs):
    """MaxPool by its definition, one window at a time: the values and the
    row-major flat index (over N, C and the spatial axes) of each window's
    first maximum; padding never wins."""
    kernel = attrs["kernel_shape"]
    n = len(kernel)
    strides = attrs.get("strides", [1] * n)
    dilations = attrs.get("dilations", [1] * n)
    pads = attrs.get("pads", [0] * (2 * n))
    spatial = x.shape[2:]
    out_shape = [(spatial[d] + pads[d] + pads[n + d] - dilations[d] * (kernel[d] - 1) - 1)
                 // strides[d] + 1 for d in range(n)]
    y = np.zeros(list(x.shape[:2]) + out_shape, x.dtype)
    idx = np.zeros(y.shape, np.int64)
    for b in range(x.shape[0]):
        for c in range(x.shape[1]):
            for o in np.ndindex(*out_shape):
                best, at = None, None
                for k in np.ndindex(*kernel):
                    p = [o[d] * strides[d] - pads[d] + k[d] * dilations[d] for d in range(n)]
                    if any(p[d] < 0 or p[d] >= spatial[d] for d in range(n)):
                        continue
                    v = x[(b, c) + tuple(p)]
                    if best is None or v > best:
                        best = v
                        at = np.ravel_multi_index((b, c) + tuple(p), x.shape)
                y[(b, c) + o], idx[(b, c) + o] = best, at
    return y, idx


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    U8 = TensorProto.UINT8

    # Div, Mod, Max, Less, BitShift (both directions), Cast to float and
    # from uint8 to int32 (zero extension), on values above the signed
    # range of the type (>= 128) where signed arithmetic would differ.
    x = np.array([200, 7, 255, 129, 0, 64], np.uint8)
    y = np.array([3, 250, 16, 2, 5, 0], np.uint8)
    s = np.array([1, 7, 4, 8, 0, 3], np.uint8)
    nodes = [
        helper.make_node("Max", ["y", "one"], ["y_safe"]),
        helper.make_node("Div", ["x", "y_safe"], ["div"]),
        helper.make_node("Mod", ["x", "y"], ["mod"]),
        helper.make_node("Max", ["x", "y"], ["max"]),
        helper.make_node("Less", ["x", "y"], ["less"]),
        helper.make_node("BitShift", ["x", "s"], ["shr"], direction="RIGHT"),
        helper.make_node("BitShift", ["x", "s"], ["shl"], direction="LEFT"),
        helper.make_node("Cast", ["x"], ["xf"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["x"], ["xi"], to=TensorProto.INT32),
        helper.make_node("Cast", ["f"], ["fu"], to=U8),
    ]
    inputs = [helper.make_tensor_value_info(n, U8, [6]) for n in "xys"]
    inputs.append(helper.make_tensor_value_info("f", TensorProto.FLOAT, [6]))
    outs = [("div", U8), ("mod", U8), ("max", U8), ("less", TensorProto.BOOL),
            ("shr", U8), ("shl", U8), ("xf", TensorProto.FLOAT),
            ("xi", TensorProto.INT32), ("fu", U8)]
    graph = helper.make_graph(
        nodes, "uint_ops", inputs,
        [helper.make_tensor_value_info(n, t, [6]) for n, t in outs],
        [numpy_helper.from_array(np.array([1], np.uint8), "one")])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]),
         out, "uint_ops.onnx")
    f = np.array([200.7, 3.2, 255.0, 128.9, 0.0, 17.5], np.float32)
    y_safe = np.maximum(y, 1)
    shr = np.where(s >= 8, 0, x >> np.minimum(s, 7)).astype(np.uint8)
    shl = np.where(s >= 8, 0, (x.astype(np.uint16) << np.minimum(s, 7)) & 0xFF)
    ref = {"div": x // y_safe,
           "mod": np.where(y == 0, 0, x % np.maximum(y, 1)).astype(np.uint8),
           "max": np.maximum(x, y), "less": x < y, "shr": shr,
           "shl": shl.astype(np.uint8), "xf": x.astype(np.float32),
           "xi": x.astype(np.int32), "fu": f.astype(np.uint8)}
    reference(out, "uint_ops", dict(x=x, y=y, s=s, f=f), ref)

    # uint16 / uint32 / uint64 Min and Div past the signed range.
    for t, dt in [(TensorProto.UINT16, np.uint16), (TensorProto.UINT32, np.uint32),
                  (TensorProto.UINT64, np.uint64)]:
        name = np.dtype(dt).name
        graph = helper.make_graph(
            [helper.make_node("Min", ["a", "b"], ["min"]),
             helper.make_node("Div", ["a", "b"], ["div"])], name,
            [helper.make_tensor_value_info(n, t, [3]) for n in "ab"],
            [helper.make_tensor_value_info(n, t, [3]) for n in ["min", "div"]])
        save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]),
             out, f"{name}_ops.onnx")
        top = np.iinfo(dt).max
        a = np.array([top, top // 2 + 3, 5], dt)
        b = np.array([3, top - 1, 7], dt)
        reference(out, f"{name}_ops", dict(a=a, b=b),
                  dict(min=np.minimum(a, b), div=a // b))

    # MaxPool on uint8 and int8 (opset 12): unsigned values above 127 (a
    # signed compare would lose them), negative int8 values next to
    # padding, 1-D / 2-D / 3-D, the Indices output.
    I8 = TensorProto.INT8
    cases = [
        ("u2", U8, np.uint8, [1, 2, 5, 5],
         dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
        ("s1", I8, np.int8, [2, 2, 7],
         dict(kernel_shape=[2], strides=[1], pads=[1, 0])),
        ("u3", U8, np.uint8, [1, 1, 3, 4, 4],
         dict(kernel_shape=[2, 2, 2], strides=[1, 2, 2], pads=[0, 1, 0, 1, 0, 1])),
        ("s2", I8, np.int8, [1, 1, 4, 4],
         dict(kernel_shape=[2, 2], strides=[1, 1], dilations=[2, 1])),
    ]
    nodes, ins, outs, feeds, ref = [], [], [], {}, {}
    rng = np.random.default_rng(12)
    for name, t, dt, shape, attrs in cases:
        info = np.iinfo(dt)
        x = rng.integers(info.min, int(info.max) + 1, size=shape).astype(dt)
        ins.append(helper.make_tensor_value_info(f"{name}_x", t, shape))
        nodes.append(helper.make_node("MaxPool", [f"{name}_x"],
                                      [f"{name}_y", f"{name}_i"], name=name, **attrs))
        y, i = max_pool_reference(x, attrs)
        outs += [helper.make_tensor_value_info(f"{name}_y", t, list(y.shape)),
                 helper.make_tensor_value_info(f"{name}_i", TensorProto.INT64,
                                               list(i.shape))]
        feeds[f"{name}_x"] = x
        ref[f"{name}_y"], ref[f"{name}_i"] = y, i
    graph = helper.make_graph(nodes, "int_maxpool", ins, outs)
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)]),
         out, "int_maxpool.onnx")
    reference(out, "int_maxpool", feeds, ref)

    # ArgMax has no unsigned lowering: not supported, naming the node.
    graph = helper.make_graph(
        [helper.make_node("ArgMax", ["x"], ["i"], name="argmax_u8", axis=0)],
        "argmax", [helper.make_tensor_value_info("x", U8, [4])],
        [helper.make_tensor_value_info("i", TensorProto.INT64, [1])])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]),
         out, "uint_argmax.onnx")

    # A uint64 constant above INT64_MAX in Max: not evaluated at import.
    graph = helper.make_graph(
        [helper.make_node("Max", ["x", "big"], ["m"], name="max_big")],
        "bigmax", [helper.make_tensor_value_info("x", TensorProto.UINT64, [1])],
        [helper.make_tensor_value_info("m", TensorProto.UINT64, [1])],
        [numpy_helper.from_array(np.array([2**63 + 5], np.uint64), "big")])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]),
         out, "uint64_big.onnx")

    # Training: y = x * w + float(u) with a uint8 initializer u (frozen).
    graph = helper.make_graph(
        [helper.make_node("Cast", ["u"], ["uf"], to=TensorProto.FLOAT),
         helper.make_node("Mul", ["x", "w"], ["xw"]),
         helper.make_node("Add", ["xw", "uf"], ["y"])], "frozen_u8",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
        [numpy_helper.from_array(np.array([1, 2, 3, 4], np.float32), "w"),
         numpy_helper.from_array(np.array([0, 128, 200, 255], np.uint8), "u")])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]),
         out, "frozen_u8.onnx")


if __name__ == "__main__":
    main()
