// RUN: pipedream-opt %s -split-input-file -cpu-outline-kernels | FileCheck %s

// Two equal nests on different buffers share one kernel; a nest on another
// shape gets its own. Constants are cloned into the kernel, not passed.
#map = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func.func @twice(
// CHECK-SAME:      %[[A:.*]]: memref<4xf32>, %[[B:.*]]: memref<4xf32>, %[[C:.*]]: memref<4xf32>, %[[D:.*]]: memref<8xf32>
// CHECK:         call @[[K0:__pipedream_kernel_[0-9]+]](%[[A]], %[[B]]) : (memref<4xf32>, memref<4xf32>) -> ()
// CHECK:         call @[[K0]](%[[B]], %[[C]]) : (memref<4xf32>, memref<4xf32>) -> ()
// CHECK:         call @[[K1:__pipedream_kernel_[0-9]+]](%[[D]]) : (memref<8xf32>) -> ()
// CHECK-NOT:     linalg.
// CHECK:         return
// CHECK:       func.func private @[[K0]](%[[X:.*]]: memref<4xf32>, %[[Y:.*]]: memref<4xf32>) attributes {llvm.linkage = #llvm.linkage<internal>, passthrough = ["noinline"]} {
// CHECK:         linalg.generic {{.*}} ins(%[[X]] : memref<4xf32>) outs(%[[Y]] : memref<4xf32>)
// CHECK:           math.exp
// CHECK:         return
// CHECK:       func.func private @[[K1]](%[[Z:.*]]: memref<8xf32>) attributes {llvm.linkage = #llvm.linkage<internal>, passthrough = ["noinline"]} {
// CHECK:         %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:         linalg.fill ins(%[[ZERO]] : f32) outs(%[[Z]] : memref<8xf32>)
// CHECK-NOT:   func.func private @__pipedream_kernel_
func.func @twice(%a: memref<4xf32>, %b: memref<4xf32>, %c: memref<4xf32>,
                 %d: memref<8xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) {
  ^bb0(%x: f32, %y: f32):
    %e = math.exp %x : f32
    linalg.yield %e : f32
  }
  linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%b : memref<4xf32>) outs(%c : memref<4xf32>) {
  ^bb0(%x: f32, %y: f32):
    %e = math.exp %x : f32
    linalg.yield %e : f32
  }
  linalg.fill ins(%zero : f32) outs(%d : memref<8xf32>)
  return
}

// -----

// Nests that differ only in a constant are two kernels; an scf.for nest
// becomes a kernel too, with the values it uses from outside (a memref and
// a scalar argument) as arguments, in first-use order (memref.store uses
// the scalar first).
// CHECK-LABEL: func.func @loops(
// CHECK-SAME:      %[[M:.*]]: memref<16xf32>, %[[S:.*]]: f32
// CHECK:         call @[[F1:__pipedream_kernel_[0-9]+]](%[[M]]) : (memref<16xf32>) -> ()
// CHECK:         call @[[F2:__pipedream_kernel_[0-9]+]](%[[M]]) : (memref<16xf32>) -> ()
// CHECK:         call @[[L:__pipedream_kernel_[0-9]+]](%[[S]], %[[M]]) : (f32, memref<16xf32>) -> ()
// CHECK:       func.func private @[[F1]]
// CHECK:         arith.constant 1.000000e+00 : f32
// CHECK:       func.func private @[[F2]]
// CHECK:         arith.constant 2.000000e+00 : f32
// CHECK:       func.func private @[[L]](%[[LS:.*]]: f32, %[[LM:.*]]: memref<16xf32>) attributes {llvm.linkage = #llvm.linkage<internal>, passthrough = ["noinline"]} {
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG:     %[[C16:.*]] = arith.constant 16 : index
// CHECK-DAG:     %[[C1:.*]] = arith.constant 1 : index
// CHECK:         scf.for %[[I:.*]] = %[[C0]] to %[[C16]] step %[[C1]] {
// CHECK:           memref.store %[[LS]], %[[LM]][%[[I]]] : memref<16xf32>
func.func @loops(%m: memref<16xf32>, %s: f32) {
  %one = arith.constant 1.0 : f32
  %two = arith.constant 2.0 : f32
  linalg.fill ins(%one : f32) outs(%m : memref<16xf32>)
  linalg.fill ins(%two : f32) outs(%m : memref<16xf32>)
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %c16 step %c1 {
    memref.store %s, %m[%i] : memref<16xf32>
  }
  return
}

// -----

// Ops that are not loop nests stay where they are.
// CHECK-LABEL: func.func @no_nests(
// CHECK:         memref.copy
// CHECK-NOT:     call
// CHECK-NOT:   __pipedream_kernel_
func.func @no_nests(%a: memref<4xf32>, %b: memref<4xf32>) {
  memref.copy %a, %b : memref<4xf32> to memref<4xf32>
  return
}
