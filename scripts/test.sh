#!/usr/bin/env bash
# Installs dependencies, builds, and runs every test (lit regression suite).
#   scripts/test.sh            everything
#   scripts/test.sh --no-deps  skip the apt step (dependencies already there)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${PIPEDREAM_BUILD_DIR:-$root/build}
if [ "${1:-}" != "--no-deps" ]; then
  "$root/scripts/install-deps.sh"
fi
"$root/scripts/build.sh"
# -sv: one line per failure with its output, a summary at the end.
/usr/lib/llvm-22/bin/lit -sv "$build/test"
# ONNX's own backend tests through pipedream-compile + pipedream-run.
/usr/bin/python3 "$root/test/Conformance/onnx_conformance.py" --build "$build" -j "$(nproc)"
# Unit tests (GoogleTest) registered in CTest, e.g. the runtime's.
ctest --test-dir "$build" --output-on-failure
