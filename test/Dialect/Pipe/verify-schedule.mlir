// RUN: pipedream-opt %s -split-input-file -pipe-verify-schedule -verify-diagnostics

func.func private @s0_F(tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0_B(tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<4x4xf32> attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0_U(tensor<4x4xf32>) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s1_F(tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1_B(tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<4x4xf32>) attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1_U(tensor<4x4xf32>) attributes {pipe.stage = #pipe.stage<1>}

// A valid GPipe program, K = 2, M = 1: no diagnostics.
pipe.program @valid schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 1>
    (%x: tensor<2x4xf32> {pipe.stage = #pipe.stage<0>}) {
  %y:2 = pipe.call_stage F @s0_F(%x) stage 0 microbatch 0 : (tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
  %t = pipe.transfer %y#0 from stage 0 to stage 1 : tensor<2x4xf32>
  pipe.stash %y#1 into activation slot 0 stage 0 microbatch 0 : tensor<2x4xf32>
  %z:2 = pipe.call_stage F @s1_F(%t) stage 1 microbatch 0 : (tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
  %g:2 = pipe.call_stage B @s1_B(%z#1) stage 1 microbatch 0 : (tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<4x4xf32>)
  %tg = pipe.transfer %g#0 from stage 1 to stage 0 : tensor<2x4xf32>
  %r = pipe.restore activation slot 0 stage 0 microbatch 0 : tensor<2x4xf32>
  %dw = pipe.call_stage B @s0_B(%r, %tg) stage 0 microbatch 0 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
  pipe.call_stage U @s1_U(%g#1) stage 1 microbatch 0 : (tensor<4x4xf32>) -> ()
  pipe.call_stage U @s0_U(%dw) stage 0 microbatch 0 : (tensor<4x4xf32>) -> ()
  pipe.return
}

// -----

func.func private @s0_F(tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0_B(tensor<2x4xf32>) -> tensor<4x4xf32> attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0_U(tensor<4x4xf32>) attributes {pipe.stage = #pipe.stage<0>}

// A backward before its forward.
pipe.program @b_before_f schedule #pipe.schedule<kind = gpipe, stages = 1, microbatches = 1>
    (%x: tensor<2x4xf32>, %s: tensor<2x4xf32>) {
  // expected-error @+1 {{rank 0, action 0 (B of stage 0 micro-batch 0): B runs before its F}}
  %dw = pipe.call_stage B @s0_B(%s) stage 0 microbatch 0 : (tensor<2x4xf32>) -> tensor<4x4xf32>
  %y:2 = pipe.call_stage F @s0_F(%x) stage 0 microbatch 0 : (tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
  pipe.call_stage U @s0_U(%dw) stage 0 microbatch 0 : (tensor<4x4xf32>) -> ()
  pipe.return
}

// -----

func.func private @s0_F(tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<0>}

// A stash into a slot that is still live.
pipe.program @slot_reuse schedule #pipe.schedule<kind = gpipe, stages = 1, microbatches = 2>
    (%x: tensor<2x4xf32>) {
  %y:2 = pipe.call_stage F @s0_F(%x) stage 0 microbatch 0 : (tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
  pipe.stash %y#1 into activation slot 0 stage 0 microbatch 0 : tensor<2x4xf32>
  %z:2 = pipe.call_stage F @s0_F(%x) stage 0 microbatch 1 : (tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
  // expected-error @+1 {{rank 0: stash of stage 0 micro-batch 1 reuses slot 0 while micro-batch 0 of stage 0 is still live in it}}
  pipe.stash %z#1 into activation slot 0 stage 0 microbatch 1 : tensor<2x4xf32>
  pipe.return
}

// -----

func.func private @s0_F(tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0_B(tensor<2x4xf32>) -> tensor<4x4xf32> attributes {pipe.stage = #pipe.stage<0>}

// A missing update.
// expected-error @+1 {{rank 0: missing U of stage 0 micro-batch 0}}
pipe.program @missing_u schedule #pipe.schedule<kind = gpipe, stages = 1, microbatches = 1>
    (%x: tensor<2x4xf32>) {
  %y:2 = pipe.call_stage F @s0_F(%x) stage 0 microbatch 0 : (tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
  %dw = pipe.call_stage B @s0_B(%y#1) stage 0 microbatch 0 : (tensor<2x4xf32>) -> tensor<4x4xf32>
  pipe.return
}
