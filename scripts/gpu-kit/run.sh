#!/usr/bin/env bash
# pipedream's GPU check, from the kit scripts/gpu-kit.sh built (docs/GPU.md
# "The GPU kit"). On the GPU machine:
#
#   KIT/run.sh RESULTS_DIR
#
# Steps, each under a time limit, all within RUN_BUDGET seconds (default
# 450, so the whole run stays under 8 minutes):
#   environment   nvidia-smi, the CUDA libraries found, python3 and torch
#   probe         a CUDA device (the runtime's device check)
#   device-tests  the runtime's device tests (GEMMs vs a CPU reference,
#                 mgpu* launches, NCCL to self, cuda bundles as one rank and
#                 as a 2-stage pipeline vs the CPU)
#   gpu-tests     the runtime's GPU tests that need no device
#   case-*        every bundle of cases.txt run by pipedream-run and compared
#                 with the CPU bundle's results (and PyTorch's): inference,
#                 3 training steps, 2-stage pipelines over the threads
#                 transport on the one GPU, --dtype bf16
#   nccl          nccl-check: one rank, send/recv to self in a group and the
#                 runtime's collective (ncclAllReduce sum, f32 and f64)
#   gemm          gemm-bench: the runtime's pd_gpu_gemm_f32/bf16 (cuBLAS),
#                 checked against float64 and timed, TFLOP/s and % of peak
#   bench-f32, bench-bf16
#                 bench/gpu_block.py: a GPT block's training step, TFLOP/s,
#                 fraction of the H200's dense peak, next to PyTorch eager
#                 (python3 of the image, or $PYTHON)
# Writes RESULTS_DIR/summary.txt (PASS/FAIL/TIMEOUT/SKIP per step and the
# figures), run.log (every step's output), environment.txt and
# bench-{f32,bf16}.json: at most 5 files. Exit status 1 when a step did not
# pass. Without a GPU every device step fails at once with "no CUDA device".
#
# Environment: RUN_BUDGET (seconds, default 450), PYTHON (default python3),
# KEEP_WORK=1 (keep the scratch directory, printed), CUDA_LIBS (a directory
# with libcublas.so.13 and libnccl.so.2, when they are not found).
set -u -o pipefail

kit=$(cd "$(dirname "$0")" && pwd)

#===-------------------------------------------------------------------===#
# One case (run.sh --case LINE...): run a bundle, compare its results.
#===-------------------------------------------------------------------===#

if [ "${1:-}" = "--case" ]; then
  shift
  name=$1 kind=$2 cmp=$3
  shift 3
  d=$kit/cases/$name
  w=$PDKIT_WORK/$name
  if [ ! -f "$w/done" ]; then
    rm -rf "$w" && mkdir -p "$w"
    if [ "$kind" = infer ]; then
      "$kit/bin/pipedream-run" "$d/bundle" --inputs "$d/in.npz" \
        --outputs "$w/out.npz" || exit 1
    else
      evaluate=()
      [ -f "$d/eval.npz" ] && evaluate=(--eval-data "$d/eval.npz" --eval-every 1)
      "$kit/bin/pipedream-run" "$d/bundle" --data "$d/data.npz" --steps 3 \
        --loss-log "$w/loss.csv" --checkpoint-dir "$w/ckpt" \
        --checkpoint-every 3 ${evaluate[@]+"${evaluate[@]}"} || exit 1
    fi
    touch "$w/done"
  fi
  compare=("$PDKIT_PYTHON" "$kit/share/kit_compare.py")
  case $cmp in
    npz) "${compare[@]}" npz "$w/out.npz" "$d/$1" --rtol "$2" ;;
    bf16) "${compare[@]}" bf16 "$w/out.npz" "$d/$1" "$d/$2" ;;
    train) "${compare[@]}" train "$w" "$d/$1" --rtol "$2" ;;
    *) echo "unknown comparison $cmp"; exit 2 ;;
  esac
  exit $?
fi

if [ $# -ne 1 ] || [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
  sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'
  [ $# -eq 1 ] && exit 0 || exit 2
fi

results=$(mkdir -p "$1" && cd "$1" && pwd) || {
  echo "error: cannot create $1" >&2
  exit 2
}
budget=${RUN_BUDGET:-450}
summary=$results/summary.txt
runlog=$results/run.log
: >"$summary"
: >"$runlog"
rm -f "$results/environment.txt" "$results"/bench-*.json
t_start=$(date +%s)
failed=0
export PDKIT_WORK
PDKIT_WORK=$(mktemp -d "${TMPDIR:-/tmp}/pdkit-run.XXXXXX")
if [ "${KEEP_WORK:-0}" != 1 ]; then
  trap 'rm -rf "$PDKIT_WORK"' EXIT
fi

say() { echo "$*" | tee -a "$summary"; }

# step NAME LIMIT COMMAND...: runs COMMAND under `timeout` (no longer than
# what is left of the budget), its output appended to run.log; one summary
# line: PASS, FAIL with the output's last line, TIMEOUT, or SKIP when the
# budget is spent. Returns COMMAND's status.
step() {
  local name=$1 limit=$2
  shift 2
  local left=$((budget - ($(date +%s) - t_start)))
  if [ $left -lt 5 ]; then
    say "SKIP    $name: the run's time budget (${budget}s) is spent"
    failed=1
    return 1
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  local out=$PDKIT_WORK/step.out t0 rc secs
  t0=$(date +%s)
  timeout -k 5 "$limit" "$@" >"$out" 2>&1 </dev/null
  rc=$?
  secs=$(($(date +%s) - t0))
  { echo "=== $name (limit ${limit}s, rc $rc, ${secs}s): $*"; cat "$out"; echo; } >>"$runlog"
  STEP_OUT=$out
  if [ $rc -eq 0 ]; then
    say "PASS    $name (${secs}s) $(grep -E '^OK' "$out" | tail -1 | cut -c1-240)"
  elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    say "TIMEOUT $name (${secs}s, limit ${limit}s; see run.log)"
    failed=1
  else
    local why
    why=$(grep -m1 -o 'no CUDA device[^"]*' "$out" || true)
    [ -n "$why" ] || why=$(grep -E 'MISMATCH|FAIL|error' "$out" | head -1)
    [ -n "$why" ] || why=$(grep -v '^\s*$' "$out" | tail -1)
    say "FAIL    $name (rc $rc, ${secs}s): $(echo "$why" | cut -c1-240)"
    failed=1
  fi
  return $rc
}

#===-------------------------------------------------------------------===#
# Environment: the CUDA libraries the image provides
#===-------------------------------------------------------------------===#

py=${PYTHON:-python3}
command -v "$py" >/dev/null 2>&1 || py=/usr/bin/python3
export PDKIT_PYTHON=$py

# cuBLAS 13 and NCCL 2 (libpipedream_gpu.so, nccl-check): the toolkit's
# directories, the loader's cache, or the pip wheels next to torch.
find_lib() {
  local so=$1 dir
  for dir in ${CUDA_LIBS:-} ${CUDA_HOME:+$CUDA_HOME/lib64 $CUDA_HOME/lib} \
      /usr/local/cuda/lib64 /usr/local/cuda/lib \
      /usr/local/cuda/targets/x86_64-linux/lib /usr/lib/x86_64-linux-gnu \
      /usr/lib64 /usr/local/lib; do
    [ -e "$dir/$so" ] && { echo "$dir"; return 0; }
  done
  dir=$(ldconfig -p 2>/dev/null | awk -v so="$so" '$1 == so {print $NF; exit}')
  [ -n "$dir" ] && { dirname "$dir"; return 0; }
  # pip's nvidia-* wheels (torch's dependencies).
  for dir in $(timeout 30 "$py" -c 'import site, sys; print(" ".join(site.getsitepackages() + [site.getusersitepackages()]))' 2>/dev/null) \
      /usr/local/lib/python3*/dist-packages /usr/lib/python3/dist-packages; do
    for cand in "$dir"/nvidia/*/lib/"$so" "$dir"/nvidia/cu*/lib/"$so"; do
      [ -e "$cand" ] && { dirname "$cand"; return 0; }
    done
  done
  return 1
}
libdirs=""
{
  echo "== kit"
  head -4 "$kit/MANIFEST.txt" 2>/dev/null
  echo "== host: $(hostname) $(uname -srm), $(nproc) cores"
  echo "== glibc: $(ldd --version 2>&1 | head -1)"
  echo "== nvidia-smi"
  timeout 30 nvidia-smi 2>&1 || echo "(nvidia-smi failed or is missing)"
  echo "== libraries"
} >"$results/environment.txt"
for so in libcublas.so.13 libcublasLt.so.13 libnccl.so.2; do
  if dir=$(find_lib "$so"); then
    echo "$so: $dir" >>"$results/environment.txt"
    case ":$libdirs:" in *":$dir:"*) ;; *) libdirs=${libdirs:+$libdirs:}$dir ;; esac
  else
    echo "$so: NOT FOUND (set CUDA_LIBS)" >>"$results/environment.txt"
    say "missing: $so (set CUDA_LIBS to its directory)"
  fi
done
export LD_LIBRARY_PATH=$kit/lib${libdirs:+:$libdirs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PIPEDREAM_GPU_LIBRARY=$kit/lib/libpipedream_gpu.so
export PIPEDREAM_TEST_FILES=$kit/share
{
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  echo "== ldd"
  for f in "$kit"/bin/* "$kit"/lib/libpipedream_gpu.so; do
    ldd "$f" 2>&1 | grep -E 'not found|cublas|nccl|libcuda' | sed "s|^|$(basename "$f"): |"
  done
  echo "== python: $py"
  timeout 60 "$py" -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())' 2>&1 | tail -1
} >>"$results/environment.txt" 2>&1
gpu=$(timeout 30 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)
say "pipedream GPU kit run $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname); $(sed -n 2p "$kit/MANIFEST.txt" 2>/dev/null)"
say "gpu: ${gpu:-none found by nvidia-smi}; python: $py ($(grep -A1 '^== python' "$results/environment.txt" | tail -1))"

#===-------------------------------------------------------------------===#
# Device probe and the runtime's tests
#===-------------------------------------------------------------------===#

step probe 60 "$kit/bin/pipedream-gpu-device-tests" --gtest_list_tests &&
  say "        $(grep -c '^  ' "$STEP_OUT") device tests listed"
# NOTE: the device tests exit 77 ("SKIPPED: no CUDA device ...") without one.
if step device-tests 180 "$kit/bin/pipedream-gpu-device-tests" --gtest_color=no; then :; fi
grep -m1 '^device: ' "$STEP_OUT" | sed 's/^/        /' | tee -a "$summary"
grep -E '^\[  (FAILED|PASSED|SKIPPED) ' "$STEP_OUT" | head -12 | sed 's/^/        /' | tee -a "$summary"
step gpu-tests 60 "$kit/bin/pipedream-gpu-tests" --gtest_color=no

#===-------------------------------------------------------------------===#
# Bundles vs the CPU's results
#===-------------------------------------------------------------------===#

while read -r name kind cmp a b; do
  case $name in ''|'#'*) continue ;; esac
  label="case-$name"
  [ "$cmp" = npz ] && label="$label:${a%.npz}"
  [ "$cmp" = bf16 ] && label="$label:${a%.npz}"
  step "$label" 60 "$kit/run.sh" --case "$name" "$kind" "$cmp" "$a" "$b"
done <"$kit/cases.txt"

#===-------------------------------------------------------------------===#
# NCCL
#===-------------------------------------------------------------------===#

step nccl 60 "$kit/bin/nccl-check"

#===-------------------------------------------------------------------===#
# Benchmarks
#===-------------------------------------------------------------------===#

step gemm 90 "$kit/bin/gemm-bench" "$kit/lib/libpipedream_gpu.so"
grep -E '^OK gemm' "$STEP_OUT" | sed 's/^/        /' | tee -a "$summary"

if [ -f "$kit/bench/config" ]; then
  # shellcheck disable=SC1091
  . "$kit/bench/config"
  # The bundles' weights.bin (the same layout for f32 and bf16: only the
  # GEMMs are bf16), rebuilt from the recipe.
  weights=$PDKIT_WORK/bench-weights.bin
  left=$((budget - ($(date +%s) - t_start)))
  if [ $left -lt 10 ] || ! timeout -k 5 $((left < 120 ? left : 120)) "$py" \
      "$kit/share/kit_weights.py" "$kit/bench/weights-recipe.json" \
      "$weights" >>"$runlog" 2>&1; then
    rm -f "$weights"
  fi
  for dt in f32 bf16; do
    b=$PDKIT_WORK/bench-$dt
    rm -rf "$b" && cp -r "$kit/bench/bundle-$dt" "$b"
    if [ ! -f "$weights" ]; then
      say "FAIL    bench-$dt: rebuilding weights.bin failed (see run.log)"
      failed=1
      continue
    fi
    ln -s "$weights" "$b/weights.bin"
    step "bench-$dt" 150 "$py" "$kit/bench/gpu_block.py" --bin "$kit/bin" \
      --bundle "$b" --data "$kit/bench/data.npz" --work "$PDKIT_WORK/bench-work-$dt" \
      --dim "$dim" --heads "$heads" --seq "$seq" --batch "$batch" --steps 10 \
      --dtype "$dt" --json "$results/bench-$dt.json" --timeout 60
    sed -n '/step ms/,/model FLOPs/p' "$STEP_OUT" | sed 's/^/        /' | tee -a "$summary"
    grep -m1 'ratio' "$STEP_OUT" | sed 's/^/        /' | tee -a "$summary"
  done
  # Issue 19's targets for the block: >= 50% of the dense bf16 peak and at
  # least PyTorch eager's speed (ratio >= 1.0).
  for dt in f32 bf16; do
    [ -f "$results/bench-$dt.json" ] || continue
    "$py" - "$results/bench-$dt.json" "$dt" <<'PYEOF' 2>/dev/null | tee -a "$summary"
import json, sys
r = json.load(open(sys.argv[1]))
p, t = r.get("pipedream"), r.get("torch")
if isinstance(p, dict):
    line = "target  bench-%s: %.1f%% of the dense peak" % (
        sys.argv[2], 100 * p["fraction_of_peak"])
    if sys.argv[2] == "bf16":
        line += " (target >= 50%%: %s)" % (
            "met" if p["fraction_of_peak"] >= 0.5 else "NOT met")
    if isinstance(t, dict):
        ratio = t["median_step_ms"] / p["median_step_ms"]
        line += "; speed %.3fx PyTorch eager's (its step time / ours; target >= 1.0x: %s)" % (
            ratio, "met" if ratio >= 1.0 else "NOT met")
    print(line)
PYEOF
  done
else
  say "SKIP    bench: not in this kit (built with --quick)"
fi

passed=$(grep -c '^PASS' "$summary")
notpassed=$(grep -cE '^(FAIL|TIMEOUT|SKIP) ' "$summary")
say "total: $passed passed, $notpassed not passed, $(($(date +%s) - t_start))s; results in $results"
[ "${KEEP_WORK:-0}" = 1 ] && say "scratch kept in $PDKIT_WORK"
exit $failed
