"""pipedream-run --eval-data on a model with Dropout, against torch.

A torch MLP with two Dropout layers, exported with the ops in the graph,
trains 3 steps with pipedream (its own seeded masks), evaluating after each
on held-out data (compiled with --evaluate). The reference is the torch
module with pipedream's trained weights (read back from --save-onnx) in
eval mode (Dropout off), and, to show that the evaluation is not train
mode, the same module in train mode gives a different loss. Prints `OK ...`
or `MISMATCH ...`; exits non-zero on a mismatch.

With `--stages K` the bundle is a K-stage 1F1B pipeline: its ranks'
evaluation programs run the stages in eval mode.

usage: eval_dropout.py --bin BUILD/bin --work DIR [--stages K]
"""

import argparse
import csv
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pipeline_compare  # noqa: E402

RTOL = 1e-5


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--stages", type=int, default=None)
    args = p.parse_args()
    os.makedirs(args.work, exist_ok=True)
    torch.manual_seed(0)
    onnx_path = os.path.join(args.work, "model.onnx")
    model, _ = pipeline_compare.export_mlp_dropout(onnx_path, 4)

    rng = np.random.default_rng(3)
    data = os.path.join(args.work, "data.npz")
    np.savez(data, x=rng.standard_normal((24, 16)).astype(np.float32),
             labels=rng.integers(0, 10, 24).astype(np.int64))
    eval_x = rng.standard_normal((12, 16)).astype(np.float32)
    eval_labels = rng.integers(0, 10, 12).astype(np.int64)
    eval_data = os.path.join(args.work, "eval.npz")
    np.savez(eval_data, x=eval_x, labels=eval_labels)

    bundle = os.path.join(args.work, "bundle")
    subprocess.run([os.path.join(args.bin, "pipedream-compile"), onnx_path,
                    "--loss", "cross-entropy", "--optimizer", "adam", "--lr",
                    "0.01", "--microbatches", "2", "--batch-size", "8",
                    "--evaluate", "-o", bundle,
                    *(["--stages", str(args.stages), "--schedule", "1f1b"]
                      if args.stages else [])], check=True)
    log = os.path.join(args.work, "loss.csv")
    trained = os.path.join(args.work, "trained.onnx")
    subprocess.run([os.path.join(args.bin, "pipedream-run"), bundle, "--data",
                    data, "--steps", "3", "--eval-data", eval_data,
                    "--eval-every", "1", "--loss-log", log, "--save-onnx",
                    trained], check=True, stdout=subprocess.DEVNULL)
    with open(log) as f:
        evals = [float(r["eval_loss"]) for r in csv.DictReader(f)]

    weights = {i.name: numpy_helper.to_array(i)
               for i in onnx.load(trained).graph.initializer}
    state = {k: torch.from_numpy(weights[k].copy())
             for k in model.state_dict()}
    model.load_state_dict(state)
    x, y = torch.from_numpy(eval_x), torch.from_numpy(eval_labels)

    def loss(train_mode):
        model.train(train_mode)
        torch.manual_seed(1)
        with torch.no_grad():
            # Micro-batches of 4, as the bundle evaluates: the mean of
            # their means.
            return float(np.mean([F.cross_entropy(model(x[i:i + 4]),
                                                  y[i:i + 4]).item()
                                  for i in range(0, 12, 4)]))

    want, train_mode = loss(False), loss(True)
    rel = abs(evals[-1] - want) / abs(want)
    bad = len(evals) != 3 or rel > RTOL or \
        abs(train_mode - want) / abs(want) < 1e-3
    tag = f" {args.stages} stages" if args.stages else ""
    print(f"{'MISMATCH' if bad else 'OK'} dropout eval{tag}: losses "
          f"{' '.join(f'{v:.6f}' for v in evals)}; torch eval mode "
          f"{want:.6f} (train mode {train_mode:.6f}); relative error "
          f"{rel:.2g}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
