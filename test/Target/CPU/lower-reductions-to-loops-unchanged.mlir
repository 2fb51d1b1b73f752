// What cpu-lower-reductions-to-loops leaves to convert-linalg-to-loops,
// without a diagnostic: a reduction that is not innermost (a column sum),
// an input that is a view of the output's buffer (the accumulator would
// not be the only access to it), and an op on tensors.
// RUN: pipedream-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(func.func(cpu-lower-reductions-to-loops))' | FileCheck %s

// CHECK-LABEL: func.func @column_sum
// CHECK: linalg.generic
// CHECK-NOT: scf.for
func.func @column_sum(%x: memref<50x6xf32>, %y: memref<6xf32>) {
  linalg.generic {indexing_maps = [affine_map<(k, j) -> (k, j)>, affine_map<(k, j) -> (j)>], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<50x6xf32>) outs(%y : memref<6xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// CHECK-LABEL: func.func @input_views_output
// CHECK: linalg.generic
// CHECK-NOT: scf.for
func.func @input_views_output(%buf: memref<4x40xf32>) {
  %in = memref.subview %buf[0, 0] [4, 40] [1, 1] : memref<4x40xf32> to memref<4x40xf32, strided<[40, 1]>>
  %out = memref.subview %buf[0, 0] [4, 1] [1, 1] : memref<4x40xf32> to memref<4xf32, strided<[40]>>
  linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%in : memref<4x40xf32, strided<[40, 1]>>) outs(%out : memref<4xf32, strided<[40]>>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// CHECK-LABEL: func.func @on_tensors
// CHECK: linalg.generic
// CHECK-NOT: scf.for
func.func @on_tensors(%x: tensor<4x40xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x40xf32>) outs(%y : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}
