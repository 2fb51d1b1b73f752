// RUN: pipedream-opt %s -split-input-file -pipe-verify-schedule -verify-diagnostics
// Programs with a shared weight w (both stages' B add into grad:w, both U
// apply it) that pipe-verify-schedule rejects: the all-reduce missing,
// after a U, before a B, with the wrong stages; per-rank programs whose
// collectives do not match or deadlock.

func.func private @s0_F(tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0_B(tensor<2x4xf32>, tensor<4xf32> {nn.name = "grad:w", nn.role = "grad"}) -> (tensor<4xf32> {nn.updates = "grad:w"}) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0_U(tensor<4xf32> {nn.name = "grad:w", nn.role = "grad"}) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s1_F(tensor<2x4xf32>) -> (tensor<f32>) attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1_B(tensor<4xf32> {nn.name = "grad:w", nn.role = "grad"}) -> (tensor<2x4xf32>, tensor<4xf32> {nn.updates = "grad:w"}) attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1_U(tensor<4xf32> {nn.name = "grad:w", nn.role = "grad"}) attributes {pipe.stage = #pipe.stage<1>}

pipe.program @train schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 1> (%x: tensor<2x4xf32> {pipe.stage = #pipe.stage<0>}) {
  %a = pipe.call_stage F @s0_F(%x) stage 0 microbatch 0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %b = pipe.transfer %a from stage 0 to stage 1 : tensor<2x4xf32>
  %l = pipe.call_stage F @s1_F(%b) stage 1 microbatch 0 : (tensor<2x4xf32>) -> tensor<f32>
  %g = pipe.call_stage B @s1_B() stage 1 microbatch 0 : () -> tensor<2x4xf32>
  %h = pipe.transfer %g from stage 1 to stage 0 : tensor<2x4xf32>
  pipe.call_stage B @s0_B(%h) stage 0 microbatch 0 : (tensor<2x4xf32>) -> ()
  // expected-error @+1 {{rank 0: U of stage 0 micro-batch 0 applies 'grad:w' of a shared weight without a pipe.all_reduce_grad summing it over the ranks that hold the weight}}
  pipe.call_stage U @s0_U() stage 0 microbatch 0 : () -> ()
  pipe.call_stage U @s1_U() stage 1 microbatch 0 : () -> ()
  pipe.return
}

// -----

func.func private @s0_F(tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0_B(tensor<2x4xf32>, tensor<4xf32> {nn.name = "grad:w", nn.role = "grad"}) -> (tensor<4xf32> {nn.updates = "grad:w"}) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0_U(tensor<4xf32> {nn.name = "grad:w", nn.role = "grad"}) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s1_F(tensor<2x4xf32>) -> (tensor<f32>) attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1_B(tensor<4xf32> {nn.name = "grad:w", nn.role = "grad"}) -> (tensor<2x4xf32>, tensor<4xf32> {nn.updates = "grad:w"}) attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1_U(tensor<4xf32> {nn.name = "grad:w", nn.role = "grad"}) attributes {pipe.stage = #pipe.stage<1>}

// The all-reduce runs before rank 0's B has added its part.
pipe.program @train schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 1> (%x: tensor<2x4xf32> {pipe.stage = #pipe.stage<0>}) {
  %a = pipe.call_stage F @s0_F(%x) stage 0 microbatch 0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %b = pipe.transfer %a from stage 0 to stage 1 : tensor<2x4xf32>
  %l = pipe.call_stage F @s1_F(%b) stage 1 microbatch 0 : (tensor<2x4xf32>) -> tensor<f32>
  %g = pipe.call_stage B @s1_B() stage 1 microbatch 0 : () -> tensor<2x4xf32>
  %h = pipe.transfer %g from stage 1 to stage 0 : tensor<2x4xf32>
  pipe.all_reduce_grad "w" stages [#pipe.stage<0>, #pipe.stage<1>] microbatch 0 : tensor<4xf32>
  // expected-error @+1 {{rank 0: B of stage 0 micro-batch 0 adds into 'grad:w' after its all-reduce and before the update}}
  pipe.call_stage B @s0_B(%h) stage 0 microbatch 0 : (tensor<2x4xf32>) -> ()
  pipe.call_stage U @s0_U() stage 0 microbatch 0 : () -> ()
  pipe.call_stage U @s1_U() stage 1 microbatch 0 : () -> ()
  pipe.return
}

// -----

func.func private @s0_F(tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0_B(tensor<2x4xf32>, tensor<4xf32> {nn.name = "grad:w", nn.role = "grad"}) -> (tensor<4xf32> {nn.updates = "grad:w"}) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0_U(tensor<4xf32> {nn.name = "grad:w", nn.role = "grad"}) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s1_F(tensor<2x4xf32>) -> (tensor<f32>) attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1_B(tensor<4xf32> {nn.name = "grad:w", nn.role = "grad"}) -> (tensor<2x4xf32>, tensor<4xf32> {nn.updates = "grad:w"}) attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1_U(tensor<4xf32> {nn.name = "grad:w", nn.role = "grad"}) attributes {pipe.stage = #pipe.stage<1>}

// Rank 1 updates before the all-reduce, and the all-reduce misses stage 1.
pipe.program @train schedule #pipe.schedule<kind = gpipe, stages = 3, microbatches = 1> (%x: tensor<2x4xf32> {pipe.stage = #pipe.stage<0>}) {
  %a = pipe.call_stage F @s0_F(%x) stage 0 microbatch 0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %b = pipe.transfer %a from stage 0 to stage 1 : tensor<2x4xf32>
  %l = pipe.call_stage F @s1_F(%b) stage 1 microbatch 0 : (tensor<2x4xf32>) -> tensor<f32>
  %g = pipe.call_stage B @s1_B() stage 1 microbatch 0 : () -> tensor<2x4xf32>
  %h = pipe.transfer %g from stage 1 to stage 0 : tensor<2x4xf32>
  pipe.call_stage B @s0_B(%h) stage 0 microbatch 0 : (tensor<2x4xf32>) -> ()
  // expected-error @+1 {{the all-reduce of 'grad:w' must list exactly the stages whose B adds into it or whose U applies it}}
  pipe.all_reduce_grad "w" stages [#pipe.stage<0>, #pipe.stage<2>] microbatch 0 : tensor<4xf32>
  pipe.call_stage U @s0_U() stage 0 microbatch 0 : () -> ()
  pipe.call_stage U @s1_U() stage 1 microbatch 0 : () -> ()
  pipe.return
}

// -----

func.func private @s0_U(tensor<4xf32> {nn.name = "grad:w", nn.role = "grad"}, tensor<4xf32> {nn.name = "grad:v", nn.role = "grad"}) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s1_U(tensor<4xf32> {nn.name = "grad:w", nn.role = "grad"}, tensor<4xf32> {nn.name = "grad:v", nn.role = "grad"}) attributes {pipe.stage = #pipe.stage<1>}

// Per-rank programs: the two ranks all-reduce w and v in opposite orders.
pipe.program @train_rank0 rank 0 schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 1> () {
  pipe.all_reduce_grad "w" stages [#pipe.stage<0>, #pipe.stage<1>] microbatch 0 : tensor<4xf32>
  pipe.all_reduce_grad "v" stages [#pipe.stage<0>, #pipe.stage<1>] microbatch 0 : tensor<4xf32>
  pipe.call_stage U @s0_U() stage 0 microbatch 0 : () -> ()
  pipe.return
}
pipe.program @train_rank1 rank 1 schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 1> () {
  // expected-error @+1 {{rank 1: all-reduce of 'grad:v' over ranks 0, 1 (tensor<4xf32>): the 1st all-reduce of this group on rank 0 is of 'grad:w' (tensor<4xf32>)}}
  pipe.all_reduce_grad "v" stages [#pipe.stage<0>, #pipe.stage<1>] microbatch 0 : tensor<4xf32>
  pipe.all_reduce_grad "w" stages [#pipe.stage<0>, #pipe.stage<1>] microbatch 0 : tensor<4xf32>
  pipe.call_stage U @s1_U() stage 1 microbatch 0 : () -> ()
  pipe.return
}

// -----

func.func private @s0_U(tensor<4xf32> {nn.name = "grad:w", nn.role = "grad"}) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s1_F() -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1_U(tensor<4xf32> {nn.name = "grad:w", nn.role = "grad"}) attributes {pipe.stage = #pipe.stage<1>}

// Per-rank programs: rank 0 waits in the all-reduce for rank 1, which waits
// to send to rank 0 first.
pipe.program @train_rank0 rank 0 schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 1> () {
  // expected-error @+1 {{deadlock under blocking send/recv: rank 0: all-reduce of 'grad:w' over ranks 0, 1 (event 0) waits; rank 1: send to rank 0 tag 0 (event 1) waits}}
  pipe.all_reduce_grad "w" stages [#pipe.stage<0>, #pipe.stage<1>] microbatch 0 : tensor<4xf32>
  %y = pipe.recv from 1 tag 0 : tensor<2x4xf32>
  pipe.call_stage U @s0_U() stage 0 microbatch 0 : () -> ()
  pipe.return
}
pipe.program @train_rank1 rank 1 schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 1> () {
  %y = pipe.call_stage F @s1_F() stage 1 microbatch 0 : () -> tensor<2x4xf32>
  pipe.send %y to 0 tag 0 : tensor<2x4xf32>
  pipe.all_reduce_grad "w" stages [#pipe.stage<0>, #pipe.stage<1>] microbatch 0 : tensor<4xf32>
  pipe.call_stage U @s1_U() stage 1 microbatch 0 : () -> ()
  pipe.return
}
