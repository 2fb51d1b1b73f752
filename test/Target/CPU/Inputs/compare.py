#!/usr/bin/python3
"""Compares the arrays of two .npz files.

    compare.py ACTUAL.npz EXPECTED.npz [--rtol R] [--atol A]

Every array of EXPECTED must be in ACTUAL with the same dtype and shape and
values within `atol + rtol * |expected|` (exactly equal for integers and
booleans). Prints `OK name max_abs_err` per array, or one error line and
exits 1.

Uses Debian's /usr/bin/python3 with python3-numpy.
"""

import argparse
import sys

import numpy as np


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("actual")
    parser.add_argument("expected")
    parser.add_argument("--rtol", type=float, default=1e-5)
    parser.add_argument("--atol", type=float, default=1e-5)
    args = parser.parse_args()
    actual = np.load(args.actual)
    expected = np.load(args.expected)
    for name in sorted(expected.files):
        want = expected[name]
        if name not in actual.files:
            sys.exit("MISMATCH %s: missing from %s" % (name, args.actual))
        got = actual[name]
        if got.shape != want.shape:
            sys.exit("MISMATCH %s: shape %s, expected %s" % (
                name, got.shape, want.shape))
        if np.issubdtype(want.dtype, np.floating):
            if got.dtype != want.dtype:
                sys.exit("MISMATCH %s: dtype %s, expected %s" % (
                    name, got.dtype, want.dtype))
            err = np.abs(got.astype(np.float64) - want.astype(np.float64))
            bad = ~(err <= args.atol + args.rtol * np.abs(want))
            if bad.any():
                i = np.unravel_index(np.argmax(np.where(bad, err, -1)),
                                     want.shape)
                sys.exit("MISMATCH %s: %d of %d elements differ, worst at %s: "
                         "%r vs %r" % (name, bad.sum(), want.size, i, got[i],
                                       want[i]))
            print("OK %s %.3g" % (name, err.max() if err.size else 0))
        else:
            if not np.array_equal(got.astype(want.dtype), want):
                sys.exit("MISMATCH %s: integer values differ" % name)
            print("OK %s exact" % name)


if __name__ == "__main__":
    main()
