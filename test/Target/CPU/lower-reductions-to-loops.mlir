// RUN: pipedream-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(cpu-lower-reductions-to-loops),canonicalize,cse)' | FileCheck %s
// RUN: pipedream-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(cpu-lower-reductions-to-loops{reassociate=false}),canonicalize,cse)' | FileCheck %s --check-prefix=ORDER

// A row sum of 40: loaded once, 16 lanes over the first 32 steps, the lanes
// added pairwise, the last 8 steps in order, stored once.
// CHECK-LABEL: func.func @row_sum
// CHECK-DAG: %[[NEG0:.*]] = arith.constant -0.000000e+00 : f32
// CHECK-DAG: %[[C16:.*]] = arith.constant 16 : index
// CHECK-DAG: %[[C32:.*]] = arith.constant 32 : index
// CHECK-DAG: %[[C40:.*]] = arith.constant 40 : index
// CHECK: scf.for %[[I:.*]] =
// CHECK: %[[INIT:.*]] = memref.load %[[Y:.*]][%[[I]]]
// CHECK: %[[L:.*]]:16 = scf.for %{{.*}} = %{{.*}} to %[[C32]] step %[[C16]] iter_args(%{{.*}} = %[[INIT]], %{{.*}} = %[[NEG0]],
// CHECK-COUNT-16: arith.addf %arg
// CHECK: scf.yield
// CHECK: %[[P0:.*]] = arith.addf %[[L]]#0, %[[L]]#1
// CHECK-COUNT-14: arith.addf
// CHECK: %[[R:.*]] = scf.for %{{.*}} = %[[C32]] to %[[C40]] step %{{.*}} iter_args(%[[ACC:.*]] = %{{.*}})
// CHECK: %[[S:.*]] = arith.addf %[[ACC]], %{{.*}} : f32
// CHECK-NEXT: scf.yield %[[S]]
// CHECK: memref.store %[[R]], %[[Y]][%[[I]]]
// CHECK-NOT: memref.store
// ORDER-LABEL: func.func @row_sum
// ORDER-NOT: :16 =
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
// CHECK: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: scf.for
// CHECK: %{{.*}}:16 = scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %[[ONE]],
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
// CHECK: :16 = scf.for
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
