#!/usr/bin/python3
"""Writes test/Models/NAME-CHECK.test: one lit test per corpus model and
check (models.py), XFAIL where a known, not yet fixed limitation makes it
fail (KNOWN below, with the reason written into the test). Rerun after
editing KNOWN: an XFAIL test that passes is an XPASS, which fails lit.

    /usr/bin/python3 test/Models/make_tests.py
"""

import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
CHECKS = ["import", "forward", "sgd", "1f1b", "async", "recompute", "eval"]

WHAT = {
    "import": "imports (pipedream-compile --inference --emit nn)",
    "forward": "forward (pipedream-compile --inference, pipedream-run "
               "--inputs) equals PyTorch float64 within 1e-4",
    "sgd": "3 SGD steps, single rank, equal PyTorch float64 (every loss and "
           "initializer within 1e-4 relative)",
    "1f1b": "3 steps of a 2-stage 1F1B pipeline over 2 MPI processes equal "
            "PyTorch float64 with gradient accumulation (1e-4 relative)",
    "sgd-freeze": "3 SGD steps with --freeze naming the export's float "
                  "constants (corpus.json) equal PyTorch float64 (1e-4)",
    "schedules": "3 steps under gpipe, zb-h1, 1f1b on 4 stages, "
                 "interleaved-1f1b, interleaved-zb, zb-v and dualpipe-v (2 "
                 "virtual stages per rank), on threads, each equal PyTorch "
                 "float64 with gradient accumulation (1e-4 relative)",
    "clip": "3 steps of a 3-stage zb-h1 pipeline on threads with "
            "--clip-grad-norm equal PyTorch float64 with clip_grad_norm_ "
            "(1e-4 relative)",
    "recompute": "3 steps of a 3-stage zb-h1 pipeline on threads with "
                 "--recompute full (every stage stashes its inputs and "
                 "runs its forward again in B) equal PyTorch float64 with "
                 "gradient accumulation (1e-4 relative)",
    "eval": "evaluated by a 2-rank interleaved-1f1b pipeline (4 stages, "
            "--evaluate, pipedream-run --steps 0 --eval-data): the loss "
            "equals the cross-entropy of PyTorch's eval-mode logits (1e-4 "
            "relative)",
    "async": "3 steps of a 2-stage PipeDream (weight stashing) pipeline on "
             "threads equal the sequential execution of the same schedule "
             "(1e-5 relative)",
}

# The models whose `schedules` check runs (a few seconds each): tied
# weights (GPT-2's head, T5's embeddings and head), ALBERT's layers sharing
# every weight, BatchNorm with squeeze-and-excitation, shifted windows,
# 1-d convolutions with GroupNorm, DeBERTa's disentangled relative
# attention.
SCHEDULE_MODELS = {"gpt2-ts", "t5-dynamo", "albert-ts", "efficientnet-ts",
                   "swin-ts", "wav2vec2-ts", "deberta-ts"}

# Failure reasons, by the first failing piece (docs/Models.md has the matrix).
# None today: the dynamo exports' masks and rotary tables are frozen by the
# exporter's record (docs/Training.md), ReLU6's Clip bounds read as
# constants.
KNOWN = {}


def known(names, checks, reason):
    for n in names:
        for c in checks:
            KNOWN[(n, c)] = reason


def main():
    with open(os.path.join(ROOT, "models", "corpus", "corpus.json")) as f:
        entries = json.load(f)["models"]
    for old in os.listdir(HERE):
        if old.endswith(".test"):
            os.remove(os.path.join(HERE, old))
    for e in entries:
        name = e["name"]
        checks = CHECKS + (["sgd-freeze"] if e.get("constants") else [])
        if name in SCHEDULE_MODELS:
            checks.append("schedules")
        if "clip_grad_norm" in e:
            checks.append("clip")
        for check in checks:
            lines = [f"# Model corpus (docs/Models.md): {name} "
                     f"({e['model']}, exporter {e['exporter']}) {WHAT[check]}."]
            reason = KNOWN.get((name, check))
            if "export_error" in e:
                reason = f"the exporter fails: {e['export_error']}"
            if reason:
                lines += ["# XFAIL: *", f"# Reason: {reason}"]
            if check == "1f1b":
                lines.append("# REQUIRES: mpi")
            lines += [
                "RUN: rm -rf %t && mkdir -p %t",
                f"RUN: %python %S/models.py --bin %pipedream_bin --work %t "
                f"--model {name} --check {check} | FileCheck %s",
                f"CHECK: OK {name} {check}",
            ]
            with open(os.path.join(HERE, f"{name}-{check}.test"), "w") as f:
                f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
