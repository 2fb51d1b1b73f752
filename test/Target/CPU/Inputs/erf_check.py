#!/usr/bin/python3
"""Inputs and checks for erf.mlir.

    erf_check.py inputs IN.npz
    erf_check.py check IN.npz OUT.npz

The inputs: 2^20 points uniform on [-4.5, 4.5], 2^18 on [3.5, 4], 2^18
geometric on 2^-126 .. 4 with their negations (2^17 each), and 16 special
values. The check compares the bundle's erf with float64 math.erf and
prints the errors per range (exits 1 past 4e-7 or on a wrong special
value, sign or bound).

Uses Debian's /usr/bin/python3 with python3-numpy.
"""

import math
import sys

import numpy as np

UNIFORM, NEAR_ONE, GEOMETRIC = 1 << 20, 1 << 18, 1 << 18
SPECIAL = np.float32([np.nan, np.inf, -np.inf, 0.0, -0.0, 10.0, -10.0,
                      3.85, -3.85, 1e-30, -1e-30, 1e-45, 0.5, -0.5, 1.0, 2.0])
LIMIT = 4e-7


def inputs():
    half = GEOMETRIC // 2
    geometric = (2.0 ** np.linspace(-126, 2, half)).astype(np.float32)
    return np.concatenate([
        np.linspace(-4.5, 4.5, UNIFORM).astype(np.float32),
        np.linspace(3.5, 4.0, NEAR_ONE).astype(np.float32),
        geometric, -geometric, SPECIAL])


def main():
    if sys.argv[1] == "inputs":
        np.savez(sys.argv[2], x=inputs())
        return
    x = np.load(sys.argv[2])["x"]
    y = np.load(sys.argv[3])["erf"]
    ref = np.array([math.erf(v) for v in x.astype(np.float64)])
    err = np.abs(y.astype(np.float64) - ref)
    failed = False
    ranges = [("uniform", slice(0, UNIFORM), "abs"),
              ("near one", slice(UNIFORM, UNIFORM + NEAR_ONE), "abs"),
              ("geometric", slice(UNIFORM + NEAR_ONE,
                                  UNIFORM + NEAR_ONE + GEOMETRIC), "rel")]
    for name, part, kind in ranges:
        e = err[part]
        if kind == "rel":
            e = e / np.abs(ref[part])
        worst = float(e.max())
        print("%s: max %s error %.2e at %r" % (name, kind, worst,
                                              float(x[part][e.argmax()])))
        failed |= not worst <= LIMIT
    s = y[-len(SPECIAL):]
    special = (np.isnan(s[0]) and s[1] == 1.0 and s[2] == -1.0 and
               s[3] == 0.0 and not np.signbit(s[3]) and s[4] == 0.0 and
               np.signbit(s[4]) and s[5] == 1.0 and s[6] == -1.0 and
               s[7] == 1.0 and s[8] == -1.0)
    print("special values " + ("OK" if special else "WRONG %r" % list(s)))
    failed |= not special
    finite = ~np.isnan(x)
    half = GEOMETRIC // 2
    pos = slice(UNIFORM + NEAR_ONE, UNIFORM + NEAR_ONE + half)
    neg = slice(UNIFORM + NEAR_ONE + half, UNIFORM + NEAR_ONE + GEOMETRIC)
    odd = np.array_equal(y[pos], -y[neg])
    bounded = bool(np.all(np.abs(y[finite]) <= 1.0))
    print("odd, |erf| <= 1: " + ("OK" if odd and bounded else
                                 "WRONG (odd %s, bounded %s)" % (odd, bounded)))
    failed |= not (odd and bounded)
    sys.exit(1 if failed else 0)


main()
