// RUN: pipedream-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(cpu-fuse-row-loops),canonicalize,cse)' --allow-unregistered-dialect | FileCheck %s

// Row sums, then each row divided by its sum (softmax's last steps): the
// fill, the sum and the division run row by row in one loop over the 8
// rows; the allocation moves before it, the deallocation stays after it.
// The sums, used by this nest alone and each in its row's iteration, are
// one element (row temporaries); %y, used after the nest, stays whole.
// CHECK-LABEL: func.func @normalize_rows
// CHECK-SAME: (%[[X:.*]]: memref<8x64xf32>)
// CHECK: %[[SUM:.*]] = memref.alloc() : memref<1xf32>
// CHECK: %[[Y:.*]] = memref.alloc() : memref<8x64xf32>
// CHECK: scf.for %[[I:.*]] = %c0 to %c8 step %c1 {
// CHECK-NEXT: memref.store %{{.*}}, %[[SUM]][%c0]
// CHECK-NEXT: scf.for %[[K:.*]] = %c0 to %c64
// CHECK: memref.load %[[X]][%[[I]], %[[K]]]
// CHECK: memref.store %{{.*}}, %[[SUM]][%c0]
// CHECK-NEXT: }
// CHECK-NEXT: scf.for %[[K2:.*]] = %c0 to %c64
// CHECK: memref.load %[[SUM]][%c0]
// CHECK: arith.divf
// CHECK: memref.store %{{.*}}, %[[Y]][%[[I]], %[[K2]]]
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: memref.dealloc %[[SUM]]
// CHECK-NEXT: "test.use"(%[[Y]])
func.func @normalize_rows(%x: memref<8x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %sum = memref.alloc() : memref<8xf32>
  linalg.fill ins(%zero : f32) outs(%sum : memref<8xf32>)
  linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x64xf32>) outs(%sum : memref<8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  }
  %y = memref.alloc() : memref<8x64xf32>
  linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i)>, affine_map<(i, k) -> (i, k)>], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum : memref<8x64xf32>, memref<8xf32>) outs(%y : memref<8x64xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %d = arith.divf %a, %s : f32
    linalg.yield %d : f32
  }
  memref.dealloc %sum : memref<8xf32>
  "test.use"(%y) : (memref<8x64xf32>) -> ()
  return
}

// -----

// A LayerNorm's centering over [2, 4] rows of 32: the mean is written as
// [2, 4] and read through its keepdims view [2, 4, 1]; the scale is a
// weight read whole (broadcast: only read, and no buffer of the entry
// point is written). Fused over both row dimensions (depth 2); the view
// and the allocation move before the nest. The mean is a row temporary:
// one element, its view too.
// CHECK-LABEL: func.func @center_rows
// CHECK: %[[MEAN:.*]] = memref.alloc() : memref<1x1xf32>
// CHECK: %[[VIEW:.*]] = memref.expand_shape %[[MEAN]] {{\[\[}}0], [1, 2]] output_shape [1, 1, 1]
// CHECK: %[[OUT:.*]] = memref.alloc() : memref<2x4x32xf32>
// CHECK: scf.for %[[I:.*]] = %c0 to %c2 step %c1 {
// CHECK-NEXT: scf.for %[[J:.*]] = %c0 to %c4 step %c1 {
// CHECK: memref.store %{{.*}}, %[[MEAN]][%c0, %c0]
// CHECK: scf.for %[[K:.*]] = %c0 to %c32
// CHECK: memref.load %[[VIEW]][%c0, %c0, %c0]
// CHECK: memref.load %{{.*}}[%[[K]]] : memref<32xf32>
// CHECK: memref.store %{{.*}}, %[[OUT]][%[[I]], %[[J]], %[[K]]]
// CHECK-NOT: scf.for
// CHECK: "test.use"(%[[OUT]])
func.func @center_rows(%x: memref<2x4x32xf32>, %scale: memref<32xf32>) {
  %zero = arith.constant 0.0 : f32
  %mean = memref.alloc() : memref<2x4xf32>
  linalg.fill ins(%zero : f32) outs(%mean : memref<2x4xf32>)
  linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, j, k)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x : memref<2x4x32xf32>) outs(%mean : memref<2x4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  }
  %view = memref.expand_shape %mean [[0], [1, 2]] output_shape [2, 4, 1] : memref<2x4xf32> into memref<2x4x1xf32>
  %out = memref.alloc() : memref<2x4x32xf32>
  linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, j, k)>, affine_map<(i, j, k) -> (i, j, 0)>, affine_map<(i, j, k) -> (k)>, affine_map<(i, j, k) -> (i, j, k)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %view, %scale : memref<2x4x32xf32>, memref<2x4x1xf32>, memref<32xf32>) outs(%out : memref<2x4x32xf32>) {
  ^bb0(%a: f32, %m: f32, %s: f32, %o: f32):
    %c = arith.subf %a, %m : f32
    %r = arith.mulf %c, %s : f32
    linalg.yield %r : f32
  }
  "test.use"(%out) : (memref<2x4x32xf32>) -> ()
  return
}

// -----

// Not fused: the second nest reads the first one's buffer across rows (a
// transpose), so its row i needs every row of the first nest.
// CHECK-LABEL: func.func @transposed_read
// CHECK: scf.for %{{.*}} = %c0 to %c16
// CHECK: }
// CHECK: }
// CHECK: scf.for %{{.*}} = %c0 to %c16
func.func @transposed_read(%x: memref<16x16xf32>, %y: memref<16x16xf32>) {
  %t = memref.alloc() : memref<16x16xf32>
  linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i, k)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<16x16xf32>) outs(%t : memref<16x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %e = math.exp %a : f32
    linalg.yield %e : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i, k) -> (k, i)>, affine_map<(i, k) -> (i, k)>], iterator_types = ["parallel", "parallel"]}
      ins(%t : memref<16x16xf32>) outs(%y : memref<16x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  }
  memref.dealloc %t : memref<16x16xf32>
  return
}

// -----

// Not fused: the first nest writes a buffer of the entry point, and the
// second reads other buffers of the entry point (the weight may be the
// written buffer itself, updated in place, or overlap it).
// CHECK-LABEL: func.func @external_write
// CHECK: scf.for %{{.*}} = %c0 to %c4
// CHECK: }
// CHECK: }
// CHECK: scf.for %{{.*}} = %c0 to %c4
func.func @external_write(%x: memref<4x8xf32>, %w: memref<8xf32>, %y: memref<4x8xf32>, %z: memref<4x8xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i, k)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<4x8xf32>) outs(%y : memref<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %d = arith.addf %a, %a : f32
    linalg.yield %d : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (k)>, affine_map<(i, k) -> (i, k)>], iterator_types = ["parallel", "parallel"]}
      ins(%y, %w : memref<4x8xf32>, memref<8xf32>) outs(%z : memref<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  }
  return
}

// -----

// Not fused: a call between the nests (it may read or write anything);
// nests over different numbers of rows; a read through a view other than
// a keepdims expand_shape (a transpose: row i of the view is column i).
// CHECK-LABEL: func.func @barriers
// CHECK: scf.for %{{.*}} = %c0 to %c4
// CHECK: call @opaque
// CHECK: scf.for %{{.*}} = %c0 to %c4
// CHECK: scf.for %{{.*}} = %c0 to %c8
// CHECK: }
// CHECK: }
// CHECK: scf.for %{{.*}} = %c0 to %c2
// CHECK-LABEL: func.func @transposed_view
// CHECK: scf.for %{{.*}} = %c0 to %c8
// CHECK: }
// CHECK: }
// CHECK: memref.transpose
// CHECK: scf.for %{{.*}} = %c0 to %c8
func.func private @opaque(memref<4x8xf32>)
func.func @barriers(%x: memref<4x8xf32>, %y: memref<4x8xf32>, %z: memref<2x8xf32>) {
  %t = memref.alloc() : memref<4x8xf32>
  linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i, k)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<4x8xf32>) outs(%t : memref<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  }
  func.call @opaque(%t) : (memref<4x8xf32>) -> ()
  linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i, k)>], iterator_types = ["parallel", "parallel"]}
      ins(%t : memref<4x8xf32>) outs(%y : memref<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  }
  %u = memref.alloc() : memref<2x8xf32>
  linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i, k)>], iterator_types = ["parallel", "parallel"]}
      ins(%z : memref<2x8xf32>) outs(%u : memref<2x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  }
  "test.use"(%u) : (memref<2x8xf32>) -> ()
  return
}
func.func @transposed_view(%x: memref<8x8xf32>, %y: memref<8x8xf32>) {
  %t = memref.alloc() : memref<8x8xf32>
  linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i, k)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<8x8xf32>) outs(%t : memref<8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  }
  %v = memref.transpose %t (i, j) -> (j, i) : memref<8x8xf32> to memref<8x8xf32, strided<[1, 8]>>
  linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i, k)>], iterator_types = ["parallel", "parallel"]}
      ins(%v : memref<8x8xf32, strided<[1, 8]>>) outs(%y : memref<8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  }
  memref.dealloc %t : memref<8x8xf32>
  return
}

// -----

// A LayerNorm backward's column sums (dscale): the zero fill of the sum
// (another trip count, and independent of the row nest) moves before it;
// the column sum joins the row nest (both are over [16, 32]: fused at
// depth 2), since no other nest of the group touches its buffer (its rows
// still add in order). A third nest reading the sum needs every row
// first: it stays out.
// CHECK-LABEL: func.func @column_sum
// CHECK: %[[T:.*]] = memref.alloc() : memref<16x32xf32>
// CHECK: %[[COL:.*]] = memref.alloc() : memref<32xf32>
// CHECK: scf.for %[[K0:.*]] = %c0 to %c32 step %c1 {
// CHECK-NEXT: memref.store %{{.*}}, %[[COL]][%[[K0]]]
// CHECK-NEXT: }
// CHECK-NEXT: scf.for %[[I:.*]] = %c0 to %c16 step %c1 {
// CHECK-NEXT: scf.for %[[K:.*]] = %c0 to %c32
// CHECK: memref.store %{{.*}}, %[[T]][%[[I]], %[[K]]]
// CHECK-NEXT: memref.load %[[T]][%[[I]], %[[K]]]
// CHECK-NEXT: memref.load %[[COL]][%[[K]]]
// CHECK-NEXT: arith.addf
// CHECK-NEXT: memref.store %{{.*}}, %[[COL]][%[[K]]]
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: memref.alloc
// CHECK-NEXT: scf.for %{{.*}} = %c0 to %c16
// CHECK: memref.load %[[COL]]
func.func @column_sum(%g: memref<16x32xf32>, %x: memref<16x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %t = memref.alloc() : memref<16x32xf32>
  linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i, k)>], iterator_types = ["parallel", "parallel"]}
      ins(%g, %x : memref<16x32xf32>, memref<16x32xf32>) outs(%t : memref<16x32xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  }
  %col = memref.alloc() : memref<32xf32>
  linalg.fill ins(%zero : f32) outs(%col : memref<32xf32>)
  linalg.reduce ins(%t : memref<16x32xf32>) outs(%col : memref<32xf32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %s = arith.addf %acc, %in : f32
      linalg.yield %s : f32
    }
  %u = memref.alloc() : memref<16x32xf32>
  linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (k)>, affine_map<(i, k) -> (i, k)>], iterator_types = ["parallel", "parallel"]}
      ins(%t, %col : memref<16x32xf32>, memref<32xf32>) outs(%u : memref<16x32xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %d = arith.subf %a, %c : f32
    linalg.yield %d : f32
  }
  "test.use"(%u) : (memref<16x32xf32>) -> ()
  return
}

// -----

// Row temporaries: %t, written and read element by element in the nest
// fused over both loops and nowhere else, becomes one element (1x1, index
// 0). %kept is used
// after the nest and %first is read at row 0 by a nest that cannot join
// (every row of it reads another iteration's row): both stay whole.
// CHECK-LABEL: func.func @row_temporaries
// CHECK-DAG: %[[T:.*]] = memref.alloc() : memref<1x1xf32>
// CHECK-DAG: %[[KEPT:.*]] = memref.alloc() : memref<4x32xf32>
// CHECK-DAG: %[[FIRST:.*]] = memref.alloc() : memref<4x32xf32>
// CHECK: scf.for %[[I:.*]] = %c0 to %c4 step %c1 {
// CHECK: memref.store %{{.*}}, %[[T]][%c0, %c0]
// CHECK: memref.load %[[T]][%c0, %c0]
// CHECK: memref.store %{{.*}}, %[[KEPT]][%[[I]], %{{.*}}]
// CHECK: memref.store %{{.*}}, %[[FIRST]][%[[I]], %{{.*}}]
// CHECK: scf.for
// CHECK: memref.load %[[FIRST]][%c0, %{{.*}}]
// CHECK: memref.dealloc %[[T]]
// CHECK: "test.use"(%[[KEPT]], %{{.*}})
func.func @row_temporaries(%x: memref<4x32xf32>) {
  %two = arith.constant 2.0 : f32
  %t = memref.alloc() : memref<4x32xf32>
  linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i, k)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<4x32xf32>) outs(%t : memref<4x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %two : f32
    linalg.yield %m : f32
  }
  %kept = memref.alloc() : memref<4x32xf32>
  %first = memref.alloc() : memref<4x32xf32>
  linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i, k)>], iterator_types = ["parallel", "parallel"]}
      ins(%t : memref<4x32xf32>) outs(%kept, %first : memref<4x32xf32>, memref<4x32xf32>) {
  ^bb0(%a: f32, %o: f32, %p: f32):
    %s = arith.addf %a, %two : f32
    linalg.yield %s, %a : f32, f32
  }
  memref.dealloc %t : memref<4x32xf32>
  %row0 = memref.alloc() : memref<4x32xf32>
  linalg.generic {indexing_maps = [affine_map<(i, k) -> (0, k)>, affine_map<(i, k) -> (i, k)>], iterator_types = ["parallel", "parallel"]}
      ins(%first : memref<4x32xf32>) outs(%row0 : memref<4x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  }
  memref.dealloc %first : memref<4x32xf32>
  "test.use"(%kept, %row0) : (memref<4x32xf32>, memref<4x32xf32>) -> ()
  return
}

// -----

// Row temporaries in a nest that is not perfectly nested (a member joined
// at depth 1 after others at depth 2): %t, accessed only inside the first
// inner loops, shrinks over all three of them (1x1x1); %u, written in the
// first j loop and read in the second, shares only the i loop with all
// its accesses: it keeps its rows (1x8x32).
// CHECK-LABEL: func.func @sibling_loops
// CHECK-DAG: %[[T:.*]] = memref.alloc() : memref<1x1x1xf32>
// CHECK-DAG: %[[U:.*]] = memref.alloc() : memref<1x8x32xf32>
// CHECK: scf.for %[[I:.*]] = %c0 to %c4 step %c1 {
// CHECK: scf.for %[[J:.*]] = %c0 to %c8 step %c1 {
// CHECK: memref.store %{{.*}}, %[[T]][%c0, %c0, %c0]
// CHECK: memref.load %[[T]][%c0, %c0, %c0]
// CHECK: memref.store %{{.*}}, %[[U]][%c0, %[[J]], %{{.*}}]
// CHECK: scf.for %[[J2:.*]] = %c0 to %c8 step %c1 {
// CHECK: memref.load %[[U]][%c0, %[[J2]], %{{.*}}]
func.func @sibling_loops(%x: memref<4x8x32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %t = memref.alloc() : memref<4x8x32xf32>
  %u = memref.alloc() : memref<4x8x32xf32>
  %out = memref.alloc() : memref<4x8x32xf32>
  scf.for %i = %c0 to %c4 step %c1 {
    scf.for %j = %c0 to %c8 step %c1 {
      scf.for %k = %c0 to %c32 step %c1 {
        %v = memref.load %x[%i, %j, %k] : memref<4x8x32xf32>
        memref.store %v, %t[%i, %j, %k] : memref<4x8x32xf32>
        %w = memref.load %t[%i, %j, %k] : memref<4x8x32xf32>
        %d = arith.addf %w, %w : f32
        memref.store %d, %u[%i, %j, %k] : memref<4x8x32xf32>
      }
    }
    scf.for %j2 = %c0 to %c8 step %c1 {
      scf.for %k = %c0 to %c32 step %c1 {
        %w = memref.load %u[%i, %j2, %k] : memref<4x8x32xf32>
        memref.store %w, %out[%i, %j2, %k] : memref<4x8x32xf32>
      }
    }
  }
  memref.dealloc %t : memref<4x8x32xf32>
  memref.dealloc %u : memref<4x8x32xf32>
  "test.use"(%out) : (memref<4x8x32xf32>) -> ()
  return
}
