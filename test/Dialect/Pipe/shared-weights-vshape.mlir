// V-shaped schedules (zb-v, dualpipe-v; K = 2, V = 2): rank 0 holds
// virtual stages 0 and 3, rank 1 stages 1 and 2. Weight a is read by
// stages 0 and 2, b by 1 and 3 (ALBERT's layers share every weight, and a
// 4-way split of its two layers lands so). Each all-reduce placed before
// its U would have rank 0 reduce a then b, rank 1 b then a: a deadlock,
// which pipe-unroll-schedule reported as an error. A synchronous schedule
// now defers its updates: each rank runs all its F, B and W, then every
// all-reduce in one order (a, b), then its U. pipe-verify-schedule checks
// the programs (no deadlock, every gradient summed before its update).

// RUN: pipedream-opt %s --pipe-build-stage-training="loss=mse microbatches=4 split-backward" --pipe-unroll-schedule="kind=zb-v microbatches=4 virtual=2" --pipe-verify-schedule --pipe-project-ranks --pipe-verify-schedule | FileCheck %s
// RUN: pipedream-opt %s --pipe-build-stage-training="loss=mse microbatches=4 split-backward" --pipe-unroll-schedule="kind=dualpipe-v microbatches=4 virtual=2" --pipe-verify-schedule --pipe-project-ranks --pipe-verify-schedule | FileCheck %s

// CHECK-LABEL: pipe.program @train_rank0 rank 0
// CHECK: pipe.all_reduce_grad "a" stages [#pipe.stage<0>, #pipe.stage<1, chunk = 1, reversed = true>] microbatch 3
// CHECK-NEXT: pipe.all_reduce_grad "b" stages [#pipe.stage<1>, #pipe.stage<0, chunk = 1, reversed = true>] microbatch 3
// CHECK-NEXT: pipe.call_stage U @stage0_U
// CHECK-NEXT: pipe.call_stage U @stage3_U
// CHECK-NOT: pipe.call_stage
// CHECK-LABEL: pipe.program @train_rank1 rank 1
// CHECK: pipe.all_reduce_grad "a"
// CHECK-NEXT: pipe.all_reduce_grad "b"
// CHECK-NEXT: pipe.call_stage U @stage1_U
// CHECK-NEXT: pipe.call_stage U @stage2_U
// CHECK-NOT: pipe.call_stage

func.func private @main_stage0(%x: tensor<2x4xf32> {nn.name = "x"}, %a: tensor<4xf32> {nn.name = "a", nn.param = dense<1.0> : tensor<4xf32>}) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<0>} {
  %0 = nn.mul %x, %a : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}
func.func private @main_stage1(%b: tensor<4xf32> {nn.name = "b", nn.param = dense<1.0> : tensor<4xf32>}, %h: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<1>} {
  %0 = nn.mul %h, %b : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %1 = nn.tanh %0 : tensor<2x4xf32>
  return %1 : tensor<2x4xf32>
}
func.func private @main_stage1_chunk1(%a: tensor<4xf32> {nn.name = "a", nn.param = dense<1.0> : tensor<4xf32>}, %h: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<1, chunk = 1, reversed = true>} {
  %0 = nn.mul %h, %a : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %1 = nn.tanh %0 : tensor<2x4xf32>
  return %1 : tensor<2x4xf32>
}
func.func private @main_stage0_chunk1(%b: tensor<4xf32> {nn.name = "b", nn.param = dense<1.0> : tensor<4xf32>}, %h: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<0, chunk = 1, reversed = true>} {
  %0 = nn.mul %h, %b : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}
func.func @main(%x: tensor<2x4xf32> {nn.name = "x", pipe.stage = #pipe.stage<0>}, %a: tensor<4xf32> {nn.name = "a", nn.param = dense<1.0> : tensor<4xf32>}, %b: tensor<4xf32> {nn.name = "b", nn.param = dense<1.0> : tensor<4xf32>}) -> tensor<2x4xf32> {
  %0 = call @main_stage0(%x, %a) {pipe.stage = #pipe.stage<0>} : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %1 = pipe.transfer %0 from stage 0 to stage 1 : tensor<2x4xf32>
  %2 = call @main_stage1(%b, %1) {pipe.stage = #pipe.stage<1>} : (tensor<4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %3 = pipe.transfer %2 from stage 1 to stage 1 chunk 1 reversed : tensor<2x4xf32>
  %4 = call @main_stage1_chunk1(%a, %3) {pipe.stage = #pipe.stage<1, chunk = 1, reversed = true>} : (tensor<4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %5 = pipe.transfer %4 from stage 1 chunk 1 reversed to stage 0 chunk 1 reversed : tensor<2x4xf32>
  %6 = call @main_stage0_chunk1(%b, %5) {pipe.stage = #pipe.stage<0, chunk = 1, reversed = true>} : (tensor<4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %6 : tensor<2x4xf32>
}
