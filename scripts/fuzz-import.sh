#!/usr/bin/env bash
# Fuzzes the ONNX importer with libFuzzer (ASan + UBSan) for SECONDS seconds.
#   scripts/fuzz-import.sh [SECONDS=600] [extra libFuzzer flags...]
# Builds a sanitized tree in build-fuzz/, seeds the corpus with the models
# models/make_onnx_tests.py writes and ONNX's own node-test models, and keeps
# the grown corpus in build-fuzz/corpus (crash inputs land in build-fuzz/).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-600}
shift || true
build=${PIPEDREAM_FUZZ_BUILD_DIR:-$root/build-fuzz}
if [ ! -f "$build/build.ninja" ]; then
  cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DPIPEDREAM_ENABLE_FUZZER=ON
fi
cmake --build "$build" --target pipedream-import-onnx-fuzzer
seeds="$build/seeds"
corpus="$build/corpus"
mkdir -p "$seeds" "$corpus"
if [ -z "$(ls -A "$seeds")" ]; then
  /usr/bin/python3 "$root/models/make_onnx_tests.py" "$seeds/gen" >/dev/null
  find "$seeds/gen" -name '*.onnx' -size -64k -exec cp {} "$seeds/" \;
  rm -rf "$seeds/gen"
  data=/usr/share/libonnx-testdata/data/node
  if [ -d "$data" ]; then
    for d in "$data"/*/; do
      n=$(basename "$d")
      [ -f "$d/model.onnx" ] && cp "$d/model.onnx" "$seeds/node-$n.onnx"
    done
  fi
fi
echo "fuzz-import: $(ls "$seeds" | wc -l) seeds, ${seconds}s"
cd "$build"
# ASan's leak check runs at exit; -timeout flags hangs, -rss_limit_mb blow-ups.
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  "$build/bin/pipedream-import-onnx-fuzzer" "$corpus" "$seeds" \
  -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -max_len=262144 \
  -print_final_stats=1 "$@"
