// cpu-vectorize-gemm: cache tiles, an 8x32 register tile whose accumulator
// stays in a vector across the K loop, rows loaded 32 wide; layouts and
// shapes the kernel does not cover are left alone (BLAS or loops take them).
// Numerics of the same paths: contractions.test.

// RUN: pipedream-compile %s --inference --gemm vectorize --emit llvm-dialect \
// RUN:   -o /dev/null --mlir-disable-threading \
// RUN:   --mlir-print-ir-after=cpu-vectorize-gemm 2>&1 \
// RUN:   | FileCheck %s
// RUN: pipedream-compile %s --inference --gemm vectorize --emit llvm -o - \
// RUN:   | FileCheck %s --check-prefix=IR

// CHECK-LABEL: func.func @matmul(
// CHECK-DAG:     %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG:     %[[C8:.*]] = arith.constant 8 : index
// CHECK-DAG:     %[[C32:.*]] = arith.constant 32 : index
// CHECK-DAG:     %[[C48:.*]] = arith.constant 48 : index
// CHECK:         scf.for %{{.*}} step %[[C32]]
// CHECK:           scf.for %{{.*}} step %[[C8]]
// CHECK:             %[[ACC:.*]] = vector.transfer_read {{.*}} : tensor<8x32xf32>, vector<8x32xf32>
// CHECK:             %[[K:.*]] = scf.for %{{.*}} = %{{.*}} to %[[C48]] step %[[C1]] iter_args(%[[A:.*]] = %[[ACC]]) -> (vector<8x32xf32>)
// CHECK:               vector.transfer_read {{.*}} : tensor<1x32xf32>, vector<32xf32>
// CHECK:               arith.addf %[[A]], %{{.*}} : vector<8x32xf32>
// CHECK:             vector.transfer_write %[[K]], {{.*}} : vector<8x32xf32>, tensor<8x32xf32>
// CHECK-NOT:     linalg.matmul
// CHECK:         return

// The K loop body: one 32-wide multiply-add per row of the tile (fused
// into FMAs by instruction selection).
// IR-LABEL: define void @pipedream_matmul(
// IR-COUNT-8: fmul <32 x float>
// IR:       ret void
func.func @matmul(%a: tensor<64x48xf32>, %b: tensor<48x96xf32>) -> tensor<64x96xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x96xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64x96xf32>) -> tensor<64x96xf32>
  %r = linalg.matmul ins(%a, %b : tensor<64x48xf32>, tensor<48x96xf32>) outs(%f : tensor<64x96xf32>) -> tensor<64x96xf32>
  return %r : tensor<64x96xf32>
}

// Batch dimensions are loops of one; N = 8 takes a 4x8 register tile (an
// 8x8 tile miscompiles upstream, see VectorizeGemm.cpp).
// CHECK-LABEL: func.func @batch_matmul(
// CHECK:         scf.for
// CHECK:           vector.transfer_read {{.*}} : tensor<1x4x8xf32>, vector<4x8xf32>
// CHECK-NOT:     linalg.batch_matmul
// CHECK:         return
func.func @batch_matmul(%a: tensor<3x8x16xf32>, %b: tensor<3x16x8xf32>) -> tensor<3x8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<3x8x8xf32>) -> tensor<3x8x8xf32>
  %r = linalg.batch_matmul ins(%a, %b : tensor<3x8x16xf32>, tensor<3x16x8xf32>) outs(%f : tensor<3x8x8xf32>) -> tensor<3x8x8xf32>
  return %r : tensor<3x8x8xf32>
}

// B transposed (N is not B's innermost dimension): not this kernel's.
// CHECK-LABEL: func.func @matmul_bt(
// CHECK-NOT:     vector.
// CHECK:         linalg.matmul
// CHECK:         return
func.func @matmul_bt(%a: tensor<16x32xf32>, %b: tensor<32x32xf32>) -> tensor<16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x32xf32>) -> tensor<16x32xf32>
  %r = linalg.matmul indexing_maps = [
      affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>,
      affine_map<(m, n, k) -> (m, n)>]
      ins(%a, %b : tensor<16x32xf32>, tensor<32x32xf32>) outs(%f : tensor<16x32xf32>) -> tensor<16x32xf32>
  return %r : tensor<16x32xf32>
}

// N = 10 is not a multiple of 8: left alone.
// CHECK-LABEL: func.func @matmul_odd(
// CHECK-NOT:     vector.
// CHECK:         linalg.matmul
// CHECK:         return
func.func @matmul_odd(%a: tensor<4x6xf32>, %b: tensor<6x10xf32>) -> tensor<4x10xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x10xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x10xf32>) -> tensor<4x10xf32>
  %r = linalg.matmul ins(%a, %b : tensor<4x6xf32>, tensor<6x10xf32>) outs(%f : tensor<4x10xf32>) -> tensor<4x10xf32>
  return %r : tensor<4x10xf32>
}
