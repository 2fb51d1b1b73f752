#!/usr/bin/python3
"""torch_compare.py for `--dtype bf16`: PyTorch trains with bf16 GEMMs too.

    torch_compare_bf16.py --rtol R [torch_compare.py arguments...]

Runs test/Training/Inputs/torch_compare.py (pipedream's side is whatever
`--bin DIR/pipedream-compile` is: here the emulated CUDA lowering with
`--dtype bf16`) with PyTorch's matrix products replaced by the recipe of
docs/GPU.md, forward and backward: every product's operands rounded to
bf16 (`.bfloat16()`, round-to-nearest-even), summed in f32, the product
rounded to bf16; biases, losses, gradients' sums outside products and the
optimizer stay f32. `F.linear` and `@` (Tensor.__matmul__) are replaced;
a model that uses anything else (e.g. convolutions) is refused. The
tolerance of torch_compare.py (relative, on losses and trained weights)
becomes R.
"""

import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "Training", "Inputs"))
import torch_compare  # noqa: E402


def rb(x):
    """x rounded to bf16 (round-to-nearest-even), as f32."""
    return x.bfloat16().float()


matmul = torch.Tensor.__matmul__


def sum_to(x, shape):
    """x summed over the broadcast dimensions down to `shape`."""
    while x.dim() > len(shape):
        x = x.sum(0)
    for i, n in enumerate(shape):
        if n == 1 and x.shape[i] != 1:
            x = x.sum(i, keepdim=True)
    return x


class BF16MatMul(torch.autograd.Function):
    """a @ b with bf16 operands and product; the gradients are bf16
    products too. An operand broadcast over batch dimensions (a weight)
    gets its gradient as ONE product over all of them (the batch and the
    rows merged into the contraction), as the compiler's GEMM does."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return rb(matmul(rb(a), rb(b)))

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        ga = rb(matmul(rb(g), rb(b).transpose(-1, -2)))
        if b.dim() == 2 and a.dim() > 2:
            a2 = a.reshape(-1, a.shape[-1])
            g2 = g.reshape(-1, g.shape[-1])
            gb = rb(matmul(rb(a2).t(), rb(g2)))
        else:
            gb = sum_to(rb(matmul(rb(a).transpose(-1, -2), rb(g))), b.shape)
        return sum_to(ga, a.shape), gb


def bf16_linear(x, w, b=None):
    y = BF16MatMul.apply(x, w.t())
    return y if b is None else y + b


def refuse(*args, **kwargs):
    raise SystemExit("torch_compare_bf16.py: the model uses a product this "
                     "reference does not model (only F.linear and @)")


def main():
    argv = sys.argv[1:]
    i = argv.index("--rtol")
    torch_compare.RTOL = float(argv[i + 1])
    del argv[i:i + 2]
    train = torch_compare.torch_train

    def bf16_train(*args, **kwargs):
        # Only PyTorch's training: the ONNX export before it traces the
        # plain model.
        saved = F.linear, F.conv2d, torch.Tensor.__matmul__
        F.linear = bf16_linear
        F.conv2d = refuse
        torch.Tensor.__matmul__ = lambda a, b: BF16MatMul.apply(a, b)
        try:
            return train(*args, **kwargs)
        finally:
            F.linear, F.conv2d, torch.Tensor.__matmul__ = saved

    torch_compare.torch_train = bf16_train
    sys.argv = [sys.argv[0]] + argv
    return torch_compare.main()


if __name__ == "__main__":
    sys.exit(main())
