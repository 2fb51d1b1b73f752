#!/usr/bin/python3
"""Writes the ONNX test models of test/Import/ONNX/ops-math.test.

    /usr/bin/python3 models/make_onnx_math_tests.py OUT_DIR [NAME ...]

The math, activation, comparison/logic, reduction, arg and scan ops of
lib/Import/ONNX/ConvertMath.cpp (and the formerly fold-only ops of
ConvertElementwise.cpp), one small graph per group, plus the bad inputs the
importer must reject with a one-line error. Same helpers and conventions as
make_onnx_tests.py (node names are the lower-case op names).
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_onnx_tests import (BOOL, F32, I64, check, const, init, model,  # noqa: E402
                             node, tensor, weights)

MODELS = {}


def register(fn):
    MODELS[fn.__name__] = fn
    return fn


@register
def math_unary():
    """A chain of unary float ops and activations (opset 17)."""
    ops = [("Sin", {}), ("Cos", {}), ("Tan", {}), ("Asin", {}), ("Acos", {}),
           ("Atan", {}), ("Sinh", {}), ("Cosh", {}), ("Asinh", {}),
           ("Acosh", {}), ("Atanh", {}), ("Reciprocal", {}), ("Floor", {}),
           ("Ceil", {}), ("Round", {}), ("Abs", {}), ("Sign", {}),
           ("Softplus", {}), ("Softsign", {}), ("Elu", {"alpha": 0.5}),
           ("Selu", {}), ("Celu", {"alpha": 2.0}), ("HardSigmoid", {}),
           ("HardSwish", {}), ("ThresholdedRelu", {"alpha": 0.25}),
           ("Shrink", {"bias": 0.5, "lambd": 1.0})]
    nodes, prev = [], "x"
    for op, attrs in ops:
        out = op.lower()
        nodes.append(node(op, [prev], [out], **attrs))
        prev = out
    nodes += [node("IsNaN", [prev], ["nan"]),
              node("IsInf", [prev], ["inf"], detect_negative=0),
              node("Not", ["nan"], ["notnan"]),
              node("And", ["notnan", "inf"], ["y"])]
    return model(nodes, [tensor("x", [2, 3])],
                 [tensor(prev, None), tensor("y", None)])


@register
def math_binary():
    """Comparisons, variadic Max/Min/Sum/Mean, Mod, PRelu, CastLike."""
    nodes = [
        node("Less", ["x", "b"], ["less"]),
        node("GreaterOrEqual", ["x", "b"], ["ge"]),
        node("Xor", ["less", "ge"], ["xor"]),
        node("Or", ["xor", "less"], ["or"]),
        node("Max", ["x", "b", "c"], ["max"]),
        node("Min", ["max", "b"], ["min"]),
        node("Sum", ["min", "x", "c"], ["sum"]),
        node("Mean", ["sum", "x"], ["mean"]),
        node("Mod", ["mean", "b"], ["fmod"], fmod=1),
        node("PRelu", ["fmod", "b"], ["prelu"]),
        node("Where", ["or", "prelu", "x"], ["y"]),
        node("Mod", ["i", "j"], ["imod"], name="mod_int"),
        node("CastLike", ["imod", "x"], ["z"]),
    ]
    return model(nodes, [tensor("x", [2, 3]), tensor("c", [2, 1]),
                         tensor("i", [4], I64), tensor("j", [4], I64)],
                 [tensor("y", None), tensor("z", None)],
                 [init("b", weights(2, 3))])


@register
def math_reduce():
    """Reductions, ArgMax/ArgMin, CumSum, Trilu, Hardmax, EyeLike."""
    nodes = [
        node("ReduceMin", ["x"], ["rmin"], axes=[1], keepdims=0),
        node("ReduceProd", ["x"], ["rprod"], axes=[0]),
        node("ReduceL1", ["x"], ["l1"], axes=[1]),
        node("ReduceL2", ["x"], ["l2"], axes=[-1], keepdims=0),
        node("ReduceSumSquare", ["x"], ["ss"]),
        node("ReduceLogSum", ["x"], ["ls"], axes=[0]),
        node("ReduceLogSumExp", ["x"], ["lse"], axes=[1], keepdims=0),
        node("ArgMax", ["x"], ["amax"], axis=-1, keepdims=0,
             select_last_index=1),
        node("ArgMin", ["x"], ["amin"]),
        const("axis", np.array(1, np.int64)),
        node("CumSum", ["x", "axis"], ["cs"], exclusive=1, reverse=1),
        node("Trilu", ["cs", "k"], ["tri"], upper=0),
        node("Trilu", ["tri"], ["triu"], name="triu"),
        node("Hardmax", ["triu"], ["hm"], axis=0),
        node("EyeLike", ["hm"], ["eye"], k=1, dtype=TensorProto.DOUBLE),
    ]
    outs = ["rmin", "rprod", "l1", "l2", "ss", "ls", "lse", "amax", "amin",
            "hm", "eye"]
    return model(nodes, [tensor("x", [2, 3]), tensor("k", [], I64)],
                 [tensor(o, None) for o in outs])


@register
def topk():
    """TopK with a constant K (opset 11, smallest) and the attribute form
    (opset 1)."""
    nodes = [const("k", np.array([2], np.int64)),
             node("TopK", ["x", "k"], ["v", "i"], axis=0, largest=0)]
    return model(nodes, [tensor("x", [3, 4])],
                 [tensor("v", None), tensor("i", None)], opset=11)


@register
def topk1():
    return model([node("TopK", ["x"], ["v", "i"], k=3)],
                 [tensor("x", [3, 4])], [tensor("v", None), tensor("i", None)],
                 opset=1)


@register
def hardmax11():
    """Hardmax before opset 13: coerced to 2-D at the axis."""
    return model([node("Hardmax", ["x"], ["y"], axis=1)],
                 [tensor("x", [2, 3, 4])], [tensor("y", None)], opset=11)


@register
def float_mod():
    """A floating-point Mod without fmod=1 (error)."""
    return model([node("Mod", ["x", "x"], ["y"])], [tensor("x", [4])],
                 [tensor("y", None)])


@register
def cumsum_axis_input():
    """CumSum whose axis is a graph input (not supported)."""
    return model([node("CumSum", ["x", "axis"], ["y"])],
                 [tensor("x", [2, 3]), tensor("axis", [], I64)],
                 [tensor("y", None)])


@register
def prelu_slope():
    """A PRelu slope that does not broadcast to the input (error)."""
    return model([node("PRelu", ["x", "s"], ["y"])],
                 [tensor("x", [2, 3]), tensor("s", [2])], [tensor("y", None)])


@register
def sin_int():
    """Sin of an integer tensor (error)."""
    return model([node("Sin", ["x"], ["y"])], [tensor("x", [4], I64)],
                 [tensor("y", None)], opset=17)


@register
def and_float():
    """And of float tensors (the nn verifier rejects it)."""
    return model([node("And", ["x", "x"], ["y"])], [tensor("x", [4])],
                 [tensor("y", None)])


UNCHECKED = {"float_mod", "sin_int", "and_float", "prelu_slope"}


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    out_dir, names = argv[1], argv[2:] or sorted(MODELS)
    os.makedirs(out_dir, exist_ok=True)
    for name in names:
        if name not in MODELS:
            print(f"unknown model {name!r}", file=sys.stderr)
            return 2
        m = MODELS[name]()
        if name not in UNCHECKED:
            check(m)
        onnx.save_model(m, os.path.join(out_dir, name + ".onnx"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
