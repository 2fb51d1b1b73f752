// RUN: pipedream-opt %s --pipe-build-stage-training="loss=mse microbatches=2" --pipe-recompute=all | FileCheck %s

// A stage with BatchNorm in training mode: its running statistics are state
// F advances in place, but the normalization uses the batch's statistics,
// so B's copy of the forward does not need them (a zero constant stands in
// for the operand whose new value the copy drops) and F stashes only its
// input, not BatchNorm's output.
func.func private @main_stage0(%x: tensor<2x4x3x3xf32> {nn.name = "x"}, %s: tensor<4xf32> {nn.name = "s", nn.param = dense<1.0> : tensor<4xf32>}, %b: tensor<4xf32> {nn.name = "b", nn.param = dense<0.0> : tensor<4xf32>}, %m: tensor<4xf32> {nn.name = "m", nn.param = dense<0.0> : tensor<4xf32>, nn.frozen}, %v: tensor<4xf32> {nn.name = "v", nn.param = dense<1.0> : tensor<4xf32>, nn.frozen}) -> tensor<2x4x3x3xf32> attributes {pipe.stage = #pipe.stage<0>} {
  %0 = nn.batch_normalization %x, %s, %b, %m, %v : (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x3x3xf32>
  %1 = nn.tanh %0 : tensor<2x4x3x3xf32>
  return %1 : tensor<2x4x3x3xf32>
}
func.func @main(%x: tensor<2x4x3x3xf32> {nn.name = "x", pipe.stage = #pipe.stage<0>}, %s: tensor<4xf32> {nn.name = "s", nn.param = dense<1.0> : tensor<4xf32>}, %b: tensor<4xf32> {nn.name = "b", nn.param = dense<0.0> : tensor<4xf32>}, %m: tensor<4xf32> {nn.name = "m", nn.param = dense<0.0> : tensor<4xf32>, nn.frozen}, %v: tensor<4xf32> {nn.name = "v", nn.param = dense<1.0> : tensor<4xf32>, nn.frozen}) -> tensor<2x4x3x3xf32> {
  %0 = call @main_stage0(%x, %s, %b, %m, %v) {pipe.stage = #pipe.stage<0>} : (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x3x3xf32>
  return %0 : tensor<2x4x3x3xf32>
}

// F stashes its input x and the labels (the only stage is the last), not
// BatchNorm's output.
// CHECK-LABEL: func.func @stage0_F(
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x4x3x3xf32> {nn.name = "x", nn.no_grad, pipe.input = "x"}
// CHECK-SAME: %[[L:[^:]*]]: tensor<2x4x3x3xf32> {nn.no_grad, pipe.input = "labels"}
// CHECK-SAME: nn.updates = "m"
// CHECK-SAME: nn.updates = "v"
// CHECK-SAME: tensor<2x4x3x3xf32> {nn.residual = 0 : i64}, tensor<2x4x3x3xf32> {nn.residual = 1 : i64})
// CHECK: nn.batch_norm_train
// CHECK: return {{.*}}, %[[X]], %[[L]] :
// B binds neither running statistic.
// CHECK-LABEL: func.func @stage0_B(
// CHECK-NOT: nn.name = "m"
// CHECK-NOT: nn.name = "v"
// CHECK-SAME: %[[RX:[^:]*]]: tensor<2x4x3x3xf32> {nn.residual = 0 : i64}
// CHECK: %[[Z0:.*]] = nn.constant dense<0.000000e+00> : tensor<4xf32>
// CHECK: %[[Z1:.*]] = nn.constant dense<0.000000e+00> : tensor<4xf32>
// CHECK: nn.batch_norm_train %[[RX]], %{{[^,]*}}, %{{[^,]*}}, %[[Z0]], %[[Z1]]
