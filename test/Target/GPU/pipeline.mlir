// RUN: pipedream-opt %s --pipedream-cuda-lowering="to-nvvm=1" | FileCheck %s
// RUN: pipedream-opt %s --pipedream-cuda-lowering="to-nvvm=1 gpu-arch=sm_80" | FileCheck %s --check-prefix=SM80

// A linear layer, ReLU and a softmax over rows, as convert-nn-to-linalg
// writes them: the GEMM goes to the library, everything else to kernels.

// The host: one stream per call (no synchronization around the GEMM), the
// bias broadcast, the GEMM call, five kernels (ReLU, row max, exp, row sum,
// division), device buffers; all in the exported entry point of the
// bundle ABI (device pointers), which holds @main's body (nothing else
// calls @main).
// CHECK-NOT: @__pipedream.main
// CHECK-LABEL: llvm.func @pipedream_main(%{{.*}}: !llvm.ptr)
// CHECK: %[[S1:.*]] = llvm.call @mgpuStreamCreate()
// CHECK-NOT: mgpuStream
// CHECK: gpu.launch_func <%[[S1]] : !llvm.ptr> @pipedream_kernels::@main_k0
// CHECK-NOT: mgpuStream
// CHECK: llvm.call @pd_gpu_gemm_f32(
// CHECK-NOT: mgpuStream
// CHECK: gpu.launch_func <%[[S1]] : !llvm.ptr> @pipedream_kernels::@main_k1
// CHECK: llvm.call @mgpuMemAlloc(%{{.*}}, %[[S1]], %{{.*}})
// CHECK-COUNT-4: gpu.launch_func <%[[S1]] : !llvm.ptr> @pipedream_kernels::@main_k{{[2-5]}}
// CHECK: llvm.call @mgpuMemFree(%{{.*}}, %[[S1]])
// CHECK: llvm.call @mgpuStreamSynchronize(%[[S1]])
// CHECK: llvm.call @mgpuStreamDestroy(%[[S1]])
// CHECK: llvm.return

// CHECK-NOT: @__pipedream.main

// All kernels in one module, compiled for sm_90 with PTX 8.0.
// CHECK: gpu.module @pipedream_kernels [#nvvm.target<O = 3, chip = "sm_90", features = "+ptx80">]
// SM80: gpu.module @pipedream_kernels [#nvvm.target<O = 3, chip = "sm_80", features = "+ptx70">]
// CHECK: llvm.func @main_k0({{.*}} attributes {{{.*}}gpu.kernel{{.*}}nvvm.kernel
// CHECK: llvm.func @main_k1(
// Row max: gpu.all_reduce as warp shuffles.
// CHECK: llvm.func @main_k2(
// CHECK: nvvm.shfl.sync bfly
// CHECK: llvm.func @main_k3(
// CHECK: llvm.call @__nv_expf(
// CHECK: llvm.func @main_k4(
// CHECK: nvvm.shfl.sync bfly
// CHECK: llvm.func @main_k5(
// CHECK-NOT: llvm.func @main_k

#bias = affine_map<(d0, d1) -> (d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#mA = affine_map<(d0, d1, d2) -> (d0, d2)>
#mB = affine_map<(d0, d1, d2) -> (d1, d2)>
#mC = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @main(%x: tensor<8x16xf32>, %w: tensor<64x16xf32>, %b: tensor<64xf32>) -> tensor<8x64xf32> {
  %e0 = tensor.empty() : tensor<8x64xf32>
  %bias = linalg.generic {indexing_maps = [#bias, #id], iterator_types = ["parallel", "parallel"]}
      ins(%b : tensor<64xf32>) outs(%e0 : tensor<8x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<8x64xf32>
  %mm = linalg.matmul indexing_maps = [#mA, #mB, #mC] ins(%x, %w : tensor<8x16xf32>, tensor<64x16xf32>) outs(%bias : tensor<8x64xf32>) -> tensor<8x64xf32>
  %e1 = tensor.empty() : tensor<8x64xf32>
  %relu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm : tensor<8x64xf32>) outs(%e1 : tensor<8x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %zero = arith.constant 0.0 : f32
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  } -> tensor<8x64xf32>
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %e2 = tensor.empty() : tensor<8xf32>
  %m0 = linalg.fill ins(%ninf : f32) outs(%e2 : tensor<8xf32>) -> tensor<8xf32>
  %max = linalg.reduce ins(%relu : tensor<8x64xf32>) outs(%m0 : tensor<8xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %r = arith.maximumf %in, %acc : f32
      linalg.yield %r : f32
    }
  %e3 = tensor.empty() : tensor<8x64xf32>
  %exp = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%relu, %max : tensor<8x64xf32>, tensor<8xf32>) outs(%e3 : tensor<8x64xf32>) {
  ^bb0(%in: f32, %m: f32, %out: f32):
    %d = arith.subf %in, %m : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<8x64xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<8xf32>) -> tensor<8xf32>
  %sum = linalg.reduce ins(%exp : tensor<8x64xf32>) outs(%s0 : tensor<8xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %r = arith.addf %in, %acc : f32
      linalg.yield %r : f32
    }
  %e4 = tensor.empty() : tensor<8x64xf32>
  %softmax = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%exp, %sum : tensor<8x64xf32>, tensor<8xf32>) outs(%e4 : tensor<8x64xf32>) {
  ^bb0(%in: f32, %s: f32, %out: f32):
    %r = arith.divf %in, %s : f32
    linalg.yield %r : f32
  } -> tensor<8x64xf32>
  return %softmax : tensor<8x64xf32>
}
