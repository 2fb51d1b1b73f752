#!/usr/bin/python3
"""Pipelined training throughput: K MPI ranks vs one rank, same model and batch.

    /usr/bin/python3 bench/pipeline.py --bin BUILD/bin [--stages 2]
        [--schedule 1f1b] [--microbatches 8] [--steps 10] [--dim 128]
        [--layers 4] [--seq 32] [--microbatch-size 4] [--work DIR]
        [--transport auto|mpi|threads] [--torch-venv VENV] [--measure-link]
        [--clip-grad-norm MAX]
    /usr/bin/python3 bench/pipeline.py --bin BUILD/bin --schedules zb-h1,1f1b
        [--stages 4] [--transport threads] [--repeats 5] ...

Exports a GPT-like model (models/export_torch.py gpt, sized for 2 cores),
compiles a single-rank training bundle and a K-stage pipeline bundle with the
same M micro-batches, trains both `--steps` steps with pipedream-run (the
pipeline over `--ranks K`, Open MPI, or with `--transport threads`, or
without mpirun, on threads of one process), and prints
samples/s of each, their ratio, and the pipeline's measured bubble fraction
next to the simulated one (from `--trace`). Every rank, and the single
rank, runs its GEMMs on one thread (PIPEDREAM_NUM_THREADS=1, as torch's
side); the single rank also runs with K GEMM threads, the other way to use
the pipeline's K cores. Not a test: these machines are shared and noisy;
quote medians and ratios.

With --schedules zb-h1,1f1b (issue 17) it compares schedules instead:
each is compiled (same partition, same M) and trained --repeats times;
it prints per schedule the median step's samples/s and the median per-step
measured bubble fraction (from the --trace slices, steps after the first of
each run), next to the simulated bubble with the partition's stage costs
and with unit costs. --transport threads runs the ranks on threads of one
process (K = 4 on these 2-core machines), mpi under mpirun.

With --measure-link, the pipeline is partitioned with the link that
`pipedream-run --measure-link` measures on the same transport (written to
WORK/link.json and given as `--cost-model`) instead of the analytical
`cpu` device's.

With --torch-venv VENV (a venv with torch >= 2.4 from pip; Debian has
1.13), also runs bench/torch_pipeline.py in it: PyTorch's
torch.distributed.pipelining, Schedule1F1B over gloo, K processes of one
thread, the same GPT cut after the same number of blocks as our partition
(the middle if that cannot be read from the report), same M, batch and
data, and prints its samples/s and the ratio ours/torch.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def blocks_before_cut(report):
    """Blocks wholly on stage 0 of a K=2 --report: the GPT's blocks are
    /block (the first) and /more.I; a block counts as stage 0's when its
    MLP starts there (a trailing LayerNorm of the next block does not
    count), i.e. the nearest block boundary."""
    row = re.search(r"^\s*0\s+0\s+0\s.*\.\. (\S+)\s*$", report, re.M)
    if not row:
        return None
    last = row.group(1)
    more = re.match(r"/more\.(\d+)/(.*)", last)
    if not more:
        return 1 if last.startswith("/block/mlp") else None
    i, rest = int(more.group(1)), more.group(2)
    # /more.i/mlp/... ends block i+2 (1-based); anything earlier in more.i
    # leaves that block mostly on stage 1.
    return i + 2 if rest.startswith("mlp") or rest.startswith("Add_1") else i + 1


def step_bubbles(trace_path, ranks):
    """Measured bubble fraction of every step of a --trace file, by step:
    1 - (time in calls) / (ranks x the step's span), as pipedream-run
    computes it for the last step."""
    import json
    with open(trace_path) as f:
        events = json.load(f)["traceEvents"]
    span, busy = {}, {}
    for e in events:
        if e.get("ph") == "M" or "args" not in e or "step" not in e["args"]:
            continue
        step = e["args"]["step"]
        ts, dur = e["ts"], e["dur"]
        if e["name"].startswith("step "):
            lo, hi = span.get(step, (float("inf"), float("-inf")))
            span[step] = (min(lo, ts), max(hi, ts + dur))
        elif "function" in e["args"]:
            busy[step] = busy.get(step, 0.0) + dur
    out = {}
    for step, (lo, hi) in span.items():
        if hi > lo:
            out[step] = max(0.0, 1.0 - busy.get(step, 0.0) / (ranks * (hi - lo)))
    return out


def prepare(args):
    """The work directory (--work, or a new temporary one), the GPT exported
    there by models/export_torch.py (dynamic batch) and random training data
    of 4 batches of M x B rows (idx and labels, seed 0): returns (work
    directory, gpt.onnx path, data.npz path)."""
    work = args.work or tempfile.mkdtemp(prefix="bench-pipeline-")
    os.makedirs(work, exist_ok=True)
    onnx_path = os.path.join(work, "gpt.onnx")
    run(["/usr/bin/python3", os.path.join(ROOT, "models", "export_torch.py"),
         "gpt", onnx_path, "--dynamic-batch", "--dim", str(args.dim),
         "--heads", "4", "--seq", str(args.seq), "--layers", str(args.layers)])
    rows = args.microbatches * args.microbatch_size * 4
    rng = np.random.default_rng(0)
    data = os.path.join(work, "data.npz")
    np.savez(data, idx=rng.integers(0, 64, size=(rows, args.seq)),
             labels=rng.integers(0, 64, size=(rows, args.seq)))
    return work, onnx_path, data


def transport_flags(args):
    """pipedream-run's flags for --transport: MPI processes (--ranks K) or
    threads of one process; auto: MPI where mpirun is installed."""
    transport = args.transport
    if transport == "auto":
        transport = "mpi" if shutil.which("mpirun") else "threads"
    return (["--ranks", str(args.stages)] if transport == "mpi"
            else ["--transport", "threads"])


def compare_schedules(args):
    """--schedules: the same model, partition and M under each schedule."""
    work, onnx_path, data = prepare(args)
    m, b = args.microbatches, args.microbatch_size
    n = m * b
    compile_ = os.path.join(args.bin, "pipedream-compile")
    runner = os.path.join(args.bin, "pipedream-run")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    ranks = transport_flags(args)
    common = [onnx_path, "--loss", "cross-entropy", "--optimizer", "adam",
              "--microbatches", str(m), "--batch-size", str(n),
              "--stages", str(args.stages)]
    if args.clip_grad_norm:
        common += ["--clip-grad-norm", repr(args.clip_grad_norm)]
    rows = []
    for kind in args.schedules.split(","):
        bundle = os.path.join(work, kind)
        shutil.rmtree(bundle, ignore_errors=True)
        report = run([compile_, *common, "--schedule", kind, "-o", bundle,
                      "--report"]).stdout
        sim = re.search(r"bubble fraction: ([0-9.]+) simulated with the stage "
                        r"costs, ([0-9.]+) with unit costs", report)
        secs, bubbles = [], []
        for rep in range(args.repeats):
            trace = os.path.join(work, f"{kind}.{rep}.trace.json")
            out = run([runner, bundle, "--data", data, "--steps",
                       str(args.steps), *ranks, "--trace", trace],
                      env=env).stdout
            steps = re.findall(r"^step (\d+)/\d+ loss \S+ samples/s ([0-9.]+)$",
                               out, re.M)
            # The first step of a run warms caches and pages: left out.
            secs += [n / float(r) for i, r in steps
                     if int(i) > 1 and float(r) > 0]
            bubbles += [v for step, v in step_bubbles(trace, args.stages).items()
                        if step > 1]
        rows.append((kind, n / float(np.median(secs)) if secs else float("nan"),
                     float(np.median(bubbles)) if bubbles else float("nan"),
                     len(secs),
                     float(sim.group(1)) if sim else float("nan"),
                     float(sim.group(2)) if sim else float("nan")))
    print(f"GPT d={args.dim} L={args.layers} T={args.seq}, batch {n} = {m} x {b}, "
          f"K={args.stages} ({transport}), {args.repeats} runs x {args.steps} "
          f"steps, adam; medians over the steps after each run's first")
    print(f"  {'schedule':<10} {'samples/s':>10} {'bubble':>8} {'steps':>6} "
          f"{'simulated':>10} {'unit-cost':>10}")
    for kind, rate, bubble, count, simc, simu in rows:
        print(f"  {kind:<10} {rate:10.1f} {bubble * 100:7.1f}% {count:6d} "
              f"{simc * 100:9.1f}% {simu * 100:9.1f}%")
    base = rows[-1]
    for kind, rate, *_ in rows[:-1]:
        print(f"  {kind} / {base[0]}: {rate / base[1]:.2f}x samples/s")
    return 0


class ThreadCpu:
    """Samples, while a run goes on, the CPU time (utime + stime) of every
    thread of the processes whose command line holds `marker` (the ranks
    of one pipedream-run), by thread kind: the rank's main thread, the MPI
    progress thread (named pd-mpi-progress), others (Open MPI's own, GEMM
    workers). The last sample of a thread stands for its total."""

    def __init__(self, marker):
        import threading
        self.marker, self.ticks, self.stop = marker, {}, threading.Event()
        self.hz = os.sysconf("SC_CLK_TCK")
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _sample(self):
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if self.marker.encode() not in f.read():
                        continue
                if "pipedream-run" not in open(f"/proc/{pid}/comm").read():
                    continue
                for tid in os.listdir(f"/proc/{pid}/task"):
                    with open(f"/proc/{pid}/task/{tid}/stat") as f:
                        stat = f.read()
                    comm = stat[stat.index("(") + 1:stat.rindex(")")]
                    fields = stat[stat.rindex(")") + 2:].split()
                    kind = ("main" if tid == pid else
                            "progress" if comm == "pd-mpi-progress" else "other")
                    self.ticks[(pid, tid)] = (kind, int(fields[11]) + int(fields[12]))
            except (OSError, ValueError):
                continue

    def _loop(self):
        while not self.stop.wait(0.1):
            self._sample()

    def finish(self):
        self.stop.set()
        self.thread.join()
        by = {}
        for (pid, _), (kind, t) in self.ticks.items():
            by.setdefault(pid, {}).setdefault(kind, 0)
            by[pid][kind] += t
        return {pid: {k: v / self.hz for k, v in kinds.items()}
                for pid, kinds in by.items()}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--stages", type=int, default=2)
    p.add_argument("--schedule", default="1f1b")
    p.add_argument("--microbatches", type=int, default=8)
    p.add_argument("--microbatch-size", type=int, default=4)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--seq", type=int, default=32)
    p.add_argument("--work")
    p.add_argument("--schedules",
                   help="comma-separated kinds to compare (e.g. zb-h1,1f1b)")
    p.add_argument("--repeats", type=int, default=3,
                   help="runs per schedule with --schedules")
    p.add_argument("--transport", choices=["auto", "mpi", "threads"],
                   default="auto",
                   help="the pipeline's ranks as MPI processes or threads "
                        "of one process (auto: MPI where mpirun exists)")
    p.add_argument("--measure-link", action="store_true",
                   help="partition with the link pipedream-run "
                        "--measure-link measures on this transport")
    p.add_argument("--torch-venv",
                   help="venv with torch >= 2.4: also run PyTorch's pipeline")
    p.add_argument("--clip-grad-norm", type=float, default=None,
                   help="gradient clipping on every side (pipedream-compile "
                        "--clip-grad-norm; torch: the stages' squared norms "
                        "all-reduced, as Megatron's)")
    args = p.parse_args()
    if args.schedules:
        return compare_schedules(args)
    work, onnx_path, data = prepare(args)
    m, b = args.microbatches, args.microbatch_size
    n = m * b
    compile_ = os.path.join(args.bin, "pipedream-compile")
    common = [onnx_path, "--loss", "cross-entropy", "--optimizer", "adam",
              "--microbatches", str(m), "--batch-size", str(n)]
    if args.clip_grad_norm:
        common += ["--clip-grad-norm", repr(args.clip_grad_norm)]
    single = os.path.join(work, "single")
    piped = os.path.join(work, "pipeline")
    for d in (single, piped):
        shutil.rmtree(d, ignore_errors=True)
    run([compile_, *common, "-o", single])
    link = []
    if args.measure_link:
        link_path = os.path.join(work, "link.json")
        print(run([os.path.join(args.bin, "pipedream-run"), "--measure-link",
                   link_path, *transport_flags(args)]).stdout.strip())
        link = ["--cost-model", link_path]
    report = run([compile_, *common, "-o", piped, "--stages", str(args.stages),
                  "--schedule", args.schedule, "--report", *link]).stdout
    simulated = re.search(r"bubble fraction: ([0-9.]+) simulated", report)

    # One thread per rank, as torch's side (set_num_threads(1) in every
    # process): program.so's GEMM would otherwise take every core the rank
    # is given, two for a single rank here (before 2026-12-06 the single
    # rank ran so, against torch's one thread).
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               PIPEDREAM_NUM_THREADS="1")
    runner = os.path.join(args.bin, "pipedream-run")

    def throughput(bundle, extra, threads=1):
        out = run([runner, bundle, "--data", data, "--steps", str(args.steps),
                   *extra],
                  env=dict(env, PIPEDREAM_NUM_THREADS=str(threads))).stdout
        line = [l for l in out.splitlines() if l.startswith("trained")][-1]
        return float(re.search(r"([0-9.]+) samples/s", line).group(1)), out

    def median_rate(out):
        """samples/s of the median step (pipedream-run's per-step lines)."""
        secs = [n / float(r) for r in
                re.findall(r"^step \d+/\d+ loss \S+ samples/s ([0-9.]+)$",
                           out, re.M) if float(r) > 0]
        return n / float(np.median(secs)) if secs else float("nan")

    one, one_out = throughput(single, [])
    # The other way to use K cores: one rank, its GEMMs on K threads.
    wide, wide_out = throughput(single, [], threads=args.stages)
    ranks = transport_flags(args)
    trace = os.path.join(work, "trace.json")
    sampler = ThreadCpu(piped)
    many, out = throughput(piped, ranks + ["--trace", trace])
    thread_cpu = sampler.finish()
    measured = re.search(r"bubble fraction: measured ([0-9.]+)%", out)
    print(f"GPT d={args.dim} L={args.layers} T={args.seq}, batch {n} = {m} x {b}, "
          f"{args.steps} steps, adam"
          + (f", clip-grad-norm {args.clip_grad_norm}"
             if args.clip_grad_norm else ""))
    print(f"  single rank          {one:10.1f} samples/s (1 thread)")
    print(f"  {args.schedule} K={args.stages} "
          f"({'mpi' if ranks[0] == '--ranks' else 'threads'}) {many:10.1f} samples/s"
          f"   ratio {many / one:.2f}x (1 thread per rank)")
    print(f"  single rank, {args.stages} GEMM threads {wide:10.1f} samples/s "
          f"(median step {median_rate(wide_out):.1f}): the pipeline's "
          f"cores in one rank; pipeline/this {many / wide:.2f}x")
    if args.torch_venv:
        split = blocks_before_cut(report) if args.stages == 2 else None
        cmd = [os.path.join(args.torch_venv, "bin", "python"),
               os.path.join(ROOT, "bench", "torch_pipeline.py"),
               "--stages", str(args.stages), "--microbatches", str(m),
               "--microbatch-size", str(b), "--steps", str(args.steps),
               "--dim", str(args.dim), "--heads", "4",
               "--layers", str(args.layers), "--seq", str(args.seq),
               "--data", data, "--single"]
        if args.clip_grad_norm:
            cmd += ["--clip-grad-norm", repr(args.clip_grad_norm)]
        if split is not None:
            cmd += ["--split", str(split)]
        tout = run(cmd, env=env).stdout
        tline = [l for l in tout.splitlines() if "Schedule1F1B" in l][-1]
        theirs = float(re.search(r"([0-9.]+) samples/s", tline).group(1))
        sline = [l for l in tout.splitlines() if "single process" in l][-1]
        tsingle = float(re.search(r"([0-9.]+) samples/s", sline).group(1))
        # Ours above: pipedream-run's mean over all steps (no warm-up);
        # torch: the median step after its warm-up. Compare medians.
        ours_med, one_med = median_rate(out), median_rate(one_out)
        print(f"  torch 1f1b K={args.stages} (gloo) {theirs:10.1f} samples/s"
              f" (median step)")
        print(f"  median steps: {args.schedule} K={args.stages} {ours_med:.1f}, "
              f"single rank {one_med:.1f}, torch {theirs:.1f} samples/s; "
              f"ours/torch {ours_med / theirs:.2f}x, "
              f"single rank/torch {one_med / theirs:.2f}x")
        print(f"  torch single process {tsingle:.1f} samples/s (median step):"
              f" torch pipeline/single {theirs / tsingle:.2f}x,"
              f" our single rank/torch single {one_med / tsingle:.2f}x")
        print(f"    {sline.strip()}")
        print(f"    {tline.strip()}")
    print(f"  bubble: measured {measured.group(1) + '%' if measured else '?'}, "
          f"simulated {float(simulated.group(1)) * 100 if simulated else float('nan'):.1f}%")
    # Per rank: calls, sends, receives (bench/pipeline_trace.py), and how
    # loaded the machine was (a shared machine's other jobs show up as
    # waits: a rank not on a CPU holds its peer up).
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import pipeline_trace
    pipeline_trace.report(trace)
    # CPU time by thread kind per rank process (sampled every 0.1 s; the
    # last 0.1 s of each thread may be missing): does the progress thread
    # take CPU from the compute?
    for i, (pid, kinds) in enumerate(sorted(thread_cpu.items())):
        print(f"    process {i}: CPU s over {args.steps} steps: " + ", ".join(
            f"{k} {v:.2f} ({v / args.steps * 1e3:.1f} ms/step)"
            for k, v in sorted(kinds.items())))
    print(f"    load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
