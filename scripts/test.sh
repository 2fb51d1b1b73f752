#!/usr/bin/env bash
# Installs dependencies, builds, and runs every test (lit regression suite).
#   scripts/test.sh            everything
#   scripts/test.sh --no-deps  skip the apt step (dependencies already there)
#   scripts/test.sh --sanitize [--no-deps]
#                              the same suites in an ASan + UBSan build
#                              (scripts/sanitize.sh, build-sanitize/)
#   scripts/test.sh --sanitize --runtime [--no-deps]
#                              only the runtime instrumented: its lit tests
#                              and unit tests (scripts/sanitize.sh --runtime)
#   scripts/test.sh --sanitize --compiler [--no-deps]
#                              only the compiler tools instrumented: the
#                              compiler's lit tests (scripts/sanitize.sh
#                              --compiler)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${PIPEDREAM_BUILD_DIR:-$root/build}
deps=1
for arg in "$@"; do
  case "$arg" in
    --no-deps) deps=0 ;;
    --sanitize|--runtime|--compiler) ;;
    *) echo "test.sh: unknown option '$arg'" >&2; exit 2 ;;
  esac
done
sanitize=0 runtime=0 compiler=0
for arg in "$@"; do
  [ "$arg" = --sanitize ] && sanitize=1
  [ "$arg" = --runtime ] && runtime=1
  [ "$arg" = --compiler ] && compiler=1
done
if { [ "$runtime" = 1 ] || [ "$compiler" = 1 ]; } && [ "$sanitize" = 0 ]; then
  echo "test.sh: --runtime and --compiler go with --sanitize" >&2
  exit 2
fi
if [ "$sanitize" = 1 ]; then
  flags=()
  [ "$deps" = 1 ] || flags+=(--no-deps)
  if [ "$runtime" = 1 ]; then
    [ "$deps" = 1 ] && "$root/scripts/build.sh"
    [ -x "$build/bin/pipedream-compile" ] || "$root/scripts/build.sh"
    exec env PIPEDREAM_BUILD_DIR="$build" "$root/scripts/sanitize.sh" \
      "${flags[@]}" --runtime
  fi
  if [ "$compiler" = 1 ]; then
    exec "$root/scripts/sanitize.sh" "${flags[@]}" --compiler
  fi
  exec "$root/scripts/sanitize.sh" "${flags[@]}" --conformance
fi
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
