#!/usr/bin/python3
"""Trains small recurrent ONNX models with pipedream (3 SGD steps, the
model's scalar output as the loss, --loss none) and the same models in
PyTorch (float64 torch.nn.LSTM / GRU with the ONNX weights mapped to
torch's gate order), and compares the losses and trained weights.

    recurrent_torch.py --bin BUILD/bin --work DIR [--stages K --microbatches M]

With --stages K > 1 the model is also compiled as a K-stage 1F1B pipeline
over M micro-batches and trained over K MPI ranks (pipedream-run --ranks K);
its losses and trained weights must equal the single-rank run's (1e-5
relative) as well as torch's.

Cases: a bidirectional LSTM with layout=1 (batch first) and initial
states, a GRU (linear_before_reset=1, PyTorch's form) after a Transpose
as torch's exporter writes it, and a bidirectional GRU with an initial
state. A bidirectional layer unrolls into two chains (ConvertRecurrent.cpp);
with 2 stages the reverse direction lands on stage 1 and reads the initial
states, graph inputs of stage 0: they reach it through a transfer. Prints `OK name: ...` or
`MISMATCH name: ...` per case. Uses Debian's python3-onnx and torch.
"""

import argparse
import os
import subprocess
import sys

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

S, B, I, H = 5, 3, 4, 3
STEPS, LR = 3, 0.05
RTOL = 1e-4


def lstm_order(a, to_torch):
    """ONNX gates i, o, f, c <-> torch's i, f, g, o (axis 0)."""
    p = np.split(a, 4, 0)
    return np.concatenate([p[0], p[2], p[3], p[1]] if to_torch
                          else [p[0], p[3], p[1], p[2]], 0)


def gru_order(a, to_torch):
    """ONNX gates z, r, h <-> torch's r, z, n."""
    p = np.split(a, 3, 0)
    return np.concatenate([p[1], p[0], p[2]], 0)


CASES = {
    "lstm_bidirectional": dict(op="LSTM", gates=4, dirs=2, order=lstm_order,
                               attrs=dict(direction="bidirectional",
                                          layout=1),
                               states=True),
    "gru": dict(op="GRU", gates=3, dirs=1, order=gru_order,
                attrs=dict(linear_before_reset=1), states=False),
    "gru_bidirectional": dict(op="GRU", gates=3, dirs=2, order=gru_order,
                              attrs=dict(linear_before_reset=1, layout=1,
                                         direction="bidirectional"),
                              states=True),
}


def build(case, rng):
    g, d = case["gates"], case["dirs"]
    weights = {"W": rng.uniform(-0.6, 0.6, [d, g * H, I]),
               "R": rng.uniform(-0.6, 0.6, [d, g * H, H]),
               "Bias": rng.uniform(-0.3, 0.3, [d, 2 * g * H])}
    ins = ["x", "W", "R", "Bias"]
    # A dynamic batch axis ("batch"): --batch-size B sets it, B / M per
    # micro-batch in a pipeline.
    graph_inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                  ["batch", S, I])]
    layout1 = case["attrs"].get("layout", 0) == 1
    if case["states"]:
        # Initial states are inputs of the model (data, batch first with
        # layout 1), not weights.
        ins += ["", "h0", "c0"][:3 if case["op"] == "LSTM" else 2]
        graph_inputs += [helper.make_tensor_value_info(
            n, TensorProto.FLOAT, ["batch", d, H])
            for n in state_names(case)]
    # Batch-first data: layout 1, or (as torch's exporter) a Transpose to
    # [S, B, I] before a layout 0 node.
    nodes = [] if layout1 else [
        helper.make_node("Transpose", ["x"], ["xt"], perm=[1, 0, 2])]
    nodes += [
        helper.make_node(case["op"], ["x" if layout1 else "xt"] + ins[1:],
                         ["y", "yh"], name="rnn", hidden_size=H,
                         **case["attrs"]),
        helper.make_node("Mul", ["y", "y"], ["sq"]),
        helper.make_node("ReduceMean", ["sq"], ["l1"], keepdims=0),
        helper.make_node("ReduceMean", ["yh"], ["l2"], keepdims=0),
        helper.make_node("Add", ["l1", "l2"], ["loss"]),
    ]
    inits = [numpy_helper.from_array(v.astype(np.float32), k)
             for k, v in weights.items()]
    graph = helper.make_graph(
        nodes, "rnn", graph_inputs,
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    m.ir_version = 8
    return m, {k: v.astype(np.float32).astype(np.float64)
               for k, v in weights.items()}


def state_names(case):
    return ["h0", "c0"] if case["op"] == "LSTM" else ["h0"]


def torch_train(case, weights, data):
    d = case["dirs"]
    cls = torch.nn.LSTM if case["op"] == "LSTM" else torch.nn.GRU
    net = cls(I, H, bidirectional=d == 2, batch_first=True).double()
    order, g = case["order"], case["gates"]
    with torch.no_grad():
        for k in range(d):
            sfx = "_reverse" if k else ""
            b = weights["Bias"][k]
            for name, value in [("weight_ih", weights["W"][k]),
                                ("weight_hh", weights["R"][k]),
                                ("bias_ih", b[:g * H]), ("bias_hh", b[g * H:])]:
                getattr(net, f"{name}_l0{sfx}").copy_(
                    torch.tensor(order(value, True)))
    opt = torch.optim.SGD(net.parameters(), lr=LR)
    x = torch.tensor(data["x"], dtype=torch.float64)
    states = None
    if case["states"]:
        states = tuple(torch.tensor(data[n].transpose(1, 0, 2),
                                    dtype=torch.float64)
                       for n in state_names(case))
        if case["op"] == "GRU":
            states = states[0]
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        y, hn = net(x, states)
        hn = hn[0] if isinstance(hn, tuple) else hn
        # ONNX's Y is [S, D, B, H]: the mean of its squares is the same.
        loss = (y * y).mean() + hn.mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    out = {}
    for name, onnx_name in [("weight_ih", "W"), ("weight_hh", "R")]:
        out[onnx_name] = np.stack([order(getattr(
            net, f"{name}_l0{'_reverse' if k else ''}").detach().numpy(),
            False) for k in range(d)])
    out["Bias"] = np.stack([np.concatenate([order(getattr(
        net, f"{b}_l0{'_reverse' if k else ''}").detach().numpy(), False)
        for b in ["bias_ih", "bias_hh"]]) for k in range(d)])
    return losses, out


def train(args, path, npz, tag, stages):
    """Compiles and trains `path` with pipedream; returns (losses, weights)."""
    bundle = f"{path}.{tag}.bundle"
    subprocess.run([os.path.join(args.bin, "pipedream-compile"), path,
                    "--loss", "none", "--lr", str(LR),
                    "--stages", str(stages), "--microbatches",
                    str(args.microbatches if stages > 1 else 1),
                    # One step = the B samples.
                    "--batch-size", str(B),
                    "-o", bundle], check=True)
    trained = f"{path}.{tag}.trained.onnx"
    log = f"{path}.{tag}.csv"
    run = [os.path.join(args.bin, "pipedream-run"), bundle, "--data", npz,
           "--steps", str(STEPS), "--save-onnx", trained, "--loss-log", log]
    if stages > 1:
        run += ["--ranks", str(stages), "--timeout", "120"]
    subprocess.run(run, check=True, capture_output=True)
    losses = np.loadtxt(log, delimiter=",", skiprows=1)[:, 1]
    return losses, {i.name: numpy_helper.to_array(i)
                    for i in onnx.load(trained).graph.initializer}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--stages", type=int, default=1)
    ap.add_argument("--microbatches", type=int, default=1)
    ap.add_argument("--cases", default=",".join(CASES))
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    failed = False
    for name in args.cases.split(","):
        case = CASES[name]
        rng = np.random.default_rng(7)
        model, weights = build(case, rng)
        data = {"x": rng.uniform(-1, 1, [B, S, I]).astype(np.float32)}
        if case["states"]:
            for n in state_names(case):
                data[n] = rng.uniform(-0.5, 0.5, [B, case["dirs"], H]).astype(
                    np.float32)
        path = os.path.join(args.work, f"{name}.onnx")
        onnx.save(model, path)
        npz = os.path.join(args.work, f"{name}.npz")
        np.savez(npz, **data)
        ours, got = train(args, path, npz, "single", 1)
        problems = []
        what = f"{STEPS} SGD steps"
        if args.stages > 1:
            piped, piped_got = train(args, path, npz, "pipeline", args.stages)
            what = (f"{STEPS} SGD steps, {args.stages}-stage 1F1B over "
                    f"{args.stages} MPI ranks, M = {args.microbatches}")
            worst = float(np.max(np.abs(piped - ours) / np.abs(ours)))
            if worst > 1e-5:
                problems.append(f"pipeline losses {piped} vs single-rank {ours}")
            for k, v in got.items():
                err = float(np.max(np.abs(piped_got[k].astype(np.float64) - v)))
                if err > 1e-5 * max(float(np.max(np.abs(v))), 1e-12):
                    problems.append(f"pipeline {k}: max error {err:.3g} "
                                    "against single-rank")
            ours, got = piped, piped_got
        want_losses, want = torch_train(case, weights, data)
        worst = float(np.max(np.abs(ours - want_losses) / np.abs(want_losses)))
        if worst > RTOL:
            problems.append(f"losses {ours} vs {want_losses}")
        for k, v in want.items():
            # Relative to the weights' change, the stricter measure.
            change = np.max(np.abs(v - weights[k]))
            err = np.max(np.abs(got[k].astype(np.float64) - v))
            if err > RTOL * max(np.max(np.abs(v)), 1e-12) or err > 1e-2 * change:
                problems.append(f"{k}: max error {err:.3g} (change {change:.3g})")
        if problems:
            failed = True
            print(f"MISMATCH {name}: " + "; ".join(problems))
        else:
            print(f"OK {name}: {what}, losses {ours[0]:.6f} -> "
                  f"{ours[-1]:.6f} (worst relative {worst:.2g}), weights "
                  f"within {RTOL:g} of torch float64")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
