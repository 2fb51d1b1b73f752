// RUN: pipedream-opt %s | pipedream-opt | FileCheck %s
// RUN: pipedream-opt %s --mlir-print-op-generic | pipedream-opt | FileCheck %s

// Stage functions, as pipe-outline-stages and nn-autodiff produce them.
func.func private @stage0_F(tensor<4x4xf32>, tensor<2x4xf32>)
    -> (tensor<2x4xf32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<0>}
func.func private @stage0_B(tensor<4x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>)
    -> tensor<4x4xf32> attributes {pipe.stage = #pipe.stage<0>}
func.func private @stage1_F(tensor<2x4xf32>) -> tensor<2x4xf32>
    attributes {pipe.stage = #pipe.stage<1>}
func.func private @stage1_B(tensor<2x4xf32>) -> tensor<2x4xf32>
    attributes {pipe.stage = #pipe.stage<1>}
func.func private @stage1_W(tensor<2x4xf32>) -> tensor<4x4xf32>
    attributes {pipe.stage = #pipe.stage<1>}
func.func private @stage1_U(tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    attributes {pipe.stage = #pipe.stage<1>}
// A stage function without a `pipe.stage` marker may be called as any stage.
func.func private @any_stage(tensor<2x4xf32>) -> tensor<2x4xf32>

// Global view: every rank's work in one order, values cross with transfers.
// CHECK-LABEL: pipe.program @global_gpipe
// CHECK-SAME: schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 2>
// CHECK-SAME: (%[[W:.*]]: tensor<4x4xf32> {pipe.stage = #pipe.stage<0>}, %[[X0:.*]]: tensor<2x4xf32> {pipe.stage = #pipe.stage<0>}, %[[X1:.*]]: tensor<2x4xf32> {pipe.stage = #pipe.stage<0>})
// CHECK-SAME: -> (tensor<4x4xf32> {pipe.stage = #pipe.stage<0>})
// CHECK: %[[Y0:.*]]:2 = pipe.call_stage F @stage0_F(%[[W]], %[[X0]]) stage 0 microbatch 0 : (tensor<4x4xf32>, tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
// CHECK: pipe.stash %[[Y0]]#1 into activation slot 0 stage 0 microbatch 0 : tensor<2x4xf32>
// CHECK: %[[T0:.*]] = pipe.transfer %[[Y0]]#0 from stage 0 to stage 1 : tensor<2x4xf32>
// CHECK: %[[Z0:.*]] = pipe.call_stage F @stage1_F(%[[T0]]) stage 1 microbatch 0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK: %[[Y1:.*]]:2 = pipe.call_stage F @stage0_F(%[[W]], %[[X1]]) stage 0 microbatch 1
// CHECK: pipe.stash %[[Y1]]#1 into activation slot 1 stage 0 microbatch 1
// CHECK: %[[G0:.*]] = pipe.call_stage B @stage1_B(%[[Z0]]) stage 1 microbatch 0
// CHECK: %[[TG0:.*]] = pipe.transfer %[[G0]] from stage 1 to stage 0 : tensor<2x4xf32>
// CHECK: %[[S0:.*]] = pipe.restore activation slot 0 stage 0 microbatch 0 : tensor<2x4xf32>
// CHECK: %[[DW:.*]] = pipe.call_stage B @stage0_B(%[[W]], %[[S0]], %[[TG0]]) stage 0 microbatch 0
// CHECK: pipe.return %[[DW]] : tensor<4x4xf32>
pipe.program @global_gpipe
    schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 2>
    (%w: tensor<4x4xf32> {pipe.stage = #pipe.stage<0>},
     %x0: tensor<2x4xf32> {pipe.stage = #pipe.stage<0>},
     %x1: tensor<2x4xf32> {pipe.stage = #pipe.stage<0>})
    -> (tensor<4x4xf32> {pipe.stage = #pipe.stage<0>}) {
  %y0, %s0 = pipe.call_stage F @stage0_F(%w, %x0) stage 0 microbatch 0
      : (tensor<4x4xf32>, tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
  pipe.stash %s0 into activation slot 0 stage 0 microbatch 0 : tensor<2x4xf32>
  %t0 = pipe.transfer %y0 from stage 0 to stage 1 : tensor<2x4xf32>
  %z0 = pipe.call_stage F @stage1_F(%t0) stage 1 microbatch 0
      : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %y1, %s1 = pipe.call_stage F @stage0_F(%w, %x1) stage 0 microbatch 1
      : (tensor<4x4xf32>, tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
  pipe.stash %s1 into activation slot 1 stage 0 microbatch 1 : tensor<2x4xf32>
  %g0 = pipe.call_stage B @stage1_B(%z0) stage 1 microbatch 0
      : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %tg0 = pipe.transfer %g0 from stage 1 to stage 0 : tensor<2x4xf32>
  %r0 = pipe.restore activation slot 0 stage 0 microbatch 0 : tensor<2x4xf32>
  %dw = pipe.call_stage B @stage0_B(%w, %r0, %tg0) stage 0 microbatch 0
      : (tensor<4x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
  pipe.return %dw : tensor<4x4xf32>
}

// Per-rank view: rank 1 of a 1F1B pipeline receives, computes and sends.
// CHECK-LABEL: pipe.program @rank1_1f1b rank 1
// CHECK-SAME: schedule #pipe.schedule<kind = "1f1b", stages = 2, microbatches = 4>
// CHECK-SAME: () -> tensor<2x4xf32>
// CHECK: %[[X:.*]] = pipe.recv from 0 tag 0 : tensor<2x4xf32>
// CHECK: %[[Y:.*]] = pipe.call_stage F @stage1_F(%[[X]]) stage 1 microbatch 3
// CHECK: %[[G:.*]] = pipe.call_stage B @stage1_B(%[[Y]]) stage 1 microbatch 3
// CHECK: pipe.send %[[G]] to 0 tag 1 : tensor<2x4xf32>
// CHECK: pipe.return %[[Y]] : tensor<2x4xf32>
pipe.program @rank1_1f1b rank 1
    schedule #pipe.schedule<kind = "1f1b", stages = 2, microbatches = 4>
    () -> tensor<2x4xf32> {
  %x = pipe.recv from 0 tag 0 : tensor<2x4xf32>
  %y = pipe.call_stage F @stage1_F(%x) stage 1 microbatch 3
      : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %g = pipe.call_stage B @stage1_B(%y) stage 1 microbatch 3
      : (tensor<2x4xf32>) -> tensor<2x4xf32>
  pipe.send %g to 0 tag 1 : tensor<2x4xf32>
  pipe.return %y : tensor<2x4xf32>
}

// ZB-H1 splits the backward into B (input gradient) and W (weight gradient);
// U applies the update. Extra program attributes print after the signature.
// CHECK-LABEL: pipe.program @rank1_zb_h1 rank 1
// CHECK-SAME: schedule #pipe.schedule<kind = "zb-h1", stages = 2, microbatches = 2>
// CHECK-SAME: (%[[W:.*]]: tensor<4x4xf32>, %[[G:.*]]: tensor<2x4xf32>) -> tensor<4x4xf32>
// CHECK-SAME: attributes {note = "zero bubble"}
// CHECK: %[[DX:.*]] = pipe.call_stage B @stage1_B(%[[G]]) stage 1 microbatch 1
// CHECK: pipe.send %[[DX]] to 0 tag 5
// CHECK: %[[DW:.*]] = pipe.call_stage W @stage1_W(%[[G]]) stage 1 microbatch 1
// CHECK: %[[NEW:.*]] = pipe.call_stage U @stage1_U(%[[W]], %[[DW]]) stage 1 microbatch 1
// CHECK: pipe.return %[[NEW]]
pipe.program @rank1_zb_h1 rank 1
    schedule #pipe.schedule<kind = "zb-h1", stages = 2, microbatches = 2>
    (%w: tensor<4x4xf32>, %g: tensor<2x4xf32>) -> tensor<4x4xf32>
    attributes {note = "zero bubble"} {
  %dx = pipe.call_stage B @stage1_B(%g) stage 1 microbatch 1
      : (tensor<2x4xf32>) -> tensor<2x4xf32>
  pipe.send %dx to 0 tag 5 : tensor<2x4xf32>
  %dw = pipe.call_stage W @stage1_W(%g) stage 1 microbatch 1
      : (tensor<2x4xf32>) -> tensor<4x4xf32>
  %new = pipe.call_stage U @stage1_U(%w, %dw) stage 1 microbatch 1
      : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  pipe.return %new : tensor<4x4xf32>
}

// PipeDream keeps the weight version each forward used for its backward.
// CHECK-LABEL: pipe.program @rank0_pipedream rank 0
// CHECK-SAME: schedule #pipe.schedule<kind = pipedream, stages = 2, microbatches = 4>
// CHECK: pipe.stash %{{.*}} into weight slot 1 stage 0 microbatch 2 : tensor<4x4xf32>
// CHECK: %{{.*}} = pipe.restore weight slot 1 stage 0 microbatch 2 : tensor<4x4xf32>
pipe.program @rank0_pipedream rank 0
    schedule #pipe.schedule<kind = pipedream, stages = 2, microbatches = 4>
    (%w: tensor<4x4xf32>) -> tensor<4x4xf32> {
  pipe.stash %w into weight slot 1 stage 0 microbatch 2 : tensor<4x4xf32>
  %v = pipe.restore weight slot 1 stage 0 microbatch 2 : tensor<4x4xf32>
  pipe.return %v : tensor<4x4xf32>
}

// 2BW: two weight versions, stashed like PipeDream's.
// CHECK-LABEL: pipe.program @rank1_2bw rank 1
// CHECK-SAME: schedule #pipe.schedule<kind = "2bw", stages = 2, microbatches = 2>
// CHECK: pipe.stash %{{.*}} into weight slot 0 stage 1 microbatch 1
pipe.program @rank1_2bw rank 1
    schedule #pipe.schedule<kind = "2bw", stages = 2, microbatches = 2>
    (%w: tensor<4x4xf32>) -> () {
  pipe.stash %w into weight slot 0 stage 1 microbatch 1 : tensor<4x4xf32>
  pipe.return
}

// Interleaved 1F1B: chunks print only when not 0 (stages) or 1 (schedule).
// CHECK-LABEL: pipe.program @global_interleaved
// CHECK-SAME: schedule #pipe.schedule<kind = "interleaved-1f1b", stages = 2, microbatches = 4, chunks = 2>
// CHECK: %[[A:.*]] = pipe.call_stage F @any_stage(%{{.*}}) stage 1 microbatch 0
// CHECK: %[[B:.*]] = pipe.transfer %[[A]] from stage 1 to stage 0 chunk 1 : tensor<2x4xf32>
// CHECK: %[[C:.*]] = pipe.call_stage F @any_stage(%[[B]]) stage 0 chunk 1 microbatch 0
// CHECK: pipe.stash %[[C]] into activation slot 0 stage 0 chunk 1 microbatch 0
// CHECK: pipe.restore activation slot 0 stage 0 chunk 1 microbatch 0
pipe.program @global_interleaved
    schedule #pipe.schedule<kind = "interleaved-1f1b", stages = 2,
                            microbatches = 4, chunks = 2>
    (%x: tensor<2x4xf32>) -> () {
  %a = pipe.call_stage F @any_stage(%x) stage 1 microbatch 0
      : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %b = pipe.transfer %a from stage 1 to stage 0 chunk 1 : tensor<2x4xf32>
  %c = pipe.call_stage F @any_stage(%b) stage 0 chunk 1 microbatch 0
      : (tensor<2x4xf32>) -> tensor<2x4xf32>
  pipe.stash %c into activation slot 0 stage 0 chunk 1 microbatch 0
      : tensor<2x4xf32>
  %d = pipe.restore activation slot 0 stage 0 chunk 1 microbatch 0
      : tensor<2x4xf32>
  pipe.return
}

// Outside a program (the outliner's output, a test harness) the ops only
// check their own attributes.
// CHECK-LABEL: func.func @outside_program
// CHECK: %[[T:.*]] = pipe.transfer %{{.*}} from stage 0 to stage 7 : tensor<8xi32>
// CHECK: pipe.send %[[T]] to 9 tag 0 : tensor<8xi32>
// CHECK: %[[R:.*]] = pipe.recv from 9 tag 0 : tensor<8xi32>
// CHECK: pipe.stash %[[R]] into weight slot 3 stage 7 microbatch 100 : tensor<8xi32>
// CHECK: pipe.restore weight slot 3 stage 7 microbatch 100 : tensor<8xi32>
// CHECK: pipe.call_stage W @any_stage(%{{.*}}) stage 2 chunk 3 microbatch 5
func.func @outside_program(%x: tensor<8xi32>, %y: tensor<2x4xf32>) {
  %t = pipe.transfer %x from stage 0 to stage 7 : tensor<8xi32>
  pipe.send %t to 9 tag 0 : tensor<8xi32>
  %r = pipe.recv from 9 tag 0 : tensor<8xi32>
  pipe.stash %r into weight slot 3 stage 7 microbatch 100 : tensor<8xi32>
  %s = pipe.restore weight slot 3 stage 7 microbatch 100 : tensor<8xi32>
  %z = pipe.call_stage W @any_stage(%y) stage 2 chunk 3 microbatch 5
      : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return
}
