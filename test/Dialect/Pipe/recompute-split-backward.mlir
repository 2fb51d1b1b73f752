// RUN: pipedream-opt %s --pipe-build-stage-training="loss=mse microbatches=4 split-backward=true" --pipe-recompute=all | FileCheck %s
// RUN: pipedream-opt %s --pipe-build-stage-training="loss=mse microbatches=4 split-backward=true" --pipe-recompute=all --pipe-unroll-schedule="kind=zb-h1 microbatches=4" --pipe-verify-schedule | FileCheck %s --check-prefix=UNROLL

// Activation recomputation with a split backward (zb schedules): B reruns
// the forward from the stashed inputs and passes what W reads on to it as
// carries (nn.carry), so W reads no residual of F: it runs on the
// recomputed activations. Stage 0 = relu(x * w0), stage 1 = the loss of
// tanh(h * w1).
func.func private @main_stage0(%x: tensor<2x4xf32> {nn.name = "x"}, %w0: tensor<4xf32> {nn.name = "w0", nn.param = dense<1.0> : tensor<4xf32>}) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<0>} {
  %0 = nn.mul %x, %w0 : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %1 = nn.relu %0 : tensor<2x4xf32>
  return %1 : tensor<2x4xf32>
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

// F stashes only its input.
// CHECK-LABEL: func.func @stage0_F(
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x4xf32>
// CHECK-SAME: -> (tensor<2x4xf32> {pipe.send = 0 : i64}, tensor<2x4xf32> {nn.residual = 0 : i64})
// CHECK: return %{{.*}}, %[[X]] :
// B restores it, recomputes the forward and returns, after its own carry
// (the gradient W needs), the two values W read as residuals before: x
// and relu(x * w0).
// CHECK-LABEL: func.func @stage0_B(
// CHECK-SAME: %[[RX:[^:]*]]: tensor<2x4xf32> {nn.residual = 0 : i64}) -> (tensor<2x4xf32> {nn.carry = 0 : i64}, tensor<2x4xf32> {nn.carry = 1 : i64}, tensor<2x4xf32> {nn.carry = 2 : i64})
// CHECK: %[[MUL:.*]] = nn.mul %[[RX]]
// CHECK: %[[RELU:.*]] = nn.relu %[[MUL]]
// CHECK: return %{{.*}}, %[[RX]], %[[RELU]] :
// W takes carries only: its old residuals 0 and 1 are carries 1 and 2.
// CHECK-LABEL: func.func @stage0_W(
// CHECK-SAME: tensor<2x4xf32> {nn.carry = 1 : i64}, %{{[^:]*}}: tensor<2x4xf32> {nn.carry = 2 : i64}, %{{[^:]*}}: tensor<2x4xf32> {nn.carry = 0 : i64}, %{{[^:]*}}: tensor<4xf32> {nn.name = "grad:w0", nn.role = "grad"})
// The last stage: F stashes what it received and the labels.
// CHECK-LABEL: func.func @stage1_F(
// CHECK: return %{{.*}}, %{{.*}}, %{{.*}} : tensor<f32>, tensor<2x4xf32>, tensor<2x4xf32>
// CHECK-LABEL: func.func @stage1_B(
// CHECK-SAME: {nn.carry = 1 : i64})
// CHECK: nn.tanh
// CHECK-LABEL: func.func @stage1_W(
// CHECK-SAME: tensor<2x4xf32> {nn.carry = 1 : i64}, %{{[^:]*}}: tensor<2x4xf32> {nn.carry = 0 : i64}, %{{[^:]*}}: tensor<4xf32> {nn.name = "grad:w1", nn.role = "grad"})

// The zb-h1 program verifies (every restore after its stash: W's carries
// are stashed after its B).
// UNROLL: pipe.program @train
// UNROLL: pipe.call_stage W @stage0_W
