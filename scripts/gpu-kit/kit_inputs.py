#!/usr/bin/python3
"""Inputs for the GPU kit's bundles (scripts/gpu-kit.sh; runs at kit build
time with Debian's /usr/bin/python3 and numpy).

    kit_inputs.py data OUT.npz [--seed S] NAME:DTYPE:SHAPE[:HIGH] ...
    kit_inputs.py recipe BUNDLE_DIR OUT.json

- data: one array per spec, SHAPE as `32,16`; f32 arrays are standard
  normal, i64 arrays integers in [0, HIGH) (token ids, class labels), all
  from numpy's default_rng(S) (default 7), so the same command writes the
  same file.
- recipe: the weights of BUNDLE_DIR (bundle.json + weights.bin) as their
  offsets, shapes and each tensor's mean and standard deviation, so that
  kit_weights.py can rebuild a weights.bin with the same layout and
  statistics on the GPU machine (the benchmark bundles' weights are too
  big for the kit's 48 MiB).
"""

import json
import os
import sys

import numpy as np


def cmd_data(argv):
    seed = 7
    if "--seed" in argv:
        i = argv.index("--seed")
        seed, argv = int(argv[i + 1]), argv[:i] + argv[i + 2:]
    out, specs = argv[0], argv[1:]
    rng = np.random.default_rng(seed)
    arrays = {}
    for spec in specs:
        parts = spec.split(":")
        name, dtype = parts[0], parts[1]
        shape = tuple(int(d) for d in parts[2].split(","))
        if dtype == "f32":
            arrays[name] = rng.standard_normal(shape).astype(np.float32)
        elif dtype == "i64":
            arrays[name] = rng.integers(0, int(parts[3]), size=shape).astype(
                np.int64)
        else:
            sys.exit(f"kit_inputs.py: unsupported dtype in {spec}")
    np.savez(out, **arrays)


def cmd_recipe(bundle, out):
    with open(os.path.join(bundle, "bundle.json")) as f:
        manifest = json.load(f)
    path = os.path.join(bundle, manifest.get("weights_file", "weights.bin"))
    data = np.fromfile(path, dtype=np.uint8)
    weights = []
    for w in manifest["weights"]:
        if w["dtype"] != "f32":
            sys.exit(f"kit_inputs.py: weight {w['name']} is {w['dtype']}, "
                     "only f32 is rebuilt")
        values = data[w["offset"]:w["offset"] + w["bytes"]].view(np.float32)
        weights.append({"name": w["name"], "offset": w["offset"],
                        "bytes": w["bytes"], "mean": float(values.mean()),
                        "std": float(values.std())})
    with open(out, "w") as f:
        json.dump({"bytes": int(data.size), "weights": weights}, f, indent=1)


def main(argv):
    if len(argv) >= 3 and argv[0] == "data":
        return cmd_data(argv[1:])
    if len(argv) == 3 and argv[0] == "recipe":
        return cmd_recipe(argv[1], argv[2])
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
