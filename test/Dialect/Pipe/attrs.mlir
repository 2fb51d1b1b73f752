// RUN: pipedream-opt %s | pipedream-opt | FileCheck %s

// The partitioner's output: every op carries its stage.
// CHECK-LABEL: func.func @stage_marks
// CHECK-SAME: (%{{.*}}: tensor<4xf32> {pipe.stage = #pipe.stage<0>})
// CHECK-SAME: -> (tensor<4xf32> {pipe.stage = #pipe.stage<1, chunk = 1>})
// CHECK: nn.relu %{{.*}} {pipe.stage = #pipe.stage<0>}
// CHECK: nn.relu %{{.*}} {pipe.stage = #pipe.stage<1, chunk = 1>}
func.func @stage_marks(%x: tensor<4xf32> {pipe.stage = #pipe.stage<0>})
    -> (tensor<4xf32> {pipe.stage = #pipe.stage<1, chunk = 1>}) {
  %0 = nn.relu %x {pipe.stage = #pipe.stage<0>} : tensor<4xf32>
  // A zero chunk is the default and is not printed.
  %1 = nn.relu %0 {pipe.stage = #pipe.stage<1, chunk = 1>} : tensor<4xf32>
  %2 = nn.relu %1 {pipe.stage = #pipe.stage<1, chunk = 0>} : tensor<4xf32>
  return %1 : tensor<4xf32>
}

// CHECK-LABEL: func.func @chunk_zero_elided
// CHECK-SAME: pipe.stage = #pipe.stage<3>}
func.func @chunk_zero_elided() attributes {pipe.stage = #pipe.stage<3, chunk = 0>} {
  return
}

// Every schedule kind; kinds that are not MLIR keywords print quoted, and a
// quoted keyword kind parses too.
// CHECK-LABEL: func.func @schedules
// CHECK-SAME: gpipe = #pipe.schedule<kind = gpipe, stages = 4, microbatches = 8>
// CHECK-SAME: gpipe_quoted = #pipe.schedule<kind = gpipe, stages = 1, microbatches = 1>
// CHECK-SAME: interleaved = #pipe.schedule<kind = "interleaved-1f1b", stages = 4, microbatches = 8, chunks = 2>
// CHECK-SAME: one_f_one_b = #pipe.schedule<kind = "1f1b", stages = 4, microbatches = 8>
// CHECK-SAME: pipedream = #pipe.schedule<kind = pipedream, stages = 4, microbatches = 3>
// CHECK-SAME: two_bw = #pipe.schedule<kind = "2bw", stages = 2, microbatches = 4>
// CHECK-SAME: zb_h1 = #pipe.schedule<kind = "zb-h1", stages = 4, microbatches = 8>
func.func @schedules() attributes {
    gpipe = #pipe.schedule<kind = gpipe, stages = 4, microbatches = 8>,
    gpipe_quoted = #pipe.schedule<kind = "gpipe", stages = 1, microbatches = 1, chunks = 1>,
    one_f_one_b = #pipe.schedule<kind = "1f1b", stages = 4, microbatches = 8>,
    interleaved = #pipe.schedule<kind = "interleaved-1f1b", stages = 4, microbatches = 8, chunks = 2>,
    pipedream = #pipe.schedule<kind = pipedream, stages = 4, microbatches = 3>,
    two_bw = #pipe.schedule<kind = "2bw", stages = 2, microbatches = 4>,
    zb_h1 = #pipe.schedule<kind = "zb-h1", stages = 4, microbatches = 8>} {
  return
}

// The schedule as a discardable attribute, before any pipe.program exists.
// CHECK: module attributes {pipe.schedule = #pipe.schedule<kind = "1f1b", stages = 2, microbatches = 4>}
module attributes {pipe.schedule = #pipe.schedule<kind = "1f1b", stages = 2, microbatches = 4>} {
}

// The enum attributes on their own.
// CHECK-LABEL: func.func @enums
// CHECK-SAME: actions = [#pipe.action<F>, #pipe.action<B>, #pipe.action<W>, #pipe.action<U>]
// CHECK-SAME: stash_kinds = [#pipe.stash_kind<activation>, #pipe.stash_kind<weight>]
func.func @enums() attributes {
    actions = [#pipe.action<F>, #pipe.action<B>, #pipe.action<W>, #pipe.action<U>],
    stash_kinds = [#pipe.stash_kind<activation>, #pipe.stash_kind<weight>]} {
  return
}
