// RUN: pipedream-opt %s -cpu-outline-kernels -verify-diagnostics

// The pass runs after bufferization: a linalg op on tensors is refused.
#map = affine_map<(d0) -> (d0)>
func.func @tensors(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'linalg.generic' op cpu-outline-kernels expects bufferized loop nests (memref operands); run one-shot-bufferize first}}
  %0 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%a : tensor<4xf32>) outs(%a : tensor<4xf32>) {
  ^bb0(%x: f32, %y: f32):
    %e = math.exp %x : f32
    linalg.yield %e : f32
  } -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
