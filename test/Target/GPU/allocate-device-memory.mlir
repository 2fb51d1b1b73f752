// RUN: pipedream-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(cuda-allocate-device-memory))' | FileCheck %s

// CHECK-LABEL: func.func @buffers
// CHECK: %[[A:.*]] = gpu.alloc () : memref<16xf32>
// CHECK: %[[S:.*]] = gpu.alloc () : memref<4xf32>
// CHECK: gpu.launch
// CHECK: memref.store %{{.*}}, %[[A]]
// CHECK: memref.store %{{.*}}, %[[S]]
// CHECK: gpu.dealloc %[[A]] : memref<16xf32>
// CHECK-NEXT: gpu.dealloc %[[S]] : memref<4xf32>
// CHECK-NEXT: return
// CHECK-NOT: memref.alloc
func.func @buffers(%x: f32) {
  %a = memref.alloc() {alignment = 64 : i64} : memref<16xf32>
  %s = memref.alloca() : memref<4xf32>
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %c0 = arith.constant 0 : index
    memref.store %x, %a[%c0] : memref<16xf32>
    memref.store %x, %s[%c0] : memref<4xf32>
    gpu.terminator
  }
  memref.dealloc %a : memref<16xf32>
  return
}

// -----

// A constant the host passes on (here to a call) is copied to the device;
// the kernel's use keeps the global.
memref.global "private" constant @table : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>
func.func private @consume(memref<4xf32>)
// CHECK-LABEL: func.func @constant
// CHECK: %[[DEV:.*]] = gpu.alloc () : memref<4xf32>
// CHECK: %[[HOST:.*]] = memref.get_global @table
// CHECK: gpu.memcpy %[[DEV]], %[[HOST]]
// CHECK: call @consume(%[[DEV]])
// CHECK: gpu.launch
// CHECK: memref.get_global @table
// CHECK: gpu.dealloc %[[DEV]]
func.func @constant() {
  %g = memref.get_global @table : memref<4xf32>
  call @consume(%g) : (memref<4xf32>) -> ()
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %k = memref.get_global @table : memref<4xf32>
    %c0 = arith.constant 0 : index
    %v = memref.load %k[%c0] : memref<4xf32>
    gpu.terminator
  }
  return
}
