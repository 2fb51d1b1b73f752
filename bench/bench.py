"""Times pipedream's compiled forward against onnxruntime, one thread each.

    python bench.py [--warmup N] [--reps N] [--rtol R] NAME:MODEL.onnx:BUNDLE_DIR ...

Runs in the benchmark venv (bench/run.sh makes it: onnxruntime + numpy from
the package index). For each model it loads BUNDLE_DIR/program.so with
ctypes and calls `pipedream_main(void **buffers)` as docs/Bundle.md
describes (inputs, weights, outputs in bundle.json order; caller-owned,
dense, row-major, 64-byte aligned), and opens an onnxruntime
InferenceSession on MODEL.onnx with one intra-op and one inter-op thread,
sequential execution. Both get the same random inputs; their outputs must
agree before anything is timed. Then, after a warm-up, the two alternate
call by call (ours, ort, ours, ort...) so that machine noise hits both
alike, and the medians are quoted: ratio = ours / onnxruntime, < 1 means
ours is faster.
"""

import os

# Before numpy, onnxruntime or any OpenBLAS is loaded: one thread everywhere
# (pipedream's kernels read PIPEDREAM_NUM_THREADS; --threads changes all).
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "PIPEDREAM_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse
import ctypes
import json
import platform
import statistics
import sys
import time

import numpy as np
import onnxruntime as ort

from common import cpu_name

DTYPES = {"f32": np.float32, "f64": np.float64, "f16": np.float16,
          "i64": np.int64, "i32": np.int32, "i8": np.int8, "u8": np.uint8,
          "i1": np.bool_}


def aligned_empty(shape, dtype, align=64):
    """A C-contiguous array whose data starts on an `align`-byte boundary."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.empty(nbytes + align, dtype=np.uint8)
    start = (-raw.ctypes.data) % align
    arr = raw[start:start + nbytes].view(dtype).reshape(shape)
    assert arr.ctypes.data % align == 0 and arr.flags.c_contiguous
    return arr


class Bundle:
    """program.so + weights.bin of a pipedream bundle, called through ctypes."""

    def __init__(self, directory, function="main"):
        with open(os.path.join(directory, "bundle.json")) as f:
            manifest = json.load(f)
        fn = next(f for f in manifest["functions"] if f["name"] == function)
        with open(os.path.join(directory, manifest["weights_file"]), "rb") as f:
            blob = f.read()
        # weights.bin is 64-byte aligned at every offset: keep it in one
        # aligned buffer and point into it.
        self.weights_blob = aligned_empty((max(len(blob), 1),), np.uint8)
        self.weights_blob[:len(blob)] = np.frombuffer(blob, np.uint8)
        weights = {w["name"]: w for w in manifest["weights"]}
        self.inputs, self.outputs, arrays = {}, {}, []
        for b in fn["buffers"]:
            shape, dtype = tuple(b["shape"]), DTYPES[b["dtype"]]
            if b["role"] == "weight":
                w = weights[b["name"]]
                count = int(np.prod(shape, dtype=np.int64))
                arr = np.frombuffer(self.weights_blob, dtype, count,
                                    w["offset"]).reshape(shape)
                assert arr.ctypes.data % 64 == 0
            else:
                arr = aligned_empty(shape, dtype)
                {"input": self.inputs, "output": self.outputs}[b["role"]][b["name"]] = arr
            arrays.append(arr)
        self.arrays = arrays  # keeps every buffer alive
        self.pointers = (ctypes.c_void_p * len(arrays))(
            *[a.ctypes.data for a in arrays])
        self.lib = ctypes.CDLL(os.path.abspath(
            os.path.join(directory, manifest["library"])))
        self.entry = getattr(self.lib, fn["symbol"])
        self.entry.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
        self.entry.restype = None
        # pipedream's CPU kernels (lib/Target/CPU/Kernels/Kernels.h), in every
        # program.so of this pipedream; absent in older bundles.
        self.kernel = None
        if hasattr(self.lib, "pipedream_cpu_gemm_kernel"):
            self.lib.pipedream_cpu_gemm_kernel.restype = ctypes.c_char_p
            self.lib.pipedream_cpu_set_num_threads.argtypes = [ctypes.c_int32]
            self.kernel = self.lib.pipedream_cpu_gemm_kernel().decode()
        self.register_constant_weights(
            [a for a, b in zip(arrays, fn["buffers"]) if b["role"] == "weight"])

    def register_constant_weights(self, weights):
        """Tells program.so's GEMM which buffers are constant weights
        (pipedream_cpu_gemm_constants, Kernels.h), as an embedder of
        program.so that never writes them may: their packed copies are
        made once (where a copy pays) and reused by every call, as
        onnxruntime prepacks its constant initializers. The runtime's
        forward-only calls declare nothing (their caller may write the
        weights between calls). PIPEDREAM_GEMM_PACK_WEIGHTS=0 turns it off
        here."""
        hook = getattr(self.lib, "pipedream_cpu_gemm_constants", None)
        if (hook is None or not weights or
                os.environ.get("PIPEDREAM_GEMM_PACK_WEIGHTS") == "0"):
            return
        pointers = (ctypes.c_void_p * len(weights))(
            *[w.ctypes.data for w in weights])
        sizes = (ctypes.c_int64 * len(weights))(*[w.nbytes for w in weights])
        hook.restype = None
        hook(pointers, sizes, ctypes.c_int32(len(weights)))

    def set_threads(self, n):
        if self.kernel is not None:
            self.lib.pipedream_cpu_set_num_threads(n)

    def uses_kernel(self):
        """Whether the code calls pd_cpu_sgemm (not just links it)."""
        with open(self.lib._name, "rb") as f:
            return b"pd_cpu_sgemm" in f.read() and self.kernel is not None

    def run(self):
        self.entry(self.pointers)


class OrtModel:
    """onnxruntime on one thread, inputs and outputs bound to fixed arrays."""

    def __init__(self, path, inputs, outputs, threads=1):
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = ort.InferenceSession(
            path, so, providers=["CPUExecutionProvider"])
        self.binding = self.session.io_binding()
        for name, arr in inputs.items():
            self.binding.bind_cpu_input(name, arr)
        self.outputs = {}
        for o in self.session.get_outputs():
            ref = outputs[o.name]
            arr = np.empty_like(ref)
            self.binding.bind_output(o.name, "cpu", 0, arr.dtype, arr.shape,
                                     arr.ctypes.data)
            self.outputs[o.name] = arr

    def run(self):
        self.session.run_with_iobinding(self.binding)


def fill_inputs(bundle, rng, int_high):
    for name, arr in bundle.inputs.items():
        if np.issubdtype(arr.dtype, np.integer):
            arr[...] = rng.integers(0, int_high, arr.shape, dtype=arr.dtype)
        elif arr.dtype == np.bool_:
            arr[...] = rng.integers(0, 2, arr.shape).astype(np.bool_)
        else:
            arr[...] = rng.standard_normal(arr.shape).astype(arr.dtype)


CPU_TIMES = {}


def timed(fn):
    """Wall ms of fn(); its CPU time of this thread goes to CPU_TIMES[fn]:
    on one thread each (the default) it is what the call costs even when
    other jobs share the cores (a shared machine preempts wall time)."""
    c0 = time.thread_time_ns()
    t0 = time.perf_counter_ns()
    fn()
    t1 = time.perf_counter_ns()
    CPU_TIMES.setdefault(fn, []).append((time.thread_time_ns() - c0) / 1e6)
    return (t1 - t0) / 1e6


def openblas_info():
    """The OpenBLAS that program.so links (Debian's), if it is loaded."""
    try:
        lib = ctypes.CDLL("libopenblas.so.0", mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
    except OSError:
        return None
    lib.openblas_get_corename.restype = ctypes.c_char_p
    lib.openblas_get_config.restype = ctypes.c_char_p
    return (lib.openblas_get_corename().decode(),
            lib.openblas_get_config().decode().strip(),
            lib.openblas_get_num_threads())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+", metavar="NAME:MODEL.onnx:BUNDLE_DIR")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--reps", type=int, default=30,
                        help="interleaved timed calls per side")
    parser.add_argument("--threads", type=int, default=1,
                        help="threads of both sides (pipedream's kernels, "
                             "onnxruntime's intra-op pool, OpenBLAS)")
    parser.add_argument("--rtol", type=float, default=1e-3)
    parser.add_argument("--atol", type=float, default=1e-4,
                        help="absolute tolerance, relative to max |ort output|")
    parser.add_argument("--int-high", type=int, default=64,
                        help="integer inputs (token ids) are drawn from [0, this)")
    args = parser.parse_args()
    if args.threads != 1:
        # OpenBLAS reads its variables when it is loaded (with the first
        # program.so that needs it, after this).
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                    "PIPEDREAM_NUM_THREADS"):
            os.environ[var] = str(args.threads)

    print(f"machine: {cpu_name()}, {os.cpu_count()} logical CPUs; "
          f"python {platform.python_version()}, numpy {np.__version__}, "
          f"onnxruntime {ort.__version__}")
    print(f"threads: OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']} "
          f"OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']} pipedream "
          f"{args.threads}; onnxruntime intra_op={args.threads} inter_op=1 "
          f"sequential, ORT_ENABLE_ALL")
    print(f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset: OpenBLAS picks)')}")
    print(f"warm-up {args.warmup}, then {args.reps} interleaved calls each; "
          f"medians quoted\n")

    rng = np.random.default_rng(0)
    rows, failed = [], False
    for spec in args.models:
        name, onnx_path, bundle_dir = spec.split(":")
        ours = Bundle(bundle_dir)
        ours.set_threads(args.threads)
        fill_inputs(ours, rng, args.int_high)
        theirs = OrtModel(onnx_path, ours.inputs, ours.outputs, args.threads)
        blas = openblas_info()
        uses_blas = "libopenblas" in open(
            os.path.join(bundle_dir, "program.so"), "rb").read().decode("latin-1")

        ours.run()
        theirs.run()
        ok = True
        for oname, mine in ours.outputs.items():
            ref = theirs.outputs[oname]
            atol = args.atol * max(float(np.abs(ref).max()), 1e-30)
            diff = np.abs(mine.astype(np.float64) - ref.astype(np.float64))
            good = np.allclose(mine, ref, rtol=args.rtol, atol=atol)
            print(f"[{name}] check {oname} {list(ref.shape)}: max |diff| "
                  f"{diff.max():.3g} (max |ref| {np.abs(ref).max():.3g}) "
                  f"{'ok' if good else 'MISMATCH'}")
            ok &= good
        if not ok:
            failed = True
            print(f"[{name}] outputs disagree: not timed")
            continue

        for _ in range(args.warmup):
            ours.run()
            theirs.run()
        t_ours, t_ort = [], []
        for i in range(args.reps):
            # Alternate who goes first, so neither always runs on a cache
            # the other just warmed or trashed.
            if i % 2 == 0:
                t_ours.append(timed(ours.run))
                t_ort.append(timed(theirs.run))
            else:
                t_ort.append(timed(theirs.run))
                t_ours.append(timed(ours.run))
        m_ours, m_ort = statistics.median(t_ours), statistics.median(t_ort)
        c_ours = statistics.median(CPU_TIMES.pop(ours.run))
        c_ort = statistics.median(CPU_TIMES.pop(theirs.run))
        kernels = []
        if ours.uses_kernel():
            kernels.append(f"pipedream {ours.kernel}")
        if uses_blas and blas:
            kernels.append(f"OpenBLAS {blas[0]}")
        kernel = " + ".join(kernels) or "MLIR-vectorized/loops only"
        print(f"[{name}] ours {m_ours:.3f} ms (min {min(t_ours):.3f}), "
              f"onnxruntime {m_ort:.3f} ms (min {min(t_ort):.3f}), "
              f"ratio {m_ours / m_ort:.3f}; thread CPU time {c_ours:.3f} / "
              f"{c_ort:.3f} ms, ratio {c_ours / c_ort:.3f}  [program.so: {kernel}]\n")
        rows.append((name, m_ours, m_ort, m_ours / m_ort, c_ours / c_ort, kernel))

    blas = openblas_info()
    if blas:
        print(f"OpenBLAS in effect: core {blas[0]}, {blas[2]} thread(s); {blas[1]}")
    else:
        print("OpenBLAS: not loaded (no program.so calls BLAS)")
    print()
    print(f"{'model':<28} {'ours ms':>10} {'ort ms':>10} {'ours/ort':>9} "
          f"{'cpu ratio':>9}  GEMMs")
    for name, a, b, r, c, kernel in rows:
        print(f"{name:<28} {a:>10.3f} {b:>10.3f} {r:>9.3f} {c:>9.3f}  {kernel}")
    if args.threads == 1:
        print("(cpu ratio: medians of the calling thread's CPU time, robust "
              "to other jobs on a shared machine; one thread each)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
