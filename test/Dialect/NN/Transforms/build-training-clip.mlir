// Gradient clipping (docs/Training.md, "Gradient clipping"): the update
// scales every gradient by min(1, max / (norm + 1e-6)), norm the 2-norm of
// all the gradients together (torch.nn.utils.clip_grad_norm_), before the
// optimizer reads them: weight decay and momentum see the clipped gradient.
// RUN: pipedream-opt %s --nn-build-training="loss=cross-entropy optimizer=momentum lr=0.5 weight-decay=0.1 clip-grad-norm=1.5" | FileCheck %s
// RUN: pipedream-opt %s --nn-build-training="loss=cross-entropy optimizer=sgd lr=0.5" | FileCheck %s --check-prefix=NONE

// CHECK-LABEL: func.func @update(
// CHECK-SAME: %[[W:[^:]*]]: tensor<4xf32> {nn.name = "w", nn.param = dense<1.000000e+00> : tensor<4xf32>, nn.role = "weight"}
// CHECK-SAME: %[[B:[^:]*]]: tensor<f32> {nn.name = "b", nn.param = dense<5.000000e-01> : tensor<f32>, nn.role = "weight"}
// CHECK-SAME: %[[GW:[^:]*]]: tensor<4xf32> {nn.name = "grad:w", nn.role = "grad"}
// CHECK-SAME: %[[GB:[^:]*]]: tensor<f32> {nn.name = "grad:b", nn.role = "grad"}
// The squared norm: sum(gw * gw) + gb * gb.
// CHECK: %[[SQW:.*]] = nn.mul %[[GW]], %[[GW]]
// CHECK: %[[SUMW:.*]] = nn.reduce_sum %[[SQW]] {axes = array<i64: 0>, keepdims = false}
// CHECK: %[[SQB:.*]] = nn.mul %[[GB]], %[[GB]]
// CHECK: %[[SS:.*]] = nn.add %[[SUMW]], %[[SQB]]
// CHECK: %[[NORM:.*]] = nn.sqrt %[[SS]]
// CHECK: %[[ONE:.*]] = nn.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[MAX:.*]] = nn.constant dense<1.500000e+00> : tensor<f32>
// CHECK: %[[TINY:.*]] = nn.constant dense<9.99999997E-7> : tensor<f32>
// CHECK: %[[DEN:.*]] = nn.add %[[NORM]], %[[TINY]]
// CHECK: %[[RATIO:.*]] = nn.div %[[MAX]], %[[DEN]]
// CHECK: %[[COEF:.*]] = nn.min %[[ONE]], %[[RATIO]]
// CHECK: %[[CW:.*]] = nn.mul %[[GW]], %[[COEF]]
// CHECK: %[[DECAY:.*]] = nn.mul %{{.*}}, %[[W]]
// CHECK: %[[DW:.*]] = nn.add %[[CW]], %[[DECAY]]
// CHECK: nn.add %{{.*}}, %[[DW]]
// CHECK: %[[CB:.*]] = nn.mul %[[GB]], %[[COEF]]
// CHECK: nn.add %[[CB]], %{{.*}}

// NONE-LABEL: func.func @update(
// NONE-NOT: nn.sqrt
// NONE: return

func.func @main(%x: tensor<2x4xf32> {nn.name = "x"}, %w: tensor<4xf32> {nn.name = "w", nn.param = dense<1.0> : tensor<4xf32>}, %b: tensor<f32> {nn.name = "b", nn.param = dense<0.5> : tensor<f32>}) -> tensor<2x4xf32> {
  %0 = nn.mul %x, %w : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %1 = nn.add %0, %b : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  return %1 : tensor<2x4xf32>
}
