// RUN: pipedream-opt %s --pipe-build-stage-training="loss=mse microbatches=4" | FileCheck %s
// RUN: pipedream-opt %s --pipe-build-stage-training="loss=mse microbatches=4 split-backward" | FileCheck %s --check-prefix=SPLIT
// RUN: pipedream-opt %s --pipe-build-stage-training="loss=mse microbatches=4 replicas=2" | FileCheck %s --check-prefix=REPLICAS
// RUN: pipedream-opt %s --pipe-build-stage-training="loss=mse microbatches=4 lr-schedule=cosine warmup-steps=1 total-steps=5" | FileCheck %s --check-prefix=LRSCHED
// RUN: pipedream-opt %s --pipe-build-stage-training="loss=mse microbatches=4" --pipe-unroll-schedule="kind=1f1b microbatches=4" --pipe-verify-schedule -o /dev/null

// Two stages joined by one transfer (edge 0): y = relu(x * w0) * w1.
func.func private @main_stage0(%x: tensor<2x4xf32> {nn.name = "x"}, %w0: tensor<4xf32> {nn.name = "w0", nn.param = dense<1.0> : tensor<4xf32>}) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<0>} {
  %0 = nn.mul %x, %w0 : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %1 = nn.relu %0 : tensor<2x4xf32>
  return %1 : tensor<2x4xf32>
}
func.func private @main_stage1(%w1: tensor<4xf32> {nn.name = "w1", nn.param = dense<2.0> : tensor<4xf32>}, %h: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<1>} {
  %0 = nn.mul %h, %w1 : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}
func.func @main(%x: tensor<2x4xf32> {nn.name = "x", pipe.stage = #pipe.stage<0>}, %w0: tensor<4xf32> {nn.name = "w0", nn.param = dense<1.0> : tensor<4xf32>}, %w1: tensor<4xf32> {nn.name = "w1", nn.param = dense<2.0> : tensor<4xf32>}) -> tensor<2x4xf32> {
  %0 = call @main_stage0(%x, %w0) {pipe.stage = #pipe.stage<0>} : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %1 = pipe.transfer %0 from stage 0 to stage 1 : tensor<2x4xf32>
  %2 = call @main_stage1(%w1, %1) {pipe.stage = #pipe.stage<1>} : (tensor<4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %2 : tensor<2x4xf32>
}

// CHECK-NOT: @main
// CHECK-LABEL: func.func @stage0_F(
// CHECK-SAME: {nn.name = "x", nn.no_grad, pipe.input = "x"}
// CHECK-SAME: -> (tensor<2x4xf32> {pipe.send = 0 : i64},
// CHECK-SAME: attributes {pipe.stage = #pipe.stage<0>}
// CHECK-LABEL: func.func @stage0_B(
// CHECK-SAME: pipe.grad = 0 : i64}
// CHECK-SAME: %[[ACC:[^:]*]]: tensor<4xf32> {nn.name = "grad:w0", nn.role = "grad"}
// CHECK-SAME: -> (tensor<4xf32> {nn.name = "grad:w0.next", nn.updates = "grad:w0"})
// CHECK: nn.add %[[ACC]], %{{.*}} : (tensor<4xf32>, tensor<4xf32>)
// CHECK-LABEL: func.func @stage0_U(
// CHECK-SAME: {nn.name = "grad:w0", nn.role = "grad"}
// CHECK-SAME: -> (tensor<4xf32> {nn.name = "w0.next", nn.updates = "w0"}, tensor<4xf32> {nn.name = "grad:w0.next", nn.updates = "grad:w0"})
// The last stage receives edge 0, takes the labels and returns the loss.
// CHECK-LABEL: func.func @stage1_F(
// CHECK-SAME: {pipe.recv = 0 : i64}
// CHECK-SAME: {nn.no_grad, pipe.input = "labels"}
// CHECK-SAME: -> (tensor<f32> {nn.name = "loss", nn.role = "loss"}
// The loss's gradient is the constant 1/M and edge 0's gradient goes back.
// CHECK-LABEL: func.func @stage1_B(
// CHECK-SAME: tensor<2x4xf32> {nn.grad_of = 1 : i64, pipe.grad = 0 : i64}
// CHECK: nn.constant dense<2.500000e-01> : tensor<f32>

// Two replicas: the gradients of both are summed, so 1/(R*M) = 1/8.
// REPLICAS-LABEL: func.func @stage1_B(
// REPLICAS: nn.constant dense<1.250000e-01> : tensor<f32>

// SPLIT-LABEL: func.func @stage1_B(
// SPLIT-SAME: {nn.carry = 0 : i64}
// SPLIT-LABEL: func.func @stage1_W(
// SPLIT-SAME: nn.updates = "grad:w1"}


// A learning-rate schedule: each stage's update counts its own steps in
// the state buffer step:<stage> and scales lr by the factor of that step.
// LRSCHED-LABEL: func.func @stage0_U(
// LRSCHED-SAME: %[[S:[^:]*]]: tensor<f32> {nn.name = "step:stage0", nn.role = "state"}
// LRSCHED-SAME: tensor<f32> {nn.name = "step:stage0.next", nn.updates = "step:stage0"}
// LRSCHED: nn.cos
// LRSCHED: nn.less %[[S]]
// LRSCHED-LABEL: func.func @stage1_U(
// LRSCHED-SAME: {nn.name = "step:stage1", nn.role = "state"}
// LRSCHED: nn.cos
