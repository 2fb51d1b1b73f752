#!/usr/bin/python3
"""Exports the PyTorch test models to ONNX.

    /usr/bin/python3 models/export_torch.py MODEL OUT.onnx [--opset N]
        [--batch B] [--dynamic-batch] [--hidden H] [--dim D] [--heads N]
        [--seq T] [--layers L]

MODEL is one of:
  mlp  Linear-ReLU-Linear-ReLU-Linear over x[B, 16] -> y[B, 10]
  gpt  a GPT-like decoder: token + positional Embedding, one pre-LayerNorm
       block with causal multi-head attention (mask from triu + masked_fill,
       i.e. Trilu/Where), GELU MLP, residuals, final LayerNorm, LM head;
       idx[B, 8] (int64) -> logits[B, 8, 64]
  gpt-tied  the same with the LM head tied to the token embedding (GPT-2's
       tie_word_embeddings): one initializer read by the Gather and, through
       a Transpose, by the head's MatMul (exported without constant folding,
       which would fold the Transpose into a second initializer)
  cnn  Conv-BatchNorm-ReLU-MaxPool-Conv-BatchNorm-ReLU-AvgPool-
       GlobalAveragePool-Flatten-Linear over x[B, 3, 16, 16] -> y[B, 10]

Weights come from a fixed seed, so the same command writes the same model.
Models are exported in eval mode; BatchNormalization is kept as an op
(TrainingMode.PRESERVE) instead of being folded into the convolution.
--dynamic-batch marks axis 0 of the input and output as dynamic ('batch'),
for testing pipedream-translate's --input-shape.
--hidden (mlp: width of the two hidden layers, default 64) and --dim,
--heads, --seq (gpt: d_model 32, 2 heads, 8 tokens by default) scale the
models up for benchmarks (bench/); the defaults are the test models.
--layers deepens them (the partitioner's tests and bench/partition.py): gpt
gets L blocks (default 1), cnn L Conv-BatchNorm-ReLU layers (default 2; the
extra ones, 16 channels at 8x8, sit between the second layer and its
AvgPool). The default models are unchanged: the extra modules are created
last, so the seeded weights of the first ones stay the same.

Uses Debian's /usr/bin/python3 with python3-torch 1.13 and python3-onnx.
"""

import argparse
import math
import warnings

import torch
from torch import nn


class MLP(nn.Module):
    def __init__(self, hidden=64):
        super().__init__()
        self.fc1 = nn.Linear(16, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, 10)

    def forward(self, x):
        x = torch.relu(self.fc1(x))
        x = torch.relu(self.fc2(x))
        return self.fc3(x)


class CausalSelfAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, t, c = x.size()
        q, k, v = self.qkv(x).split(c, dim=2)
        hd = c // self.heads
        q = q.view(b, t, self.heads, hd).transpose(1, 2)
        k = k.view(b, t, self.heads, hd).transpose(1, 2)
        v = v.view(b, t, self.heads, hd).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(hd)
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
        att = att.masked_fill(mask, float("-inf"))
        att = torch.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        return self.proj(y)


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attn = CausalSelfAttention(dim, heads)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(),
                                 nn.Linear(4 * dim, dim))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab=64, dim=32, heads=2, max_len=16, layers=1,
                 tied=False):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(max_len, dim)
        self.block = Block(dim, heads)
        self.ln_f = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.more = nn.ModuleList(Block(dim, heads) for _ in range(layers - 1))
        if tied:
            # GPT-2's tie_word_embeddings: the LM head reads the token
            # embedding (one parameter, two readers).
            self.head.weight = self.tok.weight

    def forward(self, idx):
        _, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long)
        x = self.tok(idx) + self.pos(pos).unsqueeze(0)
        x = self.block(x)
        for block in self.more:
            x = block(x)
        return self.head(self.ln_f(x))


class CNN(nn.Module):
    def __init__(self, layers=2):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.pool1 = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(16)
        self.pool2 = nn.AvgPool2d(2)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, 10)
        self.more = nn.ModuleList(
            nn.Sequential(nn.Conv2d(16, 16, 3, padding=1), nn.BatchNorm2d(16),
                          nn.ReLU())
            for _ in range(layers - 2))

    def forward(self, x):
        x = self.pool1(torch.relu(self.bn1(self.conv1(x))))
        x = torch.relu(self.bn2(self.conv2(x)))
        for layer in self.more:
            x = layer(x)
        x = self.pool2(x)
        x = torch.flatten(self.gap(x), 1)
        return self.fc(x)


def build(name, batch, hidden=64, dim=32, heads=2, seq=8, layers=None):
    if name == "mlp":
        return MLP(hidden), torch.randn(batch, 16), "x", "y"
    if name in ("gpt", "gpt-tied"):
        model = GPT(dim=dim, heads=heads, max_len=max(16, seq),
                    layers=layers or 1, tied=name == "gpt-tied")
        # Distinct LayerNorm parameters: torch.onnx deduplicates equal
        # initializers (all-ones weights would become one tensor).
        for module in model.modules():
            if isinstance(module, nn.LayerNorm):
                module.weight.data.uniform_(0.5, 1.5)
                module.bias.data.uniform_(-0.1, 0.1)
        return model, torch.randint(0, 64, (batch, seq)), "idx", "logits"
    if name == "cnn":
        model = CNN(layers or 2)
        # Non-trivial running statistics, so BatchNormalization matters.
        for bn in [m for m in model.modules()
                   if isinstance(m, nn.BatchNorm2d)]:
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 1.5)
        return model, torch.randn(batch, 3, 16, 16), "x", "y"
    raise SystemExit(f"unknown model {name!r} (mlp, gpt, gpt-tied, cnn)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", choices=["mlp", "gpt", "gpt-tied", "cnn"])
    parser.add_argument("output")
    parser.add_argument("--opset", type=int, default=17)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--dynamic-batch", action="store_true")
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--dim", type=int, default=32)
    parser.add_argument("--heads", type=int, default=2)
    parser.add_argument("--seq", type=int, default=8)
    parser.add_argument("--layers", type=int, default=None)
    args = parser.parse_args()

    torch.manual_seed(0)
    model, example, input_name, output_name = build(
        args.model, args.batch, args.hidden, args.dim, args.heads, args.seq,
        args.layers)
    model.eval()
    dynamic = None
    if args.dynamic_batch:
        dynamic = {input_name: {0: "batch"}, output_name: {0: "batch"}}
    with warnings.catch_warnings():
        # Tracing a model that reads its own sizes warns; expected here.
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (example,), args.output,
                          input_names=[input_name],
                          output_names=[output_name],
                          opset_version=args.opset,
                          dynamic_axes=dynamic,
                          training=torch.onnx.TrainingMode.PRESERVE,
                          do_constant_folding=constant_folding(args.model))


def constant_folding(name):
    """Constant folding would fold the tied head's Transpose of the
    embedding into a second initializer, untying the weights."""
    return name != "gpt-tied"


if __name__ == "__main__":
    main()
