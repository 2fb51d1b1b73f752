#!/usr/bin/python3
"""Checks a `--dtype bf16` output against the bf16 and the f32 references.

    compare_bf16.py ACTUAL.npz BF16_REF.npz F32_REF.npz [--rtol R]
        [--atol A] [--max-outside F] [--loose-rtol R2] [--loose-atol A2]
        [--min-f32-outside G]

For every array of BF16_REF (PyTorch's bf16-recipe output):
- at most a fraction F of ACTUAL's elements may lie outside the tight bound
  `atol + rtol * |ref|` (default 1e-5 + 1e-5|ref|: f32 summation-order
  noise). The exceptions allowed are GEMM outputs whose rounding to bf16
  went the other way because the f32 sums were added in another order
  (one bf16 ulp, 2^-8 relative; rare, as the f32 sums differ by ~1e-7
  relative), and what they propagate to;
- every element must lie within `loose_atol + loose_rtol * |ref|` (default
  1e-3 + 2^-7|ref|: two bf16 ulps);
- the f32 reference (PyTorch in f32, F32_REF) must have more than a
  fraction G (default 0.4) of its elements outside the tight bound: the
  check can tell bf16 GEMMs from f32 ones, so a compiler ignoring --dtype
  bf16 fails it.
Prints `OK name max_err outside_fraction f32_outside_fraction` per array,
or one MISMATCH line and exits 1.

Uses Debian's /usr/bin/python3 with python3-numpy.
"""

import argparse
import sys

import numpy as np


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("actual")
    parser.add_argument("bf16_reference")
    parser.add_argument("f32_reference")
    parser.add_argument("--rtol", type=float, default=1e-5)
    parser.add_argument("--atol", type=float, default=1e-5)
    parser.add_argument("--max-outside", type=float, default=0.05)
    parser.add_argument("--loose-rtol", type=float, default=2.0 ** -7)
    parser.add_argument("--loose-atol", type=float, default=1e-3)
    parser.add_argument("--min-f32-outside", type=float, default=0.4)
    args = parser.parse_args()
    actual = np.load(args.actual)
    bf16 = np.load(args.bf16_reference)
    f32 = np.load(args.f32_reference)
    for name in sorted(bf16.files):
        if name not in actual.files or name not in f32.files:
            sys.exit("MISMATCH %s: missing" % name)
        want = bf16[name].astype(np.float64)
        got = actual[name].astype(np.float64)
        plain = f32[name].astype(np.float64)
        if got.shape != want.shape or plain.shape != want.shape:
            sys.exit("MISMATCH %s: shapes %s %s %s" % (
                name, got.shape, want.shape, plain.shape))
        tight = args.atol + args.rtol * np.abs(want)
        loose = args.loose_atol + args.loose_rtol * np.abs(want)
        err = np.abs(got - want)
        if not (err <= loose).all():
            i = np.unravel_index(np.argmax(np.where(err <= loose, -1, err)),
                                 want.shape)
            sys.exit("MISMATCH %s: %d of %d elements beyond two bf16 ulps of "
                     "the bf16 reference, worst at %s: %r vs %r" % (
                         name, (~(err <= loose)).sum(), want.size, i, got[i],
                         want[i]))
        outside = float((~(err <= tight)).mean())
        if outside > args.max_outside:
            sys.exit("MISMATCH %s: %.3g of the elements differ from the bf16 "
                     "reference by more than %g + %g|ref| (at most %g may)" % (
                         name, outside, args.atol, args.rtol,
                         args.max_outside))
        f32_outside = float((~(np.abs(plain - want) <= tight)).mean())
        if f32_outside <= args.min_f32_outside:
            sys.exit("MISMATCH %s: only %.3g of the f32 reference's elements "
                     "differ from the bf16 reference: the check cannot tell "
                     "bf16 from f32" % (name, f32_outside))
        print("OK %s %.3g %.3g %.3g" % (name, err.max(), outside, f32_outside))


if __name__ == "__main__":
    main()
