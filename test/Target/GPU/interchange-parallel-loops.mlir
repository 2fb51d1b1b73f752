// RUN: pipedream-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(cuda-interchange-parallel-loops))' | FileCheck %s

// A column sum (the bias gradient: reduce over the batch) gets its parallel
// loop first.
// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @column_sum
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #[[OUT]]], iterator_types = ["parallel", "reduction"]}
func.func @column_sum(%a: tensor<8x64xf32>, %init: tensor<64xf32>) -> tensor<64xf32> {
  %0 = linalg.reduce ins(%a : tensor<8x64xf32>) outs(%init : tensor<64xf32>) dimensions = [0]
    (%x: f32, %acc: f32) {
      %r = arith.addf %x, %acc : f32
      linalg.yield %r : f32
    }
  return %0 : tensor<64xf32>
}

// -----

// Already parallel-first, and contractions: untouched.
// CHECK-LABEL: func.func @untouched
// CHECK: linalg.reduce
// CHECK: linalg.matmul
func.func @untouched(%a: tensor<8x64xf32>, %init: tensor<8xf32>, %b: tensor<64x4xf32>, %c: tensor<8x4xf32>) -> (tensor<8xf32>, tensor<8x4xf32>) {
  %0 = linalg.reduce ins(%a : tensor<8x64xf32>) outs(%init : tensor<8xf32>) dimensions = [1]
    (%x: f32, %acc: f32) {
      %r = arith.addf %x, %acc : f32
      linalg.yield %r : f32
    }
  %1 = linalg.matmul ins(%a, %b : tensor<8x64xf32>, tensor<64x4xf32>) outs(%c : tensor<8x4xf32>) -> tensor<8x4xf32>
  return %0, %1 : tensor<8xf32>, tensor<8x4xf32>
}
