// Interleaved (K = 2, V = 2): virtual stages 0 and 2 both run on rank 0.
// w is read by virtual stages 0, 2 (rank 0) and 3 (rank 1); u by 0 and 2
// only. A rank holds one copy and one accumulator grad:<w> per weight, which
// all of its readers' B add into, so only the rank's first reader's U
// updates it (else rank 0 would apply the update twice); w's accumulators
// are all-reduced over ranks 0 and 1, u needs no collective.

// RUN: pipedream-opt %s --pipe-build-stage-training="loss=mse microbatches=2" | FileCheck %s --check-prefix=STAGES
// RUN: pipedream-opt %s --pipe-build-stage-training="loss=mse microbatches=2" --pipe-unroll-schedule="kind=interleaved-1f1b microbatches=2 virtual=2" --pipe-verify-schedule --pipe-project-ranks --pipe-verify-schedule | FileCheck %s --check-prefix=RANKS

func.func private @main_stage0(%x: tensor<2x4xf32> {nn.name = "x"}, %w: tensor<4xf32> {nn.name = "w", nn.param = dense<1.0> : tensor<4xf32>}, %u: tensor<4xf32> {nn.name = "u", nn.param = dense<1.0> : tensor<4xf32>}) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<0>} {
  %0 = nn.mul %x, %w : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %1 = nn.add %0, %u : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %1 : tensor<2x4xf32>
}
func.func private @main_stage1(%h: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<1>} {
  %0 = nn.relu %h : tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}
func.func private @main_stage0_chunk1(%w: tensor<4xf32> {nn.name = "w", nn.param = dense<1.0> : tensor<4xf32>}, %u: tensor<4xf32> {nn.name = "u", nn.param = dense<1.0> : tensor<4xf32>}, %h: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<0, chunk = 1>} {
  %0 = nn.mul %h, %w : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %1 = nn.add %0, %u : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %1 : tensor<2x4xf32>
}
func.func private @main_stage1_chunk1(%w: tensor<4xf32> {nn.name = "w", nn.param = dense<1.0> : tensor<4xf32>}, %h: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<1, chunk = 1>} {
  %0 = nn.mul %h, %w : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}
func.func @main(%x: tensor<2x4xf32> {nn.name = "x", pipe.stage = #pipe.stage<0>}, %w: tensor<4xf32> {nn.name = "w", nn.param = dense<1.0> : tensor<4xf32>}, %u: tensor<4xf32> {nn.name = "u", nn.param = dense<1.0> : tensor<4xf32>}) -> tensor<2x4xf32> {
  %0 = call @main_stage0(%x, %w, %u) {pipe.stage = #pipe.stage<0>} : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %1 = pipe.transfer %0 from stage 0 to stage 1 : tensor<2x4xf32>
  %2 = call @main_stage1(%1) {pipe.stage = #pipe.stage<1>} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %3 = pipe.transfer %2 from stage 1 to stage 0 chunk 1 : tensor<2x4xf32>
  %4 = call @main_stage0_chunk1(%w, %u, %3) {pipe.stage = #pipe.stage<0, chunk = 1>} : (tensor<4xf32>, tensor<4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %5 = pipe.transfer %4 from stage 0 chunk 1 to stage 1 chunk 1 : tensor<2x4xf32>
  %6 = call @main_stage1_chunk1(%w, %5) {pipe.stage = #pipe.stage<1, chunk = 1>} : (tensor<4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %6 : tensor<2x4xf32>
}

// STAGES-LABEL: func.func @stage0_U(
// STAGES-SAME: {nn.name = "w.next", nn.updates = "w"}
// STAGES-SAME: {nn.name = "u.next", nn.updates = "u"}
// STAGES-LABEL: func.func @stage2_B(
// STAGES-SAME: {nn.name = "grad:w", nn.role = "grad"}
// STAGES-SAME: {nn.name = "grad:u", nn.role = "grad"}
// STAGES-LABEL: func.func @stage2_U(
// STAGES-NOT: nn.updates = "w"
// STAGES-NOT: nn.updates = "u"
// STAGES-LABEL: func.func @stage3_U(
// STAGES-SAME: {nn.name = "w.next", nn.updates = "w"}

// RANKS-LABEL: pipe.program @train_rank0 rank 0
// RANKS: pipe.all_reduce_grad "w" stages [#pipe.stage<0>, #pipe.stage<0, chunk = 1>, #pipe.stage<1, chunk = 1>] microbatch 1 : tensor<4xf32>
// RANKS-NEXT: call_stage U @stage0_U
// RANKS-NOT: all_reduce_grad
// RANKS-LABEL: pipe.program @train_rank1 rank 1
// RANKS: pipe.all_reduce_grad "w" stages [#pipe.stage<0>, #pipe.stage<0, chunk = 1>, #pipe.stage<1, chunk = 1>] microbatch 1 : tensor<4xf32>
// RANKS-NEXT: call_stage U @stage3_U
// RANKS-NOT: all_reduce_grad
