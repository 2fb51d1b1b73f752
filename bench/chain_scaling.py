#!/usr/bin/python3
"""Compile time against model length: is every phase and pass linear?
(issue 16)

    bench/chain_scaling.py [--build BUILD] [--layers 125,250,500,1000]
                           [--dim 16] [--inference] [--distinct]
                           [--top 12] [--work DIR] [--extra "FLAGS"]
                           [--json OUT.json]

For each N it writes a chain of N MatMul + Tanh layers
(bench/models/chain.py), compiles it with `pipedream-compile --time-phases
--no-cache` (a training bundle, --loss mse, one rank; --inference for the
forward only) and prints, per phase and for the costliest MLIR passes, the
CPU milliseconds per layer at each N and the exponent k of t ~ N^k between
consecutive sizes (1.0: linear; 2.0: quadratic).

The machine is usually shared: phases are reported in CPU time (user +
system of the compiler). MLIR's pass timing is wall time; a pass's CPU time
is estimated as its wall time times the CPU/wall ratio of the phase that
ran it (`CPU lowering`), which holds while the load is steady during one
compile.
"""

import argparse
import json
import math
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from compile import parse_phases  # noqa: E402

# "    0.5271 (  1.0%)    0.5271 (  1.0%)      EmptyTensorEliminationPass"
PASS_LINE = re.compile(
    r"^\s+([0-9.]+) \(\s*[0-9.\-nan]+%\)(?:\s+([0-9.]+) \(\s*[0-9.\-nan]+%\))?"
    r"(\s+)(\S.*)$")


def parse_passes(text, phase="CPU lowering"):
    """Wall seconds of each pass (summed by name) under `phase` in MLIR's
    timing tree."""
    passes, depth = {}, None
    inside = False
    for line in text.splitlines():
        if "Execution time report" in line:
            inside = True
            continue
        if not inside:
            continue
        m = PASS_LINE.match(line)
        if not m:
            continue
        wall = float(m.group(2) or m.group(1))
        indent, name = len(m.group(3)), m.group(4).strip()
        if depth is None:
            if name == phase:
                depth = indent
            continue
        if indent <= depth:
            break
        if name.endswith("Pipeline") or name.startswith("(A)"):
            continue
        passes[name] = passes.get(name, 0.0) + wall
    return passes


def compile_once(compiler, onnx, out, flags):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    proc = subprocess.run([compiler, onnx, "-o", out, "--time-phases",
                           "--no-cache"] + flags,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, env=dict(os.environ,
                                              PIPEDREAM_NO_CACHE="1"))
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit("pipedream-compile failed on %s: %s" % (
            onnx, proc.stderr.strip().splitlines()[-1:]))
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime -
                                                before.ru_stime)
    return wall, cpu, after.ru_maxrss, proc.stderr


def exponent(n0, t0, n1, t1):
    if t0 <= 0 or t1 <= 0:
        return float("nan")
    return math.log(t1 / t0) / math.log(n1 / n0)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--compiler")
    parser.add_argument("--layers", default="125,250,500,1000")
    parser.add_argument("--dim", type=int, default=16)
    parser.add_argument("--inference", action="store_true")
    parser.add_argument("--distinct", action="store_true")
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--work")
    parser.add_argument("--extra", default="")
    parser.add_argument("--json")
    args = parser.parse_args()

    compiler = args.compiler or os.path.join(args.build, "bin",
                                             "pipedream-compile")
    work = args.work or tempfile.mkdtemp(prefix="pipedream-chain-")
    os.makedirs(work, exist_ok=True)
    flags = (["--inference"] if args.inference else ["--loss", "mse"]) + \
        args.extra.split()
    sizes = [int(n) for n in args.layers.split(",")]
    runs = []
    for n in sizes:
        onnx = os.path.join(work, "chain%d%s.onnx" % (
            n, "d" if args.distinct else ""))
        if not os.path.exists(onnx):
            subprocess.run(["/usr/bin/python3",
                            os.path.join(ROOT, "bench", "models", "chain.py"),
                            onnx, "--layers", str(n), "--dim", str(args.dim)]
                           + (["--distinct"] if args.distinct else []),
                           check=True)
        wall, cpu, rss, err = compile_once(
            compiler, onnx, os.path.join(work, "out%d" % n), flags)
        phases = {name: c for _, name, _, c in parse_phases(err)}
        walls = {name: w for _, name, w, _ in parse_phases(err)}
        scale = (phases.get("CPU lowering", 0.0) /
                 walls["CPU lowering"]) if walls.get("CPU lowering") else 1.0
        passes = {k: v * scale for k, v in parse_passes(err).items()}
        runs.append({"layers": n, "wall_s": wall, "cpu_s": cpu,
                     "max_rss_kb": rss, "phases_cpu_s": phases,
                     "passes_cpu_s_est": passes})
        print("N=%-5d wall %7.2f s  cpu %7.2f s  cpu/layer %6.2f ms  "
              "(peak RSS of the largest child so far %d MB)" % (
                  n, wall, cpu, 1000 * cpu / n, rss // 1024))
        sys.stdout.flush()

    def table(title, key, names):
        print("\n%s: CPU ms per layer at N = %s; exponent k (t ~ N^k) "
              "between consecutive N" % (title, ", ".join(map(str, sizes))))
        for name in names:
            vals = [r[key].get(name, 0.0) for r in runs]
            per = " ".join("%8.3f" % (1000 * v / n)
                           for v, n in zip(vals, sizes))
            ks = " ".join("%5.2f" % exponent(sizes[i], vals[i],
                                             sizes[i + 1], vals[i + 1])
                          for i in range(len(sizes) - 1))
            print("  %-42s %s   k: %s" % (name[:42], per, ks))

    phase_names = [n for _, n, _, _ in parse_phases(err)]
    table("phases", "phases_cpu_s", phase_names)
    last = runs[-1]["passes_cpu_s_est"]
    top = sorted(last, key=last.get, reverse=True)[:args.top]
    table("CPU lowering passes (estimated CPU)", "passes_cpu_s_est", top)
    total = [r["cpu_s"] for r in runs]
    print("\ntotal CPU k: %s" % " ".join(
        "%5.2f" % exponent(sizes[i], total[i], sizes[i + 1], total[i + 1])
        for i in range(len(sizes) - 1)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(runs, f, indent=1)


if __name__ == "__main__":
    main()
