#!/usr/bin/python3
"""The cost of the run-time checks (docs/Runtime.md "Run-time checks").

    /usr/bin/python3 bench/run_time_checks.py --bin BUILD/bin [--work DIR]
        [--calls 200] [--steps 30] [--repeats 5] [--training-only]
        [--dim 256] [--seq 128]

1. Index checks, inference: each model compiled with and without
   `--no-run-time-checks` (which drops the min/max pass and the status
   write; indices are clamped either way), `pipedream_main` called through
   ctypes with valid token ids; median call time of `--calls` calls (after
   warm-up), the with/without ratio:
   - `embed`: a Gather alone (vocabulary 32000 x 64, 64 x 128 ids): the
     worst case, nothing but the checked op;
   - `gpt256`: models/export_torch.py's GPT block, batch 8 x 128 tokens,
     d_model 256 (token and position embeddings).
2. Index checks, training: the GPT (`--dim`, `--seq`; Adam, 2
   micro-batches of 8) as single-rank training, a 2-stage 1F1B pipeline
   and a 2-stage PipeDream (asynchronous) pipeline over the threads
   transport, each compiled with and without `--no-run-time-checks`:
   `pipedream-run --steps N`'s mean step time, median of `--repeats`
   runs, with/without ratio. Checked covers the forward Gather's and the
   backward scatter's min/max passes, the status reads and, for
   PipeDream, the copy of the rank's weights and Adam state that undoes
   a failed step (a bundle without checks skips it).
3. `--check-finite` on / off, single rank and PipeDream (the loss and
   every gradient, or the updated weights, scanned once per step).

The runs of one repeat go variant after variant, so that the load of a
shared machine drifts over all of them alike (ABAB, not AA..BB).

One thread (OPENBLAS_NUM_THREADS=1). Not a test: these machines are shared
and noisy; the medians and ratios are what to quote.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import ctypes  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
DTYPES = {"f32": np.float32, "f64": np.float64, "i64": np.int64,
          "i32": np.int32, "i1": np.bool_, "u8": np.uint8, "i8": np.int8}


def aligned_empty(shape, dtype, align=64):
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.empty(nbytes + align, dtype=np.uint8)
    start = (-raw.ctypes.data) % align
    return raw[start:start + nbytes].view(dtype).reshape(shape)


class Bundle:
    """An inference bundle's `main` through ctypes (docs/Bundle.md ABI)."""

    def __init__(self, directory):
        manifest = json.load(open(os.path.join(directory, "bundle.json")))
        fn = next(f for f in manifest["functions"] if f["name"] == "main")
        blob = open(os.path.join(directory, manifest["weights_file"]),
                    "rb").read()
        self.blob = aligned_empty((max(len(blob), 1),), np.uint8)
        self.blob[:len(blob)] = np.frombuffer(blob, np.uint8)
        weights = {w["name"]: w for w in manifest["weights"]}
        self.inputs, arrays = {}, []
        for b in fn["buffers"]:
            shape, dtype = tuple(b["shape"]), DTYPES[b["dtype"]]
            if b["role"] == "weight":
                count = int(np.prod(shape, dtype=np.int64))
                arr = np.frombuffer(self.blob, dtype, count,
                                    weights[b["name"]]["offset"]).reshape(shape)
            else:
                arr = aligned_empty(shape, dtype)
                if b["role"] == "input":
                    self.inputs[b["name"]] = arr
            arrays.append(arr)
        self.arrays = arrays
        self.pointers = (ctypes.c_void_p * len(arrays))(
            *[a.ctypes.data for a in arrays])
        self.lib = ctypes.CDLL(os.path.abspath(
            os.path.join(directory, manifest["library"])))
        self.entry = getattr(self.lib, fn["symbol"])
        self.entry.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
        # --no-run-time-checks bundles have no status record.
        self.status = getattr(self.lib, "pipedream_run_time_status", None)
        if self.status:
            self.status.restype = ctypes.POINTER(ctypes.c_int64)

    def run(self):
        self.entry(self.pointers)

    def failed(self):
        return bool(self.status) and self.status()[0] != 0


def embed_model(path):
    rng = np.random.default_rng(0)
    table = rng.standard_normal((32000, 64)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "idx"], ["y"], axis=0,
                          name="/emb/Gather")],
        "embed",
        [helper.make_tensor_value_info("idx", TensorProto.INT64, [64, 128])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, 128, 64])],
        [numpy_helper.from_array(table, "table")])
    save_model(graph, path)


def save_model(graph, path):
    """Writes an onnx.helper graph to `path` as a model of opset 13, IR
    version 7."""
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    onnx.save(model, path)


def compile_bundle(args, model, out, extra):
    """pipedream-compile (from --bin) MODEL -o OUT with the flags `extra`."""
    subprocess.run([os.path.join(args.bin, "pipedream-compile"), model, "-o",
                    out] + extra, check=True)


def time_inference(directory, calls, vocab):
    bundle = Bundle(directory)
    rng = np.random.default_rng(1)
    for arr in bundle.inputs.values():
        arr[...] = rng.integers(0, vocab, arr.shape, dtype=arr.dtype)
    for _ in range(5):
        bundle.run()
    times = []
    for _ in range(calls):
        t0 = time.perf_counter_ns()
        bundle.run()
        times.append((time.perf_counter_ns() - t0) / 1e6)
    assert not bundle.failed(), "a check failed on valid ids"
    return statistics.median(times)


def time_training(args, directory, data, flags):
    """One run's mean step time (ms)."""
    out = subprocess.run(
        [os.path.join(args.bin, "pipedream-run"), directory, "--data",
         data, "--steps", str(args.steps)] + flags,
        check=True, capture_output=True, text=True).stdout
    return float(re.search(r"mean step time ([0-9.]+) ms", out).group(1))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    parser.add_argument("--work")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--training-only", action="store_true")
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--seq", type=int, default=128)
    args = parser.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="pd-checks-")
    os.makedirs(work, exist_ok=True)

    embed = os.path.join(work, "embed.onnx")
    embed_model(embed)
    gpt = os.path.join(work, "gpt256.onnx")
    subprocess.run([sys.executable, os.path.join(ROOT, "models",
                                                 "export_torch.py"), "gpt",
                    gpt, "--batch", "8", "--dim", str(args.dim), "--heads",
                    "4", "--seq", str(args.seq)], check=True)

    for name, model, vocab in (() if args.training_only else
                               (("embed", embed, 32000),
                                ("gpt", gpt, 64))):
        if name == "embed":
            print("index checks, inference (median of %d calls, ms):" %
                  args.calls)
        row = {}
        for variant, extra in (("checked", []),
                               ("unchecked", ["--no-run-time-checks"])):
            out = os.path.join(work, "%s-%s" % (name, variant))
            compile_bundle(args, model, out, ["--inference"] + extra)
            row[variant] = time_inference(out, args.calls, vocab)
        print("  %-7s checked %8.3f  unchecked %8.3f  ratio %.3f" %
              (name, row["checked"], row["unchecked"],
               row["checked"] / row["unchecked"]))

    data = os.path.join(work, "gpt-data.npz")
    rng = np.random.default_rng(2)
    np.savez(data, idx=rng.integers(0, 64, (64, args.seq)).astype(np.int64),
             labels=rng.integers(0, 64, (64, args.seq)).astype(np.int64))
    common = ["--loss", "cross-entropy", "--optimizer", "adam",
              "--microbatches", "2", "--batch-size", "16"]
    layouts = (("single rank", []),
               ("1f1b K=2", ["--stages", "2", "--schedule", "1f1b"]),
               ("pipedream K=2", ["--stages", "2", "--schedule",
                                  "pipedream"]))
    runs = {}
    for name, extra in layouts:
        flags = ["--transport", "threads"] if extra else []
        for variant, checks in (("checked", []),
                                ("unchecked", ["--no-run-time-checks"])):
            out = os.path.join(work, "gpt-train-%s-%s" % (
                name.split()[0], variant))
            compile_bundle(args, gpt, out, common + extra + checks)
            runs[(name, variant)] = (out, flags)
            if variant == "checked" and name != "1f1b K=2":
                runs[(name, "check-finite")] = (out,
                                                flags + ["--check-finite"])
    times = {key: [] for key in runs}
    for _ in range(args.repeats):
        for key, (out, flags) in runs.items():
            times[key].append(time_training(args, out, data, flags))
    median = {key: statistics.median(v) for key, v in times.items()}
    print("training gpt d=%d T=%d (median of %d runs of %d steps, mean "
          "step ms):" % (args.dim, args.seq, args.repeats, args.steps))
    for name, _ in layouts:
        checked = median[(name, "checked")]
        unchecked = median[(name, "unchecked")]
        print("  %-14s index checks:   checked %8.3f  unchecked %8.3f  "
              "ratio %.3f" % (name, checked, unchecked, checked / unchecked))
        if (name, "check-finite") in median:
            finite = median[(name, "check-finite")]
            print("  %-14s --check-finite: on      %8.3f  off       %8.3f  "
                  "ratio %.3f" % (name, finite, checked, finite / checked))

if __name__ == "__main__":
    main()
