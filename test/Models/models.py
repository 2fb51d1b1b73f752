#!/usr/bin/python3
"""Checks pipedream on one model of the corpus against PyTorch.

    models.py --bin BUILD/bin --model NAME --check CHECK [--work DIR]
        [--corpus models/corpus]
    models.py --bin BUILD/bin --matrix [--models A,B] [--checks C,D]

NAME is an entry of models/corpus/corpus.json (models/make_corpus.py wrote
NAME.onnx and its PyTorch float64 references NAME.npz). CHECK is one of:

- `import`: `pipedream-compile NAME.onnx --inference --emit nn` succeeds;
- `forward`: `pipedream-compile --inference` + `pipedream-run --inputs`
  equal PyTorch's first output (float64) within 1e-4 relative to its
  largest entry;
- `sgd`: 3 steps of SGD, one micro-batch per step, single rank
  (`pipedream-run --data --steps 3 --loss-log --save-onnx`): every step's
  loss within 1e-4 relative of PyTorch's, every float initializer of the
  trained model within 1e-4 relative to its largest entry of the
  reference (the trained PyTorch model exported again; an initializer
  the reference does not list must keep its initial value, bit-exact for
  corpus.json's `constants`: masks, scalars, tables that are no
  parameter);
- `sgd-freeze`: `sgd` with `--freeze` naming corpus.json's `constants`
  (what a user does for an export whose masks are initializers);
- `1f1b`: the same with M micro-batches per step on a 2-stage 1F1B
  pipeline over 2 MPI processes (`pipedream-run --ranks 2`), against
  PyTorch with gradient accumulation over the M micro-batches;
- `schedules`: the `1f1b` check under every other synchronous schedule,
  on threads (`pipedream-run --transport threads`): gpipe, zb-h1 and 1f1b
  on 4 stages, and with 2 virtual stages per rank interleaved-1f1b,
  interleaved-zb, zb-v and dualpipe-v (the V-shaped placements put the
  first and last layers on one rank: tied and shared weights are summed
  over ranks in other orders);
- `clip`: the `1f1b` check's M micro-batches with `--clip-grad-norm`
  (corpus.json's `clip_grad_norm`) on a 3-stage zb-h1 pipeline on
  threads, against PyTorch with torch.nn.utils.clip_grad_norm_ before
  each step (`NAME.clip.npz`; only the models make_corpus.py lists in
  CLIP_MODELS);
- `eval`: the `forward` check's inputs (labels: the first rows of the
  training labels) evaluated by a 2-rank interleaved-1f1b pipeline with 2
  virtual stages per rank, compiled with `--evaluate` and run with
  `pipedream-run --steps 0 --eval-data` (the untrained weights through
  the ranks' evaluation programs): the loss equals the cross-entropy of
  PyTorch's eval-mode logits, computed here in float64, within 1e-4
  relative;
- `async`: a 2-stage PipeDream (weight stashing) pipeline on threads,
  3 steps, equal (1e-5) to the sequential execution of the same schedule
  by the reference interpreter of test/Training/Inputs/pipeline_compare.py
  (no PyTorch equivalent), and some weight changed.

Compiles use -O0 (LLVM optimization level: a sixth of -O1's compile
time on these models; CI time is compile time, the runs are 3 steps).
Prints `OK NAME CHECK: ...`, or `FAIL NAME CHECK: ...` with the first
error line of the tool that failed or the first mismatches, and exits
non-zero on failure. `--matrix` runs every check of every model and
prints the matrix as a Markdown table (docs/Models.md). Needs only numpy
and onnx, except `async`, which imports pipeline_compare (and so torch,
for its other uses).
"""

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
CORPUS = os.path.join(ROOT, "models", "corpus")
CHECKS = ["import", "forward", "sgd", "1f1b", "async", "sgd-freeze",
          "schedules", "clip", "recompute", "eval"]
# `schedules`: (schedule, stages, virtual stages per rank).
SCHEDULES = [("gpipe", 2, 1), ("zb-h1", 2, 1), ("1f1b", 4, 1),
             ("interleaved-1f1b", 2, 2), ("interleaved-zb", 2, 2),
             ("zb-v", 2, 2), ("dualpipe-v", 2, 2)]
RTOL = 1e-4         # against PyTorch float64
RTOL_ASYNC = 1e-5   # against the project's sequential reference (f32)


class Failure(Exception):
    pass


def tool(cmd, what, timeout=600):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        raise Failure(f"{what}: timed out after {timeout} s")
    if r.returncode != 0:
        lines = [l for l in (r.stderr + r.stdout).splitlines() if l.strip()]
        errors = [l for l in lines if "error" in l.lower()]
        line = (errors or lines or [f"exit status {r.returncode}"])[0]
        raise Failure(f"{what}: {line.strip()[:300]}")
    return r.stdout


def initializers(path):
    return {i.name: numpy_helper.to_array(i)
            for i in onnx.load(path).graph.initializer}


def rel_err(got, ref):
    """max |got - ref| / max |ref|; inf when either is not finite (so that
    a NaN never compares as small)."""
    ref = np.asarray(ref, dtype=np.float64)
    got = np.asarray(got, dtype=np.float64)
    if not (np.all(np.isfinite(got)) and np.all(np.isfinite(ref))):
        return float("inf")
    if not ref.size:
        return 0.0
    scale = max(float(np.max(np.abs(ref))), 1e-12)
    return float(np.max(np.abs(got - ref))) / scale


def rel_loss(a, b):
    if not (np.isfinite(a) and np.isfinite(b)):
        return float("inf")
    return abs(a - b) / max(abs(b), 1e-12)


def compare_training(entry, initial, ref, key, losses, trained):
    """Losses and every float initializer against the PyTorch reference."""
    problems = []
    constants = set(entry.get("constants", []))
    want = ref[f"{key}/loss"]
    if len(losses) != len(want):
        raise Failure(f"{len(losses)} losses, PyTorch has {len(want)}")
    worst_loss = 0.0
    for s, (a, b) in enumerate(zip(losses, want)):
        r = rel_loss(a, b)
        worst_loss = max(worst_loss, r)
        if r > RTOL:
            problems.append(f"step {s + 1} loss {a:.7g} vs PyTorch {b:.7g}")
    worst, worst_name, changed, trainable = 0.0, "", 0, 0
    for name, init in initial.items():
        if init.dtype != np.float32:
            continue
        expected = ref.get(f"{key}/w/{name}", init)
        trainable += f"{key}/w/{name}" in ref
        if name not in trained:
            problems.append(f"trained model lacks initializer {name}")
            continue
        got = trained[name]
        if got.shape != init.shape:
            problems.append(f"initializer {name} has shape {got.shape}")
            continue
        changed += not np.array_equal(got, init)
        if name in constants and not np.array_equal(got, init):
            problems.append(f"constant initializer {name} changed "
                            f"(by {rel_err(got, init):.3g} relative)")
            continue
        r = rel_err(got, expected)
        if r > worst:
            worst, worst_name = r, name
        if r > RTOL:
            what = "trained" if f"{key}/w/{name}" in ref else "constant"
            problems.append(f"{what} initializer {name} differs by {r:.3g}")
    if changed == 0:
        problems.append("no initializer changed during training")
    if problems:
        more = f" (+{len(problems) - 3} more)" if len(problems) > 3 else ""
        raise Failure("; ".join(problems[:3]) + more)
    return (f"losses {' '.join(f'{v:.6f}' for v in losses)}; worst relative "
            f"error loss {worst_loss:.2g}, weights {worst:.2g} ({worst_name});"
            f" {changed} initializers changed, {trainable} expected to")


def read_run(work, tag):
    with open(os.path.join(work, f"loss-{tag}.csv")) as f:
        losses = [float(r["loss"]) for r in csv.DictReader(f)]
    trained = initializers(os.path.join(work, f"trained-{tag}.onnx"))
    return losses, trained


def data_file(entry, ref, work):
    path = os.path.join(work, "data.npz")
    arrays = {n: ref[f"data/{n}"] for n in entry["inputs"]}
    arrays["labels"] = ref["data/labels"]
    np.savez(path, **arrays)
    return path, arrays


def run_check(bin_dir, entry, corpus, check, work):
    compile_ = os.path.join(bin_dir, "pipedream-compile")
    run = os.path.join(bin_dir, "pipedream-run")
    onnx_path = os.path.join(corpus, entry["file"])
    ref = dict(np.load(os.path.join(corpus, entry["name"] + ".npz")))
    for k, v in ref.items():   # images are stored as float16 (exactly)
        if v.dtype == np.float16:
            ref[k] = v.astype(np.float32)
    os.makedirs(work, exist_ok=True)
    if check == "import":
        out = os.path.join(work, "model.nn.mlir")
        tool([compile_, onnx_path, "--inference", "--emit", "nn", "-o", out],
             "pipedream-compile --emit nn")
        return f"{sum(1 for _ in open(out))} lines of nn IR"
    if check == "forward":
        bundle = os.path.join(work, "forward")
        tool([compile_, onnx_path, "--inference", "-O0", "-o", bundle],
             "pipedream-compile --inference")
        ins = os.path.join(work, "inputs.npz")
        outs = os.path.join(work, "outputs.npz")
        np.savez(ins, **{n: ref[f"forward/{n}"] for n in entry["inputs"]})
        tool([run, bundle, "--inputs", ins, "--outputs", outs],
             "pipedream-run --inputs")
        got = np.load(outs)
        if "logits" not in got:
            raise Failure(f"no output 'logits' (outputs: {sorted(got)})")
        want = ref["forward/output"]
        if got["logits"].shape != want.shape:
            raise Failure(f"logits shape {got['logits'].shape}, PyTorch "
                          f"{want.shape}")
        r = rel_err(got["logits"], want)
        if r > RTOL:
            raise Failure(f"logits differ from PyTorch by {r:.3g} relative")
        return f"logits {list(want.shape)}, relative error {r:.2g}"

    data_path, arrays = data_file(entry, ref, work)
    if check == "eval":
        inputs = {n: ref[f"forward/{n}"] for n in entry["inputs"]}
        n = next(iter(inputs.values())).shape[0]
        labels = ref["data/labels"][:n]
        logits = ref["forward/output"].astype(np.float64)
        flat = logits.reshape(-1, logits.shape[-1])
        top = flat.max(axis=1, keepdims=True)
        logsumexp = np.log(np.exp(flat - top).sum(axis=1)) + top[:, 0]
        want = float(np.mean(logsumexp - flat[np.arange(len(flat)),
                                              labels.reshape(-1)]))
        eval_path = os.path.join(work, "eval.npz")
        np.savez(eval_path, labels=labels, **inputs)
        b, m = entry["microbatch_size"], entry["pipeline_microbatches"]
        bundle = os.path.join(work, "eval")
        tool([compile_, onnx_path, "-O0", "--loss", "cross-entropy",
              "--microbatches", str(m), "--batch-size", str(m * b),
              "--stages", "2", "--virtual-stages", "2", "--schedule",
              "interleaved-1f1b", "--evaluate", "-o", bundle],
             "pipedream-compile --evaluate --virtual-stages 2")
        out = tool([run, bundle, "--data", data_path, "--eval-data",
                    eval_path, "--steps", "0", "--timeout", "120"],
                   "pipedream-run --steps 0 --eval-data")
        lines = [l for l in out.splitlines()
                 if l.startswith("eval loss after step 0: ")]
        if len(lines) != 1:
            raise Failure(f"no evaluation line in pipedream-run's output")
        got = float(lines[0].split(": ")[1])
        r = rel_loss(got, want)
        if r > RTOL:
            raise Failure(f"eval loss {got!r}, PyTorch eval mode {want!r} "
                          f"({r:.3g} relative)")
        return (f"eval loss {got:.6f} of {n} samples over 4 stages on 2 "
                f"ranks; PyTorch eval mode {want:.6f}, relative error "
                f"{r:.2g}")
    initial = initializers(onnx_path)
    b = entry["microbatch_size"]
    steps = entry["steps"]
    common = [onnx_path, "-O0", "--loss", "cross-entropy", "--optimizer",
              "sgd", "--lr", repr(entry["lr"])]
    if check in ("sgd", "sgd-freeze"):
        bundle = os.path.join(work, "sgd")
        extra = []
        if check == "sgd-freeze":
            if not entry.get("constants"):
                raise Failure("the export has no float constants to freeze")
            extra = ["--freeze", ",".join(entry["constants"])]
        tool([compile_, *common, *extra, "--microbatches", "1",
              "--batch-size", str(b), "-o", bundle],
             "pipedream-compile (training)")
        tool([run, bundle, "--data", data_path, "--steps", str(steps),
              "--loss-log", os.path.join(work, "loss-sgd.csv"),
              "--save-onnx", os.path.join(work, "trained-sgd.onnx")],
             "pipedream-run --data")
        losses, trained = read_run(work, "sgd")
        return compare_training(entry, initial, ref, "sgd", losses, trained)

    m = entry["pipeline_microbatches"]
    batch = ["--microbatches", str(m), "--batch-size", str(m * b)]
    pipe = common + batch + ["--stages", "2"]
    threads = ["--transport", "threads"]

    def train(tag, flags, placement, compiled, ran):
        """Compiles `flags` into WORK/tag, trains it `steps` steps with
        pipedream-run and `placement` (MPI ranks or threads); returns the
        bundle, the losses and the trained initializers. `compiled` and
        `ran` name the two tools' runs in a failure."""
        bundle = os.path.join(work, tag)
        tool([compile_, *flags, "-o", bundle], compiled)
        tool([run, bundle, "--data", data_path, "--steps", str(steps),
              *placement, "--timeout", "120",
              "--loss-log", os.path.join(work, f"loss-{tag}.csv"),
              "--save-onnx", os.path.join(work, f"trained-{tag}.onnx")], ran)
        return (bundle, *read_run(work, tag))

    if check == "1f1b":
        _, losses, trained = train(
            "1f1b", [*pipe, "--schedule", "1f1b"], ["--ranks", "2"],
            "pipedream-compile --stages 2 --schedule 1f1b",
            "pipedream-run --ranks 2")
        return compare_training(entry, initial, ref, "pipe", losses, trained)
    if check == "clip":
        if "clip_grad_norm" not in entry:
            raise Failure("corpus.json has no clip_grad_norm (make_corpus.py "
                          "--clip-references writes the references)")
        ref.update(np.load(os.path.join(corpus, entry["name"] + ".clip.npz")))
        _, losses, trained = train(
            "clip", [*common, *batch, "--stages", "3", "--schedule", "zb-h1",
                     "--clip-grad-norm", repr(entry["clip_grad_norm"])],
            threads, "pipedream-compile --clip-grad-norm",
            "pipedream-run (clip)")
        return compare_training(entry, initial, ref, "clip", losses, trained)
    if check == "recompute":
        # Every stage recomputes under a split backward: F stashes only its
        # inputs, B runs the forward again and hands W what it reads.
        bundle, losses, trained = train(
            "recompute", [*common, *batch, "--stages", "3", "--schedule",
                          "zb-h1", "--recompute", "full"],
            threads, "pipedream-compile --recompute full",
            "pipedream-run (recompute)")
        with open(os.path.join(bundle, "report.json")) as f:
            stages = json.load(f)["stages"]
        recomputing = [s["index"] for s in stages if s.get("recompute")]
        if len(recomputing) != len(stages):
            raise Failure(f"stages {recomputing} of {len(stages)} recompute")
        return compare_training(entry, initial, ref, "pipe", losses, trained)
    if check == "schedules":
        results = []
        for kind, stages, virtual in SCHEDULES:
            tag = f"{kind}-k{stages}-v{virtual}"
            flags = [*common, *batch, "--stages", str(stages), "--schedule",
                     kind]
            if virtual > 1:
                flags += ["--virtual-stages", str(virtual)]
            _, losses, trained = train(tag, flags, threads,
                                       f"pipedream-compile --schedule {kind}",
                                       f"pipedream-run ({tag})")
            try:
                compare_training(entry, initial, ref, "pipe", losses, trained)
            except Failure as e:
                raise Failure(f"{tag}: {e}")
            results.append(tag)
        return f"equal PyTorch under {', '.join(results)}"
    if check == "async":
        bundle, losses, trained = train(
            "async", [*pipe, "--schedule", "pipedream"], threads,
            "pipedream-compile --stages 2 --schedule pipedream",
            "pipedream-run --transport threads")
        sys.path.insert(0, os.path.join(ROOT, "test", "Training", "Inputs"))
        import pipeline_compare  # noqa: E402 (imports torch)
        try:
            ref_losses, ref_weights = pipeline_compare.python_pipeline(
                bundle, arrays, steps)
        except Exception as e:  # the interpreter's own limits
            raise Failure(f"sequential reference: {type(e).__name__}: {e}")
        problems = []
        worst_loss = max(rel_loss(a, r) for a, r in zip(losses, ref_losses))
        if len(losses) != len(ref_losses) or worst_loss > RTOL_ASYNC:
            problems.append(f"losses {losses} vs sequential {ref_losses}")
        worst, changed = 0.0, 0
        for name, want in ref_weights.items():
            if name not in trained:
                problems.append(f"trained model lacks {name}")
                continue
            r = rel_err(trained[name], want)
            worst = max(worst, r)
            changed += name in initial and not np.array_equal(
                trained[name], initial[name])
            if r > RTOL_ASYNC:
                problems.append(f"weight {name} differs by {r:.3g}")
        if not changed:
            problems.append("no weight changed during training")
        if problems:
            raise Failure("; ".join(problems[:3]))
        return (f"losses {' '.join(f'{v:.6f}' for v in losses)}; worst "
                f"relative error loss {worst_loss:.2g}, weights {worst:.2g}")
    raise SystemExit(f"unknown check {check}")


def load_corpus(corpus):
    with open(os.path.join(corpus, "corpus.json")) as f:
        return {e["name"]: e for e in json.load(f)["models"]}


def one(bin_dir, entry, corpus, check, work):
    """Runs one check; prints its line; returns (ok, detail)."""
    name = entry["name"]
    if "export_error" in entry:
        detail = f"not exported: {entry['export_error']}"
        print(f"FAIL {name} {check}: {detail}")
        return False, detail
    start = time.time()
    try:
        detail = run_check(bin_dir, entry, corpus, check, work)
    except Failure as e:
        print(f"FAIL {name} {check}: {e} [{time.time() - start:.0f} s]")
        return False, str(e)
    print(f"OK {name} {check}: {detail} [{time.time() - start:.0f} s]")
    return True, detail


def markdown(results, checks):
    """The matrix as a Markdown table, failures' first lines below it."""
    lines = ["| model | " + " | ".join(checks) + " |",
             "| --- |" + " --- |" * len(checks)]
    notes = []
    for name, row in results.items():
        cells = []
        for c in checks:
            ok, detail = row[c]
            if ok:
                cells.append("pass")
            else:
                notes.append(f"- {name} {c}: {detail}")
                cells.append(f"FAIL ({len(notes)})")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines + [""] + [
        f"{n.split(':', 1)[0]} ({i + 1}):{n.split(':', 1)[1]}"
        for i, n in enumerate(notes)])


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--model")
    p.add_argument("--check", choices=CHECKS)
    p.add_argument("--work")
    p.add_argument("--corpus", default=CORPUS)
    p.add_argument("--matrix", action="store_true")
    p.add_argument("--models", default="")
    p.add_argument("--checks", default=",".join(CHECKS[:5]))
    args = p.parse_args()
    entries = load_corpus(args.corpus)
    work = args.work or tempfile.mkdtemp(prefix="models-")
    if not args.matrix:
        if args.model not in entries or not args.check:
            raise SystemExit(f"--model one of {', '.join(entries)} and "
                             "--check are required")
        return 0 if one(args.bin, entries[args.model], args.corpus,
                        args.check, work)[0] else 1
    names = [n for n in args.models.split(",") if n] or list(entries)
    checks = args.checks.split(",")
    results = {}
    for n in names:
        results[n] = {}
        for c in checks:
            d = os.path.join(work, n, c)
            shutil.rmtree(d, ignore_errors=True)
            results[n][c] = one(args.bin, entries[n], args.corpus, c, d)
            sys.stdout.flush()
    print(markdown(results, checks))
    return 0 if all(ok for r in results.values() for ok, _ in r.values()) \
        else 1


if __name__ == "__main__":
    sys.exit(main())
