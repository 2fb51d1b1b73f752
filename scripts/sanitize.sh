#!/usr/bin/env bash
# Builds pipedream with AddressSanitizer + UndefinedBehaviorSanitizer into
# build-sanitize/ (or $PIPEDREAM_SANITIZE_BUILD_DIR) and runs the whole lit
# and CTest suites with it (docs/Fuzzing.md). Not part of CI (an
# instrumented build costs about twice a normal one).
#   scripts/sanitize.sh                  deps, build, lit + ctest
#   scripts/sanitize.sh --no-deps        skip scripts/install-deps.sh
#   scripts/sanitize.sh --build-only     configure and build, no tests
#   scripts/sanitize.sh --configure-only configure build-sanitize/ only
#   scripts/sanitize.sh --conformance    also the ONNX conformance runner
#   scripts/sanitize.sh -- LIT_ARGS...   lit on a subset (e.g. test/Import)
#   scripts/sanitize.sh --runtime        only the runtime instrumented: builds
#                                        the sanitized runtime, pipedream-run
#                                        and the runtime's unit tests, takes
#                                        the other tools (pipedream-compile...)
#                                        from the normal build
#                                        ($PIPEDREAM_BUILD_DIR, else build/),
#                                        runs the runtime-facing lit tests
#                                        (RUNTIME_LIT below) and those unit
#                                        tests (minutes, not the hours of an
#                                        instrumented compiler on 2 cores)
#   scripts/sanitize.sh --compiler       only the compiler tools instrumented
#                                        and tested: builds pipedream-opt,
#                                        -translate, -compile, -profile and
#                                        pipedream-run (no unit tests, no
#                                        fuzzers), runs the compiler's lit
#                                        tests (COMPILER_LIT below)
#   PIPEDREAM_SANITIZE_OPT=-O0           optimization level of a new
#                                        build-sanitize/ (default -O1; -O0
#                                        compiles about a third faster, runs
#                                        slower); read when it is configured
#   JOBS=N                               build/test parallelism (nproc)
# Only pipedream's code is instrumented; Debian's LLVM/MLIR libraries are
# not. Every sanitizer report of every process (also those run under `not`
# or with stderr discarded) goes to build-sanitize/sanitizer-logs/, and the
# script fails when that folder is not empty at the end.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${PIPEDREAM_SANITIZE_BUILD_DIR:-$root/build-sanitize}
jobs=${JOBS:-$(nproc)}
deps=1 tests=1 build=1 conformance=0 runtime=0 compiler=0 lit_paths=()
while [ $# -gt 0 ]; do
  case "$1" in
    --no-deps) deps=0 ;;
    --build-only) tests=0 ;;
    --configure-only) tests=0 build=0 ;;
    --conformance) conformance=1 ;;
    --runtime) runtime=1 ;;
    --compiler) compiler=1 ;;
    --) shift; lit_paths=("$@"); break ;;
    -h|--help) sed -n '2,38p' "$0"; exit 0 ;;
    *) echo "sanitize.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift
done
if [ "$deps" = 1 ]; then
  "$root/scripts/install-deps.sh"
fi
if [ ! -f "$dir/build.ninja" ]; then
  # -O1 (ASan's recommendation: fast enough, much quicker to compile than
  # -O3), line tables for the reports' stack traces, NDEBUG as in Release.
  # PIPEDREAM_ENABLE_FUZZER implies PIPEDREAM_SANITIZE and adds libFuzzer's
  # coverage instrumentation, so scripts/fuzz.sh reuses this build. No
  # CUDA: the support library links with --no-undefined (the ASan runtime
  # lives in the executables) and there is no device to test it on.
  flags="${PIPEDREAM_SANITIZE_OPT:--O1} -gline-tables-only -DNDEBUG"
  cmake -G Ninja -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="$flags" \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$flags" \
    -DPIPEDREAM_ENABLE_FUZZER=ON -DPIPEDREAM_ENABLE_CUDA=OFF
fi
[ "$build" = 1 ] || exit 0
# The lit tests that exercise the runtime (pipedream-run on hand-written and
# compiled bundles, run-time checks, checkpoints, pipelines over threads and
# MPI, training): relative to test/.
RUNTIME_LIT=(Tools/pipedream-run Training)
# The compiler's lit tests: import, dialects, passes, lowering, gradients,
# the driver and the model tests (most only compile; some run the bundle).
COMPILER_LIT=(Import Dialect Conversion Gradients Target Tools/pipedream-compile
  Tools/pipedream-profile Models Examples)
if [ "$compiler" = 1 ]; then
  # pipedream-opt first: most of the compiler's tests need only it.
  for target in pipedream-opt pipedream-translate pipedream-compile \
      pipedream-profile pipedream-run; do
    cmake --build "$dir" -j "$jobs" --target "$target"
  done
elif [ "$runtime" = 1 ]; then
  normal=${PIPEDREAM_BUILD_DIR:-$root/build}
  cmake --build "$dir" -j "$jobs" --target pipedream-run \
    pipedream-runtime-tests pipedream-runtime-capi-test \
    pipedream-test-program pipedream-gpu-test-program pipedream-gpu-fake \
    pipedream-gpu-fake-tests
  # The compiler from the normal build; a full sanitized build replaces
  # these links with instrumented binaries.
  for tool in pipedream-compile pipedream-opt pipedream-translate \
      pipedream-profile; do
    if [ ! -e "$dir/bin/$tool" ] || [ -L "$dir/bin/$tool" ]; then
      [ -x "$normal/bin/$tool" ] || {
        echo "sanitize: --runtime needs $normal/bin/$tool (scripts/build.sh)" >&2
        exit 1; }
      ln -sf "$normal/bin/$tool" "$dir/bin/$tool"
    fi
  done
else
  cmake --build "$dir" -j "$jobs"
fi
[ "$tests" = 1 ] || exit 0

# shellcheck source=scripts/sanitizer-env.sh
source "$root/scripts/sanitizer-env.sh" "$dir/sanitizer-logs"
rm -rf "$dir/sanitizer-logs"
mkdir -p "$dir/sanitizer-logs"
status=0
summary=()
# step NAME COMMAND...: runs one suite, records its result and time.
step() {
  local name=$1 start rc=0
  shift
  start=$(date +%s)
  "$@" || rc=$?
  local took=$(( $(date +%s) - start ))
  if [ "$rc" = 0 ]; then
    summary+=("$name: passed (${took}s)")
  else
    summary+=("$name: FAILED, exit $rc (${took}s)")
    status=1
  fi
}
lit=(/usr/lib/llvm-22/bin/lit -sv -j "$jobs")
if [ "${#lit_paths[@]}" -gt 0 ]; then
  step lit "${lit[@]}" "${lit_paths[@]}"
elif [ "$compiler" = 1 ]; then
  step lit "${lit[@]}" "${COMPILER_LIT[@]/#/$dir/test/}"
elif [ "$runtime" = 1 ]; then
  step lit "${lit[@]}" "${RUNTIME_LIT[@]/#/$dir/test/}"
  for t in pipedream-runtime-tests pipedream-gpu-fake-tests; do
    step "$t" "$dir/runtime/test/$t"
  done
  step pipedream-runtime-capi-test "$dir/runtime/test/pipedream-runtime-capi-test" \
    "$dir/runtime/test/pipedream-test-program.so"
else
  step lit "${lit[@]}" "$dir/test"
  if [ "$conformance" = 1 ]; then
    step conformance /usr/bin/python3 \
      "$root/test/Conformance/onnx_conformance.py" --build "$dir" -j "$jobs"
  fi
  # Not the `standalone` test: it configures and builds runtime/ on its own
  # (a build check, not instrumented; the normal build runs it).
  step ctest ctest --test-dir "$dir" -j "$jobs" --output-on-failure \
    -LE standalone
fi
reports=$(find "$dir/sanitizer-logs" -type f | wc -l)
if [ "$reports" != 0 ]; then
  echo "sanitize: $reports sanitizer report(s) in $dir/sanitizer-logs:" >&2
  for f in "$dir/sanitizer-logs"/*; do
    echo "== $f" >&2
    head -n 30 "$f" >&2
  done
  summary+=("sanitizer reports: $reports (in $dir/sanitizer-logs)")
  status=1
else
  summary+=("sanitizer reports: none")
fi
echo "sanitize: summary"
for line in "${summary[@]}"; do
  echo "sanitize:   $line"
done
[ "$status" = 0 ] && echo "sanitize: clean" || echo "sanitize: FAILED" >&2
exit "$status"
