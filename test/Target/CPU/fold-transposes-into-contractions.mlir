// cpu-fold-transposes-into-contractions: a contraction reads the input of
// the transpose that fed it, through the composed indexing map.
// RUN: pipedream-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(cpu-fold-transposes-into-contractions))' | FileCheck %s

// The backward of x W^T: x @ transpose(W). The matmul becomes a generic
// reading W (32 x 16) as (n, k): a transposed B. The transpose is gone.
// CHECK-DAG: #[[A:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[BT:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[C:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @matmul_transposed_b
// CHECK-SAME: (%[[X:.*]]: tensor<8x16xf32>, %[[W:.*]]: tensor<32x16xf32>)
// CHECK-NOT: linalg.transpose
// CHECK: linalg.generic {indexing_maps = [#[[A]], #[[BT]], #[[C]]], iterator_types = ["parallel", "parallel", "reduction"]}
// CHECK-SAME: ins(%[[X]], %[[W]] : tensor<8x16xf32>, tensor<32x16xf32>)
// CHECK: arith.mulf
// CHECK: arith.addf
func.func @matmul_transposed_b(%x: tensor<8x16xf32>, %w: tensor<32x16xf32>) -> tensor<8x32xf32> {
  %e = tensor.empty() : tensor<16x32xf32>
  %t = linalg.transpose ins(%w : tensor<32x16xf32>) outs(%e : tensor<16x32xf32>) permutation = [1, 0]
  %zero = arith.constant 0.0 : f32
  %o = tensor.empty() : tensor<8x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%o : tensor<8x32xf32>) -> tensor<8x32xf32>
  %r = linalg.matmul ins(%x, %t : tensor<8x16xf32>, tensor<16x32xf32>) outs(%f : tensor<8x32xf32>) -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// -----

// A batch_matmul whose A is a [0, 2, 1] transpose of a 4 x 16 x 8 tensor:
// element (b, m, k) of A is src[b, k, m].
// CHECK-DAG: #[[SRC:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d3, d1)>
// CHECK-DAG: #[[B:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @batch_matmul_transposed_a
// CHECK-SAME: (%[[S:.*]]: tensor<4x16x8xf32>, %[[Y:.*]]: tensor<4x16x5xf32>
// CHECK-NOT: linalg.transpose
// CHECK: linalg.generic {indexing_maps = [#[[SRC]], #[[B]], #[[OUT]]]
// CHECK-SAME: ins(%[[S]], %[[Y]] : tensor<4x16x8xf32>, tensor<4x16x5xf32>)
func.func @batch_matmul_transposed_a(%s: tensor<4x16x8xf32>, %y: tensor<4x16x5xf32>, %init: tensor<4x8x5xf32>) -> tensor<4x8x5xf32> {
  %e = tensor.empty() : tensor<4x8x16xf32>
  %t = linalg.transpose ins(%s : tensor<4x16x8xf32>) outs(%e : tensor<4x8x16xf32>) permutation = [0, 2, 1]
  %r = linalg.batch_matmul ins(%t, %y : tensor<4x8x16xf32>, tensor<4x16x5xf32>) outs(%init : tensor<4x8x5xf32>) -> tensor<4x8x5xf32>
  return %r : tensor<4x8x5xf32>
}

// -----

// Both operands transposed, the contraction already a generic (its maps
// compose with the permutations), and a transpose with another user: it
// stays for that user.
// CHECK-DAG: #[[AT:.*]] = affine_map<(d0, d1, d2) -> (d2, d0)>
// CHECK-DAG: #[[BT2:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-LABEL: func.func @generic_both_transposed
// CHECK-SAME: (%[[P:.*]]: tensor<16x8xf32>, %[[Q:.*]]: tensor<32x16xf32>
// CHECK: %[[KEPT:.*]] = linalg.transpose ins(%[[P]] : tensor<16x8xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[AT]], #[[BT2]], {{.*}}]
// CHECK-SAME: ins(%[[P]], %[[Q]] : tensor<16x8xf32>, tensor<32x16xf32>)
// CHECK: return %{{.*}}, %[[KEPT]]
func.func @generic_both_transposed(%p: tensor<16x8xf32>, %q: tensor<32x16xf32>, %init: tensor<8x32xf32>) -> (tensor<8x32xf32>, tensor<8x16xf32>) {
  %ea = tensor.empty() : tensor<8x16xf32>
  %a = linalg.transpose ins(%p : tensor<16x8xf32>) outs(%ea : tensor<8x16xf32>) permutation = [1, 0]
  %eb = tensor.empty() : tensor<16x32xf32>
  %b = linalg.transpose ins(%q : tensor<32x16xf32>) outs(%eb : tensor<16x32xf32>) permutation = [1, 0]
  %r = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<8x16xf32>, tensor<16x32xf32>) outs(%init : tensor<8x32xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<8x32xf32>
  return %r, %a : tensor<8x32xf32>, tensor<8x16xf32>
}
