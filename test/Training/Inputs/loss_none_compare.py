#!/usr/bin/python3
"""Trains a model whose graph computes its own loss; compares with torch.

    loss_none_compare.py --bin BUILD/bin --work DIR [--steps N]
        [--stages K --microbatches M [--mpi]]

The torch module returns `F.cross_entropy(logits, y, weight=class_weight,
ignore_index=IGNORE)` (exported by torch.onnx as SoftmaxCrossEntropyLoss
with the class weights as an initializer), so the labels `y` are an
ordinary graph input. pipedream trains it with `--loss none` (the first
output is the loss), torch.optim.SGD trains the module, both N steps on the
same seeded data (some labels equal to ignore_index).

Checked: every step's loss and every parameter within 1e-4 relative; the
class weights (a constant of the loss, frozen by the importer) bitwise
unchanged in the `--save-onnx` model; bundle.json's training section has
loss "none" and no labels. Prints `OK ...` or `MISMATCH ...` lines; exits
non-zero on a mismatch.

With --stages K the bundle is a K-stage 1F1B pipeline of M micro-batches
(on threads, or over K MPI processes with --mpi), and the reference is
torch with gradient accumulation: each step minimises the mean over the M
micro-batches of the model's loss (what pipelined `--loss none` means; with
class weights or ignored labels that differs from the loss of the whole
batch, which normalises over all of its rows at once).
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
IGNORE = 3


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(6, 8)
        self.fc2 = torch.nn.Linear(8, 5)
        self.register_buffer("class_weight",
                             torch.tensor([1.0, 2.0, 0.5, 1.0, 1.5]))

    def forward(self, x, y):
        logits = self.fc2(torch.tanh(self.fc1(x)))
        return F.cross_entropy(logits, y, weight=self.class_weight,
                               ignore_index=IGNORE)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--stages", type=int, default=1)
    p.add_argument("--microbatches", type=int, default=1)
    p.add_argument("--mpi", action="store_true")
    args = p.parse_args()
    m = args.microbatches
    os.makedirs(args.work, exist_ok=True)

    torch.manual_seed(0)
    model = Model()
    onnx_path = os.path.join(args.work, "model.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model, (torch.zeros(args.batch, 6),
                    torch.zeros(args.batch, dtype=torch.long)),
            onnx_path, input_names=["x", "y"], output_names=["loss"],
            opset_version=13, dynamic_axes={"x": {0: "batch"},
                                            "y": {0: "batch"}})
    proto = onnx.load(onnx_path)
    ops = [n.op_type for n in proto.graph.node]
    if "SoftmaxCrossEntropyLoss" not in ops:
        print(f"MISMATCH the export has no SoftmaxCrossEntropyLoss: {ops}")
        return 1
    initial = {i.name: numpy_helper.to_array(i) for i in proto.graph.initializer}
    params = sorted(n for n, _ in model.named_parameters())

    rng = np.random.default_rng(5)
    rows = args.batch * args.steps
    x = rng.standard_normal((rows, 6)).astype(np.float32)
    y = rng.integers(0, 5, size=(rows,)).astype(np.int64)

    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    torch_losses = []
    for step in range(args.steps):
        sl = slice(step * args.batch, (step + 1) * args.batch)
        opt.zero_grad()
        xs, ys = torch.from_numpy(x[sl]), torch.from_numpy(y[sl])
        total = 0.0
        for part in range(m):
            rows = slice(part * args.batch // m, (part + 1) * args.batch // m)
            loss = model(xs[rows], ys[rows]) / m
            loss.backward()
            total += loss.item()
        opt.step()
        torch_losses.append(total)
    final = {k: v.detach().numpy() for k, v in model.state_dict().items()}

    bundle = os.path.join(args.work, "bundle")
    subprocess.run([os.path.join(args.bin, "pipedream-compile"), onnx_path,
                    "-o", bundle, "--loss", "none", "--optimizer", "sgd",
                    "--lr", repr(args.lr), "--batch-size", str(args.batch),
                    "-O", "1"] + ([] if args.stages == 1 else [
                        "--stages", str(args.stages), "--schedule", "1f1b",
                        "--microbatches", str(m)]), check=True)
    with open(os.path.join(bundle, "bundle.json")) as f:
        manifest = json.load(f)
    training = manifest["training" if args.stages == 1 else "pipeline"]
    if args.stages > 1:
        # The pipeline section names the weights in its report.
        with open(os.path.join(bundle, "report.json")) as f:
            training = dict(training, weights=json.load(f)["weights"])
    bad = 0
    if training["loss"] != "none" or "labels" in training or \
            sorted(training["inputs"]) != ["x", "y"]:
        print(f"MISMATCH training section {training}")
        bad += 1
    trainable = sorted(training["weights"]["trainable"]["names"])
    if trainable != params:
        print(f"MISMATCH trainable {trainable}, torch has {params}")
        bad += 1

    data = os.path.join(args.work, "data.npz")
    np.savez(data, x=x, y=y)
    log = os.path.join(args.work, "loss.csv")
    trained_path = os.path.join(args.work, "trained.onnx")
    subprocess.run([os.path.join(args.bin, "pipedream-run"), bundle, "--data",
                    data, "--steps", str(args.steps), "--loss-log", log,
                    "--save-onnx", trained_path] +
                   (["--ranks", str(args.stages)] if args.mpi else []),
                   check=True, stdout=subprocess.DEVNULL)
    with open(log) as f:
        ours = [float(r["loss"]) for r in csv.DictReader(f)]
    trained = {i.name: numpy_helper.to_array(i)
               for i in onnx.load(trained_path).graph.initializer}

    if len(ours) != len(torch_losses):
        print(f"MISMATCH {len(ours)} losses, torch has {len(torch_losses)}")
        bad += 1
    worst_loss = 0.0
    for s, (a, b) in enumerate(zip(ours, torch_losses)):
        rel = abs(a - b) / max(abs(b), 1e-12)
        worst_loss = max(worst_loss, rel)
        if rel > RTOL:
            print(f"MISMATCH step {s + 1} loss {a!r} vs torch {b!r}")
            bad += 1
    worst_weight = 0.0
    for name in params:
        got = trained[name].astype(np.float64)
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
    constants = [n for n in initial if n not in params]
    for name in constants:
        if trained[name].tobytes() != initial[name].tobytes():
            print(f"MISMATCH constant initializer {name} changed")
            bad += 1
    if not constants:
        print("MISMATCH the export has no class-weight initializer")
        bad += 1
    if not bad:
        where = "" if args.stages == 1 else \
            f" ({args.stages} stages, {m} micro-batches" + \
            (", MPI)" if args.mpi else ", threads)")
        print(f"OK loss none{where}: losses {' '.join(f'{v:.6f}' for v in ours)}; "
              f"worst relative error loss {worst_loss:.2g}, weights "
              f"{worst_weight:.2g}; {len(constants)} constant initializers "
              f"unchanged")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
