"""Helpers of checkpoint.test and trace.test (real bundles of examples/mlp.onnx).

  checkpoint.py data OUT.npz --samples N    x f32[N x 16], labels i64[N] in [0, 10)
  checkpoint.py corrupt FILE                flips one byte in the middle of FILE
  checkpoint.py ls DIR                      the file names in DIR, sorted
  checkpoint.py check-trace RUN.json BUNDLE --steps N
        checks the Chrome trace of `pipedream-run BUNDLE --steps N --trace`:
        valid JSON, one lane per rank, per rank and step one slice per call
        of its program (pipeline) or per micro-batch plus the update
        (training), one per send and recv (a message group's slice counts
        for each message it carries), one per step, for pipelines one
        step agreement per rank and step that no call overlaps. No timing
        checks. With --evals V --eval-microbatches E (`--eval-data`): per
        evaluation and rank E times each call, send and recv of its
        evaluation program (single-rank: the evaluation function), one
        agreement (pipelines) and one slice for the whole, all of category
        E and with `after_step` instead of `step`.
"""

import argparse
import json
import os
import sys

import numpy as np

parser = argparse.ArgumentParser()
parser.add_argument("command")
parser.add_argument("path")
parser.add_argument("bundle", nargs="?")
parser.add_argument("--samples", type=int, default=80)
parser.add_argument("--steps", type=int, default=1)
parser.add_argument("--evals", type=int, default=0)
parser.add_argument("--eval-microbatches", type=int, default=0)
args = parser.parse_args()

if args.command == "data":
    rng = np.random.default_rng(7)
    x = rng.standard_normal((args.samples, 16)).astype(np.float32)
    labels = rng.integers(0, 10, size=args.samples).astype(np.int64)
    np.savez(args.path, x=x, labels=labels)
elif args.command == "corrupt":
    data = bytearray(open(args.path, "rb").read())
    data[len(data) // 2] ^= 0x40
    open(args.path, "wb").write(bytes(data))
elif args.command == "ls":
    for name in sorted(os.listdir(args.path)):
        print(name)
elif args.command == "check-trace":
    trace = json.load(open(args.path))
    manifest = json.load(open(os.path.join(args.bundle, "bundle.json")))
    events = trace["traceEvents"]
    slices = [e for e in events if e.get("ph") == "X"]
    lanes = sorted(e["tid"] for e in events if e.get("name") == "thread_name")
    expected = {}
    if "pipeline" in manifest:
        for r, rank in enumerate(manifest["pipeline"]["ranks"]):
            for ins in rank["program"]:
                if ins["op"] in ("call", "send", "recv"):
                    key = (r, ins.get("action") or ins["function"]) \
                        if ins["op"] == "call" else (r, ins["op"])
                    expected[key] = expected.get(key, 0) + args.steps
            expected[(r, "step")] = args.steps
            # The ranks' exchange of the step's status, once per step.
            expected[(r, "agree")] = args.steps
            if args.evals:
                messages = sum(ins["op"] in ("call", "send", "recv")
                               for ins in rank["eval"]["program"])
                expected[(r, "E")] = args.evals * (
                    messages * args.eval_microbatches + 2)
        ranks = len(manifest["pipeline"]["ranks"])
    else:
        m = manifest["training"]["microbatches"]
        expected = {(0, "FB"): m * args.steps, (0, "U"): args.steps,
                    (0, "step"): args.steps}
        if args.evals:
            expected[(0, "E")] = args.evals * (args.eval_microbatches + 1)
        ranks = 1
    got = {}
    for s in slices:
        assert s["dur"] >= 0 and s["ts"] >= 0, s
        assert ("after_step" in s["args"]) == (s["cat"] == "E"), s
        key = (s["tid"], s["cat"])
        # A message group's slice ("send to 1 (tags 4, 5)") carries several
        # of the program's sends or receives (runtime/lib/MessageGroups.h).
        carried = 1
        if s["cat"] in ("send", "recv") and "(tags " in s["name"]:
            carried = s["name"].count(",") + 1
        got[key] = got.get(key, 0) + carried
    if lanes != list(range(ranks)):
        sys.exit("lanes %s, expected %d ranks" % (lanes, ranks))
    if got != expected:
        sys.exit("slice counts %s, expected %s" % (sorted(got.items()),
                                                   sorted(expected.items())))
    # Waits are their own slices: no call on a lane overlaps its step
    # agreement (the update after it starts when the agreement ends).
    for a in (s for s in slices if s["cat"] == "agree"):
        for c in slices:
            if (c["tid"] == a["tid"] and "function" in c["args"] and
                    c["ts"] < a["ts"] + a["dur"] and a["ts"] < c["ts"] + c["dur"]):
                sys.exit("call %s overlaps %s on rank %d" % (
                    c["name"], a["name"], a["tid"]))
    other = trace["otherData"]
    print("trace ok: %d ranks, %d slices, measured bubble %s" % (
        ranks, len(slices),
        "null" if other["measured_bubble_fraction"] is None else "number"))
else:
    sys.exit("unknown command " + args.command)
