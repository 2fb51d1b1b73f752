#!/usr/bin/python3
"""Trains a torch-exported model with pipedream and with PyTorch; compares.

    torch_compare.py --bin BUILD/bin --model mlp|gpt|cnn
        --optimizer sgd|momentum|adam|adamw [--microbatches M] [--steps N]
        [--microbatch-size B] [--lr F] [--runner run|python] [--work DIR]
        [--export-batch N | --onnx FILE] [--stages K --schedule S]
        [--lr-schedule constant|linear|cosine --warmup-steps W
         --total-steps T] [--clip-grad-norm MAX] [--inference]

The model comes from models/export_torch.py (same seed, so the ONNX file and
the torch module start from the same weights; exported with a dynamic batch
axis, or with `--export-batch N` a static batch of N samples, which
pipedream-compile re-specializes to the micro-batch), or `--onnx FILE`, a
model exported elsewhere from export_torch.build's module with the same
seed (models/export_dynamo.py: torch 2's dynamo exporter). Both sides train N steps on the same seeded data, each step one
batch of M x B samples in M micro-batches with gradient accumulation (the
step loss is the mean of the micro-batch losses), with torch.optim's
optimizer. pipedream's side is `pipedream-compile` + `pipedream-run --data
--steps --loss-log --save-onnx` (`--runner run`, the default) or a direct
ctypes driver of the bundle's functions that follows docs/Bundle.md
(`--runner python`, a cross-check of the runtime's training loop). With
`--stages K --schedule S` pipedream trains a K-stage pipeline bundle
(`pipedream-run --transport threads`) instead of a single-rank one.
`--lr-schedule` trains both sides with a learning-rate schedule: torch's
LambdaLR over the factor written out below from transformers'
get_{constant,linear,cosine}_schedule_with_warmup (in float64; 0 from step
T on), stepped after every optimizer step.
`--clip-grad-norm MAX` clips both sides' gradients before each step
(torch.nn.utils.clip_grad_norm_ on torch's side) and prints how many of
torch's steps had a norm above MAX (`clipped S of N steps`), so that a test
can tell that the clipping was active; with `--runner run` it also compares
the `grad_norm` column of pipedream-run's --loss-log (the norm before
clipping) with the norm clip_grad_norm_ returned, step by step (1e-4).
`--inference` compares only the forward pass instead: an inference bundle
compiled with `--input-shape` at the micro-batch size against the torch
module in eval mode (logits within 1e-4 relative to the largest).

Compared, with tolerance 1e-4 relative: every step's loss, and every
trained weight (read back from the --save-onnx model; an initializer is
matched to its torch parameter by name, or by its initial value when the
exporter renamed it, e.g. a Linear weight folded into a transposed MatMul
initializer) plus BatchNorm running statistics. Prints `OK ...` or
`MISMATCH ...` lines and exits non-zero on any mismatch.
"""

import argparse
import csv
import ctypes
import json
import math
import os
import subprocess
import sys
import tempfile
import warnings

import numpy as np
import onnx
from onnx import numpy_helper
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "models"))
import export_torch  # noqa: E402

RTOL = 1e-4


def make_data(name, model_example, rows, rng):
    if name == "gpt":
        seq = model_example.shape[1]
        x = rng.integers(0, 64, size=(rows, seq)).astype(np.int64)
        labels = rng.integers(0, 64, size=(rows, seq)).astype(np.int64)
    else:
        shape = (rows,) + tuple(model_example.shape[1:])
        x = rng.standard_normal(shape).astype(np.float32)
        labels = rng.integers(0, 10, size=(rows,)).astype(np.int64)
    return x, labels


def torch_optimizer(kind, params, lr, momentum, weight_decay, eps):
    if kind == "sgd":
        return torch.optim.SGD(params, lr=lr, weight_decay=weight_decay)
    if kind == "momentum":
        return torch.optim.SGD(params, lr=lr, momentum=momentum,
                               weight_decay=weight_decay)
    if kind == "adam":
        return torch.optim.Adam(params, lr=lr, weight_decay=weight_decay,
                                eps=eps)
    if kind == "adamw":
        return torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay,
                                 eps=eps)
    raise SystemExit(f"unknown optimizer {kind}")


def lr_factor(kind, warmup, total, step):
    """The learning-rate factor of optimizer step `step` (0-based), as
    transformers' get_*_schedule_with_warmup; from `total` on, linear and
    cosine stay at 0 (transformers' cosine would rise again)."""
    if step < warmup:
        return step / max(1, warmup)
    if kind == "constant":
        return 1.0
    if kind == "linear":
        return max(0.0, (total - step) / max(1, total - warmup))
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return 0.5 * (1.0 + math.cos(math.pi * progress))


def torch_train(model, x, labels, args):
    model.train()
    opt = torch_optimizer(args.optimizer, model.parameters(), args.lr,
                          args.momentum, args.weight_decay, args.eps)
    scheduler = None
    # Other comparisons (pipeline_compare.py) reuse this loop without it.
    if getattr(args, "lr_schedule", None):
        scheduler = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda s: lr_factor(args.lr_schedule, args.warmup_steps,
                                     args.total_steps, s))
    n = args.microbatches * args.microbatch_size
    rows = x.shape[0]
    losses = []
    args.clipped_steps = 0  # this run's steps whose norm exceeded the bound
    args.norms = []  # clip_grad_norm_'s norm (before clipping) per step
    for step in range(args.steps):
        idx = [(step * n + i) % rows for i in range(n)]
        xb_all = torch.from_numpy(x[idx])
        yb_all = torch.from_numpy(labels[idx])
        opt.zero_grad()
        total = 0.0
        for m in range(args.microbatches):
            sl = slice(m * args.microbatch_size, (m + 1) * args.microbatch_size)
            out = model(xb_all[sl])
            loss = F.cross_entropy(out.reshape(-1, out.shape[-1]),
                                   yb_all[sl].reshape(-1))
            (loss / args.microbatches).backward()
            total += loss.item()
        if getattr(args, "clip_grad_norm", None):
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(),
                                                  args.clip_grad_norm)
            args.clipped_steps += int(norm > args.clip_grad_norm)
            args.norms.append(float(norm))
        opt.step()
        if scheduler:
            scheduler.step()
        losses.append(total / args.microbatches)
    return losses


def aligned_empty(shape, dtype, align=64):
    dtype = np.dtype(dtype)
    count = int(np.prod(shape)) if shape else 1
    raw = np.empty(count * dtype.itemsize + align, dtype=np.uint8)
    start = (-raw.ctypes.data) % align
    return raw[start:start + count * dtype.itemsize].view(dtype).reshape(shape)


DTYPES = {"f32": np.float32, "f64": np.float64, "i64": np.int64,
          "i32": np.int32, "i1": np.bool_, "u8": np.uint8, "i8": np.int8}


def python_runner(bundle, x_name, x, labels, steps):
    """Runs the training bundle's functions as docs/Bundle.md describes."""
    with open(os.path.join(bundle, "bundle.json")) as f:
        manifest = json.load(f)
    lib = ctypes.CDLL(os.path.join(bundle, manifest["library"]))
    raw = np.fromfile(os.path.join(bundle, manifest["weights_file"]),
                      dtype=np.uint8)
    persistent = {}
    for w in manifest["weights"]:
        arr = aligned_empty(tuple(w["shape"]), DTYPES[w["dtype"]])
        arr.reshape(-1).view(np.uint8)[:] = raw[w["offset"]:w["offset"] + w["bytes"]]
        persistent[w["name"]] = arr
    functions = {f["name"]: f for f in manifest["functions"]}
    for f in functions.values():
        for b in f["buffers"]:
            if b["role"] in ("grad", "state") and b["name"] not in persistent:
                persistent[b["name"]] = np.zeros(tuple(b["shape"]),
                                                 DTYPES[b["dtype"]])
    training = manifest["training"]

    def run(name, inputs):
        fn = functions[name]
        arrays, outputs = [], []
        for b in fn["buffers"]:
            if b["role"] == "output":
                # "in_place": the function leaves the value in the buffer
                # of the argument it updates; the pointer is unused.
                arr = (persistent[b["updates"]] if b.get("in_place") else
                       aligned_empty(tuple(b["shape"]), DTYPES[b["dtype"]]))
                outputs.append((b, arr))
            elif b["role"] == "input":
                arr = aligned_empty(tuple(b["shape"]), DTYPES[b["dtype"]])
                arr[...] = inputs[b["name"]]
            else:
                arr = persistent[b["name"]]
            arrays.append(arr)
        arrays += [a for _, a in outputs]
        ptrs = (ctypes.c_void_p * len(arrays))(*[a.ctypes.data for a in arrays])
        getattr(lib, fn["symbol"])(ptrs)
        result = {}
        for b, arr in outputs:
            if b.get("updates"):
                persistent[b["updates"]] = arr
            result[b["name"]] = arr
        return result

    m, b = training["microbatches"], training["microbatch_size"]
    n = m * b
    rows = x.shape[0]
    losses = []
    for step in range(steps):
        idx = [(step * n + i) % rows for i in range(n)]
        for name, arr in persistent.items():
            if name.startswith("grad:"):
                arr[...] = 0
        total = 0.0
        for i in range(m):
            sl = idx[i * b:(i + 1) * b]
            out = run(training["step_function"],
                      {x_name: x[sl], training["labels"]: labels[sl]})
            total += float(out["loss"])
        run(training["update_function"], {})
        losses.append(total / m)
    weights = {w["name"]: persistent[w["name"]] for w in manifest["weights"]}
    return losses, weights


def compare_inference(args, model, example, in_name, out_name, onnx_path,
                      work):
    rng = np.random.default_rng(7)
    x, _ = make_data(args.model, example, args.microbatch_size, rng)
    bundle = os.path.join(work, "bundle")
    shape = "x".join(str(d) for d in x.shape)
    subprocess.run([os.path.join(args.bin, "pipedream-compile"), onnx_path,
                    "-o", bundle, "--inference", "--input-shape",
                    f"{in_name}={shape}"], check=True)
    inputs = os.path.join(work, "inputs.npz")
    outputs = os.path.join(work, "outputs.npz")
    np.savez(inputs, **{in_name: x})
    subprocess.run([os.path.join(args.bin, "pipedream-run"), bundle,
                    "--inputs", inputs, "--outputs", outputs], check=True,
                   stdout=subprocess.DEVNULL)
    got = np.load(outputs)[out_name]
    with torch.no_grad():
        ref = model(torch.from_numpy(x)).numpy()
    tag = f"{args.model} inference batch={args.microbatch_size}"
    if got.shape != ref.shape:
        print(f"MISMATCH {tag}: output shape {got.shape}, torch {ref.shape}")
        return 1
    scale = max(float(np.max(np.abs(ref))), 1e-12)
    rel = float(np.max(np.abs(got.astype(np.float64) - ref))) / scale
    if rel > RTOL:
        print(f"MISMATCH {tag}: outputs differ by {rel:.3g}")
        return 1
    print(f"OK {tag}: worst relative error {rel:.2g} over {got.size} outputs")
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--model", required=True, choices=["mlp", "gpt", "cnn"])
    p.add_argument("--optimizer", required=True,
                   choices=["sgd", "momentum", "adam", "adamw"])
    p.add_argument("--microbatches", type=int, default=1)
    p.add_argument("--microbatch-size", type=int, default=4)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--lr", type=float, default=None)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--weight-decay", type=float, default=0.0)
    p.add_argument("--eps", type=float, default=1e-8,
                   help="Adam epsilon. Parameters whose gradient is zero "
                        "in exact arithmetic (a bias before BatchNorm, the "
                        "key bias of attention) get rounding noise as "
                        "gradient, which Adam normalizes to steps of about "
                        "lr with the default 1e-8: compare such models "
                        "with a larger eps")
    p.add_argument("--runner", choices=["run", "python"], default="run")
    p.add_argument("--export-batch", type=int, default=None,
                   help="export with this static batch (no dynamic axes)")
    p.add_argument("--onnx", default=None,
                   help="train this export of the model instead of "
                        "exporting it here")
    p.add_argument("--inference", action="store_true")
    p.add_argument("--stages", type=int, default=None)
    p.add_argument("--schedule", default="1f1b")
    p.add_argument("--lr-schedule", choices=["constant", "linear", "cosine"])
    p.add_argument("--warmup-steps", type=int, default=0)
    p.add_argument("--total-steps", type=int, default=0)
    p.add_argument("--clip-grad-norm", type=float, default=None)
    p.add_argument("--eval", action="store_true",
                   help="compile with --evaluate and run with --eval-data "
                        "--eval-every 1 on held-out data")
    p.add_argument("--work")
    args = p.parse_args()
    if args.lr is None:
        args.lr = 0.001 if args.optimizer in ("adam", "adamw") else 0.05

    work = args.work or tempfile.mkdtemp(prefix="torch-compare-")
    os.makedirs(work, exist_ok=True)
    torch.manual_seed(0)
    model, example, in_name, out_name = export_torch.build(
        args.model, args.export_batch or args.microbatch_size)
    model.eval()
    onnx_path = os.path.join(work, "model.onnx")
    dynamic = None
    if not args.export_batch:
        dynamic = {in_name: {0: "batch"}, out_name: {0: "batch"}}
    if args.onnx:
        onnx_path = args.onnx
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(model, (example,), onnx_path,
                              input_names=[in_name], output_names=[out_name],
                              opset_version=17,
                              dynamic_axes=dynamic,
                              training=torch.onnx.TrainingMode.PRESERVE,
                              do_constant_folding=True)
    if args.inference:
        return compare_inference(args, model, example, in_name, out_name,
                                 onnx_path, work)
    # Initializer -> (torch tensor getter, transposed?) by name or value.
    initial = {i.name: numpy_helper.to_array(i)
               for i in onnx.load(onnx_path).graph.initializer}
    state = dict(model.state_dict())
    mapping = {}
    for name, value in initial.items():
        if value.dtype.kind != "f":
            continue  # shape constants, masks
        if name in state:
            mapping[name] = (name, False)
            continue
        hits = [(k, t) for k, v in state.items() for t in (False, True)
                if v.dim() == 2 and tuple((v.T if t else v).shape) == value.shape
                and np.array_equal((v.T if t else v).numpy(), value)]
        if not hits:
            # A static export folds a parameter read at constant indices
            # (the positional Embedding of arange(t)) into a new
            # initializer: the leading rows of the parameter, whose gradient
            # it receives, so it trains like them.
            hits = [(k, "prefix") for k, v in state.items()
                    if v.is_floating_point() and v.numel() > value.size
                    and np.array_equal(
                        v.numpy().reshape(-1)[:value.size],
                        value.reshape(-1))]
        if len(hits) != 1:
            print(f"MISMATCH cannot map initializer {name} to a torch tensor")
            return 1
        mapping[name] = hits[0]

    rng = np.random.default_rng(7)
    rows = args.microbatches * args.microbatch_size * args.steps + 3
    x, labels = make_data(args.model, example, rows, rng)
    torch_losses = torch_train(model, x, labels, args)
    final = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    if args.eval:
        # Held-out data, 3 micro-batches; torch's loss in eval mode (and in
        # train mode, which must differ where the model has BatchNorm or
        # Dropout, so that the check tells the modes apart).
        eval_x, eval_labels = make_data(args.model, example,
                                        3 * args.microbatch_size,
                                        np.random.default_rng(8))
        state = {k: v.clone() for k, v in model.state_dict().items()}

        def torch_eval_loss(train_mode):
            model.train(train_mode)
            total = 0.0
            with torch.no_grad():
                for m in range(3):
                    sl = slice(m * args.microbatch_size,
                               (m + 1) * args.microbatch_size)
                    out = model(torch.from_numpy(eval_x[sl]))
                    total += F.cross_entropy(
                        out.reshape(-1, out.shape[-1]),
                        torch.from_numpy(eval_labels[sl]).reshape(-1)).item()
            model.load_state_dict(state)
            return total / 3
        torch_eval = torch_eval_loss(False)
        torch_train_mode = torch_eval_loss(True)

    bundle = os.path.join(work, "bundle")
    cmd = [os.path.join(args.bin, "pipedream-compile"), onnx_path, "-o", bundle,
           "--loss", "cross-entropy", "--optimizer", args.optimizer,
           "--lr", repr(args.lr), "--microbatches", str(args.microbatches),
           "--batch-size", str(args.microbatches * args.microbatch_size)]
    if args.optimizer == "momentum":
        cmd += ["--momentum", repr(args.momentum)]
    if args.weight_decay:
        cmd += ["--weight-decay", repr(args.weight_decay)]
    if args.stages:
        if args.runner != "run":
            print("error: a pipeline bundle runs with --runner run")
            return 1
        cmd += ["--stages", str(args.stages), "--schedule", args.schedule]
    if args.optimizer in ("adam", "adamw"):
        cmd += ["--eps", repr(args.eps)]
    if args.lr_schedule:
        cmd += ["--lr-schedule", args.lr_schedule,
                "--warmup-steps", str(args.warmup_steps)]
        if args.lr_schedule != "constant":
            cmd += ["--total-steps", str(args.total_steps)]
    if args.clip_grad_norm:
        cmd += ["--clip-grad-norm", repr(args.clip_grad_norm)]
        print(f"clipped {getattr(args, 'clipped_steps', 0)} of {args.steps} "
              f"steps")
    if args.eval:
        cmd += ["--evaluate"]
    subprocess.run(cmd, check=True)

    if args.runner == "python":
        ours, weights = python_runner(bundle, in_name, x, labels, args.steps)
        our_norms = None
    else:
        data = os.path.join(work, "data.npz")
        np.savez(data, **{in_name: x, "labels": labels})
        log = os.path.join(work, "loss.csv")
        trained = os.path.join(work, "trained.onnx")
        run = [os.path.join(args.bin, "pipedream-run"), bundle,
               "--data", data, "--steps", str(args.steps),
               "--loss-log", log, "--save-onnx", trained]
        if args.stages:
            run += ["--transport", "threads"]
        if args.eval:
            eval_data = os.path.join(work, "eval.npz")
            np.savez(eval_data, **{in_name: eval_x, "labels": eval_labels})
            run += ["--eval-data", eval_data, "--eval-every", "1"]
        subprocess.run(run, check=True, stdout=subprocess.DEVNULL)
        with open(log) as f:
            rows_ = list(csv.DictReader(f))
        ours = [float(r["loss"]) for r in rows_]
        our_evals = [float(r["eval_loss"]) for r in rows_
                     if r.get("eval_loss") is not None]
        # With clipping pipedream-run logs each step's gradient norm.
        our_norms = [float(r["grad_norm"]) for r in rows_
                     if r.get("grad_norm") is not None]
        trained_model = onnx.load(trained)
        onnx.checker.check_model(trained_model, full_check=True)
        weights = {i.name: numpy_helper.to_array(i)
                   for i in trained_model.graph.initializer}

    bad = 0
    tag = f"{args.model} {args.optimizer} M={args.microbatches}"
    if args.export_batch:
        tag += f" static-batch={args.export_batch}"
    if args.stages:
        tag += f" {args.schedule} K={args.stages}"
    if args.lr_schedule:
        tag += (f" lr-schedule={args.lr_schedule} W={args.warmup_steps}"
                f" T={args.total_steps}")
    if args.clip_grad_norm:
        tag += f" clip-grad-norm={args.clip_grad_norm}"
    if len(ours) != len(torch_losses):
        print(f"MISMATCH {tag}: {len(ours)} losses, torch has {len(torch_losses)}")
        return 1
    worst_loss = 0.0
    for s, (a, b) in enumerate(zip(ours, torch_losses)):
        rel = abs(a - b) / max(abs(b), 1e-12)
        worst_loss = max(worst_loss, rel)
        if rel > RTOL:
            print(f"MISMATCH {tag}: step {s + 1} loss {a!r} vs torch {b!r}")
            bad += 1
    if args.clip_grad_norm and our_norms is not None:
        if len(our_norms) != len(args.norms):
            print(f"MISMATCH {tag}: {len(our_norms)} gradient norms logged, "
                  f"torch has {len(args.norms)}")
            bad += 1
        worst_norm = max((abs(a - b) / b for a, b in zip(our_norms, args.norms)),
                         default=0.0)
        if worst_norm > RTOL:
            print(f"MISMATCH {tag}: gradient norms {our_norms} vs torch "
                  f"{args.norms}")
            bad += 1
        print(f"grad_norm: {' '.join(f'{v:.6f}' for v in our_norms)}; torch "
              f"{' '.join(f'{v:.6f}' for v in args.norms)}; worst relative "
              f"error {worst_norm:.2g}")
    if args.eval:
        # Every step evaluated (--eval-every 1), which must not change the
        # training (the losses above match torch's, which never evaluates);
        # the last one's weights are torch's final ones.
        rel = (abs(our_evals[-1] - torch_eval) / abs(torch_eval)
               if len(our_evals) == args.steps else float("inf"))
        differs = abs(torch_train_mode - torch_eval) / abs(torch_eval)
        modal = any(isinstance(m, (torch.nn.modules.batchnorm._BatchNorm,
                                   torch.nn.Dropout))
                    for m in model.modules())
        if rel > RTOL or (modal and differs < 1e-3):
            print(f"MISMATCH {tag}: eval losses {our_evals} vs torch eval "
                  f"mode {torch_eval!r} (train mode {torch_train_mode!r})")
            bad += 1
        print(f"eval loss {our_evals[-1]:.6f}; torch eval mode "
              f"{torch_eval:.6f}, train mode {torch_train_mode:.6f}; relative "
              f"error {rel:.2g}")
    worst_weight, worst_name = 0.0, ""
    for name, (key, transposed) in mapping.items():
        if name not in weights:
            print(f"MISMATCH {tag}: trained model lacks {name}")
            bad += 1
            continue
        got = weights[name]
        if transposed == "prefix":
            ref = final[key].reshape(-1)[:got.size].reshape(got.shape)
        else:
            ref = final[key].T if transposed else final[key]
        scale = max(float(np.max(np.abs(ref))), 1e-12)
        rel = float(np.max(np.abs(got.astype(np.float64) - ref))) / scale
        if rel > worst_weight:
            worst_weight, worst_name = rel, name
        if rel > RTOL:
            print(f"MISMATCH {tag}: weight {name} differs by {rel:.3g} "
                  f"(relative to its largest entry)")
            bad += 1
    changed = sum(not np.array_equal(initial[n], weights.get(n, initial[n]))
                  for n in mapping)
    if changed == 0:
        print(f"MISMATCH {tag}: no weight changed during training")
        bad += 1
    if not bad:
        print(f"OK {tag}: losses {' '.join(f'{v:.6f}' for v in ours)}; "
              f"worst relative error loss {worst_loss:.2g}, weights "
              f"{worst_weight:.2g} ({worst_name}); {changed}/{len(mapping)} "
              f"tensors changed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
