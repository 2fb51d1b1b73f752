#!/usr/bin/python3
"""Contraction test cases for the CPU code generator.

    contractions.py OUT.mlir IN.npz REF.npz

Writes a module with one public function per case (matmuls of many shapes
and layouts, batch matmuls, generic contractions with transposed, merged or
column-major operands, strided views, a non-zero accumulator, a convolution,
f64), random inputs, and the numpy reference results (computed in float64).
Each case is chosen to exercise one path of cpu-vectorize-gemm,
cpu-lower-gemm-to-blas or the loop fallback; every GEMM lowering must give
the same results.

Uses Debian's /usr/bin/python3 with python3-numpy.
"""

import sys

import numpy as np

rng = np.random.default_rng(7)
functions = []
inputs = {}
reference = {}


def tensor(shape, dtype="f32"):
    return "tensor<%s%s>" % ("".join("%dx" % d for d in shape), dtype)


def rand(shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def case(name, args, result_shape, body, reference_value, dtype="f32"):
    """`args`: list of (suffix, array). `body` uses %a0, %a1... and must end
    with `return %r`."""
    params = []
    for i, (suffix, value) in enumerate(args):
        arg_name = "%s.%s" % (name, suffix)
        inputs[arg_name] = value
        params.append('%%a%d: %s {nn.name = "%s"}' % (
            i, tensor(value.shape, dtype), arg_name))
    out_name = "%s.y" % name
    reference[out_name] = reference_value.astype(
        np.float64 if dtype == "f64" else np.float32)
    functions.append(
        'func.func @%s(%s) -> (%s {nn.name = "%s"}) {\n%s\n}' % (
            name, ", ".join(params), tensor(result_shape, dtype), out_name,
            body.strip("\n")))


# The body of a multiply-accumulate linalg.generic (part of the cases'
# %-templates).
MUL_ADD = """  ^bb0(%%x: f32, %%y: f32, %%acc: f32):
    %%p = arith.mulf %%x, %%y : f32
    %%s = arith.addf %%acc, %%p : f32
    linalg.yield %%s : f32
"""


def zero_init(shape, dtype="f32"):
    t = tensor(shape, dtype)
    return """  %%zero = arith.constant 0.0 : %s
  %%empty = tensor.empty() : %s
  %%init = linalg.fill ins(%%zero : %s) outs(%%empty : %s) -> %s""" % (
        dtype, t, dtype, t, t)


def matmul(name, m, n, k):
    a, b = rand((m, k)), rand((k, n))
    c = tensor((m, n))
    case(name, [("a", a), ("b", b)], (m, n), """%s
  %%r = linalg.matmul ins(%%a0, %%a1 : %s, %s) outs(%%init : %s) -> %s
  return %%r : %s""" % (zero_init((m, n)), tensor((m, k)), tensor((k, n)), c, c,
                        c), a.astype(np.float64) @ b)


# Register-tile paths: 8x32, 8x16, 4x8 (never 8x8), 2 rows, 1 row.
matmul("mm_64x96x48", 64, 96, 48)
matmul("mm_16x16x16", 16, 16, 16)
matmul("mm_8x8x16", 8, 8, 16)
matmul("mm_16x24x8", 16, 24, 8)
matmul("mm_2x64x16", 2, 64, 16)
matmul("mm_1x32x64", 1, 32, 64)
# N not a multiple of 8: BLAS or loops.
matmul("mm_10x7x9", 10, 7, 9)
# K past the untiled bound: K cache tiles.
matmul("mm_24x32x1100", 24, 32, 1100)

# Batch matmul.
a, b = rand((4, 8, 16)), rand((4, 16, 24))
case("bmm", [("a", a), ("b", b)], (4, 8, 24), """%s
  %%r = linalg.batch_matmul ins(%%a0, %%a1 : %s, %s) outs(%%init : %s) -> %s
  return %%r : %s""" % (zero_init((4, 8, 24)), tensor((4, 8, 16)),
                        tensor((4, 16, 24)), tensor((4, 8, 24)),
                        tensor((4, 8, 24)), tensor((4, 8, 24))),
     a.astype(np.float64) @ b)

# Transposed B (x @ W^T, attention's q @ k^T).
a, b = rand((16, 32)), rand((24, 32))
case("mm_bt", [("a", a), ("b", b)], (16, 24), """%s
  %%r = linalg.matmul indexing_maps = [
      affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>,
      affine_map<(m, n, k) -> (m, n)>]
      ins(%%a0, %%a1 : %s, %s) outs(%%init : %s) -> %s
  return %%r : %s""" % (zero_init((16, 24)), tensor((16, 32)),
                        tensor((24, 32)), tensor((16, 24)), tensor((16, 24)),
                        tensor((16, 24))), a.astype(np.float64) @ b.T)

# Transposed A.
a, b = rand((32, 16)), rand((32, 40))
case("mm_at", [("a", a), ("b", b)], (16, 40), """%s
  %%r = linalg.matmul indexing_maps = [
      affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>,
      affine_map<(m, n, k) -> (m, n)>]
      ins(%%a0, %%a1 : %s, %s) outs(%%init : %s) -> %s
  return %%r : %s""" % (zero_init((16, 40)), tensor((32, 16)),
                        tensor((32, 40)), tensor((16, 40)), tensor((16, 40)),
                        tensor((16, 40))), a.T.astype(np.float64) @ b)

# [B, T, C] x [C, N]: two M dimensions (merged into one GEMM).
a, b = rand((2, 8, 32)), rand((32, 48))
case("mm_btc", [("a", a), ("b", b)], (2, 8, 48), ("""%s
  %%r = linalg.generic {indexing_maps = [
      affine_map<(b, t, n, k) -> (b, t, k)>, affine_map<(b, t, n, k) -> (k, n)>,
      affine_map<(b, t, n, k) -> (b, t, n)>],
      iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%%a0, %%a1 : %s, %s) outs(%%init : %s) {
""" + MUL_ADD + """  } -> %s
  return %%r : %s""") % (zero_init((2, 8, 48)), tensor((2, 8, 32)),
                        tensor((32, 48)), tensor((2, 8, 48)),
                        tensor((2, 8, 48)), tensor((2, 8, 48))),
     a.astype(np.float64) @ b)

# Column-major output: C[n, m] = sum_k A[m, k] B[k, n].
a, b = rand((12, 20)), rand((20, 16))
case("mm_ct", [("a", a), ("b", b)], (16, 12), ("""%s
  %%r = linalg.generic {indexing_maps = [
      affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>,
      affine_map<(m, n, k) -> (n, m)>],
      iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%%a0, %%a1 : %s, %s) outs(%%init : %s) {
""" + MUL_ADD + """  } -> %s
  return %%r : %s""") % (zero_init((16, 12)), tensor((12, 20)),
                        tensor((20, 16)), tensor((16, 12)), tensor((16, 12)),
                        tensor((16, 12))), (a.astype(np.float64) @ b).T)

# Row-wise dot products (softmax's and LayerNorm's backward: sum_k dy * y
# per row): a batch of 1 x 1 GEMMs, which the GEMM lowerings leave to the
# reduction loops. 37 rows of 70 (odd sizes: no full vector of rows).
a, b = rand((37, 70)), rand((37, 70))
case("row_dots", [("a", a), ("b", b)], (37,), ("""%s
  %%r = linalg.generic {indexing_maps = [
      affine_map<(r, k) -> (r, k)>, affine_map<(r, k) -> (r, k)>,
      affine_map<(r, k) -> (r)>],
      iterator_types = ["parallel", "reduction"]}
      ins(%%a0, %%a1 : %s, %s) outs(%%init : %s) {
""" + MUL_ADD + """  } -> %s
  return %%r : %s""") % (zero_init((37,)), tensor((37, 70)), tensor((37, 70)),
                        tensor((37,)), tensor((37,)), tensor((37,))),
     (a.astype(np.float64) * b).sum(axis=1))

# Attention with heads split from a fused QKV (B=2, T=16, H=4, D=8):
# scores Q K^T per head, and the heads' P V merged back to [B, T, H*D].
# cpu-fold-transposes-into-contractions expands the batch B*H and folds the
# head transposes: GEMMs on strided slices of QKV (leading dimension
# 3*H*D) and a C written with leading dimension H*D.
qkv, p = rand((2, 16, 96)), rand((8, 16, 16))
q4, k4, v4 = (qkv[:, :, i:i + 32].reshape(2, 16, 4, 8).astype(np.float64)
              for i in (0, 32, 64))
HEADS = """
  %%zero = arith.constant 0.0 : f32
  %%x2 = tensor.extract_slice %%a0[0, 0, %d] [2, 16, 32] [1, 1, 1] : tensor<2x16x96xf32> to tensor<2x16x32xf32>
  %%y2 = tensor.extract_slice %%a0[0, 0, %d] [2, 16, 32] [1, 1, 1] : tensor<2x16x96xf32> to tensor<2x16x32xf32>
  %%x = tensor.expand_shape %%x2 [[0], [1], [2, 3]] output_shape [2, 16, 4, 8] : tensor<2x16x32xf32> into tensor<2x16x4x8xf32>
  %%y = tensor.expand_shape %%y2 [[0], [1], [2, 3]] output_shape [2, 16, 4, 8] : tensor<2x16x32xf32> into tensor<2x16x4x8xf32>
  %%e1 = tensor.empty() : tensor<2x4x16x8xf32>
  %%xt = linalg.transpose ins(%%x : tensor<2x16x4x8xf32>) outs(%%e1 : tensor<2x4x16x8xf32>) permutation = [0, 2, 1, 3]
  %%xc = tensor.collapse_shape %%xt [[0, 1], [2], [3]] : tensor<2x4x16x8xf32> into tensor<8x16x8xf32>"""
case("attn_scores", [("qkv", qkv)], (2, 4, 16, 16), (HEADS % (0, 32)) + """
  %e2 = tensor.empty() : tensor<2x4x8x16xf32>
  %yt = linalg.transpose ins(%y : tensor<2x16x4x8xf32>) outs(%e2 : tensor<2x4x8x16xf32>) permutation = [0, 2, 3, 1]
  %yc = tensor.collapse_shape %yt [[0, 1], [2], [3]] : tensor<2x4x8x16xf32> into tensor<8x8x16xf32>
  %se = tensor.empty() : tensor<8x16x16xf32>
  %sf = linalg.fill ins(%zero : f32) outs(%se : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %s = linalg.batch_matmul ins(%xc, %yc : tensor<8x16x8xf32>, tensor<8x8x16xf32>) outs(%sf : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %r = tensor.expand_shape %s [[0, 1], [2], [3]] output_shape [2, 4, 16, 16] : tensor<8x16x16xf32> into tensor<2x4x16x16xf32>
  return %r : tensor<2x4x16x16xf32>""",
     np.einsum("bthd,bshd->bhts", q4, k4))
case("attn_output", [("qkv", qkv), ("p", p)], (2, 16, 32),
     (HEADS % (64, 0)) + """
  %oe = tensor.empty() : tensor<8x16x8xf32>
  %of = linalg.fill ins(%zero : f32) outs(%oe : tensor<8x16x8xf32>) -> tensor<8x16x8xf32>
  %o = linalg.batch_matmul ins(%a1, %xc : tensor<8x16x16xf32>, tensor<8x16x8xf32>) outs(%of : tensor<8x16x8xf32>) -> tensor<8x16x8xf32>
  %o4 = tensor.expand_shape %o [[0, 1], [2], [3]] output_shape [2, 4, 16, 8] : tensor<8x16x8xf32> into tensor<2x4x16x8xf32>
  %e4 = tensor.empty() : tensor<2x16x4x8xf32>
  %ot = linalg.transpose ins(%o4 : tensor<2x4x16x8xf32>) outs(%e4 : tensor<2x16x4x8xf32>) permutation = [0, 2, 1, 3]
  %r = tensor.collapse_shape %ot [[0], [1], [2, 3]] : tensor<2x16x4x8xf32> into tensor<2x16x32xf32>
  return %r : tensor<2x16x32xf32>""",
     np.einsum("bhts,bshd->bthd", p.reshape(2, 4, 16, 16).astype(np.float64),
               v4).reshape(2, 16, 32))

# Strided operands: A is columns 8..40 of a wider tensor, B rows 4..36.
a, b = rand((16, 64)), rand((40, 32))
case("mm_strided", [("a", a), ("b", b)], (16, 32), """%s
  %%sa = tensor.extract_slice %%a0[0, 8] [16, 32] [1, 1] : %s to %s
  %%sb = tensor.extract_slice %%a1[4, 0] [32, 32] [1, 1] : %s to %s
  %%r = linalg.matmul ins(%%sa, %%sb : %s, %s) outs(%%init : %s) -> %s
  return %%r : %s""" % (zero_init((16, 32)), tensor((16, 64)),
                        tensor((16, 32)), tensor((40, 32)), tensor((32, 32)),
                        tensor((16, 32)), tensor((32, 32)), tensor((16, 32)),
                        tensor((16, 32)), tensor((16, 32))),
     a[:, 8:40].astype(np.float64) @ b[4:36])

# Non-zero accumulator: C = bias (broadcast over rows) + A @ B.
a, b, bias = rand((16, 24)), rand((24, 40)), rand((40,))
case("mm_bias", [("a", a), ("b", b), ("bias", bias)], (16, 40), """
  %%empty = tensor.empty() : %s
  %%init = linalg.broadcast ins(%%a2 : %s) outs(%%empty : %s) dimensions = [0]
  %%r = linalg.matmul ins(%%a0, %%a1 : %s, %s) outs(%%init : %s) -> %s
  return %%r : %s""" % (tensor((16, 40)), tensor((40,)), tensor((16, 40)),
                        tensor((16, 24)), tensor((24, 40)), tensor((16, 40)),
                        tensor((16, 40)), tensor((16, 40))),
     a.astype(np.float64) @ b + bias)

# Convolution (NCHW, FCHW), stride 1: im2col + contraction.
x, w = rand((2, 3, 10, 10)), rand((8, 3, 3, 3))
ref = np.zeros((2, 8, 8, 8))
for i in range(3):
    for j in range(3):
        ref += np.einsum("nchw,fc->nfhw", x[:, :, i:i + 8, j:j + 8],
                         w[:, :, i, j].astype(np.float64))
case("conv", [("x", x), ("w", w)], (2, 8, 8, 8), """%s
  %%r = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>,
                                 strides = dense<1> : tensor<2xi64>}
      ins(%%a0, %%a1 : %s, %s) outs(%%init : %s) -> %s
  return %%r : %s""" % (zero_init((2, 8, 8, 8)), tensor((2, 3, 10, 10)),
                        tensor((8, 3, 3, 3)), tensor((2, 8, 8, 8)),
                        tensor((2, 8, 8, 8)), tensor((2, 8, 8, 8))), ref)

# f64 (cblas_dgemm, or loops).
a, b = rand((16, 24), np.float64), rand((24, 32), np.float64)
case("mm_f64", [("a", a), ("b", b)], (16, 32), """%s
  %%r = linalg.matmul ins(%%a0, %%a1 : %s, %s) outs(%%init : %s) -> %s
  return %%r : %s""" % (zero_init((16, 32), "f64"), tensor((16, 24), "f64"),
                        tensor((24, 32), "f64"), tensor((16, 32), "f64"),
                        tensor((16, 32), "f64"), tensor((16, 32), "f64")),
     a @ b, dtype="f64")

with open(sys.argv[1], "w") as f:
    f.write("\n\n".join(functions) + "\n")
np.savez(sys.argv[2], **inputs)
np.savez(sys.argv[3], **reference)
