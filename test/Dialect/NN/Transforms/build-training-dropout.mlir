// RUN: pipedream-opt %s --nn-build-training="loss=mse" | FileCheck %s

// Training-mode dropout: y = x * bernoulli(seed + k) / (1 - p), the seed a
// state buffer that the step advances, so every micro-batch draws a new
// mask and a run is reproducible.
func.func @main(%x: tensor<4x8xf32> {nn.name = "x"}, %w: tensor<8xf32> {nn.name = "w", nn.param = dense<1.0> : tensor<8xf32>}) -> tensor<4x8xf32> {
  %0 = nn.mul %x, %w : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = nn.dropout %0 {ratio = 0.25 : f64} : tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @train_microbatch(
// CHECK-SAME: %[[SEED:[^:]*]]: tensor<i64> {nn.name = "rng_seed", nn.role = "state"}
// CHECK-SAME: tensor<i64> {nn.name = "rng_seed.next", nn.updates = "rng_seed"}
// CHECK: %[[OFF:.*]] = nn.constant dense<1000003> : tensor<i64>
// CHECK: %[[S:.*]] = nn.add %[[SEED]], %[[OFF]]
// CHECK: %[[MASK:.*]] = nn.bernoulli %[[S]] {probability = 7.500000e-01 : f64} : (tensor<i64>) -> tensor<4x8xf32>
// CHECK: %[[KEPT:.*]] = nn.mul %{{.*}}, %[[MASK]]
// CHECK: %[[SCALE:.*]] = nn.constant dense<1.33333337> : tensor<f32>
// CHECK: nn.mul %[[KEPT]], %[[SCALE]]
// CHECK: %[[ONE:.*]] = nn.constant dense<1> : tensor<i64>
// CHECK: %[[NEXT:.*]] = nn.add %[[SEED]], %[[ONE]]
// CHECK: return {{.*}}%[[NEXT]] :
