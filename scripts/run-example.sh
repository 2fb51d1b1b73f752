#!/usr/bin/env bash
# The README's main job on the bundled example: installs dependencies,
# builds, imports examples/mlp.onnx (a small PyTorch-exported MLP) into the
# nn dialect and prints a summary, compiles its forward to a native bundle and
# runs it on random inputs. It grows with the compiler: later, pipelined
# training with a report.
#   scripts/run-example.sh [--no-deps] [MODEL.onnx]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${PIPEDREAM_BUILD_DIR:-$root/build}
if [ "${1:-}" = "--no-deps" ]; then
  shift
else
  "$root/scripts/install-deps.sh" --no-torch
fi
model=${1:-$root/examples/mlp.onnx}
"$root/scripts/build.sh" --target pipedream-translate pipedream-opt pipedream-compile \
  pipedream-run >/dev/null
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "== import: pipedream-translate --import-onnx $(basename "$model") --summary"
"$build/bin/pipedream-translate" --import-onnx "$model" --summary
"$build/bin/pipedream-translate" --import-onnx "$model" -o "$out/model.mlir"
# Round trip through pipedream-opt: the imported IR parses and verifies.
"$build/bin/pipedream-opt" "$out/model.mlir" -o /dev/null

echo
echo "== compile: pipedream-compile --inference -o bundle"
"$build/bin/pipedream-compile" "$model" --inference -o "$out/bundle"
ls -l "$out/bundle" | tail -n +2

echo
echo "== run: pipedream-run bundle --inputs in.npz --outputs out.npz (random inputs)"
# Random inputs shaped as the bundle's manifest says (fixed seed).
/usr/bin/python3 - "$out/bundle/bundle.json" "$out/in.npz" <<'PY'
import json, sys
import numpy as np
manifest = json.load(open(sys.argv[1]))
fn = next(f for f in manifest["functions"] if f["name"] == "main")
rng = np.random.default_rng(0)
arrays = {}
for b in fn["buffers"]:
    if b["role"] != "input":
        continue
    if b["dtype"].startswith("f"):
        arrays[b["name"]] = rng.standard_normal(b["shape"]).astype(np.dtype("float" + b["dtype"][1:]))
    else:
        arrays[b["name"]] = np.zeros(b["shape"], dtype=np.int64)
    print(f"  input  {b['name']}: {b['dtype']}{b['shape']}")
np.savez(sys.argv[2], **arrays)
PY
"$build/bin/pipedream-run" "$out/bundle" --inputs "$out/in.npz" --outputs "$out/out.npz"
/usr/bin/python3 - "$out/out.npz" <<'PY'
import sys
import numpy as np
with np.load(sys.argv[1]) as outs:
    for name in outs.files:
        a = outs[name]
        print(f"  output {name}: {a.dtype}{list(a.shape)} mean {a.mean():.6f} std {a.std():.6f}")
        print("   ", np.array2string(a.reshape(-1)[:6], precision=4), "...")
PY
