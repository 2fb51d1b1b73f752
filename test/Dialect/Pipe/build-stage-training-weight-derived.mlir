// RUN: pipedream-opt %s --pipe-build-stage-training="loss=mse microbatches=4" | FileCheck %s
// RUN: pipedream-opt %s --pipe-build-stage-training="loss=mse microbatches=4 split-backward" | FileCheck %s --check-prefix=SPLIT
// RUN: pipedream-opt %s --pipe-build-stage-training="loss=mse microbatches=4" --pipe-unroll-schedule="kind=1f1b microbatches=4" --pipe-verify-schedule -o /dev/null

// A torch Linear on stage 1 (h @ transpose(w1)): the transposed weight is
// weight-derived, so stage1_F does not stash it per micro-batch (it saves
// only the received h); stage1_B, which needs it for h's gradient, takes w1
// and transposes it again (docs/Training.md).
func.func private @main_stage0(%x: tensor<2x3xf32> {nn.name = "x"}, %w0: tensor<3xf32> {nn.name = "w0", nn.param = dense<1.0> : tensor<3xf32>}) -> tensor<2x3xf32> attributes {pipe.stage = #pipe.stage<0>} {
  %0 = nn.mul %x, %w0 : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = nn.relu %0 : tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}
func.func private @main_stage1(%w1: tensor<4x3xf32> {nn.name = "w1", nn.param = dense<2.0> : tensor<4x3xf32>}, %h: tensor<2x3xf32>) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<1>} {
  %t = nn.transpose %w1 {perm = array<i64: 1, 0>} : (tensor<4x3xf32>) -> tensor<3x4xf32>
  %0 = nn.matmul %h, %t : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}
func.func @main(%x: tensor<2x3xf32> {nn.name = "x", pipe.stage = #pipe.stage<0>}, %w0: tensor<3xf32> {nn.name = "w0", nn.param = dense<1.0> : tensor<3xf32>}, %w1: tensor<4x3xf32> {nn.name = "w1", nn.param = dense<2.0> : tensor<4x3xf32>}) -> tensor<2x4xf32> {
  %0 = call @main_stage0(%x, %w0) {pipe.stage = #pipe.stage<0>} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = pipe.transfer %0 from stage 0 to stage 1 : tensor<2x3xf32>
  %2 = call @main_stage1(%w1, %1) {pipe.stage = #pipe.stage<1>} : (tensor<4x3xf32>, tensor<2x3xf32>) -> tensor<2x4xf32>
  return %2 : tensor<2x4xf32>
}

// CHECK-LABEL: func.func @stage1_F(
// CHECK-NOT: tensor<3x4xf32> {nn.residual
// CHECK-SAME: tensor<2x3xf32> {nn.residual = 0 : i64}
// CHECK-SAME: attributes {pipe.stage = #pipe.stage<1>}
// CHECK: %[[T:.*]] = nn.transpose %arg0
// CHECK: nn.matmul %arg1, %[[T]]
// CHECK-LABEL: func.func @stage1_B(
// CHECK-SAME: %[[W:[^:]*]]: tensor<4x3xf32> {nn.name = "w1", nn.param
// CHECK: %[[T2:.*]] = nn.transpose %[[W]]
// CHECK: nn.transpose %[[T2]]
// CHECK-LABEL: func.func @stage1_U(

// Split backward: B (h's gradient) recomputes the transpose; W (w1's
// gradient) reads no weight.
// SPLIT-LABEL: func.func @stage1_F(
// SPLIT-NOT: tensor<3x4xf32> {nn.residual
// SPLIT-SAME: attributes {pipe.stage = #pipe.stage<1>}
// SPLIT-LABEL: func.func @stage1_B(
// SPLIT-SAME: {nn.name = "w1", nn.param
// SPLIT: nn.transpose
// SPLIT-LABEL: func.func @stage1_W(
// SPLIT-NOT: nn.name = "w1", nn.param
// SPLIT: return
