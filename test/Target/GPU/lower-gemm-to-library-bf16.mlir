// RUN: pipedream-opt %s -split-input-file -cuda-lower-gemm-to-library=bf16=true -cse | FileCheck %s

// --dtype bf16: a zero-filled matmul rounds A and B to bf16 (truncf into
// new buffers with the operands' strides), calls pd_gpu_gemm_bf16 with
// beta = 0 into a bf16 product, then stores the product widened to f32 in C
// (the fill is gone: nothing is added).
// CHECK: func.func private @pd_gpu_gemm_bf16(i64, i64, i64, i64, i32, i32, f32, !llvm.ptr, i64, i64, !llvm.ptr, i64, i64, f32, !llvm.ptr, i64, i64)
// CHECK-NOT: @pd_gpu_gemm_f32
// CHECK-LABEL: func.func @matmul
// CHECK-SAME: (%[[A:.*]]: memref<8x16xf32>, %[[B:.*]]: memref<16x64xf32>, %[[C:.*]]: memref<8x64xf32>)
// CHECK-NOT: linalg.fill
// CHECK: %[[AA:.*]] = memref.alloc() : memref<128xbf16>
// CHECK: %[[AV:.*]] = memref.reinterpret_cast %[[AA]] to offset: [0], sizes: [8, 16], strides: [16, 1] : memref<128xbf16> to memref<8x16xbf16, strided<[16, 1]>>
// CHECK: linalg.generic {{.*}} ins(%[[A]] : memref<8x16xf32>) outs(%[[AV]] : memref<8x16xbf16, strided<[16, 1]>>)
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: %[[BA:.*]] = memref.alloc() : memref<1024xbf16>
// CHECK: %[[BV:.*]] = memref.reinterpret_cast %[[BA]]
// CHECK: linalg.generic {{.*}} ins(%[[B]] : memref<16x64xf32>) outs(%[[BV]] : memref<16x64xbf16, strided<[64, 1]>>)
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: %[[CA:.*]] = memref.alloc() : memref<512xbf16>
// CHECK: %[[CV:.*]] = memref.reinterpret_cast %[[CA]]
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[M:.*]] = arith.constant 8 : i64
// CHECK-DAG: %[[N:.*]] = arith.constant 64 : i64
// CHECK-DAG: %[[K:.*]] = arith.constant 16 : i64
// CHECK: call @pd_gpu_gemm_bf16(%{{.*}}, %[[M]], %[[N]], %[[K]], %{{.*}}, %{{.*}}, %[[ONE]], %{{.*}}, %[[K]], %{{.*}}, %{{.*}}, %[[N]], %{{.*}}, %[[ZERO]], %{{.*}}, %[[N]], %{{.*}})
// CHECK: linalg.generic {{.*}} ins(%[[CV]] : memref<8x64xbf16, strided<[64, 1]>>) outs(%[[C]] : memref<8x64xf32>)
// CHECK-NEXT: ^bb0(%[[IN:.*]]: bf16, %{{.*}}: f32):
// CHECK-NEXT: %[[W:.*]] = arith.extf %[[IN]] : bf16 to f32
// CHECK-NEXT: linalg.yield %[[W]] : f32
// CHECK: memref.dealloc %[[AA]]
// CHECK: memref.dealloc %[[BA]]
// CHECK: memref.dealloc %[[CA]]
// CHECK-NOT: linalg.matmul
func.func @matmul(%a: memref<8x16xf32>, %b: memref<16x64xf32>, %c: memref<8x64xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<8x64xf32>)
  linalg.matmul ins(%a, %b : memref<8x16xf32>, memref<16x64xf32>) outs(%c : memref<8x64xf32>)
  return
}

// -----

// Accumulating into C (beta = 1 in f32): the bf16 GEMM still gets beta = 0
// and the product is added to C in f32.
// CHECK-LABEL: func.func @linear
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[T:.*]] = arith.constant 1 : i32
// CHECK-DAG: %[[NT:.*]] = arith.constant 0 : i32
// CHECK: call @pd_gpu_gemm_bf16(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[NT]], %[[T]], %{{.*}}, {{.*}}, %[[ZERO]],
// CHECK: linalg.generic
// CHECK-NEXT: ^bb0(%[[IN:.*]]: bf16, %[[OUT:.*]]: f32):
// CHECK-NEXT: %[[W:.*]] = arith.extf %[[IN]] : bf16 to f32
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[OUT]], %[[W]] : f32
// CHECK-NEXT: linalg.yield %[[S]] : f32
#mA = affine_map<(d0, d1, d2) -> (d0, d2)>
#mB = affine_map<(d0, d1, d2) -> (d1, d2)>
#mC = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @linear(%x: memref<8x16xf32>, %w: memref<64x16xf32>, %y: memref<8x64xf32>) {
  linalg.matmul indexing_maps = [#mA, #mB, #mC] ins(%x, %w : memref<8x16xf32>, memref<64x16xf32>) outs(%y : memref<8x64xf32>)
  return
}

// -----

// Strided views keep their strides in the bf16 copies (offset 0), so the
// plan's leading dimensions and batch strides are the f32 call's: here C is
// a subview with row stride 64 and batch stride 512, and its bf16 product
// buffer spans (4-1)*512 + (8-1)*64 + (16-1) + 1 = 2000 elements.
// CHECK-LABEL: func.func @batched
// CHECK-NOT: scf.for
// CHECK: memref.alloc() : memref<512xbf16>
// CHECK: memref.alloc() : memref<1024xbf16>
// CHECK: %[[CA:.*]] = memref.alloc() : memref<2000xbf16>
// CHECK: %[[CV:.*]] = memref.reinterpret_cast %[[CA]] to offset: [0], sizes: [4, 8, 16], strides: [512, 64, 1] : memref<2000xbf16> to memref<4x8x16xbf16, strided<[512, 64, 1]>>
// CHECK-DAG: %[[BATCH:.*]] = arith.constant 4 : i64
// CHECK-DAG: %[[SA:.*]] = arith.constant 128 : i64
// CHECK-DAG: %[[SB:.*]] = arith.constant 256 : i64
// CHECK-DAG: %[[SC:.*]] = arith.constant 512 : i64
// CHECK: call @pd_gpu_gemm_bf16(%[[BATCH]], {{.*}}, %[[SA]], {{.*}}, %[[SB]], {{.*}}, %[[SC]])
// CHECK: linalg.generic {{.*}} ins(%[[CV]] : {{.*}}) outs(%{{.*}} : memref<4x8x16xf32, strided<[512, 64, 1]>>)
func.func @batched(%a: memref<4x8x16xf32>, %b: memref<4x16x16xf32>, %c: memref<4x8x64xf32>) {
  %v = memref.subview %c[0, 0, 0] [4, 8, 16] [1, 1, 1] : memref<4x8x64xf32> to memref<4x8x16xf32, strided<[512, 64, 1]>>
  linalg.batch_matmul ins(%a, %b : memref<4x8x16xf32>, memref<4x16x16xf32>) outs(%v : memref<4x8x16xf32, strided<[512, 64, 1]>>)
  return
}

// -----

// Host loops around the call: the copies come before the outermost loop and
// the f32 update of C after it.
// CHECK-LABEL: func.func @two_batch_dims
// CHECK: arith.truncf
// CHECK: arith.truncf
// CHECK: scf.for
// CHECK: call @pd_gpu_gemm_bf16(
// CHECK: }
// CHECK: linalg.generic
// CHECK: arith.extf
#m4A = affine_map<(b0, b1, m, n, k) -> (b0, b1, m, k)>
#m4B = affine_map<(b0, b1, m, n, k) -> (b0, b1, k, n)>
#m4C = affine_map<(b0, b1, m, n, k) -> (b0, b1, m, n)>
func.func @two_batch_dims(%a: memref<2x3x8x16xf32>, %b: memref<2x3x16x8xf32>, %c: memref<3x2x8x8xf32>) {
  %t = memref.transpose %c (d0, d1, d2, d3) -> (d1, d0, d2, d3) : memref<3x2x8x8xf32> to memref<2x3x8x8xf32, strided<[64, 128, 8, 1]>>
  linalg.generic {indexing_maps = [#m4A, #m4B, #m4C], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<2x3x8x16xf32>, memref<2x3x16x8xf32>) outs(%t : memref<2x3x8x8xf32, strided<[64, 128, 8, 1]>>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Contractions that already are bf16 call pd_gpu_gemm_bf16 directly (no
// copies), as without the option.
// CHECK-LABEL: func.func @native_bf16
// CHECK-NOT: memref.alloc
// CHECK-NOT: arith.truncf
// CHECK: call @pd_gpu_gemm_bf16(
// CHECK-NOT: linalg.generic
func.func @native_bf16(%a: memref<8x16xbf16>, %b: memref<16x64xbf16>, %c: memref<8x64xbf16>) {
  linalg.matmul ins(%a, %b : memref<8x16xbf16>, memref<16x64xbf16>) outs(%c : memref<8x64xbf16>)
  return
}

// -----

// A view with a dynamic offset (static strides): the copy reads the view,
// the bf16 buffer starts at offset 0.
// CHECK-LABEL: func.func @dynamic_offset
// CHECK: memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [8, 16], strides: [16, 1] : memref<128xbf16> to memref<8x16xbf16, strided<[16, 1]>>
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : memref<8x16xf32, strided<[16, 1], offset: ?>>)
// CHECK: call @pd_gpu_gemm_bf16(
func.func @dynamic_offset(%a: memref<8x16xf32, strided<[16, 1], offset: ?>>, %b: memref<16x64xf32>, %c: memref<8x64xf32>) {
  linalg.matmul ins(%a, %b : memref<8x16xf32, strided<[16, 1], offset: ?>>, memref<16x64xf32>) outs(%c : memref<8x64xf32>)
  return
}
