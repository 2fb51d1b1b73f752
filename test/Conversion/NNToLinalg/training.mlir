// RUN: pipedream-opt %s -convert-nn-to-linalg -split-input-file | FileCheck %s
// The CPU pipeline (TOOLCHAIN.md, plus convert-bufferization-to-memref for
// results that alias an argument or a constant) must turn the output into
// the llvm dialect alone.
// RUN: pipedream-opt %s -split-input-file -convert-nn-to-linalg \
// RUN:   -one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" \
// RUN:   -buffer-deallocation-pipeline -convert-bufferization-to-memref \
// RUN:   -convert-linalg-to-loops -convert-scf-to-cf -expand-strided-metadata \
// RUN:   -lower-affine -convert-math-to-libm -convert-to-llvm -reconcile-unrealized-casts \
// RUN: | FileCheck %s --check-prefix=LLVM \
// RUN:   --implicit-check-not="{{[^.a-z_](nn|linalg|tensor|memref|bufferization|arith|math|scf|cf|affine|func|builtin)\.}}"
// Training-support ops: slice_grad writes into zeros with a strided
// insert_slice, gather_grad scatter-adds in an scf.for over the indices,
// bernoulli hashes linalg.index in a generic. Numerics:
// test/Integration/CPU/NNToLinalg/training.test.

// CHECK-LABEL: func.func @slice_grad(
// CHECK-SAME: %[[G:.*]]: tensor<2x2xf32>)
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[FILL:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.*}} : tensor<2x6xf32>)
// CHECK: %[[R:.*]] = tensor.insert_slice %[[G]] into %[[FILL]][0, 1] [2, 2] [1, 2]
// CHECK: return %[[R]]
// LLVM-LABEL: llvm.func @slice_grad(
func.func @slice_grad(%g: tensor<2x2xf32>) -> tensor<2x6xf32> {
  %0 = nn.slice_grad %g {shape = array<i64: 2, 6>, starts = array<i64: 0, 1>, steps = array<i64: 1, 2>}
      : (tensor<2x2xf32>) -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}

// -----

// A negative step writes from the last position with the input reversed.
// CHECK-DAG: #[[REV:.*]] = affine_map<(d0, d1) -> (d0, -d1 + 2)>
// CHECK-LABEL: func.func @slice_grad_reversed(
// CHECK-SAME: %[[G:.*]]: tensor<4x3xf64>)
// CHECK: %[[FILL:.*]] = linalg.fill
// CHECK: %[[REVERSED:.*]] = linalg.generic {indexing_maps = [#[[REV]], {{.*}}]{{.*}} ins(%[[G]] : tensor<4x3xf64>)
// CHECK: tensor.insert_slice %[[REVERSED]] into %[[FILL]][0, 2] [4, 3] [1, 3]
// LLVM-LABEL: llvm.func @slice_grad_reversed(
func.func @slice_grad_reversed(%g: tensor<4x3xf64>) -> tensor<4x10xf64> {
  %0 = nn.slice_grad %g {shape = array<i64: 4, 10>, starts = array<i64: 0, 8>, steps = array<i64: 1, -3>}
      : (tensor<4x3xf64>) -> tensor<4x10xf64>
  return %0 : tensor<4x10xf64>
}

// -----

// One loop trip per index, each adding a [outer, 1, inner] slice into the
// row the (wrapped, clamped) index names; an out-of-range index adds
// nothing.
// CHECK-LABEL: func.func @gather_grad(
// CHECK-SAME: %[[G:.*]]: tensor<2x3x4xf32>, %[[I:.*]]: tensor<3xi64>)
// CHECK: %[[FILL:.*]] = linalg.fill {{.*}} -> tensor<2x5x4xf32>
// CHECK: %[[LOOP:.*]] = scf.for %[[IV:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %[[FILL]]) -> (tensor<2x5x4xf32>)
// CHECK:   %[[IDX:.*]] = tensor.extract %[[I]][%[[IV]]]
// CHECK:   %[[NEG:.*]] = arith.cmpi slt, %[[IDX]]
// CHECK:   %[[WRAPPED:.*]] = arith.select %[[NEG]]
// CHECK:   %[[OK:.*]] = arith.andi
// CHECK:   %[[MIN:.*]] = arith.minsi %[[WRAPPED]]
// CHECK:   %[[CLAMPED:.*]] = arith.maxsi %[[MIN]]
// CHECK:   %[[ROW:.*]] = arith.index_cast %[[CLAMPED]] : i64 to index
// CHECK:   %[[PIECE:.*]] = tensor.extract_slice %[[G]][0, %[[IV]], 0] [2, 1, 4] [1, 1, 1]
// CHECK:   %[[CUR:.*]] = tensor.extract_slice %[[ACC]][0, %[[ROW]], 0] [2, 1, 4] [1, 1, 1]
// CHECK:   %[[SUM:.*]] = linalg.generic {{.*}} ins(%[[PIECE]] : tensor<2x1x4xf32>) outs(%[[CUR]] : tensor<2x1x4xf32>)
// CHECK:     arith.addf
// CHECK:   %[[KEPT:.*]] = arith.select %[[OK]], %[[SUM]], %[[CUR]] : tensor<2x1x4xf32>
// CHECK:   %[[NEW:.*]] = tensor.insert_slice %[[KEPT]] into %[[ACC]][0, %[[ROW]], 0] [2, 1, 4] [1, 1, 1]
// CHECK:   scf.yield %[[NEW]]
// CHECK: return %[[LOOP]]
// LLVM-LABEL: llvm.func @gather_grad(
func.func @gather_grad(%g: tensor<2x3x4xf32>, %i: tensor<3xi64>) -> tensor<2x5x4xf32> {
  %0 = nn.gather_grad %g, %i {axis = 1 : i64, axis_size = 5 : i64}
      : (tensor<2x3x4xf32>, tensor<3xi64>) -> tensor<2x5x4xf32>
  return %0 : tensor<2x5x4xf32>
}

// -----

// Index dimensions are flattened into one loop; the result reshapes back.
// CHECK-LABEL: func.func @gather_grad_matrix_indices(
// CHECK: into tensor<1x16x16xf32>
// CHECK: tensor.collapse_shape {{.*}} : tensor<2x8xi32> into tensor<16xi32>
// CHECK: scf.for
// CHECK: tensor.collapse_shape {{.*}} : tensor<1x100x16xf32> into tensor<100x16xf32>
// LLVM-LABEL: llvm.func @gather_grad_matrix_indices(
func.func @gather_grad_matrix_indices(%g: tensor<2x8x16xf32>, %i: tensor<2x8xi32>) -> tensor<100x16xf32> {
  %0 = nn.gather_grad %g, %i {axis = 0 : i64, axis_size = 100 : i64}
      : (tensor<2x8x16xf32>, tensor<2x8xi32>) -> tensor<100x16xf32>
  return %0 : tensor<100x16xf32>
}

// -----

// CHECK-DAG: #[[SCALAR:.*]] = affine_map<(d0, d1) -> ()>
// CHECK-LABEL: func.func @bernoulli(
// CHECK-SAME: %[[SEED:.*]]: tensor<i64>)
// CHECK: linalg.generic {indexing_maps = [#[[SCALAR]], {{.*}}], iterator_types = ["parallel", "parallel"]} ins(%[[SEED]] : tensor<i64>)
// CHECK: linalg.index 0
// CHECK: linalg.index 1
// CHECK: arith.shrui
// CHECK: arith.uitofp
// CHECK: arith.cmpf olt, %{{.*}}, %{{.*}} : f64
// CHECK: arith.select {{.*}} : f32
// LLVM-LABEL: llvm.func @bernoulli(
func.func @bernoulli(%seed: tensor<i64>) -> tensor<4x8xf32> {
  %0 = nn.bernoulli %seed {probability = 0.9 : f64} : (tensor<i64>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
