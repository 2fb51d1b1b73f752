// RUN: pipedream-opt %s | pipedream-opt | FileCheck %s
// RUN: pipedream-opt %s --mlir-print-op-generic | pipedream-opt | FileCheck %s

// Round trip of the training-support ops (adjoints of slice and gather, the
// dropout mask). The verifier checks the declared result types of
// slice_grad and gather_grad against the inferred ones.

// CHECK-LABEL: func.func @slice_grad
// CHECK-SAME: (%[[G:.*]]: tensor<2x2xf32>, %[[H:.*]]: tensor<4x3xf64>, %[[E:.*]]: tensor<0x6xf32>)
func.func @slice_grad(%g: tensor<2x2xf32>, %h: tensor<4x3xf64>, %e: tensor<0x6xf32>)
    -> (tensor<2x6xf32>, tensor<4x10xf64>, tensor<2x6xf32>) {
  // CHECK: nn.slice_grad %[[G]] {shape = array<i64: 2, 6>, starts = array<i64: 0, 1>, steps = array<i64: 1, 2>} : (tensor<2x2xf32>) -> tensor<2x6xf32>
  %0 = nn.slice_grad %g {shape = array<i64: 2, 6>, starts = array<i64: 0, 1>, steps = array<i64: 1, 2>}
      : (tensor<2x2xf32>) -> tensor<2x6xf32>
  // Negative steps.
  // CHECK: nn.slice_grad %[[H]] {shape = array<i64: 4, 10>, starts = array<i64: 3, 8>, steps = array<i64: -1, -3>} : (tensor<4x3xf64>) -> tensor<4x10xf64>
  %1 = nn.slice_grad %h {shape = array<i64: 4, 10>, starts = array<i64: 3, 8>, steps = array<i64: -1, -3>}
      : (tensor<4x3xf64>) -> tensor<4x10xf64>
  // An empty slice: all zeros.
  // CHECK: nn.slice_grad %[[E]] {shape = array<i64: 2, 6>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : (tensor<0x6xf32>) -> tensor<2x6xf32>
  %2 = nn.slice_grad %e {shape = array<i64: 2, 6>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>}
      : (tensor<0x6xf32>) -> tensor<2x6xf32>
  return %0, %1, %2 : tensor<2x6xf32>, tensor<4x10xf64>, tensor<2x6xf32>
}

// The indices' dimensions of the gradient become one axis of axis_size.
// CHECK-LABEL: func.func @gather_grad
// CHECK-SAME: (%[[G:.*]]: tensor<2x8x16xf32>, %[[I:.*]]: tensor<2x8xi64>, %[[D:.*]]: tensor<3x5xf64>, %[[J:.*]]: tensor<i32>)
func.func @gather_grad(%g: tensor<2x8x16xf32>, %i: tensor<2x8xi64>, %d: tensor<3x5xf64>,
                       %j: tensor<i32>) -> (tensor<100x16xf32>, tensor<3x5x4xf64>) {
  // CHECK: nn.gather_grad %[[G]], %[[I]] {axis = 0 : i64, axis_size = 100 : i64} : (tensor<2x8x16xf32>, tensor<2x8xi64>) -> tensor<100x16xf32>
  %0 = nn.gather_grad %g, %i {axis = 0 : i64, axis_size = 100 : i64}
      : (tensor<2x8x16xf32>, tensor<2x8xi64>) -> tensor<100x16xf32>
  // A scalar index: the axis comes back.
  // CHECK: nn.gather_grad %[[D]], %[[J]] {axis = 2 : i64, axis_size = 4 : i64} : (tensor<3x5xf64>, tensor<i32>) -> tensor<3x5x4xf64>
  %1 = nn.gather_grad %d, %j {axis = 2 : i64, axis_size = 4 : i64}
      : (tensor<3x5xf64>, tensor<i32>) -> tensor<3x5x4xf64>
  return %0, %1 : tensor<100x16xf32>, tensor<3x5x4xf64>
}

// CHECK-LABEL: func.func @bernoulli
// CHECK-SAME: (%[[S:.*]]: tensor<i64>)
func.func @bernoulli(%seed: tensor<i64>) -> (tensor<4x8xf32>, tensor<f64>) {
  // CHECK: nn.bernoulli %[[S]] {probability = 9.000000e-01 : f64} : (tensor<i64>) -> tensor<4x8xf32>
  %0 = nn.bernoulli %seed {probability = 0.9 : f64} : (tensor<i64>) -> tensor<4x8xf32>
  // CHECK: nn.bernoulli %[[S]] {probability = 0.000000e+00 : f64} : (tensor<i64>) -> tensor<f64>
  %1 = nn.bernoulli %seed {probability = 0.0 : f64} : (tensor<i64>) -> tensor<f64>
  return %0, %1 : tensor<4x8xf32>, tensor<f64>
}
