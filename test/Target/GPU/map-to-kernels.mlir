// RUN: pipedream-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(cuda-map-to-kernels,canonicalize))' | FileCheck %s

// Elementwise 8x100: 800 points flattened over 4 blocks of 256 threads,
// with a bounds guard; thread i handles point i (row-major).
// CHECK-LABEL: func.func @elementwise
// CHECK-DAG: %[[GRID:.*]] = arith.constant 4 : index
// CHECK-DAG: %[[BLOCK:.*]] = arith.constant 256 : index
// CHECK: gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[GRID]], %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[BLOCK]],
// CHECK: %[[SCALED:.*]] = arith.muli %[[BX]], %{{.*}} : index
// CHECK: %[[ID:.*]] = arith.addi %[[SCALED]], %[[TX]] : index
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[ID]], %{{.*}} : index
// CHECK: scf.if %[[IN]] {
// CHECK: %[[COL:.*]] = arith.remui %[[ID]], %{{.*}} : index
// CHECK: %[[ROW:.*]] = arith.divui %[[ID]], %{{.*}} : index
// CHECK: memref.load %{{.*}}[%[[ROW]], %[[COL]]] : memref<8x100xf32>
// CHECK: math.exp
// CHECK: memref.store %{{.*}}, %{{.*}}[%[[ROW]], %[[COL]]] : memref<8x100xf32>
// CHECK-NOT: gpu.launch
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @elementwise(%a: memref<8x100xf32>, %b: memref<8x100xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<8x100xf32>) outs(%b : memref<8x100xf32>) {
  ^bb0(%x: f32, %y: f32):
    %e = math.exp %x : f32
    linalg.yield %e : f32
  }
  return
}

// -----

// A row sum after a zero fill: one block per row (16 rows), 64 threads
// striding over the 50 columns, gpu.all_reduce, thread 0 stores the fill
// value combined with the block's sum. No fill kernel is left.
// CHECK-LABEL: func.func @row_sum
// CHECK-NOT: linalg.fill
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[ROWS:.*]] = arith.constant 16 : index
// CHECK-DAG: %[[THREADS:.*]] = arith.constant 64 : index
// CHECK: gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[ROWS]], %{{.*}}, %{{.*}}) threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[THREADS]],
// CHECK: %[[PARTIAL:.*]] = scf.for %[[K:.*]] = %[[TX]] to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32) {
// CHECK:   %[[X:.*]] = memref.load %{{.*}}[%[[BX]], %[[K]]] : memref<16x50xf32>
// CHECK:   %[[SQ:.*]] = arith.mulf %[[X]], %[[X]] : f32
// CHECK:   %[[NEXT:.*]] = arith.addf %[[SQ]], %[[ACC]] : f32
// CHECK:   scf.yield %[[NEXT]] : f32
// CHECK: %[[TOTAL:.*]] = gpu.all_reduce add %[[PARTIAL]] uniform
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[TX]], %{{.*}} : index
// CHECK: scf.if %[[FIRST]] {
// CHECK:   %[[OUT:.*]] = arith.addf %[[TOTAL]], %[[ZERO]] : f32
// CHECK:   memref.store %[[OUT]], %{{.*}}[%[[BX]]] : memref<16xf32>
func.func @row_sum(%a: memref<16x50xf32>, %s: memref<16xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%s : memref<16xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%a : memref<16x50xf32>) outs(%s : memref<16xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %sq = arith.mulf %x, %x : f32
    %r = arith.addf %sq, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// linalg.reduce with maximumf (softmax's row max), no fill before it: the
// neutral element is -inf and thread 0 folds in the output's old value.
// CHECK-LABEL: func.func @row_max
// CHECK: %[[NEG_INF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[NEG_INF]]) -> (f32)
// CHECK:   arith.maximumf
// CHECK: %[[TOTAL:.*]] = gpu.all_reduce maximumf %{{.*}} uniform
// CHECK: scf.if
// CHECK:   %[[OLD:.*]] = memref.load %{{.*}} : memref<4x8xf32>
// CHECK:   arith.maximumf %[[TOTAL]], %[[OLD]] : f32
func.func @row_max(%a: memref<4x8x300xf32>, %m: memref<4x8xf32>) {
  linalg.reduce ins(%a : memref<4x8x300xf32>) outs(%m : memref<4x8xf32>) dimensions = [2]
    (%x: f32, %acc: f32) {
      %r = arith.maximumf %x, %acc : f32
      linalg.yield %r : f32
    }
  return
}

// -----

// A fill copied into another buffer (bufferization's copy of a shared
// initial value) becomes a fill of that buffer, then folds into the
// reduction; the unread first buffer disappears.
// CHECK-LABEL: func.func @fill_through_copy
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.copy
// CHECK: gpu.launch
// CHECK: gpu.all_reduce add
// CHECK-NOT: gpu.launch
func.func @fill_through_copy(%a: memref<16x50xf32>, %s: memref<16xf32>) {
  %zero = arith.constant 0.0 : f32
  %tmp = memref.alloc() : memref<16xf32>
  linalg.fill ins(%zero : f32) outs(%tmp : memref<16xf32>)
  memref.copy %tmp, %s : memref<16xf32> to memref<16xf32>
  memref.dealloc %tmp : memref<16xf32>
  linalg.reduce ins(%a : memref<16x50xf32>) outs(%s : memref<16xf32>) dimensions = [1]
    (%x: f32, %acc: f32) {
      %r = arith.addf %x, %acc : f32
      linalg.yield %r : f32
    }
  return
}

// -----

// A reduction whose output is not indexed by every parallel loop is not a
// row reduction (blocks would race): it becomes the flattened parallel loop
// with a sequential reduction loop per thread.
// CHECK-LABEL: func.func @not_a_row_reduction
// CHECK-NOT: gpu.all_reduce
// CHECK: gpu.launch
// CHECK: scf.for
func.func @not_a_row_reduction(%a: memref<16x50xi32>, %s: memref<16xi32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%a : memref<16x50xi32>) outs(%s : memref<16xi32>) {
  ^bb0(%x: i32, %acc: i32):
    %r = arith.addi %x, %acc : i32
    linalg.yield %r : i32
  }
  return
}

// -----

// A copy is a kernel like any other; a 0-d op runs on one thread.
// CHECK-LABEL: func.func @copy_and_scalar
// CHECK-NOT: memref.copy
// CHECK: gpu.launch {{.*}} threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %[[N:.*]], %{{.*}}, %{{.*}})
// CHECK: memref.load %{{.*}} : memref<2x3xf32, strided<[6, 1]>>
// CHECK: gpu.launch blocks(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %[[ONE:.*]], %{{.*}} = %[[ONE]], %{{.*}} = %[[ONE]]) threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %[[ONE]], %{{.*}} = %[[ONE]], %{{.*}} = %[[ONE]])
// CHECK: memref.load %{{.*}}[] : memref<f32>
// CHECK: math.sqrt
func.func @copy_and_scalar(%a: memref<2x6xf32>, %b: memref<2x3xf32>, %s: memref<f32>, %t: memref<f32>) {
  %v = memref.subview %a[0, 0] [2, 3] [1, 1] : memref<2x6xf32> to memref<2x3xf32, strided<[6, 1]>>
  memref.copy %v, %b : memref<2x3xf32, strided<[6, 1]>> to memref<2x3xf32>
  linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>], iterator_types = []}
      ins(%s : memref<f32>) outs(%t : memref<f32>) {
  ^bb0(%x: f32, %y: f32):
    %r = math.sqrt %x : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A host loop whose body reads an index from device memory (the embedding
// gradient's scatter) runs as one single-thread kernel, loop included.
// CHECK-LABEL: func.func @scatter
// CHECK: gpu.launch
// CHECK-NEXT: scf.for
// CHECK: memref.load %{{.*}} : memref<4xindex>
// CHECK: gpu.terminator
// CHECK-NEXT: }
// CHECK-NEXT: return
func.func @scatter(%idx: memref<4xindex>, %src: memref<4x8xf32>, %dst: memref<16x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %row = memref.load %idx[%i] : memref<4xindex>
    %s = memref.subview %src[%i, 0] [1, 8] [1, 1] : memref<4x8xf32> to memref<8xf32, strided<[1], offset: ?>>
    %d = memref.subview %dst[%row, 0] [1, 8] [1, 1] : memref<16x8xf32> to memref<8xf32, strided<[1], offset: ?>>
    linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
        ins(%s : memref<8xf32, strided<[1], offset: ?>>) outs(%d : memref<8xf32, strided<[1], offset: ?>>) {
    ^bb0(%x: f32, %y: f32):
      %r = arith.addf %x, %y : f32
      linalg.yield %r : f32
    }
  }
  return
}
