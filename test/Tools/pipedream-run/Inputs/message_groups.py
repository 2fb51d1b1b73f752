"""Helpers of message-groups.test (runtime/lib/MessageGroups.h).

    message_groups.py data OUT.npz --samples N --seq T --vocab V
        idx i64[N x T] and labels i64[N x T] in [0, V)
    message_groups.py slices TRACE.json BUNDLE --step S
        per rank, in program order, the names of step S's send and recv
        slices, then how many of the program's sends and receives they
        carry (a slice named "(tags a, b)" carries two)
"""

import argparse
import json
import os
import re

import numpy as np

parser = argparse.ArgumentParser()
parser.add_argument("command")
parser.add_argument("path")
parser.add_argument("bundle", nargs="?")
parser.add_argument("--samples", type=int, default=16)
parser.add_argument("--seq", type=int, default=8)
parser.add_argument("--vocab", type=int, default=64)
parser.add_argument("--step", type=int, default=2)
args = parser.parse_args()

if args.command == "data":
    rng = np.random.default_rng(11)
    shape = (args.samples, args.seq)
    np.savez(args.path, idx=rng.integers(0, args.vocab, shape),
             labels=rng.integers(0, args.vocab, shape))
elif args.command == "slices":
    manifest = json.load(open(os.path.join(args.bundle, "bundle.json")))
    events = sorted((e for e in json.load(open(args.path))["traceEvents"]
                     if e.get("ph") == "X" and
                     e["args"].get("step") == args.step and
                     e["cat"] in ("send", "recv")),
                    key=lambda e: (e["tid"], e["ts"]))
    for r, rank in enumerate(manifest["pipeline"]["ranks"]):
        mine = [e["name"] for e in events if e["tid"] == r]
        carried = sum(len(re.search(r"\((?:tags? )?([^)]*)\)", n)
                          .group(1).split(",")) for n in mine)
        program = sum(ins["op"] in ("send", "recv") for ins in rank["program"])
        print("rank %d: %s" % (r, "; ".join(mine)))
        print("rank %d: %d slices carry %d of %d messages"
              % (r, len(mine), carried, program))
