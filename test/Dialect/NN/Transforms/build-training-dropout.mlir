// RUN: pipedream-opt %s -split-input-file --nn-build-training="loss=mse" | FileCheck %s

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

// -----

// A dropout's mask (ONNX Dropout's second output, nn.dropout_mask) becomes
// the mask that dropout drew: the same nn.bernoulli, as i1 (!= 0).
func.func @main(%x: tensor<4x8xf32> {nn.name = "x"}, %w: tensor<8xf32> {nn.name = "w", nn.param = dense<1.0> : tensor<8xf32>}) -> tensor<4x8xf32> {
  %0 = nn.mul %x, %w : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = nn.dropout %0 {ratio = 0.5 : f64} : tensor<4x8xf32>
  %2 = nn.dropout_mask %1 : (tensor<4x8xf32>) -> tensor<4x8xi1>
  %3 = nn.cast %2 {to = f32} : (tensor<4x8xi1>) -> tensor<4x8xf32>
  %4 = nn.add %1, %3 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %4 : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @train_microbatch(
// CHECK: %[[DRAW:.*]] = nn.bernoulli %{{.*}} {probability = 5.000000e-01 : f64} : (tensor<i64>) -> tensor<4x8xf32>
// CHECK: %[[KEPT:.*]] = nn.mul %{{.*}}, %[[DRAW]]
// CHECK: %[[Y:.*]] = nn.mul %[[KEPT]], %{{.*}}
// CHECK: %[[M:.*]] = nn.cast %[[DRAW]] {to = i1} : (tensor<4x8xf32>) -> tensor<4x8xi1>
// CHECK-NOT: nn.dropout_mask
// CHECK: %[[MF:.*]] = nn.cast %[[M]] {to = f32}
// CHECK: nn.add %[[Y]], %[[MF]]
