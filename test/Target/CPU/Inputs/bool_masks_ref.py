#!/usr/bin/python3
"""Inputs and numpy reference of test/Target/CPU/bool-masks.mlir.

    bool_masks_ref.py IN.npz REF.npz
"""

import sys

import numpy as np

rng = np.random.default_rng(7)
x = rng.standard_normal((8, 40)).astype(np.float32)
# A causal mask's pattern on the first 8 columns, random bits after: every
# byte is read on its own, not as one bit of a word.
mask = np.tril(np.ones((8, 40), dtype=bool))
mask[:, 8:] = rng.integers(0, 2, size=(8, 32)).astype(bool)
np.savez(sys.argv[1], x=x, mask=mask.astype(np.uint8))
masked = np.where(mask, x * np.float32(2), np.float32(-1e4)).astype(np.float32)
both = (mask & (x > 0)).astype(np.uint8)
np.savez(sys.argv[2], masked=masked, both=both)
