// cpu-lower-gemm-to-blas: contractions become row-major cblas_?gemm calls
// with the right transposes, leading dimensions and beta; batch dimensions
// become loops (fully unrolled by LLVM here), merged M dimensions one call.
// Numerics of the same cases: contractions.test.

// The checks read each function's calls in place: loop nests are not
// outlined into kernels here (cpu-outline-kernels has its own tests).
// RUN: pipedream-compile %s --inference --gemm blas --outline-kernels=false --emit llvm -o - \
// RUN:   | sed -e 's/ptr [^,)]*/ptr/g' | FileCheck %s

// Order, transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc.
// CHECK-LABEL: define void @pipedream_matmul(
// CHECK:   call void @cblas_sgemm(i32 101, i32 111, i32 111, i32 64, i32 16, i32 32, float 1.000000e+00, ptr, i32 32, ptr, i32 16, float 0.000000e+00, ptr, i32 16)
func.func @matmul(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>) -> tensor<64x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64x16xf32>) -> tensor<64x16xf32>
  %r = linalg.matmul ins(%a, %b : tensor<64x32xf32>, tensor<32x16xf32>) outs(%f : tensor<64x16xf32>) -> tensor<64x16xf32>
  return %r : tensor<64x16xf32>
}

// x @ W^T: transB = CblasTrans (112), ldb = K.
// CHECK-LABEL: define void @pipedream_matmul_bt(
// CHECK:   call void @cblas_sgemm(i32 101, i32 111, i32 112, i32 16, i32 24, i32 32, float 1.000000e+00, ptr, i32 32, ptr, i32 32, float 0.000000e+00, ptr, i32 24)
func.func @matmul_bt(%a: tensor<16x32xf32>, %b: tensor<24x32xf32>) -> tensor<16x24xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x24xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x24xf32>) -> tensor<16x24xf32>
  %r = linalg.matmul indexing_maps = [
      affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>,
      affine_map<(m, n, k) -> (m, n)>]
      ins(%a, %b : tensor<16x32xf32>, tensor<24x32xf32>) outs(%f : tensor<16x24xf32>) -> tensor<16x24xf32>
  return %r : tensor<16x24xf32>
}

// One call per batch index.
// CHECK-LABEL: define void @pipedream_batch_matmul(
// CHECK-COUNT-3: call void @cblas_sgemm(i32 101, i32 111, i32 111, i32 8, i32 24, i32 16, float 1.000000e+00, ptr, i32 16, ptr, i32 24, float 0.000000e+00, ptr, i32 24)
// CHECK-NOT: call void @cblas_sgemm
// CHECK: ret void
func.func @batch_matmul(%a: tensor<3x8x16xf32>, %b: tensor<3x16x24xf32>) -> tensor<3x8x24xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x8x24xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<3x8x24xf32>) -> tensor<3x8x24xf32>
  %r = linalg.batch_matmul ins(%a, %b : tensor<3x8x16xf32>, tensor<3x16x24xf32>) outs(%f : tensor<3x8x24xf32>) -> tensor<3x8x24xf32>
  return %r : tensor<3x8x24xf32>
}

// [B, T, C] x [C, N]: B and T merge into M = 16, one call.
// CHECK-LABEL: define void @pipedream_btc(
// CHECK:   call void @cblas_sgemm(i32 101, i32 111, i32 111, i32 16, i32 48, i32 32, float 1.000000e+00, ptr, i32 32, ptr, i32 48, float 0.000000e+00, ptr, i32 48)
// CHECK-NOT: call void @cblas_sgemm
// CHECK: ret void
func.func @btc(%a: tensor<2x8x32xf32>, %b: tensor<32x48xf32>) -> tensor<2x8x48xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x8x48xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x8x48xf32>) -> tensor<2x8x48xf32>
  %r = linalg.generic {indexing_maps = [
      affine_map<(b, t, n, k) -> (b, t, k)>, affine_map<(b, t, n, k) -> (k, n)>,
      affine_map<(b, t, n, k) -> (b, t, n)>],
      iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<2x8x32xf32>, tensor<32x48xf32>) outs(%f : tensor<2x8x48xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x8x48xf32>
  return %r : tensor<2x8x48xf32>
}

// Column-major output: computed as C^T = B^T A^T (both transposed).
// CHECK-LABEL: define void @pipedream_transposed_output(
// CHECK:   call void @cblas_sgemm(i32 101, i32 112, i32 112, i32 16, i32 12, i32 20, float 1.000000e+00, ptr, i32 16, ptr, i32 20, float 0.000000e+00, ptr, i32 12)
func.func @transposed_output(%a: tensor<12x20xf32>, %b: tensor<20x16xf32>) -> tensor<16x12xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x12xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x12xf32>) -> tensor<16x12xf32>
  %r = linalg.generic {indexing_maps = [
      affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>,
      affine_map<(m, n, k) -> (n, m)>],
      iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<12x20xf32>, tensor<20x16xf32>) outs(%f : tensor<16x12xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<16x12xf32>
  return %r : tensor<16x12xf32>
}

// A strided view: lda is the row stride of the parent (64). A non-zero
// accumulator keeps beta = 1.
// CHECK-LABEL: define void @pipedream_strided_accumulate(
// CHECK:   call void @cblas_sgemm(i32 101, i32 111, i32 111, i32 16, i32 32, i32 32, float 1.000000e+00, ptr, i32 64, ptr, i32 32, float 1.000000e+00, ptr, i32 32)
func.func @strided_accumulate(%a: tensor<16x64xf32>, %b: tensor<32x32xf32>, %c: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %sa = tensor.extract_slice %a[0, 8] [16, 32] [1, 1] : tensor<16x64xf32> to tensor<16x32xf32>
  %r = linalg.matmul ins(%sa, %b : tensor<16x32xf32>, tensor<32x32xf32>) outs(%c : tensor<16x32xf32>) -> tensor<16x32xf32>
  return %r : tensor<16x32xf32>
}

// f64: cblas_dgemm.
// CHECK-LABEL: define void @pipedream_matmul_f64(
// CHECK:   call void @cblas_dgemm(i32 101, i32 111, i32 111, i32 4, i32 8, i32 2, double 1.000000e+00, ptr, i32 2, ptr, i32 8, double 0.000000e+00, ptr, i32 8)
func.func @matmul_f64(%a: tensor<4x2xf64>, %b: tensor<2x8xf64>) -> tensor<4x8xf64> {
  %zero = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<4x8xf64>
  %f = linalg.fill ins(%zero : f64) outs(%e : tensor<4x8xf64>) -> tensor<4x8xf64>
  %r = linalg.matmul ins(%a, %b : tensor<4x2xf64>, tensor<2x8xf64>) outs(%f : tensor<4x8xf64>) -> tensor<4x8xf64>
  return %r : tensor<4x8xf64>
}

// Integer matmuls are not BLAS's: loops.
// CHECK-LABEL: define void @pipedream_matmul_i32(
// CHECK-NOT: cblas
// CHECK: ret void
func.func @matmul_i32(%a: tensor<4x2xi32>, %b: tensor<2x8xi32>) -> tensor<4x8xi32> {
  %zero = arith.constant 0 : i32
  %e = tensor.empty() : tensor<4x8xi32>
  %f = linalg.fill ins(%zero : i32) outs(%e : tensor<4x8xi32>) -> tensor<4x8xi32>
  %r = linalg.matmul ins(%a, %b : tensor<4x2xi32>, tensor<2x8xi32>) outs(%f : tensor<4x8xi32>) -> tensor<4x8xi32>
  return %r : tensor<4x8xi32>
}

// A contraction-like body with an op between the multiply and the add
// (elementwise fusion of a negation into a reduction: sum(-(a * b))) is not
// a GEMM: it stays loops and keeps the negation, which LLVM folds into an
// fsub (upstream's isaContractionOpInterface accepts such bodies;
// isMulAddContraction does not).
// CHECK-LABEL: define void @pipedream_negated_contraction(
// CHECK-NOT: cblas
// CHECK: fsub
// CHECK: ret void
func.func @negated_contraction(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>) -> tensor<4x2xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x2xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x2xf32>) -> tensor<4x2xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<4x8xf32>, tensor<8x2xf32>) outs(%f : tensor<4x2xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %n = arith.negf %p : f32
    %s = arith.addf %n, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4x2xf32>
  return %r : tensor<4x2xf32>
}

// `out + -(a * b)` passes linalg's contraction matcher (it skips unary ops)
// but is not a GEMM: the elementwise fusion makes it from the gradient of
// x / d with a broadcast d (neg, then a sum). It stays loops, the negation
// kept (LLVM folds it into subtractions from the accumulator).
// CHECK-LABEL: define void @pipedream_negated_dot(
// CHECK-NOT: cblas
// CHECK: %[[PROD:[0-9]+]] = fmul double
// CHECK-NEXT: fsub double {{.*}}, %[[PROD]]
// CHECK-NOT: cblas
// CHECK: ret void
#nd_in = affine_map<(d0, d1) -> (d0, d1)>
#nd_out = affine_map<(d0, d1) -> (d0)>
func.func @negated_dot(%a: tensor<4x8xf64>, %b: tensor<4x8xf64>) -> tensor<4xf64> {
  %zero = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<4xf64>
  %f = linalg.fill ins(%zero : f64) outs(%e : tensor<4xf64>) -> tensor<4xf64>
  %r = linalg.generic {indexing_maps = [#nd_in, #nd_in, #nd_out], iterator_types = ["parallel", "reduction"]}
      ins(%a, %b : tensor<4x8xf64>, tensor<4x8xf64>) outs(%f : tensor<4xf64>) {
  ^bb0(%x: f64, %y: f64, %acc: f64):
    %p = arith.mulf %x, %y : f64
    %n = arith.negf %p : f64
    %s = arith.addf %n, %acc : f64
    linalg.yield %s : f64
  } -> tensor<4xf64>
  return %r : tensor<4xf64>
}

// Row-wise dot products (softmax's and LayerNorm's backward, sum_k dy * y
// per row) are a batch of 1 x 1 GEMMs: one call per output element. They
// stay loops (cpu-lower-reductions-to-loops); a single dot product, with no
// batch loop, is still one call.
// CHECK-LABEL: define void @pipedream_row_dots(
// CHECK-NOT: cblas
// CHECK: fmul <16 x float>
// CHECK-NOT: cblas
// CHECK: ret void
#rd_in = affine_map<(d0, d1) -> (d0, d1)>
#rd_out = affine_map<(d0, d1) -> (d0)>
func.func @row_dots(%a: tensor<6x32xf32>, %b: tensor<6x32xf32>) -> tensor<6xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<6xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<6xf32>) -> tensor<6xf32>
  %r = linalg.generic {indexing_maps = [#rd_in, #rd_in, #rd_out], iterator_types = ["parallel", "reduction"]}
      ins(%a, %b : tensor<6x32xf32>, tensor<6x32xf32>) outs(%f : tensor<6xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<6xf32>
  return %r : tensor<6xf32>
}

// CHECK-LABEL: define void @pipedream_dot(
// CHECK: call void @cblas_sgemm(i32 101, i32 111, i32 111, i32 1, i32 1, i32 32, float 1.000000e+00, ptr, i32 32, ptr, i32 1, float 0.000000e+00, ptr, i32 1)
#d_in = affine_map<(d0) -> (d0)>
#d_out = affine_map<(d0) -> ()>
func.func @dot(%a: tensor<32xf32>, %b: tensor<32xf32>) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %r = linalg.generic {indexing_maps = [#d_in, #d_in, #d_out], iterator_types = ["reduction"]}
      ins(%a, %b : tensor<32xf32>, tensor<32xf32>) outs(%f : tensor<f32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}
