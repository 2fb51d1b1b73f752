#!/usr/bin/python3
"""Is the lowered IR linear in the model's length? (issue 16)

    ir_growth.py A.ll.mlir N_A B.ll.mlir N_B C.ll.mlir N_C [--vary-kernels]

Each file is `pipedream-compile --emit llvm-dialect` of the same model with
N blocks (layers). Counts, per file, the distinct outlined kernels
(`llvm.func internal @__pipedream_kernel_`), the kernel calls and all calls
(kernels, GEMMs, allocations, frees, helpers; not the calls of the parts
cpu-split-large-functions makes), and prints:
  kernels KA KB KC
  OK kernels constant        (or FAIL): every size has the same kernels
                             (skipped with --vary-kernels)
  OK kernel calls linear     (or FAIL): the same increase per block between
  OK calls linear            (or FAIL): A->B and B->C, and a positive one
The compiler's output is compared only with itself at other sizes: a
per-block cost that grows with the model shows as a non-constant increase.
"""

import re
import sys


def counts(path):
    text = open(path).read()
    return {
        "kernels": len(re.findall(r"^\s*llvm\.func internal "
                                  r"@__pipedream_kernel_\d+\(", text, re.M)),
        "kernel calls": len(re.findall(r"llvm\.call @__pipedream_kernel_\d+\(",
                                       text)),
        # Every call but those of cpu-split-large-functions' parts (their
        # number and the frame traffic depend on where runs are cut).
        "calls": len(re.findall(r"llvm\.call @(?![\w.$]*\.part\d+\()",
                                text)),
    }


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) != 6:
        raise SystemExit(__doc__)
    files = args[0::2]
    sizes = [int(n) for n in args[1::2]]
    if not sizes[0] < sizes[1] < sizes[2]:
        raise SystemExit("sizes must increase")
    c = [counts(f) for f in files]
    print("kernels %d %d %d" % tuple(x["kernels"] for x in c))
    if "--vary-kernels" not in sys.argv:
        same = len({x["kernels"] for x in c}) == 1 and c[0]["kernels"] > 0
        print("%s kernels constant" % ("OK" if same else "FAIL"))
    for key in ("kernel calls", "calls"):
        v = [x[key] for x in c]
        # Per-block increase A->B equals B->C (cross-multiplied: exact).
        linear = ((v[2] - v[1]) * (sizes[1] - sizes[0]) ==
                  (v[1] - v[0]) * (sizes[2] - sizes[1]) and v[1] > v[0])
        print("%s: %d %d %d" % (key, v[0], v[1], v[2]))
        print("%s %s linear" % ("OK" if linear else "FAIL", key))


if __name__ == "__main__":
    main()
