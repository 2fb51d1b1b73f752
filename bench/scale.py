#!/usr/bin/python3
"""Real size: a Llama of TinyLlama-1.1B's shape from ONNX with external
data, pipelined over 8 MPI ranks on one machine (issue 22).

    python3 bench/scale.py --build BUILD [--size tinyllama|small]
        [--work DIR] [--stages K] [--microbatches M] [--seq T] [--steps N]
        [--lr LR] [--min-free-gib G] [-O N] [--keep] [--model-dir DIR]

Runs, one phase at a time so their memory never overlaps:
1. models/make_llama.py (the venv's torch 2.x and transformers): the model,
   random init from a fixed seed, weights as external data, and the data
   (one batch of M micro-batches of 1 x T tokens);
2. pipedream-compile (K stages, 1f1b, M micro-batches, SGD): its wall time
   and peak resident set size (/usr/bin/time), against the weight bytes;
3. pipedream-run --ranks K --steps N (MPI): the step time, and each rank's
   measured peak memory next to report.json's (pipedream-run prints both);
4. make_llama.py --no-export --reference N: PyTorch (float32) training of
   the same model and batch, whose losses the pipeline's must equal (1e-4
   relative).

Prints one summary block. A watchdog kills a phase when the machine's
available memory (MemAvailable) falls below --min-free-gib (default 3).
--size small (about 100 MB of weights) runs in a few minutes; tinyllama
(4.4 GB of weights) needs about 14 GiB free.
"""

import argparse
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
VENV_PYTHON = "/opt/venv/bin/python"


def available_gib():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / (1024 * 1024)
    return float("inf")


def run(cmd, what, min_free, log):
    """Runs cmd (stdout+stderr to `log`), killing it when memory runs low.
    Returns (seconds, output)."""
    print(f"[scale] {what}: {' '.join(cmd)}", flush=True)
    start = time.monotonic()
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
        low = []

        def watch():
            while proc.poll() is None:
                if available_gib() < min_free:
                    low.append(available_gib())
                    os.killpg(proc.pid, 9)
                    return
                time.sleep(0.5)
        threading.Thread(target=watch, daemon=True).start()
        code = proc.wait()
    seconds = time.monotonic() - start
    with open(log) as f:
        output = f.read()
    if low:
        sys.exit(f"[scale] {what}: killed, available memory fell to "
                 f"{low[0]:.1f} GiB (< {min_free} GiB)")
    if code != 0:
        sys.stdout.write(output[-4000:])
        sys.exit(f"[scale] {what} failed (exit status {code})")
    return seconds, output


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", required=True)
    p.add_argument("--size", choices=["tinyllama", "small"],
                   default="tinyllama")
    p.add_argument("--work")
    p.add_argument("--stages", type=int, default=8)
    p.add_argument("--microbatches", type=int, default=8)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("-O", dest="opt", default="1")
    p.add_argument("--min-free-gib", type=float, default=3.0)
    p.add_argument("--keep", action="store_true",
                   help="keep the work directory")
    p.add_argument("--model-dir",
                   help="reuse this export of make_llama.py (model.onnx, "
                        "model.onnx.data, config.json, data.npz) instead "
                        "of exporting again")
    p.add_argument("--compile-only", action="store_true",
                   help="export and compile; print report.json's rank_memory "
                        "instead of training")
    args = p.parse_args()
    bin_dir = os.path.join(args.build, "bin")
    work = args.work or tempfile.mkdtemp(prefix="pipedream-scale-")
    os.makedirs(work, exist_ok=True)
    model_dir = args.model_dir or os.path.join(work, "model")
    bundle = os.path.join(work, "bundle")
    gen = [VENV_PYTHON, os.path.join(ROOT, "models", "make_llama.py"),
           model_dir, "--size", args.size, "--microbatch", "1",
           "--seq", str(args.seq), "--microbatches", str(args.microbatches),
           "--lr", repr(args.lr)]
    try:
        export_s = 0.0
        if not args.model_dir:
            export_s, _ = run(gen, "export", args.min_free_gib,
                              os.path.join(work, "export.log"))
        with open(os.path.join(model_dir, "config.json")) as f:
            params = json.load(f)["parameters"]
        weight_bytes = os.path.getsize(os.path.join(model_dir,
                                                    "model.onnx.data"))

        shutil.rmtree(bundle, ignore_errors=True)
        compile_cmd = [
            "/usr/bin/time", "-v", os.path.join(bin_dir, "pipedream-compile"),
            os.path.join(model_dir, "model.onnx"), "--stages",
            str(args.stages), "--schedule", "1f1b", "--microbatches",
            str(args.microbatches), "--batch-size", str(args.microbatches),
            "--loss", "cross-entropy", "--optimizer", "sgd", "--lr",
            repr(args.lr), "-O", args.opt, "-o", bundle]
        compile_s, out = run(compile_cmd, "compile", args.min_free_gib,
                             os.path.join(work, "compile.log"))
        rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", out)
        compile_rss = int(rss.group(1)) * 1024 if rss else 0

        if args.compile_only:
            with open(os.path.join(bundle, "report.json")) as f:
                rank_memory = json.load(f).get("rank_memory", [])
            print(f"\nscale: llama {args.size}, {params} parameters, "
                  f"{weight_bytes / 2**30:.2f} GiB of f32 weights; export "
                  f"{export_s:.1f} s; compile {compile_s:.1f} s, peak RSS "
                  f"{compile_rss / 2**30:.2f} GiB = "
                  f"{compile_rss / weight_bytes:.2f} x the weight bytes")
            total = 0
            for m in rank_memory:
                total += m["total_bytes"]
                print(f"rank {m['rank']}: rank_memory {m['total_bytes'] / 2**30:.2f} "
                      f"GiB (weights {m['weight_bytes'] / 2**30:.2f}, updates "
                      f"outputs {m['update_output_bytes'] / 2**30:.2f}, "
                      f"registers {m['register_bytes'] / 2**30:.3f})")
            print(f"all ranks: {total / 2**30:.2f} GiB of buffers")
            return 0
        loss_log = os.path.join(work, "loss.csv")
        run_cmd = [os.path.join(bin_dir, "pipedream-run"), bundle, "--data",
                   os.path.join(model_dir, "data.npz"), "--steps",
                   str(args.steps), "--ranks", str(args.stages),
                   "--timeout", "3600", "--loss-log", loss_log]
        run_s, out = run(run_cmd, "train", args.min_free_gib,
                         os.path.join(work, "run.log"))
        with open(loss_log) as f:
            losses = [float(r["loss"]) for r in csv.DictReader(f)]
        step = re.search(r"mean step time ([0-9.]+) ms", out)
        memory = re.findall(r"rank (\d+): ([0-9.]+) MiB peak, ([0-9.]+) MiB "
                            r"above the ([0-9.]+) MiB at start"
                            r"(?:; report.json: ([0-9.]+) MiB \(([-+0-9.]+)%\))?",
                            out)

        ref_s, _ = run(gen + ["--no-export", "--reference", str(args.steps)],
                       "torch reference", args.min_free_gib,
                       os.path.join(work, "reference.log"))
        with open(os.path.join(model_dir, "reference.json")) as f:
            ref = json.load(f)["losses"]
    finally:
        if not args.keep and not args.work:
            shutil.rmtree(work, ignore_errors=True)

    print(f"\nscale: llama {args.size}, {params} parameters, "
          f"{weight_bytes / 2**30:.2f} GiB of f32 weights (external data); "
          f"K={args.stages} 1f1b M={args.microbatches}, batch "
          f"{args.microbatches} x {args.seq} tokens, SGD lr {args.lr}")
    print(f"export (torch, venv)       {export_s:8.1f} s")
    print(f"compile                    {compile_s:8.1f} s, peak RSS "
          f"{compile_rss / 2**30:.2f} GiB = {compile_rss / weight_bytes:.2f} "
          f"x the weight bytes")
    print(f"train {args.steps} steps (MPI)      {run_s:8.1f} s, mean step "
          f"{float(step.group(1)) / 1000 if step else float('nan'):.2f} s")
    print("rank  peak RSS  above start  report.json  difference")
    total = 0.0
    for r, peak, grown, start, reported, diff in memory:
        total += float(peak)
        print(f"{int(r):4d} {float(peak):8.1f} MiB {float(grown):8.1f} MiB "
              f"{(reported or '-'):>10} MiB {(diff + '%') if diff else '-':>8}")
    print(f"all ranks together: {total / 1024:.2f} GiB peak RSS")
    worst = 0.0
    for i, (a, b) in enumerate(zip(losses, ref)):
        rel = abs(a - b) / max(abs(b), 1e-12)
        worst = max(worst, rel)
        print(f"step {i + 1} loss: pipedream {a:.6f}  torch {b:.6f}  "
              f"relative {rel:.2g}")
    ok = len(losses) == len(ref) and worst <= 1e-4
    print("losses equal PyTorch (1e-4 relative)" if ok else
          "MISMATCH: losses differ from PyTorch")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
