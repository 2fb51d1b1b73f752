// Gradient clipping in a pipeline (docs/Pipe.md, "Gradient clipping"),
// on the interleaved input of shared-weights-chunks.mlir: w is read by
// stage 0 (rank 0), stage 2 (rank 0, chunk 1) and stage 3 (rank 1, chunk
// 1), u by stages 0 and 2. Each stage gets an N adding the squared norm of
// the gradients its U applies into grad:pipedream.grad_norm_sq; a gradient
// several stages' U apply (w on ranks 0 and 1) counts on its first stage
// only, so the sum over the stages is ||g_w||^2 + ||g_u||^2. Each U reads
// the sum and scales its gradients by min(1, max / (sqrt(sum) + 1e-6)).
// RUN: pipedream-opt %s --pipe-build-stage-training="loss=mse microbatches=2 clip-grad-norm=0.25" | FileCheck %s --check-prefix=STAGES
// RUN: pipedream-opt %s --pipe-build-stage-training="loss=mse microbatches=2 clip-grad-norm=0.25" --pipe-unroll-schedule="kind=interleaved-1f1b microbatches=2 virtual=2" --pipe-verify-schedule --pipe-project-ranks --pipe-verify-schedule | FileCheck %s --check-prefix=RANKS
// RUN: pipedream-opt %s --pipe-build-stage-training="loss=mse microbatches=2 clip-grad-norm=0.25" --pipe-unroll-schedule="kind=interleaved-1f1b microbatches=2 virtual=2" --pipe-project-ranks --pipe-lower-rank-programs | FileCheck %s --check-prefix=NATIVE
// RUN: pipedream-opt %s --pipe-build-stage-training="loss=mse microbatches=2 clip-grad-norm=0.25 stage-replicas=2,1" | FileCheck %s --check-prefix=ROUTED
// RUN: pipedream-opt %s --pipe-build-stage-training="loss=mse microbatches=2" | FileCheck %s --check-prefix=OFF

// STAGES-LABEL: func.func @stage0_N(
// STAGES-SAME: %[[GW:[^:]*]]: tensor<4xf32> {nn.name = "grad:w", nn.role = "grad"}
// STAGES-SAME: %[[GU:[^:]*]]: tensor<4xf32> {nn.name = "grad:u", nn.role = "grad"}
// STAGES-SAME: %[[ACC:[^:]*]]: tensor<f32> {nn.name = "grad:pipedream.grad_norm_sq", nn.role = "grad"}
// STAGES-SAME: -> (tensor<f32> {nn.name = "grad:pipedream.grad_norm_sq.next", nn.updates = "grad:pipedream.grad_norm_sq"})
// STAGES-SAME: attributes {pipe.stage = #pipe.stage<0>}
// STAGES: %[[SW:.*]] = nn.mul %[[GW]], %[[GW]]
// STAGES: %[[RW:.*]] = nn.reduce_sum %[[SW]]
// STAGES: %[[SU:.*]] = nn.mul %[[GU]], %[[GU]]
// STAGES: %[[RU:.*]] = nn.reduce_sum %[[SU]]
// STAGES: %[[BOTH:.*]] = nn.add %[[RW]], %[[RU]]
// STAGES: %[[NEW:.*]] = nn.add %[[ACC]], %[[BOTH]]
// STAGES: return %[[NEW]]
// Stages 1 (no weights), 2 and 3 (w and u counted on stage 0) add nothing.
// STAGES-LABEL: func.func @stage1_N(
// STAGES-SAME: %{{[^:]*}}: tensor<f32> {nn.name = "grad:pipedream.grad_norm_sq", nn.role = "grad"})
// STAGES-LABEL: func.func @stage2_N(
// STAGES-SAME: %{{[^:]*}}: tensor<f32> {nn.name = "grad:pipedream.grad_norm_sq", nn.role = "grad"})
// STAGES-LABEL: func.func @stage3_N(
// STAGES-SAME: %{{[^:]*}}: tensor<f32> {nn.name = "grad:pipedream.grad_norm_sq", nn.role = "grad"})
// The updates read the norm (and leave it, every U of the rank reads it);
// they clear only their gradients.
// STAGES-LABEL: func.func @stage0_U(
// STAGES-SAME: %[[UGW:[^:]*]]: tensor<4xf32> {nn.name = "grad:w", nn.role = "grad"}
// STAGES-SAME: %[[NORM:[^:]*]]: tensor<f32> {nn.name = "grad:pipedream.grad_norm_sq", nn.role = "grad"}
// STAGES-NOT: nn.updates = "grad:pipedream.grad_norm_sq"
// STAGES-SAME: attributes
// STAGES: %[[ROOT:.*]] = nn.sqrt %[[NORM]]
// STAGES: %[[MAX:.*]] = nn.constant dense<2.500000e-01>
// STAGES: %[[DEN:.*]] = nn.add %[[ROOT]]
// STAGES: %[[RATIO:.*]] = nn.div %[[MAX]], %[[DEN]]
// STAGES: %[[COEF:.*]] = nn.min %{{.*}}, %[[RATIO]]
// STAGES: nn.mul %[[UGW]], %[[COEF]]
// STAGES-LABEL: func.func @stage3_U(
// STAGES-SAME: {nn.name = "grad:pipedream.grad_norm_sq", nn.role = "grad"}
// STAGES: nn.sqrt

// Per rank: the shared weight's all-reduce, the N of each of the rank's
// stages, the sum of the norms over all four stages, then the updates.
// RANKS-LABEL: pipe.program @train_rank0 rank 0
// RANKS: call_stage B @stage0_B{{.*}} microbatch 1
// RANKS-NEXT: pipe.all_reduce_grad "w"
// RANKS-NEXT: pipe.call_stage N @stage0_N() stage 0 microbatch 1
// RANKS-NEXT: pipe.call_stage N @stage2_N() stage 0 chunk 1 microbatch 1
// RANKS-NEXT: pipe.all_reduce_grad "pipedream.grad_norm_sq" stages [#pipe.stage<0>, #pipe.stage<1>, #pipe.stage<0, chunk = 1>, #pipe.stage<1, chunk = 1>] microbatch 1 : tensor<f32>
// RANKS-NEXT: pipe.call_stage U @stage0_U()
// RANKS-NEXT: pipe.call_stage U @stage2_U()
// RANKS-LABEL: pipe.program @train_rank1 rank 1
// RANKS: pipe.all_reduce_grad "w"
// RANKS-NEXT: pipe.call_stage N @stage1_N() stage 1 microbatch 1
// RANKS-NEXT: pipe.call_stage N @stage3_N() stage 1 chunk 1 microbatch 1
// RANKS-NEXT: pipe.all_reduce_grad "pipedream.grad_norm_sq"
// RANKS-NEXT: pipe.call_stage U @stage1_U()
// RANKS-NEXT: pipe.call_stage U @stage3_U()

// The native rank entries call N like any stage function.
// NATIVE-DAG: func.func private @pipedream_stage0_N(!llvm.ptr)
// NATIVE-DAG: func.func private @pipedream_stage2_N(!llvm.ptr)
// NATIVE-DAG: func.func private @pipedream_stage1_N(!llvm.ptr)
// NATIVE-DAG: func.func private @pipedream_stage3_N(!llvm.ptr)

// Non-uniform replication: the sum runs over every replica of every stage,
// each with the stage's whole norm; stage 0's two replicas add half each.
// ROUTED-LABEL: func.func @stage0_N(
// ROUTED: %[[BOTH:.*]] = nn.add
// ROUTED: %[[TWO:.*]] = nn.constant dense<2.000000e+00> : tensor<f32>
// ROUTED: %[[HALF:.*]] = nn.div %[[BOTH]], %[[TWO]]
// ROUTED: nn.add %{{.*}}, %[[HALF]]
// ROUTED-LABEL: func.func @stage1_N(
// ROUTED-NOT: nn.div
// ROUTED: return

// OFF-NOT: _N(
// OFF-NOT: grad_norm_sq
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


