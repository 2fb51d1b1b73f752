// RUN: pipedream-opt %s -split-input-file -verify-diagnostics -pass-pipeline='builtin.module(func.func(cuda-map-to-kernels,cuda-allocate-device-memory))'

// The host needs a value read from device memory (a dynamic size).
func.func @device_value_on_host(%n: memref<index>) {
  // expected-error @+1 {{a value computed from device memory is used by host code; the CUDA target cannot compile it}}
  %size = memref.load %n[] : memref<index>
  %buffer = memref.alloc(%size) : memref<?xf32>
  memref.dealloc %buffer : memref<?xf32>
  return
}

// -----

// A stack buffer inside a host loop cannot move to the device.
func.func @alloca_in_loop() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step %c1 {
    // expected-error @+1 {{stack allocation inside a host loop or branch; the CUDA target only moves function-level ones to the device}}
    %s = memref.alloca() : memref<4xf32>
    func.call @use(%s) : (memref<4xf32>) -> ()
  }
  return
}
func.func private @use(memref<4xf32>)
