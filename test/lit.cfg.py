# -*- Python -*-
# lit configuration for pipedream's regression tests.

import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "PIPEDREAM"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["CMakeLists.txt", "README.md", "lit.cfg.py", "lit.site.cfg.py", "Inputs"]

config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.pipedream_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%python", config.python3))
config.substitutions.append(("%src_root", config.pipedream_src_root))
# Directory of the built tools, for scripts that drive several of them.
config.substitutions.append(("%pipedream_bin", config.pipedream_tools_dir))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
# Tests neither read nor fill the user's object cache (issue 16: a test
# that passed thanks to a cached object would prove nothing).
config.environment["PIPEDREAM_NO_CACHE"] = "1"
llvm_config.use_default_substitutions()
# `not` and `count` at the start of a RUN line come from PATH.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
# ONNX's backend test data (Debian's libonnx-testdata).
if os.path.isdir("/usr/share/libonnx-testdata/data/node"):
    config.available_features.add("onnx-testdata")

# The Python package (python/), built into build/python when pybind11 is
# found: test/Python runs its pytest suite.
import glob

config.substitutions.append(
    ("%pipedream_python_dir", os.path.join(config.pipedream_obj_root, "python")))
if glob.glob(os.path.join(config.pipedream_obj_root, "python", "pipedream",
                          "_pipedream*.so")):
    config.available_features.add("python-package")

# A sanitized build (scripts/sanitize.sh): its runtime library is
# instrumented, so a program built against it (test/Examples/embed.test)
# links with clang and the sanitizer runtimes too.
_cache = os.path.join(config.pipedream_obj_root, "CMakeCache.txt")
_sanitized = False
if os.path.exists(_cache):
    with open(_cache) as _f:
        _sanitized = any(
            line.strip() in ("PIPEDREAM_SANITIZE:BOOL=ON",
                             "PIPEDREAM_ENABLE_FUZZER:BOOL=ON")
            for line in _f)
# ASan's shadow memory and allocator inflate resident memory: tests that
# compare it with report.json say `UNSUPPORTED: sanitized`.
if _sanitized:
    config.available_features.add("sanitized")
config.substitutions.append(
    ("%embed_cmake_flags",
     "-DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 "
     "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined"
     if _sanitized else ""))

# The CUDA toolkit (ptxas, fatbinary, libdevice) for the tests that compile
# CUDA kernels to a binary (--target cuda); no GPU needed.
_cuda_home = os.environ.get("CUDA_HOME") or "/usr/local/cuda"
if os.path.exists(os.path.join(_cuda_home, "bin", "ptxas")):
    config.available_features.add("cuda-toolkit")
    config.environment["CUDA_HOME"] = _cuda_home

# Open MPI for pipedream-run --ranks K: mpirun on PATH and a pipedream-run
# built with the MPI transport (it says so in --help).
import shutil
import subprocess

_run = os.path.join(config.pipedream_tools_dir, "pipedream-run")
if shutil.which("mpirun") and os.path.exists(_run):
    try:
        _help = subprocess.run([_run, "--help"], capture_output=True, text=True,
                               timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        _help = ""
    if "MPI transport available" in _help:
        config.available_features.add("mpi")

# Test hosts made of network namespaces (Training/two-hosts-mpi.test): root
# and `ip netns add` working (not in most unprivileged containers).
if "mpi" in config.available_features and shutil.which("ip") and \
        hasattr(os, "geteuid") and os.geteuid() == 0:
    _probe = "pd-lit-probe-%d" % os.getpid()
    try:
        if subprocess.run(["ip", "netns", "add", _probe], capture_output=True,
                          timeout=30).returncode == 0:
            subprocess.run(["ip", "netns", "del", _probe], capture_output=True,
                           timeout=30)
            config.available_features.add("netns")
    except (OSError, subprocess.SubprocessError):
        pass

# strace that can follow a process tree (not where ptrace is forbidden):
# tests that count a tool's system calls.
if shutil.which("strace"):
    try:
        if subprocess.run(["strace", "-f", "-qq", "-o", os.devnull, "true"],
                          capture_output=True, timeout=30).returncode == 0:
            config.available_features.add("strace")
    except (OSError, subprocess.SubprocessError):
        pass

# A usable CUDA device: the GPU runtime's device tests (built with
# -DPIPEDREAM_ENABLE_CUDA) exit 0 listing their tests, 77 without a device.
_gpu_probe = os.path.join(config.pipedream_obj_root, "runtime", "test",
                          "pipedream-gpu-device-tests")
if os.path.exists(_gpu_probe):
    try:
        if subprocess.run([_gpu_probe, "--gtest_list_tests"],
                          capture_output=True, timeout=60).returncode == 0:
            config.available_features.add("cuda-device")
    except (OSError, subprocess.SubprocessError):
        pass

tool_dirs = [config.pipedream_tools_dir, config.llvm_tools_dir]
tools = [
    "pipedream-opt",
    ToolSubst("pipedream-translate", unresolved="ignore"),
    ToolSubst("pipedream-compile", unresolved="ignore"),
    ToolSubst("pipedream-run", unresolved="ignore"),
    # The tool with the $PIPEDREAM_TEST_* fault hooks (tools/pipedream-run/
    # TestHooks.cpp), for the crash, hang and kill tests.
    ToolSubst("pipedream-run-test", unresolved="ignore"),
    ToolSubst("pipedream-profile", unresolved="ignore"),
]
llvm_config.add_tool_substitutions(tools, tool_dirs)
