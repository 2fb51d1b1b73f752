#!/usr/bin/python3
"""Fits the rational erf of cpu-approximate-math (lib/Target/CPU/
ApproximateMath.cpp, ErfRational): erf(x) ~ x P(x^2) / Q(x^2) on
[0, 3.92], P of degree 6 and Q of degree 5 in t = x^2, Q(0) = 1.

    /usr/bin/python3 scripts/fit-erf.py

Linearized weighted least squares on 4000 Chebyshev points (the error
measured on erf itself, x (P/Q - erf(x)/x)), re-solved 30 times with
weights grown where the error is large (Lawson's iteration towards the
minimax fit). Prints the coefficients as the f32 literals of the pass and
the float64 fit's largest error (1.4e-9; the f32 evaluation adds the rest,
test/Target/CPU/erf.mlir). Deterministic; numpy only.
"""

import math

import numpy as np
from numpy.polynomial import polynomial as P

DEG_P, DEG_Q, END, NODES, ROUNDS = 6, 5, 3.92, 4000, 30


def main():
    x = (1 - np.cos(np.pi * (np.arange(NODES) + 0.5) / NODES)) / 2 * END
    t = x * x
    f = np.array([math.erf(v) / v for v in x])
    vt = np.vander(t, DEG_Q + 1, increasing=True)
    a = np.hstack([np.vander(t, DEG_P + 1, increasing=True),
                   -f[:, None] * vt[:, 1:]])
    w = np.ones(NODES)
    q = np.zeros(DEG_Q + 1)
    q[0] = 1
    for _ in range(ROUNDS):
        scale = x / np.abs(P.polyval(t, q)) * w
        sol = np.linalg.lstsq(a * scale[:, None], f * scale, rcond=None)[0]
        p, q = sol[:DEG_P + 1], np.concatenate([[1], sol[DEG_P + 1:]])
        err = x * (P.polyval(t, p) / P.polyval(t, q) - f)
        w = w * np.abs(err) ** 0.5 + 1e-300
        w /= w.max()
    print("P:", ", ".join("%.9ef" % np.float32(v) for v in p))
    print("Q:", ", ".join("%.9ef" % np.float32(v) for v in q))
    print("largest error of the float64 fit: %.2e" % np.abs(err).max())


main()
