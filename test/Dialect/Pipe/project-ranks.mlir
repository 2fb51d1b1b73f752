// RUN: pipedream-opt %s -split-input-file -pipe-project-ranks | FileCheck %s
// K = 4, M = 8, 1F1B from the unroller: rank 0 sends the activation of
// micro-batch m to rank 1 with tag m right after its F and receives the
// gradient of m with tag m before its B; rank 3 receives the activation of
// m (tag m) before its F and sends its gradient (tag m) after its B.
// RUN: pipedream-opt %S/Inputs/four-stages.mlir -pipe-unroll-schedule="kind=1f1b microbatches=8" -pipe-project-ranks -pipe-verify-schedule | FileCheck %s --check-prefix=K4
// Every schedule kind projects to verified per-rank programs.
// RUN: pipedream-opt %S/Inputs/four-stages.mlir -pipe-unroll-schedule="kind=gpipe microbatches=8" -pipe-project-ranks -pipe-verify-schedule -o /dev/null
// RUN: pipedream-opt %S/Inputs/four-stages.mlir -pipe-unroll-schedule="kind=pipedream microbatches=8" -pipe-project-ranks -pipe-verify-schedule -o /dev/null
// RUN: pipedream-opt %S/Inputs/four-stages.mlir -pipe-unroll-schedule="kind=2bw microbatches=8" -pipe-project-ranks -pipe-verify-schedule -o /dev/null
// RUN: pipedream-opt %S/Inputs/four-stages-chunked.mlir -pipe-unroll-schedule="kind=interleaved-1f1b microbatches=8 virtual=2" -pipe-project-ranks -pipe-verify-schedule -o /dev/null
// RUN: pipedream-opt %S/Inputs/four-stages-split.mlir -pipe-unroll-schedule="kind=zb-h1 microbatches=8" -pipe-project-ranks -pipe-verify-schedule -o /dev/null
// keep-global keeps @train next to the per-rank programs.
// RUN: pipedream-opt %S/Inputs/two-stages.mlir -pipe-unroll-schedule="kind=1f1b microbatches=2" -pipe-project-ranks=keep-global=true | FileCheck %s --check-prefix=KEEP

// K4-LABEL: pipe.program @train_rank0 rank 0
// K4: %[[A0:.*]]:2 = pipe.call_stage F @s0_F({{.*}}) stage 0 microbatch 0
// K4-NEXT: pipe.send %[[A0]]#0 to 1 tag 0
// K4: pipe.call_stage F @s0_F({{.*}}) stage 0 microbatch 1
// K4-NEXT: pipe.send %{{.*}}#0 to 1 tag 1
// K4: pipe.call_stage F @s0_F({{.*}}) stage 0 microbatch 2
// K4-NEXT: pipe.send %{{.*}}#0 to 1 tag 2
// K4: pipe.call_stage F @s0_F({{.*}}) stage 0 microbatch 3
// K4-NEXT: pipe.send %{{.*}}#0 to 1 tag 3
// K4: %[[G0:.*]] = pipe.recv from 1 tag 0 : tensor<2x4xf32>
// K4-NEXT: pipe.call_stage B @s0_B(%{{.*}}, %[[G0]]) stage 0 microbatch 0
// K4: pipe.send %{{.*}}#0 to 1 tag 4
// K4: %[[G4:.*]] = pipe.recv from 1 tag 4
// K4: pipe.send %{{.*}}#0 to 1 tag 7
// K4: pipe.call_stage B @s0_B(%{{.*}}, %[[G4]]) stage 0 microbatch 4
// K4: %[[G7:.*]] = pipe.recv from 1 tag 7
// K4-NEXT: pipe.call_stage B @s0_B(%{{.*}}, %[[G7]]) stage 0 microbatch 7
// K4-NEXT: pipe.call_stage U @s0_U
// K4-NOT: pipe.send
// K4: pipe.return

// K4-LABEL: pipe.program @train_rank1 rank 1
// K4-LABEL: pipe.program @train_rank2 rank 2
// K4-LABEL: pipe.program @train_rank3 rank 3
// K4: %[[X0:.*]] = pipe.recv from 2 tag 0
// K4-NEXT: %[[Y0:.*]]:2 = pipe.call_stage F @s3_F(%[[X0]]) stage 3 microbatch 0
// K4: %[[D0:.*]] = pipe.call_stage B @s3_B({{.*}}) stage 3 microbatch 0
// K4: pipe.send %[[D0]]{{(#0)?}} to 2 tag 0
// K4: %[[X7:.*]] = pipe.recv from 2 tag 7
// K4-NEXT: %[[Y7:.*]]:2 = pipe.call_stage F @s3_F(%[[X7]]) stage 3 microbatch 7
// K4: %[[D7:.*]] = pipe.call_stage B @s3_B({{.*}}) stage 3 microbatch 7
// K4-NEXT: pipe.send %[[D7]]{{(#0)?}} to 2 tag 7
// K4-NEXT: pipe.call_stage U @s3_U
// K4-NEXT: pipe.return %[[Y0]]#0, {{.*}}, %[[Y7]]#0 :
// K4-NOT: pipe.program @train schedule

// KEEP: pipe.program @train schedule
// KEEP: pipe.program @train_rank0 rank 0
// KEEP: pipe.program @train_rank1 rank 1

// -----

// K = 2, M = 2, 1F1B, written by hand: arguments and results go to the rank
// their pipe.stage names; each transfer becomes a send on the producer's
// rank right after the producer and a receive on the consumer's rank,
// moved down past local work (restores, stage calls that do not read it)
// to its reader or the next message. Tags count per (source, destination).

func.func private @s0_F(tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0_B(tensor<2x4xf32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0_U() attributes {pipe.stage = #pipe.stage<0>}
func.func private @s1_F(tensor<2x4xf32>) -> (tensor<f32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1_B(tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1_U() attributes {pipe.stage = #pipe.stage<1>}

pipe.program @step schedule #pipe.schedule<kind = "1f1b", stages = 2, microbatches = 2>
    (%x0: tensor<2x4xf32> {pipe.stage = #pipe.stage<0>}, %x1: tensor<2x4xf32> {pipe.stage = #pipe.stage<0>})
    -> (tensor<f32> {pipe.stage = #pipe.stage<1>}, tensor<f32> {pipe.stage = #pipe.stage<1>}) {
  %0:2 = pipe.call_stage F @s0_F(%x0) stage 0 microbatch 0 : (tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
  %1 = pipe.transfer %0#0 from stage 0 to stage 1 : tensor<2x4xf32>
  pipe.stash %0#1 into activation slot 0 stage 0 microbatch 0 : tensor<2x4xf32>
  %2:2 = pipe.call_stage F @s0_F(%x1) stage 0 microbatch 1 : (tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
  %3 = pipe.transfer %2#0 from stage 0 to stage 1 : tensor<2x4xf32>
  pipe.stash %2#1 into activation slot 1 stage 0 microbatch 1 : tensor<2x4xf32>
  %4:2 = pipe.call_stage F @s1_F(%1) stage 1 microbatch 0 : (tensor<2x4xf32>) -> (tensor<f32>, tensor<2x4xf32>)
  pipe.stash %4#1 into activation slot 0 stage 1 microbatch 0 : tensor<2x4xf32>
  %5 = pipe.restore activation slot 0 stage 1 microbatch 0 : tensor<2x4xf32>
  %6 = pipe.call_stage B @s1_B(%5) stage 1 microbatch 0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %7 = pipe.transfer %6 from stage 1 to stage 0 : tensor<2x4xf32>
  %8 = pipe.restore activation slot 0 stage 0 microbatch 0 : tensor<2x4xf32>
  pipe.call_stage B @s0_B(%8, %7) stage 0 microbatch 0 : (tensor<2x4xf32>, tensor<2x4xf32>) -> ()
  %9:2 = pipe.call_stage F @s1_F(%3) stage 1 microbatch 1 : (tensor<2x4xf32>) -> (tensor<f32>, tensor<2x4xf32>)
  pipe.stash %9#1 into activation slot 0 stage 1 microbatch 1 : tensor<2x4xf32>
  %10 = pipe.restore activation slot 0 stage 1 microbatch 1 : tensor<2x4xf32>
  %11 = pipe.call_stage B @s1_B(%10) stage 1 microbatch 1 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %12 = pipe.transfer %11 from stage 1 to stage 0 : tensor<2x4xf32>
  %13 = pipe.restore activation slot 1 stage 0 microbatch 1 : tensor<2x4xf32>
  pipe.call_stage B @s0_B(%13, %12) stage 0 microbatch 1 : (tensor<2x4xf32>, tensor<2x4xf32>) -> ()
  pipe.call_stage U @s1_U() stage 1 microbatch 1 : () -> ()
  pipe.call_stage U @s0_U() stage 0 microbatch 1 : () -> ()
  pipe.return %4#0, %9#0 : tensor<f32>, tensor<f32>
}

// CHECK-NOT: pipe.program @step schedule
// CHECK-LABEL: pipe.program @step_rank0 rank 0 schedule #pipe.schedule<kind = "1f1b", stages = 2, microbatches = 2>
// CHECK-SAME: (%[[X0:.*]]: tensor<2x4xf32> {pipe.stage = #pipe.stage<0>}, %[[X1:.*]]: tensor<2x4xf32> {pipe.stage = #pipe.stage<0>}) {
// CHECK-NEXT: %[[A:.*]]:2 = pipe.call_stage F @s0_F(%[[X0]]) stage 0 microbatch 0
// CHECK-NEXT: pipe.send %[[A]]#0 to 1 tag 0 : tensor<2x4xf32>
// CHECK-NEXT: pipe.stash %[[A]]#1 into activation slot 0 stage 0 microbatch 0
// CHECK-NEXT: %[[B:.*]]:2 = pipe.call_stage F @s0_F(%[[X1]]) stage 0 microbatch 1
// CHECK-NEXT: pipe.send %[[B]]#0 to 1 tag 1 : tensor<2x4xf32>
// CHECK-NEXT: pipe.stash %[[B]]#1 into activation slot 1 stage 0 microbatch 1
// CHECK-NEXT: %[[R0:.*]] = pipe.restore activation slot 0 stage 0 microbatch 0
// CHECK-NEXT: %[[G0:.*]] = pipe.recv from 1 tag 0 : tensor<2x4xf32>
// CHECK-NEXT: pipe.call_stage B @s0_B(%[[R0]], %[[G0]]) stage 0 microbatch 0
// CHECK-NEXT: %[[R1:.*]] = pipe.restore activation slot 1 stage 0 microbatch 1
// CHECK-NEXT: %[[G1:.*]] = pipe.recv from 1 tag 1 : tensor<2x4xf32>
// CHECK-NEXT: pipe.call_stage B @s0_B(%[[R1]], %[[G1]]) stage 0 microbatch 1
// CHECK-NEXT: pipe.call_stage U @s0_U() stage 0 microbatch 1
// CHECK-NEXT: pipe.return
// CHECK-NEXT: }

// CHECK-LABEL: pipe.program @step_rank1 rank 1 schedule #pipe.schedule<kind = "1f1b", stages = 2, microbatches = 2>
// CHECK-SAME: () -> (tensor<f32> {pipe.stage = #pipe.stage<1>}, tensor<f32> {pipe.stage = #pipe.stage<1>}) {
// CHECK-NEXT: %[[Y0:.*]] = pipe.recv from 0 tag 0 : tensor<2x4xf32>
// CHECK-NEXT: %[[F0:.*]]:2 = pipe.call_stage F @s1_F(%[[Y0]]) stage 1 microbatch 0
// CHECK-NEXT: pipe.stash %[[F0]]#1 into activation slot 0 stage 1 microbatch 0
// CHECK-NEXT: %[[S0:.*]] = pipe.restore activation slot 0 stage 1 microbatch 0
// CHECK-NEXT: %[[D0:.*]] = pipe.call_stage B @s1_B(%[[S0]]) stage 1 microbatch 0
// The activation of micro-batch 1 was due before F 0 (global order) and
// sinks to the next message.
// CHECK-NEXT: %[[Y1:.*]] = pipe.recv from 0 tag 1 : tensor<2x4xf32>
// CHECK-NEXT: pipe.send %[[D0]] to 0 tag 0 : tensor<2x4xf32>
// CHECK-NEXT: %[[F1:.*]]:2 = pipe.call_stage F @s1_F(%[[Y1]]) stage 1 microbatch 1
// CHECK-NEXT: pipe.stash
// CHECK-NEXT: pipe.restore
// CHECK-NEXT: %[[D1:.*]] = pipe.call_stage B @s1_B
// CHECK-NEXT: pipe.send %[[D1]] to 0 tag 1 : tensor<2x4xf32>
// CHECK-NEXT: pipe.call_stage U @s1_U() stage 1 microbatch 1
// CHECK-NEXT: pipe.return %[[F0]]#0, %[[F1]]#0 : tensor<f32>, tensor<f32>

// -----

// Interleaved, one rank (K = 1, V = 2): a transfer between two chunks of
// the same rank is no message; an operand-free op without a stage is
// copied to the ranks that use it, ops without a stage follow their
// operands.

func.func private @c0_F(tensor<2xf32>) -> tensor<2xf32> attributes {pipe.stage = #pipe.stage<0>}
func.func private @c1_F(tensor<2xf32>) -> tensor<2xf32> attributes {pipe.stage = #pipe.stage<0, chunk = 1>}

// CHECK-LABEL: pipe.program @one_rank_rank0 rank 0
// CHECK-NEXT: %[[C:.*]] = arith.constant
// CHECK-NEXT: %[[S:.*]] = arith.addf %{{.*}}, %[[C]]
// CHECK-NEXT: %[[A:.*]] = pipe.call_stage F @c0_F(%[[S]]) stage 0 microbatch 0
// CHECK-NEXT: %[[B:.*]] = pipe.call_stage F @c1_F(%[[A]]) stage 0 chunk 1 microbatch 0
// CHECK-NEXT: pipe.return %[[B]]
pipe.program @one_rank schedule #pipe.schedule<kind = "interleaved-1f1b", stages = 1, microbatches = 1, chunks = 2>
    (%x: tensor<2xf32> {pipe.stage = #pipe.stage<0>}) -> (tensor<2xf32> {pipe.stage = #pipe.stage<0, chunk = 1>}) {
  %c = arith.constant dense<1.0> : tensor<2xf32>
  %s = arith.addf %x, %c : tensor<2xf32>
  %a = pipe.call_stage F @c0_F(%s) stage 0 microbatch 0 : (tensor<2xf32>) -> tensor<2xf32>
  %t = pipe.transfer %a from stage 0 to stage 0 chunk 1 : tensor<2xf32>
  %b = pipe.call_stage F @c1_F(%t) stage 0 chunk 1 microbatch 0 : (tensor<2xf32>) -> tensor<2xf32>
  pipe.return %b : tensor<2xf32>
}
