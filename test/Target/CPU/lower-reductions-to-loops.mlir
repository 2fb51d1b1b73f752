// RUN: pipedream-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(cpu-lower-reductions-to-loops),canonicalize,cse)' | FileCheck %s
// RUN: pipedream-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(cpu-lower-reductions-to-loops{vectorize=false}),canonicalize,cse)' | FileCheck %s --check-prefix=SCALAR
// RUN: pipedream-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(cpu-lower-reductions-to-loops{reassociate=false}),canonicalize,cse)' | FileCheck %s --check-prefix=ORDER

// A row sum of 40: loaded once, 16 lanes over the first 32 steps, the lanes
// added pairwise, the last 8 steps in order, stored once. The lanes are
// the elements of one vector<16xf32> accumulator (vector loads), extracted
// after the loop.
// CHECK-LABEL: func.func @row_sum
// CHECK-DAG: %[[NEG0:.*]] = arith.constant dense<-0.000000e+00> : vector<16xf32>
// CHECK-DAG: %[[C16:.*]] = arith.constant 16 : index
// CHECK-DAG: %[[C32:.*]] = arith.constant 32 : index
// CHECK-DAG: %[[C40:.*]] = arith.constant 40 : index
// CHECK: scf.for %[[I:.*]] =
// CHECK: %[[INIT:.*]] = memref.load %[[Y:.*]][%[[I]]]
// CHECK: %[[V0:.*]] = vector.insert %[[INIT]], %[[NEG0]] [0] : f32 into vector<16xf32>
// CHECK: %[[L:.*]] = scf.for %[[K:.*]] = %{{.*}} to %[[C32]] step %[[C16]] iter_args(%[[VACC:.*]] = %[[V0]]) -> (vector<16xf32>)
// CHECK-NEXT: %[[XV:.*]] = vector.load %[[X:.*]][%[[I]], %[[K]]] : memref<4x40xf32>, vector<16xf32>
// CHECK-NEXT: %[[SV:.*]] = arith.addf %[[VACC]], %[[XV]] : vector<16xf32>
// CHECK-NEXT: scf.yield %[[SV]]
// CHECK: %[[E0:.*]] = vector.extract %[[L]][0]
// CHECK-NEXT: %[[E1:.*]] = vector.extract %[[L]][1]
// CHECK-COUNT-14: vector.extract %[[L]]
// CHECK-NEXT: %[[P0:.*]] = arith.addf %[[E0]], %[[E1]]
// CHECK-COUNT-14: arith.addf
// CHECK: %[[R:.*]] = scf.for %{{.*}} = %[[C32]] to %[[C40]] step %{{.*}} iter_args(%[[ACC:.*]] = %{{.*}})
// CHECK: %[[S:.*]] = arith.addf %[[ACC]], %{{.*}} : f32
// CHECK-NEXT: scf.yield %[[S]]
// CHECK: memref.store %[[R]], %[[Y]][%[[I]]]
// CHECK-NOT: memref.store
// Without `vectorize`: 16 scalar chains, the same order.
// SCALAR-LABEL: func.func @row_sum
// SCALAR-DAG: %[[NEG0:.*]] = arith.constant -0.000000e+00 : f32
// SCALAR-DAG: %[[C16:.*]] = arith.constant 16 : index
// SCALAR-DAG: %[[C32:.*]] = arith.constant 32 : index
// SCALAR-DAG: %[[C40:.*]] = arith.constant 40 : index
// SCALAR: scf.for %[[I:.*]] =
// SCALAR: %[[INIT:.*]] = memref.load %[[Y:.*]][%[[I]]]
// SCALAR: %[[L:.*]]:16 = scf.for %{{.*}} = %{{.*}} to %[[C32]] step %[[C16]] iter_args(%{{.*}} = %[[INIT]], %{{.*}} = %[[NEG0]],
// SCALAR-COUNT-16: arith.addf %arg
// SCALAR: scf.yield
// SCALAR: %[[P0:.*]] = arith.addf %[[L]]#0, %[[L]]#1
// SCALAR-COUNT-14: arith.addf
// SCALAR: %[[R:.*]] = scf.for %{{.*}} = %[[C32]] to %[[C40]] step %{{.*}} iter_args(%[[ACC:.*]] = %{{.*}})
// SCALAR: %[[S:.*]] = arith.addf %[[ACC]], %{{.*}} : f32
// SCALAR-NEXT: scf.yield %[[S]]
// SCALAR: memref.store %[[R]], %[[Y]][%[[I]]]
// SCALAR-NOT: memref.store
// ORDER-LABEL: func.func @row_sum
// ORDER-NOT: :16 =
// ORDER-NOT: vector
// ORDER: memref.load %{{.*}} : memref<4xf32>
// ORDER: scf.for {{.*}} iter_args
// ORDER-NOT: memref.store
// ORDER: arith.addf
// ORDER: scf.yield
// ORDER: memref.store
func.func @row_sum(%x: memref<4x40xf32>, %y: memref<4xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<4x40xf32>) outs(%y : memref<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A product's other lanes start at 1.
// CHECK-LABEL: func.func @row_product
// CHECK: %[[ONE:.*]] = arith.constant dense<1.000000e+00> : vector<16xf32>
// CHECK: scf.for
// CHECK: %[[V0:.*]] = vector.insert %{{.*}}, %[[ONE]] [0]
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[V0]]) -> (vector<16xf32>)
// CHECK: arith.mulf %{{.*}} : vector<16xf32>
// SCALAR-LABEL: func.func @row_product
// SCALAR: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// SCALAR: scf.for
// SCALAR: %{{.*}}:16 = scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %[[ONE]],
func.func @row_product(%x: memref<2x64xf32>, %y: memref<2xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<2x64xf32>) outs(%y : memref<2xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %p = arith.mulf %acc, %a : f32
    linalg.yield %p : f32
  }
  return
}

// -----

// A max is exact in any order: carried in a register, not split. A row of
// 20 (fewer than 2 x 16 steps) is not split either.
// CHECK-LABEL: func.func @row_max
// CHECK-NOT: :16 =
// CHECK: %[[INIT:.*]] = memref.load
// CHECK: %[[R:.*]] = scf.for {{.*}} iter_args(%[[ACC:.*]] = %[[INIT]]) -> (f32)
// CHECK: arith.maximumf %[[ACC]]
// CHECK: memref.store %[[R]]
// CHECK-LABEL: func.func @short_sum
// CHECK-NOT: :16 =
// CHECK: scf.for {{.*}} iter_args
func.func @row_max(%x: memref<3x100xf32>, %y: memref<3xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<3x100xf32>) outs(%y : memref<3xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.maximumf %acc, %a : f32
    linalg.yield %m : f32
  }
  return
}
func.func @short_sum(%x: memref<3x20xf32>, %y: memref<3xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<3x20xf32>) outs(%y : memref<3xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Two reduction dimensions: the element is carried through both loops
// (loaded before the outer one, stored after it), the inner one split.
// CHECK-LABEL: func.func @sum_last_two
// CHECK: scf.for %[[I:.*]] =
// CHECK-NEXT: %[[INIT:.*]] = memref.load %{{.*}}[%[[I]]]
// CHECK-NEXT: %[[R:.*]] = scf.for {{.*}} iter_args(%{{.*}} = %[[INIT]]) -> (f32)
// CHECK: scf.for {{.*}} -> (vector<16xf32>)
// CHECK: memref.store %[[R]], %{{.*}}[%[[I]]]
// CHECK-NOT: memref.store
func.func @sum_last_two(%x: memref<2x5x48xf32>, %y: memref<2xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, j, k)>, affine_map<(i, j, k) -> (i)>], iterator_types = ["parallel", "reduction", "reduction"]}
      ins(%x : memref<2x5x48xf32>) outs(%y : memref<2xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A variance against a mean per row: the mean (not depending on the
// reduction's step) is loaded once per step and broadcast, the difference
// and square are vector ops.
// CHECK-LABEL: func.func @row_variance
// CHECK: scf.for %[[I:.*]] =
// CHECK: scf.for %[[K:.*]] = {{.*}} iter_args(%[[VACC:.*]] = %{{.*}}) -> (vector<16xf32>)
// CHECK-DAG: %[[XV:.*]] = vector.load %{{.*}}[%[[I]], %[[K]]] : memref<2x64xf32>, vector<16xf32>
// CHECK-DAG: %[[M:.*]] = memref.load %{{.*}}[%[[I]]] : memref<2xf32>
// CHECK: %[[MV:.*]] = vector.broadcast %[[M]] : f32 to vector<16xf32>
// CHECK: %[[D:.*]] = arith.subf %[[XV]], %[[MV]] : vector<16xf32>
// CHECK: %[[D2:.*]] = arith.mulf %[[D]], %[[D]] : vector<16xf32>
// CHECK: arith.addf %[[VACC]], %[[D2]] : vector<16xf32>
func.func @row_variance(%x: memref<2x64xf32>, %m: memref<2xf32>, %y: memref<2xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i)>, affine_map<(i, k) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%x, %m : memref<2x64xf32>, memref<2xf32>) outs(%y : memref<2xf32>) {
  ^bb0(%a: f32, %mean: f32, %acc: f32):
    %d = arith.subf %a, %mean : f32
    %d2 = arith.mulf %d, %d : f32
    %s = arith.addf %acc, %d2 : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Bodies that are not contiguous vectors keep the 16 scalar lanes: a
// reduction along a strided (column) view, and a body that uses the step's
// index as a value.
// CHECK-LABEL: func.func @strided_rows
// CHECK-NOT: vector
// CHECK: :16 = scf.for
// CHECK-LABEL: func.func @index_weighted
// CHECK-NOT: vector
// CHECK: :16 = scf.for
func.func @strided_rows(%x: memref<64x4xf32>, %y: memref<4xf32>) {
  %t = memref.transpose %x (i, k) -> (k, i) : memref<64x4xf32> to memref<4x64xf32, strided<[1, 4]>>
  linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%t : memref<4x64xf32, strided<[1, 4]>>) outs(%y : memref<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  }
  return
}
func.func @index_weighted(%x: memref<2x64xf32>, %y: memref<2xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<2x64xf32>) outs(%y : memref<2xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %k = linalg.index 1 : index
    %ki = arith.index_cast %k : index to i32
    %kf = arith.sitofp %ki : i32 to f32
    %w = arith.mulf %a, %kf : f32
    %s = arith.addf %acc, %w : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A per-channel sum over N, H and W of [N, C, H, W] (BatchNorm's statistics,
// a convolution bias's gradient): loops N, C, H, W, the parallel C inside
// the reduction N. The C loop moves outside (C, N, H, W: H and W stay
// innermost, each channel's terms in the same order), so the sum keeps its
// accumulator in registers: loaded once per channel, carried through N and
// H, 16 lanes along W, stored once. (Before, every term loaded and stored
// the channel's sum: a small CNN's step spent 10% in these.)
// CHECK-LABEL: func.func @channel_sum
// CHECK: scf.for %[[C:.*]] = %{{.*}} to %{{.*}} step
// CHECK-NEXT: %[[INIT:.*]] = memref.load %[[Y:.*]][%[[C]]] : memref<3xf32>
// CHECK-NEXT: scf.for %[[N:.*]] = %{{.*}} iter_args(%{{.*}} = %[[INIT]]) -> (f32)
// CHECK-NEXT: scf.for %[[H:.*]] = %{{.*}} iter_args
// CHECK: vector.load %{{.*}}[%[[N]], %[[C]], %[[H]], %{{.*}}] : memref<2x3x4x40xf32>, vector<16xf32>
// CHECK: memref.store %{{.*}}, %[[Y]][%[[C]]] : memref<3xf32>
// CHECK-NOT: memref.store
func.func @channel_sum(%x: memref<2x3x4x40xf32>, %y: memref<3xf32>) {
  linalg.reduce ins(%x : memref<2x3x4x40xf32>) outs(%y : memref<3xf32>) dimensions = [0, 2, 3]
    (%in: f32, %init: f32) {
      %s = arith.addf %in, %init : f32
      linalg.yield %s : f32
    }
  return
}
