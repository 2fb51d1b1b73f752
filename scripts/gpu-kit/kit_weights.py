#!/usr/bin/env python3
"""Rebuilds a benchmark bundle's weights.bin from the kit's recipe.

    kit_weights.py RECIPE.json OUT/weights.bin

The GPU kit (scripts/gpu-kit.sh) leaves the benchmark bundles' weights out
(tens of MB, beyond the kit's 48 MiB) and ships their recipe instead: each
tensor's offset and size in weights.bin and the mean and standard deviation
of the values PyTorch initialized it with. This writes a file of the same
layout with each tensor drawn from a seeded uniform distribution of that
mean and deviation (a constant when the deviation is 0). The step time does
not depend on the values; the losses are not compared with PyTorch's.
numpy when importable, else pure Python (about 10 s for 50 MB).
"""

import json
import random
import struct
import sys


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__)
    with open(argv[0]) as f:
        recipe = json.load(f)
    try:
        import numpy as np
    except ImportError:
        np = None
    out = bytearray(recipe["bytes"])
    for i, w in enumerate(recipe["weights"]):
        count = w["bytes"] // 4
        # Uniform on [mean - sqrt(3) std, mean + sqrt(3) std].
        half = 3.0 ** 0.5 * w["std"]
        low = w["mean"] - half
        if np is not None:
            rng = np.random.default_rng(1000 + i)
            values = low + 2 * half * rng.random(count)
            raw = values.astype("<f4").tobytes()
        else:
            rng = random.Random(1000 + i)
            r, width = rng.random, 2 * half
            raw = struct.pack(f"<{count}f",
                              *[low + width * r() for _ in range(count)])
        out[w["offset"]:w["offset"] + len(raw)] = raw
    with open(argv[1], "wb") as f:
        f.write(out)
    print(f"kit_weights.py: {argv[1]}: {len(recipe['weights'])} tensors, "
          f"{len(out)} bytes ({'numpy' if np is not None else 'pure Python'})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
