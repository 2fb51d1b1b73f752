// RUN: pipedream-opt %s --split-input-file --nn-build-training="loss=none" --verify-diagnostics | FileCheck %s

// loss=none: the first result is the loss; no labels argument, the labels
// name is free, and the gradient seed flows into the model's own loss.
// CHECK-LABEL: func.func @train_microbatch(
// CHECK-SAME: {nn.name = "x", nn.role = "input"}
// CHECK-SAME: {nn.name = "labels", nn.role = "input"}
// CHECK-SAME: {nn.name = "w", nn.param = {{[^}]*}}, nn.role = "weight"}
// CHECK-SAME: {nn.name = "grad:w", nn.role = "grad"}
// CHECK-SAME: -> (tensor<f32> {nn.name = "loss"},
// CHECK-NOT: nn.one_hot
// CHECK: nn.reshape %{{.*}} {shape = array<i64>} : (tensor<1xf32>) -> tensor<f32>
// CHECK-LABEL: func.func @update(
func.func @main(%x: tensor<2x4xf32> {nn.name = "x"},
                %t: tensor<2x4xf32> {nn.name = "labels"},
                %w: tensor<4xf32> {nn.name = "w", nn.param = dense<1.0> : tensor<4xf32>})
    -> (tensor<1xf32> {nn.name = "loss"}, tensor<2x4xf32> {nn.name = "pred"}) {
  %0 = nn.mul %x, %w : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %1 = nn.sub %0, %t : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %2 = nn.mul %1, %1 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %3 = nn.reduce_sum %2 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x4xf32>) -> tensor<f32>
  %4 = nn.reshape %3 {shape = array<i64: 1>} : (tensor<f32>) -> tensor<1xf32>
  return %4, %0 : tensor<1xf32>, tensor<2x4xf32>
}

// -----

// expected-error @+1 {{training: --loss none trains the first output as the loss, which must be a scalar; it has type 'tensor<2x4xf32>'}}
func.func @main(%x: tensor<2x4xf32> {nn.name = "x"}, %w: tensor<4xf32> {nn.name = "w", nn.param = dense<1.0> : tensor<4xf32>}) -> tensor<2x4xf32> {
  %0 = nn.mul %x, %w : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}
