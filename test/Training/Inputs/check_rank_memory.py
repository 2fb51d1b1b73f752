"""Checks pipedream-run's "peak memory per rank" lines against report.json.

Usage: check_rank_memory.py RUN_LOG RANKS PERCENT

pipedream-run prints, for a pipeline bundle with a report.json, one line
per rank: `rank R: P MiB peak, A MiB above the S MiB at start;
report.json: T MiB (+D%)`. This recomputes D from A and T (the printed
percentage is not trusted) and prints `OK N ranks within PERCENT% of
report.json`, or one MISMATCH line per rank outside it (exit 1), or
MISSING when a rank has no line.
"""
import re
import sys


def main():
    log, ranks, percent = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    pattern = re.compile(
        r"rank (\d+): ([0-9.]+) MiB peak, ([0-9.]+) MiB above the "
        r"([0-9.]+) MiB at start; report\.json: ([0-9.]+) MiB")
    found = {}
    with open(log) as f:
        for line in f:
            m = pattern.search(line)
            if m:
                found[int(m.group(1))] = (float(m.group(3)), float(m.group(5)))
    bad = False
    for rank in range(ranks):
        if rank not in found:
            print(f"MISSING rank {rank}: no peak memory line in {log}")
            bad = True
            continue
        measured, reported = found[rank]
        if reported <= 0:
            print(f"MISMATCH rank {rank}: report.json {reported} MiB")
            bad = True
            continue
        diff = 100.0 * (measured - reported) / reported
        if abs(diff) > percent:
            print(f"MISMATCH rank {rank}: measured {measured} MiB above start,"
                  f" report.json {reported} MiB ({diff:+.1f}%)")
            bad = True
    if bad:
        sys.exit(1)
    print(f"OK {ranks} ranks within {percent:g}% of report.json")


if __name__ == "__main__":
    main()
