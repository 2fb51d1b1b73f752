#!/usr/bin/python3
"""Training step time: pipedream's compiled step vs PyTorch, one thread each.

    /opt/venv/bin/python bench/train.py --bin BUILD/bin [--models gpt256,mlp2048,cnn,cnn32]
        [--steps 10] [--optimizer adam] [--microbatches 1] [--work DIR]

Run it with the Python whose torch is the peer: a torch 2.x from pip (a
venv, e.g. /opt/venv: its own BLAS/oneDNN, what a user would pick), or
Debian's /usr/bin/python3 (torch 1.13 on Debian's reference BLAS here,
a weak peer). The header names the CPU, both sides' GEMM kernels and
torch's BLAS.

Per model: export with models/export_torch.py (dynamic batch), compile a
training bundle (`pipedream-compile --loss cross-entropy --optimizer ...`),
then time one optimizer step (M micro-batch steps + the update) of

- pipedream: the bundle's `train_microbatch` / `update` called through
  ctypes exactly as docs/Bundle.md's training loop says (buffers set up
  once, the micro-batch rows copied in, `updates` swapped by pointer),
  with the weights declared constant to program.so's GEMM during the
  micro-batches as the runtime's trainer does (packed once per step;
  before 2026-12-05 this script packed them at every call);
- PyTorch (the interpreter's): zero_grad, M forward/backward of
  F.cross_entropy / M, optimizer.step(), on the same module in train mode;

both with one thread (torch.set_num_threads(1), OPENBLAS_NUM_THREADS=1,
PIPEDREAM_NUM_THREADS=1), alternating step by step so that machine noise
hits both alike. Prints the median wall and thread-CPU step times of each
over `--steps` timed steps (after two warm-up steps) and the ratios
pipedream / torch. Not a test: these machines are shared and noisy; quote
medians and ratios.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("PIPEDREAM_NUM_THREADS", "1")

import argparse  # noqa: E402
import ctypes  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import re  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "models"))
import export_torch  # noqa: E402
from common import cpu_name  # noqa: E402

MODELS = {
    # name: (export_torch model, micro-batch, build kwargs)
    "gpt256": ("gpt", 8, dict(dim=256, heads=4, seq=128)),
    "mlp2048": ("mlp", 256, dict(hidden=2048)),
    "cnn": ("cnn", 32, {}),
    # 3 Conv-BatchNorm-ReLU layers on 32x32 images (export_torch's cnn with
    # layers=3; the network is size-agnostic, the example is resized below).
    "cnn32": ("cnn", 32, dict(layers=3)),
}
# Input shapes other than export_torch's example (per sample).
IMAGE_SHAPES = {"cnn32": (3, 32, 32)}
DTYPES = {"f32": np.float32, "f64": np.float64, "i64": np.int64,
          "i32": np.int32, "i1": np.bool_, "u8": np.uint8, "i8": np.int8}


def aligned_empty(shape, dtype, align=64):
    dtype = np.dtype(dtype)
    count = int(np.prod(shape)) if shape else 1
    raw = np.empty(count * dtype.itemsize + align, dtype=np.uint8)
    start = (-raw.ctypes.data) % align
    return raw[start:start + count * dtype.itemsize].view(dtype).reshape(shape)


class CompiledTrainer:
    """docs/Bundle.md's training step over ctypes, buffers allocated once."""

    def __init__(self, bundle):
        with open(os.path.join(bundle, "bundle.json")) as f:
            self.manifest = json.load(f)
        self.lib = ctypes.CDLL(os.path.join(bundle, self.manifest["library"]))
        raw = np.fromfile(os.path.join(bundle, self.manifest["weights_file"]),
                          dtype=np.uint8)
        self.persistent = {}
        for w in self.manifest["weights"]:
            arr = aligned_empty(tuple(w["shape"]), DTYPES[w["dtype"]])
            arr.reshape(-1).view(np.uint8)[:] = raw[w["offset"]:w["offset"] + w["bytes"]]
            self.persistent[w["name"]] = arr
        self.training = self.manifest["training"]
        self.calls = {}
        for fn in self.manifest["functions"]:
            for b in fn["buffers"]:
                if b["role"] in ("grad", "state") and b["name"] not in self.persistent:
                    self.persistent[b["name"]] = aligned_empty(
                        tuple(b["shape"]), DTYPES[b["dtype"]])
                    self.persistent[b["name"]][...] = 0
        for fn in self.manifest["functions"]:
            inputs, outputs = {}, []
            for b in fn["buffers"]:
                if b["role"] == "input":
                    inputs[b["name"]] = aligned_empty(tuple(b["shape"]),
                                                      DTYPES[b["dtype"]])
                elif b["role"] == "output":
                    outputs.append((b, aligned_empty(tuple(b["shape"]),
                                                     DTYPES[b["dtype"]])))
            self.calls[fn["name"]] = (fn, inputs, outputs)

    def _run(self, name):
        fn, inputs, outputs = self.calls[name]
        arrays = []
        for b in fn["buffers"]:
            if b["role"] == "input":
                arrays.append(inputs[b["name"]])
            elif b["role"] != "output":
                arrays.append(self.persistent[b["name"]])
        # "in_place" outputs: the value stays in the updated buffer.
        arrays += [self.persistent[b["updates"]] if b.get("in_place") else a
                   for b, a in outputs]
        ptrs = (ctypes.c_void_p * len(arrays))(*[a.ctypes.data for a in arrays])
        getattr(self.lib, fn["symbol"])(ptrs)
        loss = None
        for i, (b, arr) in enumerate(outputs):
            if b.get("in_place"):
                continue
            if b.get("updates"):
                old = self.persistent[b["updates"]]
                self.persistent[b["updates"]] = arr
                outputs[i] = (b, old)
            elif b["name"] == "loss":
                loss = float(arr)
        return loss

    def declare_constant_weights(self, declare):
        """What the runtime's trainer does around a step's micro-batches
        (runtime/lib/ConstantWeights.cpp): the weights do not change until
        the update, so they are declared constant to program.so's GEMM,
        which packs each once per step instead of once per call; released
        (count 0) before the update writes them.
        PIPEDREAM_GEMM_PACK_WEIGHTS=0 turns it off here as there."""
        hook = getattr(self.lib, "pipedream_cpu_gemm_constants", None)
        if hook is None or os.environ.get("PIPEDREAM_GEMM_PACK_WEIGHTS") == "0":
            return
        # As the runtime: one micro-batch would not reuse the copies.
        if self.training["microbatches"] < 2:
            return
        hook.restype = None
        if not declare:
            hook(None, None, ctypes.c_int32(0))
            return
        fn, _, _ = self.calls[self.training["step_function"]]
        weights = [self.persistent[b["name"]] for b in fn["buffers"]
                   if b["role"] == "weight"]
        pointers = (ctypes.c_void_p * len(weights))(
            *[w.ctypes.data for w in weights])
        sizes = (ctypes.c_int64 * len(weights))(*[w.nbytes for w in weights])
        hook(pointers, sizes, ctypes.c_int32(len(weights)))

    def step(self, data):
        t = self.training
        m, b = t["microbatches"], t["microbatch_size"]
        # The runtime zeroes accumulated gradients; a step of one
        # micro-batch writes them ("gradients": "written").
        if t.get("gradients", "accumulated") == "accumulated":
            for name, arr in self.persistent.items():
                if name.startswith("grad:"):
                    arr[...] = 0
        _, inputs, _ = self.calls[t["step_function"]]
        total = 0.0
        self.declare_constant_weights(True)
        for i in range(m):
            for name, arr in data.items():
                inputs[name][...] = arr[i * b:(i + 1) * b]
            total += self._run(t["step_function"])
        self.declare_constant_weights(False)
        self._run(t["update_function"])
        return total / m


def torch_blas():
    """torch's BLAS and oneDNN as its build configuration names them."""
    config = torch.__config__.show()
    blas = re.search(r"BLAS_INFO=([^,\s]+)", config)
    parts = [f"BLAS {blas.group(1) if blas else 'unknown'}"]
    if torch.backends.mkldnn.is_available():
        parts.append("oneDNN" + (f" {torch.backends.mkldnn.version()}"
                                 if hasattr(torch.backends.mkldnn, "version")
                                 else ""))
    if hasattr(torch.backends, "cpu") and hasattr(torch.backends.cpu,
                                                  "get_cpu_capability"):
        parts.append(f"CPU capability {torch.backends.cpu.get_cpu_capability()}")
    return ", ".join(parts)


def gemm_kernel(lib):
    """The GEMM kernel of a pipedream program.so (Kernels.h)."""
    if not hasattr(lib, "pipedream_cpu_gemm_kernel"):
        return "no pipedream kernel (an older program.so)"
    lib.pipedream_cpu_gemm_kernel.restype = ctypes.c_char_p
    lib.pipedream_cpu_num_threads.restype = ctypes.c_int32
    return (f"pipedream {lib.pipedream_cpu_gemm_kernel().decode()}, "
            f"{lib.pipedream_cpu_num_threads()} thread(s)")


def export(model, example, path, in_name, out_name):
    kwargs = {}
    if int(torch.__version__.split(".")[0]) >= 2:
        # The TorchScript exporter, as Debian's torch 1.13 uses (torch 2.x
        # defaults to the dynamo one, whose graphs differ).
        kwargs["dynamo"] = False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (example,), path,
                          input_names=[in_name], output_names=[out_name],
                          opset_version=17,
                          dynamic_axes={in_name: {0: "batch"},
                                        out_name: {0: "batch"}},
                          training=torch.onnx.TrainingMode.PRESERVE,
                          do_constant_folding=True, **kwargs)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--models", default="gpt256,mlp2048,cnn,cnn32")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--optimizer", default="adam")
    p.add_argument("--microbatches", type=int, default=1)
    p.add_argument("--work")
    args = p.parse_args()
    torch.set_num_threads(1)
    work = args.work or tempfile.mkdtemp(prefix="bench-train-")
    os.makedirs(work, exist_ok=True)
    print(f"machine: {cpu_name()}, {os.cpu_count()} logical CPUs; python "
          f"{platform.python_version()}, torch {torch.__version__} "
          f"({torch_blas()}), {torch.get_num_threads()} thread(s)")
    print(f"{'model':10} {'pipedream ms':>13} {'torch ms':>10} {'ratio':>7} "
          f"{'cpu ratio':>9}  pipedream GEMMs")
    for name in args.models.split(","):
        kind, mb, kwargs = MODELS[name]
        torch.manual_seed(0)
        model, example, in_name, out_name = export_torch.build(kind, mb, **kwargs)
        if name in IMAGE_SHAPES:
            example = torch.randn((mb,) + IMAGE_SHAPES[name])
        model.eval()
        onnx_path = os.path.join(work, f"{name}.onnx")
        export(model, example, onnx_path, in_name, out_name)
        bundle = os.path.join(work, f"{name}.bundle")
        subprocess.run([os.path.join(args.bin, "pipedream-compile"), onnx_path,
                        "-o", bundle, "--loss", "cross-entropy",
                        "--optimizer", args.optimizer,
                        "--microbatches", str(args.microbatches),
                        "--batch-size", str(args.microbatches * mb)],
                       check=True)
        rng = np.random.default_rng(0)
        n = args.microbatches * mb
        if kind == "gpt":
            x = rng.integers(0, 64, size=(n,) + tuple(example.shape[1:]))
            labels = rng.integers(0, 64, size=x.shape)
        else:
            x = rng.standard_normal((n,) + tuple(example.shape[1:])).astype(np.float32)
            labels = rng.integers(0, 10, size=(n,))
        data = {in_name: x, "labels": labels.astype(np.int64)}

        trainer = CompiledTrainer(bundle)
        model.train()
        opt = (torch.optim.Adam(model.parameters(), lr=1e-3)
               if args.optimizer == "adam" else
               torch.optim.SGD(model.parameters(), lr=0.01))
        tx, ty = torch.from_numpy(x), torch.from_numpy(labels.astype(np.int64))

        def torch_step():
            opt.zero_grad()
            for j in range(args.microbatches):
                sl = slice(j * mb, (j + 1) * mb)
                out = model(tx[sl])
                loss = F.cross_entropy(out.reshape(-1, out.shape[-1]),
                                       ty[sl].reshape(-1)) / args.microbatches
                loss.backward()
            opt.step()

        # Alternating, step by step: noise from other jobs hits both alike.
        times = {"ours": [], "torch": []}
        for i in range(args.steps + 2):
            for side, fn in (("ours", lambda: trainer.step(data)),
                             ("torch", torch_step))[::1 if i % 2 else -1]:
                c0, t0 = time.thread_time(), time.perf_counter()
                fn()
                if i >= 2:
                    times[side].append((time.perf_counter() - t0,
                                        time.thread_time() - c0))
        med = {side: (statistics.median(t for t, _ in v) * 1e3,
                      statistics.median(c for _, c in v) * 1e3)
               for side, v in times.items()}
        (a, ca), (b, cb) = med["ours"], med["torch"]
        print(f"{name:10} {a:13.2f} {b:10.2f} {a / b:7.2f} {ca / cb:9.2f}  "
              f"{gemm_kernel(trainer.lib)}", flush=True)
    print("(ratio: wall-time medians; cpu ratio: the calling thread's CPU "
          "time, robust to other jobs on a shared machine)")


if __name__ == "__main__":
    main()
