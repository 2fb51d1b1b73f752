// RUN: pipedream-opt %s -split-input-file -verify-diagnostics -cuda-test-emulate-on-host | FileCheck %s

// Launches become loops over blocks and threads, device buffers host ones,
// and pd_gpu_gemm_f32 gets a loop body.
// CHECK-LABEL: func.func private @pd_gpu_gemm_f32(
// CHECK-COUNT-4: scf.for
// CHECK: scf.if
// CHECK: llvm.store
// CHECK-LABEL: func.func @f
// CHECK: %[[BUF:.*]] = memref.alloc() : memref<8xf32>
// CHECK: scf.for %[[B:.*]] = %{{.*}} to %{{.*}} step
// CHECK-COUNT-5: scf.for
// CHECK: memref.store %{{.*}}, %[[BUF]]
// CHECK: memref.copy %[[BUF]], %{{.*}}
// CHECK: memref.dealloc %[[BUF]]
// CHECK-NOT: gpu.
func.func private @pd_gpu_gemm_f32(i64, i64, i64, i64, i32, i32, f32, !llvm.ptr, i64, i64, !llvm.ptr, i64, i64, f32, !llvm.ptr, i64, i64)
func.func @f(%out: memref<8xf32>, %x: f32) {
  %buf = gpu.alloc () : memref<8xf32>
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c2, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    %i = arith.muli %bx, %sx : index
    %j = arith.addi %i, %tx : index
    memref.store %x, %buf[%j] : memref<8xf32>
    gpu.terminator
  }
  gpu.memcpy %out, %buf : memref<8xf32>, memref<8xf32>
  gpu.dealloc %buf : memref<8xf32>
  return
}

// -----

// A block of several threads that synchronize cannot run as loops.
func.func @all_reduce(%out: memref<f32>, %x: f32) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  // expected-error @+1 {{a launch that synchronizes threads needs one thread per block to run on the host}}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %s = gpu.all_reduce add %x uniform {} : (f32) -> (f32)
    memref.store %s, %out[] : memref<f32>
    gpu.terminator
  }
  return
}
