// RUN: pipedream-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(cpu-split-empty-tensors))' -verify-diagnostics | FileCheck %s
// The pass cannot fail (every tensor.empty can be cloned before its user);
// -verify-diagnostics checks it reports nothing.

// One tensor.empty (as CSE leaves it) used by three destinations: each
// use gets its own op, placed right before its user.
// CHECK-LABEL: func.func @shared
// CHECK-NEXT:    %[[E0:.*]] = tensor.empty() : tensor<4x16xf32>
// CHECK-NEXT:    %[[A:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E0]] : tensor<4x16xf32>)
// CHECK-NEXT:    %[[E1:.*]] = tensor.empty() : tensor<4x16xf32>
// CHECK-NEXT:    %[[B:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E1]] : tensor<4x16xf32>)
// CHECK-NEXT:    %[[E2:.*]] = tensor.empty() : tensor<4x16xf32>
// CHECK-NEXT:    %[[C:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E2]] : tensor<4x16xf32>)
// CHECK-NEXT:    return %[[A]], %[[B]], %[[C]]
func.func @shared(%x: f32, %y: f32, %z: f32)
    -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>) {
  %e = tensor.empty() : tensor<4x16xf32>
  %a = linalg.fill ins(%x : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %b = linalg.fill ins(%y : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %a, %b, %c : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// Dynamic sizes go with the clone; a use inside a loop gets its clone
// inside the loop body; one operation using the value twice gets two.
// CHECK-LABEL: func.func @dynamic_and_nested
// CHECK-SAME:      (%[[N:[a-z0-9]+]]: index
// CHECK-NEXT:    %[[E0:.*]] = tensor.empty(%[[N]]) : tensor<?xf32>
// CHECK-NEXT:    linalg.fill ins(%{{.*}} : f32) outs(%[[E0]] : tensor<?xf32>)
// CHECK-NEXT:    scf.for
// CHECK-NEXT:      %[[E1:.*]] = tensor.empty(%[[N]]) : tensor<?xf32>
// CHECK-NEXT:      linalg.fill ins(%{{.*}} : f32) outs(%[[E1]] : tensor<?xf32>)
// CHECK:         %[[E2:.*]] = tensor.empty(%[[N]]) : tensor<?xf32>
// CHECK-NEXT:    %[[E3:.*]] = tensor.empty(%[[N]]) : tensor<?xf32>
// CHECK-NEXT:    linalg.generic
// CHECK-SAME:      ins(%[[E2]] : tensor<?xf32>) outs(%[[E3]] : tensor<?xf32>)
// CHECK-NOT:     tensor.empty
// CHECK:         return
#map = affine_map<(d0) -> (d0)>
func.func @dynamic_and_nested(%n: index, %x: f32, %lb: index, %ub: index,
                              %s: index) -> (tensor<?xf32>, tensor<?xf32>) {
  %e = tensor.empty(%n) : tensor<?xf32>
  %f = linalg.fill ins(%x : f32) outs(%e : tensor<?xf32>) -> tensor<?xf32>
  %r = scf.for %i = %lb to %ub step %s iter_args(%acc = %f) -> tensor<?xf32> {
    %g = linalg.fill ins(%x : f32) outs(%e : tensor<?xf32>) -> tensor<?xf32>
    scf.yield %g : tensor<?xf32>
  }
  %h = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%e : tensor<?xf32>) outs(%e : tensor<?xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<?xf32>
  return %r, %h : tensor<?xf32>, tensor<?xf32>
}

// -----

// A single use and an unused op are left alone.
// CHECK-LABEL: func.func @single
// CHECK-COUNT-2: tensor.empty
// CHECK-NOT:     tensor.empty
func.func @single(%x: f32) -> tensor<8xf32> {
  %unused = tensor.empty() : tensor<8xf32>
  %e = tensor.empty() : tensor<8xf32>
  %a = linalg.fill ins(%x : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  return %a : tensor<8xf32>
}

// -----

// One zero fill (as CSE leaves it) accumulated into by two matmuls and read
// by an add: each matmul gets a fill of its own (with its own empty) right
// before it; the read keeps the original.
// CHECK-LABEL: func.func @shared_fill
// CHECK-SAME:      (%[[A:[a-z0-9]+]]: tensor<4x8xf32>, %[[B:[a-z0-9]+]]: tensor<8x16xf32>
// CHECK:         %[[E:.*]] = tensor.empty() : tensor<4x16xf32>
// CHECK-NEXT:    %[[Z:.*]] = linalg.fill ins(%[[C0:.*]] : f32) outs(%[[E]] : tensor<4x16xf32>)
// CHECK-NEXT:    %[[E1:.*]] = tensor.empty() : tensor<4x16xf32>
// CHECK-NEXT:    %[[Z1:.*]] = linalg.fill ins(%[[C0]] : f32) outs(%[[E1]] : tensor<4x16xf32>)
// CHECK-NEXT:    %[[M1:.*]] = linalg.matmul ins(%[[A]], %[[B]] : {{.*}}) outs(%[[Z1]] : tensor<4x16xf32>)
// CHECK-NEXT:    %[[E2:.*]] = tensor.empty() : tensor<4x16xf32>
// CHECK-NEXT:    %[[Z2:.*]] = linalg.fill ins(%[[C0]] : f32) outs(%[[E2]] : tensor<4x16xf32>)
// CHECK-NEXT:    %[[M2:.*]] = linalg.matmul ins(%[[A]], %[[B]] : {{.*}}) outs(%[[Z2]] : tensor<4x16xf32>)
// CHECK-NEXT:    %[[E3:.*]] = tensor.empty() : tensor<4x16xf32>
// CHECK-NEXT:    linalg.add ins(%[[M1]], %[[Z]] : {{.*}}) outs(%[[E3]] : tensor<4x16xf32>)
func.func @shared_fill(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>)
    -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %m1 = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  %m2 = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  %s = linalg.add ins(%m1, %z : tensor<4x16xf32>, tensor<4x16xf32>) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %s, %m2 : tensor<4x16xf32>, tensor<4x16xf32>
}
