// RUN: pipedream-opt %s -verify-diagnostics -gpu-kernel-outlining -cuda-merge-kernel-modules=module-name=taken

// The name of the kernel module is taken by another symbol.
// expected-error @+1 {{symbol 'taken' already exists}}
module {
  func.func private @taken()
  func.func @f(%m: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
      %c0 = arith.constant 0 : index
      %v = memref.load %m[%c0] : memref<4xf32>
      memref.store %v, %m[%c1] : memref<4xf32>
      gpu.terminator
    }
    return
  }
}
