// RUN: pipedream-opt %s --pipe-build-stage-training="loss=none microbatches=2" | FileCheck %s
// RUN: pipedream-opt %s --pipe-build-stage-training="loss=none microbatches=2" --pipe-unroll-schedule="kind=1f1b microbatches=2" --pipe-verify-schedule -o /dev/null

// --loss none: the last stage's first output is the model's own loss; the
// target `t` it reads is an ordinary input of that stage, and the stage
// takes no labels.
func.func private @main_stage0(%x: tensor<2x4xf32> {nn.name = "x"}, %w0: tensor<4xf32> {nn.name = "w0", nn.param = dense<1.0> : tensor<4xf32>}) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<0>} {
  %0 = nn.mul %x, %w0 : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %1 = nn.relu %0 : tensor<2x4xf32>
  return %1 : tensor<2x4xf32>
}
func.func private @main_stage1(%w1: tensor<4xf32> {nn.name = "w1", nn.param = dense<2.0> : tensor<4xf32>}, %h: tensor<2x4xf32>, %t: tensor<2x4xf32> {nn.name = "t"}) -> tensor<f32> attributes {pipe.stage = #pipe.stage<1>} {
  %0 = nn.mul %h, %w1 : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %1 = nn.sub %0, %t : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %2 = nn.mul %1, %1 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %3 = nn.reduce_mean %2 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x4xf32>) -> tensor<f32>
  return %3 : tensor<f32>
}
func.func @main(%x: tensor<2x4xf32> {nn.name = "x", pipe.stage = #pipe.stage<0>}, %t: tensor<2x4xf32> {nn.name = "t", pipe.stage = #pipe.stage<1>}, %w0: tensor<4xf32> {nn.name = "w0", nn.param = dense<1.0> : tensor<4xf32>}, %w1: tensor<4xf32> {nn.name = "w1", nn.param = dense<2.0> : tensor<4xf32>}) -> tensor<f32> {
  %0 = call @main_stage0(%x, %w0) {pipe.stage = #pipe.stage<0>} : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %1 = pipe.transfer %0 from stage 0 to stage 1 : tensor<2x4xf32>
  %2 = call @main_stage1(%w1, %1, %t) {pipe.stage = #pipe.stage<1>} : (tensor<4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<f32>
  return %2 : tensor<f32>
}

// CHECK-LABEL: func.func @stage1_F(
// CHECK-SAME: pipe.input = "t"
// CHECK-NOT: pipe.input = "labels"
// CHECK-SAME: -> (tensor<f32> {nn.name = "loss", nn.role = "loss"}
