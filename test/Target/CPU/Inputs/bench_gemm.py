#!/usr/bin/python3
"""GEMM throughput of the CPU code generator's lowerings (not a lit test).

    bench_gemm.py PIPEDREAM_COMPILE [--shapes MxNxK,...] [--modes a,b]
                  [--reps R] [--workdir DIR]

For each shape, compiles `C = A @ B` (f32, row-major, zero-initialized C)
with `pipedream-compile --gemm MODE` for each mode, calls the bundle's entry
point through ctypes on random inputs, checks the result against numpy and
prints the best of R timings in GFLOP/s (2*M*N*K flops per call). The
OpenBLAS kernel and thread count come from the environment
(OPENBLAS_CORETYPE, OPENBLAS_NUM_THREADS) and are printed with the table.

Default shapes: 512^3, and the GEMMs of a GPT-2-small layer at 1024 tokens
(1024x3072x768 MLP up-projection, 1024x768x768 attention projection).

Uses Debian's /usr/bin/python3 with python3-numpy.
"""

import argparse
import ctypes
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np


def module(m, n, k):
    return f"""func.func @main(%a: tensor<{m}x{k}xf32> {{nn.name = "a"}},
                %b: tensor<{k}x{n}xf32> {{nn.name = "b"}})
    -> (tensor<{m}x{n}xf32> {{nn.name = "c"}}) {{
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<{m}x{n}xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>
  %r = linalg.matmul ins(%a, %b : tensor<{m}x{k}xf32>, tensor<{k}x{n}xf32>)
                     outs(%f : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>
  return %r : tensor<{m}x{n}xf32>
}}
"""


def run(bundle, m, n, k, reps):
    with open(os.path.join(bundle, "bundle.json")) as f:
        function = json.load(f)["functions"][0]
    library = ctypes.CDLL(os.path.join(os.path.abspath(bundle), "program.so"))
    entry = getattr(library, function["symbol"])
    entry.restype = None
    rng = np.random.default_rng(0)
    a = rng.random((m, k), dtype=np.float32)
    b = rng.random((k, n), dtype=np.float32)
    c = np.full((m, n), np.nan, dtype=np.float32)
    pointers = (ctypes.c_void_p * 3)(a.ctypes.data, b.ctypes.data,
                                     c.ctypes.data)
    entry(pointers)
    expected = a.astype(np.float64) @ b
    error = np.abs(c - expected).max() / np.abs(expected).max()
    if not error < 1e-5:
        sys.exit("%s: wrong result (relative error %g)" % (bundle, error))
    best = float("inf")
    for _ in range(reps):
        start = time.perf_counter()
        entry(pointers)
        best = min(best, time.perf_counter() - start)
    return 2.0 * m * n * k / best / 1e9


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("compiler")
    parser.add_argument("--shapes", default="512x512x512,1024x3072x768,"
                        "1024x768x768")
    parser.add_argument("--modes", default="vectorize,blas,loops")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--workdir", default=None)
    args = parser.parse_args()
    workdir = args.workdir or tempfile.mkdtemp(prefix="bench-gemm-")
    modes = args.modes.split(",")
    print("OPENBLAS_CORETYPE=%s OPENBLAS_NUM_THREADS=%s" % (
        os.environ.get("OPENBLAS_CORETYPE", "(auto)"),
        os.environ.get("OPENBLAS_NUM_THREADS", "(all cores)")))
    print("%-16s" % "MxNxK" + "".join("%12s" % mode for mode in modes)
          + "   (GFLOP/s, best of %d)" % args.reps)
    for shape in args.shapes.split(","):
        m, n, k = map(int, shape.split("x"))
        source = os.path.join(workdir, "mm_%s.mlir" % shape)
        with open(source, "w") as f:
            f.write(module(m, n, k))
        row = "%-16s" % shape
        for mode in modes:
            bundle = os.path.join(workdir, "mm_%s_%s" % (shape, mode))
            subprocess.run([args.compiler, source, "--inference", "--gemm",
                            mode, "-o", bundle], check=True)
            reps = 1 if mode == "loops" else args.reps
            row += "%12.1f" % run(bundle, m, n, k, reps)
        print(row, flush=True)


if __name__ == "__main__":
    main()
