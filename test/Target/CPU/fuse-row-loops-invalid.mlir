// RUN: pipedream-opt %s --pass-pipeline='builtin.module(func.func(cpu-fuse-row-loops))' -verify-diagnostics

// The pass runs after bufferization: a linalg op on tensors is an error.
func.func @on_tensors(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  // expected-error @below {{cpu-fuse-row-loops expects bufferized ops (memref operands); run one-shot-bufferize first}}
  %r = linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i, k)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}
