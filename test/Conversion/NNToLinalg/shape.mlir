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
// Shape ops: tensor reshapes and slices, linalg.transpose/broadcast,
// tensor.concat, and generics for reversed slices and gather.

// One collapse or expand when a reassociation exists, through the flat
// vector otherwise ([2, 3, 4] -> [4, 6]).
// CHECK-LABEL: func.func @reshape(
// CHECK-SAME: %[[X:.*]]: tensor<2x3x4xf32>)
// CHECK: %[[A:.*]] = tensor.collapse_shape %[[X]] {{\[}}[0, 1], [2]] : tensor<2x3x4xf32> into tensor<6x4xf32>
// CHECK: %[[B:.*]] = tensor.expand_shape %[[X]] {{\[}}[0], [1], [2, 3]] output_shape [2, 3, 2, 2]
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %[[X]] {{\[}}[0, 1, 2]] : tensor<2x3x4xf32> into tensor<24xf32>
// CHECK: %[[C:.*]] = tensor.expand_shape %[[FLAT]] {{\[}}[0, 1]] output_shape [4, 6]
// CHECK: return %[[A]], %[[B]], %[[C]]
// LLVM-LABEL: llvm.func @reshape(
func.func @reshape(%x: tensor<2x3x4xf32>) -> (tensor<6x4xf32>, tensor<2x3x2x2xf32>, tensor<4x6xf32>) {
  %0 = nn.reshape %x {shape = array<i64: 6, 4>} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %1 = nn.reshape %x {shape = array<i64: 2, 3, 2, 2>} : (tensor<2x3x4xf32>) -> tensor<2x3x2x2xf32>
  %2 = nn.reshape %x {shape = array<i64: 4, 6>} : (tensor<2x3x4xf32>) -> tensor<4x6xf32>
  return %0, %1, %2 : tensor<6x4xf32>, tensor<2x3x2x2xf32>, tensor<4x6xf32>
}

// -----

// CHECK-LABEL: func.func @flatten_squeeze_unsqueeze(
// CHECK-SAME: %[[X:.*]]: tensor<2x1x4xf32>)
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %[[X]] {{\[}}[0, 1, 2]]
// CHECK: %[[F:.*]] = tensor.expand_shape %[[FLAT]] {{\[}}[0, 1]] output_shape [1, 8]
// CHECK: %[[S:.*]] = tensor.collapse_shape %[[X]] {{\[}}[0], [1, 2]] : tensor<2x1x4xf32> into tensor<2x4xf32>
// CHECK: %[[U:.*]] = tensor.expand_shape %[[X]] {{\[}}[0, 1], [2], [3, 4]] output_shape [1, 2, 1, 4, 1]
// CHECK: return %[[F]], %[[S]], %[[U]]
// LLVM-LABEL: llvm.func @flatten_squeeze_unsqueeze(
func.func @flatten_squeeze_unsqueeze(%x: tensor<2x1x4xf32>) -> (tensor<1x8xf32>, tensor<2x4xf32>, tensor<1x2x1x4x1xf32>) {
  %0 = nn.flatten %x {axis = 0 : i64} : (tensor<2x1x4xf32>) -> tensor<1x8xf32>
  %1 = nn.squeeze %x {axes = array<i64: 1>} : (tensor<2x1x4xf32>) -> tensor<2x4xf32>
  %2 = nn.unsqueeze %x {axes = array<i64: 0, 4>} : (tensor<2x1x4xf32>) -> tensor<1x2x1x4x1xf32>
  return %0, %1, %2 : tensor<1x8xf32>, tensor<2x4xf32>, tensor<1x2x1x4x1xf32>
}

// -----

// CHECK-LABEL: func.func @transpose(
// CHECK-SAME: %[[X:.*]]: tensor<2x3x4xi64>)
// CHECK: %[[INIT:.*]] = tensor.empty() : tensor<4x2x3xi64>
// CHECK: %[[R:.*]] = linalg.transpose ins(%[[X]] : tensor<2x3x4xi64>) outs(%[[INIT]] : tensor<4x2x3xi64>) permutation = [2, 0, 1]
// CHECK: return %[[R]]
// LLVM-LABEL: llvm.func @transpose(
func.func @transpose(%x: tensor<2x3x4xi64>) -> tensor<4x2x3xi64> {
  %0 = nn.transpose %x {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xi64>) -> tensor<4x2x3xi64>
  return %0 : tensor<4x2x3xi64>
}

// -----

// The identity permutation (including rank 0) is no op.
// CHECK-LABEL: func.func @transpose_identity(
// CHECK-SAME: %[[X:.*]]: tensor<2x3xf32>, %[[S:.*]]: tensor<f32>)
// CHECK-NEXT: return %[[X]], %[[S]]
// LLVM-LABEL: llvm.func @transpose_identity(
func.func @transpose_identity(%x: tensor<2x3xf32>, %s: tensor<f32>) -> (tensor<2x3xf32>, tensor<f32>) {
  %0 = nn.transpose %x {perm = array<i64: 0, 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = nn.transpose %s {perm = array<i64>} : (tensor<f32>) -> tensor<f32>
  return %0, %1 : tensor<2x3xf32>, tensor<f32>
}

// -----

// [3, 1] -> [2, 3, 4]: the broadcast unit dimension is collapsed away, then
// dimensions 0 and 2 are added.
// CHECK-LABEL: func.func @expand(
// CHECK-SAME: %[[X:.*]]: tensor<3x1xf32>)
// CHECK: %[[C:.*]] = tensor.collapse_shape %[[X]] {{\[}}[0, 1]] : tensor<3x1xf32> into tensor<3xf32>
// CHECK: %[[R:.*]] = linalg.broadcast ins(%[[C]] : tensor<3xf32>) outs(%{{.*}} : tensor<2x3x4xf32>) dimensions = [0, 2]
// CHECK: return %[[R]]
// LLVM-LABEL: llvm.func @expand(
func.func @expand(%x: tensor<3x1xf32>) -> tensor<2x3x4xf32> {
  %0 = nn.expand %x {shape = array<i64: 2, 3, 4>} : (tensor<3x1xf32>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// CHECK-LABEL: func.func @concat(
// CHECK-SAME: %[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<2x5xf32>)
// CHECK: %[[R:.*]] = tensor.concat dim(1) %[[A]], %[[B]] : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
// CHECK: return %[[R]]
// LLVM-LABEL: llvm.func @concat(
func.func @concat(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>) -> tensor<2x8xf32> {
  %0 = nn.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// An empty piece has no in-bounds offset: it is a tensor.empty.
// CHECK-LABEL: func.func @split(
// CHECK-SAME: %[[X:.*]]: tensor<2x7xf32>)
// CHECK: %[[A:.*]] = tensor.extract_slice %[[X]][0, 0] [2, 3] [1, 1] : tensor<2x7xf32> to tensor<2x3xf32>
// CHECK: %[[B:.*]] = tensor.empty() : tensor<2x0xf32>
// CHECK: %[[C:.*]] = tensor.extract_slice %[[X]][0, 3] [2, 4] [1, 1] : tensor<2x7xf32> to tensor<2x4xf32>
// CHECK: return %[[A]], %[[B]], %[[C]]
// LLVM-LABEL: llvm.func @split(
func.func @split(%x: tensor<2x7xf32>) -> (tensor<2x3xf32>, tensor<2x0xf32>, tensor<2x4xf32>) {
  %0:3 = nn.split %x {axis = 1 : i64, split_sizes = array<i64: 3, 0, 4>} : (tensor<2x7xf32>) -> (tensor<2x3xf32>, tensor<2x0xf32>, tensor<2x4xf32>)
  return %0#0, %0#1, %0#2 : tensor<2x3xf32>, tensor<2x0xf32>, tensor<2x4xf32>
}

// -----

// CHECK-LABEL: func.func @slice(
// CHECK-SAME: %[[X:.*]]: tensor<5x6xf32>)
// CHECK: %[[R:.*]] = tensor.extract_slice %[[X]][1, 0] [2, 3] [2, 2] : tensor<5x6xf32> to tensor<2x3xf32>
// CHECK: return %[[R]]
// LLVM-LABEL: llvm.func @slice(
func.func @slice(%x: tensor<5x6xf32>) -> tensor<2x3xf32> {
  %0 = nn.slice %x {sizes = array<i64: 2, 3>, starts = array<i64: 1, 0>, steps = array<i64: 2, 2>} : (tensor<5x6xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Step -3 from 5 reads columns 5 and 2: a stride-3 slice from column 2,
// then a generic reading it backwards (1 - d1).
// CHECK-DAG: #[[$REV:.+]] = affine_map<(d0, d1) -> (d0, -d1 + 1)>
// CHECK-DAG: #[[$ID2:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @slice_negative_step(
// CHECK-SAME: %[[X:.*]]: tensor<5x6xf32>)
// CHECK: %[[S:.*]] = tensor.extract_slice %[[X]][0, 2] [5, 2] [1, 3] : tensor<5x6xf32> to tensor<5x2xf32>
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[$REV]], #[[$ID2]]], iterator_types = ["parallel", "parallel"]} ins(%[[S]] : tensor<5x2xf32>)
// CHECK: return %[[R]]
// LLVM-LABEL: llvm.func @slice_negative_step(
func.func @slice_negative_step(%x: tensor<5x6xf32>) -> tensor<5x2xf32> {
  %0 = nn.slice %x {sizes = array<i64: 5, 2>, starts = array<i64: 0, 5>, steps = array<i64: 1, -3>} : (tensor<5x6xf32>) -> tensor<5x2xf32>
  return %0 : tensor<5x2xf32>
}

// -----

// Gather: the body reads the index, wraps a negative one by the axis size,
// clamps it into range (normalizeIndex: no read leaves the table), and
// extracts the element.
// CHECK-DAG: #[[$IDX:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[$ID3:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @gather(
// CHECK-SAME: %[[T:.*]]: tensor<100x16xf32>, %[[I:.*]]: tensor<2x8xi64>)
// CHECK: linalg.generic {indexing_maps = [#[[$IDX]], #[[$ID3]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[I]] : tensor<2x8xi64>)
// CHECK: ^bb0(%[[IN:.*]]: i64, %{{.*}}: f32):
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0 : i64
// CHECK-DAG: %[[SIZE:.*]] = arith.constant 100 : i64
// CHECK-DAG: %[[LAST:.*]] = arith.constant 99 : i64
// CHECK: %[[NEG:.*]] = arith.cmpi slt, %[[IN]], %[[ZERO]] : i64
// CHECK: %[[WRAP:.*]] = arith.addi %[[IN]], %[[SIZE]] : i64
// CHECK: %[[SEL:.*]] = arith.select %[[NEG]], %[[WRAP]], %[[IN]] : i64
// CHECK: %[[MIN:.*]] = arith.minsi %[[SEL]], %[[LAST]] : i64
// CHECK: %[[CLAMPED:.*]] = arith.maxsi %[[MIN]], %[[ZERO]] : i64
// CHECK: %[[ROW:.*]] = arith.index_cast %[[CLAMPED]] : i64 to index
// CHECK: %[[COL:.*]] = linalg.index 2 : index
// CHECK: %[[E:.*]] = tensor.extract %[[T]][%[[ROW]], %[[COL]]] : tensor<100x16xf32>
// CHECK: linalg.yield %[[E]] : f32
// LLVM-LABEL: llvm.func @gather(
func.func @gather(%t: tensor<100x16xf32>, %i: tensor<2x8xi64>) -> tensor<2x8x16xf32> {
  %0 = nn.gather %t, %i {axis = 0 : i64} : (tensor<100x16xf32>, tensor<2x8xi64>) -> tensor<2x8x16xf32>
  return %0 : tensor<2x8x16xf32>
}

// -----

// CHECK-DAG: #[[$IDX:.+]] = affine_map<(d0, d1, d2) -> (d1)>
// CHECK-LABEL: func.func @gather_axis1(
// CHECK: linalg.generic {indexing_maps = [#[[$IDX]], #{{.*}}]
// CHECK: ^bb0(%[[IN:.*]]: i32, %{{.*}}: f32):
// CHECK: %[[D0:.*]] = linalg.index 0 : index
// CHECK: arith.constant 5 : i32
// CHECK: %[[D1:.*]] = arith.index_cast %{{.*}} : i32 to index
// CHECK: %[[D2:.*]] = linalg.index 2 : index
// CHECK: tensor.extract %{{.*}}[%[[D0]], %[[D1]], %[[D2]]] : tensor<3x5x2xf32>
// LLVM-LABEL: llvm.func @gather_axis1(
func.func @gather_axis1(%t: tensor<3x5x2xf32>, %i: tensor<4xi32>) -> tensor<3x4x2xf32> {
  %0 = nn.gather %t, %i {axis = 1 : i64} : (tensor<3x5x2xf32>, tensor<4xi32>) -> tensor<3x4x2xf32>
  return %0 : tensor<3x4x2xf32>
}
