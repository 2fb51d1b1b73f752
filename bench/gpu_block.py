#!/usr/bin/env python3
"""GPU training step of a GPT-like block: pipedream (cuda bundle) vs PyTorch eager.

    python3 bench/gpu_block.py --bin BUILD/bin --work DIR [--dim 1024]
        [--heads 16] [--seq 512] [--batch 8] [--steps 10] [--dtype f32]
        [--json RESULTS.json] [--timeout 300] [--bundle B --data D.npz]

The model is models/export_torch.py's GPT (token + position embedding, one
pre-LN block: causal multi-head attention and a 4x GELU MLP, final LN, LM
head over 64 tokens), trained with cross-entropy and SGD, batch x seq
tokens per step.

- pipedream: exports the model to ONNX (opset 17), compiles a training
  bundle with `pipedream-compile --target cuda --gpu-arch sm_90`, writes
  the data as .npz and runs `pipedream-run BUNDLE --data DATA --steps N`,
  whose per-step lines give the step time (steps 1-2 are warm-up);
- PyTorch eager on the same GPU (when torch with CUDA is importable):
  zero_grad, forward, F.cross_entropy, backward, SGD step, timed with
  torch.cuda.synchronize(); TF32 off for f32 (pipedream's GEMMs are f32 with
  f32 accumulation unless PIPEDREAM_ALLOW_TF32=1), autocast for bf16.

With `--bundle B --data D.npz` (the GPU kit, scripts/gpu-kit.sh: a machine
without MLIR) pipedream's side runs that compiled bundle instead of exporting
and compiling, and needs neither torch nor numpy.

Reported: median step ms, model TFLOP/s and the fraction of the H200's dense
peak. Model FLOPs per step = 3 x forward (backward = 2 x forward), forward =
batch * seq * (24 d^2 + 4 seq d + 2 d vocab) (attention counted without the
causal half, the usual MFU convention). Peaks (NVIDIA H200 SXM datasheet,
dense, no sparsity): FP32 67 TFLOP/s (CUDA cores), TF32 495, BF16 989.

Every subprocess has a timeout; anything missing (the compiler's cuda
target, torch, a GPU) is reported and skipped, never waited on.
"""

import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
VOCAB = 64
# Dense peaks, TFLOP/s, H200 SXM (NVIDIA datasheet).
PEAKS = {"fp32": 67.0, "tf32": 494.7, "bf16": 989.4}


def model_flops(batch, seq, dim):
    forward = batch * seq * (24 * dim * dim + 4 * seq * dim + 2 * dim * VOCAB)
    return 3 * forward


def build_model(torch, dim, heads, seq):
    """export_torch's GPT with device-aware positions (its own forward makes
    them on the CPU)."""
    sys.path.insert(0, os.path.join(ROOT, "models"))
    import export_torch

    torch.manual_seed(0)
    model, _, in_name, out_name = export_torch.build(
        "gpt", 1, dim=dim, heads=heads, seq=seq)

    def forward(idx):
        t = idx.size(1)
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = model.tok(idx) + model.pos(pos).unsqueeze(0)
        x = model.block(x)
        for block in model.more:
            x = block(x)
        return model.head(model.ln_f(x))

    model.forward = forward
    return model, in_name, out_name


def run(cmd, timeout, log):
    """Runs cmd, appends its output to `log`; (returncode, output)."""
    start = time.time()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True,
                           timeout=timeout)
        out, rc = p.stdout, p.returncode
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or "") if isinstance(e.stdout, str) else ""
        out += f"\n[timed out after {timeout} s]\n"
        rc = 124
    with open(log, "a") as f:
        f.write(f"$ {' '.join(cmd)}\n{out}\n[rc {rc}, "
                f"{time.time() - start:.1f} s]\n")
    return rc, out


def bench_pipedream(args, torch, model, in_name, flops, result):
    work = args.work
    if args.bundle:
        # A bundle compiled elsewhere (the GPU kit, scripts/gpu-kit.sh):
        # neither torch nor numpy is needed for pipedream's side.
        run_bundle(args, args.bundle, args.data, flops, result,
                   os.path.join(work, "pipedream.log"))
        return
    onnx_path = os.path.join(work, "gpt_block.onnx")
    example = torch.randint(0, VOCAB, (args.batch, args.seq))
    model.eval()
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (example,), onnx_path,
                          input_names=[in_name], output_names=["logits"],
                          opset_version=17,
                          training=torch.onnx.TrainingMode.PRESERVE,
                          do_constant_folding=True)
    bundle = os.path.join(work, "gpt_block.bundle")
    log = os.path.join(work, "pipedream.log")
    if os.path.exists(log):
        os.remove(log)
    compile_cmd = [os.path.join(args.bin, "pipedream-compile"), onnx_path,
                   "-o", bundle, "--target", args.target,
                   "--loss", "cross-entropy", "--optimizer", "sgd",
                   "--batch-size", str(args.batch)]
    if args.target == "cuda":
        compile_cmd += ["--gpu-arch", "sm_90"]
    if args.dtype != "f32":
        compile_cmd += ["--dtype", args.dtype]
    start = time.time()
    rc, out = run(compile_cmd, args.timeout, log)
    result["pipedream_compile_s"] = round(time.time() - start, 1)
    if rc != 0:
        last = out.strip().splitlines()[-1] if out.strip() else f"rc {rc}"
        result["pipedream"] = f"SKIPPED: pipedream-compile failed: {last}"
        return
    import numpy as np
    rng = np.random.default_rng(0)
    x = rng.integers(0, VOCAB, size=(args.batch, args.seq)).astype(np.int64)
    labels = rng.integers(0, VOCAB, size=(args.batch, args.seq)).astype(np.int64)
    data = os.path.join(work, "data.npz")
    np.savez(data, **{in_name: x, "labels": labels})
    run_bundle(args, bundle, data, flops, result, log)


def run_bundle(args, bundle, data, flops, result, log):
    """pipedream-run BUNDLE --data DATA for steps + 2 steps; the median
    step time of the steps after the first two into result."""
    steps = args.steps + 2
    rc, out = run([os.path.join(args.bin, "pipedream-run"), bundle,
                   "--data", data, "--steps", str(steps)], args.timeout, log)
    rates = [float(m.group(1)) for m in
             re.finditer(r"^step \d+/\d+ loss \S+ samples/s (\S+)", out, re.M)]
    if rc != 0 or len(rates) < steps:
        last = out.strip().splitlines()[-1] if out.strip() else f"rc {rc}"
        result["pipedream"] = f"FAILED: pipedream-run: {last}"
        return
    step_s = [args.batch / r for r in rates[2:] if r > 0]
    ms = statistics.median(step_s) * 1e3
    peak = PEAKS["bf16" if args.dtype == "bf16" else
                 "tf32" if os.environ.get("PIPEDREAM_ALLOW_TF32") == "1"
                 else "fp32"]
    tflops = flops / (ms * 1e-3) / 1e12
    result["pipedream"] = {"median_step_ms": round(ms, 3),
                           "tflops": round(tflops, 2),
                           "fraction_of_peak": round(tflops / peak, 4),
                           "peak_tflops": peak}


def bench_torch(args, torch, model, flops, result):
    import torch.nn.functional as F
    cuda = args.torch_device == "cuda"
    if cuda and not torch.cuda.is_available():
        result["torch"] = "SKIPPED: torch.cuda.is_available() is False"
        return
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device(args.torch_device)
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    model = model.to(dev).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, VOCAB, (args.batch, args.seq), generator=g).to(dev)
    y = torch.randint(0, VOCAB, (args.batch, args.seq), generator=g).to(dev)
    bf16 = args.dtype == "bf16"
    times = []
    deadline = time.time() + args.timeout
    for i in range(args.steps + 2):
        sync()
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast(args.torch_device, dtype=torch.bfloat16,
                            enabled=bf16):
            logits = model(x)
            loss = F.cross_entropy(logits.reshape(-1, VOCAB).float(),
                                   y.reshape(-1))
        loss.backward()
        opt.step()
        sync()
        if i >= 2:
            times.append(time.perf_counter() - start)
        if time.time() > deadline:
            break
    if not times:
        result["torch"] = "FAILED: no timed step within the timeout"
        return
    ms = statistics.median(times) * 1e3
    peak = PEAKS["bf16" if bf16 else "fp32"]
    tflops = flops / (ms * 1e-3) / 1e12
    result["torch"] = {"version": torch.__version__,
                       "device": (torch.cuda.get_device_name(0) if cuda
                                  else "cpu"),
                       "median_step_ms": round(ms, 3),
                       "tflops": round(tflops, 2),
                       "fraction_of_peak": round(tflops / peak, 4),
                       "peak_tflops": peak}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True,
                   help="directory of pipedream-compile and pipedream-run")
    p.add_argument("--work", required=True)
    p.add_argument("--dim", type=int, default=1024)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--seq", type=int, default=512)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--dtype", choices=["f32", "bf16"], default="f32")
    p.add_argument("--timeout", type=int, default=300,
                   help="seconds for each of compile, run and torch")
    p.add_argument("--json")
    # The GPU kit (scripts/gpu-kit.sh) compiles the bundle on a machine
    # with MLIR and runs it where there is none.
    p.add_argument("--bundle",
                   help="run this compiled training bundle (of the model "
                        "--dim/--heads/--seq/--batch describe) instead of "
                        "exporting and compiling; needs --data")
    p.add_argument("--data", help="the bundle's DATA.npz (with --bundle)")
    # Checks of this script on machines without a GPU (the TFLOP/s and
    # fractions of the H200's peak are then meaningless).
    p.add_argument("--target", choices=["cuda", "cpu"], default="cuda",
                   help="pipedream-compile --target (cpu: dry run)")
    p.add_argument("--torch-device", choices=["cuda", "cpu"], default="cuda",
                   help="PyTorch's device (cpu: dry run)")
    args = p.parse_args()
    if bool(args.bundle) != bool(args.data):
        p.error("--bundle and --data go together")
    os.makedirs(args.work, exist_ok=True)
    flops = model_flops(args.batch, args.seq, args.dim)
    result = {"model": f"GPT block d={args.dim} h={args.heads} "
                       f"seq={args.seq} batch={args.batch} vocab={VOCAB}",
              "dtype": args.dtype,
              "model_gflop_per_step": round(flops / 1e9, 2),
              "peaks_tflops_h200_dense": PEAKS}
    try:
        import torch
    except ImportError as e:
        result["pipedream"] = result["torch"] = (
            f"SKIPPED: torch is not importable ({e}); it exports the ONNX "
            "model and is the reference")
        torch = None
        if args.bundle:
            bench_pipedream(args, None, None, None, flops, result)
    if torch is not None:
        model, in_name, _ = build_model(torch, args.dim, args.heads, args.seq)
        try:
            bench_pipedream(args, torch, model, in_name, flops, result)
        except Exception as e:  # report, then still run torch
            result["pipedream"] = f"FAILED: {type(e).__name__}: {e}"
        try:
            bench_torch(args, torch, model, flops, result)
        except Exception as e:
            result["torch"] = f"FAILED: {type(e).__name__}: {e}"
    print(json.dumps(result, indent=2))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    # Side by side.
    print(f"\n{'':10} {'step ms':>10} {'TFLOP/s':>9} {'of peak':>8}")
    for who in ("pipedream", "torch"):
        r = result.get(who)
        if isinstance(r, dict):
            print(f"{who:10} {r['median_step_ms']:>10.3f} {r['tflops']:>9.2f} "
                  f"{100 * r['fraction_of_peak']:>7.1f}%")
        else:
            print(f"{who:10} {r}")
    if all(isinstance(result.get(w), dict) for w in ("pipedream", "torch")):
        ratio = (result["torch"]["median_step_ms"] /
                 result["pipedream"]["median_step_ms"])
        result["speedup_vs_torch"] = round(ratio, 3)
        print(f"ratio: PyTorch eager step time / pipedream's = {ratio:.3f}x")
        if args.json:
            with open(args.json, "w") as f:
                json.dump(result, f, indent=2)
    print(f"(model FLOPs/step {flops / 1e9:.1f} G; H200 dense peak used: "
          f"{PEAKS['bf16' if args.dtype == 'bf16' else 'fp32']} TFLOP/s "
          f"{'BF16' if args.dtype == 'bf16' else 'FP32'})")
    ok = all(isinstance(result.get(w), dict) for w in ("pipedream", "torch"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
