#!/usr/bin/env bash
# Builds the GPU kit: one folder (at most 48 MiB) with everything a bare
# CUDA machine needs to check pipedream's GPU path (docs/GPU.md "The GPU
# kit"), built here without a GPU:
#
#   scripts/gpu-kit.sh [--quick] KIT_DIR
#
# then on the GPU machine: `KIT_DIR/run.sh RESULTS_DIR` (at most 8 min).
#
# The GPU machine (an H200 image with CUDA 13, cuBLAS, NCCL, PyTorch,
# Python 3) has no MLIR, ONNX/protobuf, libzip or GoogleTest, so the kit
# holds:
#   bin/    pipedream-run, the runtime's device tests
#           (pipedream-gpu-device-tests, pipedream-gpu-tests), nccl-check
#           and gemm-bench (scripts/gpu-kit/*.cpp), all with RPATH
#           $ORIGIN/../lib;
#   lib/    libpipedream_gpu.so (CUDA + NCCL), the device tests' bundle
#           libraries, and every library they need beyond glibc, libstdc++,
#           libgcc_s and the CUDA libraries the image has (libcuda, cuBLAS,
#           NCCL): libzip, protobuf, onnx_proto and their dependencies;
#   share/  the device tests' PTX and sm_90 fatbin;
#   cases/  cuda bundles (sm_90) with their inputs and the references:
#           the CPU bundles' results for the same runs (and PyTorch's for the
#           export_torch models): inference, 3 training steps, a 2-stage
#           pipeline (threads transport, one GPU), `--dtype bf16`;
#   bench/  bench/gpu_block.py with its cuda bundles (f32, bf16) of a GPT
#           block training step, without weights.bin (rebuilt there by
#           kit_weights.py from each tensor's statistics);
#   run.sh, cases.txt, MANIFEST.txt.
# --quick: only examples/mlp.onnx's cases and no benchmark (the lit test).
# GPU_KIT_TARGET=cpu (a check of the kit itself, without a GPU): the
# cases' bundles are CPU bundles, so run.sh runs and compares them here;
# no bf16 cases, no benchmark (not a kit for a GPU machine).
#
# Environment: PIPEDREAM_BUILD_DIR (the built compiler, default ROOT/build),
# GPU_KIT_BUILD (the kit's own runtime build: MPI off, CUDA on, RPATH to
# the kit; default ROOT/build-gpu-kit, built incrementally), GPU_ARCH
# (default 90), JOBS (default 2), PYTHON (default /usr/bin/python3: Debian's
# torch, onnx, numpy), BENCH_DIM/BENCH_HEADS/BENCH_SEQ/BENCH_BATCH
# (default 1024/16/512/8).
set -euo pipefail

quick=0
if [ "${1:-}" = "--quick" ]; then
  quick=1
  shift
fi
if [ $# -ne 1 ] || [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
  sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'
  [ $# -eq 1 ] && exit 0 || exit 2
fi

root=$(cd "$(dirname "$0")/.." && pwd)
tmpl=$root/scripts/gpu-kit
build=${PIPEDREAM_BUILD_DIR:-$root/build}
kitbuild=${GPU_KIT_BUILD:-$root/build-gpu-kit}
arch=${GPU_ARCH:-90}
target=${GPU_KIT_TARGET:-cuda}
case $target in
  cuda) target_args=(--target cuda --gpu-arch "sm_$arch") ;;
  cpu) target_args=(--target cpu) ;;
  *) echo "gpu-kit: error: GPU_KIT_TARGET must be cuda or cpu" >&2; exit 2 ;;
esac
jobs=${JOBS:-2}
py=${PYTHON:-/usr/bin/python3}
cuda=${CUDA_HOME:-/usr/local/cuda}
limit_mib=48
# glibc of Debian 12: the kit must load on it and on anything newer.
max_glibc=2.36

die() {
  echo "gpu-kit: error: $*" >&2
  exit 1
}
log() { echo "gpu-kit: $*"; }

compile=$build/bin/pipedream-compile
cpurun=$build/bin/pipedream-run
[ -x "$compile" ] && [ -x "$cpurun" ] ||
  die "no pipedream-compile/pipedream-run in $build/bin (build first: scripts/build.sh, or set PIPEDREAM_BUILD_DIR)"
[ -x "$cuda/bin/nvcc" ] || die "no CUDA toolkit at $cuda (set CUDA_HOME)"
"$py" -c 'import numpy' 2>/dev/null || die "$py cannot import numpy"

kit=$1
case $kit in /*) ;; *) kit=$PWD/$kit ;; esac
rm -rf "$kit"
mkdir -p "$kit"/{bin,lib,share,cases}
work=$(mktemp -d "${TMPDIR:-/tmp}/gpu-kit.XXXXXX")
trap 'rm -rf "$work"' EXIT
start=$(date +%s)

#===-------------------------------------------------------------------===#
# 1. The runtime for the GPU machine
#===-------------------------------------------------------------------===#

# NOTE: the GPU image has no MPI: the kit's runtime is built without the MPI
# transport. Every executable and shared library gets DT_RPATH (not RUNPATH:
# it also applies to the libraries' own dependencies) $ORIGIN/../lib.
if [ ! -f "$kitbuild/build.ninja" ]; then
  log "configuring $kitbuild"
  cmake -G Ninja -S "$root" -B "$kitbuild" -DCMAKE_BUILD_TYPE=Release \
    -DPIPEDREAM_ENABLE_CUDA=ON -DPIPEDREAM_RUNTIME_MPI=OFF \
    -DCMAKE_CUDA_ARCHITECTURES="$arch" -DPIPEDREAM_GPU_TEST_ARCH="$arch" \
    -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON '-DCMAKE_INSTALL_RPATH=$ORIGIN/../lib' \
    -DCMAKE_EXE_LINKER_FLAGS=-Wl,--disable-new-dtags \
    -DCMAKE_SHARED_LINKER_FLAGS=-Wl,--disable-new-dtags \
    -DCMAKE_MODULE_LINKER_FLAGS=-Wl,--disable-new-dtags \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit >"$work/configure.log" 2>&1 ||
    { tail -20 "$work/configure.log" >&2; die "configuring $kitbuild failed"; }
fi
log "building the runtime (CUDA, no MPI) in $kitbuild"
cmake --build "$kitbuild" -j "$jobs" --target pipedream-run \
  pipedream-gpu-device-tests pipedream-gpu-tests pipedream-test-program \
  pipedream-gpu-test-program pipedream_gpu >"$work/build.log" 2>&1 ||
  { tail -30 "$work/build.log" >&2; die "building the kit's runtime failed"; }
rt=$kitbuild/runtime/test
[ -f "$kitbuild/lib/libpipedream_gpu.so" ] ||
  die "$kitbuild/lib/libpipedream_gpu.so missing (CUDA not enabled?)"
cp "$kitbuild/bin/pipedream-run" "$rt/pipedream-gpu-device-tests" \
  "$rt/pipedream-gpu-tests" "$kit/bin/"
cp "$kitbuild/lib/libpipedream_gpu.so" "$kit/lib/"
# The device tests' inputs, found through PIPEDREAM_TEST_FILES=KIT/share.
cp "$rt/pipedream-test-program.so" "$rt/pipedream-gpu-test-program.so" \
  "$root/runtime/test/GpuAddOne.ptx" "$kit/share/"
[ -f "$rt/GpuAddOne.fatbin" ] && cp "$rt/GpuAddOne.fatbin" "$kit/share/"

# nccl-check: NCCL's calls as the runtime's transport makes them, one rank.
nccl_lib=$(dirname "$(ls "$cuda"/lib*/libnccl.so "$cuda"/lib*/libnccl.so.2 2>/dev/null | head -1)")
[ -n "$nccl_lib" ] && [ "$nccl_lib" != . ] || die "no libnccl.so in $cuda/lib*"
cxx=$(command -v clang++-22 || command -v c++)
"$cxx" -O2 -std=c++17 "$tmpl/nccl-check.cpp" -o "$kit/bin/nccl-check" \
  -I"$cuda/include" -L"$cuda/lib64" -L"$nccl_lib" -lcudart_static -lnccl \
  -ldl -lpthread -lrt -Wl,--disable-new-dtags '-Wl,-rpath,$ORIGIN/../lib' ||
  die "building nccl-check failed"

# gemm-bench: the runtime's GEMM entry points, checked and timed.
"$cxx" -O2 -std=c++17 "$tmpl/gemm-bench.cpp" -o "$kit/bin/gemm-bench" \
  -I"$root/runtime/lib" -I"$root/runtime/include" -ldl \
  -Wl,--disable-new-dtags '-Wl,-rpath,$ORIGIN/../lib' ||
  die "building gemm-bench failed"

# Libraries the image lacks: everything resolved outside the kit except the
# system's C/C++ runtime and the CUDA libraries of the image.
image_provided='^(linux-vdso|ld-linux-x86-64|libc|libm|libdl|libpthread|librt|libresolv|libstdc\+\+|libgcc_s|libcuda|libcudart|libcublas|libcublasLt|libnccl)\.so'
for _ in 1 2 3; do
  for f in "$kit"/bin/* "$kit"/lib/*.so* "$kit"/share/*.so; do
    LD_LIBRARY_PATH=$kit/lib ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'
  done | sort -u | while read -r soname path; do
    echo "$soname" | grep -Eq "$image_provided" && continue
    [ -e "$kit/lib/$soname" ] || cp -L "$path" "$kit/lib/$soname"
  done
done

# glibc: nothing newer than Debian 12's.
need_glibc=$(for f in "$kit"/bin/* "$kit"/lib/*.so*; do
  readelf -V --wide "$f" 2>/dev/null | grep -o 'GLIBC_[0-9][0-9.]*' || true; done |
  sed 's/GLIBC_//' | sort -uV | tail -1)
need_glibcxx=$(for f in "$kit"/bin/* "$kit"/lib/*.so*; do
  readelf -V --wide "$f" 2>/dev/null | grep -o 'GLIBCXX_[0-9][0-9.]*' || true; done |
  sed 's/GLIBCXX_//' | sort -uV | tail -1)
if [ "$(printf '%s\n%s\n' "$need_glibc" "$max_glibc" | sort -V | tail -1)" != "$max_glibc" ]; then
  die "the kit needs glibc $need_glibc, newer than Debian 12's $max_glibc"
fi
log "binaries need glibc >= $need_glibc, libstdc++ GLIBCXX >= $need_glibcxx"

#===-------------------------------------------------------------------===#
# 2. Bundles, inputs and references
#===-------------------------------------------------------------------===#

cases=$kit/cases.txt
cat >"$cases" <<'EOF'
# One line per check: NAME KIND COMPARE TOLERANCE (run.sh). KIND: infer
# (cases/NAME/in.npz -> out.npz) or train (3 steps of cases/NAME/data.npz;
# loss.csv and a checkpoint; pipelines over the threads transport).
# COMPARE: npz REF (relative to each array's largest value), bf16 REF16 F32REF
# (the bf16 recipe check), train (loss.csv and the checkpoint of the CPU
# bundle's run, cases/NAME/cpu/).
EOF

# compile NAME MODEL ARGS...: the cuda bundle into cases/NAME/bundle, and
# (unless DTYPE bf16 is in ARGS) the CPU bundle into $work/NAME-cpu.
cc() {
  "$compile" "$@" >>"$work/compile.log" 2>&1 ||
    { tail -5 "$work/compile.log" >&2; die "pipedream-compile $* failed"; }
}
run_cpu() {
  "$cpurun" "$@" >>"$work/run-cpu.log" 2>&1 ||
    { tail -5 "$work/run-cpu.log" >&2; die "pipedream-run $* failed"; }
}
strip_bundle() { rm -f "$1/report.json" "$1/model.onnx"; }

# infer_case NAME MODEL IN.npz [--dtype bf16]: cuda inference bundle and
# the CPU bundle's outputs on IN.npz (cpu-out.npz).
infer_case() {
  local name=$1 model=$2 in=$3
  shift 3
  local d=$kit/cases/$name
  mkdir -p "$d"
  cc "$model" -o "$d/bundle" --inference "${target_args[@]}" "$@"
  strip_bundle "$d/bundle"
  cp "$in" "$d/in.npz"
  cc "$model" -o "$work/$name-cpu" --inference
  run_cpu "$work/$name-cpu" --inputs "$in" --outputs "$d/cpu-out.npz"
}

# train_case NAME MODEL DATA.npz TRAINARGS... [-- CUDAARGS...]: cuda
# training (or pipeline) bundle, and the CPU bundle's 3 steps (loss.csv,
# checkpoint) in cases/NAME/cpu; with case_eval=EVAL.npz (and --evaluate
# in TRAINARGS) both evaluate EVAL.npz after every step (cases/NAME/eval.npz).
train_case() {
  local name=$1 model=$2 data=$3
  shift 3
  local train=() extra=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do train+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  extra=("$@")
  local d=$kit/cases/$name
  mkdir -p "$d/cpu"
  cc "$model" -o "$d/bundle" "${train[@]}" "${target_args[@]}" ${extra[@]+"${extra[@]}"}
  strip_bundle "$d/bundle"
  cp "$data" "$d/data.npz"
  local evaluate=()
  if [ -n "${case_eval:-}" ]; then
    cp "$case_eval" "$d/eval.npz"
    evaluate=(--eval-data "$case_eval" --eval-every 1)
  fi
  cc "$model" -o "$work/$name-cpu" "${train[@]}"
  run_cpu "$work/$name-cpu" --data "$data" --steps 3 \
    --loss-log "$d/cpu/loss.csv" --checkpoint-dir "$d/cpu/ckpt" \
    --checkpoint-every 3 ${evaluate[@]+"${evaluate[@]}"}
}

train_args=(--loss cross-entropy --optimizer momentum --lr 0.05
  --batch-size 8 --microbatches 2)
pipe_args=(--loss cross-entropy --optimizer sgd --lr 0.1 --batch-size 8
  --microbatches 4 --stages 2 --schedule 1f1b)

# examples/mlp.onnx: x[8, 16] f32 -> y[8, 10].
log "cases: examples/mlp.onnx"
"$py" "$tmpl/kit_inputs.py" data "$work/mlp-in.npz" --seed 11 x:f32:8,16
"$py" "$tmpl/kit_inputs.py" data "$work/mlp-data.npz" --seed 7 \
  x:f32:40,16 labels:i64:40:10
infer_case example-mlp-infer "$root/examples/mlp.onnx" "$work/mlp-in.npz"
echo "example-mlp-infer infer npz cpu-out.npz 1e-5" >>"$cases"
train_case example-mlp-train "$root/examples/mlp.onnx" "$work/mlp-data.npz" \
  "${train_args[@]}"
echo "example-mlp-train train train cpu 1e-5" >>"$cases"
# The pipeline also evaluates held-out data after every step (each rank's
# evaluation program, device registers).
"$py" "$tmpl/kit_inputs.py" data "$work/mlp-eval.npz" --seed 5 \
  x:f32:12,16 labels:i64:12:10
case_eval=$work/mlp-eval.npz train_case example-mlp-pipe \
  "$root/examples/mlp.onnx" "$work/mlp-data.npz" "${pipe_args[@]}" --evaluate
echo "example-mlp-pipe train train cpu 1e-5" >>"$cases"
# Gradient clipping: each stage's N, the norm's all-reduce, clipped U's.
# Replicated stages on the one GPU (2 stages x 2 replicas, 4 rank threads):
# each replica's messages go to its own ranks, the gradients are summed
# over the replicas, the replicas share the evaluation's micro-batches.
case_eval=$work/mlp-eval.npz train_case example-mlp-pipe-replicas \
  "$root/examples/mlp.onnx" "$work/mlp-data.npz" "${pipe_args[@]}" \
  --replicas 2 --evaluate
echo "example-mlp-pipe-replicas train train cpu 1e-5" >>"$cases"
train_case example-mlp-pipe-clip "$root/examples/mlp.onnx" \
  "$work/mlp-data.npz" "${pipe_args[@]}" --clip-grad-norm 0.5
echo "example-mlp-pipe-clip train train cpu 1e-5" >>"$cases"
# bf16 against the f32 CPU run: a gross-error bound (3e-2 of the largest
# value; the bf16 recipe's own check is the torch models' below).
if [ "$target" = cuda ]; then
  train_case example-mlp-train-bf16 "$root/examples/mlp.onnx" \
    "$work/mlp-data.npz" "${train_args[@]}" -- --dtype bf16
  cp -r "$kit/cases/example-mlp-train/cpu/." "$kit/cases/example-mlp-train-bf16/cpu/"
  echo "example-mlp-train-bf16 train train cpu 3e-2" >>"$cases"
fi

if [ $quick = 0 ]; then
  # models/export_torch.py's mlp, gpt and cnn: PyTorch's outputs
  # (test/Tools/pipedream-compile/Inputs/torch_reference.py) and its bf16
  # recipe (test/Target/GPU/Inputs/torch_reference_bf16.py) as further
  # references next to the CPU bundles'.
  ref=$root/test/Tools/pipedream-compile/Inputs/torch_reference.py
  ref16=$root/test/Target/GPU/Inputs/torch_reference_bf16.py
  for m in mlp gpt cnn; do
    log "cases: export_torch $m"
    "$py" "$root/models/export_torch.py" "$m" "$work/$m.onnx" >/dev/null
    "$py" "$ref" "$root" "$m" "$work/$m-in.npz" "$work/$m-ref.npz"
    "$py" "$ref16" "$root" "$m" "$work/$m-in.npz" "$work/$m-ref16.npz"
    infer_case "$m-infer" "$work/$m.onnx" "$work/$m-in.npz"
    cp "$work/$m-ref.npz" "$kit/cases/$m-infer/torch-ref.npz"
    # The CPU reference itself must equal PyTorch's.
    "$py" "$tmpl/kit_compare.py" npz "$kit/cases/$m-infer/cpu-out.npz" \
      "$work/$m-ref.npz" --rtol 1e-4 >>"$work/compile.log" ||
      die "the CPU bundle of $m differs from PyTorch: $(tail -1 "$work/compile.log")"
    echo "$m-infer infer npz cpu-out.npz 1e-5" >>"$cases"
    echo "$m-infer infer npz torch-ref.npz 1e-4" >>"$cases"
    if [ "$target" = cuda ]; then
      infer_case "$m-infer-bf16" "$work/$m.onnx" "$work/$m-in.npz" --dtype bf16
      cp "$work/$m-ref16.npz" "$kit/cases/$m-infer-bf16/torch-ref16.npz"
      echo "$m-infer-bf16 infer bf16 torch-ref16.npz cpu-out.npz" >>"$cases"
    fi
    case $m in
      gpt) specs=(idx:i64:40,8:64 labels:i64:40,8:64) ;;
      cnn) specs=(x:f32:40,3,16,16 labels:i64:40:10) ;;
      *) specs=(x:f32:40,16 labels:i64:40:10) ;;
    esac
    "$py" "$tmpl/kit_inputs.py" data "$work/$m-data.npz" --seed 7 "${specs[@]}"
    train_case "$m-train" "$work/$m.onnx" "$work/$m-data.npz" "${train_args[@]}"
    echo "$m-train train train cpu 1e-5" >>"$cases"
    train_case "$m-pipe" "$work/$m.onnx" "$work/$m-data.npz" "${pipe_args[@]}"
    echo "$m-pipe train train cpu 1e-5" >>"$cases"
  done
  if [ "$target" = cuda ]; then
    train_case gpt-train-bf16 "$work/gpt.onnx" "$work/gpt-data.npz" \
      "${train_args[@]}" -- --dtype bf16
    cp -r "$kit/cases/gpt-train/cpu/." "$kit/cases/gpt-train-bf16/cpu/"
    echo "gpt-train-bf16 train train cpu 3e-2" >>"$cases"
  fi
fi

#===-------------------------------------------------------------------===#
# 3. The benchmark's bundles
#===-------------------------------------------------------------------===#

if [ $quick = 0 ] && [ "$target" = cuda ]; then
  dim=${BENCH_DIM:-1024} heads=${BENCH_HEADS:-16} seq=${BENCH_SEQ:-512}
  batch=${BENCH_BATCH:-8}
  log "benchmark: GPT block d=$dim heads=$heads seq=$seq batch=$batch"
  mkdir -p "$kit/bench" "$kit/models"
  cp "$root/bench/gpu_block.py" "$kit/bench/"
  cp "$root/models/export_torch.py" "$kit/models/"
  "$py" "$root/models/export_torch.py" gpt "$work/block.onnx" --dim "$dim" \
    --heads "$heads" --seq "$seq" --batch "$batch" >/dev/null
  for dt in f32 bf16; do
    b=$kit/bench/bundle-$dt
    cc "$work/block.onnx" -o "$b" --target cuda --gpu-arch "sm_$arch" \
      --loss cross-entropy --optimizer sgd --batch-size "$batch" --dtype "$dt"
    strip_bundle "$b"
    [ $dt = f32 ] && "$py" "$tmpl/kit_inputs.py" recipe "$b" "$kit/bench/weights-recipe.json"
    rm -f "$b/weights.bin"
  done
  "$py" "$tmpl/kit_inputs.py" data "$kit/bench/data.npz" --seed 0 \
    "idx:i64:$batch,$seq:64" "labels:i64:$batch,$seq:64"
  printf 'dim=%s heads=%s seq=%s batch=%s\n' "$dim" "$heads" "$seq" "$batch" \
    >"$kit/bench/config"
fi

#===-------------------------------------------------------------------===#
# 4. run.sh, the manifest and the size cap
#===-------------------------------------------------------------------===#

cp "$tmpl/run.sh" "$kit/run.sh"
cp "$tmpl/kit_compare.py" "$tmpl/kit_weights.py" "$kit/share/"
chmod +x "$kit/run.sh"
bytes=$(du -sb "$kit" | cut -f1)
{
  echo "pipedream GPU kit ($([ $quick = 1 ] && echo quick || echo full), $target bundles), built $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
  echo "commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$root" status --porcelain 2>/dev/null | grep -q . && echo ' (with local changes)')"
  echo "gpu arch: sm_$arch; needs glibc >= $need_glibc, GLIBCXX >= $need_glibcxx, a CUDA 13 driver, cuBLAS 13, NCCL 2"
  echo "size: $bytes bytes (cap $limit_mib MiB)"
  (cd "$kit" && find . -type f ! -name MANIFEST.txt -printf '%8s %p\n' | sort -k2)
} >"$kit/MANIFEST.txt"
[ "$bytes" -le $((limit_mib * 1024 * 1024)) ] ||
  die "the kit is $bytes bytes, over the $limit_mib MiB cap (see $kit/MANIFEST.txt)"
log "kit in $kit: $((bytes / 1024)) KiB, $(grep -vc '^#' "$cases") checks, $(($(date +%s) - start)) s"
