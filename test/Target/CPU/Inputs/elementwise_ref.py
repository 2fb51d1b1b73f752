#!/usr/bin/python3
"""Inputs and numpy reference for elementwise.mlir.

    elementwise_ref.py IN.npz REF.npz

Uses Debian's /usr/bin/python3 with python3-numpy.
"""

import math
import sys

import numpy as np

rng = np.random.default_rng(3)
x = rng.standard_normal((4, 33)).astype(np.float32)
n = rng.integers(-1000, 1000, size=(4, 33), dtype=np.int64)
d = rng.standard_normal((5,))
erf = np.vectorize(math.erf)
np.savez(sys.argv[1], x=x, n=n, d=d)
np.savez(sys.argv[2],
         gelu=(0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))).astype(np.float32),
         soft=(np.tanh(x) + np.exp(x)).astype(np.float32),
         mixed=(x + n.astype(np.float32)).astype(np.float32),
         positive=(x > 0).astype(np.uint8),
         twice=(2.0 * d))
