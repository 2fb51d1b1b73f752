// RUN: pipedream-opt %s -pipe-lower-rank-programs -pipedream-cpu-lowering="gemm=loops" | FileCheck %s
// A native rank entry through the CPU code generator (the driver strips
// the nn.* attributes of the stage functions before this; the bound
// buffers here are `nn.role` ones, which survive bufferization): cpu-generate-entry-
// points exports it unchanged (`pipedream.cpu.export`: its own name,
// external linkage, no wrapper, C signature (ptr, ptr) -> i32), and its
// calls of the stage declarations `@pipedream_<fn>` now call the stage
// functions' entry wrappers (one definition each; the declarations are
// gone). The two stage functions differ (add, sub): equal ones would be
// compiled once (cpu-merge-equal-functions, merge-equal-functions.mlir).

// The stage functions, called by nothing but their wrappers, are the
// wrappers' bodies.
// CHECK-NOT: llvm.func @pipedream_s0_F(!llvm.ptr)
// CHECK-NOT: @__pipedream.s0_F
// CHECK: llvm.func @pipedream_s0_F(%{{.*}}: !llvm.ptr) {
// CHECK-NOT: @__pipedream.s0_
// CHECK: llvm.func @pipedream_s0_B(%{{.*}}: !llvm.ptr) {
// CHECK-NOT: @__pipedream.s0_
// CHECK-LABEL: llvm.func @pipeline_rank0(
// CHECK-SAME: %[[CTX:.*]]: !llvm.ptr, %[[REGS:.*]]: !llvm.ptr) -> i32
// CHECK-SAME: pipe.rank = 0 : i64
// CHECK: llvm.call %{{.*}}(%[[CTX]], %{{.*}}, %{{.*}}) : !llvm.ptr, (!llvm.ptr, i64, !llvm.ptr) -> i32
// CHECK: llvm.call @pipedream_s0_F(%[[BUFS:.*]]) : (!llvm.ptr) -> ()
// CHECK: llvm.call @pipedream_s0_B(%[[BUFS]]) : (!llvm.ptr) -> ()
// CHECK: llvm.return %{{.*}} : i32
// CHECK-NOT: llvm.func {{.*}}@pipedream_s0_F(

func.func @s0_F(%w: tensor<4xf32> {nn.role = "state"}, %x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = #pipe.stage<0>} {
  %e = tensor.empty() : tensor<4xf32>
  %y = linalg.add ins(%w, %x : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
func.func @s0_B(%y: tensor<4xf32>, %acc: tensor<4xf32> {nn.role = "grad"}) -> tensor<4xf32> attributes {pipe.stage = #pipe.stage<0>} {
  %e = tensor.empty() : tensor<4xf32>
  %g = linalg.sub ins(%y, %acc : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  return %g : tensor<4xf32>
}

pipe.program @step_rank0 rank 0 schedule #pipe.schedule<kind = gpipe, stages = 1, microbatches = 1> (%x: tensor<4xf32> {pipe.input = "x", pipe.microbatch = 0 : i64}) {
  %y = pipe.call_stage F @s0_F(%x) stage 0 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
  %g = pipe.call_stage B @s0_B(%y) stage 0 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return
}
