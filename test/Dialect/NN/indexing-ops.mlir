// RUN: pipedream-opt %s | pipedream-opt | FileCheck %s
// RUN: pipedream-opt %s --mlir-print-op-generic | pipedream-opt | FileCheck %s

// Round trip of the data-dependent indexing ops; the declared result types
// are checked against the inferred ones.

// CHECK-LABEL: func.func @indexing
func.func @indexing(%x: tensor<3x4xf32>, %i: tensor<2x4xi64>, %u: tensor<2x4xf32>,
                    %d: tensor<2x3x5xf32>, %n: tensor<2x4x1xi32>, %m: tensor<6x1xi64>,
                    %v: tensor<6x4xf32>)
    -> (tensor<2x4xf32>, tensor<3x4xf32>, tensor<2x4x5xf32>, tensor<3x4xf32>) {
  // CHECK: nn.gather_elements %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<3x4xf32>, tensor<2x4xi64>) -> tensor<2x4xf32>
  %0 = nn.gather_elements %x, %i {axis = 0 : i64} : (tensor<3x4xf32>, tensor<2x4xi64>) -> tensor<2x4xf32>
  // CHECK: nn.scatter_elements %{{.*}} {axis = 0 : i64, reduction = "max"}
  %1 = nn.scatter_elements %x, %i, %u {axis = 0 : i64, reduction = "max"} : (tensor<3x4xf32>, tensor<2x4xi64>, tensor<2x4xf32>) -> tensor<3x4xf32>
  // One batch dimension, tuples of one coordinate: rows of 5.
  // CHECK: nn.gather_nd %{{.*}}, %{{.*}} {batch_dims = 1 : i64} : (tensor<2x3x5xf32>, tensor<2x4x1xi32>) -> tensor<2x4x5xf32>
  %2 = nn.gather_nd %d, %n {batch_dims = 1 : i64} : (tensor<2x3x5xf32>, tensor<2x4x1xi32>) -> tensor<2x4x5xf32>
  // CHECK: nn.scatter_nd %{{.*}} {reduction = "add"} : (tensor<3x4xf32>, tensor<6x1xi64>, tensor<6x4xf32>) -> tensor<3x4xf32>
  %3 = nn.scatter_nd %x, %m, %v {reduction = "add"} : (tensor<3x4xf32>, tensor<6x1xi64>, tensor<6x4xf32>) -> tensor<3x4xf32>
  return %0, %1, %2, %3 : tensor<2x4xf32>, tensor<3x4xf32>, tensor<2x4x5xf32>, tensor<3x4xf32>
}
