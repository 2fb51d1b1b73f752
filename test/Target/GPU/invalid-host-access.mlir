// RUN: pipedream-opt %s -verify-diagnostics -pass-pipeline='builtin.module(func.func(cuda-allocate-device-memory))'

// cuda-allocate-device-memory refuses host accesses: they would read device
// memory from the CPU.
func.func @host_load(%m: memref<4xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{host code reads or writes device memory (run cuda-map-to-kernels first)}}
  %v = memref.load %m[%c0] : memref<4xf32>
  return %v : f32
}
