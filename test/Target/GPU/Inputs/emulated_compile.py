#!/usr/bin/python3
"""`pipedream-compile` whose program.so runs the CUDA lowering on the CPU.

    emulated_compile.py --install DIR PIPEDREAM_BIN [FLAG...]
    emulated_compile.py PIPEDREAM_BIN MODEL -o OUT [--dtype f32|bf16] [flags...]
    emulated_compile.py --install-cuda DIR PIPEDREAM_BIN [FLAG...]

Compiles the bundle with the real pipedream-compile (CPU target: bundle.json
and weights.bin), then replaces its program.so with the CUDA lowering of the
same model run on the host: `pipedream-opt --pipedream-cuda-emulation`
(kernels as loops, pd_gpu_gemm_f32 as loops of its documented semantics,
cuda-test-emulate-on-host), translated, compiled and linked with the LLVM
tools (LLVM 22's mlir-translate, llc, ld.lld). pipedream-run and the
PyTorch comparisons then check the CUDA lowering's numerics without a GPU.

`--install DIR` makes DIR a stand-in for PIPEDREAM_BIN: DIR/pipedream-compile
runs this script (with any flags given after PIPEDREAM_BIN appended, e.g.
`--dtype bf16`), DIR/pipedream-run links to the real one (see
emulation.test). `--install-cuda DIR` instead makes DIR/pipedream-compile the
real one with `--target cuda` added, for the same comparisons on a GPU
(device.test).
"""

import os
import re
import shutil
import subprocess
import sys


def install(directory, pipedream_bin, cuda=False, extra=()):
    os.makedirs(directory, exist_ok=True)
    script = os.path.join(directory, "pipedream-compile")
    flags = "".join(" " + flag for flag in extra)
    with open(script, "w") as f:
        if cuda:
            f.write(f"#!/bin/sh\nexec {pipedream_bin}/pipedream-compile "
                    f"\"$@\" --target cuda{flags}\n")
        else:
            f.write(f"#!/bin/sh\nexec {sys.executable} "
                    f"{os.path.abspath(__file__)} {pipedream_bin} \"$@\""
                    f"{flags}\n")
    os.chmod(script, 0o755)
    run = os.path.join(directory, "pipedream-run")
    if os.path.lexists(run):
        os.remove(run)
    os.symlink(os.path.join(pipedream_bin, "pipedream-run"), run)


def run(cmd):
    """Runs cmd; on failure exits with its status (its stderr, e.g. the
    compiler's one-line error, is the message)."""
    result = subprocess.run(cmd)
    if result.returncode != 0:
        sys.exit(result.returncode)


def tool(name):
    # LLVM 22's, not an older one first on PATH (mlir-translate's output
    # is LLVM 22 IR).
    for candidate in (shutil.which(name + "-22"),
                      os.path.join("/usr/lib/llvm-22/bin", name),
                      shutil.which(name)):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    sys.exit(f"error: {name} (LLVM 22) not found")


def main():
    if sys.argv[1] in ("--install", "--install-cuda"):
        install(sys.argv[2], sys.argv[3], cuda=sys.argv[1] == "--install-cuda",
                extra=sys.argv[4:])
        return
    pipedream_bin = sys.argv[1]
    args = sys.argv[2:]
    # --dtype selects the CUDA lowering's GEMM precision; the CPU compile
    # below (bundle.json, weights.bin) does not take it.
    dtype = "f32"
    if "--dtype" in args:
        i = args.index("--dtype")
        dtype = args[i + 1]
        del args[i:i + 2]
    out = args[args.index("-o") + 1]
    compile_ = os.path.join(pipedream_bin, "pipedream-compile")
    run([compile_] + args)

    # The same compile stopped at linalg, without the model's attributes
    # (the driver strips them before code generation).
    linalg_args = list(args)
    linalg_args[linalg_args.index("-o") + 1] = out + ".linalg.mlir"
    run([compile_] + linalg_args + ["--emit", "linalg"])
    text = open(out + ".linalg.mlir").read()
    text = re.sub(r", nn\.param = dense(_resource)?<[^>]*> : tensor<[^>]*>", "",
                  text)
    text = re.sub(r"nn\.param = dense(_resource)?<[^>]*> : tensor<[^>]*>, ", "",
                  text)
    text = re.sub(r" \{nn\.[^{}]*\}", "", text)
    open(out + ".linalg.mlir", "w").write(text)

    run([os.path.join(pipedream_bin, "pipedream-opt"), out + ".linalg.mlir",
         f"--pipedream-cuda-emulation=dtype={dtype}", "-o",
         out + ".llvm.mlir"])
    run([tool("mlir-translate"), "--mlir-to-llvmir", out + ".llvm.mlir", "-o",
         out + ".ll"])
    run([tool("llc"), "-O2", "-filetype=obj", "-relocation-model=pic",
         out + ".ll", "-o", out + ".o"])
    # ld.so for __tls_get_addr: the run-time status record is thread-local
    # (cuda-define-run-time-status, as in every program.so).
    libs = [p for p in ("/lib/x86_64-linux-gnu/libm.so.6",
                        "/lib/x86_64-linux-gnu/libc.so.6",
                        "/lib64/ld-linux-x86-64.so.2") if os.path.exists(p)]
    # Soft-float helpers for f16/bf16 conversions (as the CPU bundles link
    # them; on the GPU these are instructions).
    clang = shutil.which("clang-22") or shutil.which("clang")
    if clang:
        builtins = subprocess.run(
            [clang, "--rtlib=compiler-rt", "--print-libgcc-file-name"],
            capture_output=True, text=True).stdout.strip()
        if os.path.exists(builtins):
            libs.append(builtins)
    run([tool("ld.lld"), "-shared", "-z", "defs", out + ".o", "-o",
         os.path.join(out, "program.so")] + libs)


if __name__ == "__main__":
    main()
