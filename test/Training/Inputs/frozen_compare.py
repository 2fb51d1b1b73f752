#!/usr/bin/python3
"""Trains a model whose constants are float initializers; compares with torch.

    frozen_compare.py --bin BUILD/bin --work DIR [--steps N] [--stages K]

With --stages K > 1 the bundle is a K-stage pipeline (1f1b, K micro-batches
of batch/K samples, run with `pipedream-run --transport threads`); the
weight classes then come from the bundle's report.json.

The torch module has two buffers (a float mask only compared, read by
`torch.where`, and a rotary-style cos table that multiplies the
activations) and Python-float constants (an RMS norm's exponent and eps, a
scale). Exported with torch.onnx (TorchScript, opset 17), then every float
`Constant` node is moved into an initializer, as onnxscript's optimizer and
torch's dynamo exporter write them. pipedream trains it with `--freeze
cos_table` (a table that reaches the loss through `Mul` cannot be told from
a parameter by structure, see docs/Training.md); everything else is left to
the trainable rule. Both sides run N SGD steps on the same seeded data.

Checked:
- every step's loss and every torch parameter within 1e-4 relative;
- every frozen initializer (the buffers and the constants) bitwise unchanged
  in the `--save-onnx` model;
- bundle.json's `training.weights` lists exactly the torch parameters as
  trainable and the rest frozen, with the reason of each;
- without `--freeze`, the cos table is trainable (the rule's documented
  limit) and nothing else changes class.
Prints `OK ...` or `MISMATCH ...` lines; exits non-zero on a mismatch.
"""

import argparse
import csv
import json
import os
import subprocess
import sys
import warnings

import numpy as np
import onnx
from onnx import numpy_helper
import torch
import torch.nn.functional as F

RTOL = 1e-4


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(6, 8)
        self.fc2 = torch.nn.Linear(8, 5)
        self.register_buffer("cos_table", torch.cos(torch.arange(8.0) * 0.3))
        self.register_buffer("mask", (torch.arange(8) % 3 != 0).float())

    def forward(self, x):
        h = self.fc1(x)
        h = h * self.cos_table + 0.25 * h
        h = h / torch.sqrt(h.pow(2).mean(-1, keepdim=True) + 1e-5)
        h = torch.where(self.mask == 0, 0.01 * h, h)
        return self.fc2(torch.tanh(h))


def constants_to_initializers(model):
    """Moves float Constant nodes into initializers (what onnxscript's
    optimizer leaves behind), keeping the other nodes in order."""
    graph = model.graph
    kept = []
    for node in graph.node:
        if node.op_type == "Constant" and len(node.attribute) == 1 and \
                node.attribute[0].name == "value" and \
                node.attribute[0].t.data_type == onnx.TensorProto.FLOAT:
            tensor = onnx.TensorProto()
            tensor.CopyFrom(node.attribute[0].t)
            tensor.name = node.output[0]
            graph.initializer.append(tensor)
        else:
            kept.append(node)
    del graph.node[:]
    graph.node.extend(kept)
    return model


def torch_train(model, x, labels, steps, batch, lr):
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for step in range(steps):
        sl = slice(step * batch, (step + 1) * batch)
        opt.zero_grad()
        loss = F.cross_entropy(model(torch.from_numpy(x[sl])),
                               torch.from_numpy(labels[sl]))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def compile_bundle(args, onnx_path, bundle, extra):
    """Compiles; returns (bundle.json, the weight classes)."""
    cmd = [os.path.join(args.bin, "pipedream-compile"), onnx_path, "-o",
           bundle, "--loss", "cross-entropy", "--optimizer", "sgd", "--lr",
           repr(args.lr), "--batch-size", str(args.batch), "-O", "1"] + extra
    if args.stages > 1:
        cmd += ["--stages", str(args.stages), "--schedule", "1f1b",
                "--microbatches", str(args.stages)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(bundle, "bundle.json")) as f:
        manifest = json.load(f)
    if args.stages > 1:
        with open(os.path.join(bundle, "report.json")) as f:
            return manifest, json.load(f)["weights"]
    return manifest, manifest["training"]["weights"]


def written_weights(manifest):
    """Names of the buffers the optimizer updates write."""
    if "training" in manifest:
        names = [manifest["training"]["update_function"]]
    else:
        names = [f["name"] for f in manifest["functions"]
                 if f["name"].endswith("_U")]
    return {b.get("updates") for f in manifest["functions"]
            if f["name"] in names for b in f["buffers"]}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--stages", type=int, default=1)
    args = p.parse_args()
    os.makedirs(args.work, exist_ok=True)

    torch.manual_seed(0)
    model = Model()
    onnx_path = os.path.join(args.work, "model.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (torch.zeros(args.batch, 6),), onnx_path,
                          input_names=["x"], output_names=["logits"],
                          opset_version=17, do_constant_folding=False,
                          dynamic_axes={"x": {0: "batch"},
                                        "logits": {0: "batch"}})
    proto = constants_to_initializers(onnx.load(onnx_path))
    onnx.checker.check_model(proto)
    onnx.save(proto, onnx_path)
    initial = {i.name: numpy_helper.to_array(i) for i in proto.graph.initializer}
    params = dict(model.named_parameters())
    expected_trainable = sorted(params)
    if sorted(n for n in initial if n in params) != expected_trainable:
        print(f"MISMATCH the export renamed parameters: {sorted(initial)}")
        return 1

    rng = np.random.default_rng(3)
    rows = args.batch * args.steps
    x = rng.standard_normal((rows, 6)).astype(np.float32)
    labels = rng.integers(0, 5, size=(rows,)).astype(np.int64)
    torch_losses = torch_train(model, x, labels, args.steps, args.batch,
                               args.lr)
    final = {k: v.detach().numpy() for k, v in model.state_dict().items()}

    bad = 0

    # The rule alone: the cos table reaches the loss through Mul.
    _, w = compile_bundle(args, onnx_path, os.path.join(args.work, "rule"), [])
    if sorted(w["trainable"]["names"]) != sorted(expected_trainable +
                                                 ["cos_table"]):
        print(f"MISMATCH rule alone: trainable {w['trainable']['names']}")
        bad += 1

    bundle = os.path.join(args.work, "bundle")
    manifest, w = compile_bundle(args, onnx_path, bundle,
                                 ["--freeze", "cos_table"])
    trainable = sorted(w["trainable"]["names"])
    frozen = {e["name"]: e["reason"] for e in w["frozen"]["names"]}
    if trainable != expected_trainable or w["trainable"]["count"] != 4:
        print(f"MISMATCH trainable {trainable}, torch has {expected_trainable}")
        bad += 1
    expected_frozen = sorted(n for n in initial if n not in params)
    if sorted(frozen) != expected_frozen or \
            w["frozen"]["count"] != len(expected_frozen):
        print(f"MISMATCH frozen {sorted(frozen)}, expected {expected_frozen}")
        bad += 1
    if frozen.get("cos_table") != "--freeze" or \
            frozen.get("mask") != "no differentiable path to the loss":
        print(f"MISMATCH frozen reasons {frozen}")
        bad += 1
    if any(frozen[n] != "scalar constant" for n in frozen
           if initial[n].ndim == 0):
        print(f"MISMATCH rank-0 constants not frozen as scalars: {frozen}")
        bad += 1
    # The optimizer never touches a frozen weight.
    written = written_weights(manifest)
    if not all(n in written for n in expected_trainable) or \
            any(n in written for n in frozen):
        print(f"MISMATCH the update writes a frozen weight: {written}")
        bad += 1

    data = os.path.join(args.work, "data.npz")
    np.savez(data, x=x, labels=labels)
    log = os.path.join(args.work, "loss.csv")
    trained_path = os.path.join(args.work, "trained.onnx")
    run = [os.path.join(args.bin, "pipedream-run"), bundle, "--data", data,
           "--steps", str(args.steps), "--loss-log", log, "--save-onnx",
           trained_path]
    if args.stages > 1:
        run += ["--transport", "threads"]
    subprocess.run(run, check=True, stdout=subprocess.DEVNULL)
    with open(log) as f:
        ours = [float(r["loss"]) for r in csv.DictReader(f)]
    trained = {i.name: i for i in onnx.load(trained_path).graph.initializer}
    original = {i.name: i for i in proto.graph.initializer}

    worst_loss = 0.0
    for s, (a, b) in enumerate(zip(ours, torch_losses)):
        rel = abs(a - b) / max(abs(b), 1e-12)
        worst_loss = max(worst_loss, rel)
        if rel > RTOL:
            print(f"MISMATCH step {s + 1} loss {a!r} vs torch {b!r}")
            bad += 1
    if len(ours) != len(torch_losses):
        print(f"MISMATCH {len(ours)} losses, torch has {len(torch_losses)}")
        bad += 1
    worst_weight = 0.0
    for name in expected_trainable:
        got = numpy_helper.to_array(trained[name]).astype(np.float64)
        ref = final[name]
        rel = float(np.max(np.abs(got - ref))) / max(
            float(np.max(np.abs(ref))), 1e-12)
        worst_weight = max(worst_weight, rel)
        if rel > RTOL:
            print(f"MISMATCH weight {name} differs by {rel:.3g}")
            bad += 1
        if np.array_equal(got, initial[name]):
            print(f"MISMATCH weight {name} did not change")
            bad += 1
    for name in expected_frozen:
        a = numpy_helper.to_array(trained[name])
        b = numpy_helper.to_array(original[name])
        if a.dtype != b.dtype or a.shape != b.shape or \
                a.tobytes() != b.tobytes():
            print(f"MISMATCH frozen initializer {name} changed")
            bad += 1
    if not bad:
        print(f"OK frozen K={args.stages}: losses {' '.join(f'{v:.6f}' for v in ours)}; "
              f"worst relative error loss {worst_loss:.2g}, weights "
              f"{worst_weight:.2g}; {len(expected_frozen)} frozen "
              f"initializers bitwise unchanged")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
