// RUN: pipedream-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(cpu-plan-temporaries))' -verify-diagnostics | FileCheck %s

func.func private @k(memref<256xf32>, memref<256xf32>)

// A chain: %a is dead once %b is made, so %c takes %a's bytes; %b, live
// with both, gets the next 1024. One 2048-byte buffer, freed before the
// return; the three deallocs are gone.
// CHECK-LABEL: func.func @chain
// CHECK-SAME:    (%[[X:.*]]: memref<256xf32>)
// CHECK-NEXT:    %[[T:.*]] = memref.alloc() {alignment = 64 : i64} : memref<2048xi8>
// CHECK-NEXT:    %[[OA:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[A:.*]] = memref.view %[[T]][%[[OA]]][] : memref<2048xi8> to memref<256xf32>
// CHECK-NEXT:    call @k(%[[X]], %[[A]])
// CHECK-NEXT:    %[[OB:.*]] = arith.constant 1024 : index
// CHECK-NEXT:    %[[B:.*]] = memref.view %[[T]][%[[OB]]][] : memref<2048xi8> to memref<256xf32>
// CHECK-NEXT:    call @k(%[[A]], %[[B]])
// CHECK-NEXT:    %[[OC:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[C:.*]] = memref.view %[[T]][%[[OC]]][] : memref<2048xi8> to memref<256xf32>
// CHECK-NEXT:    call @k(%[[B]], %[[C]])
// CHECK-NEXT:    call @k(%[[C]], %[[X]])
// CHECK-NEXT:    memref.dealloc %[[T]] : memref<2048xi8>
// CHECK-NEXT:    return
func.func @chain(%x: memref<256xf32>) {
  %a = memref.alloc() : memref<256xf32>
  call @k(%x, %a) : (memref<256xf32>, memref<256xf32>) -> ()
  %b = memref.alloc() : memref<256xf32>
  call @k(%a, %b) : (memref<256xf32>, memref<256xf32>) -> ()
  %c = memref.alloc() : memref<256xf32>
  call @k(%b, %c) : (memref<256xf32>, memref<256xf32>) -> ()
  call @k(%c, %x) : (memref<256xf32>, memref<256xf32>) -> ()
  memref.dealloc %a : memref<256xf32>
  memref.dealloc %b : memref<256xf32>
  memref.dealloc %c : memref<256xf32>
  return
}

// -----

func.func private @k(memref<256xf32>, memref<256xf32>)
func.func private @g(i64, i64)

// What extends a live range: a use through a view (%a, read through a
// reshape by the fourth call), a use inside a region (%b, in the scf.if),
// and a pointer taken out of the memref (%c, passed to @g as an integer
// at the end). %c, the largest, is placed first; %a and %b are live with
// it and with each other; %e comes when %a and %b are dead, so it takes
// %a's bytes, but not %c's.
// CHECK-LABEL: func.func @derived
// CHECK:         memref.alloc() {alignment = 64 : i64} : memref<4096xi8>
// CHECK:         arith.constant 2048 : index
// CHECK:         memref.view {{.*}} to memref<256xf32>
// CHECK:         arith.constant 3072 : index
// CHECK:         memref.view {{.*}} to memref<256xf32>
// CHECK:         arith.constant 0 : index
// CHECK:         memref.view {{.*}} to memref<512xf32>
// CHECK:         arith.constant 2048 : index
// CHECK:         memref.view {{.*}} to memref<256xf32>
// CHECK-NOT:     memref.view
// CHECK:         memref.dealloc {{.*}} : memref<4096xi8>
func.func @derived(%x: memref<256xf32>, %cond: i1) {
  %a = memref.alloc() : memref<256xf32>
  call @k(%x, %a) : (memref<256xf32>, memref<256xf32>) -> ()
  %b = memref.alloc() : memref<256xf32>
  call @k(%x, %b) : (memref<256xf32>, memref<256xf32>) -> ()
  %c = memref.alloc() : memref<512xf32>
  %view = memref.expand_shape %a [[0, 1]] output_shape [16, 16] : memref<256xf32> into memref<16x16xf32>
  scf.if %cond {
    func.call @k(%b, %x) : (memref<256xf32>, memref<256xf32>) -> ()
  }
  %p = memref.extract_aligned_pointer_as_index %c : memref<512xf32> -> index
  %flat = memref.collapse_shape %view [[0, 1]] : memref<16x16xf32> into memref<256xf32>
  call @k(%flat, %x) : (memref<256xf32>, memref<256xf32>) -> ()
  %e = memref.alloc() : memref<256xf32>
  call @k(%x, %e) : (memref<256xf32>, memref<256xf32>) -> ()
  %i = arith.index_cast %p : index to i64
  call @g(%i, %i) : (i64, i64) -> ()
  memref.dealloc %a : memref<256xf32>
  memref.dealloc %b : memref<256xf32>
  memref.dealloc %c : memref<512xf32>
  memref.dealloc %e : memref<256xf32>
  return
}

// -----

func.func private @k(memref<256xf32>, memref<256xf32>)

// Left as they are: a temporary yielded out of a region (%y), one without
// a dealloc in the block (%n), a dynamic shape (%d), i1 elements (%m), a
// non-identity layout (%s). The two placeable ones (%a, %b) share one
// buffer.
// CHECK-LABEL: func.func @kept
// CHECK:         memref.alloc() {alignment = 64 : i64} : memref<2048xi8>
// CHECK:         %[[Y:.*]] = memref.alloc() : memref<256xf32>
// CHECK:         %[[N:.*]] = memref.alloc() : memref<256xf32>
// CHECK:         memref.alloc(%{{.*}}) : memref<?xf32>
// CHECK:         memref.alloc() : memref<64xi1>
// CHECK:         memref.alloc() : memref<16x16xf32, strided<[32, 1]>>
// CHECK-COUNT-2: memref.view
// CHECK-NOT:     memref.view
// CHECK:         memref.dealloc %[[Y]]
// CHECK-NOT:     memref.dealloc %[[N]]
// CHECK:         memref.dealloc {{.*}} : memref<2048xi8>
// CHECK-NEXT:    return %[[N]]
func.func @kept(%x: memref<256xf32>, %cond: i1, %size: index) -> memref<256xf32> {
  %y = memref.alloc() : memref<256xf32>
  %r = scf.if %cond -> memref<256xf32> {
    scf.yield %y : memref<256xf32>
  } else {
    scf.yield %x : memref<256xf32>
  }
  call @k(%r, %x) : (memref<256xf32>, memref<256xf32>) -> ()
  %n = memref.alloc() : memref<256xf32>
  %d = memref.alloc(%size) : memref<?xf32>
  %m = memref.alloc() : memref<64xi1>
  %s = memref.alloc() : memref<16x16xf32, strided<[32, 1]>>
  %a = memref.alloc() : memref<256xf32>
  call @k(%x, %a) : (memref<256xf32>, memref<256xf32>) -> ()
  %b = memref.alloc() : memref<256xf32>
  call @k(%a, %b) : (memref<256xf32>, memref<256xf32>) -> ()
  call @k(%b, %n) : (memref<256xf32>, memref<256xf32>) -> ()
  memref.dealloc %y : memref<256xf32>
  memref.dealloc %d : memref<?xf32>
  memref.dealloc %m : memref<64xi1>
  memref.dealloc %s : memref<16x16xf32, strided<[32, 1]>>
  memref.dealloc %a : memref<256xf32>
  memref.dealloc %b : memref<256xf32>
  return %n : memref<256xf32>
}

// -----

// One temporary has nothing to share with: unchanged.
// CHECK-LABEL: func.func @one
// CHECK-NEXT:    %[[A:.*]] = memref.alloc() : memref<256xf32>
// CHECK-NEXT:    memref.copy %{{.*}}, %[[A]]
// CHECK-NEXT:    memref.dealloc %[[A]]
func.func @one(%x: memref<256xf32>) {
  %a = memref.alloc() : memref<256xf32>
  memref.copy %x, %a : memref<256xf32> to memref<256xf32>
  memref.dealloc %a : memref<256xf32>
  return
}
