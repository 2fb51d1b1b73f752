#!/usr/bin/env bash
# Configures (once) and builds pipedream into build/ (or $PIPEDREAM_BUILD_DIR)
# with the toolchain of TOOLCHAIN.md: clang-22, lld, ccache, Ninja, Release.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${PIPEDREAM_BUILD_DIR:-$root/build}
if [ ! -f "$build/build.ninja" ]; then
  cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release
fi
cmake --build "$build" "$@"
