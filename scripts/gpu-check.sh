#!/usr/bin/env bash
# One prepared check of pipedream's GPU backend on a CUDA machine (an H200:
# 16 cores, driver present, maybe no internet):
#
#   scripts/gpu-check.sh RESULTS_DIR
#
# (It builds there, so steps 2-4 need MLIR, ONNX/protobuf, libzip,
# nlohmann-json and GoogleTest on that machine. Where they are missing, build
# the self-contained kit here instead: scripts/gpu-kit.sh KIT, then
# KIT/run.sh RESULTS_DIR there; docs/GPU.md "The GPU kit".)
#
# (On the project's device machine, write the results under $OUT so they
# come back: `scripts/gpu-check.sh "$OUT/gpu-check"`; about 2 min for the
# runtime part and a few more for the whole project with 16 cores;
# GPU_CHECK_FULL=0 keeps it to the runtime.)
#
# 1. environment: GPU, driver, toolkit, compilers, Python/torch; prints
#    every missing dependency;
# 2. the runtime alone (runtime/, no MLIR needed): configure with
#    -DPIPEDREAM_ENABLE_CUDA=ON for sm_90, build, run all its tests and the
#    `gpu`-labelled device tests (GEMMs vs a CPU reference, mgpu* kernel
#    launches, NCCL send/recv to self, cuda bundles trained on one GPU and
#    as a 2-stage pipeline vs the CPU bundles);
# 3. the whole project when MLIR 22 and the ONNX/protobuf dev packages are
#    there: build, lit tests needing the `cuda-device` feature, ctest -L gpu;
# 4. bench/gpu_block.py: a GPT-like block's training step (forward +
#    backward + SGD) compiled for cuda vs PyTorch eager on the same GPU,
#    TFLOP/s and fraction of the H200 dense peak.
#
# Every step runs under `timeout` and writes RESULTS_DIR/<step>.log; the
# summary (one line per step: PASS/FAIL/SKIP/TIMEOUT and seconds) is
# RESULTS_DIR/summary.txt. A failed step never stops the later ones; the
# exit status is non-zero when any step failed. Without a GPU (checked on a
# machine with none) the device steps fail cleanly at "no CUDA device".
#
# Environment: JOBS (default nproc), GPU_ARCH (default 90),
# GPU_CHECK_BUILD (build-directory prefix, default ROOT/build-gpu-check),
# GPU_CHECK_FULL_BUILD (the whole project's build directory, default
# PREFIX-full; an existing one is built incrementally),
# GPU_CHECK_FULL=0 (skip step 3 and the benchmark), GPU_CHECK_PYTHON (the
# interpreter with torch for the benchmark), BENCH_ARGS (extra
# bench/gpu_block.py options, e.g. "--dim 512 --seq 256").
set -u -o pipefail

if [ $# -ne 1 ] || [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
  sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'
  [ $# -eq 1 ] && exit 0 || exit 2
fi

root=$(cd "$(dirname "$0")/.." && pwd)
results=$(mkdir -p "$1" && cd "$1" && pwd) || {
  echo "error: cannot create $1" >&2
  exit 2
}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 4)}
arch=${GPU_ARCH:-90}
prefix=${GPU_CHECK_BUILD:-$root/build-gpu-check}
rtbuild=$prefix-runtime
fullbuild=${GPU_CHECK_FULL_BUILD:-$prefix-full}
summary=$results/summary.txt
: >"$summary"
failed=0
start_all=$(date +%s)

say() { echo "$*" | tee -a "$summary"; }

# step NAME SECONDS COMMAND...: runs COMMAND with a time limit (TERM, then
# KILL 10 s later), output to NAME.log; records the outcome.
step() {
  local name=$1 limit=$2
  shift 2
  local log=$results/$name.log t0 rc
  t0=$(date +%s)
  echo "== $name (limit ${limit}s): $*" >"$log"
  timeout -k 10 "$limit" "$@" >>"$log" 2>&1 </dev/null
  rc=$?
  local secs=$(($(date +%s) - t0))
  if [ $rc -eq 0 ]; then
    say "PASS    $name (${secs}s)"
  elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    say "TIMEOUT $name (${secs}s, limit ${limit}s; see $name.log)"
    failed=1
  else
    say "FAIL    $name (rc $rc, ${secs}s; see $name.log): $(grep -v '^\s*$' "$log" | tail -1 | cut -c1-200)"
    failed=1
  fi
  return $rc
}

skip() { say "SKIP    $1: $2"; }

have() { command -v "$1" >/dev/null 2>&1; }

#===-------------------------------------------------------------------===#
# 1. Environment and dependencies
#===-------------------------------------------------------------------===#

say "pipedream gpu-check $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname) ($(uname -m), $jobs jobs, sm_$arch)"
say "commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?') $(git -C "$root" status --porcelain 2>/dev/null | grep -q . && echo '(with local changes)')"
{
  echo "== nvidia-smi"
  timeout 30 nvidia-smi 2>&1 || echo "(nvidia-smi failed or is missing)"
  echo "== nvcc"
  timeout 30 "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" --version 2>&1 || echo "(no nvcc)"
  echo "== compilers and tools"
  for t in cmake ninja clang-22 clang++-22 c++ gcc ccache mpirun python3; do
    printf '%-10s %s\n' "$t" "$(command -v "$t" || echo MISSING)"
  done
  cmake --version 2>&1 | head -1
} >"$results/environment.log" 2>&1
gpu=$(timeout 30 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)
say "gpu: ${gpu:-none found by nvidia-smi}"

cuda_home=${CUDA_HOME:-/usr/local/cuda}
missing=()
have cmake || missing+=("cmake")
have ninja || missing+=("ninja (falls back to make)")
[ -x "$cuda_home/bin/nvcc" ] || missing+=("CUDA toolkit at $cuda_home (set CUDA_HOME)")
ls "$cuda_home"/lib*/libcublas.so* >/dev/null 2>&1 || missing+=("cuBLAS in $cuda_home")
nccl=$(ls "$cuda_home"/lib*/libnccl.so* /usr/lib/x86_64-linux-gnu/libnccl.so* 2>/dev/null | head -1)
[ -n "$nccl" ] || missing+=("NCCL (libnccl-dev; the NCCL tests are skipped)")
[ -f /usr/include/gtest/gtest.h ] || missing+=("GoogleTest (libgtest-dev; no runtime tests)")
[ -d /usr/share/cmake/nlohmann_json ] || [ -d /usr/lib/cmake/nlohmann_json ] || missing+=("nlohmann-json3-dev")
[ -f /usr/include/zip.h ] || missing+=("libzip-dev")
mlir_dir=${MLIR_DIR:-/usr/lib/llvm-22/lib/cmake/mlir}
full=1
if [ ! -f "$mlir_dir/MLIRConfig.cmake" ]; then
  missing+=("MLIR 22 ($mlir_dir; libmlir-22-dev mlir-22-tools llvm-22-dev: no compiler, lit or benchmark)")
  full=0
fi
if ! ls /usr/include/onnx/onnx_pb.h >/dev/null 2>&1 || ! have protoc; then
  missing+=("ONNX/protobuf dev packages (libonnx-dev libprotobuf-dev protobuf-compiler: no compiler)")
  full=0
fi
[ "${GPU_CHECK_FULL:-1}" = 0 ] && full=0
# The benchmark's Python: torch exports the model and is the reference.
py=""
for cand in ${GPU_CHECK_PYTHON:-} python3 /usr/bin/python3; do
  if have "$cand" && timeout 60 "$cand" -c 'import torch, onnx, numpy' >/dev/null 2>&1; then
    py=$cand
    break
  fi
done
[ -n "$py" ] || missing+=("a Python with torch, onnx and numpy (the benchmark is skipped)")
if [ ${#missing[@]} -eq 0 ]; then
  say "dependencies: all found"
else
  for m in "${missing[@]}"; do say "missing: $m"; done
fi
if [ -n "$py" ]; then
  say "python: $py ($(timeout 60 "$py" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())' 2>&1 | tail -1))"
fi

generator=()
have ninja && generator=(-G Ninja)
compilers=()
if have clang-22 && have clang++-22; then
  compilers=(-DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22)
fi
launcher=()
have ccache && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)

#===-------------------------------------------------------------------===#
# 2. The runtime alone, with CUDA
#===-------------------------------------------------------------------===#

rt_ok=0
if step runtime-configure 180 cmake "${generator[@]}" -S "$root/runtime" -B "$rtbuild" \
    -DCMAKE_BUILD_TYPE=Release "${compilers[@]}" "${launcher[@]}" \
    -DPIPEDREAM_ENABLE_CUDA=ON -DPIPEDREAM_GPU_TEST_ARCH="$arch" \
    -DCMAKE_CUDA_ARCHITECTURES="$arch"; then
  step runtime-build 600 cmake --build "$rtbuild" -j "$jobs" && rt_ok=1
fi
if [ $rt_ok = 1 ]; then
  step device-probe 60 "$rtbuild/test/pipedream-gpu-device-tests" --gtest_list_tests
  # Everything that needs no GPU, then the device tests (verbose log).
  step runtime-tests 300 ctest --test-dir "$rtbuild" -j "$jobs" -LE gpu --output-on-failure --timeout 120
  step runtime-gpu-tests 300 "$rtbuild/test/pipedream-gpu-device-tests" --gtest_color=no
  grep -m1 '^device: ' "$results/runtime-gpu-tests.log" | tee -a "$summary"
  grep -E '^\[  (FAILED|PASSED) ' "$results/runtime-gpu-tests.log" | head -20 | tee -a "$summary"
else
  skip runtime-tests "the runtime did not build"
fi

#===-------------------------------------------------------------------===#
# 3. The whole project
#===-------------------------------------------------------------------===#

full_ok=0
if [ $full = 1 ]; then
  if step full-configure 300 cmake "${generator[@]}" -S "$root" -B "$fullbuild" \
      -DCMAKE_BUILD_TYPE=Release "${compilers[@]}" "${launcher[@]}" \
      -DMLIR_DIR="$mlir_dir" -DLLVM_USE_LINKER=lld \
      -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
      -DPIPEDREAM_ENABLE_CUDA=ON -DPIPEDREAM_GPU_TEST_ARCH="$arch" \
      -DCMAKE_CUDA_ARCHITECTURES="$arch"; then
    step full-build 1200 cmake --build "$fullbuild" -j "$jobs" && full_ok=1
  fi
else
  skip full-build "MLIR 22 or the ONNX/protobuf dev packages are missing, or GPU_CHECK_FULL=0"
fi
if [ $full_ok = 1 ]; then
  lit=$(command -v lit || echo /usr/lib/llvm-22/bin/lit)
  # lit's cuda-device feature is on when the runtime's device tests find
  # a device; tests that need its absence show as UNSUPPORTED.
  step lit-gpu 600 "$lit" -sv --show-unsupported "$fullbuild/test" \
    --filter 'cuda|gpu|GPU' --timeout 300
  step ctest-gpu 600 ctest --test-dir "$fullbuild" -L gpu --output-on-failure --timeout 300
fi

#===-------------------------------------------------------------------===#
# 4. Benchmark
#===-------------------------------------------------------------------===#

if [ $full_ok = 1 ] && [ -n "$py" ]; then
  # shellcheck disable=SC2086
  step bench-gpu-block 900 "$py" "$root/bench/gpu_block.py" --bin "$fullbuild/bin" \
    --work "$prefix-bench" --json "$results/bench.json" --timeout 300 ${BENCH_ARGS:-}
  cp "$prefix-bench/pipedream.log" "$results/bench-pipedream.log" 2>/dev/null
  sed -n '/step ms/,/model FLOPs/p' "$results/bench-gpu-block.log" | tee -a "$summary"
else
  skip bench-gpu-block "needs the full build and a Python with torch"
fi

say "total $(($(date +%s) - start_all))s; results in $results"
exit $failed
