// RUN: pipedream-opt %s -gpu-kernel-outlining -cuda-merge-kernel-modules | FileCheck %s

// Two functions, three kernels, one constant: one gpu.module, kernels named
// after their host function, one copy of the global.
// CHECK-LABEL: func.func @__pipedream.main
// CHECK: gpu.launch_func  @pipedream_kernels::@__pipedream_main_k0
// CHECK: gpu.launch_func  @pipedream_kernels::@__pipedream_main_k1
// CHECK: gpu.module @pipedream_kernels {
// CHECK-DAG: memref.global "private" constant @table
// CHECK-DAG: gpu.func @__pipedream_main_k0(
// CHECK-DAG: gpu.func @__pipedream_main_k1(
// CHECK-DAG: gpu.func @other_k0(
// CHECK-LABEL: func.func @other
// CHECK: gpu.launch_func  @pipedream_kernels::@other_k0
// CHECK-NOT: gpu.module
memref.global "private" constant @table : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>
func.func @__pipedream.main(%m: memref<4xf32>) {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %k = memref.get_global @table : memref<4xf32>
    %c0 = arith.constant 0 : index
    %v = memref.load %k[%c0] : memref<4xf32>
    memref.store %v, %m[%c0] : memref<4xf32>
    gpu.terminator
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %c0 = arith.constant 0 : index
    %v = memref.load %m[%c0] : memref<4xf32>
    memref.store %v, %m[%c1] : memref<4xf32>
    gpu.terminator
  }
  return
}
func.func @other(%m: memref<4xf32>) {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %k = memref.get_global @table : memref<4xf32>
    %c0 = arith.constant 0 : index
    %v = memref.load %k[%c0] : memref<4xf32>
    memref.store %v, %m[%c0] : memref<4xf32>
    gpu.terminator
  }
  return
}
