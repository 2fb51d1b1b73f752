#!/usr/bin/python3
"""ai.onnx.preview.training's optimizer ops (Adagrad, Momentum, Adam) for
preview-training.test, with update counts T > 0 (ONNX's node tests only
have T = 0, which skips Adam's bias correction, Adagrad's decay and
Momentum's beta) and every attribute set, plus malformed nodes.

    preview_training_cases.py OUT_DIR

Writes OUT_DIR/*.onnx and, per executed model, OUT_DIR/NAME.npz with `in.X`
feeds and `out.Y` references: the update rules of ONNX's Operators.md
evaluated in float64 numpy (check_reference.py's format). Uses Debian's
python3-onnx.
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

DOMAIN = "ai.onnx.preview.training"
F32 = TensorProto.FLOAT


def save(model, out, name, check=True):
    model.ir_version = 8
    if check:
        onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out, name))


def optimizer_model(op, groups, shapes, attrs, name):
    """A graph of one `op` node over tensors of `shapes`: inputs R, T, then
    one input per group and tensor (X1.., G1.., ...), outputs the new X
    and accumulators."""
    n = len(shapes)
    inputs = [helper.make_tensor_value_info("R", F32, []),
              helper.make_tensor_value_info("T", TensorProto.INT64, [])]
    outputs = []
    for g in groups:
        for i, shape in enumerate(shapes):
            inputs.append(helper.make_tensor_value_info(f"{g}{i + 1}", F32, shape))
    for g in [groups[0]] + groups[2:]:
        for i, shape in enumerate(shapes):
            outputs.append(helper.make_tensor_value_info(f"{g}{i + 1}_new", F32, shape))
    node = helper.make_node(op, [i.name for i in inputs], [o.name for o in outputs],
                            domain=DOMAIN, name=name, **attrs)
    graph = helper.make_graph([node], name, inputs, outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                   helper.make_opsetid(DOMAIN, 1)])


def feeds_for(rng, groups, shapes, rate, count):
    feeds = {"R": np.array(rate, np.float32), "T": np.array(count, np.int64)}
    for g in groups:
        for i, shape in enumerate(shapes):
            a = rng.standard_normal(shape).astype(np.float32)
            if g in ("H",):
                a = np.abs(a)  # second moments / squared-gradient sums
            feeds[f"{g}{i + 1}"] = a
    return feeds


def f64(a):
    return np.asarray(a, np.float64)


def adagrad(feeds, n, decay, epsilon, norm):
    r = f64(feeds["R"]) / (1 + f64(feeds["T"]) * decay)
    out = {}
    for i in range(1, n + 1):
        x, g, h = f64(feeds[f"X{i}"]), f64(feeds[f"G{i}"]), f64(feeds[f"H{i}"])
        g = norm * x + g
        h = h + g * g
        out[f"X{i}_new"] = x - r * g / (np.sqrt(h) + epsilon)
        out[f"H{i}_new"] = h
    return out


def momentum(feeds, n, alpha, beta, norm, mode):
    r = f64(feeds["R"])
    b = beta if int(feeds["T"]) > 0 else 1.0
    out = {}
    for i in range(1, n + 1):
        x, g, v = f64(feeds[f"X{i}"]), f64(feeds[f"G{i}"]), f64(feeds[f"V{i}"])
        g = norm * x + g
        v = alpha * v + b * g
        out[f"X{i}_new"] = x - r * (v if mode == "standard" else g + alpha * v)
        out[f"V{i}_new"] = v
    return out


def adam(feeds, n, alpha, beta, epsilon, norm, norm_post):
    r, t = f64(feeds["R"]), int(feeds["T"])
    if t > 0:
        r = r * np.sqrt(1 - beta ** t) / (1 - alpha ** t)
    out = {}
    for i in range(1, n + 1):
        x, g = f64(feeds[f"X{i}"]), f64(feeds[f"G{i}"])
        v, h = f64(feeds[f"V{i}"]), f64(feeds[f"H{i}"])
        g = norm * x + g
        v = alpha * v + (1 - alpha) * g
        h = beta * h + (1 - beta) * g * g
        out[f"X{i}_new"] = (1 - norm_post) * (x - r * v / (np.sqrt(h) + epsilon))
        out[f"V{i}_new"] = v
        out[f"H{i}_new"] = h
    return out


def reference(out, name, feeds, expected):
    arrays = {f"in.{k}": v for k, v in feeds.items()}
    arrays.update({f"out.{k}": np.asarray(v, np.float32) for k, v in expected.items()})
    np.savez(os.path.join(out, f"{name}.npz"), **arrays)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(14)
    shapes = [[3], [2, 4]]
    # Attribute values exactly representable in float32 (ONNX stores
    # float attributes as float32; the reference uses the same numbers).
    f = lambda v: float(np.float32(v))

    attrs = dict(decay_factor=f(0.25), epsilon=f(1e-3), norm_coefficient=f(0.125))
    groups = ["X", "G", "H"]
    save(optimizer_model("Adagrad", groups, shapes, attrs, "adagrad"), out, "adagrad.onnx")
    feeds = feeds_for(rng, groups, shapes, 0.5, 4)
    reference(out, "adagrad", feeds, adagrad(feeds, 2, attrs["decay_factor"],
                                             attrs["epsilon"], attrs["norm_coefficient"]))

    groups = ["X", "G", "V"]
    for mode, count in (("standard", 2), ("nesterov", 5)):
        attrs = dict(alpha=f(0.75), beta=f(0.5), norm_coefficient=f(0.0625), mode=mode)
        save(optimizer_model("Momentum", groups, shapes, attrs, mode), out, f"{mode}.onnx")
        feeds = feeds_for(rng, groups, shapes, 0.25, count)
        reference(out, mode, feeds, momentum(feeds, 2, attrs["alpha"], attrs["beta"],
                                             attrs["norm_coefficient"], mode))

    groups = ["X", "G", "V", "H"]
    attrs = dict(alpha=f(0.875), beta=f(0.96875), epsilon=f(1e-4),
                 norm_coefficient=f(0.03125), norm_coefficient_post=f(0.015625))
    save(optimizer_model("Adam", groups, shapes, attrs, "adam"), out, "adam.onnx")
    feeds = feeds_for(rng, groups, shapes, 0.125, 3)
    reference(out, "adam", feeds, adam(feeds, 2, attrs["alpha"], attrs["beta"],
                                       attrs["epsilon"], attrs["norm_coefficient"],
                                       attrs["norm_coefficient_post"]))

    # Malformed: an unknown Momentum mode; Adam whose inputs are not R, T and
    # four groups of n tensors; Adam used without importing the domain.
    save(optimizer_model("Momentum", ["X", "G", "V"], [[2]],
                         dict(alpha=0.5, beta=0.5, norm_coefficient=0.0, mode="heavy"), "bad_mode"),
         out, "bad_mode.onnx")
    m = optimizer_model("Adam", ["X", "G", "V", "H"], [[2]], {}, "bad_count")
    del m.graph.input[-1]
    del m.graph.node[0].input[-1]
    save(m, out, "bad_count.onnx", check=False)
    m = optimizer_model("Adagrad", ["X", "G", "H"], [[2]], {}, "no_domain")
    del m.opset_import[1]
    save(m, out, "no_domain.onnx", check=False)


if __name__ == "__main__":
    main()
