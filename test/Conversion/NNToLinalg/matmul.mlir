// RUN: pipedream-opt %s -convert-nn-to-linalg -split-input-file | FileCheck %s
// The CPU pipeline (TOOLCHAIN.md, plus convert-bufferization-to-memref for
// results that alias an argument or a constant, and convert-math-to-libm for
// math.erf) must turn the output into the llvm dialect alone.
// RUN: pipedream-opt %s -split-input-file -convert-nn-to-linalg \
// RUN:   -one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" \
// RUN:   -buffer-deallocation-pipeline -convert-bufferization-to-memref \
// RUN:   -convert-linalg-to-loops -convert-scf-to-cf -expand-strided-metadata \
// RUN:   -lower-affine -convert-math-to-libm -convert-to-llvm -reconcile-unrealized-casts \
// RUN: | FileCheck %s --check-prefix=LLVM \
// RUN:   --implicit-check-not="{{[^.a-z_](nn|linalg|tensor|memref|bufferization|arith|math|scf|cf|affine|func|builtin)\.}}"
// nn.matmul -> linalg.matmul / linalg.batch_matmul; nn.gemm -> linalg.matmul
// with transposes in its indexing maps.

// CHECK-LABEL: func.func @matmul_2d(
// CHECK-SAME: %[[A:.*]]: tensor<3x4xf32>, %[[B:.*]]: tensor<4x5xf32>)
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[EMPTY:.*]] = tensor.empty() : tensor<3x5xf32>
// CHECK: %[[ACC:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[EMPTY]] : tensor<3x5xf32>)
// CHECK: %[[R:.*]] = linalg.matmul ins(%[[A]], %[[B]] : tensor<3x4xf32>, tensor<4x5xf32>) outs(%[[ACC]] : tensor<3x5xf32>)
// CHECK: return %[[R]]
// LLVM-LABEL: llvm.func @matmul_2d(
func.func @matmul_2d(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>) -> tensor<3x5xf32> {
  %0 = nn.matmul %a, %b : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

// A matrix rhs: the lhs batch dimensions fold into M, one linalg.matmul.
// CHECK-LABEL: func.func @matmul_fold_batch(
// CHECK-SAME: %[[A:.*]]: tensor<8x2x16x64xf32>, %[[B:.*]]: tensor<64x32xf32>)
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %[[A]] {{\[}}[0, 1, 2], [3]] : tensor<8x2x16x64xf32> into tensor<256x64xf32>
// CHECK: %[[MM:.*]] = linalg.matmul ins(%[[FLAT]], %[[B]] : tensor<256x64xf32>, tensor<64x32xf32>)
// CHECK: %[[R:.*]] = tensor.expand_shape %[[MM]] {{\[}}[0, 1, 2], [3]] output_shape [8, 2, 16, 32]
// CHECK: return %[[R]]
// LLVM-LABEL: llvm.func @matmul_fold_batch(
func.func @matmul_fold_batch(%a: tensor<8x2x16x64xf32>, %b: tensor<64x32xf32>) -> tensor<8x2x16x32xf32> {
  %0 = nn.matmul %a, %b : (tensor<8x2x16x64xf32>, tensor<64x32xf32>) -> tensor<8x2x16x32xf32>
  return %0 : tensor<8x2x16x32xf32>
}

// -----

// CHECK-LABEL: func.func @matmul_batch(
// CHECK-SAME: %[[A:.*]]: tensor<2x3x4xf64>, %[[B:.*]]: tensor<2x4x5xf64>)
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f64
// CHECK: %[[ACC:.*]] = linalg.fill ins(%[[ZERO]] : f64)
// CHECK: %[[R:.*]] = linalg.batch_matmul ins(%[[A]], %[[B]] : tensor<2x3x4xf64>, tensor<2x4x5xf64>) outs(%[[ACC]] : tensor<2x3x5xf64>)
// CHECK: return %[[R]]
// LLVM-LABEL: llvm.func @matmul_batch(
func.func @matmul_batch(%a: tensor<2x3x4xf64>, %b: tensor<2x4x5xf64>) -> tensor<2x3x5xf64> {
  %0 = nn.matmul %a, %b : (tensor<2x3x4xf64>, tensor<2x4x5xf64>) -> tensor<2x3x5xf64>
  return %0 : tensor<2x3x5xf64>
}

// -----

// Batch dimensions broadcast ([2, 1] with [5] -> [2, 5]) with
// linalg.broadcast, then collapse into the batch_matmul batch.
// CHECK-LABEL: func.func @matmul_broadcast_batch(
// CHECK-SAME: %[[A:.*]]: tensor<2x1x3x4xf32>, %[[B:.*]]: tensor<5x4x6xf32>)
// CHECK: %[[A3:.*]] = tensor.collapse_shape %[[A]] {{\[}}[0], [1, 2], [3]] : tensor<2x1x3x4xf32> into tensor<2x3x4xf32>
// CHECK: %[[AB:.*]] = linalg.broadcast ins(%[[A3]] : tensor<2x3x4xf32>) outs(%{{.*}} : tensor<2x5x3x4xf32>) dimensions = [1]
// CHECK: %[[AF:.*]] = tensor.collapse_shape %[[AB]] {{\[}}[0, 1], [2], [3]] : tensor<2x5x3x4xf32> into tensor<10x3x4xf32>
// CHECK: %[[BB:.*]] = linalg.broadcast ins(%[[B]] : tensor<5x4x6xf32>) outs(%{{.*}} : tensor<2x5x4x6xf32>) dimensions = [0]
// CHECK: %[[BF:.*]] = tensor.collapse_shape %[[BB]] {{\[}}[0, 1], [2], [3]] : tensor<2x5x4x6xf32> into tensor<10x4x6xf32>
// CHECK: %[[MM:.*]] = linalg.batch_matmul ins(%[[AF]], %[[BF]] : tensor<10x3x4xf32>, tensor<10x4x6xf32>)
// CHECK: tensor.expand_shape %[[MM]] {{\[}}[0, 1], [2], [3]] output_shape [2, 5, 3, 6]
// LLVM-LABEL: llvm.func @matmul_broadcast_batch(
func.func @matmul_broadcast_batch(%a: tensor<2x1x3x4xf32>, %b: tensor<5x4x6xf32>) -> tensor<2x5x3x6xf32> {
  %0 = nn.matmul %a, %b : (tensor<2x1x3x4xf32>, tensor<5x4x6xf32>) -> tensor<2x5x3x6xf32>
  return %0 : tensor<2x5x3x6xf32>
}

// -----

// numpy promotion: [K] is [1, K] on the left and [K, 1] on the right; the
// promoted dimensions disappear from the result.
// CHECK-LABEL: func.func @matmul_vectors(
// CHECK-SAME: %[[A:.*]]: tensor<4xf32>, %[[B:.*]]: tensor<4xf32>)
// CHECK: %[[A2:.*]] = tensor.expand_shape %[[A]] {{\[}}[0, 1]] output_shape [1, 4]
// CHECK: %[[B2:.*]] = tensor.expand_shape %[[B]] {{\[}}[0, 1]] output_shape [4, 1]
// CHECK: %[[MM:.*]] = linalg.matmul ins(%[[A2]], %[[B2]] : tensor<1x4xf32>, tensor<4x1xf32>)
// CHECK: %[[R:.*]] = tensor.collapse_shape %[[MM]] [] : tensor<1x1xf32> into tensor<f32>
// CHECK: return %[[R]]
// LLVM-LABEL: llvm.func @matmul_vectors(
func.func @matmul_vectors(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<f32> {
  %0 = nn.matmul %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// CHECK-LABEL: func.func @matmul_batch_vector(
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<6x4xf32>, tensor<4x1xf32>)
// CHECK: return %{{.*}} : tensor<2x3xf32>
// LLVM-LABEL: llvm.func @matmul_batch_vector(
func.func @matmul_batch_vector(%a: tensor<2x3x4xf32>, %b: tensor<4xf32>) -> tensor<2x3xf32> {
  %0 = nn.matmul %a, %b : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// alpha = beta = 1: the broadcast bias is the accumulator.
// CHECK-DAG: #[[$COLS:.+]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG: #[[$ID2:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @gemm_bias(
// CHECK-SAME: %[[A:.*]]: tensor<2x4xf32>, %[[B:.*]]: tensor<4x3xf32>, %[[C:.*]]: tensor<3xf32>)
// CHECK: %[[ACC:.*]] = linalg.generic {indexing_maps = [#[[$COLS]], #[[$ID2]]], {{.*}}} ins(%[[C]] : tensor<3xf32>) outs(%{{.*}} : tensor<2x3xf32>)
// CHECK-NEXT: ^bb0(%[[CE:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: linalg.yield %[[CE]] : f32
// CHECK: %[[R:.*]] = linalg.matmul ins(%[[A]], %[[B]] : tensor<2x4xf32>, tensor<4x3xf32>) outs(%[[ACC]] : tensor<2x3xf32>)
// CHECK: return %[[R]]
// LLVM-LABEL: llvm.func @gemm_bias(
func.func @gemm_bias(%a: tensor<2x4xf32>, %b: tensor<4x3xf32>, %c: tensor<3xf32>) -> tensor<2x3xf32> {
  %0 = nn.gemm %a, %b, %c : (tensor<2x4xf32>, tensor<4x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// C already M x N is still copied into a new accumulator: accumulating into
// the argument would write into the caller's buffer after bufferization.
// CHECK-LABEL: func.func @gemm_full_c(
// CHECK-SAME: %[[C:[^:]*]]: tensor<2x3xf32>)
// CHECK: %[[ACC:.*]] = linalg.generic {{.*}} ins(%[[C]] : tensor<2x3xf32>)
// CHECK: linalg.matmul ins({{.*}}) outs(%[[ACC]] : tensor<2x3xf32>)
// LLVM-LABEL: llvm.func @gemm_full_c(
func.func @gemm_full_c(%a: tensor<2x4xf32>, %b: tensor<4x3xf32>, %c: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = nn.gemm %a, %b, %c : (tensor<2x4xf32>, tensor<4x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Transposes are indexing maps of the matmul (loops m, n, k); beta scales
// the broadcast C in the accumulator.
// CHECK-DAG: #[[$COL:.+]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-DAG: #[[$AT:.+]] = affine_map<(d0, d1, d2) -> (d2, d0)>
// CHECK-DAG: #[[$BT:.+]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[$OUT:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @gemm_transposed(
// CHECK-SAME: %[[A:.*]]: tensor<4x2xf32>, %[[B:.*]]: tensor<3x4xf32>, %[[C:.*]]: tensor<2x1xf32>)
// CHECK: %[[BETA:.*]] = arith.constant 5.000000e-01 : f32
// CHECK: %[[ACC:.*]] = linalg.generic {indexing_maps = [#[[$COL]], #{{.*}}]
// CHECK-SAME: ins(%[[C]] : tensor<2x1xf32>)
// CHECK: arith.mulf %[[BETA]]
// CHECK: linalg.matmul indexing_maps = [#[[$AT]], #[[$BT]], #[[$OUT]]] ins(%[[A]], %[[B]] : tensor<4x2xf32>, tensor<3x4xf32>) outs(%[[ACC]] : tensor<2x3xf32>)
// LLVM-LABEL: llvm.func @gemm_transposed(
func.func @gemm_transposed(%a: tensor<4x2xf32>, %b: tensor<3x4xf32>, %c: tensor<2x1xf32>) -> tensor<2x3xf32> {
  %0 = nn.gemm %a, %b, %c {trans_a = true, trans_b = true, beta = 0.5 : f64} : (tensor<4x2xf32>, tensor<3x4xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// alpha != 1: alpha * AB + beta * C after a zero-initialized matmul.
// CHECK-DAG: #[[$ID2:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[$SCALAR:.+]] = affine_map<(d0, d1) -> ()>
// CHECK-LABEL: func.func @gemm_alpha(
// CHECK-SAME: %[[C:[^:]*]]: tensor<f32>)
// CHECK: %[[MM:.*]] = linalg.matmul
// CHECK-DAG: %[[ALPHA:.*]] = arith.constant 2.000000e+00 : f32
// CHECK-DAG: %[[BETA:.*]] = arith.constant 3.000000e+00 : f32
// CHECK: linalg.generic {indexing_maps = [#[[$ID2]], #[[$SCALAR]], #[[$ID2]]]
// CHECK-SAME: ins(%[[MM]], %[[C]] : tensor<2x3xf32>, tensor<f32>)
// CHECK: ^bb0(%[[P:.*]]: f32, %[[CE:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[S:.*]] = arith.mulf %[[ALPHA]], %[[P]]
// CHECK: %[[T:.*]] = arith.mulf %[[BETA]], %[[CE]]
// CHECK: arith.addf %[[S]], %[[T]]
// LLVM-LABEL: llvm.func @gemm_alpha(
func.func @gemm_alpha(%a: tensor<2x4xf32>, %b: tensor<4x3xf32>, %c: tensor<f32>) -> tensor<2x3xf32> {
  %0 = nn.gemm %a, %b, %c {alpha = 2.0 : f64, beta = 3.0 : f64} : (tensor<2x4xf32>, tensor<4x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @gemm_no_c(
// CHECK: %[[R:.*]] = linalg.matmul ins
// CHECK-NEXT: return %[[R]]
// LLVM-LABEL: llvm.func @gemm_no_c(
func.func @gemm_no_c(%a: tensor<2x4xf32>, %b: tensor<4x3xf32>) -> tensor<2x3xf32> {
  %0 = nn.gemm %a, %b : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// A lhs transposed in its last two dimensions is read through the
// contraction's map (no transpose materialized); a transposed rhs is not.
// CHECK-DAG: #[[$AT:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d3, d1)>
// CHECK-DAG: #[[$B:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
// CHECK-DAG: #[[$C:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @matmul_transposed_lhs(
// CHECK-SAME: %[[X:[^:]*]]: tensor<4x7x5xf32>, %[[Y:[^:]*]]: tensor<4x7x3xf32>)
// CHECK: %[[R:.*]] = linalg.batch_matmul indexing_maps = [#[[$AT]], #[[$B]], #[[$C]]] ins(%[[X]], %[[Y]] : tensor<4x7x5xf32>, tensor<4x7x3xf32>) outs(%{{.*}} : tensor<4x5x3xf32>)
// CHECK: return %[[R]]
// LLVM-LABEL: llvm.func @matmul_transposed_lhs(
func.func @matmul_transposed_lhs(%x: tensor<4x7x5xf32>, %y: tensor<4x7x3xf32>) -> tensor<4x5x3xf32> {
  %xt = nn.transpose %x {perm = array<i64: 0, 2, 1>} : (tensor<4x7x5xf32>) -> tensor<4x5x7xf32>
  %0 = nn.matmul %xt, %y : (tensor<4x5x7xf32>, tensor<4x7x3xf32>) -> tensor<4x5x3xf32>
  return %0 : tensor<4x5x3xf32>
}

// -----

// CHECK-LABEL: func.func @matmul_transposed_rhs(
// CHECK: %[[T:.*]] = linalg.transpose
// CHECK: linalg.matmul ins(%{{.*}}, %[[T]] : tensor<8x7xf32>, tensor<7x3xf32>)
// LLVM-LABEL: llvm.func @matmul_transposed_rhs(
func.func @matmul_transposed_rhs(%x: tensor<2x4x7xf32>, %w: tensor<3x7xf32>) -> tensor<2x4x3xf32> {
  %wt = nn.transpose %w {perm = array<i64: 1, 0>} : (tensor<3x7xf32>) -> tensor<7x3xf32>
  %0 = nn.matmul %x, %wt : (tensor<2x4x7xf32>, tensor<7x3xf32>) -> tensor<2x4x3xf32>
  return %0 : tensor<2x4x3xf32>
}

// -----

// The weight gradient of a shared weight, reduce_sum(x^T dY) over the batch:
// one matmul with the batch folded into K (x [2, 4, 7] -> [8, 7]).
// CHECK-DAG: #[[$KM:.+]] = affine_map<(d0, d1, d2) -> (d2, d0)>
// CHECK-DAG: #[[$KN:.+]] = affine_map<(d0, d1, d2) -> (d2, d1)>
// CHECK-DAG: #[[$MN:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @batch_reduced_matmul(
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x4x7xf32>, %[[DY:[^:]*]]: tensor<2x4x3xf32>)
// CHECK-DAG: %[[XF:.*]] = tensor.collapse_shape %[[X]] {{\[}}[0, 1], [2]] : tensor<2x4x7xf32> into tensor<8x7xf32>
// CHECK-DAG: %[[DYF:.*]] = tensor.collapse_shape %[[DY]] {{\[}}[0, 1], [2]] : tensor<2x4x3xf32> into tensor<8x3xf32>
// CHECK: %[[P:.*]] = linalg.matmul indexing_maps = [#[[$KM]], #[[$KN]], #[[$MN]]] ins(%[[XF]], %[[DYF]] : tensor<8x7xf32>, tensor<8x3xf32>) outs(%{{.*}} : tensor<7x3xf32>)
// CHECK: %[[R:.*]] = tensor.expand_shape %[[P]] {{\[}}[0, 1], [2]] output_shape [1, 7, 3]
// CHECK-NOT: linalg.reduce
// CHECK: return %[[R]]
// LLVM-LABEL: llvm.func @batch_reduced_matmul(
func.func @batch_reduced_matmul(%x: tensor<2x4x7xf32>, %dy: tensor<2x4x3xf32>) -> tensor<1x7x3xf32> {
  %xt = nn.transpose %x {perm = array<i64: 0, 2, 1>} : (tensor<2x4x7xf32>) -> tensor<2x7x4xf32>
  %p = nn.matmul %xt, %dy : (tensor<2x7x4xf32>, tensor<2x4x3xf32>) -> tensor<2x7x3xf32>
  %0 = nn.reduce_sum %p {axes = array<i64: 0>} : (tensor<2x7x3xf32>) -> tensor<1x7x3xf32>
  return %0 : tensor<1x7x3xf32>
}
