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

// -----

// Attention's scores Q K^T with heads split out of a fused QKV projection:
// [B, T, H*D] slices -> [B, T, H, D] -> transpose to [B, H, T, D] (K to
// [B, H, D, T]) -> collapse to [B*H, ...] -> batch_matmul -> expand to
// [B, H, T, T]. The batch loop B*H expands into B and H, and both
// transposes fold: the contraction reads the slices of QKV in place (A and
// a transposed B with leading dimension H*D), and no reshape is left.
// CHECK-DAG: #[[Q:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d1, d4)>
// CHECK-DAG: #[[K:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d3, d1, d4)>
// CHECK-DAG: #[[S:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @attention_scores
// CHECK: %[[QS:.*]] = tensor.expand_shape {{.*}} into tensor<2x16x4x8xf32>
// CHECK: %[[KS:.*]] = tensor.expand_shape {{.*}} into tensor<2x16x4x8xf32>
// CHECK-NOT: linalg.transpose
// CHECK-NOT: tensor.collapse_shape
// CHECK: %[[INIT:.*]] = linalg.fill {{.*}} -> tensor<2x4x16x16xf32>
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[Q]], #[[K]], #[[S]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
// CHECK-SAME: ins(%[[QS]], %[[KS]] : tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>) outs(%[[INIT]] : tensor<2x4x16x16xf32>)
// CHECK-NOT: tensor.expand_shape
// CHECK: return %[[R]]
func.func @attention_scores(%qkv: tensor<2x16x96xf32>) -> tensor<2x4x16x16xf32> {
  %zero = arith.constant 0.0 : f32
  %q2 = tensor.extract_slice %qkv[0, 0, 0] [2, 16, 32] [1, 1, 1] : tensor<2x16x96xf32> to tensor<2x16x32xf32>
  %k2 = tensor.extract_slice %qkv[0, 0, 32] [2, 16, 32] [1, 1, 1] : tensor<2x16x96xf32> to tensor<2x16x32xf32>
  %q = tensor.expand_shape %q2 [[0], [1], [2, 3]] output_shape [2, 16, 4, 8] : tensor<2x16x32xf32> into tensor<2x16x4x8xf32>
  %k = tensor.expand_shape %k2 [[0], [1], [2, 3]] output_shape [2, 16, 4, 8] : tensor<2x16x32xf32> into tensor<2x16x4x8xf32>
  %e1 = tensor.empty() : tensor<2x4x16x8xf32>
  %qt = linalg.transpose ins(%q : tensor<2x16x4x8xf32>) outs(%e1 : tensor<2x4x16x8xf32>) permutation = [0, 2, 1, 3]
  %e2 = tensor.empty() : tensor<2x4x8x16xf32>
  %kt = linalg.transpose ins(%k : tensor<2x16x4x8xf32>) outs(%e2 : tensor<2x4x8x16xf32>) permutation = [0, 2, 3, 1]
  %qc = tensor.collapse_shape %qt [[0, 1], [2], [3]] : tensor<2x4x16x8xf32> into tensor<8x16x8xf32>
  %kc = tensor.collapse_shape %kt [[0, 1], [2], [3]] : tensor<2x4x8x16xf32> into tensor<8x8x16xf32>
  %e3 = tensor.empty() : tensor<8x16x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e3 : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %s = linalg.batch_matmul ins(%qc, %kc : tensor<8x16x8xf32>, tensor<8x8x16xf32>) outs(%f : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %r = tensor.expand_shape %s [[0, 1], [2], [3]] output_shape [2, 4, 16, 16] : tensor<8x16x16xf32> into tensor<2x4x16x16xf32>
  return %r : tensor<2x4x16x16xf32>
}

// -----

// Attention's output P V merged back to [B, T, H*D]: batch_matmul ->
// expand to [B, H, T, D] -> transpose to [B, T, H, D] -> collapse. The
// contraction writes [B, T, H, D] itself (output map (b, h, t, d) ->
// (b, t, h, d), a C with leading dimension H*D), zero-filled in that shape;
// P, which is not a reshape of a transpose, is read through an expansion.
// CHECK-DAG: #[[P:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
// CHECK-DAG: #[[V:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d1, d3)>
// CHECK-DAG: #[[O:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d1, d3)>
// CHECK-LABEL: func.func @attention_output
// CHECK-SAME: (%[[PROBS:.*]]: tensor<8x16x16xf32>, %[[VS:.*]]: tensor<2x16x4x8xf32>)
// CHECK-NOT: linalg.transpose
// CHECK: %[[PE:.*]] = tensor.expand_shape %[[PROBS]] {{\[\[}}0, 1], [2], [3]] output_shape [2, 4, 16, 16]
// CHECK: %[[E:.*]] = tensor.empty() : tensor<2x16x4x8xf32>
// CHECK: %[[INIT:.*]] = linalg.fill {{.*}} outs(%[[E]] : tensor<2x16x4x8xf32>)
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[P]], #[[V]], #[[O]]]
// CHECK-SAME: ins(%[[PE]], %[[VS]] : tensor<2x4x16x16xf32>, tensor<2x16x4x8xf32>) outs(%[[INIT]] : tensor<2x16x4x8xf32>)
// CHECK-NOT: linalg.transpose
// CHECK: tensor.collapse_shape %[[R]] {{\[\[}}0], [1], [2, 3]] : tensor<2x16x4x8xf32> into tensor<2x16x32xf32>
func.func @attention_output(%p: tensor<8x16x16xf32>, %v: tensor<2x16x4x8xf32>) -> tensor<2x16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<2x4x16x8xf32>
  %vt = linalg.transpose ins(%v : tensor<2x16x4x8xf32>) outs(%e1 : tensor<2x4x16x8xf32>) permutation = [0, 2, 1, 3]
  %vc = tensor.collapse_shape %vt [[0, 1], [2], [3]] : tensor<2x4x16x8xf32> into tensor<8x16x8xf32>
  %e2 = tensor.empty() : tensor<8x16x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e2 : tensor<8x16x8xf32>) -> tensor<8x16x8xf32>
  %o = linalg.batch_matmul ins(%p, %vc : tensor<8x16x16xf32>, tensor<8x16x8xf32>) outs(%f : tensor<8x16x8xf32>) -> tensor<8x16x8xf32>
  %o4 = tensor.expand_shape %o [[0, 1], [2], [3]] output_shape [2, 4, 16, 8] : tensor<8x16x8xf32> into tensor<2x4x16x8xf32>
  %e3 = tensor.empty() : tensor<2x16x4x8xf32>
  %ot = linalg.transpose ins(%o4 : tensor<2x4x16x8xf32>) outs(%e3 : tensor<2x16x4x8xf32>) permutation = [0, 2, 1, 3]
  %r = tensor.collapse_shape %ot [[0], [1], [2, 3]] : tensor<2x16x4x8xf32> into tensor<2x16x32xf32>
  return %r : tensor<2x16x32xf32>
}
