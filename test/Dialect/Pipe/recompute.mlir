// RUN: pipedream-opt %s --pipe-build-stage-training="loss=mse microbatches=4" --pipe-recompute=all | FileCheck %s
// RUN: pipedream-opt %s --pipe-build-stage-training="loss=mse microbatches=4" --pipe-recompute | FileCheck %s --check-prefix=LISTED
// RUN: pipedream-opt %s --pipe-build-stage-training="loss=mse microbatches=4" --pipe-recompute=all --pipe-unroll-schedule="kind=gpipe microbatches=4" --pipe-verify-schedule | FileCheck %s --check-prefix=UNROLL
// RUN: pipedream-opt %s --pipe-build-stage-training="loss=mse microbatches=4" --pipe-recompute=all --pipe-unroll-schedule="kind=pipedream microbatches=4" --pipe-verify-schedule -o /dev/null

// Stage 0 = dropout(relu(x * w0)) (a Dropout seed state), stage 1 = the
// loss of tanh(h * w1); the module lists stage 1 only (what pipe-partition
// recompute=auto would write).
module attributes {pipe.recompute = array<i64: 1>} {
func.func private @main_stage0(%x: tensor<2x4xf32> {nn.name = "x"}, %w0: tensor<4xf32> {nn.name = "w0", nn.param = dense<1.0> : tensor<4xf32>}) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<0>} {
  %0 = nn.mul %x, %w0 : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %1 = nn.relu %0 : tensor<2x4xf32>
  %2 = nn.dropout %1 {ratio = 0.5 : f64} : tensor<2x4xf32>
  return %2 : tensor<2x4xf32>
}
func.func private @main_stage1(%w1: tensor<4xf32> {nn.name = "w1", nn.param = dense<2.0> : tensor<4xf32>}, %h: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<1>} {
  %0 = nn.mul %h, %w1 : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %1 = nn.tanh %0 : tensor<2x4xf32>
  return %1 : tensor<2x4xf32>
}
func.func @main(%x: tensor<2x4xf32> {nn.name = "x", pipe.stage = #pipe.stage<0>}, %w0: tensor<4xf32> {nn.name = "w0", nn.param = dense<1.0> : tensor<4xf32>}, %w1: tensor<4xf32> {nn.name = "w1", nn.param = dense<2.0> : tensor<4xf32>}) -> tensor<2x4xf32> {
  %0 = call @main_stage0(%x, %w0) {pipe.stage = #pipe.stage<0>} : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %1 = pipe.transfer %0 from stage 0 to stage 1 : tensor<2x4xf32>
  %2 = call @main_stage1(%w1, %1) {pipe.stage = #pipe.stage<1>} : (tensor<4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %2 : tensor<2x4xf32>
}
}

// The attribute is consumed.
// CHECK-NOT: pipe.recompute
// F stashes its input x and the seed of its Dropout mask (seed + k * 1000003,
// computed from the state before F advances it), not its activations.
// CHECK-LABEL: func.func @stage0_F(
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x4xf32> {nn.name = "x", nn.no_grad, pipe.input = "x"}
// CHECK-SAME: %[[SEED:[^:]*]]: tensor<i64> {nn.name = "rng_seed:stage0", nn.role = "state"}
// CHECK-SAME: -> (tensor<2x4xf32> {pipe.send = 0 : i64}, tensor<i64> {nn.name = "rng_seed:stage0.next", nn.updates = "rng_seed:stage0"}, tensor<2x4xf32> {nn.residual = 0 : i64}, tensor<i64> {nn.residual = 1 : i64})
// CHECK: %[[MASKSEED:.*]] = nn.add %[[SEED]], %{{.*}} : (tensor<i64>, tensor<i64>) -> tensor<i64>
// CHECK: nn.bernoulli %[[MASKSEED]]
// CHECK: return %{{.*}}, %{{.*}}, %[[X]], %[[MASKSEED]] :
// B binds w0 (the copy reads it), restores x and the mask seed, and runs
// the forward again: the same mask from the same seed.
// CHECK-LABEL: func.func @stage0_B(
// CHECK-SAME: %[[W0:[^:]*]]: tensor<4xf32> {nn.name = "w0", nn.param
// CHECK-SAME: %[[RX:[^:]*]]: tensor<2x4xf32> {nn.residual = 0 : i64}
// CHECK-SAME: %[[RSEED:[^:]*]]: tensor<i64> {nn.residual = 1 : i64}
// CHECK-NOT: rng_seed
// CHECK: nn.mul %[[RX]], %[[W0]]
// CHECK: nn.relu
// CHECK: nn.bernoulli %[[RSEED]] {probability = 5.000000e-01 : f64}
// CHECK-NOT: rng_seed
// CHECK: return
// The last stage stashes what it received and the labels; its B reuses
// the w1 it already binds and does not compute the loss again.
// CHECK-LABEL: func.func @stage1_F(
// CHECK-SAME: %[[H:[^:]*]]: tensor<2x4xf32> {pipe.recv = 0 : i64}
// CHECK-SAME: %[[L:[^:]*]]: tensor<2x4xf32> {nn.no_grad, pipe.input = "labels"}
// CHECK: return %{{.*}}, %[[H]], %[[L]] :
// CHECK-LABEL: func.func @stage1_B(
// CHECK-SAME: nn.name = "w1"
// CHECK-NOT: nn.name = "w1"
// CHECK-SAME: {nn.residual = 0 : i64}
// CHECK-NOT: nn.reduce_mean
// CHECK: nn.tanh
// CHECK: return

// Only the listed stage: stage 0 keeps its residuals.
// LISTED-LABEL: func.func @stage0_B(
// LISTED-NOT: nn.relu
// LISTED: return
// LISTED-LABEL: func.func @stage1_B(
// LISTED: nn.tanh

// The stash slots hold the inputs: stage 0's x and its mask seed.
// UNROLL: pipe.program @train
// UNROLL: pipe.stash %{{.*}} into activation slot 0 stage 0 microbatch 0 : tensor<2x4xf32>
// UNROLL-NEXT: pipe.stash %{{.*}} into activation slot 1 stage 0 microbatch 0 : tensor<i64>
