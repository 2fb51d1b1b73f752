#!/usr/bin/env python3
"""Writes the --dtype bf16 CPU test's model and PyTorch references.

    /opt/venv/bin/python test/Training/Inputs/bf16_reference.py [--out DIR]

Run with torch 2.x (the venv's); writes into test/Training/Inputs/bf16/:
  mlp.onnx       a small MLP (nn.Linear -> Gemm transB=1, ReLU, Linear,
                 ReLU, Linear), seed 0, batch axis dynamic
  data.npz       `x` (N x 48 f32) and `labels` (N, int64), seed 1
  reference.npz  per recipe r in (bf16, f32): `r/losses` (one per step) and
                 `r/<initializer>` (the weights after the steps, in the ONNX
                 initializer's layout)

The bf16 recipe is PyTorch's with f32 master weights: every matmul of the
forward pass runs on bf16 copies of its operands (`x.bfloat16() @
w.bfloat16().t()`: oneDNN/AMX bf16 GEMM, f32 accumulation, bf16 product)
and its result is cast back to f32 before the bias and every other op; its
autograd backward runs the gradient GEMMs the same way (bf16 operands and
products, f32 accumulation into the f32 .grad). That is what pipedream's
`--dtype bf16` does to every contraction of the training graph (docs/CLI.md).
SGD (lr 0.1), cross-entropy, STEPS steps of BATCH samples, one micro-batch.
"""

import argparse
import os

import numpy as np
import onnx
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
STEPS, BATCH, LR = 4, 32, 0.1
SIZES = [48, 96, 64, 10]


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList(
            torch.nn.Linear(a, b) for a, b in zip(SIZES, SIZES[1:]))

    def forward(self, x, bf16=False):
        for i, layer in enumerate(self.layers):
            if bf16:
                x = (x.bfloat16() @ layer.weight.bfloat16().t()).float() + layer.bias
            else:
                x = layer(x)
            if i + 1 < len(self.layers):
                x = F.relu(x)
        return x


def train(state, x, labels, bf16):
    model = MLP()
    model.load_state_dict(state)
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    losses = []
    for s in range(STEPS):
        xs = torch.from_numpy(x[s * BATCH:(s + 1) * BATCH])
        ys = torch.from_numpy(labels[s * BATCH:(s + 1) * BATCH])
        opt.zero_grad()
        loss = F.cross_entropy(model(xs, bf16), ys)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, model.state_dict()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", default=os.path.join(HERE, "bf16"))
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(0)
    model = MLP()
    state = {k: v.clone() for k, v in model.state_dict().items()}
    path = os.path.join(args.out, "mlp.onnx")
    torch.onnx.export(model, (torch.zeros(2, SIZES[0]),), path,
                      input_names=["x"], output_names=["logits"],
                      dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}},
                      opset_version=17, dynamo=False)
    graph = onnx.load(path).graph
    # Initializer name -> torch parameter (Gemm transB=1 keeps W's layout).
    names = {i.name: i.name for i in graph.initializer}
    rng = np.random.default_rng(1)
    x = rng.standard_normal((STEPS * BATCH, SIZES[0])).astype(np.float32)
    labels = rng.integers(0, SIZES[-1], STEPS * BATCH).astype(np.int64)
    np.savez(os.path.join(args.out, "data.npz"), x=x, labels=labels)
    out = {}
    for recipe in ("bf16", "f32"):
        losses, final = train(state, x, labels, recipe == "bf16")
        out[f"{recipe}/losses"] = np.array(losses, np.float64)
        for name in names:
            out[f"{recipe}/{name}"] = final[name].numpy()
    np.savez(os.path.join(args.out, "reference.npz"), **out)
    print("torch", torch.__version__, "bf16 losses", out["bf16/losses"],
          "f32 losses", out["f32/losses"])


if __name__ == "__main__":
    main()
