// RUN: pipedream-opt %s -pipe-shard-optimizer="stage-shards=2,1" | FileCheck %s
// RUN: pipedream-opt %s -pipe-shard-optimizer="stage-shards=1,3" | FileCheck %s --check-prefix=THREE

// Non-uniform replication (PipeDream's 1F1B-RR): stage 0 on two replicas
// splits its update, stage 1 on one keeps its whole update; with 1,3 the
// other way round, over three shards (the third gets no weight: only the
// step counter every shard keeps).

// CHECK-LABEL: func.func @s0_U_shard0(
// CHECK-SAME: {nn.name = "w1"
// CHECK-SAME: attributes {pipe.replica = 0 : i64, pipe.stage = #pipe.stage<0>}
// CHECK-LABEL: func.func @s0_U_shard1(
// CHECK-SAME: {nn.name = "w0"
// CHECK-SAME: attributes {pipe.replica = 1 : i64, pipe.stage = #pipe.stage<0>}
// CHECK-NOT: func.func @s0_U(
// CHECK-LABEL: func.func @s1_U(
// CHECK-NOT: _shard
// CHECK-LABEL: pipe.program @step_rank0
// CHECK-NEXT: pipe.call_stage U @s0_U_shard0() stage 0 microbatch 0 {pipe.replica = 0 : i64}
// CHECK-NEXT: pipe.call_stage U @s0_U_shard1() stage 0 microbatch 0 {pipe.replica = 1 : i64}
// CHECK-NEXT: pipe.return
// CHECK-LABEL: pipe.program @step_rank1
// CHECK-NEXT: pipe.call_stage U @s1_U() stage 1 microbatch 0 : () -> ()
// CHECK-NEXT: pipe.return

// THREE-LABEL: func.func @s0_U(
// THREE-LABEL: func.func @s1_U_shard0(
// THREE-SAME: {nn.name = "v"
// THREE-LABEL: func.func @s1_U_shard1(
// THREE-NOT: nn.name = "v"
// THREE-SAME: {nn.name = "step:stage1"
// THREE-LABEL: func.func @s1_U_shard2(
// THREE-NOT: func.func @s1_U(
// THREE-LABEL: pipe.program @step_rank1
// THREE-NEXT: pipe.call_stage U @s1_U_shard0() stage 1 microbatch 0 {pipe.replica = 0 : i64}
// THREE-NEXT: pipe.call_stage U @s1_U_shard1() stage 1 microbatch 0 {pipe.replica = 1 : i64}
// THREE-NEXT: pipe.call_stage U @s1_U_shard2() stage 1 microbatch 0 {pipe.replica = 2 : i64}

func.func @s0_U(%w0: tensor<4xf32> {nn.name = "w0", nn.param = dense<1.0> : tensor<4xf32>, nn.role = "weight"},
                %w1: tensor<8xf32> {nn.name = "w1", nn.param = dense<2.0> : tensor<8xf32>, nn.role = "weight"},
                %g0: tensor<4xf32> {nn.name = "grad:w0", nn.role = "grad"},
                %g1: tensor<8xf32> {nn.name = "grad:w1", nn.role = "grad"})
    -> (tensor<4xf32> {nn.updates = "w0"}, tensor<8xf32> {nn.updates = "w1"})
    attributes {pipe.stage = #pipe.stage<0>} {
  %n0 = nn.sub %w0, %g0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %n1 = nn.sub %w1, %g1 : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %n0, %n1 : tensor<4xf32>, tensor<8xf32>
}
func.func @s1_U(%v: tensor<4xf32> {nn.name = "v", nn.param = dense<1.0> : tensor<4xf32>, nn.role = "weight"},
                %g: tensor<4xf32> {nn.name = "grad:v", nn.role = "grad"},
                %step: tensor<f32> {nn.name = "step:stage1", nn.role = "state"})
    -> (tensor<4xf32> {nn.updates = "v"}, tensor<f32> {nn.updates = "step:stage1"})
    attributes {pipe.stage = #pipe.stage<1>} {
  %one = nn.constant dense<1.0> : tensor<f32>
  %next = nn.add %step, %one : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %n = nn.sub %v, %g : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %n, %next : tensor<4xf32>, tensor<f32>
}
pipe.program @step_rank0 rank 0 schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 1> () {
  pipe.call_stage U @s0_U() stage 0 microbatch 0 : () -> ()
  pipe.return
}
pipe.program @step_rank1 rank 1 schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 1> () {
  pipe.call_stage U @s1_U() stage 1 microbatch 0 : () -> ()
  pipe.return
}
