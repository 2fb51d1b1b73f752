// RUN: pipedream-opt %s -split-input-file -cpu-drop-in-place-copies -verify-diagnostics

// The out-parameter of an in-place output written by something else than
// the copy from its argument: the value is not in the argument's buffer.
func.func @written(%w: memref<4xf32>, %out: memref<4xf32>) attributes {pipedream.cpu.in_place_outputs = array<i64: 0>} {
  %c = arith.constant 1.0 : f32
  // expected-error @+1 {{in-place output #0 of @written is not in argument #0's buffer after bufferization}}
  linalg.fill ins(%c : f32) outs(%out : memref<4xf32>)
  return
}

// -----

// expected-error @+1 {{cpu-drop-in-place-copies expects every result as an out-parameter (run buffer-results-to-out-params first)}}
func.func @results(%w: memref<4xf32>) -> memref<4xf32> attributes {pipedream.cpu.in_place_outputs = array<i64: 0>} {
  return %w : memref<4xf32>
}
