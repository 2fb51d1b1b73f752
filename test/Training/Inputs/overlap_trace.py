#!/usr/bin/python3
"""Checks from a pipedream-run --trace that the replicas' gradient
all-reduce of an update starts before the rank's last backward when the
update's own last backward comes earlier (overlapped with the drain).

    overlap_trace.py TRACE.json

For every rank and step: each `all_reduce` slice of an update U whose stage
(chunk) ran its last B before the rank's last B must start before that last
B starts. Same-thread events (one rank), so the order is causal, not a
timing. Prints one line per rank: `rank r: overlapped U1 U2 ..., waited
V1 ...` (updates whose sum started in the drain, and those started right
before the update), or MISMATCH; exits non-zero on a mismatch.
"""

import collections
import json
import sys


def main():
    with open(sys.argv[1]) as f:
        events = json.load(f)["traceEvents"]
    slices = [e for e in events if e.get("ph") == "X"]
    bad = 0
    by_rank = collections.defaultdict(list)
    for e in slices:
        if "step" in e.get("args", {}):
            by_rank[(e["tid"], e["args"]["step"])].append(e)
    summary = collections.defaultdict(lambda: (set(), set()))
    for (rank, step), evs in sorted(by_rank.items()):
        backward = [e for e in evs if e.get("cat") == "B"]
        if not backward:
            continue
        last_b = max(backward, key=lambda e: e["ts"])
        # The last B of each function (stageN_B) and its update stageN_U.
        last_of = {}
        for e in backward:
            fn = e["args"]["function"]
            if fn not in last_of or e["ts"] > last_of[fn]["ts"]:
                last_of[fn] = e
        for e in evs:
            if e.get("cat") != "all_reduce":
                continue
            update = e["args"]["buffer"]
            mine = last_of.get(update[:-1] + "B")
            overlapped, waited = summary[rank]
            if mine is not None and mine["ts"] < last_b["ts"]:
                if not e["ts"] < last_b["ts"]:
                    print(f"MISMATCH rank {rank} step {step}: the all-reduce "
                          f"of {update} starts at {e['ts']}, after the last "
                          f"backward's start {last_b['ts']}")
                    bad += 1
                overlapped.add(update)
            else:
                waited.add(update)
    for rank, (overlapped, waited) in sorted(summary.items()):
        print(f"rank {rank}: overlapped {' '.join(sorted(overlapped)) or '-'}; "
              f"waited {' '.join(sorted(waited)) or '-'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
