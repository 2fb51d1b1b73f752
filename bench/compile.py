#!/usr/bin/python3
"""Compile time per phase: pipedream-compile next to iree-compile (issue 16).

    bench/compile.py [--build BUILD] [--models gpt12,gpt48,mobilenetv2,resnet]
                     [--repeat 3] [--work DIR] [--iree-bin DIR]
                     [--compiler PATH] [--json OUT.json]

For every model it compiles
  - the inference bundle (`--inference`), next to IREE on the same ONNX file
    (`iree-import-onnx`, then `iree-compile --iree-hal-target-backends=llvm-cpu
    --iree-llvmcpu-target-cpu=host`), and
  - the training bundle: for the GPTs an 8-stage 1F1B pipeline
    (`--stages 8 --schedule 1f1b --loss cross-entropy`), for the CNNs one rank
    (`--loss cross-entropy`),
`--repeat` times each, and prints the medians of the wall time and of the CPU
time (user + system of the child, all its threads) with pipedream's phases
(`--time-phases`), and the ratio ours/IREE. The machine is usually shared:
CPU time is the steadier figure, and the one the ratios use.

Models:
  gpt12, gpt48   models/export_torch.py gpt --dim 48 --heads 3 --seq 12
                 --batch 8 --layers 12|48 (exported once into --work with
                 Debian's /usr/bin/python3 and torch)
  mobilenetv2    models/corpus/mobilenetv2-ts.onnx
  resnet         models/corpus/resnet-ts.onnx
  CORPUS-NAME    a model of models/corpus/corpus.json (gpt2-ts, bert-dynamo,
                 ...), compiled like test/Models does: training on one rank
                 (`--microbatches 1 --batch-size B`) and a 2-stage 1F1B
                 pipeline (`--stages 2 --schedule 1f1b --microbatches M
                 --batch-size M*B`), cross-entropy and SGD, at the default -O
  corpus         every model of models/corpus/corpus.json
  NAME=PATH.onnx any other ONNX file (training: one rank, cross-entropy)

IREE is looked up in --iree-bin, then on PATH, then in /opt/iree-venv/bin and
/opt/venv/bin (pip install iree-base-compiler); without it the IREE columns
say "absent" and the rest runs. pipedream-compile runs with --no-cache (the
object cache would measure file reads).
"""

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

GPT_BLOCKS = {"gpt12": 12, "gpt48": 48}
CORPUS = {"mobilenetv2": "mobilenetv2-ts.onnx", "resnet": "resnet-ts.onnx"}
CORPUS_DIR = os.path.join(ROOT, "models", "corpus")


def corpus_entries():
    """models/corpus/corpus.json's entries by name."""
    with open(os.path.join(CORPUS_DIR, "corpus.json")) as f:
        return {e["name"]: e for e in json.load(f)["models"]}


def expand_models(text):
    names = []
    for name in text.split(","):
        names += sorted(corpus_entries()) if name == "corpus" else [name]
    return names


def timed(cmd, **kwargs):
    """Runs `cmd`; returns (wall s, CPU s of the child, stderr text)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, **kwargs)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime -
                                                before.ru_stime)
    if proc.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (
            os.path.basename(cmd[0]), proc.returncode,
            proc.stderr.strip().splitlines()[-1:] or ""))
    return wall, cpu, proc.stderr


PHASE_LINE = re.compile(r"^  (\s*)(\S.*?)\s+([0-9.]+)\s+([0-9.]+)$")


def parse_phases(text):
    """The --time-phases table: [(depth, name, wall, cpu)]."""
    phases, inside = [], False
    for line in text.splitlines():
        if "pipedream-compile phases" in line:
            inside = True
            continue
        if not inside:
            continue
        if "Execution time report" in line:
            break
        m = PHASE_LINE.match(line)
        if m and m.group(2) != "phase":
            phases.append((len(m.group(1)) // 2, m.group(2),
                           float(m.group(3)), float(m.group(4))))
    return phases


def find_iree(args):
    dirs = [args.iree_bin] if args.iree_bin else []
    for name in ("iree-compile", "iree-import-onnx"):
        path = shutil.which(name)
        if path:
            dirs.append(os.path.dirname(path))
    dirs += ["/opt/iree-venv/bin", "/opt/venv/bin"]
    for d in dirs:
        if d and all(os.access(os.path.join(d, n), os.X_OK)
                     for n in ("iree-compile", "iree-import-onnx")):
            return d
    return None


def model_file(name, work):
    if name in GPT_BLOCKS:
        path = os.path.join(work, name + ".onnx")
        if not os.path.exists(path):
            subprocess.run(
                ["/usr/bin/python3", os.path.join(ROOT, "models",
                                                  "export_torch.py"),
                 "gpt", path, "--dim", "48", "--heads", "3", "--seq", "12",
                 "--batch", "8", "--layers", str(GPT_BLOCKS[name])],
                check=True, stdout=subprocess.DEVNULL)
        return path
    if name in CORPUS:
        return os.path.join(CORPUS_DIR, CORPUS[name])
    entry = corpus_entries().get(name)
    if entry:
        return os.path.join(CORPUS_DIR, entry["file"])
    if "=" in name:
        return name.split("=", 1)[1]
    raise SystemExit("unknown model %s" % name)


def median(values):
    return statistics.median(values) if values else float("nan")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--compiler", help="pipedream-compile to time "
                        "(default BUILD/bin/pipedream-compile)")
    parser.add_argument("--models", default="gpt12,gpt48,mobilenetv2,resnet")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--work", help="directory for models and bundles")
    parser.add_argument("--iree-bin")
    parser.add_argument("--no-training", action="store_true")
    parser.add_argument("--no-inference", action="store_true")
    parser.add_argument("--extra", default="",
                        help="extra pipedream-compile flags (space-separated)")
    parser.add_argument("--json", help="write the figures as JSON")
    args = parser.parse_args()

    compiler = args.compiler or os.path.join(args.build, "bin",
                                             "pipedream-compile")
    if not os.access(compiler, os.X_OK):
        raise SystemExit("%s: not found (build first)" % compiler)
    work = args.work or tempfile.mkdtemp(prefix="pipedream-compile-bench-")
    os.makedirs(work, exist_ok=True)
    iree = find_iree(args)
    print("pipedream-compile: %s" % compiler)
    print("iree: %s" % (iree or "absent (pip install iree-base-compiler)"))
    print("medians of %d runs; cpu = user + system of the compiler, all "
          "threads; ratios use cpu" % args.repeat)
    env = dict(os.environ, PIPEDREAM_NO_CACHE="1")
    results = []
    corpus = corpus_entries()
    for name in expand_models(args.models):
        onnx = model_file(name, work)
        label = name.split("=", 1)[0]
        configs = []
        if not args.no_inference:
            configs.append(("inference", ["--inference"]))
        if not args.no_training:
            if label in GPT_BLOCKS:
                configs.append(("train K=8 1f1b", [
                    "--loss", "cross-entropy", "--stages", "8",
                    "--schedule", "1f1b"]))
            elif label in corpus:
                # As test/Models/models.py compiles it (at the default -O).
                e = corpus[label]
                b, m = e["microbatch_size"], e["pipeline_microbatches"]
                common = ["--loss", "cross-entropy", "--optimizer", "sgd",
                          "--lr", repr(e["lr"])]
                configs.append(("train", common + [
                    "--microbatches", "1", "--batch-size", str(b)]))
                configs.append(("train K=2 1f1b", common + [
                    "--microbatches", str(m), "--batch-size", str(m * b),
                    "--stages", "2", "--schedule", "1f1b"]))
            else:
                configs.append(("train", ["--loss", "cross-entropy"]))
        for config, flags in configs:
            out = os.path.join(work, "%s-%s" % (
                label, "-".join(config.split()).replace("=", "")))
            walls, cpus, phase_runs = [], [], []
            for _ in range(args.repeat):
                wall, cpu, err = timed(
                    [compiler, onnx, "-o", out, "--time-phases",
                     "--no-cache"] + flags + args.extra.split(), env=env)
                walls.append(wall)
                cpus.append(cpu)
                phase_runs.append(parse_phases(err))
            row = {"model": label, "config": config,
                   "wall_s": median(walls), "cpu_s": median(cpus),
                   "phases": []}
            if phase_runs and phase_runs[0]:
                for i, (depth, phase, _, _) in enumerate(phase_runs[0]):
                    row["phases"].append({
                        "phase": phase, "depth": depth,
                        "wall_s": median([r[i][2] for r in phase_runs
                                          if len(r) > i]),
                        "cpu_s": median([r[i][3] for r in phase_runs
                                         if len(r) > i])})
            if config == "inference" and iree:
                iwalls, icpus = [], []
                mlir = os.path.join(work, label + ".iree.mlir")
                vmfb = os.path.join(work, label + ".vmfb")
                try:
                    for _ in range(args.repeat):
                        w1, c1, _ = timed([os.path.join(iree,
                                                        "iree-import-onnx"),
                                           onnx, "-o", mlir])
                        w2, c2, _ = timed([
                            os.path.join(iree, "iree-compile"), mlir,
                            "--iree-hal-target-backends=llvm-cpu",
                            "--iree-llvmcpu-target-cpu=host", "-o", vmfb])
                        iwalls.append(w1 + w2)
                        icpus.append(c1 + c2)
                    row["iree_wall_s"] = median(iwalls)
                    row["iree_cpu_s"] = median(icpus)
                    row["ours_over_iree"] = row["cpu_s"] / row["iree_cpu_s"]
                except RuntimeError as e:
                    row["iree_error"] = str(e)
            results.append(row)
            iree_text = ""
            if "iree_cpu_s" in row:
                iree_text = "  iree wall %.2f cpu %.2f  ours/iree %.2f" % (
                    row["iree_wall_s"], row["iree_cpu_s"],
                    row["ours_over_iree"])
            elif config == "inference":
                iree_text = "  iree " + row.get("iree_error", "absent")
            print("\n%-12s %-16s wall %7.2f s  cpu %7.2f s%s" % (
                label, config, row["wall_s"], row["cpu_s"], iree_text))
            for p in row["phases"]:
                print("    %-50s wall %7.3f  cpu %7.3f" % (
                    "  " * p["depth"] + p["phase"], p["wall_s"], p["cpu_s"]))
            sys.stdout.flush()
    cpu = {(r["model"], r["config"]): r["cpu_s"] for r in results}
    if ("gpt48", "train K=8 1f1b") in cpu and ("gpt12", "train K=8 1f1b") in cpu:
        print("\ngpt48/gpt12 training cpu ratio: %.2f (linear: 4.0)" % (
            cpu[("gpt48", "train K=8 1f1b")] / cpu[("gpt12", "train K=8 1f1b")]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
