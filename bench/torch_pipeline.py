"""PyTorch's own pipeline (torch.distributed.pipelining, Schedule1F1B, gloo).

    VENV/bin/python bench/torch_pipeline.py [--stages 2] [--split 2]
        [--microbatches 8] [--microbatch-size 4] [--steps 10] [--warmup 3]
        [--dim 128] [--heads 4] [--layers 4] [--seq 32] [--data DATA.npz]

Runs in a venv with torch >= 2.4 from pip (Debian's torch 1.13 has no
torch.distributed.pipelining); bench/pipeline.py --torch-venv VENV calls it.
The model is models/export_torch.py's GPT (the class is imported from
there), cut into K stages at block boundaries: `--split` blocks before the
first cut (default: blocks / K each; the first stage also holds the
embeddings, the last the final LayerNorm and the LM head), one process
per stage (torch.multiprocessing, MASTER_ADDR=127.0.0.1, gloo), one thread
per process. Each stage is a manual PipelineStage; Schedule1F1B with M
micro-batches, cross-entropy over all tokens, Adam (lr 1e-3) per stage.
After `--warmup` untimed steps, each rank times `--steps` steps (schedule
step + optimizer step); a step's time is the slowest rank's, and the
median step gives samples/s = batch / median. Prints one line
`torch 1f1b K=.. : X samples/s (median step Y ms, ...)` and the loss.
With --single, also times the unsplit model in this process (one thread,
M micro-batches with gradient accumulation, same loss scaling) and prints
`torch single process: X samples/s ...` first.
"""

import argparse
import datetime
import os
import socket
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.distributed.pipelining import PipelineStage, Schedule1F1B

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "models"))
from export_torch import GPT  # noqa: E402  (only needs torch)


class First(nn.Module):
    def __init__(self, gpt, blocks):
        super().__init__()
        self.tok, self.pos = gpt.tok, gpt.pos
        self.blocks = nn.ModuleList(blocks)

    def forward(self, idx):
        t = idx.size(1)
        x = self.tok(idx) + self.pos(torch.arange(0, t)).unsqueeze(0)
        for block in self.blocks:
            x = block(x)
        return x


class Middle(nn.Module):
    def __init__(self, blocks):
        super().__init__()
        self.blocks = nn.ModuleList(blocks)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


class Last(Middle):
    def __init__(self, gpt, blocks):
        super().__init__(blocks)
        self.ln_f, self.head = gpt.ln_f, gpt.head

    def forward(self, x):
        return self.head(self.ln_f(super().forward(x)))


def cuts(args):
    n = args.layers
    if args.stages == 2 and args.split is not None:
        return [0, args.split, n]
    return [round(i * n / args.stages) for i in range(args.stages + 1)]


def worker(rank, args, port, result):
    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=args.stages,
                            timeout=datetime.timedelta(seconds=300))
    torch.manual_seed(0)
    gpt = GPT(dim=args.dim, heads=args.heads, max_len=max(16, args.seq),
              layers=args.layers)
    blocks = [gpt.block, *gpt.more]
    c = cuts(args)
    mine = blocks[c[rank]:c[rank + 1]]
    last = rank == args.stages - 1
    if rank == 0:
        module = First(gpt, mine)
    elif last:
        module = Last(gpt, mine)
    else:
        module = Middle(mine)
    stage = PipelineStage(module, rank, args.stages, torch.device("cpu"))
    vocab = gpt.head.out_features

    def loss_fn(logits, target):
        return nn.functional.cross_entropy(logits.reshape(-1, vocab),
                                           target.reshape(-1))

    schedule = Schedule1F1B(stage, args.microbatches, loss_fn=loss_fn)
    opt = torch.optim.Adam(module.parameters(), lr=1e-3)

    times, losses_out = [], []
    for step, idx, lab in step_batches(args):
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        losses = []
        if rank == 0:
            schedule.step(idx)
        elif last:
            schedule.step(target=lab, losses=losses)
        else:
            schedule.step()
        if args.clip_grad_norm:
            clip_across_stages(module, args.clip_grad_norm)
        opt.step()
        elapsed = time.perf_counter() - start
        if step >= args.warmup:
            times.append(elapsed)
        if last and losses:
            losses_out.append(float(torch.stack(losses).detach().mean()))
    t = torch.tensor(times, dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    if last:
        result.put((t.tolist(), losses_out))
    dist.barrier()
    dist.destroy_process_group()


def clip_across_stages(module, max_norm):
    """clip_grad_norm_ over the whole model: each stage's squared norm,
    all-reduced over the stages (what Megatron does across its pipeline)."""
    grads = [p.grad for p in module.parameters() if p.grad is not None]
    squares = (torch.stack([g.pow(2).sum() for g in grads]).sum() if grads
               else torch.zeros(()))
    dist.all_reduce(squares)
    coef = torch.clamp(max_norm / (squares.sqrt() + 1e-6), max=1.0)
    for g in grads:
        g.mul_(coef)


def load_data(args):
    n = args.microbatches * args.microbatch_size
    if args.data:
        d = np.load(args.data)
        return d["idx"], d["labels"]
    rng = np.random.default_rng(0)
    return (rng.integers(0, 64, size=(n * 4, args.seq)),
            rng.integers(0, 64, size=(n * 4, args.seq)))


def step_batches(args):
    """For each warm-up and timed step: (step, idx, labels), the step's
    batch of M x B rows as int64 tensors, taken in turn from load_data's
    batches."""
    n = args.microbatches * args.microbatch_size
    idx_all, lab_all = load_data(args)
    batches = len(idx_all) // n
    for step in range(args.warmup + args.steps):
        k = step % batches
        yield (step, torch.from_numpy(idx_all[k * n:(k + 1) * n]).long(),
               torch.from_numpy(lab_all[k * n:(k + 1) * n]).long())


def single(args):
    torch.set_num_threads(1)
    torch.manual_seed(0)
    gpt = GPT(dim=args.dim, heads=args.heads, max_len=max(16, args.seq),
              layers=args.layers)
    opt = torch.optim.Adam(gpt.parameters(), lr=1e-3)
    n, m = args.microbatches * args.microbatch_size, args.microbatches
    times = []
    for step, idx, lab in step_batches(args):
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        for x, y in zip(idx.chunk(m), lab.chunk(m)):
            logits = gpt(x)
            loss = nn.functional.cross_entropy(
                logits.reshape(-1, logits.size(-1)), y.reshape(-1)) / m
            loss.backward()
        if args.clip_grad_norm:
            torch.nn.utils.clip_grad_norm_(gpt.parameters(),
                                           args.clip_grad_norm)
        opt.step()
        if step >= args.warmup:
            times.append(time.perf_counter() - start)
    med = float(np.median(times))
    print(f"torch {torch.__version__} single process: {n / med:.1f} samples/s "
          f"(median step {med * 1e3:.2f} ms, min {min(times) * 1e3:.2f} ms, "
          f"{len(times)} steps)", flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--stages", type=int, default=2)
    p.add_argument("--split", type=int, default=None,
                   help="blocks on the first stage (K=2)")
    p.add_argument("--microbatches", type=int, default=8)
    p.add_argument("--microbatch-size", type=int, default=4)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--seq", type=int, default=32)
    p.add_argument("--data", help="npz with idx, labels (bench/pipeline.py's)")
    p.add_argument("--clip-grad-norm", type=float, default=None,
                   help="clip the gradients to this 2-norm before each "
                        "step (over every stage)")
    p.add_argument("--single", action="store_true",
                   help="also time the unsplit model in one process")
    args = p.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if args.single:
        single(args)
    ctx = mp.get_context("spawn")
    result = ctx.SimpleQueue()
    mp.spawn(worker, args=(args, free_port(), result), nprocs=args.stages,
             join=True)
    times, losses = result.get()
    med = float(np.median(times))
    n = args.microbatches * args.microbatch_size
    c = cuts(args)
    print(f"torch {torch.__version__} Schedule1F1B K={args.stages} (gloo) "
          f"blocks per stage {[c[i + 1] - c[i] for i in range(args.stages)]}: "
          f"{n / med:.1f} samples/s (median step {med * 1e3:.2f} ms, "
          f"min {min(times) * 1e3:.2f} ms, {len(times)} steps)")
    if losses:
        print(f"loss {losses[0]:.4f} -> {losses[-1]:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
