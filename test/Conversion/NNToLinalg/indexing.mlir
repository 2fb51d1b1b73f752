// RUN: pipedream-opt %s -convert-nn-to-linalg -split-input-file | FileCheck %s
// The CPU pipeline must turn the output into the llvm dialect alone.
// RUN: pipedream-opt %s -split-input-file -convert-nn-to-linalg \
// RUN:   -one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" \
// RUN:   -buffer-deallocation-pipeline -convert-bufferization-to-memref \
// RUN:   -cpu-lower-run-time-checks -convert-linalg-to-loops -convert-scf-to-cf -expand-strided-metadata \
// RUN:   -lower-affine -convert-math-to-libm -convert-to-llvm -reconcile-unrealized-casts \
// RUN: | FileCheck %s --check-prefix=LLVM \
// RUN:   --implicit-check-not="{{[^.a-z_](nn|linalg|tensor|memref|bufferization|arith|math|scf|cf|affine|func|builtin)\.}}"
// Data-dependent indexing (Indexing.cpp): gathers are generics extracting
// at a normalized index; scatters are scf.for nests over the updates. Every
// run-time index goes through normalizeIndex (wrap, then clamp).

// CHECK-LABEL: func.func @gather_elements(
// CHECK-SAME: %[[X:.*]]: tensor<3x4xf32>, %[[I:.*]]: tensor<2x5xi64>)
// CHECK: linalg.generic {{.*}} outs(
// CHECK: %[[R:.*]] = linalg.index 0 : index
// CHECK: %[[C:.*]] = linalg.index 1 : index
// CHECK: %[[IDX:.*]] = tensor.extract %[[I]][%[[R]], %[[C]]] : tensor<2x5xi64>
// CHECK: arith.cmpi slt, %[[IDX]]
// CHECK: arith.minsi
// CHECK: %[[CL:.*]] = arith.maxsi
// CHECK: %[[COL:.*]] = arith.index_cast %[[CL]] : i64 to index
// CHECK: tensor.extract %[[X]][%[[R]], %[[COL]]] : tensor<3x4xf32>
// LLVM-LABEL: llvm.func @gather_elements(
func.func @gather_elements(%x: tensor<3x4xf32>, %i: tensor<2x5xi64>) -> tensor<2x5xf32> {
  %0 = nn.gather_elements %x, %i {axis = 1 : i64} : (tensor<3x4xf32>, tensor<2x5xi64>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

// An out-of-range index writes nothing: the combined value is selected by
// the in-bounds flag.
// CHECK-LABEL: func.func @scatter_elements_add(
// CHECK-SAME: %[[X:.*]]: tensor<3x4xf32>, %[[I:.*]]: tensor<2x4xi64>, %[[U:.*]]: tensor<2x4xf32>)
// CHECK: %[[OUTER:.*]] = scf.for %[[A:.*]] = {{.*}} iter_args(%[[ACC0:.*]] = %[[X]]) -> (tensor<3x4xf32>)
// CHECK: scf.for %[[B:.*]] = {{.*}} iter_args(%[[ACC:.*]] = %[[ACC0]]) -> (tensor<3x4xf32>)
// CHECK: %[[IDX:.*]] = tensor.extract %[[I]][%[[A]], %[[B]]]
// CHECK: %[[LO:.*]] = arith.cmpi sge
// CHECK: %[[HI:.*]] = arith.cmpi slt
// CHECK: %[[OK:.*]] = arith.andi %[[LO]], %[[HI]] : i1
// CHECK: %[[ROW:.*]] = arith.index_cast
// CHECK: %[[UPD:.*]] = tensor.extract %[[U]][%[[A]], %[[B]]]
// CHECK: %[[OLD:.*]] = tensor.extract %[[ACC]][%[[ROW]], %[[B]]]
// CHECK: %[[SUM:.*]] = arith.addf %[[OLD]], %[[UPD]] : f32
// CHECK: %[[NEW:.*]] = arith.select %[[OK]], %[[SUM]], %[[OLD]] : f32
// CHECK: tensor.insert %[[NEW]] into %[[ACC]][%[[ROW]], %[[B]]]
// CHECK: return %[[OUTER]]
// LLVM-LABEL: llvm.func @scatter_elements_add(
func.func @scatter_elements_add(%x: tensor<3x4xf32>, %i: tensor<2x4xi64>, %u: tensor<2x4xf32>) -> tensor<3x4xf32> {
  %0 = nn.scatter_elements %x, %i, %u {axis = 0 : i64, reduction = "add"} : (tensor<3x4xf32>, tensor<2x4xi64>, tensor<2x4xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

// Integer max.
// CHECK-LABEL: func.func @scatter_elements_max_int(
// CHECK: arith.maxsi %{{.*}}, %{{.*}} : i32
// LLVM-LABEL: llvm.func @scatter_elements_max_int(
func.func @scatter_elements_max_int(%x: tensor<5xi32>, %i: tensor<3xi32>, %u: tensor<3xi32>) -> tensor<5xi32> {
  %0 = nn.scatter_elements %x, %i, %u {axis = 0 : i64, reduction = "max"} : (tensor<5xi32>, tensor<3xi32>, tensor<3xi32>) -> tensor<5xi32>
  return %0 : tensor<5xi32>
}

// -----

// Each coordinate of a tuple is read from the indices and normalized on
// its own dimension; the batch dimension is shared.
// CHECK-LABEL: func.func @gather_nd(
// CHECK-SAME: %[[D:.*]]: tensor<2x3x4x5xf32>, %[[I:.*]]: tensor<2x6x2xi64>)
// CHECK: %[[B:.*]] = linalg.index 0 : index
// CHECK: %[[P:.*]] = linalg.index 1 : index
// CHECK: %[[E:.*]] = linalg.index 2 : index
// CHECK: tensor.extract %[[I]][%[[B]], %[[P]], %{{.*}}] : tensor<2x6x2xi64>
// CHECK: %[[C0:.*]] = arith.index_cast
// CHECK: tensor.extract %[[I]][%[[B]], %[[P]], %{{.*}}] : tensor<2x6x2xi64>
// CHECK: %[[C1:.*]] = arith.index_cast
// CHECK: tensor.extract %[[D]][%[[B]], %[[C0]], %[[C1]], %[[E]]] : tensor<2x3x4x5xf32>
// LLVM-LABEL: llvm.func @gather_nd(
func.func @gather_nd(%d: tensor<2x3x4x5xf32>, %i: tensor<2x6x2xi64>) -> tensor<2x6x5xf32> {
  %0 = nn.gather_nd %d, %i {batch_dims = 1 : i64} : (tensor<2x3x4x5xf32>, tensor<2x6x2xi64>) -> tensor<2x6x5xf32>
  return %0 : tensor<2x6x5xf32>
}

// -----

// CHECK-LABEL: func.func @scatter_nd(
// CHECK: scf.for
// CHECK: scf.for
// CHECK: arith.mulf
// CHECK: tensor.insert
// LLVM-LABEL: llvm.func @scatter_nd(
func.func @scatter_nd(%x: tensor<4x3xf32>, %i: tensor<2x1xi64>, %u: tensor<2x3xf32>) -> tensor<4x3xf32> {
  %0 = nn.scatter_nd %x, %i, %u {reduction = "mul"} : (tensor<4x3xf32>, tensor<2x1xi64>, tensor<2x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// check_size: its input, and a run-time check of kind size on the scalar
// size against [expected, expected + 1).
// CHECK-LABEL: func.func @check_size(
// CHECK-SAME: %[[Y:.*]]: tensor<2x3xi64>, %[[N:.*]]: tensor<i64>)
// CHECK: %[[S:.*]] = tensor.extract %[[N]][] : tensor<i64>
// CHECK: nn.check_index_range %[[S]], %[[S]] {input = "result", kind = "size", lower = 3 : i64, node = "", op_type = "NonZero", upper = 4 : i64} : i64
// CHECK: return %[[Y]]
// LLVM-LABEL: llvm.func @check_size(
func.func @check_size(%y: tensor<2x3xi64>, %n: tensor<i64>) -> tensor<2x3xi64> {
  %0 = nn.check_size %y, %n {expected = 3 : i64, op_type = "NonZero", output = "result"} : tensor<2x3xi64>, tensor<i64>
  return %0 : tensor<2x3xi64>
}
