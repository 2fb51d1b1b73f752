#!/usr/bin/env bash
# Runs pipedream's libFuzzer targets (fuzz/, docs/Fuzzing.md) in the
# sanitized tree of scripts/sanitize.sh (build-sanitize/, or
# $PIPEDREAM_SANITIZE_BUILD_DIR), which it configures and builds as needed.
#   scripts/fuzz.sh [TARGET...] [--runs N] [--max-time S] [--jobs J]
#                   [--no-build] [-- LIBFUZZER_FLAGS...]
#   scripts/fuzz.sh --list
# No TARGET: every target, one after the other. Defaults: --runs 1000000,
# --max-time 600 (seconds per target; whichever comes first). Each target
# starts from its seeds (fuzz/corpus/TARGET) and saved crash inputs
# (fuzz/regressions/TARGET), read-only, and grows its own corpus in
# build-sanitize/fuzz/corpus/TARGET. A crash, leak, timeout (10 s) or
# out-of-memory input lands in build-sanitize/fuzz/artifacts/TARGET/; copy
# it to fuzz/regressions/TARGET/ once the parser is fixed (CTest replays
# that folder in every build). Logs and a summary (execs, exec/s, coverage,
# result per target) are in build-sanitize/fuzz/. Exits 1 if any target
# found something.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${PIPEDREAM_SANITIZE_BUILD_DIR:-$root/build-sanitize}
all=(import-onnx npy npz bundle-json checkpoint schedule-csv profile-json
  save-onnx)
runs=1000000 max_time=600 jobs=${JOBS:-$(nproc)} targets=() extra=() build=1
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift ;;
    --max-time) max_time=$2; shift ;;
    --jobs) jobs=$2; shift ;;
    --no-build) build=0 ;;
    --list) printf '%s\n' "${all[@]}"; exit 0 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option '$1'" >&2; exit 2 ;;
    *)
      if [[ ! " ${all[*]} " =~ " $1 " ]]; then
        echo "fuzz.sh: unknown target '$1' (targets: ${all[*]})" >&2
        exit 2
      fi
      targets+=("$1") ;;
  esac
  shift
done
[ "${#targets[@]}" -gt 0 ] || targets=("${all[@]}")

if [ "$build" = 1 ]; then
  PIPEDREAM_SANITIZE_BUILD_DIR=$dir "$root/scripts/sanitize.sh" --no-deps \
    --configure-only
  build_targets=()
  for t in "${targets[@]}"; do build_targets+=("pipedream-$t-fuzzer"); done
  cmake --build "$dir" -j "$jobs" --target "${build_targets[@]}"
fi
for t in "${targets[@]}"; do
  [ -x "$dir/bin/pipedream-$t-fuzzer" ] || {
    echo "fuzz.sh: $dir/bin/pipedream-$t-fuzzer was not built" >&2; exit 1; }
done

# shellcheck source=scripts/sanitizer-env.sh
source "$root/scripts/sanitizer-env.sh"
# The fast unwinder for the fuzzers: sanitizer-env.sh turns on the slow one
# (for Open MPI's leak stacks, which no fuzz target reaches), and unwinding
# every allocation slowly cost the allocation-heavy targets (bundle-json,
# checkpoint, import-onnx: JSON and protobuf parsers) most of their speed.
# detect_stack_use_after_return=0: the fake stacks' garbage collection
# took a fifth of bundle-json's time (nlohmann's recursive destructors);
# parsers return no stack addresses, and the sanitized test suite
# (scripts/sanitize.sh) keeps the check on. The later setting wins.
export ASAN_OPTIONS="$ASAN_OPTIONS:fast_unwind_on_malloc=1:detect_stack_use_after_return=0"
out=$dir/fuzz
mkdir -p "$out"
summary=$out/summary.txt
status=0
for t in "${targets[@]}"; do
  corpus=$out/corpus/$t artifacts=$out/artifacts/$t/ log=$out/$t.log
  mkdir -p "$corpus" "$artifacts"
  seeds=("$root/fuzz/corpus/$t")
  [ -d "$root/fuzz/regressions/$t" ] && seeds+=("$root/fuzz/regressions/$t")
  dict=()
  [ -f "$root/fuzz/dict/$t.dict" ] && dict=(-dict="$root/fuzz/dict/$t.dict")
  echo "fuzz: $t: up to $runs runs or ${max_time}s (log: $log)"
  rc=0
  # -timeout: an input running 10 s is a hang; -rss_limit_mb and
  # -malloc_limit_mb: a parser must not allocate what the input merely
  # announces; -max_len: the seeds are small, 64 KiB leaves room to grow.
  "$dir/bin/pipedream-$t-fuzzer" "$corpus" "${seeds[@]}" "${dict[@]}" \
    -runs="$runs" -max_total_time="$max_time" -timeout=10 \
    -rss_limit_mb=2048 -malloc_limit_mb=1024 -max_len=65536 \
    -artifact_prefix="$artifacts" -print_final_stats=1 "${extra[@]}" \
    > "$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -1 || true)
  corp=$(grep -o 'corp: [0-9]*/[0-9]*[a-zA-Z]*' "$log" | tail -1 || true)
  found=$(find "$artifacts" -type f | wc -l)
  result=ok
  if [ "$rc" != 0 ] || [ "$found" != 0 ]; then
    result="FOUND ($found artifact(s) in $artifacts, exit $rc)"
    status=1
  fi
  line="$t: ${execs:-?} execs, ${speed:-?} exec/s, ${cov:-cov: ?}, ${corp:-corp: ?}: $result"
  echo "fuzz: $line"
  echo "$line" >> "$summary"
done
echo "fuzz: summary in $summary"
exit "$status"
