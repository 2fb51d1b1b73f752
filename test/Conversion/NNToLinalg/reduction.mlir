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
// Reductions: linalg.reduce over the axes, a division by the reduced count
// for the mean, and tensor.expand_shape for keepdims.

// CHECK-LABEL: func.func @reduce_sum_keepdims(
// CHECK-SAME: %[[X:.*]]: tensor<3x4x5xf32>)
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[INIT:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.*}} : tensor<3x5xf32>)
// CHECK: %[[SUM:.*]] = linalg.reduce ins(%[[X]] : tensor<3x4x5xf32>) outs(%[[INIT]] : tensor<3x5xf32>) dimensions = [1]
// CHECK: arith.addf
// CHECK: %[[R:.*]] = tensor.expand_shape %[[SUM]] {{\[}}[0], [1, 2]] output_shape [3, 1, 5] : tensor<3x5xf32> into tensor<3x1x5xf32>
// CHECK: return %[[R]]
// LLVM-LABEL: llvm.func @reduce_sum_keepdims(
func.func @reduce_sum_keepdims(%x: tensor<3x4x5xf32>) -> tensor<3x1x5xf32> {
  %0 = nn.reduce_sum %x {axes = array<i64: 1>, keepdims = true} : (tensor<3x4x5xf32>) -> tensor<3x1x5xf32>
  return %0 : tensor<3x1x5xf32>
}

// -----

// CHECK-LABEL: func.func @reduce_mean(
// CHECK: %[[SUM:.*]] = linalg.reduce ins(%{{.*}} : tensor<3x4x5xf32>) outs(%{{.*}} : tensor<4xf32>) dimensions = [0, 2]
// CHECK: %[[COUNT:.*]] = arith.constant 1.500000e+01 : f32
// CHECK: %[[R:.*]] = linalg.generic
// CHECK-SAME: ins(%[[SUM]] : tensor<4xf32>)
// CHECK: arith.divf %{{.*}}, %[[COUNT]] : f32
// CHECK: return %[[R]]
// LLVM-LABEL: llvm.func @reduce_mean(
func.func @reduce_mean(%x: tensor<3x4x5xf32>) -> tensor<4xf32> {
  %0 = nn.reduce_mean %x {axes = array<i64: 0, 2>, keepdims = false} : (tensor<3x4x5xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Max starts from -inf and propagates NaN (arith.maximumf).
// CHECK-LABEL: func.func @reduce_max_all(
// CHECK: %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: %[[INIT:.*]] = linalg.fill ins(%[[NEGINF]] : f32) outs(%{{.*}} : tensor<f32>)
// CHECK: %[[R:.*]] = linalg.reduce ins(%{{.*}} : tensor<3x4xf32>) outs(%[[INIT]] : tensor<f32>) dimensions = [0, 1]
// CHECK: arith.maximumf
// CHECK: return %[[R]] : tensor<f32>
// LLVM-LABEL: llvm.func @reduce_max_all(
func.func @reduce_max_all(%x: tensor<3x4xf32>) -> tensor<f32> {
  %0 = nn.reduce_max %x {axes = array<i64: 0, 1>, keepdims = false} : (tensor<3x4xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Integers: addi, maxsi from the signed minimum, a truncating mean.
// CHECK-LABEL: func.func @reduce_int(
// CHECK: arith.addi
// CHECK: %[[MIN:.*]] = arith.constant -9223372036854775808 : i64
// CHECK: linalg.fill ins(%[[MIN]] : i64)
// CHECK: arith.maxsi
// CHECK: %[[FOUR:.*]] = arith.constant 4 : i64
// CHECK: arith.divsi %{{.*}}, %[[FOUR]] : i64
// LLVM-LABEL: llvm.func @reduce_int(
func.func @reduce_int(%x: tensor<3x4xi64>) -> (tensor<3xi64>, tensor<1x4xi64>, tensor<3xi64>) {
  %0 = nn.reduce_sum %x {axes = array<i64: 1>, keepdims = false} : (tensor<3x4xi64>) -> tensor<3xi64>
  %1 = nn.reduce_max %x {axes = array<i64: 0>, keepdims = true} : (tensor<3x4xi64>) -> tensor<1x4xi64>
  %2 = nn.reduce_mean %x {axes = array<i64: 1>, keepdims = false} : (tensor<3x4xi64>) -> tensor<3xi64>
  return %0, %1, %2 : tensor<3xi64>, tensor<1x4xi64>, tensor<3xi64>
}
