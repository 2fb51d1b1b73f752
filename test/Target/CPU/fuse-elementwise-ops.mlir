// cpu-fuse-elementwise-ops: upstream's elementwise fusion, never into or
// out of a contraction, plus one loop for a producer whose result is both
// returned and read by a consumer whose results are all returned (an
// optimizer step: Adam's new moment, returned and read by the weight
// update). Numerics: the training tests against PyTorch (test/Training).

// RUN: pipedream-opt %s -split-input-file --cpu-fuse-elementwise-ops | FileCheck %s
// Nothing here is an error: the cases the pass leaves alone stay valid.
// RUN: pipedream-opt %s -split-input-file --cpu-fuse-elementwise-ops -verify-diagnostics -o /dev/null

#id = affine_map<(d0) -> (d0)>
#scalar = affine_map<(d0) -> ()>

// m' = 0.9 m + g returned, w' = w - lr * m' returned: one loop yields both.
// CHECK-LABEL: func.func @momentum_step(
// CHECK-SAME:    %[[W:[^:]*]]: tensor<64xf32>, %[[G:[^:]*]]: tensor<64xf32>, %[[M:[^:]*]]: tensor<64xf32>
// CHECK:         %[[R:.*]]:2 = linalg.generic
// CHECK-SAME:      ins(%[[M]], %[[G]], %{{.*}}, %[[W]], %{{.*}} :
// CHECK:           %[[SCALED:.*]] = arith.mulf
// CHECK:           %[[NEWM:.*]] = arith.addf %[[SCALED]]
// CHECK:           %[[STEP:.*]] = arith.mulf %{{.*}}, %[[NEWM]]
// CHECK:           %[[NEWW:.*]] = arith.subf %{{.*}}, %[[STEP]]
// CHECK:           linalg.yield %[[NEWM]], %[[NEWW]]
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[R]]#1, %[[R]]#0
func.func @momentum_step(%w: tensor<64xf32>, %g: tensor<64xf32>, %m: tensor<64xf32>,
                         %beta: tensor<f32>, %lr: tensor<f32>) -> (tensor<64xf32>, tensor<64xf32>) {
  %e0 = tensor.empty() : tensor<64xf32>
  %newm = linalg.generic {indexing_maps = [#id, #id, #scalar, #id], iterator_types = ["parallel"]}
      ins(%m, %g, %beta : tensor<64xf32>, tensor<64xf32>, tensor<f32>) outs(%e0 : tensor<64xf32>) {
  ^bb0(%a: f32, %b: f32, %s: f32, %o: f32):
    %x = arith.mulf %a, %s : f32
    %y = arith.addf %x, %b : f32
    linalg.yield %y : f32
  } -> tensor<64xf32>
  %e1 = tensor.empty() : tensor<64xf32>
  %neww = linalg.generic {indexing_maps = [#id, #id, #scalar, #id], iterator_types = ["parallel"]}
      ins(%w, %newm, %lr : tensor<64xf32>, tensor<64xf32>, tensor<f32>) outs(%e1 : tensor<64xf32>) {
  ^bb0(%a: f32, %b: f32, %s: f32, %o: f32):
    %x = arith.mulf %s, %b : f32
    %y = arith.subf %a, %x : f32
    linalg.yield %y : f32
  } -> tensor<64xf32>
  return %neww, %newm : tensor<64xf32>, tensor<64xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>

// The consumer's result is read again, by two loops (forward or backward
// code, not the end of a step): the producer keeps its own loop, and so
// does the consumer.
// CHECK-LABEL: func.func @consumer_not_returned(
// CHECK-COUNT-4: linalg.generic
// CHECK:         return
func.func @consumer_not_returned(%a: tensor<64xf32>, %b: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) {
  %e0 = tensor.empty() : tensor<64xf32>
  %p = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<64xf32>, tensor<64xf32>) outs(%e0 : tensor<64xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  %e1 = tensor.empty() : tensor<64xf32>
  %c = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%p, %a : tensor<64xf32>, tensor<64xf32>) outs(%e1 : tensor<64xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.mulf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  %e2 = tensor.empty() : tensor<64xf32>
  %d1 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%c, %a : tensor<64xf32>, tensor<64xf32>) outs(%e2 : tensor<64xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.subf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  %e3 = tensor.empty() : tensor<64xf32>
  %d2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%c, %b : tensor<64xf32>, tensor<64xf32>) outs(%e3 : tensor<64xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.divf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  return %p, %d1, %d2 : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#t = affine_map<(d0, d1) -> (d1, d0)>

// The consumer reads the producer's result transposed: the loops do not
// line up element for element, and both stay.
// CHECK-LABEL: func.func @transposed_read(
// CHECK:         linalg.generic
// CHECK:         linalg.generic
// CHECK:         return
func.func @transposed_read(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %e0 = tensor.empty() : tensor<8x8xf32>
  %p = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : tensor<8x8xf32>, tensor<8x8xf32>) outs(%e0 : tensor<8x8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<8x8xf32>
  %e1 = tensor.empty() : tensor<8x8xf32>
  %c = linalg.generic {indexing_maps = [#t, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p, %a : tensor<8x8xf32>, tensor<8x8xf32>) outs(%e1 : tensor<8x8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.mulf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<8x8xf32>
  return %p, %c : tensor<8x8xf32>, tensor<8x8xf32>
}

// -----

// A bias add after a matmul stays out of the contraction (it would no
// longer be a GEMM to the lowerings).
// CHECK-LABEL: func.func @contraction_kept(
// CHECK:         linalg.matmul
// CHECK:         linalg.generic
func.func @contraction_kept(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>, %bias: tensor<4xf32>) -> tensor<8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<8x16xf32>, tensor<16x4xf32>) outs(%f : tensor<8x4xf32>) -> tensor<8x4xf32>
  %e1 = tensor.empty() : tensor<8x4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %bias : tensor<8x4xf32>, tensor<4xf32>) outs(%e1 : tensor<8x4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

// -----

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#bcast = affine_map<(d0, d1, d2) -> (d0, d1)>

// A producer that reads its init (s = 0 + x: a sum over unit dimensions
// once they are folded) read through a broadcast: fused, upstream would
// keep `s` as an output indexed (d0, d1) of loops (d0, d1, d2), read and
// updated again at every d2, so the k-th broadcast element got (k + 1) x
// (EfficientNet's squeeze-and-excitation gradient). The producer keeps its
// loop.
// CHECK-LABEL: func.func @accumulating_producer_broadcast(
// CHECK:         %[[FILL:.*]] = linalg.fill
// CHECK:         %[[S:.*]] = linalg.generic
// CHECK-SAME:      outs(%[[FILL]] :
// CHECK:           arith.addf
// CHECK:         linalg.generic
// CHECK-SAME:      ins(%[[S]] : tensor<2x8xf64>)
// CHECK-SAME:      outs(%{{.*}} : tensor<2x8x4xf64>)
// CHECK-NOT:     linalg.generic
func.func @accumulating_producer_broadcast(%x: tensor<2x8xf64>) -> tensor<2x8x4xf64> {
  %zero = arith.constant 0.0 : f64
  %scale = arith.constant 0.0625 : f64
  %e0 = tensor.empty() : tensor<2x8xf64>
  %init = linalg.fill ins(%zero : f64) outs(%e0 : tensor<2x8xf64>) -> tensor<2x8xf64>
  %s = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<2x8xf64>) outs(%init : tensor<2x8xf64>) {
  ^bb0(%a: f64, %o: f64):
    %t = arith.addf %o, %a : f64
    linalg.yield %t : f64
  } -> tensor<2x8xf64>
  %e1 = tensor.empty() : tensor<2x8x4xf64>
  %b = linalg.generic {indexing_maps = [#bcast, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<2x8xf64>) outs(%e1 : tensor<2x8x4xf64>) {
  ^bb0(%a: f64, %o: f64):
    %t = arith.mulf %a, %scale : f64
    linalg.yield %t : f64
  } -> tensor<2x8x4xf64>
  return %b : tensor<2x8x4xf64>
}

// -----

#id2 = affine_map<(d0, d1) -> (d0, d1)>

// The same producer read elementwise, in the consumer's own iteration
// space: fusing it is sound (each element updated once), so one loop.
// CHECK-LABEL: func.func @accumulating_producer_elementwise(
// CHECK:         linalg.generic
// CHECK:           arith.addf
// CHECK:           arith.mulf
// CHECK-NOT:     linalg.generic
// CHECK:         return
func.func @accumulating_producer_elementwise(%x: tensor<2x8xf64>) -> tensor<2x8xf64> {
  %zero = arith.constant 0.0 : f64
  %scale = arith.constant 0.0625 : f64
  %e0 = tensor.empty() : tensor<2x8xf64>
  %init = linalg.fill ins(%zero : f64) outs(%e0 : tensor<2x8xf64>) -> tensor<2x8xf64>
  %s = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<2x8xf64>) outs(%init : tensor<2x8xf64>) {
  ^bb0(%a: f64, %o: f64):
    %t = arith.addf %o, %a : f64
    linalg.yield %t : f64
  } -> tensor<2x8xf64>
  %e1 = tensor.empty() : tensor<2x8xf64>
  %b = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%s : tensor<2x8xf64>) outs(%e1 : tensor<2x8xf64>) {
  ^bb0(%a: f64, %o: f64):
    %t = arith.mulf %a, %scale : f64
    linalg.yield %t : f64
  } -> tensor<2x8xf64>
  return %b : tensor<2x8xf64>
}
