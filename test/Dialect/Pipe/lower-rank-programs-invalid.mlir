// RUN: pipedream-opt %s -split-input-file -pipe-lower-rank-programs -verify-diagnostics
// Per-rank programs pipe-lower-rank-programs cannot turn into native rank
// entries, each with its one diagnostic.

func.func private @s0_F(tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<0>}

// expected-error @+1 {{argument 0 lacks pipe.input / pipe.microbatch}}
pipe.program @no_input_name rank 0 schedule #pipe.schedule<kind = gpipe, stages = 1, microbatches = 1> (%x: tensor<2x4xf32>) {
  %a = pipe.call_stage F @s0_F(%x) stage 0 microbatch 0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  pipe.return
}

// -----

func.func private @s1_F(tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<1>}

// expected-error @+1 {{per-rank programs are not numbered 0..K-1 (rank 0 is missing)}}
pipe.program @only_rank1 rank 1 schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 1> () {
  %y = pipe.recv from 0 tag 0 : tensor<2x4xf32>
  %a = pipe.call_stage F @s1_F(%y) stage 1 microbatch 0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  pipe.return
}

// -----

func.func private @s0_F(tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<0>}

pipe.program @first rank 0 schedule #pipe.schedule<kind = gpipe, stages = 1, microbatches = 1> (%x: tensor<2x4xf32> {pipe.input = "x", pipe.microbatch = 0 : i64}) {
  %a = pipe.call_stage F @s0_F(%x) stage 0 microbatch 0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  pipe.return
}
// expected-error @+1 {{two programs of rank 0}}
pipe.program @second rank 0 schedule #pipe.schedule<kind = gpipe, stages = 1, microbatches = 1> (%x: tensor<2x4xf32> {pipe.input = "x", pipe.microbatch = 0 : i64}) {
  %a = pipe.call_stage F @s0_F(%x) stage 0 microbatch 0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  pipe.return
}

// -----

func.func private @s0_F(tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0_B(tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<0>}

pipe.program @unmatched_restore rank 0 schedule #pipe.schedule<kind = gpipe, stages = 1, microbatches = 1> (%x: tensor<2x4xf32> {pipe.input = "x", pipe.microbatch = 0 : i64}) {
  %a = pipe.call_stage F @s0_F(%x) stage 0 microbatch 0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  // expected-error @+1 {{a restore has no matching stash}}
  %r = pipe.restore activation slot 0 stage 0 microbatch 0 : tensor<2x4xf32>
  pipe.call_stage B @s0_B(%r) stage 0 microbatch 0 : (tensor<2x4xf32>) -> ()
  pipe.return
}

// -----

func.func private @s1_F(tensor<2xcomplex<f32>>) attributes {pipe.stage = #pipe.stage<1>}

pipe.program @r0 rank 0 schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 1> () {
  pipe.return
}
pipe.program @r1 rank 1 schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 1> () {
  // expected-error @+1 {{a pipeline value has type that bundles cannot hold}}
  %y = pipe.recv from 0 tag 0 : tensor<2xcomplex<f32>>
  pipe.call_stage F @s1_F(%y) stage 1 microbatch 0 : (tensor<2xcomplex<f32>>) -> ()
  pipe.return
}

// -----

func.func private @s0_F(tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<0>}

pipe.program @vector_loss rank 0 schedule #pipe.schedule<kind = gpipe, stages = 1, microbatches = 1> (%x: tensor<2x4xf32> {pipe.input = "x", pipe.microbatch = 0 : i64}) -> tensor<2x4xf32> {
  %a = pipe.call_stage F @s0_F(%x) stage 0 microbatch 0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  // expected-error @+1 {{'pipe.return' op returns the loss of micro-batch 0 as 'tensor<2x4xf32>'; the runtime reads one f32 or f64}}
  pipe.return %a : tensor<2x4xf32>
}

// -----

func.func private @s0_F(tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<0>}
func.func @pipedream_s0_F(%buffers: !llvm.ptr) {
  return
}

pipe.program @wrapper_taken rank 0 schedule #pipe.schedule<kind = gpipe, stages = 1, microbatches = 1> (%x: tensor<2x4xf32> {pipe.input = "x", pipe.microbatch = 0 : i64}) {
  // expected-error @+1 {{'pipe.call_stage' op cannot declare the entry wrapper 'pipedream_s0_F' of its stage function: the symbol exists}}
  %a = pipe.call_stage F @s0_F(%x) stage 0 microbatch 0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  pipe.return
}

// -----

func.func private @s0_F(tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<0>}
func.func private @pipeline_rank0(!llvm.ptr, !llvm.ptr) -> i32

// expected-error @+1 {{'pipe.program' op cannot create the native entry 'pipeline_rank0': the symbol exists}}
pipe.program @entry_taken rank 0 schedule #pipe.schedule<kind = gpipe, stages = 1, microbatches = 1> (%x: tensor<2x4xf32> {pipe.input = "x", pipe.microbatch = 0 : i64}) {
  %a = pipe.call_stage F @s0_F(%x) stage 0 microbatch 0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  pipe.return
}

// -----

func.func private @s1_F(tensor<2xi128>) attributes {pipe.stage = #pipe.stage<1>}

pipe.program @r0 rank 0 schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 1> () {
  pipe.return
}
pipe.program @r1 rank 1 schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 1> () {
  // expected-error @+1 {{'pipe.recv' op sends or receives 'tensor<2xi128>', which bundles cannot hold}}
  %y = pipe.recv from 0 tag 0 : tensor<2xi128>
  pipe.call_stage F @s1_F(%y) stage 1 microbatch 0 : (tensor<2xi128>) -> ()
  pipe.return
}
