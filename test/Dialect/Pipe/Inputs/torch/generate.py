#!/usr/bin/env python3
"""Writes the schedule CSVs of torch.distributed.pipelining used as test data.

Run with a torch >= 2.6 (the files here come from torch 2.15, CPU):
    /opt/venv/bin/python test/Dialect/Pipe/Inputs/torch/generate.py

For each schedule, K ranks (pipeline group size) and M micro-batches it builds
torch's schedule object on a fake process group (no communication happens:
torch computes every rank's order in the constructor) and writes
  <name>-k<K>-m<M>[-v<V>].csv        compute_only format (pipeline_order)
  <name>-k<K>-m<M>[-v<V>].comms.csv  compute_comms format (a few only)
with torch's own `_dump_csv`. pipedream compares its generators with these
files action by action (unittests/Pipe/ScheduleTorchTest.cpp) and imports them
(test/Dialect/Pipe/torch-schedules.mlir).
"""
import os
import sys

import torch
import torch.distributed as dist
from torch.distributed.pipelining import PipelineStage
from torch.distributed.pipelining import schedules as S
from torch.testing._internal.distributed.fake_pg import FakeStore

OUT = os.path.dirname(os.path.abspath(__file__))


def build(cls, k, m, stages_of_rank0, num_stages):
    dist.init_process_group("fake", rank=0, world_size=k, store=FakeStore())
    try:
        stages = [
            PipelineStage(torch.nn.Linear(2, 2), s, num_stages, torch.device("cpu"))
            for s in stages_of_rank0
        ]
        return cls(stages, m, loss_fn=lambda out, target: out.sum())
    finally:
        dist.destroy_process_group()


def write(sched, name, comms):
    sched._dump_csv(os.path.join(OUT, name + ".csv"), format="compute_only")
    if comms:
        sched._dump_csv(os.path.join(OUT, name + ".comms.csv"), format="compute_comms")


def main():
    # ZB-H1: ScheduleInterleavedZeroBubble with one stage per rank.
    for k in (1, 2, 3, 4, 8):
        for m in range(1, 17):
            rounds = max(1, m // k)
            if m % rounds:
                continue  # torch refuses M not a multiple of max(1, M // K)
            s = build(S.ScheduleInterleavedZeroBubble, k, m, [0], k)
            write(s, f"zb-h1-k{k}-m{m}", comms=(k, m) == (4, 8))
    # Interleaved zero bubble (ZB1P with V loop-placed chunks per rank).
    for k in (2, 4):
        for v in (2, 3):
            for m in (k, 2 * k, 3 * k):
                s = build(S.ScheduleInterleavedZeroBubble, k, m,
                          [c * k for c in range(v)], k * v)
                write(s, f"interleaved-zb-k{k}-m{m}-v{v}", comms=(k, m, v) == (4, 8, 2))
    # ZB-V: two chunks per rank in a V (stage s and 2K-1-s on rank s).
    for k in (2, 4, 8):
        for m in sorted({1, 2, k, 2 * k - 1, 2 * k, 3 * k}):
            s = build(S.ScheduleZBVZeroBubble, k, m, [0, 2 * k - 1], 2 * k)
            write(s, f"zb-v-k{k}-m{m}", comms=(k, m) == (4, 8))
    # DualPipeV (M >= 2K).
    for k in (2, 4, 8):
        for m in sorted({2 * k, 2 * k + 1, 3 * k, 4 * k}):
            s = build(S.ScheduleDualPipeV, k, m, [0, 2 * k - 1], 2 * k)
            write(s, f"dualpipe-v-k{k}-m{m}", comms=(k, m) == (4, 8))


if __name__ == "__main__":
    sys.exit(main())
