// REQUIRES: cuda-toolkit
// RUN: pipedream-opt %s --pipedream-cuda-lowering | FileCheck %s

// The whole pipeline: ptxas and fatbinary from the toolkit turn the kernel
// module into one fatbin (magic 0xBA55ED50, "P\ED U\BA" in the string) on
// the host module; the launches stay, to be translated into mgpu* calls.
// CHECK-NOT: gpu.module
// CHECK: gpu.launch_func <%{{.*}} : !llvm.ptr> @pipedream_kernels::@main_k0
// CHECK: gpu.binary @pipedream_kernels  [#gpu.object<#nvvm.target<O = 3, chip = "sm_90", features = "+ptx80">, properties = {{{.*}}}, "P\EDU\BA
// CHECK-NOT: gpu.module

// An exp (libdevice, linked from the toolkit) and a row sum.
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @main(%x: tensor<4x100xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4x100xf32>
  %exp = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x100xf32>) outs(%e : tensor<4x100xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = math.exp %in : f32
    linalg.yield %r : f32
  } -> tensor<4x100xf32>
  %zero = arith.constant 0.0 : f32
  %e2 = tensor.empty() : tensor<4xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.reduce ins(%exp : tensor<4x100xf32>) outs(%s0 : tensor<4xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %r = arith.addf %in, %acc : f32
      linalg.yield %r : f32
    }
  return %sum : tensor<4xf32>
}
