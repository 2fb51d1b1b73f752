#!/usr/bin/python3
"""Execution tests for convert-nn-to-linalg.

Usage: nn_numerics.py FAMILY PIPEDREAM_OPT [--runner MLIR_RUNNER] [--case NAME]

Every case is one nn op on random inputs. The script builds a module with a
function per case plus an entry point that calls each on constant inputs and
prints the results, lowers it with `convert-nn-to-linalg` and the CPU
pipeline, runs it with mlir-runner and compares every result against a
reference computed here, independently, with numpy (PyTorch for
convolutions), at the conformance tolerance (rtol 1e-4, atol 1e-5).

Runs with Debian's /usr/bin/python3 (numpy, torch).
"""

import argparse
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

RTOL, ATOL = 1e-4, 1e-5

# TOOLCHAIN.md's CPU lowering, plus convert-bufferization-to-memref (functions
# returning a view of an argument or a constant get a bufferization.clone)
# and convert-math-to-libm (math.erf has no LLVM intrinsic).
PIPELINE = [
    "-convert-nn-to-linalg",
    # The index checks become writes of the thread-local status record
    # (docs/Bundle.md, "Run-time checks"); in-range data never writes it.
    "-cpu-lower-run-time-checks",
    "-one-shot-bufferize=bufferize-function-boundaries "
    "function-boundary-type-conversion=identity-layout-map",
    "-buffer-deallocation-pipeline",
    "-convert-bufferization-to-memref",
    "-convert-linalg-to-loops",
    "-convert-scf-to-cf",
    "-expand-strided-metadata",
    "-lower-affine",
    "-convert-math-to-libm",
    "-convert-to-llvm",
    "-reconcile-unrealized-casts",
]

ELEMENT = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64",
           np.dtype(np.int64): "i64", np.dtype(np.int32): "i32",
           np.dtype(np.bool_): "i1"}

rng = np.random.default_rng(1234)


def randf(*shape, dtype=np.float32, lo=-2.0, hi=2.0):
    return rng.uniform(lo, hi, size=shape).astype(dtype)


def randi(*shape, lo=-9, hi=10, dtype=np.int64):
    return rng.integers(lo, hi, size=shape).astype(dtype)


def tensor_type(arr):
    shape = "".join(f"{d}x" for d in arr.shape)
    return f"tensor<{shape}{ELEMENT[arr.dtype]}>"


def dense(arr):
    if arr.dtype == np.bool_:
        def nest(v):
            if isinstance(v, list):
                return "[" + ", ".join(nest(x) for x in v) + "]"
            return "true" if v else "false"
        return f"dense<{nest(arr.tolist())}> : {tensor_type(arr)}"
    raw = np.ascontiguousarray(arr).tobytes().hex().upper()
    return f'dense<"0x{raw}"> : {tensor_type(arr)}'


def substitute(text, names):
    """Replaces {a0}, {T0}, {R}... (and nothing else: attribute dictionaries
    keep their braces)."""
    return re.sub(r"\{(a\d+|T\d+|R)\}", lambda m: names[m.group(1)], text)


class Case:
    """`op` is the nn op text with {a0}, {a1}... for the operands, {T0},
    {T1}... for their types and {R} for the result type."""

    def __init__(self, name, op, inputs, ref):
        self.name, self.op, self.inputs = name, op, inputs
        self.expected = np.asarray(ref(*inputs))

    def function(self):
        args = ", ".join(f"%a{i}: {tensor_type(a)}"
                         for i, a in enumerate(self.inputs))
        names = {f"a{i}": f"%a{i}" for i in range(len(self.inputs))}
        names.update({f"T{i}": tensor_type(a)
                      for i, a in enumerate(self.inputs)})
        names["R"] = tensor_type(self.expected)
        return (f"func.func @case_{self.name}({args}) -> {names['R']} {{\n"
                f"  %r = {substitute(self.op, names)}\n"
                f"  return %r : {names['R']}\n}}\n")


def binary(op):
    return f"nn.{op} {{a0}}, {{a1}} : ({{T0}}, {{T1}}) -> {{R}}"


def unary(op, attrs=""):
    return f"nn.{op} {{a0}} {attrs} : {{T0}}"


def generic(op, n, attrs=""):
    operands = ", ".join(f"{{a{i}}}" for i in range(n))
    types = ", ".join(f"{{T{i}}}" for i in range(n))
    return f"nn.{op} {operands} {attrs} : ({types}) -> {{R}}"


def arr(values):
    return "array<i64: " + ", ".join(str(v) for v in values) + ">"


#===----------------------------------------------------------------------===#
# References
#===----------------------------------------------------------------------===#

def erf(x):
    return np.vectorize(math.erf)(x.astype(np.float64)).astype(x.dtype)


def gelu(x, approximate):
    x64 = x.astype(np.float64)
    if approximate == "tanh":
        inner = np.tanh(math.sqrt(2 / math.pi) * (x64 + 0.044715 * x64**3))
    else:
        inner = np.vectorize(math.erf)(x64 / math.sqrt(2))
    return (0.5 * x64 * (1 + inner)).astype(x.dtype)


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax(x, axis):
    s = x - x.max(axis=axis, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=axis, keepdims=True))


def layer_norm(x, scale, bias, axis, eps):
    axes = tuple(range(axis, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    y = (x - mean) / np.sqrt(var + eps) * scale
    return y + bias if bias is not None else y


def batch_norm(x, s, b, m, v, eps):
    shape = (1, -1) + (1,) * (x.ndim - 2)
    return ((x - m.reshape(shape)) / np.sqrt(v.reshape(shape) + eps)
            * s.reshape(shape) + b.reshape(shape))


def conv(x, w, b, strides, pads, dilations, group):
    import torch
    import torch.nn.functional as F
    n = x.ndim - 2
    # torch pads the last dimension first: (begin_n, end_n, ..., begin_1, end_1).
    torch_pads = []
    for i in reversed(range(n)):
        torch_pads += [pads[i], pads[n + i]]
    t = F.pad(torch.from_numpy(x), torch_pads)
    fn = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[n]
    y = fn(t, torch.from_numpy(w),
           None if b is None else torch.from_numpy(b),
           stride=strides, dilation=dilations, groups=group)
    return y.numpy()


def pool_output_size(size, k, s, d, pb, pe, ceil):
    extent = d * (k - 1) + 1
    span = size + pb + pe - extent
    out = span // s + 1
    if ceil and span % s:
        out += 1
        if (out - 1) * s >= size + pb:
            out -= 1
    return out


def pool(x, kind, kernel, strides, pads, dilations=None, ceil=False,
         count_include_pad=False):
    """ONNX MaxPool / AveragePool, written from the operator definition:
    a window counts the positions inside the input (or, with
    count_include_pad, inside the explicit padding) as onnxruntime does."""
    n = x.ndim - 2
    dilations = dilations or [1] * n
    outs = [pool_output_size(x.shape[2 + i], kernel[i], strides[i],
                             dilations[i], pads[i], pads[n + i], ceil)
            for i in range(n)]
    y = np.zeros(x.shape[:2] + tuple(outs), dtype=x.dtype)
    for o in np.ndindex(*outs):
        positions = []
        inside = []
        padded_count = 1
        for i in range(n):
            start = o[i] * strides[i] - pads[i]
            idx = [start + k * dilations[i] for k in range(kernel[i])]
            positions.append([p for p in idx if 0 <= p < x.shape[2 + i]])
            end = min(start + kernel[i], x.shape[2 + i] + pads[n + i])
            padded_count *= end - start
        window = x[(slice(None), slice(None)) + np.ix_(*positions)]
        window = window.reshape(x.shape[0], x.shape[1], -1)
        if kind == "max":
            y[(slice(None), slice(None)) + o] = window.max(axis=2)
        else:
            count = padded_count if count_include_pad else window.shape[2]
            y[(slice(None), slice(None)) + o] = window.sum(axis=2) / count
    return y


def gemm(a, b, c, alpha, beta, trans_a, trans_b):
    a = a.T if trans_a else a
    b = b.T if trans_b else b
    y = alpha * (a @ b)
    return y + beta * c if c is not None else y


def onnx_slice(x, starts, sizes, steps):
    index = tuple(slice(s, s + (n - 1) * st + (1 if st > 0 else -1) if n else s,
                        st) if not (st < 0 and s + (n - 1) * st == 0) or not n
                  else slice(s, None, st)
                  for s, n, st in zip(starts, sizes, steps))
    y = x[index]
    assert list(y.shape) == list(sizes), (y.shape, sizes)
    return y


def gather(data, indices, axis):
    wrapped = np.where(indices < 0, indices + data.shape[axis], indices)
    return np.take(data, wrapped, axis=axis)


def int_div(a, b):
    # Truncation toward zero (C semantics), not numpy's floor division.
    q = np.abs(a) // np.abs(b)
    return (np.sign(a) * np.sign(b) * q).astype(np.result_type(a, b))


#===----------------------------------------------------------------------===#
# Cases, by op family
#===----------------------------------------------------------------------===#

def elementwise_cases():
    c = []
    a, b = randf(2, 1, 3, dtype=np.float64), randf(4, 1, dtype=np.float64)
    c.append(Case("add_f64_bcast", binary("add"), [a, b], np.add))
    c.append(Case("add_rank0", binary("add"),
                  [np.array(1.5, np.float32), np.array(-0.25, np.float32)],
                  np.add))
    c.append(Case("sub_i32", binary("sub"),
                  [randi(3, 4, dtype=np.int32), randi(4, dtype=np.int32)],
                  np.subtract))
    c.append(Case("mul_i64_bcast", binary("mul"), [randi(3, 1), randi(1, 5)],
                  np.multiply))
    num, den = randi(4, 5, lo=-20, hi=21), randi(5, lo=1, hi=6)
    den[::2] *= -1
    c.append(Case("div_i64_trunc", binary("div"), [num, den], int_div))
    c.append(Case("div_f32", binary("div"),
                  [randf(4, 5), randf(4, 5, lo=0.5, hi=3)], np.divide))
    base = randf(6)
    base[0] = -2.0
    c.append(Case("pow_f32_i64", binary("pow"),
                  [base, np.array([3, 2, 0, -1, 4, 1], np.int64)],
                  lambda x, e: np.power(x.astype(np.float64),
                                        e).astype(np.float32)))
    c.append(Case("pow_f32_f32", binary("pow"),
                  [randf(2, 3, lo=0.1), randf(3)], np.power))
    c.append(Case("pow_i64", binary("pow"),
                  [randi(5, lo=-4, hi=5), np.array([0, 1, 2, 3, 2], np.int64)],
                  np.power))
    x = randi(3, 4).astype(np.float32)
    c.append(Case("equal_f32", binary("equal"), [x, x[0]], np.equal))
    c.append(Case("equal_i64", binary("equal"), [randi(2, 3, lo=0, hi=3),
                                                 randi(3, lo=0, hi=3)],
                  np.equal))
    c.append(Case("where_bcast",
                  "nn.where {a0}, {a1}, {a2} : ({T0}, {T1}, {T2}) -> {R}",
                  [rng.integers(0, 2, size=(1, 4)).astype(bool), randf(3, 1),
                   np.array(7.0, np.float32)], np.where))
    c.append(Case("where_i64",
                  "nn.where {a0}, {a1}, {a2} : ({T0}, {T1}, {T2}) -> {R}",
                  [rng.integers(0, 2, size=(2, 3)).astype(bool), randi(2, 3),
                   randi(3)], np.where))
    x = randf(3, 4)
    pos = randf(3, 4, lo=0.1, hi=4)
    c.append(Case("sqrt", unary("sqrt"), [pos], np.sqrt))
    c.append(Case("exp", unary("exp"), [x], np.exp))
    c.append(Case("log", unary("log"), [pos], np.log))
    c.append(Case("tanh", unary("tanh"), [x], np.tanh))
    c.append(Case("erf", unary("erf"), [x], erf))
    c.append(Case("erf_f64", unary("erf"), [x.astype(np.float64)], erf))
    big = np.array([-100.0, -20.0, -1.0, 0.0, 1.0, 20.0, 100.0], np.float32)
    c.append(Case("sigmoid", unary("sigmoid"), [big],
                  lambda v: (1 / (1 + np.exp(-v.astype(np.float64))))
                  .astype(np.float32)))
    c.append(Case("neg_f32", unary("neg"), [x], np.negative))
    c.append(Case("neg_i32", unary("neg"), [randi(5, dtype=np.int32)],
                  np.negative))
    c.append(Case("relu", unary("relu"), [x], lambda v: np.maximum(v, 0)))
    c.append(Case("leaky_relu", unary("leaky_relu", "{alpha = 0.1 : f64}"),
                  [x], lambda v: np.where(v >= 0, v, np.float32(0.1) * v)))
    c.append(Case("gelu_none", unary("gelu"), [x],
                  lambda v: gelu(v, "none")))
    c.append(Case("gelu_tanh", unary("gelu", '{approximate = "tanh"}'), [x],
                  lambda v: gelu(v, "tanh")))
    c.append(Case("gelu_f64", unary("gelu"), [x.astype(np.float64)],
                  lambda v: gelu(v, "none")))
    c.append(Case("clip_both",
                  unary("clip", "{min = -0.5 : f64, max = 0.75 : f64}"), [x],
                  lambda v: np.clip(v, -0.5, 0.75)))
    c.append(Case("clip_min", unary("clip", "{min = 0.25 : f64}"), [x],
                  lambda v: np.maximum(v, np.float32(0.25))))
    c.append(Case("clip_max", unary("clip", "{max = 0.25 : f64}"), [x],
                  lambda v: np.minimum(v, np.float32(0.25))))
    c.append(Case("dropout", unary("dropout", "{ratio = 0.3 : f64}"), [x],
                  lambda v: v))
    frac = np.array([-2.7, -0.5, -0.0, 0.0, 0.4, 1.9, 3.0, 126.6], np.float32)
    c.append(Case("cast_f32_i32", generic("cast", 1, "{to = i32}"), [frac],
                  lambda v: np.trunc(v).astype(np.int32)))
    c.append(Case("cast_f32_i1", generic("cast", 1, "{to = i1}"),
                  [np.array([0.0, -0.0, 2.0, np.nan, -1e-30], np.float32)],
                  lambda v: v.astype(bool)))
    flags = rng.integers(0, 2, size=(6,)).astype(bool)
    c.append(Case("cast_i1_f32", generic("cast", 1, "{to = f32}"), [flags],
                  lambda v: v.astype(np.float32)))
    c.append(Case("cast_i1_i64", generic("cast", 1, "{to = i64}"), [flags],
                  lambda v: v.astype(np.int64)))
    c.append(Case("cast_i64_i1", generic("cast", 1, "{to = i1}"),
                  [randi(7, lo=-2, hi=3)], lambda v: v.astype(bool)))
    c.append(Case("cast_i64_i32", generic("cast", 1, "{to = i32}"),
                  [randi(5, lo=-1000, hi=1000)], lambda v: v.astype(np.int32)))
    c.append(Case("cast_i32_f64", generic("cast", 1, "{to = f64}"),
                  [randi(5, dtype=np.int32)], lambda v: v.astype(np.float64)))
    c.append(Case("cast_f64_f32", generic("cast", 1, "{to = f32}"),
                  [randf(5, dtype=np.float64)],
                  lambda v: v.astype(np.float32)))
    c.append(Case("constant",
                  "nn.constant dense<[[1.5, -2.0], [0.25, 8.0]]> : {R}",
                  [], lambda: np.array([[1.5, -2.0], [0.25, 8.0]], np.float32)))
    return c


def matmul_cases():
    c = []
    mm = generic("matmul", 2)
    for name, ls, rs in [("mm_2d", (3, 4), (4, 5)),
                         ("mm_batch", (2, 3, 4), (2, 4, 5)),
                         ("mm_bcast_batch", (2, 1, 3, 4), (5, 4, 6)),
                         ("mm_rhs_2d", (2, 3, 3, 4), (4, 5)),
                         ("mm_lhs_2d", (3, 4), (2, 4, 5)),
                         ("mm_vec_mat", (4,), (4, 5)),
                         ("mm_mat_vec", (3, 4), (4,)),
                         ("mm_vec_vec", (4,), (4,)),
                         ("mm_vec_batch", (4,), (2, 4, 5)),
                         ("mm_batch_vec", (2, 3, 4), (4,))]:
        c.append(Case(name, mm, [randf(*ls), randf(*rs)], np.matmul))
    c.append(Case("mm_f64", mm, [randf(2, 3, 4, dtype=np.float64),
                                 randf(4, 2, dtype=np.float64)], np.matmul))

    def gemm_case(name, m, n, k, c_shape, alpha=1.0, beta=1.0, ta=False,
                  tb=False):
        a = randf(k, m) if ta else randf(m, k)
        b = randf(n, k) if tb else randf(k, n)
        ins = [a, b] + ([randf(*c_shape)] if c_shape is not None else [])
        attrs = (f"{{alpha = {alpha} : f64, beta = {beta} : f64, "
                 f"trans_a = {str(ta).lower()}, trans_b = {str(tb).lower()}}}")
        c.append(Case(name, generic("gemm", len(ins), attrs), ins,
                      lambda a, b, cc=None: gemm(a, b, cc, alpha, beta, ta,
                                                 tb)))

    gemm_case("gemm_plain", 3, 5, 4, None)
    gemm_case("gemm_trans_a", 3, 5, 4, (5,), ta=True)
    gemm_case("gemm_trans_b", 3, 5, 4, (3, 1), tb=True)
    gemm_case("gemm_trans_ab", 3, 5, 4, (3, 5), ta=True, tb=True)
    gemm_case("gemm_alpha", 3, 5, 4, None, alpha=0.5)
    gemm_case("gemm_beta", 3, 5, 4, (), beta=-2.0)
    gemm_case("gemm_alpha_beta", 3, 5, 4, (1, 5), alpha=2.0, beta=0.5)
    gemm_case("gemm_beta_zero", 3, 5, 4, (3, 5), beta=0.0)
    return c


def conv_cases():
    c = []

    def conv_case(name, x_shape, w_shape, bias, strides, pads, dilations,
                  group, dtype=np.float32):
        x, w = randf(*x_shape, dtype=dtype), randf(*w_shape, dtype=dtype)
        ins = [x, w] + ([randf(w_shape[0], dtype=dtype)] if bias else [])
        attrs = (f"{{dilations = {arr(dilations)}, group = {group} : i64, "
                 f"pads = {arr(pads)}, strides = {arr(strides)}}}")
        c.append(Case(name, generic("conv", len(ins), attrs), ins,
                      lambda x, w, b=None: conv(x, w, b, strides, pads,
                                                dilations, group)))

    conv_case("conv2d_bias", (2, 3, 7, 6), (4, 3, 3, 3), True, [1, 1],
              [1, 1, 1, 1], [1, 1], 1)
    conv_case("conv2d_strided_asym", (1, 3, 9, 8), (5, 3, 3, 2), False,
              [2, 3], [0, 1, 2, 0], [1, 1], 1)
    conv_case("conv2d_dilated", (1, 2, 9, 9), (3, 2, 3, 3), True, [1, 2],
              [2, 1, 2, 1], [2, 3], 1)
    conv_case("conv2d_grouped", (2, 4, 6, 6), (6, 2, 3, 3), True, [1, 1],
              [1, 1, 1, 1], [1, 1], 2)
    conv_case("conv2d_depthwise", (1, 3, 6, 5), (3, 1, 3, 3), True, [2, 1],
              [1, 1, 1, 1], [1, 1], 3)
    conv_case("conv2d_depth_mult", (1, 2, 5, 5), (4, 1, 2, 2), False, [1, 1],
              [0, 0, 1, 1], [1, 1], 2)
    conv_case("conv1d", (2, 3, 10), (4, 3, 3), True, [2], [1, 2], [1], 1)
    conv_case("conv1d_grouped", (1, 4, 9), (4, 2, 3), True, [1], [1, 1], [2],
              2)
    conv_case("conv3d", (1, 2, 5, 4, 4), (3, 2, 2, 3, 2), True, [1, 1, 2],
              [1, 0, 1, 0, 1, 1], [1, 1, 1], 1)
    conv_case("conv3d_grouped", (1, 4, 4, 4, 4), (2, 2, 2, 2, 2), False,
              [1, 1, 1], [0, 0, 0, 1, 1, 1], [1, 1, 1], 2)
    conv_case("conv2d_f64", (1, 2, 5, 5), (2, 2, 3, 3), True, [1, 1],
              [1, 1, 1, 1], [1, 1], 1, dtype=np.float64)
    return c


def pooling_cases():
    c = []

    def max_case(name, x_shape, kernel, strides, pads, dilations, ceil):
        x = randf(*x_shape, lo=-5, hi=-1)  # all negative: a 0 pad would win
        attrs = (f"{{ceil_mode = {str(ceil).lower()}, "
                 f"dilations = {arr(dilations)}, kernel_shape = {arr(kernel)}, "
                 f"pads = {arr(pads)}, strides = {arr(strides)}}}")
        c.append(Case(name, generic("max_pool", 1, attrs), [x],
                      lambda x: pool(x, "max", kernel, strides, pads,
                                     dilations, ceil)))

    def avg_case(name, x_shape, kernel, strides, pads, ceil, cip):
        x = randf(*x_shape)
        attrs = (f"{{ceil_mode = {str(ceil).lower()}, "
                 f"count_include_pad = {str(cip).lower()}, "
                 f"kernel_shape = {arr(kernel)}, pads = {arr(pads)}, "
                 f"strides = {arr(strides)}}}")
        c.append(Case(name, generic("average_pool", 1, attrs), [x],
                      lambda x: pool(x, "avg", kernel, strides, pads, None,
                                     ceil, cip)))

    max_case("max2d_pads", (1, 2, 5, 5), [3, 3], [2, 2], [1, 1, 1, 1],
             [1, 1], False)
    max_case("max2d_ceil", (1, 2, 6, 7), [3, 2], [2, 2], [1, 0, 0, 1],
             [1, 1], True)
    max_case("max2d_dilated", (2, 1, 7, 7), [2, 2], [1, 2], [1, 1, 0, 1],
             [2, 3], False)
    max_case("max1d_ceil", (1, 3, 8), [3], [3], [1, 1], [1], True)
    max_case("max3d", (1, 2, 5, 4, 5), [2, 2, 3], [2, 1, 2],
             [1, 0, 1, 0, 1, 1], [1, 1, 1], True)
    avg_case("avg2d_exclude_pad", (1, 2, 5, 5), [3, 3], [2, 2], [1, 1, 1, 1],
             False, False)
    avg_case("avg2d_include_pad", (1, 2, 5, 5), [3, 3], [2, 2], [1, 1, 1, 1],
             False, True)
    avg_case("avg2d_asym", (2, 1, 6, 5), [2, 3], [1, 2], [0, 2, 1, 0],
             False, False)
    avg_case("avg2d_ceil", (1, 2, 6, 6), [3, 3], [2, 2], [0, 0, 0, 0],
             True, False)
    avg_case("avg2d_ceil_include_pad", (1, 2, 6, 7), [3, 3], [2, 2],
             [1, 1, 1, 1], True, True)
    avg_case("avg2d_uniform", (1, 3, 6, 6), [2, 2], [2, 2], [0, 0, 0, 0],
             False, False)
    avg_case("avg1d_ceil_include_pad", (1, 2, 8), [3], [3], [1, 0], True,
             True)
    avg_case("avg3d", (1, 2, 4, 5, 4), [2, 3, 2], [2, 1, 2],
             [1, 1, 0, 0, 1, 1], True, False)
    for name, shape in [("gap1d", (2, 3, 7)), ("gap2d", (1, 4, 5, 6)),
                        ("gap3d", (1, 2, 3, 4, 5))]:
        c.append(Case(name, generic("global_average_pool", 1),
                      [randf(*shape)],
                      lambda x: x.mean(axis=tuple(range(2, x.ndim)),
                                       keepdims=True)))
    return c


def normalization_cases():
    c = []
    for name, shape in [("bn_2d", (4, 3)), ("bn_4d", (2, 3, 4, 5))]:
        ch = shape[1]
        ins = [randf(*shape), randf(ch), randf(ch), randf(ch),
               randf(ch, lo=0.1, hi=2)]
        c.append(Case(name, generic("batch_normalization", 5,
                                    "{epsilon = 1.0e-03 : f64}"), ins,
                      lambda x, s, b, m, v: batch_norm(x, s, b, m, v, 1e-3)))

    def ln_case(name, shape, axis, scale_shape, bias, dtype=np.float32):
        x = randf(*shape, dtype=dtype) * 3 + 1
        ins = [x, randf(*scale_shape, dtype=dtype)]
        if bias:
            ins.append(randf(*scale_shape, dtype=dtype))
        attrs = f"{{axis = {axis} : i64, epsilon = 1.0e-05 : f64}}"
        c.append(Case(name, generic("layer_normalization", len(ins), attrs),
                      ins, lambda x, s, b=None: layer_norm(x, s, b, axis,
                                                           1e-5)))

    ln_case("ln_last", (2, 5, 16), 2, (16,), True)
    ln_case("ln_axis1", (3, 4, 5), 1, (4, 5), True)
    ln_case("ln_axis1_bcast_scale", (3, 4, 5), 1, (5,), False)
    ln_case("ln_axis0", (4, 6), 0, (4, 6), True)
    ln_case("ln_f64", (2, 8), 1, (8,), True, dtype=np.float64)
    x = randf(2, 3, 4) * 10
    x[0, 0, 0] = 1000.0  # large values: needs the max subtraction
    for axis in range(3):
        c.append(Case(f"softmax_{axis}", unary("softmax",
                                               f"{{axis = {axis} : i64}}"),
                      [x], lambda v, a=axis: softmax(v, a)))
        c.append(Case(f"log_softmax_{axis}",
                      unary("log_softmax", f"{{axis = {axis} : i64}}"), [x],
                      lambda v, a=axis: log_softmax(v, a)))
    c.append(Case("softmax_f64", unary("softmax", "{axis = 1 : i64}"),
                  [randf(3, 5, dtype=np.float64)], lambda v: softmax(v, 1)))
    return c


def reduction_cases():
    c = []
    x = randf(3, 4, 5)

    def red(op, name, inp, axes, keepdims, ref):
        attrs = f"{{axes = {arr(axes)}, keepdims = {str(keepdims).lower()}}}"
        c.append(Case(name, generic(op, 1, attrs), [inp],
                      lambda v: ref(v, axis=tuple(axes), keepdims=keepdims)))

    red("reduce_sum", "sum_keep", x, [1], True, np.sum)
    red("reduce_sum", "sum_02", x, [0, 2], False, np.sum)
    red("reduce_sum", "sum_all", x, [0, 1, 2], False, np.sum)
    red("reduce_mean", "mean_keep", x, [2], True, np.mean)
    red("reduce_mean", "mean_01", x, [0, 1], False, np.mean)
    red("reduce_mean", "mean_all_keep", x, [0, 1, 2], True, np.mean)
    red("reduce_max", "max_keep", x - 5, [0], True, np.max)
    red("reduce_max", "max_12", x, [1, 2], False, np.max)
    xi = randi(4, 6, lo=-50, hi=50)
    red("reduce_sum", "sum_i64", xi, [1], False, np.sum)
    red("reduce_max", "max_i64", xi - 100, [0], True, np.max)
    red("reduce_mean", "mean_i64", xi, [1], False,
        lambda v, axis, keepdims: int_div(v.sum(axis=axis, keepdims=keepdims),
                                          np.int64(v.shape[1])))
    return c


def shape_cases():
    c = []
    x = randf(2, 3, 4)

    def attr_op(op, attrs, n=1):
        return generic(op, n, attrs)

    for name, shape in [("reshape_regroup", [4, 6]), ("reshape_flat", [24]),
                        ("reshape_split", [2, 3, 2, 2]),
                        ("reshape_mixed", [3, 2, 4])]:
        c.append(Case(name, attr_op("reshape", f"{{shape = {arr(shape)}}}"),
                      [x], lambda v, s=shape: v.reshape(s)))
    c.append(Case("reshape_to_rank0", attr_op("reshape", "{shape = array<i64>}"),
                  [randf(1, 1)], lambda v: v.reshape(())))
    c.append(Case("reshape_from_rank0",
                  attr_op("reshape", f"{{shape = {arr([1, 1])}}}"),
                  [np.array(3.0, np.float32)], lambda v: v.reshape(1, 1)))
    for axis in range(4):
        c.append(Case(f"flatten_{axis}",
                      attr_op("flatten", f"{{axis = {axis} : i64}}"), [x],
                      lambda v, a=axis: v.reshape(
                          int(np.prod(v.shape[:a])), -1)))
    y = randi(2, 3, 4, 5)
    c.append(Case("transpose_4d",
                  attr_op("transpose", f"{{perm = {arr([2, 0, 3, 1])}}}"),
                  [y], lambda v: v.transpose(2, 0, 3, 1)))
    c.append(Case("transpose_identity",
                  attr_op("transpose", f"{{perm = {arr([0, 1])}}}"),
                  [randf(2, 3)], lambda v: v))
    c.append(Case("transpose_rank0", attr_op("transpose", "{perm = array<i64>}"),
                  [np.array(2.5, np.float32)], lambda v: v))
    c.append(Case("squeeze", attr_op("squeeze", f"{{axes = {arr([0, 2])}}}"),
                  [randf(1, 3, 1, 2)], lambda v: v.reshape(3, 2)))
    c.append(Case("unsqueeze",
                  attr_op("unsqueeze", f"{{axes = {arr([0, 2, 4])}}}"),
                  [randf(3, 2)], lambda v: v.reshape(1, 3, 1, 2, 1)))
    for name, src, shape in [("expand_mid", (3, 1), [2, 3, 4]),
                             ("expand_lead", (1,), [2, 2]),
                             ("expand_rank0", (), [3]),
                             ("expand_same", (2, 3), [2, 3])]:
        c.append(Case(name, attr_op("expand", f"{{shape = {arr(shape)}}}"),
                      [randf(*src)],
                      lambda v, s=shape: np.broadcast_to(v, s).copy()))
    c.append(Case("concat_3", attr_op("concat", "{axis = 1 : i64}", 3),
                  [randi(2, 1, 3), randi(2, 4, 3), randi(2, 2, 3)],
                  lambda *vs: np.concatenate(vs, axis=1)))
    z = randf(4, 7)
    sizes = [2, 0, 4, 1]
    offsets = np.cumsum([0] + sizes)
    for i, size in enumerate(sizes):
        if size == 0:
            continue  # a zero-size result prints nothing to compare
        results = ", ".join(f"tensor<4x{s}xf32>" for s in sizes)
        op = (f"nn.split {{a0}} {{axis = 1 : i64, "
              f"split_sizes = {arr(sizes)}}} : ({{T0}}) -> ({results})")
        # Take piece i of the split (the function returns one value).
        c.append(Case(f"split_{i}", op, [z],
                      lambda v, i=i: v[:, offsets[i]:offsets[i + 1]]))
        c[-1].piece = i
    w = randf(5, 6, 7)
    for name, starts, sizes_, steps in [
            ("slice_pos", [1, 0, 2], [2, 3, 2], [2, 2, 3]),
            ("slice_neg", [4, 5, 6], [3, 2, 7], [-1, -3, -1]),
            ("slice_mixed", [0, 5, 1], [5, 6, 3], [1, -1, 2])]:
        c.append(Case(name, attr_op(
            "slice", f"{{sizes = {arr(sizes_)}, starts = {arr(starts)}, "
                     f"steps = {arr(steps)}}}"), [w],
            lambda v, a=starts, b=sizes_, s=steps: onnx_slice(v, a, b, s)))
    table = randf(10, 4)
    c.append(Case("gather_axis0_neg",
                  attr_op("gather", "{axis = 0 : i64}", 2),
                  [table, np.array([[0, -1, 3], [-10, 9, 2]], np.int64)],
                  lambda d, i: gather(d, i, 0)))
    c.append(Case("gather_axis1_i32",
                  attr_op("gather", "{axis = 1 : i64}", 2),
                  [randi(3, 5, 2), np.array([4, -2, 0, 1], np.int32)],
                  lambda d, i: gather(d, i, 1)))
    c.append(Case("gather_scalar_index",
                  attr_op("gather", "{axis = 1 : i64}", 2),
                  [randf(2, 3, 4), np.array(-1, np.int64)],
                  lambda d, i: gather(d, i, 1)))
    return c


def slice_grad_ref(g, shape, starts, steps):
    out = np.zeros(shape, dtype=g.dtype)
    # Same positions nn.slice reads (onnx_slice), written instead of read.
    index = onnx_slice(np.arange(int(np.prod(shape))).reshape(shape),
                       starts, g.shape, steps)
    out.reshape(-1)[index.reshape(-1)] = g.reshape(-1)
    return out


def gather_grad_ref(g, indices, axis, axis_size):
    shape = g.shape[:axis] + (axis_size,) + g.shape[axis + indices.ndim:]
    out = np.zeros(shape, dtype=g.dtype)
    wrapped = np.where(indices < 0, indices + axis_size, indices)
    for pos in np.ndindex(*indices.shape):
        src = (slice(None),) * axis + pos
        dst = (slice(None),) * axis + (int(wrapped[pos]),)
        out[dst] += g[src]
    return out


GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def mix64(z):
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def bernoulli_ref(seed, p, shape, dtype):
    """nn.bernoulli's definition, written independently of the lowering:
    element i is 1 when the top 53 bits of splitmix64 output i + 1 of
    state key = splitmix64(seed), as a uniform in [0, 1), are below p."""
    with np.errstate(over="ignore"):
        key = mix64(np.array(seed, dtype=np.int64).astype(np.uint64) + GOLDEN)
        i = np.arange(int(np.prod(shape)), dtype=np.uint64)
        bits = mix64(key + (i + np.uint64(1)) * GOLDEN)
    uniform = (bits >> np.uint64(11)).astype(np.float64) * 2.0**-53
    return (uniform < p).astype(dtype).reshape(shape)


class BodyCase(Case):
    """A case whose function body is several ops: `body` uses %a0, %a1...
    and defines %r."""

    def __init__(self, name, body, inputs, ref):
        super().__init__(name, "", inputs, ref)
        self.body = body

    def function(self):
        args = ", ".join(f"%a{i}: {tensor_type(a)}"
                         for i, a in enumerate(self.inputs))
        rty = tensor_type(self.expected)
        return (f"func.func @case_{self.name}({args}) -> {rty} {{\n"
                f"{self.body}\n  return %r : {rty}\n}}\n")


def training_cases():
    c = []
    for name, g, shape, starts, steps in [
            ("slice_grad_strided", randf(2, 2, dtype=np.float64), [2, 6],
             [0, 1], [1, 2]),
            ("slice_grad_negative", randf(4, 3), [4, 10], [3, 8], [-1, -3]),
            ("slice_grad_one_reversed", randf(1, 3), [3, 5], [2, 4], [-1, -2]),
            ("slice_grad_empty", randf(0, 6), [2, 6], [0, 0], [1, 1])]:
        attrs = (f"{{shape = {arr(shape)}, starts = {arr(starts)}, "
                 f"steps = {arr(steps)}}}")
        c.append(Case(name, generic("slice_grad", 1, attrs), [g],
                      lambda v, s=shape, st=starts, sp=steps:
                      slice_grad_ref(v, s, st, sp)))
    # Repeated and negative indices accumulate into the same rows.
    ids = np.array([[0, 3, -1], [3, -5, 4]], dtype=np.int64)
    for name, g, indices, axis, size in [
            ("gather_grad_embedding", randf(2, 3, 4, dtype=np.float64), ids,
             0, 5),
            ("gather_grad_axis1", randf(3, 2, 3, 2), ids, 1, 5),
            ("gather_grad_i32_last", randf(2, 4),
             np.array([1, -1, 1, 0], dtype=np.int32), 1, 3),
            ("gather_grad_scalar_index", randf(3, 2),
             np.array(-2, dtype=np.int64), 1, 4)]:
        attrs = f"{{axis = {axis} : i64, axis_size = {size} : i64}}"
        c.append(Case(name, generic("gather_grad", 2, attrs), [g, indices],
                      lambda v, i, a=axis, n=size: gather_grad_ref(v, i, a, n)))
    seed = np.array(7, dtype=np.int64)
    c.append(Case("bernoulli_exact",
                  "nn.bernoulli {a0} {probability = 0.7 : f64} : ({T0}) -> "
                  "tensor<4x8xf32>", [seed],
                  lambda s: bernoulli_ref(s, 0.7, (4, 8), np.float32)))
    # On a million elements the fraction of ones is within 5 standard
    # deviations of p, and two seeds disagree on 2 p (1 - p) of them.
    n, p = 1000, 0.9
    big = f"tensor<{n}x{n}xf64>"
    mask = (f"  %m = nn.bernoulli %a0 {{probability = {p} : f64}} : "
            f"(tensor<i64>) -> {big}\n")
    mean = (f"nn.reduce_mean %{{}} {{{{axes = array<i64: 0, 1>, keepdims = "
            f"false}}}} : ({big}) -> tensor<f64>")
    fraction = bernoulli_ref(seed, p, (n, n), np.float64).mean()
    sigma = math.sqrt(p * (1 - p) / n**2)
    assert abs(fraction - p) < 5 * sigma, fraction
    c.append(BodyCase("bernoulli_fraction",
                      mask + "  %r = " + mean.format("m"), [seed],
                      lambda s: bernoulli_ref(s, p, (n, n),
                                              np.float64).mean()))
    other = np.array(8, dtype=np.int64)
    differ = np.abs(bernoulli_ref(seed, p, (n, n), np.float64) -
                    bernoulli_ref(other, p, (n, n), np.float64)).mean()
    assert abs(differ - 2 * p * (1 - p)) < 5 * math.sqrt(
        2 * p * (1 - p) / n**2), differ
    c.append(BodyCase(
        "bernoulli_seeds_differ",
        mask +
        f"  %m2 = nn.bernoulli %a1 {{probability = {p} : f64}} : "
        f"(tensor<i64>) -> {big}\n"
        f"  %d = nn.sub %m, %m2 : ({big}, {big}) -> {big}\n"
        f"  %d2 = nn.mul %d, %d : ({big}, {big}) -> {big}\n"
        "  %r = " + mean.format("d2"), [seed, other],
        lambda s, t: np.abs(bernoulli_ref(s, p, (n, n), np.float64) -
                            bernoulli_ref(t, p, (n, n), np.float64)).mean()))
    c.append(Case("bernoulli_never",
                  "nn.bernoulli {a0} {probability = 0.0 : f64} : ({T0}) -> "
                  "tensor<3x5xf64>", [seed], lambda s: np.zeros((3, 5))))
    c.append(Case("bernoulli_always",
                  "nn.bernoulli {a0} {probability = 1.0 : f64} : ({T0}) -> "
                  "tensor<3x5xf64>", [seed], lambda s: np.ones((3, 5))))
    return c


class MultiResultCase(Case):
    """A case whose op has several results (`result_types`); the function
    returns result `index` (the reference returns all of them)."""

    def __init__(self, name, op, inputs, ref, result_types, index):
        self.result_types, self.index = result_types, index
        super().__init__(name, op, inputs, lambda *a: ref(*a)[index])

    def function(self):
        args = ", ".join(f"%a{i}: {tensor_type(a)}"
                         for i, a in enumerate(self.inputs))
        names = {f"a{i}": f"%a{i}" for i in range(len(self.inputs))}
        names.update({f"T{i}": tensor_type(a)
                      for i, a in enumerate(self.inputs)})
        names["R"] = "(" + ", ".join(self.result_types) + ")"
        rty = self.result_types[self.index]
        return (f"func.func @case_{self.name}({args}) -> {rty} {{\n"
                f"  %r:{len(self.result_types)} = {substitute(self.op, names)}\n"
                f"  return %r#{self.index} : {rty}\n}}\n")


def conv_vjp(x, w, dy, strides, pads, dilations, group):
    """(dx, dw) of conv() by torch.autograd."""
    import torch
    import torch.nn.functional as F
    n = x.ndim - 2
    torch_pads = []
    for i in reversed(range(n)):
        torch_pads += [pads[i], pads[n + i]]
    tx = torch.from_numpy(x).requires_grad_()
    tw = torch.from_numpy(w).requires_grad_()
    fn = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[n]
    y = fn(F.pad(tx, torch_pads), tw, stride=strides, dilation=dilations,
           groups=group)
    y.backward(torch.from_numpy(dy))
    return tx.grad.numpy(), tw.grad.numpy()


def max_pool_vjp(x, dy, kernel, strides, pads, dilations, ceil):
    """Every output gradient goes to the first maximum (row-major window
    order) of its window, padding excluded."""
    n = x.ndim - 2
    dx = np.zeros_like(x)
    for o in np.ndindex(*dy.shape[2:]):
        for b, ch in np.ndindex(*x.shape[:2]):
            best, where = None, None
            for k in np.ndindex(*kernel):
                pos = tuple(o[i] * strides[i] - pads[i] + k[i] * dilations[i]
                            for i in range(n))
                if any(p < 0 or p >= x.shape[2 + i]
                       for i, p in enumerate(pos)):
                    continue
                v = x[(b, ch) + pos]
                if best is None or v > best:
                    best, where = v, pos
            dx[(b, ch) + where] += dy[(b, ch) + o]
    return dx


def linear_vjp(f, x_shape, dy, dtype):
    """J^T dy of a linear function f by its columns."""
    dx = np.zeros(int(np.prod(x_shape)), dtype=np.float64)
    for j in range(dx.size):
        e = np.zeros(dx.size, dtype=dtype)
        e[j] = 1
        dx[j] = np.sum(f(e.reshape(x_shape)).astype(np.float64) * dy)
    return dx.reshape(x_shape).astype(dtype)


def batch_norm_train_ref(x, s, b, rm, rv, eps, momentum):
    """PyTorch training-mode batch norm (torch momentum = 1 - ONNX momentum):
    output with the biased batch variance, running variance updated with the
    unbiased one; checked against the formula written out."""
    import torch
    import torch.nn.functional as F
    trm, trv = torch.from_numpy(rm.copy()), torch.from_numpy(rv.copy())
    y = F.batch_norm(torch.from_numpy(x), trm, trv, torch.from_numpy(s),
                     torch.from_numpy(b), training=True,
                     momentum=1 - momentum, eps=eps).numpy()
    axes = (0,) + tuple(range(2, x.ndim))
    count = x.size // x.shape[1]
    shape = (1, -1) + (1,) * (x.ndim - 2)
    mean = x.astype(np.float64).mean(axis=axes)
    var = x.astype(np.float64).var(axis=axes)
    y_np = ((x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
            * s.reshape(shape) + b.reshape(shape))
    rm_np = rm * momentum + mean * (1 - momentum)
    rv_np = rv * momentum + var * count / (count - 1) * (1 - momentum)
    for got, want in [(y, y_np), (trm.numpy(), rm_np), (trv.numpy(), rv_np)]:
        assert np.allclose(got, want, rtol=1e-5, atol=1e-5), (got, want)
    return y, trm.numpy(), trv.numpy()


def neural_grad_cases():
    c = []

    def conv_grads(name, x_shape, w_shape, strides, pads, dilations, group,
                   dtype=np.float32):
        x, w = randf(*x_shape, dtype=dtype), randf(*w_shape, dtype=dtype)
        y_shape = conv(x, w, None, strides, pads, dilations, group).shape
        dy = randf(*y_shape, dtype=dtype)
        dx, dw = conv_vjp(x, w, dy, strides, pads, dilations, group)
        common = (f"dilations = {arr(dilations)}, group = {group} : i64, "
                  f"pads = {arr(pads)}, strides = {arr(strides)}")
        c.append(Case(f"{name}_input", generic(
            "conv_backward_input", 2,
            f"{{{common}, input_shape = {arr(x_shape)}}}"), [dy, w],
            lambda *_, r=dx: r))
        c.append(Case(f"{name}_weight", generic(
            "conv_backward_weight", 2,
            f"{{{common}, kernel_shape = {arr(w_shape[2:])}}}"), [dy, x],
            lambda *_, r=dw: r))

    conv_grads("conv2d", (2, 3, 7, 6), (4, 3, 3, 3), [1, 1], [1, 1, 1, 1],
               [1, 1], 1)
    # Rows and columns no window reads (9 + 1 - 3 is odd): zero gradient.
    conv_grads("conv2d_strided_asym", (1, 3, 9, 8), (5, 3, 3, 2), [2, 3],
               [0, 1, 2, 0], [1, 1], 1)
    conv_grads("conv2d_dilated", (1, 2, 9, 9), (3, 2, 3, 3), [1, 2],
               [2, 1, 2, 1], [2, 3], 1)
    conv_grads("conv2d_grouped", (2, 4, 6, 6), (6, 2, 3, 3), [2, 1],
               [1, 0, 1, 1], [1, 1], 2)
    conv_grads("conv2d_depthwise", (2, 3, 6, 5), (3, 1, 3, 3), [2, 1],
               [1, 1, 1, 1], [1, 2], 3)
    conv_grads("conv1d", (2, 3, 10), (4, 3, 3), [2], [1, 2], [1], 1)
    conv_grads("conv3d_grouped", (1, 4, 4, 5, 4), (2, 2, 2, 3, 2),
               [1, 2, 1], [0, 1, 0, 1, 1, 1], [1, 1, 2], 2)
    conv_grads("conv2d_f64", (2, 2, 5, 5), (3, 2, 3, 3), [2, 2], [1, 1, 1, 1],
               [1, 1], 1, dtype=np.float64)

    def max_grad(name, x, kernel, strides, pads, dilations, ceil):
        y = pool(x, "max", kernel, strides, pads, dilations, ceil)
        dy = randf(*y.shape, dtype=x.dtype)
        attrs = (f"{{ceil_mode = {str(ceil).lower()}, "
                 f"dilations = {arr(dilations)}, kernel_shape = {arr(kernel)}, "
                 f"pads = {arr(pads)}, strides = {arr(strides)}}}")
        c.append(Case(name, generic("max_pool_grad", 2, attrs), [dy, x],
                      lambda dy, x: max_pool_vjp(x, dy, kernel, strides, pads,
                                                 dilations, ceil)))

    # All negative: a zero pad would win; overlapping windows accumulate.
    max_grad("max2d_pads", randf(1, 2, 5, 5, lo=-5, hi=-1), [3, 3], [2, 2],
             [1, 1, 1, 1], [1, 1], False)
    max_grad("max2d_ceil", randf(1, 2, 6, 7), [3, 2], [2, 2], [1, 0, 0, 1],
             [1, 1], True)
    max_grad("max2d_dilated", randf(2, 1, 7, 7), [2, 2], [1, 2],
             [1, 1, 0, 1], [2, 3], False)
    # Few distinct values: ties go to the first maximum of each window.
    max_grad("max2d_ties", rng.integers(0, 3, size=(2, 2, 6, 6))
             .astype(np.float32), [3, 3], [1, 2], [1, 1, 1, 1], [1, 1], False)
    max_grad("max1d_ceil", randf(1, 3, 8), [3], [3], [1, 1], [1], True)
    max_grad("max3d_f64", randf(1, 2, 5, 4, 5, dtype=np.float64), [2, 2, 3],
             [2, 1, 2], [1, 0, 1, 0, 1, 1], [1, 1, 1], True)

    def avg_grad(name, x_shape, kernel, strides, pads, ceil, cip,
                 dtype=np.float32):
        f = lambda v: pool(v, "avg", kernel, strides, pads, None, ceil, cip)
        dy = randf(*f(np.zeros(x_shape, dtype)).shape, dtype=dtype)
        attrs = (f"{{ceil_mode = {str(ceil).lower()}, "
                 f"count_include_pad = {str(cip).lower()}, "
                 f"input_shape = {arr(x_shape)}, kernel_shape = {arr(kernel)}, "
                 f"pads = {arr(pads)}, strides = {arr(strides)}}}")
        c.append(Case(name, generic("average_pool_grad", 1, attrs), [dy],
                      lambda dy: linear_vjp(f, x_shape, dy, dtype)))

    avg_grad("avg2d_exclude_pad", (1, 2, 5, 5), [3, 3], [2, 2], [1, 1, 1, 1],
             False, False)
    avg_grad("avg2d_include_pad", (1, 2, 5, 5), [3, 3], [2, 2], [1, 1, 1, 1],
             False, True)
    avg_grad("avg2d_asym_overlap", (2, 1, 6, 5), [2, 3], [1, 2],
             [0, 2, 1, 0], False, False)
    avg_grad("avg2d_ceil_include_pad", (1, 2, 6, 7), [3, 3], [2, 2],
             [1, 1, 1, 1], True, True)
    avg_grad("avg1d_ceil", (1, 2, 8), [3], [3], [1, 0], True, False)
    avg_grad("avg3d_f64", (1, 1, 4, 5, 4), [2, 3, 2], [2, 1, 2],
             [1, 1, 0, 0, 1, 1], True, False, dtype=np.float64)

    for name, shape, dtype in [("bn_train_4d", (4, 3, 5, 6), np.float32),
                               ("bn_train_2d", (5, 4), np.float32),
                               ("bn_train_3d_f64", (2, 3, 7), np.float64)]:
        ch = shape[1]
        ins = [randf(*shape, dtype=dtype) * 2 + 1, randf(ch, dtype=dtype),
               randf(ch, dtype=dtype), randf(ch, dtype=dtype),
               randf(ch, lo=0.1, hi=2, dtype=dtype)]
        stats = tensor_type(ins[1])
        types = [tensor_type(ins[0]), stats, stats]
        for index in range(3):
            c.append(MultiResultCase(
                f"{name}_{index}",
                generic("batch_norm_train", 5,
                        "{epsilon = 1.0e-03 : f64, momentum = 0.8 : f64}"),
                ins, lambda *a: batch_norm_train_ref(*a, 1e-3, 0.8), types,
                index))
    return c


#===----------------------------------------------------------------------===#
# Math, comparison, arg and scan ops (NNMathOps.td)
#===----------------------------------------------------------------------===#

def cumsum_ref(x, axis, exclusive, reverse):
    if reverse:
        x = np.flip(x, axis)
    c = np.cumsum(x, axis=axis, dtype=x.dtype)
    if exclusive:
        c = c - x
    return np.flip(c, axis) if reverse else c


def trilu_ref(x, k, upper):
    k = int(k)
    return np.triu(x, k) if upper else np.tril(x, k)


def arg_ref(x, axis, keepdims, last, fn):
    if last:
        flipped = np.flip(x, axis)
        r = x.shape[axis] - 1 - fn(flipped, axis=axis)
    else:
        r = fn(x, axis=axis)
    r = r.astype(np.int64)
    return np.expand_dims(r, axis) if keepdims else r


def top_k_ref(x, axis, k, largest):
    """Values and indices of numpy's stable sort (NaN sorts last, so it is
    the largest), the first k, largest first when `largest`."""
    n = x.shape[axis]
    order = np.argsort(x, axis=axis, kind="stable")
    if largest:
        # Descending and stable: sort the reversed input ascending, reverse
        # the result, and map positions back.
        rev = np.flip(x, axis)
        order = n - 1 - np.flip(np.argsort(rev, axis=axis, kind="stable"), axis)
    idx = np.take(order, np.arange(k), axis=axis)
    return np.take_along_axis(x, idx, axis=axis), idx.astype(np.int64)


class TopKCase(Case):
    """nn.top_k has two results: the case function returns one."""

    def __init__(self, name, x, axis, k, largest, result):
        self.attrs = "{axis = %d : i64, k = %d : i64%s}" % (
            axis, k, "" if largest else ", largest = false")
        self.result = result
        super().__init__(name, "", [x],
                         lambda v: top_k_ref(v, axis, k, largest)[result])
        values, indices = top_k_ref(x, axis, k, largest)
        self.types = (tensor_type(values), tensor_type(indices))

    def function(self):
        t = tensor_type(self.inputs[0])
        r = self.types[self.result]
        return (f"func.func @case_{self.name}(%a0: {t}) -> {r} {{\n"
                f"  %r:2 = nn.top_k %a0 {self.attrs} : ({t}) -> "
                f"({self.types[0]}, {self.types[1]})\n"
                f"  return %r#{self.result} : {r}\n}}\n")


def math_cases():
    c = []
    x = randf(3, 4)
    unit = randf(3, 4, lo=-0.95, hi=0.95)
    for op, fn, arg in [("sin", np.sin, x), ("cos", np.cos, x),
                        ("tan", np.tan, randf(3, 4, lo=-1.2, hi=1.2)),
                        ("asin", np.arcsin, unit), ("acos", np.arccos, unit),
                        ("atan", np.arctan, x), ("sinh", np.sinh, x),
                        ("cosh", np.cosh, x), ("asinh", np.arcsinh, x),
                        ("acosh", np.arccosh, randf(3, 4, lo=1.0, hi=4.0)),
                        ("atanh", np.arctanh, unit),
                        ("reciprocal", np.reciprocal, randf(3, 4, lo=0.5)),
                        ("floor", np.floor, x), ("ceil", np.ceil, x)]:
        c.append(Case(op, unary(op), [arg], fn))
    halves = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.4, -0.6], np.float32)
    c.append(Case("round_half_even", unary("round"), [halves], np.round))
    c.append(Case("abs_i32", unary("abs"), [randi(3, 4, dtype=np.int32)],
                  np.abs))
    c.append(Case("sign_i64", unary("sign"), [randi(2, 5)], np.sign))
    special = np.array([1.0, -np.inf, np.inf, np.nan, 0.0, -3.0], np.float32)
    c.append(Case("sign_f32", unary("sign"), [special], np.sign))
    c.append(Case("is_nan", "nn.is_nan {a0} : ({T0}) -> {R}", [special],
                  np.isnan))
    c.append(Case("is_inf_positive",
                  "nn.is_inf {a0} {detect_negative = false} : ({T0}) -> {R}",
                  [special], np.isposinf))
    # Mod: every sign combination, a zero divisor (numpy: 0) and
    # INT_MIN % -1 (numpy: 0), for both semantics.
    num = np.array([7, -7, 7, -7, 5, -9223372036854775808, 0, 6], np.int64)
    den = np.array([3, 3, -3, -3, 0, -1, 4, 3], np.int64)
    with np.errstate(divide="ignore"):
        c.append(Case("mod_python", binary("mod"), [num, den], np.mod))
        c.append(Case("mod_fmod", generic("mod", 2, "{fmod = true}"),
                      [num, den], np.fmod))
    c.append(Case("fmod_f32", generic("mod", 2, "{fmod = true}"),
                  [randf(3, 4, lo=-5, hi=5), randf(4, lo=0.5, hi=2)],
                  np.fmod))
    a, b = randf(3, 4), randf(4)
    b[0] = a[1, 0]
    for op, fn in [("less", np.less), ("less_equal", np.less_equal),
                   ("greater", np.greater),
                   ("greater_equal", np.greater_equal)]:
        c.append(Case(op, binary(op), [a, b], fn))
    c.append(Case("max_f32", binary("max"), [a, b], np.maximum))
    c.append(Case("min_i64", binary("min"), [randi(3, 1), randi(4)],
                  np.minimum))
    p, q = (rng.integers(0, 2, size=(2, 3)).astype(bool),
            rng.integers(0, 2, size=(3,)).astype(bool))
    c.append(Case("xor", binary("xor"), [p, q], np.logical_xor))
    c.append(Case("not", unary("not"), [p], np.logical_not))
    c.append(Case("prelu", binary("prelu"), [a, b],
                  lambda x, s: np.where(x < 0, s * x, x)))
    c.append(Case("softplus", unary("softplus"), [randf(3, 4, lo=-30, hi=30)],
                  lambda v: np.logaddexp(0, v.astype(np.float64)).astype(np.float32)))
    c.append(Case("hard_swish", unary("hard_swish"), [randf(3, 4, lo=-5, hi=5)],
                  lambda v: v * np.clip(v / 6 + 0.5, 0, 1)))
    c.append(Case("shrink", unary("shrink", "{bias = 0.5 : f64, lambd = 1.0 : f64}"),
                  [randf(3, 4)],
                  lambda v: np.where(v < -1, v + 0.5,
                                     np.where(v > 1, v - 0.5, 0)).astype(np.float32)))
    # Ties: the first (or last) of the equal maxima.
    ties = np.array([[1, 3, 3, 0], [2, 2, 2, 2], [5, 1, 5, 4]], np.float32)
    for last in (False, True):
        attrs = "{axis = 1 : i64, keepdims = false%s}" % (
            ", select_last_index = true" if last else "")
        c.append(Case(f"arg_max_ties_{int(last)}", generic("arg_max", 1, attrs),
                      [ties], lambda v, l=last: arg_ref(v, 1, False, l, np.argmax)))
        c.append(Case(f"arg_min_ties_{int(last)}", generic("arg_min", 1, attrs),
                      [ties], lambda v, l=last: arg_ref(v, 1, False, l, np.argmin)))
    c.append(Case("arg_max_i32_keepdims",
                  generic("arg_max", 1, "{axis = 0 : i64}"),
                  [randi(4, 3, dtype=np.int32)],
                  lambda v: arg_ref(v, 0, True, False, np.argmax)))
    for exclusive in (False, True):
        for reverse in (False, True):
            attrs = "{axis = 1 : i64, exclusive = %s, reverse = %s}" % (
                str(exclusive).lower(), str(reverse).lower())
            name = f"cumsum_{int(exclusive)}{int(reverse)}"
            c.append(Case(name, f"nn.cumsum {{a0}} {attrs} : {{T0}}",
                          [randf(2, 6)],
                          lambda v, e=exclusive, r=reverse: cumsum_ref(v, 1, e, r)))
    c.append(Case("cumsum_i64_axis0",
                  "nn.cumsum {a0} {axis = 0 : i64} : {T0}", [randi(5, 2)],
                  lambda v: cumsum_ref(v, 0, False, False)))
    for k in (-1, 0, 2, 7):
        for upper in (False, True):
            c.append(Case(f"trilu_{k + 1}_{int(upper)}",
                          generic("trilu", 2, "{upper = %s}" % str(upper).lower()),
                          [randf(2, 3, 4), np.array(k, np.int64)],
                          lambda v, kk, u=upper: trilu_ref(v, kk, u)))
    # top_k: ties keep the input order (a stable sort), NaN is the largest.
    tk = np.array([[1, 3, 3, 0, 2], [2, 2, 2, 2, 2], [5, np.nan, 5, 4, -1]],
                  np.float32)
    for largest in (True, False):
        for result in (0, 1):
            c.append(TopKCase(f"top_k_{int(largest)}_{result}", tk, 1, 3,
                              largest, result))
    c.append(TopKCase("top_k_i64_axis0", randi(6, 2), 0, 4, True, 0))
    x = randf(3, 4)
    c.append(Case("reduce_min", generic("reduce_min", 1,
                                        "{axes = array<i64: 1>, keepdims = false}"),
                  [x], lambda v: v.min(axis=1)))
    c.append(Case("reduce_prod_i64", generic("reduce_prod", 1,
                                             "{axes = array<i64: 0, 1>, keepdims = false}"),
                  [randi(2, 3, lo=-3, hi=4)], lambda v: np.prod(v)))
    return c


FAMILIES = {
    "math": math_cases,
    "elementwise": elementwise_cases,
    "matmul": matmul_cases,
    "conv": conv_cases,
    "pooling": pooling_cases,
    "normalization": normalization_cases,
    "reduction": reduction_cases,
    "shape": shape_cases,
    "training": training_cases,
    "neural_grad": neural_grad_cases,
}


def split_function(case):
    """`nn.split` has several results: the case function returns one."""
    sizes = re.search(r"split_sizes = array<i64: ([^>]*)>", case.op)
    n = len(sizes.group(1).split(","))
    names = {"a0": "%a0", "T0": tensor_type(case.inputs[0]),
             "R": tensor_type(case.expected)}
    op = substitute(case.op, names)
    return (f"func.func @case_{case.name}(%a0: {names['T0']}) -> {names['R']} {{\n"
            f"  %r:{n} = {op}\n"
            f"  return %r#{case.piece} : {names['R']}\n}}\n")


def build_module(cases):
    funcs, entry, decls = [], ["func.func @entry() {"], set()
    for i, case in enumerate(cases):
        funcs.append(split_function(case) if hasattr(case, "piece")
                     else case.function())
        args = []
        for j, a in enumerate(case.inputs):
            entry.append(f"  %in{i}_{j} = arith.constant {dense(a)}")
            args.append(f"%in{i}_{j}")
        rty = tensor_type(case.expected)
        types = ", ".join(tensor_type(a) for a in case.inputs)
        entry.append(f"  %out{i} = call @case_{case.name}({', '.join(args)}) : "
                     f"({types}) -> {rty}")
        value, element = f"%out{i}", ELEMENT[case.expected.dtype]
        if element == "i1":
            # Printed as i64 (nn.cast i1 -> i64 is 0/1).
            wide = rty[:-3] + "i64>"
            entry.append(f"  %wide{i} = nn.cast %out{i} {{to = i64}} : "
                         f"({rty}) -> {wide}")
            value, rty, element = f"%wide{i}", wide, "i64"
        printer = {"f32": "printMemrefF32", "f64": "printMemrefF64",
                   "i64": "printMemrefI64", "i32": "printMemrefI32"}[element]
        entry.append(f"  %u{i} = tensor.cast {value} : {rty} to "
                     f"tensor<*x{element}>")
        entry.append(f"  call @{printer}(%u{i}) : (tensor<*x{element}>) -> ()")
        decls.add(f"func.func private @{printer}(tensor<*x{element}>)")
    entry += ["  return", "}"]
    return "\n".join(funcs + entry + sorted(decls)) + "\n"


def parse_results(text):
    results = []
    for chunk in text.split("Unranked Memref")[1:]:
        sizes = re.search(r"sizes = \[([^\]]*)\]", chunk).group(1)
        shape = [int(s) for s in sizes.split(",") if s.strip()]
        data = chunk.split("data =", 1)[1]
        tokens = re.findall(r"-?nan|-?inf|[-+]?[0-9][0-9.eE+-]*", data)
        results.append(np.array([float(t) for t in tokens]).reshape(shape))
    return results


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("family", choices=sorted(FAMILIES))
    parser.add_argument("opt", help="path to pipedream-opt")
    parser.add_argument("--runner", default=shutil.which("mlir-runner")
                        or "/usr/lib/llvm-22/bin/mlir-runner")
    parser.add_argument("--case", help="run only this case")
    parser.add_argument("--keep", help="write the module to this file")
    args = parser.parse_args()

    cases = FAMILIES[args.family]()
    if args.case:
        cases = [c for c in cases if c.name == args.case]
    module = build_module(cases)
    if args.keep:
        with open(args.keep, "w") as f:
            f.write(module)
    libdir = os.path.join(os.path.dirname(os.path.realpath(args.runner)),
                          "..", "lib")
    libs = ",".join(os.path.join(libdir, f"libmlir_{n}_utils.so")
                    for n in ("c_runner", "runner"))
    with tempfile.TemporaryDirectory() as tmp:
        source = os.path.join(tmp, "cases.mlir")
        lowered = os.path.join(tmp, "lowered.mlir")
        with open(source, "w") as f:
            f.write(module)
        subprocess.run([args.opt, source, "-o", lowered] + PIPELINE,
                       check=True)
        run = subprocess.run([args.runner, lowered, "-e", "entry",
                              "-entry-point-result=void",
                              f"-shared-libs={libs}"],
                             check=True, capture_output=True, text=True)
    results = parse_results(run.stdout)
    if len(results) != len(cases):
        sys.exit(f"expected {len(cases)} printed results, got {len(results)}")
    failures = 0
    for case, got in zip(cases, results):
        expected = case.expected.astype(np.float64)
        ok = (got.shape == expected.shape and
              np.allclose(got, expected, rtol=RTOL, atol=ATOL,
                          equal_nan=True))
        print(f"{'PASS' if ok else 'FAIL'}: {case.name}")
        if not ok:
            failures += 1
            print(f"  expected {expected.shape}:\n{expected}\n"
                  f"  got {got.shape}:\n{got}")
    print(f"{len(cases) - failures} of {len(cases)} {args.family} cases match")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
