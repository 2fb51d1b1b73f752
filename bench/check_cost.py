#!/usr/bin/python3
"""The cost of the index bounds checks on an embedding-heavy model.

    /usr/bin/python3 bench/check_cost.py --bin BUILD/bin [--work DIR]
        [--calls 400] [--repeats 7] [--steps 10] [--tables 8]
        [--vocab 50000] [--dim 16] [--batch 512] [--bag 8]
        [--inference-only]

The model (made here with onnx.helper, seed 0) is DLRM-like, as embedding
heavy as recommendation models are: `--tables` embedding tables of
`--vocab` x `--dim` floats, each looked up with a bag of `--bag` ids per
sample (Gather, then ReduceSum over the bag), the pooled vectors
concatenated with a dense projection of 13 dense features, then a 2-layer
MLP to one output. Per sample that is tables x bag data-dependent indices,
each checked against the table's bound; everything else is small. It is
compiled twice, with and without `--no-run-time-checks` (which drops the
min/max pass over the indices and the status write; indices are clamped
either way, docs/Runtime.md "Run-time checks").

1. Inference: both bundles loaded in this process, `pipedream_main`
   called through ctypes with valid ids, the two variants alternating
   call by call (ABBA order), so load drift on a shared machine hits both
   alike. Reported: the median over `--calls` calls of the call's CPU
   time (process CPU time: the time another process takes the core is
   not counted) and of its wall time, and checked / unchecked.
2. Training (`--loss mse`, SGD, one rank, `pipedream-run --threads 1`):
   the per-step CPU time of the child, taken as the difference of a run of
   3 x `--steps` and one of `--steps` steps (start-up and compilation
   cancel), median over `--repeats` pairs, variants alternating; also
   pipedream-run's own mean step time (wall). A training step adds the
   checks of the embedding gradients (scatter-adds into the tables'
   gradients), but also the dense gradient and SGD update of every table,
   which the checks do not touch, so its ratio is lower than inference's.

Exits 1 if a checked call reports a failure on valid ids. One thread
(PIPEDREAM_NUM_THREADS=1, OPENBLAS_NUM_THREADS=1). Not a test: the ratios
are what to quote (bench/README.md "Run-time checks").
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("PIPEDREAM_NUM_THREADS", "1")

import argparse  # noqa: E402
import re  # noqa: E402
import resource  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_time_checks import Bundle, compile_bundle, save_model  # noqa: E402

DENSE = 13


def dlrm_model(path, args):
    rng = np.random.default_rng(0)
    inits, nodes, inputs, pooled = [], [], [], []
    for t in range(args.tables):
        table = (rng.standard_normal((args.vocab, args.dim)) *
                 0.1).astype(np.float32)
        inits.append(numpy_helper.from_array(table, "emb%d" % t))
        inputs.append(helper.make_tensor_value_info(
            "ids%d" % t, TensorProto.INT64, [args.batch, args.bag]))
        nodes.append(helper.make_node(
            "Gather", ["emb%d" % t, "ids%d" % t], ["rows%d" % t], axis=0,
            name="/emb%d/Gather" % t))
        nodes.append(helper.make_node(
            "ReduceSum", ["rows%d" % t, "bag_axis"], ["pool%d" % t],
            keepdims=0, name="/emb%d/ReduceSum" % t))
        pooled.append("pool%d" % t)
    inits.append(numpy_helper.from_array(np.array([1], np.int64),
                                         "bag_axis"))
    inputs.append(helper.make_tensor_value_info(
        "dense", TensorProto.FLOAT, [args.batch, DENSE]))
    hidden = 64
    width = args.tables * args.dim + args.dim
    for name, shape in (("w_dense", (DENSE, args.dim)),
                        ("w1", (width, hidden)), ("w2", (hidden, 1))):
        inits.append(numpy_helper.from_array(
            (rng.standard_normal(shape) / np.sqrt(shape[0])).astype(
                np.float32), name))
    nodes += [
        helper.make_node("MatMul", ["dense", "w_dense"], ["dproj"],
                         name="/dense/MatMul"),
        helper.make_node("Concat", pooled + ["dproj"], ["feat"], axis=1,
                         name="/Concat"),
        helper.make_node("MatMul", ["feat", "w1"], ["h1"], name="/mlp1"),
        helper.make_node("Relu", ["h1"], ["a1"], name="/relu1"),
        helper.make_node("MatMul", ["a1", "w2"], ["y"], name="/mlp2"),
    ]
    graph = helper.make_graph(
        nodes, "dlrm", inputs,
        [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                       [args.batch, 1])], inits)
    save_model(graph, path)


def fill_inputs(bundle, args, seed):
    rng = np.random.default_rng(seed)
    for name, arr in bundle.inputs.items():
        if name.startswith("ids"):
            arr[...] = rng.integers(0, args.vocab, arr.shape, dtype=arr.dtype)
        else:
            arr[...] = rng.standard_normal(arr.shape).astype(arr.dtype)


def inference(args, work, model):
    bundles = {}
    for variant, extra in (("checked", []),
                           ("unchecked", ["--no-run-time-checks"])):
        out = os.path.join(work, "dlrm-infer-" + variant)
        compile_bundle(args, model, out, ["--inference"] + extra)
        bundles[variant] = Bundle(out)
        fill_inputs(bundles[variant], args, 1)
    cpu = {v: [] for v in bundles}
    wall = {v: [] for v in bundles}
    for b in bundles.values():
        for _ in range(10):
            b.run()
    order = list(bundles)
    for i in range(args.calls):
        for v in (order if i % 2 == 0 else order[::-1]):
            c0, w0 = time.process_time_ns(), time.perf_counter_ns()
            bundles[v].run()
            w1, c1 = time.perf_counter_ns(), time.process_time_ns()
            cpu[v].append((c1 - c0) / 1e6)
            wall[v].append((w1 - w0) / 1e6)
    if bundles["checked"].failed():
        sys.exit("check_cost: a check failed on valid ids")
    # The two variants must compute the same thing.
    a = bundles["checked"].arrays
    b = bundles["unchecked"].arrays
    if not all(np.array_equal(x, y) for x, y in zip(a, b)
               if x.dtype.kind == "f"):
        sys.exit("check_cost: checked and unchecked outputs differ")
    # The checked variant really checks (and the other has no record): an
    # id past the vocabulary must be reported.
    if bundles["unchecked"].status:
        sys.exit("check_cost: the --no-run-time-checks bundle has a status "
                 "record")
    bad = bundles["checked"]
    saved = bad.inputs["ids0"][0, 0]
    bad.inputs["ids0"][0, 0] = args.vocab
    bad.run()
    if not bad.failed():
        sys.exit("check_cost: the checked bundle missed id %d" % args.vocab)
    bad.inputs["ids0"][0, 0] = saved
    return ({v: statistics.median(t) for v, t in cpu.items()},
            {v: statistics.median(t) for v, t in wall.items()})


def run_steps(args, bundle, data, steps):
    """(child CPU seconds, pipedream-run's mean step ms) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(
        [os.path.join(args.bin, "pipedream-run"), bundle, "--data", data,
         "--steps", str(steps), "--threads", "1"],
        check=True, capture_output=True, text=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime -
                                               before.ru_stime)
    return cpu, float(re.search(r"mean step time ([0-9.]+) ms",
                                out).group(1))


def training(args, work, model):
    data = os.path.join(work, "dlrm-data.npz")
    rng = np.random.default_rng(2)
    n = args.batch * 2
    arrays = {"ids%d" % t: rng.integers(0, args.vocab, (n, args.bag))
              .astype(np.int64) for t in range(args.tables)}
    arrays["dense"] = rng.standard_normal((n, DENSE)).astype(np.float32)
    arrays["labels"] = rng.standard_normal((n, 1)).astype(np.float32)
    np.savez(data, **arrays)
    bundles = {}
    for variant, extra in (("checked", []),
                           ("unchecked", ["--no-run-time-checks"])):
        out = os.path.join(work, "dlrm-train-" + variant)
        compile_bundle(args, model, out, [
            "--loss", "mse", "--optimizer", "sgd", "--batch-size",
            str(args.batch)] + extra)
        bundles[variant] = out
    cpu = {v: [] for v in bundles}
    wall = {v: [] for v in bundles}
    order = list(bundles)
    for i in range(args.repeats):
        for v in (order if i % 2 == 0 else order[::-1]):
            short, _ = run_steps(args, bundles[v], data, args.steps)
            long_, step_ms = run_steps(args, bundles[v], data,
                                       3 * args.steps)
            cpu[v].append((long_ - short) / (2 * args.steps) * 1e3)
            wall[v].append(step_ms)
    return ({v: statistics.median(t) for v, t in cpu.items()},
            {v: statistics.median(t) for v, t in wall.items()})


def report(title, cpu, wall):
    print(title)
    for what, m in (("CPU ", cpu), ("wall", wall)):
        print("  %s  checked %9.3f ms  unchecked %9.3f ms  ratio %.3f" %
              (what, m["checked"], m["unchecked"],
               m["checked"] / m["unchecked"]))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "build", "bin"))
    parser.add_argument("--work")
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--tables", type=int, default=8)
    parser.add_argument("--vocab", type=int, default=50000)
    parser.add_argument("--dim", type=int, default=16)
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--bag", type=int, default=8)
    parser.add_argument("--inference-only", action="store_true")
    args = parser.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="pd-check-cost-")
    os.makedirs(work, exist_ok=True)
    model = os.path.join(work, "dlrm.onnx")
    dlrm_model(model, args)
    shape = ("%d tables %d x %d, batch %d x bag %d (%d checked ids per call)"
             % (args.tables, args.vocab, args.dim, args.batch, args.bag,
                args.tables * args.batch * args.bag))
    cpu, wall = inference(args, work, model)
    report("inference, DLRM-like, %s; median of %d calls:" %
           (shape, args.calls), cpu, wall)
    if args.inference_only:
        return
    cpu, wall = training(args, work, model)
    report("training step (SGD, mse), same model; median of %d repeats "
           "(CPU: (run of %d steps - run of %d) / %d):" %
           (args.repeats, 3 * args.steps, args.steps, 2 * args.steps),
           cpu, wall)


if __name__ == "__main__":
    main()
