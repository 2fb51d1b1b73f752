#!/usr/bin/env bash
# Installs every Debian package pipedream's build and tests need. Idempotent:
# packages already present are skipped, so a second run costs one dpkg query.
#
#   scripts/install-deps.sh            build + test dependencies
#   scripts/install-deps.sh --no-torch skip python3-torch (about 630 MB)
set -euo pipefail

with_torch=1
for arg in "$@"; do
  case "$arg" in
    --no-torch) with_torch=0 ;;
    -h|--help) sed -n '2,7p' "$0"; exit 0 ;;
    *) echo "install-deps.sh: unknown option '$arg'" >&2; exit 2 ;;
  esac
done

packages=(
  # Compiler stack: LLVM/MLIR 22 (everything lands under /usr/lib/llvm-22).
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools clang-22 lld-22
  libclang-rt-22-dev
  cmake ninja-build ccache
  # ONNX C++ (parsing, checker, shape inference) and protobuf.
  libonnx-dev libprotobuf-dev protobuf-compiler
  # ONNX backend node tests: the conformance reference for forward numerics.
  libonnx-testdata
  # Test-model generation and reference numerics (Debian's /usr/bin/python3).
  python3-onnx python3-numpy
  # Runtime: bundle.json parsing, .npz reading/writing, unit tests.
  nlohmann-json3-dev libzip-dev libgtest-dev
  # Runtime: the MPI transport of pipeline bundles (pipedream-run --ranks K;
  # optional at build time, the lit tests that need it are skipped without).
  openmpi-bin libopenmpi-dev
  # Tests that count pipedream-run's writes (progress-buffered-mpi.test).
  strace
  # CPU code generation: lld as a library (in-process linking of program.so)
  # and OpenBLAS (GEMMs the vectorized kernel does not cover).
  liblld-22-dev libopenblas-dev
  # Zlib/zstd are needed when linking against LLVM's libraries.
  zlib1g-dev libzstd-dev
  # The Python package (python/): pybind11 bindings, the schedule picture
  # (matplotlib) and its pytest suite (test/Python).
  pybind11-dev python3-dev python3-matplotlib python3-pytest
  # GPU backend (optional): not a Debian package. The CUDA toolkit with
  # cuBLAS and NCCL comes from NVIDIA (here preinstalled at /usr/local/cuda,
  # CUDA_HOME); -DPIPEDREAM_ENABLE_CUDA=AUTO uses it when CMake finds it.
)
if [ "$with_torch" = 1 ]; then
  packages+=(python3-torch)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
