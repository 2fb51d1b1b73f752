"""Checks --schedule auto's record in a --report-json file (issue 17):
every synchronous kind was compared (the V-shaped ones with V = 2); the
chosen schedule (the report's) is the first candidate, fits the memory
limit and has the shortest simulated step of those that fit; every
candidate that fits is within the limit; the report's makespan is the
simulation of the chosen schedule after its own partition.

    check_schedule_search.py REPORT.json [--limit BYTES] [--kinds N]
"""
import argparse
import json
import sys

p = argparse.ArgumentParser()
p.add_argument("report")
p.add_argument("--limit", type=int, default=0)
p.add_argument("--kinds", type=int, default=7)
a = p.parse_args()
r = json.load(open(a.report))
cands = r["schedule_search"]
kinds = {c["kind"] for c in cands}
errors = []
if len(kinds) != a.kinds:
    errors.append(f"{len(kinds)} kinds compared, expected {a.kinds}: {sorted(kinds)}")
parted = [c for c in cands if "error" not in c]
for c in parted:
    if c["kind"] in ("zb-v", "dualpipe-v") and c["virtual_stages"] != 2:
        errors.append(f"{c['kind']} with V = {c['virtual_stages']}")
    if a.limit and c["fits"] and max(c["peak_memory_bytes"]) > a.limit:
        errors.append(f"{c['kind']} V={c['virtual_stages']} M={c['microbatches']} "
                      f"fits with a peak of {max(c['peak_memory_bytes'])}")
    if a.limit and not c["fits"] and max(c["peak_memory_bytes"]) <= a.limit:
        errors.append(f"{c['kind']} marked over the limit at "
                      f"{max(c['peak_memory_bytes'])}")
best = cands[0]
s = r["schedule"]
if (s["kind"], s["V"], s["M"]) != (best["kind"], best["virtual_stages"],
                                   best["microbatches"]):
    errors.append(f"report schedule {s} is not the first candidate {best}")
if not best["fits"]:
    errors.append("the chosen schedule does not fit")
for c in parted:
    if c["fits"] and c["step_time"] < best["step_time"] * (1 - 1e-9):
        errors.append(f"{c['kind']} V={c['virtual_stages']} M={c['microbatches']} "
                      f"is faster ({c['step_time']}) than the choice "
                      f"({best['step_time']})")
for e in errors:
    print("MISMATCH", e)
if errors:
    sys.exit(1)
print(f"OK {best['kind']} V={best['virtual_stages']} M={best['microbatches']} "
      f"of {len(cands)} candidates")
