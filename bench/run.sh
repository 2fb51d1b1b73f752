#!/usr/bin/env bash
# Benchmarks pipedream's compiled forward against onnxruntime, one thread each
# (bench/README.md). Not part of the test suite.
#
#   bench/run.sh [BUILD_DIR] [-- BENCH_PY_ARGS...]
#
# BUILD_DIR defaults to $PIPEDREAM_BUILD_DIR or build/; it is built with
# scripts/build.sh if pipedream-compile is missing. Models and bundles go to
# BUILD_DIR/bench/. Environment:
#   BENCH_GEMM=MODE     pipedream-compile --gemm MODE (auto, kernel, vectorize, blas, loops; default auto)
#   BENCH_MODELS="..."  subset of: gpt256 gpt512 mlp2048 (default: all)
#   BENCH_PYTHON=PY     the interpreter the venv is made from (default: python3 on PATH)
#   BENCH_BEFORE=PATH   another pipedream-compile (e.g. main's build): each model is
#                       also compiled with it (default flags) and timed in the same
#                       run as NAME@before, for before/after ratios side by side
#   BENCH_VENV=DIR      an existing venv with onnxruntime and numpy (e.g. /opt/venv)
#                       instead of BUILD_DIR/bench-venv
#   OPENBLAS_CORETYPE   passed through: these machines set Haswell; `env -u
#                       OPENBLAS_CORETYPE bench/run.sh` lets OpenBLAS pick its kernel
# Models are exported with Debian's /usr/bin/python3 (torch 1.13); the
# benchmark runs in a venv (BUILD_DIR/bench-venv) with onnxruntime and numpy
# from the package index.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${PIPEDREAM_BUILD_DIR:-$root/build}
if [ $# -gt 0 ] && [ "$1" != "--" ]; then build=$(cd "$1" && pwd); shift; fi
[ "${1:-}" = "--" ] && shift
gemm=${BENCH_GEMM:-auto}
models=${BENCH_MODELS:-gpt256 gpt512 mlp2048}
py=${BENCH_PYTHON:-python3}

export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PIPEDREAM_NUM_THREADS=1

compile=$build/bin/pipedream-compile
if [ ! -x "$compile" ]; then
  echo "== building pipedream-compile in $build"
  PIPEDREAM_BUILD_DIR=$build "$root/scripts/build.sh" pipedream-compile
fi

venv=${BENCH_VENV:-$build/bench-venv}
if ! "$venv/bin/python" -c "import onnxruntime, numpy" 2>/dev/null; then
  echo "== making $venv ($("$py" --version 2>&1)) with onnxruntime and numpy"
  "$py" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip
  "$venv/bin/python" -m pip install --quiet onnxruntime numpy
fi

work=$build/bench
mkdir -p "$work"
specs=()
for m in $models; do
  case $m in
    # GPT-like: embeddings, one pre-LN block (causal MHA + GELU MLP), LM head
    # (vocab 64); batch 8 x 128 tokens.
    gpt256)  args=(gpt --batch 8 --seq 128 --dim 256 --heads 4) ;;
    gpt512)  args=(gpt --batch 8 --seq 128 --dim 512 --heads 8) ;;
    # MLP 16 -> 2048 -> 2048 -> 10, ReLU, batch 256.
    mlp2048) args=(mlp --batch 256 --hidden 2048) ;;
    *) echo "unknown model $m (gpt256 gpt512 mlp2048)" >&2; exit 2 ;;
  esac
  echo "== $m: export (${args[*]}), compile --inference --gemm $gemm"
  /usr/bin/python3 "$root/models/export_torch.py" "${args[0]}" "$work/$m.onnx" "${args[@]:1}"
  rm -rf "$work/$m.$gemm"
  "$compile" --inference --gemm "$gemm" "$work/$m.onnx" -o "$work/$m.$gemm"
  specs+=("$m:$work/$m.onnx:$work/$m.$gemm")
  if [ -n "${BENCH_BEFORE:-}" ]; then
    rm -rf "$work/$m.before"
    "$BENCH_BEFORE" --inference "$work/$m.onnx" -o "$work/$m.before"
    specs+=("$m@before:$work/$m.onnx:$work/$m.before")
  fi
done

echo "== bench (--gemm $gemm)"
exec "$venv/bin/python" "$root/bench/bench.py" "$@" "${specs[@]}"
