// --dtype bf16 on CPU: f32 contractions call pipedream's bf16 GEMM
// (pd_cpu_gemm_bf16, CBLAS's arguments) with the f32 plan's transposes,
// leading dimensions and beta; f64 ones are untouched by it. Numerics:
// unittests/Target/CPU/GemmBF16Test.cpp, test/Training/bf16-cpu.test.

// RUN: pipedream-compile %s --inference --dtype bf16 --outline-kernels=false --emit llvm -o - \
// RUN:   | sed -e 's/ptr [^,)]*/ptr/g' | FileCheck %s
// RUN: pipedream-compile %s --inference --dtype bf16 --gemm kernel --outline-kernels=false --emit llvm -o - \
// RUN:   | sed -e 's/ptr [^,)]*/ptr/g' | FileCheck %s --check-prefix=KERNEL
// RUN: pipedream-compile %s --inference --outline-kernels=false --emit llvm -o - \
// RUN:   | FileCheck %s --check-prefix=F32

// CHECK-LABEL: define void @pipedream_matmul_bt(
// CHECK:   call void @pd_cpu_gemm_bf16(i32 101, i32 111, i32 112, i32 16, i32 24, i32 32, float 1.000000e+00, ptr, i32 32, ptr, i32 32, float 0.000000e+00, ptr, i32 24)
// KERNEL-LABEL: define void @pipedream_matmul_bt(
// KERNEL:   call void @pd_cpu_gemm_bf16(
// F32-NOT: pd_cpu_gemm_bf16
func.func @matmul_bt(%a: tensor<16x32xf32>, %b: tensor<24x32xf32>) -> tensor<16x24xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x24xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x24xf32>) -> tensor<16x24xf32>
  %r = linalg.matmul indexing_maps = [
      affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>,
      affine_map<(m, n, k) -> (m, n)>]
      ins(%a, %b : tensor<16x32xf32>, tensor<24x32xf32>) outs(%f : tensor<16x24xf32>) -> tensor<16x24xf32>
  return %r : tensor<16x24xf32>
}

// Accumulating into C (no zero fill): beta = 1, the product added in f32.
// CHECK-LABEL: define void @pipedream_matmul_acc(
// CHECK:   call void @pd_cpu_gemm_bf16(i32 101, i32 111, i32 111, i32 8, i32 16, i32 4, float 1.000000e+00, ptr, i32 4, ptr, i32 16, float 1.000000e+00, ptr, i32 16)
func.func @matmul_acc(%a: tensor<8x4xf32>, %b: tensor<4x16xf32>, %c: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %r = linalg.matmul ins(%a, %b : tensor<8x4xf32>, tensor<4x16xf32>) outs(%c : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}

// f64 stays f64 (OpenBLAS's dgemm with --gemm auto, loops with kernel).
// CHECK-LABEL: define void @pipedream_matmul_f64(
// CHECK-NOT: pd_cpu_gemm_bf16
// CHECK: ret void
func.func @matmul_f64(%a: tensor<8x4xf64>, %b: tensor<4x16xf64>, %c: tensor<8x16xf64>) -> tensor<8x16xf64> {
  %r = linalg.matmul ins(%a, %b : tensor<8x4xf64>, tensor<4x16xf64>) outs(%c : tensor<8x16xf64>) -> tensor<8x16xf64>
  return %r : tensor<8x16xf64>
}
