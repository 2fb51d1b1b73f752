#!/usr/bin/python3
"""Reduction test cases for the CPU code generator (cpu-lower-reductions-to-loops).

    reductions.py OUT.mlir IN.npz REF.npz

Writes a module with one public function per case (row sums of lengths
around the 16 lanes and 2 x 16, a variance against a given mean, a sum
over the last two dimensions, a product, a max with NaN-free data, a
column sum, f64 from a non-zero start), random inputs, and the numpy
reference results computed in float64.

Uses Debian's /usr/bin/python3 with python3-numpy.
"""

import sys

import numpy as np

rng = np.random.default_rng(11)
functions = []
inputs = {}
reference = {}


def tensor(shape, dtype="f32"):
    return "tensor<%s%s>" % ("".join("%dx" % d for d in shape), dtype)


def case(name, args, out_shape, maps, iterators, body, init, ref,
         dtype="f32"):
    """One linalg.generic: `args` are (suffix, array) inputs, `body` the
    region's ops on %x0, %x1... and %acc ending in %r; `init` the output's
    starting value."""
    params, operands, types, block = [], [], [], []
    for i, (suffix, value) in enumerate(args):
        arg_name = "%s.%s" % (name, suffix)
        inputs[arg_name] = value
        params.append('%%a%d: %s {nn.name = "%s"}' % (
            i, tensor(value.shape, dtype), arg_name))
        operands.append("%%a%d" % i)
        types.append(tensor(value.shape, dtype))
        block.append("%%x%d: %s" % (i, dtype))
    out_name = "%s.y" % name
    reference[out_name] = ref.astype(
        np.float64 if dtype == "f64" else np.float32)
    t = tensor(out_shape, dtype)
    fill = """  %%c = arith.constant %s : %s
  %%empty = tensor.empty() : %s
  %%init = linalg.fill ins(%%c : %s) outs(%%empty : %s) -> %s
""" % (literal(init, dtype), dtype, t, dtype, t, t)
    functions.append("""func.func @%s(%s) -> (%s {nn.name = "%s"}) {
%s  %%y = linalg.generic {indexing_maps = [%s], iterator_types = [%s]}
      ins(%s : %s) outs(%%init : %s) {
  ^bb0(%s, %%acc: %s):
%s
    linalg.yield %%r : %s
  } -> %s
  return %%y : %s
}""" % (name, ", ".join(params), t, out_name, fill, ", ".join(maps),
        ", ".join('"%s"' % it for it in iterators), ", ".join(operands),
        ", ".join(types), t, ", ".join(block), dtype, body, dtype, t,
        t))


def literal(value, dtype):
    """An MLIR float literal (infinities as their bit patterns)."""
    if np.isinf(value):
        bits = {"f32": (0x7F800000, 0xFF800000),
                "f64": (0x7FF0000000000000, 0xFFF0000000000000)}[dtype]
        return hex(bits[value < 0])
    return repr(float(value))


def rand(shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


ROW = ["affine_map<(i, k) -> (i, k)>", "affine_map<(i, k) -> (i)>"]
SUM = "    %r = arith.addf %acc, %x0 : {t}"

# Row sums: fewer steps than two lanes' worth (no split), exactly 2 x 16,
# a remainder, and a long row.
for n in (7, 31, 32, 45, 256):
    x = rand((5, n))
    case("sum%d" % n, [("x", x)], (5,), ROW, ["parallel", "reduction"],
         SUM.format(t="f32"), 0.0, x.astype(np.float64).sum(axis=1))

# LayerNorm's variance: sum of (x - mean)^2, the mean an input.
x = rand((6, 200))
mean = x.astype(np.float64).mean(axis=1).astype(np.float32)
case("variance", [("x", x), ("mean", mean)], (6,),
     ["affine_map<(i, k) -> (i, k)>", "affine_map<(i, k) -> (i)>",
      "affine_map<(i, k) -> (i)>"], ["parallel", "reduction"],
     """    %d = arith.subf %x0, %x1 : f32
    %s = arith.mulf %d, %d : f32
    %r = arith.addf %acc, %s : f32""", 0.0,
     ((x.astype(np.float64) - mean.astype(np.float64)[:, None]) ** 2).sum(
         axis=1))

# Two reduction dimensions (a sum over the last two).
x = rand((3, 9, 40))
case("sum2d", [("x", x)], (3,),
     ["affine_map<(i, j, k) -> (i, j, k)>", "affine_map<(i, j, k) -> (i)>"],
     ["parallel", "reduction", "reduction"], SUM.format(t="f32"), 0.0,
     x.astype(np.float64).sum(axis=(1, 2)))

# A product (near 1, so it neither overflows nor underflows).
x = (1.0 + 0.01 * rand((4, 70))).astype(np.float32)
case("prod", [("x", x)], (4,), ROW, ["parallel", "reduction"],
     "    %r = arith.mulf %acc, %x0 : f32", 1.0,
     x.astype(np.float64).prod(axis=1))

# A max (exact in any order; promoted, not split).
x = rand((4, 100))
case("max", [("x", x)], (4,), ROW, ["parallel", "reduction"],
     "    %r = arith.maximumf %acc, %x0 : f32", -np.inf,
     x.astype(np.float64).max(axis=1))

# A column sum: the reduction is the outer loop (left to the loop lowering).
x = rand((50, 6))
case("colsum", [("x", x)], (6,),
     ["affine_map<(k, j) -> (k, j)>", "affine_map<(k, j) -> (j)>"],
     ["reduction", "parallel"], SUM.format(t="f32"), 0.0,
     x.astype(np.float64).sum(axis=0))

# f64, and a non-zero starting value.
x = rand((3, 77), np.float64)
case("sum_f64", [("x", x)], (3,), ROW, ["parallel", "reduction"],
     SUM.format(t="f64"), 0.25, 0.25 + x.sum(axis=1), dtype="f64")

with open(sys.argv[1], "w") as f:
    f.write("module {\n" + "\n".join(functions) + "\n}\n")
np.savez(sys.argv[2], **inputs)
np.savez(sys.argv[3], **reference)
