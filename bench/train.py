#!/usr/bin/python3
"""Training step time: pipedream's compiled step vs PyTorch, one thread each.

    /usr/bin/python3 bench/train.py --bin BUILD/bin [--models gpt256,mlp2048,cnn,cnn32]
        [--steps 10] [--optimizer adam] [--microbatches 1] [--work DIR]

Per model: export with models/export_torch.py (dynamic batch), compile a
training bundle (`pipedream-compile --loss cross-entropy --optimizer ...`),
then time one optimizer step (M micro-batch steps + the update) of

- pipedream: the bundle's `train_microbatch` / `update` called through
  ctypes exactly as docs/Bundle.md's training loop says (buffers set up
  once, the micro-batch rows copied in, `updates` swapped by pointer);
- PyTorch 1.13 (Debian's python3-torch): zero_grad, M forward/backward of
  F.cross_entropy / M, optimizer.step(), on the same module in train mode;

both with one thread (torch.set_num_threads(1), OPENBLAS_NUM_THREADS=1).
Prints the median step time of each over `--steps` timed steps (after two
warm-up steps) and the ratio pipedream / torch. Not a test: these machines
are shared and noisy; quote medians and ratios.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import ctypes  # noqa: E402
import json  # noqa: E402
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
        arrays += [a for _, a in outputs]
        ptrs = (ctypes.c_void_p * len(arrays))(*[a.ctypes.data for a in arrays])
        getattr(self.lib, fn["symbol"])(ptrs)
        loss = None
        for i, (b, arr) in enumerate(outputs):
            if b.get("updates"):
                old = self.persistent[b["updates"]]
                self.persistent[b["updates"]] = arr
                outputs[i] = (b, old)
            elif b["name"] == "loss":
                loss = float(arr)
        return loss

    def step(self, data):
        t = self.training
        m, b = t["microbatches"], t["microbatch_size"]
        for name, arr in self.persistent.items():
            if name.startswith("grad:"):
                arr[...] = 0
        _, inputs, _ = self.calls[t["step_function"]]
        total = 0.0
        for i in range(m):
            for name, arr in data.items():
                inputs[name][...] = arr[i * b:(i + 1) * b]
            total += self._run(t["step_function"])
        self._run(t["update_function"])
        return total / m


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
    print(f"{'model':10} {'pipedream ms':>13} {'torch ms':>10} {'ratio':>7}")
    for name in args.models.split(","):
        kind, mb, kwargs = MODELS[name]
        torch.manual_seed(0)
        model, example, in_name, out_name = export_torch.build(kind, mb, **kwargs)
        if name in IMAGE_SHAPES:
            example = torch.randn((mb,) + IMAGE_SHAPES[name])
        model.eval()
        onnx_path = os.path.join(work, f"{name}.onnx")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(model, (example,), onnx_path,
                              input_names=[in_name], output_names=[out_name],
                              opset_version=17,
                              dynamic_axes={in_name: {0: "batch"},
                                            out_name: {0: "batch"}},
                              training=torch.onnx.TrainingMode.PRESERVE,
                              do_constant_folding=True)
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
        ours = []
        for i in range(args.steps + 2):
            start = time.perf_counter()
            trainer.step(data)
            if i >= 2:
                ours.append(time.perf_counter() - start)

        model.train()
        opt = (torch.optim.Adam(model.parameters(), lr=1e-3)
               if args.optimizer == "adam" else
               torch.optim.SGD(model.parameters(), lr=0.01))
        tx, ty = torch.from_numpy(x), torch.from_numpy(labels.astype(np.int64))
        theirs = []
        for i in range(args.steps + 2):
            start = time.perf_counter()
            opt.zero_grad()
            for j in range(args.microbatches):
                sl = slice(j * mb, (j + 1) * mb)
                out = model(tx[sl])
                loss = F.cross_entropy(out.reshape(-1, out.shape[-1]),
                                       ty[sl].reshape(-1)) / args.microbatches
                loss.backward()
            opt.step()
            if i >= 2:
                theirs.append(time.perf_counter() - start)
        a, b = statistics.median(ours) * 1e3, statistics.median(theirs) * 1e3
        print(f"{name:10} {a:13.2f} {b:10.2f} {a / b:7.2f}", flush=True)


if __name__ == "__main__":
    main()
