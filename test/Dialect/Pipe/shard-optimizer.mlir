// RUN: pipedream-opt %s -split-input-file -pipe-shard-optimizer="shards=2" | FileCheck %s
// RUN: pipedream-opt %s -split-input-file -pipe-shard-optimizer="shards=1" | FileCheck %s --check-prefix=ONE

// Momentum update of two weights (w1 is the larger: shard 0 gets it, w0
// shard 1) and an Adam-like step counter that every shard keeps.

// CHECK-LABEL: func.func @s0_U_shard0(
// CHECK-SAME: {nn.name = "w1", nn.param = dense<2.000000e+00> : tensor<8xf32>, nn.role = "weight"}
// CHECK-SAME: {nn.name = "grad:w1", nn.role = "grad"}
// CHECK-SAME: {nn.name = "momentum:w1", nn.role = "state"}
// CHECK-SAME: {nn.name = "step:stage0", nn.role = "state"}
// CHECK-SAME: -> (tensor<8xf32> {nn.updates = "w1"}, tensor<8xf32> {nn.updates = "momentum:w1"}, tensor<f32> {nn.updates = "step:stage0"}, tensor<8xf32> {nn.updates = "grad:w1"})
// CHECK-SAME: attributes {pipe.replica = 0 : i64, pipe.stage = #pipe.stage<0>}
// CHECK-NOT: w0
// CHECK: return
// CHECK-LABEL: func.func @s0_U_shard1(
// CHECK-SAME: {nn.name = "w0", nn.param = dense<1.000000e+00> : tensor<4xf32>, nn.role = "weight"}
// CHECK-SAME: {nn.name = "grad:w0", nn.role = "grad"}
// CHECK-SAME: {nn.name = "momentum:w0", nn.role = "state"}
// CHECK-SAME: {nn.name = "step:stage0", nn.role = "state"}
// CHECK-SAME: -> (tensor<4xf32> {nn.updates = "w0"}, tensor<4xf32> {nn.updates = "momentum:w0"}, tensor<f32> {nn.updates = "step:stage0"}, tensor<4xf32> {nn.updates = "grad:w0"})
// CHECK-NOT: func.func @s0_U(
// CHECK-LABEL: pipe.program @step_rank0
// CHECK: pipe.call_stage B @s0_B
// CHECK-NEXT: pipe.call_stage U @s0_U_shard0() stage 0 microbatch 0 {pipe.replica = 0 : i64}
// CHECK-NEXT: pipe.call_stage U @s0_U_shard1() stage 0 microbatch 0 {pipe.replica = 1 : i64}
// CHECK-NEXT: pipe.return

// ONE-LABEL: func.func @s0_U(
// ONE: pipe.call_stage U @s0_U() stage 0 microbatch 0 : () -> ()

func.func @s0_F(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = #pipe.stage<0>} {
  return %x : tensor<4xf32>
}
func.func @s0_B(%y: tensor<4xf32>) attributes {pipe.stage = #pipe.stage<0>} {
  return
}
func.func @s0_U(%w0: tensor<4xf32> {nn.name = "w0", nn.param = dense<1.0> : tensor<4xf32>, nn.role = "weight"},
                %w1: tensor<8xf32> {nn.name = "w1", nn.param = dense<2.0> : tensor<8xf32>, nn.role = "weight"},
                %g0: tensor<4xf32> {nn.name = "grad:w0", nn.role = "grad"},
                %g1: tensor<8xf32> {nn.name = "grad:w1", nn.role = "grad"},
                %m0: tensor<4xf32> {nn.name = "momentum:w0", nn.role = "state"},
                %m1: tensor<8xf32> {nn.name = "momentum:w1", nn.role = "state"},
                %step: tensor<f32> {nn.name = "step:stage0", nn.role = "state"})
    -> (tensor<4xf32> {nn.updates = "w0"}, tensor<8xf32> {nn.updates = "w1"},
        tensor<4xf32> {nn.updates = "momentum:w0"}, tensor<8xf32> {nn.updates = "momentum:w1"},
        tensor<f32> {nn.updates = "step:stage0"},
        tensor<4xf32> {nn.updates = "grad:w0"}, tensor<8xf32> {nn.updates = "grad:w1"})
    attributes {pipe.stage = #pipe.stage<0>} {
  %one = nn.constant dense<1.0> : tensor<f32>
  %next = nn.add %step, %one : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %v0 = nn.add %m0, %g0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %v1 = nn.add %m1, %g1 : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %n0 = nn.sub %w0, %v0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %n1 = nn.sub %w1, %v1 : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %z0 = nn.constant dense<0.0> : tensor<4xf32>
  %z1 = nn.constant dense<0.0> : tensor<8xf32>
  return %n0, %n1, %v0, %v1, %next, %z0, %z1 : tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<f32>, tensor<4xf32>, tensor<8xf32>
}
pipe.program @step_rank0 rank 0 schedule #pipe.schedule<kind = gpipe, stages = 1, microbatches = 1> (%x: tensor<4xf32> {pipe.input = "x", pipe.microbatch = 0 : i64}) {
  %y = pipe.call_stage F @s0_F(%x) stage 0 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
  pipe.call_stage B @s0_B(%y) stage 0 microbatch 0 : (tensor<4xf32>) -> ()
  pipe.call_stage U @s0_U() stage 0 microbatch 0 : () -> ()
  pipe.return
}
