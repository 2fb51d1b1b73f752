#!/usr/bin/env bash
# The README's main job on the bundled example: installs dependencies,
# builds, imports examples/mlp.onnx (a small PyTorch-exported MLP) into the
# nn dialect, verifies it and prints a summary. It grows with the compiler:
# later compile + pipelined training with a report.
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
"$root/scripts/build.sh" pipedream-translate pipedream-opt >/dev/null
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$build/bin/pipedream-translate" --import-onnx "$model" --summary
"$build/bin/pipedream-translate" --import-onnx "$model" -o "$out/model.mlir"
# Round trip through pipedream-opt: the imported IR parses and verifies.
"$build/bin/pipedream-opt" "$out/model.mlir" -o /dev/null
echo
echo "nn IR (weights elided):"
"$build/bin/pipedream-opt" "$out/model.mlir" --mlir-elide-elementsattrs-if-larger=8 \
  --mlir-elide-resource-strings-if-larger=8
