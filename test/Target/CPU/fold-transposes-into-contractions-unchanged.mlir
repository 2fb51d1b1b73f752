// What cpu-fold-transposes-into-contractions leaves alone, without a
// diagnostic: a contraction whose body is not a plain multiply-add (the
// GEMM lowerings do not take it, so the transposed copy stays the fast
// form), a transpose feeding an elementwise op, and ops on buffers.
// RUN: pipedream-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(func.func(cpu-fold-transposes-into-contractions))' | FileCheck %s

// CHECK-LABEL: func.func @mixed_precision
// CHECK: linalg.transpose
// CHECK: linalg.matmul
func.func @mixed_precision(%x: tensor<8x16xf16>, %w: tensor<32x16xf16>, %init: tensor<8x32xf32>) -> tensor<8x32xf32> {
  %e = tensor.empty() : tensor<16x32xf16>
  %t = linalg.transpose ins(%w : tensor<32x16xf16>) outs(%e : tensor<16x32xf16>) permutation = [1, 0]
  %r = linalg.matmul ins(%x, %t : tensor<8x16xf16>, tensor<16x32xf16>) outs(%init : tensor<8x32xf32>) -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// -----

// CHECK-LABEL: func.func @elementwise_user
// CHECK: linalg.transpose
// CHECK: linalg.generic
func.func @elementwise_user(%w: tensor<32x16xf32>) -> tensor<16x32xf32> {
  %e = tensor.empty() : tensor<16x32xf32>
  %t = linalg.transpose ins(%w : tensor<32x16xf32>) outs(%e : tensor<16x32xf32>) permutation = [1, 0]
  %o = tensor.empty() : tensor<16x32xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%t : tensor<16x32xf32>) outs(%o : tensor<16x32xf32>) {
  ^bb0(%a: f32, %b: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  } -> tensor<16x32xf32>
  return %r : tensor<16x32xf32>
}

// -----

// CHECK-LABEL: func.func @buffers
// CHECK: linalg.transpose
// CHECK: linalg.matmul
func.func @buffers(%x: memref<8x16xf32>, %w: memref<32x16xf32>, %t: memref<16x32xf32>, %c: memref<8x32xf32>) {
  linalg.transpose ins(%w : memref<32x16xf32>) outs(%t : memref<16x32xf32>) permutation = [1, 0]
  linalg.matmul ins(%x, %t : memref<8x16xf32>, memref<16x32xf32>) outs(%c : memref<8x32xf32>)
  return
}
