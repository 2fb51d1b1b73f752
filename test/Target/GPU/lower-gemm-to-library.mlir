// RUN: pipedream-opt %s -split-input-file -cuda-lower-gemm-to-library -cse | FileCheck %s

// A zero-filled matmul: one call, beta = 0, the fill gone.
// CHECK: func.func private @pd_gpu_gemm_f32(i64, i64, i64, i64, i32, i32, f32, !llvm.ptr, i64, i64, !llvm.ptr, i64, i64, f32, !llvm.ptr, i64, i64)
// CHECK-LABEL: func.func @matmul
// CHECK-NOT: linalg.fill
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[B1:.*]] = arith.constant 1 : i64
// CHECK-DAG: %[[M:.*]] = arith.constant 8 : i64
// CHECK-DAG: %[[N:.*]] = arith.constant 64 : i64
// CHECK-DAG: %[[K:.*]] = arith.constant 16 : i64
// CHECK-DAG: %[[S0:.*]] = arith.constant 0 : i64
// CHECK-DAG: %[[NT:.*]] = arith.constant 0 : i32
// CHECK: call @pd_gpu_gemm_f32(%[[B1]], %[[M]], %[[N]], %[[K]], %[[NT]], %[[NT]], %[[ONE]], %{{.*}}, %[[K]], %[[S0]], %{{.*}}, %[[N]], %[[S0]], %[[ZERO]], %{{.*}}, %[[N]], %[[S0]])
// CHECK-NOT: linalg.matmul
func.func @matmul(%a: memref<8x16xf32>, %b: memref<16x64xf32>, %c: memref<8x64xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<8x64xf32>)
  linalg.matmul ins(%a, %b : memref<8x16xf32>, memref<16x64xf32>) outs(%c : memref<8x64xf32>)
  return
}

// -----

// B transposed (nn.Linear's weight), accumulating into C: beta = 1.
// CHECK-LABEL: func.func @linear
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-DAG: %[[T:.*]] = arith.constant 1 : i32
// CHECK-DAG: %[[NT:.*]] = arith.constant 0 : i32
// CHECK: call @pd_gpu_gemm_f32(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[NT]], %[[T]], %[[ONE]], {{.*}}, %[[ONE]],
#mA = affine_map<(d0, d1, d2) -> (d0, d2)>
#mB = affine_map<(d0, d1, d2) -> (d1, d2)>
#mC = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @linear(%x: memref<8x16xf32>, %w: memref<64x16xf32>, %y: memref<8x64xf32>) {
  linalg.matmul indexing_maps = [#mA, #mB, #mC] ins(%x, %w : memref<8x16xf32>, memref<64x16xf32>) outs(%y : memref<8x64xf32>)
  return
}

// -----

// batch_matmul: the batch goes to the library with per-operand strides.
// CHECK-LABEL: func.func @batched
// CHECK-NOT: scf.for
// CHECK-DAG: %[[BATCH:.*]] = arith.constant 4 : i64
// CHECK-DAG: %[[SA:.*]] = arith.constant 128 : i64
// CHECK-DAG: %[[SB:.*]] = arith.constant 256 : i64
// CHECK-DAG: %[[SC:.*]] = arith.constant 512 : i64
// CHECK: call @pd_gpu_gemm_f32(%[[BATCH]], {{.*}}, %[[SA]], {{.*}}, %[[SB]], {{.*}}, %[[SC]])
func.func @batched(%a: memref<4x8x16xf32>, %b: memref<4x16x16xf32>, %c: memref<4x8x64xf32>) {
  %v = memref.subview %c[0, 0, 0] [4, 8, 16] [1, 1, 1] : memref<4x8x64xf32> to memref<4x8x16xf32, strided<[512, 64, 1]>>
  linalg.batch_matmul ins(%a, %b : memref<4x8x16xf32>, memref<4x16x16xf32>) outs(%v : memref<4x8x16xf32, strided<[512, 64, 1]>>)
  return
}

// -----

// Two batch dimensions: the outer one loops on the host around the call.
// CHECK-LABEL: func.func @two_batch_dims
// CHECK: %[[TWO:.*]] = arith.constant 2 : index
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[TWO]]
// CHECK: %[[THREE:.*]] = arith.constant 3 : i64
// CHECK: call @pd_gpu_gemm_f32(%[[THREE]],
// CHECK-NOT: call @pd_gpu_gemm_f32
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

// A batch whose C items interleave (C is [m][batch][n], as attention's
// [sequence][head][feature]) stays a host loop, one call per item: cuBLAS's
// strided batch (and the runtime's check) want each item after the other.
// CHECK-LABEL: func.func @interleaved
// CHECK: %[[TWO:.*]] = arith.constant 2 : index
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[TWO]]
// CHECK: %[[ONE:.*]] = arith.constant 1 : i64
// CHECK: %[[LDC:.*]] = arith.constant 16 : i64
// CHECK: call @pd_gpu_gemm_f32(%[[ONE]], {{.*}}, %[[LDC]], %{{.*}})
#iA = affine_map<(b, m, n, k) -> (b, m, k)>
#iB = affine_map<(b, m, n, k) -> (b, k, n)>
#iC = affine_map<(b, m, n, k) -> (m, b, n)>
func.func @interleaved(%a: memref<2x4x16xf32>, %b: memref<2x16x8xf32>, %c: memref<4x2x8xf32>) {
  linalg.generic {indexing_maps = [#iA, #iB, #iC], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<2x4x16xf32>, memref<2x16x8xf32>) outs(%c : memref<4x2x8xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Integer contractions stay linalg (cuda-map-to-kernels runs them).
// CHECK-LABEL: func.func @integer
// CHECK: linalg.matmul
// CHECK-NOT: pd_gpu_gemm
func.func @integer(%a: memref<8x16xi32>, %b: memref<16x64xi32>, %c: memref<8x64xi32>) {
  linalg.matmul ins(%a, %b : memref<8x16xi32>, memref<16x64xi32>) outs(%c : memref<8x64xi32>)
  return
}

// -----

// Row-wise dot products (a batch of 1 x 1 GEMMs, one call per output
// element) stay linalg: cuda-map-to-kernels runs them as one reduction.
// CHECK-LABEL: func.func @row_dots
// CHECK: linalg.generic
// CHECK-NOT: pd_gpu_gemm
func.func @row_dots(%a: memref<128x64xf32>, %b: memref<128x64xf32>, %c: memref<128xf32>) {
  linalg.generic {indexing_maps = [affine_map<(r, k) -> (r, k)>, affine_map<(r, k) -> (r, k)>, affine_map<(r, k) -> (r)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%a, %b : memref<128x64xf32>, memref<128x64xf32>) outs(%c : memref<128xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}
