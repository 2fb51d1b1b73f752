// Exact per-rank action orders for K = 4 stages, M = 8 micro-batches.
// Expected orders come from the schedules' definitions (DESIGN.md), not from
// the pass: 1F1B rank r runs K-1-r warm-up forwards, then alternates, then
// drains; GPipe runs all forwards, then all backwards.

// RUN: pipedream-opt %S/Inputs/four-stages.mlir -pipe-unroll-schedule="kind=1f1b microbatches=8" | grep call_stage | grep " stage 0 microbatch" | FileCheck %s --check-prefix=R0-1F1B
// RUN: pipedream-opt %S/Inputs/four-stages.mlir -pipe-unroll-schedule="kind=1f1b microbatches=8" | grep call_stage | grep " stage 3 microbatch" | FileCheck %s --check-prefix=R3-1F1B
// RUN: pipedream-opt %S/Inputs/four-stages.mlir -pipe-unroll-schedule="kind=gpipe microbatches=8" | grep call_stage | grep " stage 0 microbatch" | FileCheck %s --check-prefix=R0-GPIPE
// RUN: pipedream-opt %S/Inputs/four-stages.mlir -pipe-unroll-schedule="kind=gpipe microbatches=8" | grep call_stage | grep " stage 3 microbatch" | FileCheck %s --check-prefix=R3-GPIPE
// RUN: pipedream-opt %S/Inputs/four-stages-chunked.mlir -pipe-unroll-schedule="kind=interleaved-1f1b microbatches=8 virtual=2" | grep call_stage | grep " stage 0 \(chunk 1 \)\?microbatch" | FileCheck %s --check-prefix=R0-INTERLEAVED
// RUN: pipedream-opt %S/Inputs/four-stages-split.mlir -pipe-unroll-schedule="kind=zb-h1 microbatches=8" | grep call_stage | grep " stage 0 microbatch" | FileCheck %s --check-prefix=R0-ZBH1
// RUN: pipedream-opt %S/Inputs/four-stages.mlir -pipe-unroll-schedule="kind=1f1b microbatches=8" | FileCheck %s --check-prefix=PROGRAM
// Every generated program passes the verifier.
// RUN: pipedream-opt %S/Inputs/four-stages.mlir -pipe-unroll-schedule="kind=1f1b microbatches=8" -pipe-verify-schedule -o /dev/null
// RUN: pipedream-opt %S/Inputs/four-stages.mlir -pipe-unroll-schedule="kind=gpipe microbatches=8" -pipe-verify-schedule -o /dev/null
// RUN: pipedream-opt %S/Inputs/four-stages.mlir -pipe-unroll-schedule="kind=pipedream microbatches=8" -pipe-verify-schedule -o /dev/null
// RUN: pipedream-opt %S/Inputs/four-stages.mlir -pipe-unroll-schedule="kind=2bw microbatches=8" -pipe-verify-schedule -o /dev/null
// RUN: pipedream-opt %S/Inputs/four-stages-chunked.mlir -pipe-unroll-schedule="kind=interleaved-1f1b microbatches=8 virtual=2" -pipe-verify-schedule -o /dev/null
// RUN: pipedream-opt %S/Inputs/four-stages-split.mlir -pipe-unroll-schedule="kind=zb-h1 microbatches=8" -pipe-verify-schedule -o /dev/null
// Interleaved needs M to be a multiple of K.
// RUN: not pipedream-opt %S/Inputs/four-stages-chunked.mlir -pipe-unroll-schedule="kind=interleaved-1f1b microbatches=6 virtual=2" 2>&1 | FileCheck %s --check-prefix=BAD-M

// R0-1F1B: F @s0_F({{.*}}) stage 0 microbatch 0 :
// R0-1F1B-NEXT: F @s0_F({{.*}}) stage 0 microbatch 1 :
// R0-1F1B-NEXT: F @s0_F({{.*}}) stage 0 microbatch 2 :
// R0-1F1B-NEXT: F @s0_F({{.*}}) stage 0 microbatch 3 :
// R0-1F1B-NEXT: B @s0_B({{.*}}) stage 0 microbatch 0 :
// R0-1F1B-NEXT: F @s0_F({{.*}}) stage 0 microbatch 4 :
// R0-1F1B-NEXT: B @s0_B({{.*}}) stage 0 microbatch 1 :
// R0-1F1B-NEXT: F @s0_F({{.*}}) stage 0 microbatch 5 :
// R0-1F1B-NEXT: B @s0_B({{.*}}) stage 0 microbatch 2 :
// R0-1F1B-NEXT: F @s0_F({{.*}}) stage 0 microbatch 6 :
// R0-1F1B-NEXT: B @s0_B({{.*}}) stage 0 microbatch 3 :
// R0-1F1B-NEXT: F @s0_F({{.*}}) stage 0 microbatch 7 :
// R0-1F1B-NEXT: B @s0_B({{.*}}) stage 0 microbatch 4 :
// R0-1F1B-NEXT: B @s0_B({{.*}}) stage 0 microbatch 5 :
// R0-1F1B-NEXT: B @s0_B({{.*}}) stage 0 microbatch 6 :
// R0-1F1B-NEXT: B @s0_B({{.*}}) stage 0 microbatch 7 :
// R0-1F1B-NEXT: U @s0_U({{.*}}) stage 0 microbatch 7 :

// R3-1F1B: F @s3_F({{.*}}) stage 3 microbatch 0 :
// R3-1F1B-NEXT: B @s3_B({{.*}}) stage 3 microbatch 0 :
// R3-1F1B-NEXT: F @s3_F({{.*}}) stage 3 microbatch 1 :
// R3-1F1B-NEXT: B @s3_B({{.*}}) stage 3 microbatch 1 :
// R3-1F1B-NEXT: F @s3_F({{.*}}) stage 3 microbatch 2 :
// R3-1F1B-NEXT: B @s3_B({{.*}}) stage 3 microbatch 2 :
// R3-1F1B-NEXT: F @s3_F({{.*}}) stage 3 microbatch 3 :
// R3-1F1B-NEXT: B @s3_B({{.*}}) stage 3 microbatch 3 :
// R3-1F1B-NEXT: F @s3_F({{.*}}) stage 3 microbatch 4 :
// R3-1F1B-NEXT: B @s3_B({{.*}}) stage 3 microbatch 4 :
// R3-1F1B-NEXT: F @s3_F({{.*}}) stage 3 microbatch 5 :
// R3-1F1B-NEXT: B @s3_B({{.*}}) stage 3 microbatch 5 :
// R3-1F1B-NEXT: F @s3_F({{.*}}) stage 3 microbatch 6 :
// R3-1F1B-NEXT: B @s3_B({{.*}}) stage 3 microbatch 6 :
// R3-1F1B-NEXT: F @s3_F({{.*}}) stage 3 microbatch 7 :
// R3-1F1B-NEXT: B @s3_B({{.*}}) stage 3 microbatch 7 :
// R3-1F1B-NEXT: U @s3_U({{.*}}) stage 3 microbatch 7 :

// R0-GPIPE: F @s0_F({{.*}}) stage 0 microbatch 0 :
// R0-GPIPE-NEXT: F @s0_F({{.*}}) stage 0 microbatch 1 :
// R0-GPIPE-NEXT: F @s0_F({{.*}}) stage 0 microbatch 2 :
// R0-GPIPE-NEXT: F @s0_F({{.*}}) stage 0 microbatch 3 :
// R0-GPIPE-NEXT: F @s0_F({{.*}}) stage 0 microbatch 4 :
// R0-GPIPE-NEXT: F @s0_F({{.*}}) stage 0 microbatch 5 :
// R0-GPIPE-NEXT: F @s0_F({{.*}}) stage 0 microbatch 6 :
// R0-GPIPE-NEXT: F @s0_F({{.*}}) stage 0 microbatch 7 :
// R0-GPIPE-NEXT: B @s0_B({{.*}}) stage 0 microbatch 0 :
// R0-GPIPE-NEXT: B @s0_B({{.*}}) stage 0 microbatch 1 :
// R0-GPIPE-NEXT: B @s0_B({{.*}}) stage 0 microbatch 2 :
// R0-GPIPE-NEXT: B @s0_B({{.*}}) stage 0 microbatch 3 :
// R0-GPIPE-NEXT: B @s0_B({{.*}}) stage 0 microbatch 4 :
// R0-GPIPE-NEXT: B @s0_B({{.*}}) stage 0 microbatch 5 :
// R0-GPIPE-NEXT: B @s0_B({{.*}}) stage 0 microbatch 6 :
// R0-GPIPE-NEXT: B @s0_B({{.*}}) stage 0 microbatch 7 :
// R0-GPIPE-NEXT: U @s0_U({{.*}}) stage 0 microbatch 7 :

// R3-GPIPE: F @s3_F({{.*}}) stage 3 microbatch 0 :
// R3-GPIPE-NEXT: F @s3_F({{.*}}) stage 3 microbatch 1 :
// R3-GPIPE-NEXT: F @s3_F({{.*}}) stage 3 microbatch 2 :
// R3-GPIPE-NEXT: F @s3_F({{.*}}) stage 3 microbatch 3 :
// R3-GPIPE-NEXT: F @s3_F({{.*}}) stage 3 microbatch 4 :
// R3-GPIPE-NEXT: F @s3_F({{.*}}) stage 3 microbatch 5 :
// R3-GPIPE-NEXT: F @s3_F({{.*}}) stage 3 microbatch 6 :
// R3-GPIPE-NEXT: F @s3_F({{.*}}) stage 3 microbatch 7 :
// R3-GPIPE-NEXT: B @s3_B({{.*}}) stage 3 microbatch 0 :
// R3-GPIPE-NEXT: B @s3_B({{.*}}) stage 3 microbatch 1 :
// R3-GPIPE-NEXT: B @s3_B({{.*}}) stage 3 microbatch 2 :
// R3-GPIPE-NEXT: B @s3_B({{.*}}) stage 3 microbatch 3 :
// R3-GPIPE-NEXT: B @s3_B({{.*}}) stage 3 microbatch 4 :
// R3-GPIPE-NEXT: B @s3_B({{.*}}) stage 3 microbatch 5 :
// R3-GPIPE-NEXT: B @s3_B({{.*}}) stage 3 microbatch 6 :
// R3-GPIPE-NEXT: B @s3_B({{.*}}) stage 3 microbatch 7 :
// R3-GPIPE-NEXT: U @s3_U({{.*}}) stage 3 microbatch 7 :

// Interleaved (Megatron), V = 2: forward k of rank 0 runs chunk (k/K)%V of
// micro-batch (k/(K*V))*K + k%K; (K-1)*2 + (V-1)*K = 10 warm-up forwards.
// R0-INTERLEAVED: F @s0c0_F({{.*}}) stage 0 microbatch 0 :
// R0-INTERLEAVED-NEXT: F @s0c0_F({{.*}}) stage 0 microbatch 1 :
// R0-INTERLEAVED-NEXT: F @s0c0_F({{.*}}) stage 0 microbatch 2 :
// R0-INTERLEAVED-NEXT: F @s0c0_F({{.*}}) stage 0 microbatch 3 :
// R0-INTERLEAVED-NEXT: F @s0c1_F({{.*}}) stage 0 chunk 1 microbatch 0 :
// R0-INTERLEAVED-NEXT: F @s0c1_F({{.*}}) stage 0 chunk 1 microbatch 1 :
// R0-INTERLEAVED-NEXT: F @s0c1_F({{.*}}) stage 0 chunk 1 microbatch 2 :
// R0-INTERLEAVED-NEXT: F @s0c1_F({{.*}}) stage 0 chunk 1 microbatch 3 :
// R0-INTERLEAVED-NEXT: F @s0c0_F({{.*}}) stage 0 microbatch 4 :
// R0-INTERLEAVED-NEXT: F @s0c0_F({{.*}}) stage 0 microbatch 5 :
// R0-INTERLEAVED-NEXT: F @s0c0_F({{.*}}) stage 0 microbatch 6 :
// R0-INTERLEAVED-NEXT: B @s0c1_B({{.*}}) stage 0 chunk 1 microbatch 0 :
// R0-INTERLEAVED-NEXT: F @s0c0_F({{.*}}) stage 0 microbatch 7 :
// R0-INTERLEAVED-NEXT: B @s0c1_B({{.*}}) stage 0 chunk 1 microbatch 1 :
// R0-INTERLEAVED-NEXT: F @s0c1_F({{.*}}) stage 0 chunk 1 microbatch 4 :
// R0-INTERLEAVED-NEXT: B @s0c1_B({{.*}}) stage 0 chunk 1 microbatch 2 :
// R0-INTERLEAVED-NEXT: F @s0c1_F({{.*}}) stage 0 chunk 1 microbatch 5 :
// R0-INTERLEAVED-NEXT: B @s0c1_B({{.*}}) stage 0 chunk 1 microbatch 3 :
// R0-INTERLEAVED-NEXT: F @s0c1_F({{.*}}) stage 0 chunk 1 microbatch 6 :
// R0-INTERLEAVED-NEXT: B @s0c0_B({{.*}}) stage 0 microbatch 0 :
// R0-INTERLEAVED-NEXT: F @s0c1_F({{.*}}) stage 0 chunk 1 microbatch 7 :
// R0-INTERLEAVED-NEXT: B @s0c0_B({{.*}}) stage 0 microbatch 1 :
// R0-INTERLEAVED-NEXT: B @s0c0_B({{.*}}) stage 0 microbatch 2 :
// R0-INTERLEAVED-NEXT: B @s0c0_B({{.*}}) stage 0 microbatch 3 :
// R0-INTERLEAVED-NEXT: B @s0c1_B({{.*}}) stage 0 chunk 1 microbatch 4 :
// R0-INTERLEAVED-NEXT: B @s0c1_B({{.*}}) stage 0 chunk 1 microbatch 5 :
// R0-INTERLEAVED-NEXT: B @s0c1_B({{.*}}) stage 0 chunk 1 microbatch 6 :
// R0-INTERLEAVED-NEXT: B @s0c1_B({{.*}}) stage 0 chunk 1 microbatch 7 :
// R0-INTERLEAVED-NEXT: B @s0c0_B({{.*}}) stage 0 microbatch 4 :
// R0-INTERLEAVED-NEXT: B @s0c0_B({{.*}}) stage 0 microbatch 5 :
// R0-INTERLEAVED-NEXT: B @s0c0_B({{.*}}) stage 0 microbatch 6 :
// R0-INTERLEAVED-NEXT: B @s0c0_B({{.*}}) stage 0 microbatch 7 :
// R0-INTERLEAVED-NEXT: U @s0c0_U({{.*}}) stage 0 microbatch 7 :
// R0-INTERLEAVED-NEXT: U @s0c1_U({{.*}}) stage 0 chunk 1 microbatch 7 :

// ZB-H1: after its last forward, rank 0 fills the drain with W's between
// the B's that wait on rank 1; its last action before U is a W.
// R0-ZBH1: F @s0_F({{.*}}) stage 0 microbatch 7 :
// R0-ZBH1-NOT: F @
// R0-ZBH1: W @s0_W({{.*}}) stage 0 microbatch
// R0-ZBH1: B @s0_B({{.*}}) stage 0 microbatch 7 :
// R0-ZBH1-NEXT: W @s0_W({{.*}}) stage 0 microbatch 7 :
// R0-ZBH1-NEXT: U @s0_U

// The program: inputs on stage 0, losses of stage 3, transfers, and
// stash/restore with rank 0's residual in one of min(K, M) = 4 slots.
// PROGRAM-LABEL: pipe.program @train schedule #pipe.schedule<kind = "1f1b", stages = 4, microbatches = 8>
// PROGRAM: %[[F0:.*]]:2 = pipe.call_stage F @s0_F(%arg0) stage 0 microbatch 0
// PROGRAM-NEXT: %[[T0:.*]] = pipe.transfer %[[F0]]#0 from stage 0 to stage 1
// PROGRAM-NEXT: pipe.stash %[[F0]]#1 into activation slot 0 stage 0 microbatch 0
// PROGRAM: pipe.call_stage F @s1_F(%[[T0]]) stage 1 microbatch 0
// PROGRAM-NOT: activation slot 4 stage 0
// PROGRAM: %[[R:.*]] = pipe.restore activation slot 0 stage 0 microbatch 0
// PROGRAM-NEXT: pipe.call_stage B @s0_B(%[[R]], %{{.*}}) stage 0 microbatch 0
// PROGRAM: pipe.return

// BAD-M: interleaved-1f1b needs the micro-batches (6) to be a multiple of the stages (4)
