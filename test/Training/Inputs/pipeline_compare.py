#!/usr/bin/python3
"""Pipelined training equals single-rank training (synchronous schedules).

    pipeline_compare.py --bin BUILD/bin --model mlp|gpt|cnn --stages K
        --schedule S --microbatches M [--virtual V] [--steps N]
        [--optimizer O] [--runner python|threads|mpi] [--work DIR]
        [--torch]

Compiles the torch-exported model twice — a single-rank training bundle and a
pipeline bundle (`--stages K --schedule S`) — trains both N steps on the same
seeded data (M micro-batches of B samples per step) and compares every
step's loss and every final weight (relative to the tensor's largest entry,
tolerance 1e-5). The pipeline bundle is run by `--runner`:
- `python`: a reference interpreter of docs/Bundle.md "Pipeline bundles"
  (all ranks in this process, stepped round-robin until each blocks on a
  recv; buffers by ctypes) — checks what the compiler emits;
- `threads` / `mpi`: `pipedream-run --transport threads` / `--ranks K`.
`--model gpt-tied` is the gpt with its LM head tied to the token embedding
(one initializer read by the first and the last stage): the pipeline sums
the weight's gradient over the ranks holding it (pipe.all_reduce_grad),
which the reference interpreter does as an `all_reduce` instruction: it
waits until every rank of the group has reached it, then adds the ranks'
accumulators in rank order. `--torch` (synchronous schedules) also trains
the torch model itself, in float64, and compares with it (1e-4), and checks
that a torch model with an *untied* head ends up measurably different (so
the comparison can tell a tied from an untied training).
`--replicas R` (replicated stages, docs/Bundle.md "Replicated stages";
runners threads and mpi) compiles the pipeline with `--replicas R
--microbatches R*M`, so K*R ranks each run M micro-batches of B samples,
and compares with single-rank training of the whole batch: R*M
micro-batches of B.
`--ranks N` (instead of --stages/--replicas) lets the planner choose K
and R (`pipedream-compile --ranks N --microbatches M`, M the step's
micro-batches) and compares with single-rank training of M micro-batches;
when the planner chooses non-uniform replication (bundle.json
`stage_replicas`, one program per world rank) it prints the replication.
`--shard-optimizer` (with --replicas) also compiles the pipeline with
`--shard-optimizer` (ZeRO-1) and compares its run with the unsharded one
(every loss and weight within 1e-6 relative), and checks from bundle.json
that each rank binds only its shard's optimizer state: the state bytes per
rank of the sharded bundle are at most the unsharded ones / R plus the
largest single weight's state (shards are whole weights).
`--recompute full|auto` (with `--memory-limit BYTES` for auto) compiles the
pipeline with activation recomputation, compares it with single-rank
training as above and also with the same pipeline compiled without it (the
same cuts, given by --split-after, without the limit; run by the same runner: every loss and weight within 1e-6 relative), and
checks from the two bundles' report.json that the recomputing stages stash
less: the partition's `stash_bytes` < `activation_bytes` on every
recomputing stage (`full`: at most, since a stage's inputs may be all of
its activations), the stash registers (`rank_memory` register_bytes) at
most the plain bundle's on every rank and smaller in all, and the
schedule report's peak memory smaller on the recomputing rank with the
most micro-batches in flight.
`--schedule auto` lets pipedream-compile choose the kind, V and M (the tag
names the choice, `auto->KIND`); with `--recompute` the plain pipeline is
that choice compiled without recomputation.
`--eval` (runners threads and mpi) compiles the pipeline with `--evaluate`
and runs it with `--eval-data` on 5 held-out micro-batches after every
step (which must not change the training compared above); the last
evaluation must equal torch's float64 eval-mode loss (BatchNorm with its
running statistics, no Dropout) of the trained weights written back
(--save-onnx: replica 0's), within 1e-5 relative. With replicas, the
odd number of micro-batches leaves the replicas unequal shares; BatchNorm's
running statistics, which each replica advances on its own data, are left
out of the weight comparison with the single-rank training.
Prints `OK ...` or `MISMATCH ...`; exits non-zero on a mismatch.
"""

import argparse
import csv
import ctypes
import json
import os
import subprocess
import sys
import tempfile
import warnings

import numpy as np
import onnx
from onnx import numpy_helper
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import torch_compare as tc  # noqa: E402

RTOL = 1e-5


def load_weights(manifest, bundle):
    # Bundle version 3: a weight may live in a rank weight file ("file").
    files = {}
    out = {}
    for w in manifest["weights"]:
        name = w.get("file", manifest["weights_file"])
        if name not in files:
            files[name] = np.fromfile(os.path.join(bundle, name),
                                      dtype=np.uint8)
        raw = files[name]
        arr = tc.aligned_empty(tuple(w["shape"]), tc.DTYPES[w["dtype"]])
        arr.reshape(-1).view(np.uint8)[:] = raw[w["offset"]:w["offset"] + w["bytes"]]
        out[w["name"]] = arr
    return out


def python_pipeline(bundle, data, steps):
    with open(os.path.join(bundle, "bundle.json")) as f:
        manifest = json.load(f)
    lib = ctypes.CDLL(os.path.join(bundle, manifest["library"]))
    functions = {fn["name"]: fn for fn in manifest["functions"]}
    pipe = manifest["pipeline"]
    weights = load_weights(manifest, bundle)
    ranks = pipe["ranks"]
    # Persistent buffers per rank: the ones its functions name.
    persistent = []
    for r in ranks:
        mine = {}
        for ins in r["program"]:
            if ins["op"] != "call":
                continue
            for b in functions[ins["function"]]["buffers"]:
                if b["role"] == "weight" and b["name"] not in mine:
                    # Each rank its own copy: updates write in place
                    # ("in_place"), and tied weights are held by two ranks.
                    arr = tc.aligned_empty(tuple(b["shape"]),
                                           tc.DTYPES[b["dtype"]])
                    arr[...] = weights[b["name"]]
                    mine[b["name"]] = arr
                elif b["role"] in ("grad", "state") and b["name"] not in mine:
                    mine[b["name"]] = np.zeros(tuple(b["shape"]),
                                               tc.DTYPES[b["dtype"]])
        persistent.append(mine)
    registers = [[tc.aligned_empty(tuple(g["shape"]), tc.DTYPES[g["dtype"]])
                  for g in r["registers"]] for r in ranks]
    m_count = pipe["schedule"]["microbatches"]
    b = pipe["microbatch_size"]
    n = m_count * b
    rows = next(iter(data.values())).shape[0]

    versions = [dict() for _ in ranks]  # (stage, chunk, slot) -> {name: array}

    def all_reduce_ready(rank):
        """All ranks of the group stand at this all_reduce."""
        ins = ranks[rank]["program"][pcs[rank]]
        for q in ins["ranks"]:
            prog = ranks[q]["program"]
            if pcs[q] >= len(prog):
                return False
            other = prog[pcs[q]]
            if other["op"] != "all_reduce" or other["buffer"] != ins["buffer"]:
                return False
        return True

    def all_reduce(ins):
        group = ins["ranks"]
        total = persistent[group[0]][ins["buffer"]].copy()
        for q in group[1:]:
            total += persistent[q][ins["buffer"]]
        for q in group:
            persistent[q][ins["buffer"]][...] = total
            pcs[q] += 1

    def call(rank, ins):
        fn = functions[ins["function"]]
        regs = registers[rank]
        key = None
        weights_of = persistent[rank]
        spec = ins.get("weights", {})
        if spec:
            key = (ins["stage"], ins["chunk"],
                   spec.get("save", spec.get("use")))
        if "save" in spec:
            versions[rank][key] = {
                b["name"]: persistent[rank][b["name"]].copy()
                for b in fn["buffers"] if b["role"] == "weight"}
        if "use" in spec:
            weights_of = dict(persistent[rank])
            weights_of.update(versions[rank][key])
        arrays, outputs = [], []
        args = iter(ins["args"])
        results = iter(ins["results"])
        # "in_place" outputs (docs/Bundle.md): the value is left in the
        # buffer of the argument it updates, which must be the persistent
        # one, not a weight version (a "use" copies the version in first).
        in_place = {b["updates"] for b in fn["buffers"] if b.get("in_place")}
        for name in in_place:
            if "use" in spec and name in versions[rank][key]:
                persistent[rank][name][...] = versions[rank][key][name]
            weights_of = dict(weights_of)
            weights_of[name] = persistent[rank][name]
        for buf in fn["buffers"]:
            if buf["role"] == "output":
                if buf.get("in_place"):
                    arrays.append(persistent[rank][buf["updates"]])
                elif buf.get("updates"):
                    arr = tc.aligned_empty(tuple(buf["shape"]),
                                           tc.DTYPES[buf["dtype"]])
                    outputs.append((buf, arr))
                    arrays.append(arr)
                else:
                    arrays.append(regs[next(results)])
            elif buf["role"] == "input":
                arrays.append(regs[next(args)])
            elif buf["role"] == "weight":
                arrays.append(weights_of[buf["name"]])
            else:
                arrays.append(persistent[rank][buf["name"]])
        ptrs = (ctypes.c_void_p * len(arrays))(*[a.ctypes.data for a in arrays])
        getattr(lib, fn["symbol"])(ptrs)
        for buf, arr in outputs:
            persistent[rank][buf["updates"]] = arr

    losses = []
    for step in range(steps):
        idx = [(step * n + i) % rows for i in range(n)]
        batch = {k: v[idx] for k, v in data.items()}
        for mine in persistent:
            for name, arr in mine.items():
                if name.startswith("grad:"):
                    arr[...] = 0
        pcs = [0] * len(ranks)
        queues = {}  # (src, dst, tag) -> array
        step_losses = {}
        while any(pc < len(r["program"]) for pc, r in zip(pcs, ranks)):
            progressed = False
            for rank, r in enumerate(ranks):
                prog = r["program"]
                while pcs[rank] < len(prog):
                    ins = prog[pcs[rank]]
                    op = ins["op"]
                    regs = registers[rank]
                    if op == "all_reduce":
                        if not all_reduce_ready(rank):
                            break
                        all_reduce(ins)
                        progressed = True
                        continue
                    if op == "recv":
                        key = (ins["peer"], rank, ins["tag"])
                        if key not in queues:
                            break
                        regs[ins["dst"]][...] = queues.pop(key)
                    elif op == "send":
                        queues[(rank, ins["peer"], ins["tag"])] = regs[ins["src"]].copy()
                    elif op == "input":
                        mb = ins["microbatch"]
                        regs[ins["dst"]][...] = batch[ins["name"]][mb * b:(mb + 1) * b]
                    elif op == "call":
                        call(rank, ins)
                    elif op == "loss":
                        step_losses[ins["microbatch"]] = float(regs[ins["src"]])
                    else:
                        raise RuntimeError(f"unknown instruction {op}")
                    pcs[rank] += 1
                    progressed = True
            if not progressed:
                raise RuntimeError("deadlock: every rank waits on a recv or "
                                   "an all-reduce")
        losses.append(sum(step_losses.values()) / len(step_losses))
    # A weight several ranks hold (tied weights) is one parameter: every
    # copy, and its optimizer state, must be the same on all of them.
    seen = {}
    for rank, mine in enumerate(persistent):
        for name, arr in mine.items():
            if name.startswith("grad:"):
                continue
            if name in seen and not np.array_equal(seen[name][1], arr):
                raise RuntimeError(f"'{name}' differs between rank "
                                   f"{seen[name][0]} and rank {rank}")
            seen.setdefault(name, (rank, arr))
    final = {}
    for mine in persistent:
        for name, arr in mine.items():
            if name in weights:
                final[name] = arr
    return losses, final


def run_tool(bin_dir, bundle, data_path, steps, work, ranks, transport,
             eval_data=None, evals=None):
    """Trains `bundle` with pipedream-run; with `eval_data` evaluates after
    every step too, the evaluation losses appended to `evals`."""
    log = os.path.join(work, f"loss-{transport}.csv")
    trained = os.path.join(work, f"trained-{transport}.onnx")
    cmd = [os.path.join(bin_dir, "pipedream-run"), bundle, "--data", data_path,
           "--steps", str(steps), "--loss-log", log, "--save-onnx", trained]
    if eval_data:
        cmd += ["--eval-data", eval_data, "--eval-every", "1"]
    if transport == "threads":
        cmd += ["--transport", "threads"]
    if ranks:
        cmd += ["--ranks", str(ranks)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(log) as f:
        rows = list(csv.DictReader(f))
    losses = [float(r["loss"]) for r in rows]
    if evals is not None:
        evals += [float(r["eval_loss"]) for r in rows if r.get("eval_loss")]
    weights = {i.name: numpy_helper.to_array(i)
               for i in onnx.load(trained).graph.initializer}
    return losses, weights


EVAL_RTOL = 1e-5


def compare_eval(model, onnx_path, weights, eval_x, eval_labels, b, evals,
                 steps, tag):
    """The last evaluation against torch's float64 eval-mode loss of the
    trained weights: the mean over the micro-batches of b rows of each
    one's mean cross-entropy. An initializer the exporter renamed (a
    Linear's weight, transposed for MatMul: onnx::MatMul_N) is the torch
    tensor whose transpose the exported model's initial value equals."""
    import copy
    reference = copy.deepcopy(model).double()
    state = reference.state_dict()
    initial = {i.name: numpy_helper.to_array(i)
               for i in onnx.load(onnx_path).graph.initializer}
    loaded = set()
    for name, value in weights.items():
        value = np.array(value)
        key = name if name in state else None
        if key is None and name in initial:
            for k, v in model.state_dict().items():
                if v.dim() == 2 and tuple(v.shape[::-1]) == value.shape and \
                        np.array_equal(v.detach().numpy().T, initial[name]):
                    key, value = k, value.T
                    break
        if key is None:
            print(f"MISMATCH {tag}: no torch tensor for weight {name}")
            return 1
        state[key] = torch.from_numpy(np.ascontiguousarray(value)).to(
            state[key].dtype)
        loaded.add(key)
    # A tied weight (gpt-tied's head) is one tensor under two names.
    tensors = model.state_dict(keep_vars=True)
    for k in state:
        if k not in loaded:
            for j in loaded.copy():
                if tensors[k] is tensors[j]:
                    state[k] = state[j]
                    loaded.add(k)
    missing = [k for k in state if k not in loaded and
               not k.endswith("num_batches_tracked") and
               not k.endswith(".mask")]
    reference.load_state_dict(state)
    reference.eval()
    runs = len(eval_x) // b
    total = 0.0
    with torch.no_grad():
        for m in range(runs):
            sl = slice(m * b, (m + 1) * b)
            x = torch.from_numpy(eval_x[sl])
            out = reference(x.double() if x.is_floating_point() else x)
            total += torch.nn.functional.cross_entropy(
                out.reshape(-1, out.shape[-1]),
                torch.from_numpy(eval_labels[sl]).reshape(-1)).item()
    expected = total / runs
    rel = (abs(evals[-1] - expected) / abs(expected)
           if len(evals) == steps else float("inf"))
    if missing or rel > EVAL_RTOL:
        print(f"MISMATCH {tag}: eval losses {evals} vs torch eval mode "
              f"{expected!r} (torch tensors not in the trained model: "
              f"{missing})")
        return 1
    print(f"eval loss {evals[-1]:.8f}; torch eval mode {expected:.8f}; "
          f"relative error {rel:.2g}")
    return 0


TORCH_RTOL = 1e-4


def align_external_data(onnx_path, location, align=64):
    """Rewrites the external data of `onnx_path` (one side file,
    `location`) with every tensor at a multiple of `align` bytes, as
    models/make_llama.py writes it: the layout the compiler links into the
    bundle instead of copying (docs/Bundle.md "Linked weight files")."""
    folder = os.path.dirname(onnx_path)
    proto = onnx.load(onnx_path, load_external_data=False)
    with open(os.path.join(folder, location), "rb") as f:
        old = f.read()
    new = bytearray()
    for t in proto.graph.initializer:
        if t.data_location != onnx.TensorProto.EXTERNAL:
            continue
        fields = {e.key: e.value for e in t.external_data}
        start = int(fields.get("offset", 0))
        raw = old[start:start + int(fields["length"])]
        new += b"\0" * ((-len(new)) % align)
        offset = len(new)
        new += raw
        del t.external_data[:]
        for key, value in (("location", location), ("offset", str(offset)),
                           ("length", str(len(raw)))):
            e = t.external_data.add()
            e.key, e.value = key, value
    with open(os.path.join(folder, location), "wb") as f:
        f.write(new)
    onnx.save_model(proto, onnx_path)


def check_rank_files(bundle, onnx_path, tag):
    """Bundle version 3 (docs/Bundle.md "Rank weight files"): each rank's
    file holds exactly the weights its functions bind, with the model's
    initial values; together they hold each weight once per holding rank,
    and weights.bin none of them."""
    with open(os.path.join(bundle, "bundle.json")) as f:
        manifest = json.load(f)
    initial = {i.name: numpy_helper.to_array(i)
               for i in onnx.load(onnx_path).graph.initializer}
    weights = {w["name"]: w for w in manifest["weights"]}
    functions = {f["name"]: f for f in manifest["functions"]}
    bad = 0
    if manifest["version"] != 3:
        print(f"MISMATCH {tag}: bundle version {manifest['version']}, not 3")
        bad += 1
    held = 0
    for r, rank in enumerate(manifest["pipeline"]["ranks"]):
        called = {i["function"] for i in rank["program"] if i["op"] == "call"}
        needed = {b["name"] for f in called
                  for b in functions[f]["buffers"] if b["role"] == "weight"}
        listed = {w["name"]: w["offset"] for w in rank["weights"]}
        if set(listed) != needed:
            print(f"MISMATCH {tag}: rank {r} lists {sorted(listed)} but "
                  f"binds {sorted(needed)}")
            bad += 1
        raw = np.fromfile(os.path.join(bundle, rank["weights_file"]),
                          dtype=np.uint8)
        for name, offset in listed.items():
            w = weights[name]
            got = raw[offset:offset + w["bytes"]].view(
                tc.DTYPES[w["dtype"]]).reshape(w["shape"])
            held += w["bytes"]
            if name in initial and not np.array_equal(got, initial[name]):
                print(f"MISMATCH {tag}: rank {r}'s copy of {name} is not "
                      f"the model's initial value")
                bad += 1
    common = os.path.getsize(os.path.join(bundle, manifest["weights_file"]))
    total = sum(w["bytes"] for w in weights.values())
    if not bad:
        print(f"OK rank weight files {tag}: {held} bytes over "
              f"{len(manifest['pipeline']['ranks'])} ranks for {total} "
              f"bytes of weights; weights.bin {common} bytes")
    return bad


def compare_torch(args, model, x, labels, losses, weights, tag):
    """The pipeline against torch.optim training of the same model in
    float64 (pipeline_compare's optimizer settings), and a torch model with
    the head untied, which must differ."""
    if args.schedule in ("pipedream", "2bw"):
        print(f"MISMATCH {tag}: --torch needs a synchronous schedule")
        return 1
    import copy
    settings = argparse.Namespace(
        optimizer=args.optimizer, lr=0.05, momentum=0.9, weight_decay=0.0,
        eps=args.eps if args.eps is not None else 1e-8,
        microbatches=args.microbatches * args.replicas,
        microbatch_size=args.microbatch_size, steps=args.steps,
        clip_grad_norm=args.clip_grad_norm)
    tied = copy.deepcopy(model).double()
    untied = copy.deepcopy(model).double()
    if getattr(untied, "head", None) is not None and \
            untied.head.weight is untied.tok.weight:
        untied.head.weight = torch.nn.Parameter(
            untied.tok.weight.detach().clone())
    ref_losses = tc.torch_train(tied, x, labels, settings)
    clipped_steps = getattr(settings, "clipped_steps", 0)
    untied_losses = tc.torch_train(untied, x, labels, settings)
    state = {k: v.detach().numpy() for k, v in tied.state_dict().items()}
    untied_state = {k: v.detach().numpy()
                    for k, v in untied.state_dict().items()}
    bad = 0
    worst_loss = max(abs(a - r) / max(abs(r), 1e-12)
                     for a, r in zip(losses, ref_losses))
    if worst_loss > TORCH_RTOL:
        print(f"MISMATCH {tag}: losses {losses} vs torch {ref_losses}")
        bad += 1
    worst, untied_gap = 0.0, 0.0
    for name, got in weights.items():
        if name not in state:
            continue
        ref = state[name]
        scale = max(float(np.max(np.abs(ref))), 1e-12)
        rel = float(np.max(np.abs(got.astype(np.float64) - ref))) / scale
        worst = max(worst, rel)
        if rel > TORCH_RTOL:
            print(f"MISMATCH {tag}: weight {name} differs from torch by "
                  f"{rel:.3g}")
            bad += 1
        untied_gap = max(untied_gap, float(np.max(np.abs(
            got.astype(np.float64) - untied_state[name]))) / scale)
    untied_loss_gap = max(abs(a - r) / max(abs(r), 1e-12)
                          for a, r in zip(losses, untied_losses))
    if untied_gap < 10 * TORCH_RTOL:
        print(f"MISMATCH {tag}: an untied torch head gives the same weights "
              f"(gap {untied_gap:.3g}): the test cannot tell them apart")
        bad += 1
    if not bad:
        clipped = ""
        if args.clip_grad_norm:
            clipped = f"; torch clipped {clipped_steps} of {args.steps} steps"
        print(f"OK torch {tag}: worst relative error loss {worst_loss:.2g}, "
              f"weights {worst:.2g}; untied torch differs by {untied_gap:.2g} "
              f"(loss {untied_loss_gap:.2g}){clipped}")
    return bad


SHARD_RTOL = 1e-6


def state_bytes_per_rank(bundle):
    """Bytes of the `state` buffers each world rank binds: those of the
    functions its program calls on its replica (docs/Bundle.md
    "Replicated stages")."""
    with open(os.path.join(bundle, "bundle.json")) as f:
        manifest = json.load(f)
    functions = {fn["name"]: fn for fn in manifest["functions"]}
    pipe = manifest["pipeline"]
    k = len(pipe["ranks"])
    out = []
    for w in range(k * pipe.get("replicas", 1)):
        program, replica = pipe["ranks"][w % k]["program"], w // k
        if "stage_replicas" in pipe:
            # Non-uniform replication: a program per world rank, its
            # replica of its stage in rank_layout.
            replica = pipe["rank_layout"][w]["replica"]
        names = {}
        for ins in program:
            if ins["op"] != "call" or ins.get("replica", replica) != replica:
                continue
            for b in functions[ins["function"]]["buffers"]:
                if b["role"] == "state":
                    names[b["name"]] = int(np.prod(b["shape"])) * \
                        np.dtype(tc.DTYPES[b["dtype"]]).itemsize
        out.append(sum(names.values()))
    return out


def compare_sharded(args, compile_, common, m, piped, data_path, work,
                    losses, weights, tag):
    """The --shard-optimizer bundle against the unsharded run."""
    sharded = os.path.join(work, "sharded")
    where = (["--ranks", str(args.ranks)] if args.ranks else
             ["--stages", str(args.stages), "--virtual-stages",
              str(args.virtual), "--replicas", str(args.replicas)])
    subprocess.run([compile_, *common, "--microbatches",
                    str(args.replicas * m), "-o", sharded, *where,
                    "--schedule", args.schedule, "--shard-optimizer"],
                   check=True)
    with open(os.path.join(sharded, "bundle.json")) as f:
        layout = json.load(f)["pipeline"]
    # Each world rank's stage's replicas (what its state is split over).
    if "stage_replicas" in layout:
        stage_replicas = [layout["stage_replicas"][e["pipeline_rank"]]
                          for e in layout["rank_layout"]]
    else:
        # --ranks may plan uniform replicas: the bundle says how many.
        r = layout.get("replicas", 1)
        stage_replicas = [r] * (len(layout["ranks"]) * r)
    shard_work = os.path.join(work, "sharded-run")
    os.makedirs(shard_work, exist_ok=True)
    s_losses, s_weights = run_tool(
        args.bin, sharded, data_path, args.steps, shard_work,
        len(stage_replicas) if args.runner == "mpi" else None,
        args.runner)
    bad = 0
    worst_loss = max(abs(a - r) / max(abs(r), 1e-12)
                     for a, r in zip(s_losses, losses))
    if worst_loss > SHARD_RTOL:
        print(f"MISMATCH {tag} sharded: losses {s_losses} vs {losses}")
        bad += 1
    worst = 0.0
    for name, ref in weights.items():
        scale = max(float(np.max(np.abs(ref))), 1e-12)
        rel = float(np.max(np.abs(s_weights[name].astype(np.float64) -
                                  ref))) / scale
        worst = max(worst, rel)
        if rel > SHARD_RTOL:
            print(f"MISMATCH {tag} sharded: weight {name} differs by {rel:.3g}")
            bad += 1
    full, shard = state_bytes_per_rank(piped), state_bytes_per_rank(sharded)
    with open(os.path.join(sharded, "bundle.json")) as f:
        manifest = json.load(f)
    largest = max([int(np.prod(w["shape"])) * 4 for w in manifest["weights"]]
                  or [0])
    states = {"sgd": 0, "momentum": 1, "adam": 2, "adamw": 2}[args.optimizer]
    if len(full) != len(shard):
        print(f"MISMATCH {tag} sharded: {len(shard)} ranks, unsharded "
              f"{len(full)}")
        bad += 1
    for r, (a, b) in enumerate(zip(full, shard)):
        bound = a / stage_replicas[r] + states * largest
        # A stage of one replica keeps its whole state.
        smaller = stage_replicas[r] == 1 or a == 0 or b < a
        if b > bound or not smaller:
            print(f"MISMATCH {tag} sharded: rank {r} binds {b} bytes of "
                  f"optimizer state, unsharded {a} (bound {bound:.0f})")
            bad += 1
    if not bad:
        print(f"OK sharded {tag}: worst relative difference to unsharded "
              f"loss {worst_loss:.2g}, weights {worst:.2g}; optimizer state "
              f"bytes per rank {full} -> {shard}")
    return bad


def compare_recompute(args, compile_, common, piped, plain_cmd, data_path,
                      data, work, world, losses, weights, tag):
    """The recomputing pipeline against the same pipeline without it."""
    bad = 0
    plain = os.path.join(work, "plain")
    with open(os.path.join(piped, "report.json")) as f:
        rec = json.load(f)
    if args.memory_limit:
        # The same cuts without the limit (which the plain pipeline may not
        # fit: that is what recomputation is for).
        at = plain_cmd.index("--memory-limit")
        plain_cmd = plain_cmd[:at] + plain_cmd[at + 2:] + [
            "--split-after", ",".join(s["last_op"] for s in rec["stages"][:-1])]
    subprocess.run([*plain_cmd, "-o", plain], check=True,
                   stdout=subprocess.DEVNULL)
    plain_work = os.path.join(work, "plain-run")
    os.makedirs(plain_work, exist_ok=True)
    if args.runner == "python":
        ref_losses, ref_weights = python_pipeline(plain, data, args.steps)
    else:
        ref_losses, ref_weights = run_tool(
            args.bin, plain, data_path, args.steps, plain_work,
            world if args.runner == "mpi" else None, args.runner)
    worst = max(abs(a - r) / max(abs(r), 1e-12)
                for a, r in zip(losses, ref_losses))
    if len(losses) != len(ref_losses) or worst > 1e-6:
        print(f"MISMATCH recompute {tag}: losses {losses} vs without "
              f"recomputation {ref_losses}")
        bad += 1
    for name, ref in ref_weights.items():
        scale = max(float(np.max(np.abs(ref))), 1e-12)
        rel = float(np.max(np.abs(weights[name].astype(np.float64) -
                                  ref.astype(np.float64)))) / scale
        worst = max(worst, rel)
        if rel > 1e-6:
            print(f"MISMATCH recompute {tag}: weight {name} differs from the "
                  f"run without recomputation by {rel:.3g}")
            bad += 1
    with open(os.path.join(plain, "report.json")) as f:
        ref = json.load(f)
    recomputing = [s["ranks"][0] for s in rec["stages"] if s.get("recompute")]
    # auto recomputes only where it saves; full also where a stage's
    # inputs are all its activations (it then stashes as much, not more).
    for s in rec["stages"]:
        saves = (s["stash_bytes"] < s["activation_bytes"]
                 if args.recompute == "auto" else
                 s["stash_bytes"] <= s["activation_bytes"])
        if s.get("recompute") and not saves:
            print(f"MISMATCH recompute {tag}: stage {s['index']} stashes "
                  f"{s['stash_bytes']} bytes, not less than its "
                  f"{s['activation_bytes']} activation bytes")
            bad += 1
    if not recomputing:
        print(f"MISMATCH recompute {tag}: no stage recomputes")
        bad += 1
    figures = []
    regs_new = [r["register_bytes"] for r in rec["rank_memory"]]
    regs_old = [r["register_bytes"] for r in ref["rank_memory"]]
    if any(a > b for a, b in zip(regs_new, regs_old)) or \
            not sum(regs_new) < sum(regs_old):
        print(f"MISMATCH recompute {tag}: stash registers per rank "
              f"{regs_new} bytes with recomputation, {regs_old} without")
        bad += 1
    figures.append(f"stash registers {regs_old} -> {regs_new}")
    # The schedule's peak per rank: smaller where the stash of the
    # micro-batches in flight outweighs one micro-batch's activations (a
    # rank with one micro-batch in flight gains nothing): checked on the
    # recomputing rank with the most micro-batches in flight.
    peak_new, peak_old = rec["peak_memory_bytes"], ref["peak_memory_bytes"]
    busiest = max((s for s in rec["stages"] if s.get("recompute")),
                  key=lambda s: s["in_flight_microbatches"], default=None)
    if busiest and busiest["in_flight_microbatches"] > 1:
        rank = busiest["ranks"][0]
        if not peak_new[rank] < peak_old[rank]:
            print(f"MISMATCH recompute {tag}: rank {rank} ("
                  f"{busiest['in_flight_microbatches']} micro-batches in "
                  f"flight) peak memory {peak_new[rank]} bytes with "
                  f"recomputation, {peak_old[rank]} without")
            bad += 1
    figures.append(f"peak memory {peak_old} -> {peak_new}")
    if not bad:
        print(f"OK recompute {args.recompute} {tag}: stages on ranks "
              f"{recomputing}; {'; '.join(figures)} bytes; worst relative "
              f"difference to the plain pipeline {worst:.2g}")
    return bad


def export_mlp_dropout(onnx_path, batch):
    """A 16 -> 32 -> 32 -> 10 MLP with two Dropout layers (0.25, 0.5),
    exported to `onnx_path` (input x, output y, dynamic batch) with Dropout
    as an ONNX op with training_mode false, as non-torch exporters write
    it: training draws pipedream's seeded masks, the same on every stage.
    Returns the torch module and the example input (one micro-batch)."""
    model = torch.nn.Sequential(
        torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Dropout(0.25),
        torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Dropout(0.5),
        torch.nn.Linear(32, 10))
    example = torch.randn(batch, 16)
    model.train()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (example,), onnx_path,
                          input_names=["x"], output_names=["y"],
                          opset_version=17,
                          dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}},
                          training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False)
    proto = onnx.load(onnx_path)
    modes = {n.input[2] for n in proto.graph.node if n.op_type == "Dropout"}
    for n in proto.graph.node:
        if n.op_type == "Constant" and n.output[0] in modes:
            n.attribute[0].t.CopyFrom(
                numpy_helper.from_array(np.array(False), n.output[0]))
    onnx.save(proto, onnx_path)
    return model, example


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--model", required=True,
                   choices=["mlp", "gpt", "gpt-tied", "cnn", "mlp-dropout"])
    p.add_argument("--stages", type=int, default=None)
    p.add_argument("--ranks", type=int, default=None)
    p.add_argument("--virtual", type=int, default=1)
    p.add_argument("--replicas", type=int, default=1)
    p.add_argument("--shard-optimizer", action="store_true")
    p.add_argument("--recompute", choices=["none", "full", "auto"],
                   default="none")
    p.add_argument("--memory-limit", default=None)
    p.add_argument("--schedule", required=True)
    p.add_argument("--microbatches", type=int, required=True)
    p.add_argument("--microbatch-size", type=int, default=2)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--optimizer", default="momentum")
    p.add_argument("--momentum", default=None,
                   help="pipedream-compile's --momentum (with --optimizer "
                        "sgd: SGD with momentum)")
    p.add_argument("--layers", type=int, default=None)
    p.add_argument("--dim", type=int, default=32,
                   help="gpt: d_model (export_torch.py --dim)")
    p.add_argument("--heads", type=int, default=2,
                   help="gpt: attention heads (export_torch.py --heads)")
    p.add_argument("--external-data", action="store_true",
                   help="store the model's weights as ONNX external data "
                        "(model.onnx.data next to it) before compiling; "
                        "also checks the pipeline bundle's rank weight "
                        "files against the initializers")
    p.add_argument("--runner", choices=["python", "threads", "mpi"],
                   default="python")
    p.add_argument("--work")
    p.add_argument("--torch", action="store_true")
    p.add_argument("--eps", type=float, default=None,
                   help="Adam epsilon (torch_compare.py explains when a "
                        "larger one is needed)")
    p.add_argument("--clip-grad-norm", type=float, default=None,
                   help="pipedream-compile's --clip-grad-norm, on both "
                        "sides (and torch's clip_grad_norm_ with --torch)")
    p.add_argument("--eval", action="store_true",
                   help="compile the pipeline with --evaluate, evaluate "
                        "after every step and compare with torch")
    args = p.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="pipeline-compare-")
    os.makedirs(work, exist_ok=True)

    torch.manual_seed(0)
    onnx_path = os.path.join(work, "model.onnx")
    if args.model == "mlp-dropout":
        model, example = export_mlp_dropout(onnx_path, args.microbatch_size)
        in_name, out_name = "x", "y"
    else:
        model, example, in_name, out_name = tc.export_torch.build(
            args.model, args.microbatch_size, layers=args.layers,
            dim=args.dim, heads=args.heads)
        model.eval()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(model, (example,), onnx_path,
                              input_names=[in_name], output_names=[out_name],
                              opset_version=17,
                              dynamic_axes={in_name: {0: "batch"},
                                            out_name: {0: "batch"}},
                              training=torch.onnx.TrainingMode.PRESERVE,
                              do_constant_folding=tc.export_torch
                              .constant_folding(args.model))
    if args.external_data:
        proto = onnx.load(onnx_path)
        onnx.save_model(proto, onnx_path, save_as_external_data=True,
                        all_tensors_to_one_file=True,
                        location="model.onnx.data", size_threshold=0)
        del proto
        align_external_data(onnx_path, "model.onnx.data")
    m, b = args.microbatches, args.microbatch_size
    replicas = args.replicas
    if (args.stages is None) == (args.ranks is None):
        print("error: pass --stages K or --ranks N")
        return 1
    if args.ranks:
        # The planner's R is not known yet: M is the step's micro-batches.
        replicas, m = 1, args.microbatches
    if (replicas > 1 or args.eval) and args.runner == "python":
        print("error: --replicas and --eval run on the runtime: pass "
              "--runner threads or mpi")
        return 1
    rng = np.random.default_rng(11)
    asynchronous = args.schedule in ("pipedream", "2bw")
    # Asynchronous runs must also learn: they cycle over two batches.
    rows = 2 * m * b if asynchronous else replicas * m * b * args.steps + 1
    data_kind = {"mlp-dropout": "mlp", "gpt-tied": "gpt"}.get(args.model,
                                                              args.model)
    x, labels = tc.make_data(data_kind, example, rows, rng)
    data = {in_name: x, "labels": labels}
    data_path = os.path.join(work, "data.npz")
    np.savez(data_path, **data)

    common = [onnx_path, "--loss", "cross-entropy", "--optimizer",
              args.optimizer, "--lr", "0.05", "--batch-size",
              str(replicas * m * b)]
    if args.eps is not None:
        common += ["--eps", repr(args.eps)]
    if args.momentum is not None:
        common += ["--momentum", args.momentum]
    if args.clip_grad_norm:
        common += ["--clip-grad-norm", repr(args.clip_grad_norm)]
    compile_ = os.path.join(args.bin, "pipedream-compile")
    single = os.path.join(work, "single")
    # The single-rank reference trains the whole batch: R*M micro-batches.
    subprocess.run([compile_, *common, "--microbatches", str(replicas * m),
                    "-o", single], check=True)
    piped = os.path.join(work, "pipeline")
    extra = ["--replicas", str(replicas)] if replicas > 1 else []
    where = (["--ranks", str(args.ranks)] if args.ranks else
             ["--stages", str(args.stages), "--virtual-stages",
              str(args.virtual)])
    if args.memory_limit:
        extra += ["--memory-limit", args.memory_limit]
    piped_cmd = [compile_, *common, "--microbatches", str(replicas * m),
                 *where, "--schedule", args.schedule, *extra]
    eval_data, evals = None, []
    if args.eval:
        piped_cmd += ["--evaluate"]
        eval_x, eval_labels = tc.make_data(data_kind, example, 5 * b,
                                           np.random.default_rng(12))
        eval_data = os.path.join(work, "eval.npz")
        np.savez(eval_data, **{in_name: eval_x, "labels": eval_labels})
    recompute = ([] if args.recompute == "none" else
                 ["--recompute", args.recompute])
    subprocess.run([*piped_cmd, *recompute, "-o", piped], check=True)
    with open(os.path.join(piped, "bundle.json")) as f:
        planned = json.load(f)["pipeline"]
    kind = args.schedule
    if args.schedule == "auto":
        # --schedule auto: the search's choice, which the plain pipeline of
        # --recompute compiles again.
        with open(os.path.join(piped, "report.json")) as f:
            chosen = json.load(f)["schedule"]
        kind = f"auto->{chosen['kind']}"
        args.virtual = chosen["V"]
        at = piped_cmd.index("--schedule")
        piped_cmd[at + 1] = chosen["kind"]
        if "--virtual-stages" in piped_cmd:
            piped_cmd[piped_cmd.index("--virtual-stages") + 1] = str(chosen["V"])
    world = len(planned["ranks"]) * planned.get("replicas", 1)
    if args.ranks and "stage_replicas" in planned:
        # Non-uniform replication (PipeDream's 1F1B-RR): one program per
        # world rank.
        args.stages = len(planned["stage_replicas"])
        print(f"plan: {args.stages} stages, stage replicas "
              f"{planned['stage_replicas']}")
    elif args.ranks:
        args.stages = len(planned["ranks"])
        print(f"plan: {args.stages} stages x {planned.get('replicas', 1)} "
              f"replicas")

    if asynchronous:
        # No single-rank equivalent: the reference is the sequential
        # execution of the same schedule (same weight versions).
        ref_losses, ref_weights = python_pipeline(piped, data, args.steps)
        if args.runner == "python":
            print("error: an asynchronous schedule is checked against the "
                  "runtime: pass --runner threads or mpi")
            return 1
    else:
        ref_losses, ref_weights = tc.python_runner(single, in_name, x, labels,
                                                   args.steps)
    if args.runner == "python":
        losses, weights = python_pipeline(piped, data, args.steps)
    else:
        losses, weights = run_tool(
            args.bin, piped, data_path, args.steps, work,
            world if args.runner == "mpi" else None, args.runner, eval_data,
            evals)

    tag = (f"{args.model} {kind} K={args.stages} V={args.virtual} "
           f"M={m}{f' R={replicas}' if replicas > 1 else ''} ({args.runner})")
    if args.clip_grad_norm:
        tag += f" clip-grad-norm={args.clip_grad_norm}"
    bad = 0
    if args.external_data:
        bad += check_rank_files(piped, onnx_path, tag)
    worst_loss = max(abs(a - r) / max(abs(r), 1e-12)
                     for a, r in zip(losses, ref_losses))
    if len(losses) != len(ref_losses) or worst_loss > RTOL:
        print(f"MISMATCH {tag}: losses {losses} vs single-rank {ref_losses}")
        bad += 1
    worst = 0.0
    replicated = replicas > 1 or "stage_replicas" in planned
    for name, ref in ref_weights.items():
        # State each replica's forwards advance on its own data (docs/Bundle.md
        # "Replicated stages") is not the single-rank training's.
        if replicated and name.endswith(("running_mean", "running_var")):
            continue
        if name not in weights:
            print(f"MISMATCH {tag}: pipeline lacks weight {name}")
            bad += 1
            continue
        scale = max(float(np.max(np.abs(ref))), 1e-12)
        rel = float(np.max(np.abs(weights[name].astype(np.float64) - ref))) / scale
        worst = max(worst, rel)
        if rel > RTOL:
            print(f"MISMATCH {tag}: weight {name} differs by {rel:.3g}")
            bad += 1
    if args.torch:
        bad += compare_torch(args, model, x, labels, losses, weights, tag)
    if args.eval:
        bad += compare_eval(model, onnx_path, weights, eval_x, eval_labels,
                            b, evals, args.steps, tag)
    if args.recompute != "none":
        bad += compare_recompute(args, compile_, common, piped, piped_cmd,
                                 data_path, data, work, world, losses,
                                 weights, tag)
    if args.shard_optimizer:
        bad += compare_sharded(args, compile_, common, m, piped, data_path,
                               work, losses, weights, tag)
    if asynchronous and not losses[-1] < losses[0]:
        print(f"MISMATCH {tag}: the loss does not decrease: {losses}")
        bad += 1
    if not bad:
        print(f"OK {tag}: losses {' '.join(f'{v:.6f}' for v in losses)}; worst "
              f"relative error loss {worst_loss:.2g}, weights {worst:.2g}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
