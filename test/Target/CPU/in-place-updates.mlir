// RUN: pipedream-opt %s -cpu-in-place-updates | FileCheck %s --check-prefix=TENSOR
// RUN: pipedream-opt %s -cpu-in-place-updates -cpu-prepare-entry-points -eliminate-empty-tensors -one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" -buffer-results-to-out-params="hoist-static-allocs modify-public-functions" -cpu-drop-in-place-copies -canonicalize | FileCheck %s --check-prefix=BUFFER

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#id1 = affine_map<(d0) -> (d0)>
#mk = affine_map<(d0, d1, d2) -> (d2, d0)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>

// An SGD update: the new weight in the weight's buffer, the zeroed
// gradient filled in the gradient's buffer (no constant, no second buffer).
// TENSOR-LABEL: func.func @update
// TENSOR-SAME: pipedream.cpu.in_place_outputs = array<i64: 0, 1>
// TENSOR: %[[NEW:.*]] = linalg.generic
// TENSOR: %[[W:.*]] = bufferization.materialize_in_destination %[[NEW]] in %arg0
// TENSOR: %[[Z:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%arg1 : tensor<4x8xf32>)
// TENSOR: %[[G:.*]] = bufferization.materialize_in_destination %[[Z]] in %arg1
// TENSOR: return %[[W]], %[[G]]

// BUFFER-LABEL: func.func @update
// BUFFER-SAME: (%[[W:[a-z0-9]+]]: memref<4x8xf32>, %[[G:[a-z0-9]+]]: memref<4x8xf32>, %{{.*}}: memref<4x8xf32> {pipedream.in_place = 0 : i64}, %{{.*}}: memref<4x8xf32> {pipedream.in_place = 1 : i64})
// BUFFER-NOT: memref.alloc
// BUFFER-NOT: memref.copy
// BUFFER: linalg.generic {{.*}} ins(%[[W]], %[[G]] : memref<4x8xf32>, memref<4x8xf32>) outs(%[[W]] : memref<4x8xf32>)
// BUFFER: linalg.fill ins(%{{.*}} : f32) outs(%[[G]] : memref<4x8xf32>)
// BUFFER-NOT: memref.copy
// BUFFER: return
func.func @update(%w: tensor<4x8xf32>, %g: tensor<4x8xf32>)
    -> (tensor<4x8xf32> {pipedream.in_place = 0 : i64},
        tensor<4x8xf32> {pipedream.in_place = 1 : i64}) {
  %lr = arith.constant 0.5 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %n = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%w, %g : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %lr, %b : f32
    %s = arith.subf %a, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %zero = arith.constant dense<0.0> : tensor<4x8xf32>
  return %n, %zero : tensor<4x8xf32>, tensor<4x8xf32>
}

// A gradient accumulation: the weight gradient's product accumulates into
// the accumulator itself (outs = the argument, no zero fill, no add, no
// temporary), the bias gradient is added in place.
// TENSOR-LABEL: func.func @accumulate
// TENSOR-NOT: linalg.fill
// TENSOR: %[[MM:.*]] = linalg.matmul {{.*}} outs(%arg2 : tensor<8x16xf32>)
// TENSOR: bufferization.materialize_in_destination %[[MM]] in %arg2
// TENSOR: bufferization.materialize_in_destination %{{.*}} in %arg3

// BUFFER-LABEL: func.func @accumulate
// BUFFER-SAME: (%{{[a-z0-9]+}}: memref<4x8xf32>, %{{[a-z0-9]+}}: memref<4x16xf32>, %[[GW:[a-z0-9]+]]: memref<8x16xf32>, %[[GB:[a-z0-9]+]]: memref<16xf32>, %{{.*}}: memref<8x16xf32> {pipedream.in_place = 2 : i64}, %{{.*}}: memref<16xf32> {pipedream.in_place = 3 : i64}, %{{[a-z0-9]+}}: memref<4x16xf32>)
// BUFFER-NOT: memref.alloc() {{.*}} memref<8x16xf32>
// BUFFER: linalg.matmul {{.*}} outs(%[[GW]] : memref<8x16xf32>)
// BUFFER: linalg.generic {{.*}} outs(%[[GB]] : memref<16xf32>)
// BUFFER-NOT: memref.copy
// BUFFER: return
func.func @accumulate(%x: tensor<4x8xf32>, %dy: tensor<4x16xf32>,
                      %gw: tensor<8x16xf32>, %gb: tensor<16xf32>)
    -> (tensor<8x16xf32> {pipedream.in_place = 2 : i64},
        tensor<16xf32> {pipedream.in_place = 3 : i64},
        tensor<4x16xf32>) {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %dw = linalg.matmul indexing_maps = [#mk, #kn, #mn]
      ins(%x, %dy : tensor<4x8xf32>, tensor<4x16xf32>) outs(%z : tensor<8x16xf32>) -> tensor<8x16xf32>
  %e2 = tensor.empty() : tensor<8x16xf32>
  %nw = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%gw, %dw : tensor<8x16xf32>, tensor<8x16xf32>) outs(%e2 : tensor<8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<8x16xf32>
  %e3 = tensor.empty() : tensor<16xf32>
  %z3 = linalg.fill ins(%c0 : f32) outs(%e3 : tensor<16xf32>) -> tensor<16xf32>
  %db = linalg.reduce ins(%dy : tensor<4x16xf32>) outs(%z3 : tensor<16xf32>) dimensions = [0]
    (%in: f32, %init: f32) {
      %s = arith.addf %in, %init : f32
      linalg.yield %s : f32
    }
  %e4 = tensor.empty() : tensor<16xf32>
  %nb = linalg.generic {indexing_maps = [#id1, #id1, #id1], iterator_types = ["parallel"]}
      ins(%db, %gb : tensor<16xf32>, tensor<16xf32>) outs(%e4 : tensor<16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %b, %a : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  %e5 = tensor.empty() : tensor<4x16xf32>
  %dx = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%dy : tensor<4x16xf32>) outs(%e5 : tensor<4x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<4x16xf32>
  return %nw, %nb, %dx : tensor<8x16xf32>, tensor<16xf32>, tensor<4x16xf32>
}

