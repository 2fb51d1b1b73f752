// RUN: pipedream-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(cpu-split-deallocs))' -verify-diagnostics | FileCheck %s
// The pass cannot fail (a dealloc it cannot prove splittable is left as it
// is); -verify-diagnostics checks it reports nothing.

// What ownership-based-buffer-deallocation leaves before the return of a
// straight-line function: every allocation, owned (true), nothing
// retained. One memref.dealloc each, in order; a repeat is freed once.
// CHECK-LABEL: func.func @owned
// CHECK:         %[[A:.*]] = memref.alloc() : memref<4xf32>
// CHECK:         %[[B:.*]] = memref.alloc() : memref<8xf32>
// CHECK-NOT:     bufferization.dealloc
// CHECK:         memref.dealloc %[[A]] : memref<4xf32>
// CHECK-NEXT:    memref.dealloc %[[B]] : memref<8xf32>
// CHECK-NEXT:    return
func.func @owned(%x: f32) {
  %true = arith.constant true
  %a = memref.alloc() : memref<4xf32>
  linalg.fill ins(%x : f32) outs(%a : memref<4xf32>)
  %b = memref.alloc() : memref<8xf32>
  linalg.fill ins(%x : f32) outs(%b : memref<8xf32>)
  bufferization.dealloc (%a, %b, %a : memref<4xf32>, memref<8xf32>, memref<4xf32>) if (%true, %true, %true)
  return
}

// -----

// Left to the upstream simplification: a retained value, a view of an
// allocation (it may alias another listed memref), a block argument, and
// a condition known only at run time.
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-4: bufferization.dealloc
// CHECK-NOT:     memref.dealloc
func.func @kept(%arg: memref<4xf32>, %c: i1) -> (i1, memref<2xf32>) {
  %true = arith.constant true
  %a = memref.alloc() : memref<4xf32>
  %b = memref.alloc() : memref<4xf32>
  %v = memref.subview %b[0] [2] [1] : memref<4xf32> to memref<2xf32, strided<[1]>>
  %r = bufferization.dealloc (%a : memref<4xf32>) if (%true) retain (%arg : memref<4xf32>)
  bufferization.dealloc (%b, %v : memref<4xf32>, memref<2xf32, strided<[1]>>) if (%true, %true)
  bufferization.dealloc (%arg : memref<4xf32>) if (%true)
  %d = memref.alloc() : memref<4xf32>
  bufferization.dealloc (%d : memref<4xf32>) if (%c)
  %e = memref.alloc() : memref<2xf32>
  return %r, %e : i1, memref<2xf32>
}
