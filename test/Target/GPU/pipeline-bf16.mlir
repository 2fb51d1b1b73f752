// RUN: pipedream-opt %s --pipedream-cuda-lowering="to-nvvm=1 dtype=bf16" | FileCheck %s
// RUN: pipedream-opt %s --pipedream-cuda-lowering="to-nvvm=1" | FileCheck %s --check-prefix=F32
// RUN: not pipedream-opt %s --pipedream-cuda-lowering="to-nvvm=1 dtype=fp8" 2>&1 | FileCheck %s --check-prefix=BAD

// --dtype bf16 through the whole lowering (to NVVM): on the one stream, a
// kernel rounding X to bf16, one rounding W, the bf16 GEMM (beta = 0) into a
// bf16 temporary, a kernel widening it into the f32 output; the three
// temporaries are device allocations freed at the end.
// CHECK: llvm.func @pd_gpu_gemm_bf16(
// CHECK-NOT: pd_gpu_gemm_f32
// CHECK-LABEL: llvm.func @pipedream_main(
// CHECK: %[[S:.*]] = llvm.call @mgpuStreamCreate()
// CHECK: llvm.call @mgpuMemAlloc(%{{.*}}, %[[S]], %{{.*}})
// CHECK: gpu.launch_func <%[[S]] : !llvm.ptr> @pipedream_kernels::@main_k0
// CHECK: llvm.call @mgpuMemAlloc(%{{.*}}, %[[S]], %{{.*}})
// CHECK: gpu.launch_func <%[[S]] : !llvm.ptr> @pipedream_kernels::@main_k1
// CHECK: llvm.call @mgpuMemAlloc(%{{.*}}, %[[S]], %{{.*}})
// CHECK-NOT: mgpuStream
// CHECK: llvm.call @pd_gpu_gemm_bf16(
// CHECK-NOT: mgpuStream
// CHECK: gpu.launch_func <%[[S]] : !llvm.ptr> @pipedream_kernels::@main_k2
// CHECK-COUNT-3: llvm.call @mgpuMemFree(%{{.*}}, %[[S]])
// CHECK: llvm.call @mgpuStreamSynchronize(%[[S]])

// The kernels: f32 -> bf16 (round-to-nearest-even, PTX cvt.rn.bf16.f32)
// twice, then bf16 -> f32.
// CHECK: gpu.module @pipedream_kernels
// CHECK: llvm.func @main_k0(
// CHECK: llvm.fptrunc %{{.*}} : f32 to bf16
// CHECK: llvm.func @main_k1(
// CHECK: llvm.fptrunc %{{.*}} : f32 to bf16
// CHECK: llvm.func @main_k2(
// CHECK: llvm.fpext %{{.*}} : bf16 to f32

// The default (f32): the f32 GEMM writes the output, no kernel at all.
// F32: llvm.call @pd_gpu_gemm_f32(
// F32-NOT: pd_gpu_gemm_bf16
// F32-NOT: gpu.launch_func
// F32-NOT: bf16

// BAD: for the --dtype option: Cannot find option named 'fp8'!

func.func @main(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>) -> tensor<8x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %y = linalg.matmul ins(%x, %w : tensor<8x16xf32>, tensor<16x32xf32>) outs(%f : tensor<8x32xf32>) -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}
