// A weight read by both stages (docs/Pipe.md, "Shared weights"), hand
// written in the outlined view: y = (x * w) * w, stage 0 computes x * w,
// stage 1 multiplies by w again; v is stage 1's own weight. w is one
// parameter: both stages' B add into their rank's grad:w, and
// pipe.all_reduce_grad sums the two accumulators right before the updates.

// RUN: pipedream-opt %s --pipe-build-stage-training="loss=mse microbatches=2" | FileCheck %s --check-prefix=STAGES
// RUN: pipedream-opt %s --pipe-build-stage-training="loss=mse microbatches=2" --pipe-unroll-schedule="kind=1f1b microbatches=2" --pipe-verify-schedule | FileCheck %s --check-prefix=SYNC
// RUN: pipedream-opt %s --pipe-build-stage-training="loss=mse microbatches=2 split-backward" --pipe-unroll-schedule="kind=zb-h1 microbatches=2" --pipe-verify-schedule | FileCheck %s --check-prefix=ZBH1
// RUN: pipedream-opt %s --pipe-build-stage-training="loss=mse microbatches=3 microbatches-per-update=1" --pipe-unroll-schedule="kind=pipedream microbatches=3" --pipe-verify-schedule | FileCheck %s --check-prefix=ASYNC
// RUN: pipedream-opt %s --pipe-build-stage-training="loss=mse microbatches=2" --pipe-unroll-schedule="kind=1f1b microbatches=2" --pipe-project-ranks --pipe-verify-schedule | FileCheck %s --check-prefix=RANKS
// RUN: pipedream-opt %s --pipe-build-stage-training="loss=mse microbatches=2" --pipe-unroll-schedule="kind=1f1b microbatches=2" --pipe-project-ranks --pipe-lower-rank-programs | FileCheck %s --check-prefix=NATIVE

func.func private @main_stage0(%x: tensor<2x4xf32> {nn.name = "x"}, %w: tensor<4xf32> {nn.name = "w", nn.param = dense<1.0> : tensor<4xf32>}) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<0>} {
  %0 = nn.mul %x, %w : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}
func.func private @main_stage1(%w: tensor<4xf32> {nn.name = "w", nn.param = dense<1.0> : tensor<4xf32>}, %v: tensor<4xf32> {nn.name = "v", nn.param = dense<2.0> : tensor<4xf32>}, %h: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<1>} {
  %0 = nn.mul %h, %w : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %1 = nn.add %0, %v : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %1 : tensor<2x4xf32>
}
func.func @main(%x: tensor<2x4xf32> {nn.name = "x", pipe.stage = #pipe.stage<0>}, %w: tensor<4xf32> {nn.name = "w", nn.param = dense<1.0> : tensor<4xf32>}, %v: tensor<4xf32> {nn.name = "v", nn.param = dense<2.0> : tensor<4xf32>}) -> tensor<2x4xf32> {
  %0 = call @main_stage0(%x, %w) {pipe.stage = #pipe.stage<0>} : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %1 = pipe.transfer %0 from stage 0 to stage 1 : tensor<2x4xf32>
  %2 = call @main_stage1(%w, %v, %1) {pipe.stage = #pipe.stage<1>} : (tensor<4xf32>, tensor<4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %2 : tensor<2x4xf32>
}

// Each stage accumulates its part of w's gradient and updates its own copy.
// STAGES-LABEL: func.func @stage0_B(
// STAGES-SAME: {nn.name = "grad:w", nn.role = "grad"}
// STAGES-LABEL: func.func @stage0_U(
// STAGES-SAME: -> (tensor<4xf32> {nn.name = "w.next", nn.updates = "w"}
// STAGES-LABEL: func.func @stage1_B(
// STAGES-SAME: {nn.name = "grad:w", nn.role = "grad"}
// STAGES-LABEL: func.func @stage1_U(
// STAGES-SAME: {nn.name = "w.next", nn.updates = "w"}

// One all-reduce per step, after every B (rank 0's last B is the last) and
// before both updates; none for v, which only stage 1 reads.
// SYNC-LABEL: pipe.program @train
// SYNC: call_stage B @stage1_B{{.*}} stage 1 microbatch 1
// SYNC: call_stage B @stage0_B{{.*}} stage 0 microbatch 1
// SYNC-NEXT: pipe.all_reduce_grad "w" stages [#pipe.stage<0>, #pipe.stage<1>] microbatch 1 : tensor<4xf32>
// SYNC-NOT: all_reduce_grad
// SYNC-NOT: call_stage B
// SYNC-DAG: call_stage U @stage0_U
// SYNC-DAG: call_stage U @stage1_U

// Split backward: W, not B, adds the weight gradient; the all-reduce
// follows the last W.
// (ZB-H1 defers rank 1's W by one micro-batch: stage 1's W of
// micro-batch 1 is the last.)
// ZBH1: call_stage W @stage0_W{{.*}} stage 0 microbatch 1
// ZBH1: call_stage W @stage1_W{{.*}} stage 1 microbatch 1
// ZBH1-NEXT: pipe.all_reduce_grad "w" stages [#pipe.stage<0>, #pipe.stage<1>] microbatch 1
// ZBH1-NOT: call_stage W

// PipeDream updates after every micro-batch: one all-reduce per update,
// after both stages' B of that micro-batch, before either U of it.
// ASYNC: call_stage B @stage0_B{{.*}} stage 0 microbatch 0
// ASYNC-NEXT: pipe.all_reduce_grad "w" {{.*}} microbatch 0
// ASYNC-DAG: call_stage U @stage0_U({{.*}}) stage 0 microbatch 0
// ASYNC-DAG: call_stage U @stage1_U({{.*}}) stage 1 microbatch 0
// ASYNC: call_stage B @stage0_B{{.*}} stage 0 microbatch 1
// ASYNC-NEXT: pipe.all_reduce_grad "w" {{.*}} microbatch 1
// ASYNC: call_stage B @stage0_B{{.*}} stage 0 microbatch 2
// ASYNC-NEXT: pipe.all_reduce_grad "w" {{.*}} microbatch 2
// ASYNC-NOT: all_reduce_grad

// Both ranks run the collective, before their U.
// RANKS-LABEL: pipe.program @train_rank0 rank 0
// RANKS: call_stage B @stage0_B{{.*}} microbatch 1
// RANKS-NEXT: pipe.all_reduce_grad "w" stages [#pipe.stage<0>, #pipe.stage<1>] microbatch 1
// RANKS-NEXT: call_stage U @stage0_U
// RANKS-LABEL: pipe.program @train_rank1 rank 1
// RANKS: pipe.send %{{.*}} to 0 tag 1
// RANKS-NEXT: pipe.all_reduce_grad "w" stages [#pipe.stage<0>, #pipe.stage<1>] microbatch 1
// RANKS-NEXT: call_stage U @stage1_U

// The native entry calls the runtime's all_reduce (table slot 6) with the
// instruction's index only (10 on rank 0: after 2 inputs, 2 F, 2 sends,
// 2 receives and 2 B): the runtime holds grad:w.
// NATIVE-LABEL: func.func private @pipeline_rank0(
// NATIVE: %[[IDX:.*]] = arith.constant 10 : i64
// NATIVE: %[[SLOT:.*]] = llvm.getelementptr %{{.*}}[6]
// NATIVE-NEXT: %[[FN:.*]] = llvm.load %[[SLOT]]
// NATIVE-NEXT: llvm.call %[[FN]](%{{.*}}, %[[IDX]]) : !llvm.ptr, (!llvm.ptr, i64) -> i32
