// What cpu-fold-transposes-into-contractions leaves alone, without a
// diagnostic: a contraction whose body is not a plain multiply-add (the
// GEMM lowerings do not take it, so the transposed copy stays the fast
// form), a transpose feeding an elementwise op, ops on buffers, reshapes
// whose expansion would split a GEMM dimension, and transposes of results
// a GEMM could not write.
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

// -----

// A collapse of a transpose whose merged group is the GEMM's K (the weight
// gradient of attention's output projection: [B, H, T, D] transposed to
// [B, T, H, D], collapsed to [B*T, H*D], then A^T dY over B*T) is not
// expanded: K = (B, T) would not merge into one GEMM dimension.
// CHECK-LABEL: func.func @collapsed_reduction
// CHECK: linalg.transpose
// CHECK: tensor.collapse_shape
// CHECK: linalg.matmul
func.func @collapsed_reduction(%o: tensor<2x4x16x8xf32>, %dy: tensor<32x32xf32>) -> tensor<32x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x16x4x8xf32>
  %t = linalg.transpose ins(%o : tensor<2x4x16x8xf32>) outs(%e : tensor<2x16x4x8xf32>) permutation = [0, 2, 1, 3]
  %a = tensor.collapse_shape %t [[0, 1], [2, 3]] : tensor<2x16x4x8xf32> into tensor<32x32xf32>
  %i = tensor.empty() : tensor<32x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%i : tensor<32x32xf32>) -> tensor<32x32xf32>
  %r = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%a, %dy : tensor<32x32xf32>, tensor<32x32xf32>) outs(%f : tensor<32x32xf32>) -> tensor<32x32xf32>
  return %r : tensor<32x32xf32>
}

// -----

// A transpose of a contraction's result that would put a batch dimension
// innermost (a GEMM writes C with unit stride along M or N), and one whose
// contraction accumulates into an argument rather than a fresh zero fill:
// both stay.
// CHECK-LABEL: func.func @batch_innermost
// CHECK: linalg.batch_matmul
// CHECK: linalg.transpose
func.func @batch_innermost(%a: tensor<4x8x16xf32>, %b: tensor<4x16x8xf32>) -> tensor<8x8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %i = tensor.empty() : tensor<4x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%i : tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
  %c = linalg.batch_matmul ins(%a, %b : tensor<4x8x16xf32>, tensor<4x16x8xf32>) outs(%f : tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
  %e = tensor.empty() : tensor<8x8x4xf32>
  %t = linalg.transpose ins(%c : tensor<4x8x8xf32>) outs(%e : tensor<8x8x4xf32>) permutation = [1, 2, 0]
  return %t : tensor<8x8x4xf32>
}

// CHECK-LABEL: func.func @accumulating
// CHECK: linalg.matmul
// CHECK: linalg.transpose
func.func @accumulating(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>, %acc: tensor<8x4xf32>) -> tensor<4x8xf32> {
  %c = linalg.matmul ins(%a, %b : tensor<8x16xf32>, tensor<16x4xf32>) outs(%acc : tensor<8x4xf32>) -> tensor<8x4xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %t = linalg.transpose ins(%c : tensor<8x4xf32>) outs(%e : tensor<4x8xf32>) permutation = [1, 0]
  return %t : tensor<4x8xf32>
}

// -----

// A convolution's weight gradient (NNToLinalg): dW[m, c] = sum over n, p of
// dYt[m, n, p] * cols[c, n, p], dYt the transpose of dY [N, M, P]. Read in
// place, dY would put M between the reduction's N and P, which no GEMM
// merges (the contraction became scalar loops: a small CNN's training step
// 43 ms instead of 11): the transpose stays.
// CHECK-LABEL: func.func @conv_weight_gradient
// CHECK:         linalg.transpose
// CHECK:         linalg.generic
// CHECK-SAME:      ins(%{{.*}}, %{{.*}} : tensor<16x32x256xf32>, tensor<144x32x256xf32>)
func.func @conv_weight_gradient(%dy: tensor<32x16x256xf32>, %cols: tensor<144x32x256xf32>, %init: tensor<16x144xf32>) -> tensor<16x144xf32> {
  %e = tensor.empty() : tensor<16x32x256xf32>
  %t = linalg.transpose ins(%dy : tensor<32x16x256xf32>) outs(%e : tensor<16x32x256xf32>) permutation = [1, 0, 2]
  %r = linalg.generic {indexing_maps = [affine_map<(m, c, n, p) -> (m, n, p)>, affine_map<(m, c, n, p) -> (c, n, p)>, affine_map<(m, c, n, p) -> (m, c)>], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%t, %cols : tensor<16x32x256xf32>, tensor<144x32x256xf32>) outs(%init : tensor<16x144xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<16x144xf32>
  return %r : tensor<16x144xf32>
}
