#!/usr/bin/python3
"""Training runs that must agree bit for bit (cpu-fuse-row-loops changes
the order of loop nests, not their arithmetic).

    same_training.py data MODEL.npz INPUT... -o DATA.npz
        the training data of a corpus model (models/corpus: its
        PyTorch references hold data/<input> and data/labels)
    same_training.py compare LOSS1.csv TRAINED1.onnx LOSS2.csv TRAINED2.onnx
        prints "SAME n losses, m initializers" when every loss and every
        initializer is equal, else the first difference and exits 1

Uses Debian's /usr/bin/python3 with python3-numpy and python3-onnx.
"""

import csv
import sys

import numpy as np


def losses(path):
    with open(path) as f:
        return [r["loss"] for r in csv.DictReader(f)]


def initializers(path):
    import onnx
    from onnx import numpy_helper
    model = onnx.load(path)
    return {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}


def main():
    if sys.argv[1] == "data":
        ref = np.load(sys.argv[2])
        out = sys.argv[sys.argv.index("-o") + 1]
        names = sys.argv[3:sys.argv.index("-o")]
        arrays = {n: ref[f"data/{n}"] for n in names}
        # The corpus stores images as float16 (exactly); models take f32.
        arrays = {n: a.astype(np.float32) if a.dtype == np.float16 else a
                  for n, a in arrays.items()}
        arrays["labels"] = ref["data/labels"]
        np.savez(out, **arrays)
        return 0
    l1, w1, l2, w2 = sys.argv[2:6]
    a, b = losses(l1), losses(l2)
    if a != b:
        print(f"DIFFERENT losses {a} and {b}")
        return 1
    x, y = initializers(w1), initializers(w2)
    if sorted(x) != sorted(y):
        print("DIFFERENT initializer names")
        return 1
    for name in sorted(x):
        if not np.array_equal(x[name], y[name]):
            print(f"DIFFERENT initializer {name}")
            return 1
    print(f"SAME {len(a)} losses, {len(x)} initializers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
