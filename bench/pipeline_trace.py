#!/usr/bin/python3
"""Where a pipeline's step goes, per rank, from pipedream-run --trace.

    /usr/bin/python3 bench/pipeline_trace.py TRACE.json

For every step after the first (warm-up): per rank, the time in stage
calls (F, B, W, U), in sends (the copy into the transport's buffer; with
blocking sends, the wait for the receiver too), in receives (waiting for
the peer), and the rest of the step's span; the measured bubble (1 - calls
/ (ranks x span)); the time both ranks were outside calls at once (nothing
in the schedule asks for that with K = 2: message latency, or a rank not
on a CPU); and the message latency of receives that waited (send start
to receive end). Medians over the steps. Then a replay of each step
with the measured call durations and free, instant messages (replay()):
the span the schedule needs with these call times, the share of the
measured step lost to message latency, waits the schedule does not need
and ranks off the CPU, and the bubble the schedule leaves with the
measured (possibly imbalanced) call times; then the same bubble with each
call replaced by the median of its kind on its rank (per-call variation
removed) and on all ranks (imbalance removed too: the schedule's own
bubble). Used by bench/pipeline.py.
"""

import json
import statistics
import sys


def load_events(path):
    """The complete ("X") events of a pipedream-run --trace file, the steps
    they belong to and the ranks (thread ids), both sorted."""
    with open(path) as f:
        trace = json.load(f)
    events = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    return (events, sorted({e["args"]["step"] for e in events}),
            sorted({e["tid"] for e in events}))


def step_events(events, steps):
    """For each of `steps` with step spans: (step, the step's events, the
    earliest start and the latest end of its ranks' step spans)."""
    for step in steps:
        here = [e for e in events if e["args"]["step"] == step]
        spans = [e for e in here if e["name"].startswith("step")]
        if not spans:
            continue
        yield (step, here, min(e["ts"] for e in spans),
               max(e["ts"] + e["dur"] for e in spans))


def analyze(path):
    events, steps, ranks = load_events(path)
    steps = steps[1:] or steps
    rows = {r: {"calls": [], "send": [], "recv": [], "other": []} for r in ranks}
    bubbles, overlap, latency = [], [], []
    sends = {(e["args"]["step"], e["tid"], e["args"]["peer"], e["args"]["tag"]): e
             for e in events if e["cat"] == "send"}
    for step, here, begin, end in step_events(events, steps):
        span = end - begin
        busy = {r: [] for r in ranks}
        for r in ranks:
            mine = [e for e in here if e["tid"] == r and
                    not e["name"].startswith("step")]
            calls = sum(e["dur"] for e in mine if "function" in e["args"])
            send = sum(e["dur"] for e in mine if e["cat"] == "send")
            recv = sum(e["dur"] for e in mine if e["cat"] == "recv")
            for key, value in (("calls", calls), ("send", send),
                               ("recv", recv),
                               ("other", span - calls - send - recv)):
                rows[r][key].append(value / 1000.0)
            busy[r] = sorted((e["ts"], e["ts"] + e["dur"]) for e in mine
                             if "function" in e["args"])
        bubbles.append(1 - sum(sum(b - a for a, b in busy[r]) for r in ranks)
                       / (len(ranks) * span))
        # Time when no rank is in a call: sweep over call boundaries.
        points = sorted({begin, end, *[t for r in ranks for iv in busy[r]
                                       for t in iv]})
        idle = 0.0
        for a, b in zip(points, points[1:]):
            mid = (a + b) / 2
            if not any(x <= mid < y for r in ranks for x, y in busy[r]):
                idle += b - a
        overlap.append(idle / span)
        for e in here:
            if e["cat"] != "recv":
                continue
            s = sends.get((step, e["args"]["peer"], e["tid"], e["args"]["tag"]))
            if s and e["ts"] < s["ts"]:
                latency.append(e["ts"] + e["dur"] - s["ts"])
    return ranks, rows, bubbles, overlap, latency


def replay(path, duration=None):
    """Per step after the first: the span the schedule would take with the
    measured call durations and sends that cost nothing and arrive the
    moment they are sent (every rank starting at the step's start, each running
    its events in its measured order, a receive waiting only for its send).
    Returns [(measured span, replayed span, calls of all ranks)] in us:
    measured - replayed is what communication latency, waits the schedule
    does not need and a rank off the CPU between calls cost; 1 - calls /
    (ranks x replayed) the bubble the schedule leaves with the measured
    (imbalanced, load-inflated) call times. A step's agreement (`agree`,
    the end-of-step exchange of statuses) is a rendezvous: each rank leaves
    its k-th one when every rank has reached its k-th (replayed as its
    measured length, the agreement of a rank that finished early was its
    wait for the others: the replayed span kept the latency it meant to
    remove). `duration(event)`, when given, replaces each call's measured
    length (call_medians)."""
    events, steps, ranks = load_events(path)
    result = []
    for _, here, begin, end in step_events(events, steps[1:]):
        span = end - begin
        seq = {r: sorted((e for e in here if e["tid"] == r and
                          not e["name"].startswith("step")),
                         key=lambda e: e["ts"]) for r in ranks}
        t = {r: 0.0 for r in ranks}
        pos = {r: 0 for r in ranks}
        sent = {}
        calls = 0.0
        # k -> {rank: arrival} of the k-th agreement; agreements passed.
        arrivals, agreed = {}, {r: 0 for r in ranks}
        moved = True
        while moved:
            moved = False
            for r in ranks:
                while pos[r] < len(seq[r]):
                    e = seq[r][pos[r]]
                    if e["cat"] == "agree":
                        k = agreed[r]
                        arrivals.setdefault(k, {}).setdefault(r, t[r])
                        if len(arrivals[k]) < len(ranks):
                            break
                        t[r] = max(arrivals[k].values())
                        agreed[r] += 1
                    elif e["cat"] == "recv":
                        key = (e["args"]["peer"], r, e["args"]["tag"])
                        has_send = any(
                            x["cat"] == "send" and
                            (x["args"]["peer"], x["args"]["tag"]) ==
                            (r, e["args"]["tag"])
                            for x in seq.get(e["args"]["peer"], []))
                        if key not in sent and has_send:
                            break
                        t[r] = max(t[r], sent.get(key, 0.0))
                    elif e["cat"] == "send":
                        sent[(r, e["args"]["peer"], e["args"]["tag"])] = t[r]
                    else:
                        d = (duration(e) if duration and "function" in
                             e["args"] else e["dur"])
                        t[r] += d
                        if "function" in e["args"]:
                            calls += d
                    pos[r] += 1
                    moved = True
        if any(pos[r] < len(seq[r]) for r in ranks):
            continue  # a receive without its send in this step
        result.append((span, max(t.values()), calls))
    return len(ranks), result


def call_medians(path, per_rank):
    """A duration function for replay(): each call the median length of
    the calls of its kind (F, B, W, U) over steps 2.., on its own rank
    (`per_rank`) or on every rank."""
    events, steps, _ = load_events(path)
    lengths = {}
    for e in events:
        if "function" in e["args"] and e["args"]["step"] in steps[1:]:
            key = (e["tid"] if per_rank else None, e["cat"])
            lengths.setdefault(key, []).append(e["dur"])
    medians = {k: statistics.median(v) for k, v in lengths.items()}
    return lambda e: medians.get((e["tid"] if per_rank else None, e["cat"]),
                                 e["dur"])


def report(path, out=sys.stdout):
    ranks, rows, bubbles, overlap, latency = analyze(path)
    med = statistics.median
    for r in ranks:
        x = rows[r]
        if not x["calls"]:
            continue
        print(f"    rank {r}: calls {med(x['calls']):7.1f} ms, sends "
              f"{med(x['send']):6.1f} ms, receives {med(x['recv']):6.1f} ms,"
              f" other {med(x['other']):5.1f} ms per step (medians)", file=out)
    if bubbles:
        print(f"    bubble over steps 2..: median {100 * med(bubbles):.1f}%; "
              f"no rank in a call {100 * med(overlap):.1f}% of the step",
              file=out)
    if latency:
        latency.sort()
        print(f"    message latency of waiting receives: median "
              f"{med(latency):.0f} us, p90 "
              f"{latency[int(0.9 * (len(latency) - 1))]:.0f} us "
              f"({len(latency)} receives)", file=out)
    k, replayed = replay(path)
    if replayed:
        lost = [1 - r / m for m, r, _ in replayed]
        implied = [1 - c / (k * r) for _, r, c in replayed]
        print(f"    replay with the measured call times and free, instant messages"
              f" (steps 2..): span {med([r for _, r, _ in replayed]) / 1e3:.1f}"
              f" of {med([m for m, _, _ in replayed]) / 1e3:.1f} ms; lost to "
              f"messages and waits off the schedule {100 * med(lost):.1f}% of "
              f"the step; bubble the schedule leaves with these call times "
              f"{100 * med(implied):.1f}%", file=out)
        # The same with each call its kind's median on its rank (what
        # per-call variation costs: a step's first F packing its weights,
        # noise) and on all ranks (what the ranks' imbalance costs).
        shares = []
        for per_rank in (True, False):
            _, rows = replay(path, call_medians(path, per_rank))
            shares.append(100 * med([1 - c / (k * r) for _, r, c in rows]))
        print(f"    ... with each call its kind's median on its rank "
              f"{shares[0]:.1f}%, on all ranks {shares[1]:.1f}% (the "
              f"schedule's own bubble)", file=out)
    return med(bubbles) if bubbles else float("nan")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    report(sys.argv[1])
