"""Checks the order of a pipeline's messages in a pipedream-run --trace.

    message_order.py TRACE.json BUNDLE --step S

For every rank, the pairs (receive i, send j) of its program with j after i
and no call in between (the sends pipedream-run may issue at the receive,
runtime/lib/Pipeline.cpp sendAhead) are looked up in step S of the trace:
prints per rank how many such sends started before their receive
("ahead") and how many after ("in order"). No timing checks: only the
order of the slices' start times on one lane.
"""

import argparse
import json
import os
import re
import sys

parser = argparse.ArgumentParser()
parser.add_argument("trace")
parser.add_argument("bundle")
parser.add_argument("--step", type=int, required=True)
args = parser.parse_args()

manifest = json.load(open(os.path.join(args.bundle, "bundle.json")))
events = [e for e in json.load(open(args.trace))["traceEvents"]
          if e.get("ph") == "X" and e["args"].get("step") == args.step]
for r, rank in enumerate(manifest["pipeline"]["ranks"]):
    program = rank["program"]
    starts = {}
    for e in events:
        m = re.match(r"(send to|recv from) (\d+) \(tag (\d+)\)", e["name"])
        if e["tid"] == r and m:
            starts[(m.group(1).split()[0], int(m.group(2)), int(m.group(3)))] = e["ts"]
    ahead = in_order = 0
    for i, ins in enumerate(program):
        if ins["op"] != "recv":
            continue
        for later in program[i + 1:]:
            if later["op"] == "call":
                break
            if later["op"] != "send":
                continue
            send = starts.get(("send", later["peer"], later["tag"]))
            recv = starts.get(("recv", ins["peer"], ins["tag"]))
            if send is None or recv is None:
                sys.exit("rank %d: no slice for send tag %d or recv tag %d"
                         % (r, later["tag"], ins["tag"]))
            if send < recv:
                ahead += 1
            else:
                in_order += 1
    print("rank %d: %d sent ahead, %d in order" % (r, ahead, in_order))
