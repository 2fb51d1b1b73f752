#!/usr/bin/env bash
# Installs dependencies, builds, and runs every test (lit regression suite).
#   scripts/test.sh            everything
#   scripts/test.sh --no-deps  skip the apt step (dependencies already there)
#   scripts/test.sh --sanitize [--no-deps]
#                              the same suites in an ASan + UBSan build
#                              (scripts/sanitize.sh, build-sanitize/)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${PIPEDREAM_BUILD_DIR:-$root/build}
deps=1
for arg in "$@"; do
  case "$arg" in
    --no-deps) deps=0 ;;
    --sanitize) ;;
    *) echo "test.sh: unknown option '$arg'" >&2; exit 2 ;;
  esac
done
for arg in "$@"; do
  if [ "$arg" = --sanitize ]; then
    if [ "$deps" = 1 ]; then
      exec "$root/scripts/sanitize.sh" --conformance
    fi
    exec "$root/scripts/sanitize.sh" --no-deps --conformance
  fi
done
if [ "$deps" = 1 ]; then
  "$root/scripts/install-deps.sh"
fi
"$root/scripts/build.sh"
# -sv: one line per failure with its output, a summary at the end.
/usr/lib/llvm-22/bin/lit -sv "$build/test"
# ONNX's own backend tests through pipedream-compile + pipedream-run.
/usr/bin/python3 "$root/test/Conformance/onnx_conformance.py" --build "$build" -j "$(nproc)"
# Unit tests (GoogleTest) registered in CTest, e.g. the runtime's.
ctest --test-dir "$build" --output-on-failure
