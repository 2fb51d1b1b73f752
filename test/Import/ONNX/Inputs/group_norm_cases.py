#!/usr/bin/python3
"""GroupNormalization (opset 18 and 21) for group-normalization.test.

    group_norm_cases.py DIR

Writes DIR/NAME.onnx, DIR/NAME.in.npz (the input `x`) and DIR/NAME.ref.npz
(`y`, computed here in float64 and stored in the model's type, from the
operator's definition: the C channels in G groups of C / G consecutive
ones, each group of each sample normalized over its channels and spatial
positions with the biased variance, then `y = scale * x_hat + bias`, scale and bias per channel in
opset 21 and per group in opset 18) for the valid cases, and the invalid
models the importer must refuse with one line. Scale and bias are
initializers (weights, so training differentiates through them).
"""

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

TYPES = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE,
         np.float16: TensorProto.FLOAT16}


def reference(x, scale, bias, groups, eps, per_group):
    x = x.astype(np.float64)
    n, c = x.shape[:2]
    rows = x.reshape(n, groups, -1)
    mean = rows.mean(axis=2, keepdims=True)
    var = ((rows - mean) ** 2).mean(axis=2, keepdims=True)
    xhat = (rows - mean) / np.sqrt(var + eps)
    scale = scale.astype(np.float64)
    bias = bias.astype(np.float64)
    if per_group:
        y = xhat * scale.reshape(groups, 1) + bias.reshape(groups, 1)
        return y.reshape(x.shape)
    xhat = xhat.reshape(x.shape)
    shape = (c,) + (1,) * (x.ndim - 2)
    return xhat * scale.reshape(shape) + bias.reshape(shape)


def model(name, shape, groups, opset, dtype=np.float32, params=None,
          attrs=None, eps=1e-5):
    rng = np.random.default_rng(len(name))
    count = params if params is not None else (
        groups if opset < 21 else shape[1])
    scale = (1 + 0.5 * rng.standard_normal(count)).astype(dtype)
    bias = (0.5 * rng.standard_normal(count)).astype(dtype)
    kwargs = {"epsilon": eps}
    if groups is not None:
        kwargs["num_groups"] = groups
    kwargs.update(attrs or {})
    node = helper.make_node("GroupNormalization", ["x", "scale", "bias"],
                            ["y"], name="gn", **kwargs)
    t = TYPES[dtype]
    graph = helper.make_graph(
        [node], name, [helper.make_tensor_value_info("x", t, shape)],
        [helper.make_tensor_value_info("y", t, shape)],
        [numpy_helper.from_array(scale, "scale"),
         numpy_helper.from_array(bias, "bias")])
    m = helper.make_model(graph,
                          opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    x = (2 * rng.standard_normal(shape) + 1).astype(dtype)
    return m, x, scale, bias


def main():
    out = sys.argv[1]
    valid = [
        # name, shape, groups, opset, dtype, epsilon
        ("g21", [2, 6, 3, 4], 3, 21, np.float32, 1e-5),
        ("g18", [2, 6, 3, 4], 2, 18, np.float32, 1e-5),
        ("g21_rank3", [2, 4, 5], 2, 21, np.float32, 1e-3),
        ("g21_rank2", [3, 6], 3, 21, np.float32, 1e-5),
        ("g21_one_group", [2, 4, 3, 3], 1, 21, np.float32, 1e-5),
        ("g21_f64", [2, 6, 3, 4], 3, 21, np.float64, 1e-5),
        ("g18_f64", [2, 6, 3, 2], 2, 18, np.float64, 1e-5),
        ("g21_f16", [2, 6, 3, 4], 3, 21, np.float16, 1e-5),
    ]
    for name, shape, groups, opset, dtype, eps in valid:
        m, x, scale, bias = model(name, shape, groups, opset, dtype, eps=eps)
        onnx.save(m, f"{out}/{name}.onnx")
        np.savez(f"{out}/{name}.in.npz", x=x)
        y = reference(x, scale, bias, groups, eps, opset < 21).astype(dtype)
        np.savez(f"{out}/{name}.ref.npz", y=y)
        # The first sample alone (the static batch re-specialized to 1).
        np.savez(f"{out}/{name}.in1.npz", x=x[:1])
        np.savez(f"{out}/{name}.ref1.npz", y=y[:1])
    # InstanceNormalization (per sample too): its first sample alone.
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    scale = rng.standard_normal(3).astype(np.float32)
    bias = rng.standard_normal(3).astype(np.float32)
    node = helper.make_node("InstanceNormalization", ["x", "scale", "bias"],
                            ["y"], name="in", epsilon=1e-5)
    graph = helper.make_graph(
        [node], "inorm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, x.shape)],
        [numpy_helper.from_array(scale, "scale"),
         numpy_helper.from_array(bias, "bias")])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 6)])
    m.ir_version = 8
    onnx.save(m, f"{out}/inorm.onnx")
    y = reference(x, scale, bias, 3, 1e-5, False).astype(np.float32)
    np.savez(f"{out}/inorm.in1.npz", x=x[:1])
    np.savez(f"{out}/inorm.ref1.npz", y=y[:1])
    # Empty: no sample, or no position (the result is the empty input).
    for name, shape in (("empty_batch", [0, 6, 3, 4]),
                        ("empty_spatial", [2, 6, 0, 4])):
        m, *_ = model(name, shape, 3, 21)
        onnx.save(m, f"{out}/{name}.onnx")
    bad = [
        ("bad_groups", [2, 6, 3, 4], 4, 21, {}),
        ("bad_scale", [2, 6, 3, 4], 3, 21, {"params": 3}),
        ("bad_scale18", [2, 6, 3, 4], 2, 18, {"params": 6}),
        ("no_groups", [2, 6, 3, 4], None, 21, {}),
    ]
    for name, shape, groups, opset, extra in bad:
        m, *_ = model(name, shape, groups, opset, params=extra.get("params"))
        onnx.save(m, f"{out}/{name}.onnx")


if __name__ == "__main__":
    main()
