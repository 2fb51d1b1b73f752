// pipe-build-stage-training evaluate (docs/Pipe.md "Evaluation"): per
// stage also @stage<v>_E, the stage's forward as imported (eval mode:
// BatchNorm with its running statistics, nn.dropout as it is, which lowers
// to the identity) sending the same edges as its F; the last one takes the
// labels and returns the loss. It updates nothing, and the schedule does
// not run it (pipe-unroll-schedule's program is the step's).
// RUN: pipedream-opt %s --pipe-build-stage-training="loss=cross-entropy microbatches=2 evaluate=true" | FileCheck %s
// RUN: pipedream-opt %s --pipe-build-stage-training="loss=cross-entropy microbatches=2" | FileCheck %s --check-prefix=NONE
// RUN: pipedream-opt %s --pipe-build-stage-training="loss=cross-entropy microbatches=2 evaluate=true" --pipe-unroll-schedule="kind=1f1b microbatches=2" --pipe-verify-schedule | FileCheck %s --check-prefix=UNROLL

// Stage 0: BatchNorm and Dropout; edge 0 to stage 1: the classifier.
func.func private @main_stage0(%x: tensor<4x3x2x2xf32> {nn.name = "x"}, %w: tensor<3xf32> {nn.name = "w", nn.param = dense<1.0> : tensor<3xf32>}, %b: tensor<3xf32> {nn.name = "b", nn.param = dense<0.0> : tensor<3xf32>}, %mean: tensor<3xf32> {nn.name = "mean", nn.param = dense<0.5> : tensor<3xf32>}, %var: tensor<3xf32> {nn.name = "var", nn.param = dense<2.0> : tensor<3xf32>}) -> tensor<4x12xf32> attributes {pipe.stage = #pipe.stage<0>} {
  %0 = nn.batch_normalization %x, %w, %b, %mean, %var {epsilon = 1.0e-05 : f64, momentum = 0.9 : f64} : (tensor<4x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<4x3x2x2xf32>
  %1 = nn.dropout %0 {ratio = 0.5 : f64} : tensor<4x3x2x2xf32>
  %2 = nn.reshape %1 {shape = array<i64: 4, 12>} : (tensor<4x3x2x2xf32>) -> tensor<4x12xf32>
  return %2 : tensor<4x12xf32>
}
func.func private @main_stage1(%h: tensor<4x12xf32>, %w1: tensor<12xf32> {nn.name = "w1", nn.param = dense<2.0> : tensor<12xf32>}) -> tensor<4x12xf32> attributes {pipe.stage = #pipe.stage<1>} {
  %0 = nn.mul %h, %w1 : (tensor<4x12xf32>, tensor<12xf32>) -> tensor<4x12xf32>
  return %0 : tensor<4x12xf32>
}
func.func @main(%x: tensor<4x3x2x2xf32> {nn.name = "x", pipe.stage = #pipe.stage<0>}, %w: tensor<3xf32> {nn.name = "w", nn.param = dense<1.0> : tensor<3xf32>}, %b: tensor<3xf32> {nn.name = "b", nn.param = dense<0.0> : tensor<3xf32>}, %mean: tensor<3xf32> {nn.name = "mean", nn.param = dense<0.5> : tensor<3xf32>}, %var: tensor<3xf32> {nn.name = "var", nn.param = dense<2.0> : tensor<3xf32>}, %w1: tensor<12xf32> {nn.name = "w1", nn.param = dense<2.0> : tensor<12xf32>}) -> tensor<4x12xf32> {
  %0 = call @main_stage0(%x, %w, %b, %mean, %var) {pipe.stage = #pipe.stage<0>} : (tensor<4x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<4x12xf32>
  %1 = pipe.transfer %0 from stage 0 to stage 1 : tensor<4x12xf32>
  %2 = call @main_stage1(%1, %w1) {pipe.stage = #pipe.stage<1>} : (tensor<4x12xf32>, tensor<12xf32>) -> tensor<4x12xf32>
  return %2 : tensor<4x12xf32>
}

// CHECK-LABEL: func.func @stage0_E(
// CHECK-SAME: %[[X:[^:]*]]: tensor<4x3x2x2xf32> {nn.name = "x", nn.no_grad, pipe.input = "x"}
// CHECK-SAME: %[[W:[^:]*]]: tensor<3xf32> {nn.name = "w", nn.param = dense<1.000000e+00> : tensor<3xf32>}
// CHECK-SAME: %[[M:[^:]*]]: tensor<3xf32> {nn.name = "mean", nn.param = dense<5.000000e-01> : tensor<3xf32>}
// CHECK-SAME: -> (tensor<4x12xf32> {pipe.send = 0 : i64})
// CHECK-SAME: attributes {pipe.stage = #pipe.stage<0>}
// CHECK-NOT: nn.batch_norm_train
// CHECK-NOT: nn.bernoulli
// CHECK: nn.batch_normalization %[[X]], %[[W]], %{{.*}}, %[[M]]
// CHECK: nn.dropout
// CHECK: return
// The training forward: batch statistics and seeded masks.
// CHECK-LABEL: func.func @stage0_F(
// CHECK: nn.batch_norm_train
// CHECK: nn.bernoulli
// CHECK-LABEL: func.func @stage1_E(
// CHECK-SAME: %[[H:[^:]*]]: tensor<4x12xf32> {pipe.recv = 0 : i64}
// CHECK-SAME: {nn.name = "w1", nn.param = dense<2.000000e+00> : tensor<12xf32>}
// CHECK-SAME: %[[L:[^:]*]]: tensor<4xi64> {nn.no_grad, pipe.input = "labels"}
// CHECK-SAME: -> (tensor<f32> {nn.name = "loss", nn.role = "loss"})
// CHECK-SAME: attributes {pipe.stage = #pipe.stage<1>}
// CHECK: nn.mul %[[H]]
// CHECK: nn.one_hot %[[L]]
// CHECK-LABEL: func.func @stage1_F(

// NONE-NOT: _E(

// The step's program calls no E.
// UNROLL: func.func @stage0_E(
// UNROLL: func.func @stage1_E(
// UNROLL: pipe.program
// UNROLL-NOT: @stage{{[01]}}_E
// UNROLL: pipe.return
