// A graph input read by both stages (the initial states of a bidirectional
// recurrent layer whose reverse direction lands on stage 1, a mask read in
// every layer): hand written in the outlined view, y = (x * m) + m with
// stage 1 adding m again. The unrolled program holds m per micro-batch on
// stage 0, its first reader, and sends it to stage 1 with one pipe.transfer
// per micro-batch (no gradient goes back: inputs take none), so the rank
// projection finds every cross-rank value in a transfer.

// RUN: pipedream-opt %s --pipe-build-stage-training="loss=mse microbatches=2" --pipe-unroll-schedule="kind=1f1b microbatches=2" --pipe-verify-schedule | FileCheck %s --check-prefix=SYNC
// RUN: pipedream-opt %s --pipe-build-stage-training="loss=mse microbatches=2" --pipe-unroll-schedule="kind=1f1b microbatches=2" --pipe-project-ranks --pipe-verify-schedule | FileCheck %s --check-prefix=RANKS

func.func private @main_stage0(%x: tensor<2x4xf32> {nn.name = "x"}, %m: tensor<2x4xf32> {nn.name = "m"}, %w: tensor<4xf32> {nn.name = "w", nn.param = dense<1.0> : tensor<4xf32>}) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<0>} {
  %0 = nn.mul %x, %m : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %1 = nn.mul %0, %w : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %1 : tensor<2x4xf32>
}
func.func private @main_stage1(%m: tensor<2x4xf32> {nn.name = "m"}, %v: tensor<4xf32> {nn.name = "v", nn.param = dense<2.0> : tensor<4xf32>}, %h: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<1>} {
  %0 = nn.add %h, %m : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %1 = nn.mul %0, %v : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %1 : tensor<2x4xf32>
}
func.func @main(%x: tensor<2x4xf32> {nn.name = "x", pipe.stage = #pipe.stage<0>}, %m: tensor<2x4xf32> {nn.name = "m", pipe.stage = #pipe.stage<0>}, %w: tensor<4xf32> {nn.name = "w", nn.param = dense<1.0> : tensor<4xf32>}, %v: tensor<4xf32> {nn.name = "v", nn.param = dense<2.0> : tensor<4xf32>}) -> tensor<2x4xf32> {
  %0 = call @main_stage0(%x, %m, %w) {pipe.stage = #pipe.stage<0>} : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %1 = pipe.transfer %0 from stage 0 to stage 1 : tensor<2x4xf32>
  %2 = call @main_stage1(%m, %v, %1) {pipe.stage = #pipe.stage<1>} : (tensor<2x4xf32>, tensor<4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %2 : tensor<2x4xf32>
}

// SYNC-LABEL: pipe.program @train
// SYNC-SAME: (%[[X0:[^:]+]]: tensor<2x4xf32> {pipe.input = "x", pipe.microbatch = 0 : i64, pipe.stage = #pipe.stage<0>}
// SYNC-SAME: %[[M0:[^:]+]]: tensor<2x4xf32> {pipe.input = "m", pipe.microbatch = 0 : i64, pipe.stage = #pipe.stage<0>}
// SYNC-SAME: %[[M1:[^:]+]]: tensor<2x4xf32> {pipe.input = "m", pipe.microbatch = 1 : i64, pipe.stage = #pipe.stage<0>}
// SYNC: pipe.call_stage F @stage0_F(%[[X0]], %[[M0]]) stage 0 microbatch 0
// SYNC: %[[T0:.*]] = pipe.transfer %[[M0]] from stage 0 to stage 1
// SYNC-NEXT: pipe.call_stage F @stage1_F(%[[T0]], {{.*}}) stage 1 microbatch 0
// SYNC: %[[T1:.*]] = pipe.transfer %[[M1]] from stage 0 to stage 1
// SYNC-NEXT: pipe.call_stage F @stage1_F(%[[T1]], {{.*}}) stage 1 microbatch 1
// SYNC-NOT: pipe.transfer %[[M0]]
// SYNC-NOT: pipe.transfer %[[M1]]

// Rank 1 holds no copy of m: it receives it before each forward.
// RANKS-LABEL: pipe.program @train_rank0 rank 0
// RANKS: pipe.send %{{.*}} to 1 tag 2
// RANKS: pipe.send %{{.*}} to 1 tag 3
// RANKS-LABEL: pipe.program @train_rank1 rank 1
// RANKS-NOT: pipe.input = "m"
// RANKS: %[[R0:.*]] = pipe.recv from 0 tag 2
// RANKS-NEXT: pipe.call_stage F @stage1_F(%[[R0]],
// RANKS: %[[R1:.*]] = pipe.recv from 0 tag 3
// RANKS-NEXT: pipe.call_stage F @stage1_F(%[[R1]],
