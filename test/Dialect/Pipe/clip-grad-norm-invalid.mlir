// RUN: pipedream-opt %s -split-input-file -pipe-verify-schedule -verify-diagnostics
// Gradient clipping (docs/Pipe.md, "Gradient clipping") in programs that
// pipe-verify-schedule rejects: an update that clips before the norm is
// complete, a B after its stage's N, the norm's all-reduce before an N, an
// N in an asynchronous schedule, an N before a shared weight's all-reduce.

func.func private @s0_F(tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0_B(tensor<2x4xf32>, tensor<4xf32> {nn.name = "grad:w", nn.role = "grad"}) -> (tensor<4xf32> {nn.updates = "grad:w"}) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0_N(tensor<4xf32> {nn.name = "grad:w", nn.role = "grad"}, tensor<f32> {nn.name = "grad:pipedream.grad_norm_sq", nn.role = "grad"}) -> (tensor<f32> {nn.updates = "grad:pipedream.grad_norm_sq"}) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0_U(tensor<4xf32> {nn.name = "grad:w", nn.role = "grad"}, tensor<f32> {nn.name = "grad:pipedream.grad_norm_sq", nn.role = "grad"}) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s1_F(tensor<2x4xf32>) -> (tensor<f32>) attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1_B(tensor<4xf32> {nn.name = "grad:v", nn.role = "grad"}) -> (tensor<2x4xf32>, tensor<4xf32> {nn.updates = "grad:v"}) attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1_N(tensor<4xf32> {nn.name = "grad:v", nn.role = "grad"}, tensor<f32> {nn.name = "grad:pipedream.grad_norm_sq", nn.role = "grad"}) -> (tensor<f32> {nn.updates = "grad:pipedream.grad_norm_sq"}) attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1_U(tensor<4xf32> {nn.name = "grad:v", nn.role = "grad"}, tensor<f32> {nn.name = "grad:pipedream.grad_norm_sq", nn.role = "grad"}) attributes {pipe.stage = #pipe.stage<1>}

// Rank 1 updates before the norm's all-reduce.
pipe.program @train schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 1> (%x: tensor<2x4xf32> {pipe.stage = #pipe.stage<0>}) {
  %a = pipe.call_stage F @s0_F(%x) stage 0 microbatch 0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %b = pipe.transfer %a from stage 0 to stage 1 : tensor<2x4xf32>
  %l = pipe.call_stage F @s1_F(%b) stage 1 microbatch 0 : (tensor<2x4xf32>) -> tensor<f32>
  %g = pipe.call_stage B @s1_B() stage 1 microbatch 0 : () -> tensor<2x4xf32>
  %h = pipe.transfer %g from stage 1 to stage 0 : tensor<2x4xf32>
  pipe.call_stage B @s0_B(%h) stage 0 microbatch 0 : (tensor<2x4xf32>) -> ()
  pipe.call_stage N @s0_N() stage 0 microbatch 0 : () -> ()
  pipe.call_stage N @s1_N() stage 1 microbatch 0 : () -> ()
  // expected-error @+1 {{rank 1: U of stage 1 micro-batch 0 clips by 'grad:pipedream.grad_norm_sq' before it is complete (the N of every stage, then its all-reduce over the ranks)}}
  pipe.call_stage U @s1_U() stage 1 microbatch 0 : () -> ()
  pipe.all_reduce_grad "pipedream.grad_norm_sq" stages [#pipe.stage<0>, #pipe.stage<1>] microbatch 0 : tensor<f32>
  pipe.call_stage U @s0_U() stage 0 microbatch 0 : () -> ()
  pipe.return
}

// -----

func.func private @s0_F(tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0_B(tensor<2x4xf32>, tensor<4xf32> {nn.name = "grad:w", nn.role = "grad"}) -> (tensor<4xf32> {nn.updates = "grad:w"}) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0_N(tensor<4xf32> {nn.name = "grad:w", nn.role = "grad"}, tensor<f32> {nn.name = "grad:pipedream.grad_norm_sq", nn.role = "grad"}) -> (tensor<f32> {nn.updates = "grad:pipedream.grad_norm_sq"}) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0_U(tensor<4xf32> {nn.name = "grad:w", nn.role = "grad"}, tensor<f32> {nn.name = "grad:pipedream.grad_norm_sq", nn.role = "grad"}) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s1_F(tensor<2x4xf32>) -> (tensor<f32>) attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1_B(tensor<4xf32> {nn.name = "grad:v", nn.role = "grad"}) -> (tensor<2x4xf32>, tensor<4xf32> {nn.updates = "grad:v"}) attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1_N(tensor<4xf32> {nn.name = "grad:v", nn.role = "grad"}, tensor<f32> {nn.name = "grad:pipedream.grad_norm_sq", nn.role = "grad"}) -> (tensor<f32> {nn.updates = "grad:pipedream.grad_norm_sq"}) attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1_U(tensor<4xf32> {nn.name = "grad:v", nn.role = "grad"}, tensor<f32> {nn.name = "grad:pipedream.grad_norm_sq", nn.role = "grad"}) attributes {pipe.stage = #pipe.stage<1>}

// Stage 0's norm is taken before its B has added its gradient.
pipe.program @train schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 1> (%x: tensor<2x4xf32> {pipe.stage = #pipe.stage<0>}) {
  %a = pipe.call_stage F @s0_F(%x) stage 0 microbatch 0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %b = pipe.transfer %a from stage 0 to stage 1 : tensor<2x4xf32>
  %l = pipe.call_stage F @s1_F(%b) stage 1 microbatch 0 : (tensor<2x4xf32>) -> tensor<f32>
  %g = pipe.call_stage B @s1_B() stage 1 microbatch 0 : () -> tensor<2x4xf32>
  %h = pipe.transfer %g from stage 1 to stage 0 : tensor<2x4xf32>
  pipe.call_stage N @s0_N() stage 0 microbatch 0 : () -> ()
  // expected-error @+1 {{rank 0: B of stage 0 micro-batch 0 adds into the gradients after their norm (N)}}
  pipe.call_stage B @s0_B(%h) stage 0 microbatch 0 : (tensor<2x4xf32>) -> ()
  pipe.call_stage N @s1_N() stage 1 microbatch 0 : () -> ()
  pipe.all_reduce_grad "pipedream.grad_norm_sq" stages [#pipe.stage<0>, #pipe.stage<1>] microbatch 0 : tensor<f32>
  pipe.call_stage U @s0_U() stage 0 microbatch 0 : () -> ()
  pipe.call_stage U @s1_U() stage 1 microbatch 0 : () -> ()
  pipe.return
}

// -----

func.func private @s0_F(tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0_B(tensor<2x4xf32>, tensor<4xf32> {nn.name = "grad:w", nn.role = "grad"}) -> (tensor<4xf32> {nn.updates = "grad:w"}) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0_N(tensor<4xf32> {nn.name = "grad:w", nn.role = "grad"}, tensor<f32> {nn.name = "grad:pipedream.grad_norm_sq", nn.role = "grad"}) -> (tensor<f32> {nn.updates = "grad:pipedream.grad_norm_sq"}) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0_U(tensor<4xf32> {nn.name = "grad:w", nn.role = "grad"}, tensor<f32> {nn.name = "grad:pipedream.grad_norm_sq", nn.role = "grad"}) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s1_F(tensor<2x4xf32>) -> (tensor<f32>) attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1_B(tensor<4xf32> {nn.name = "grad:v", nn.role = "grad"}) -> (tensor<2x4xf32>, tensor<4xf32> {nn.updates = "grad:v"}) attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1_N(tensor<4xf32> {nn.name = "grad:v", nn.role = "grad"}, tensor<f32> {nn.name = "grad:pipedream.grad_norm_sq", nn.role = "grad"}) -> (tensor<f32> {nn.updates = "grad:pipedream.grad_norm_sq"}) attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1_U(tensor<4xf32> {nn.name = "grad:v", nn.role = "grad"}, tensor<f32> {nn.name = "grad:pipedream.grad_norm_sq", nn.role = "grad"}) attributes {pipe.stage = #pipe.stage<1>}

// The sum over the ranks runs before stage 1's N has added into it.
pipe.program @train schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 1> (%x: tensor<2x4xf32> {pipe.stage = #pipe.stage<0>}) {
  %a = pipe.call_stage F @s0_F(%x) stage 0 microbatch 0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %b = pipe.transfer %a from stage 0 to stage 1 : tensor<2x4xf32>
  %l = pipe.call_stage F @s1_F(%b) stage 1 microbatch 0 : (tensor<2x4xf32>) -> tensor<f32>
  %g = pipe.call_stage B @s1_B() stage 1 microbatch 0 : () -> tensor<2x4xf32>
  %h = pipe.transfer %g from stage 1 to stage 0 : tensor<2x4xf32>
  pipe.call_stage B @s0_B(%h) stage 0 microbatch 0 : (tensor<2x4xf32>) -> ()
  pipe.call_stage N @s0_N() stage 0 microbatch 0 : () -> ()
  // expected-error @+1 {{rank 1: the all-reduce of 'grad:pipedream.grad_norm_sq' before the N of stage 1}}
  pipe.all_reduce_grad "pipedream.grad_norm_sq" stages [#pipe.stage<0>, #pipe.stage<1>] microbatch 0 : tensor<f32>
  pipe.call_stage N @s1_N() stage 1 microbatch 0 : () -> ()
  pipe.call_stage U @s0_U() stage 0 microbatch 0 : () -> ()
  pipe.call_stage U @s1_U() stage 1 microbatch 0 : () -> ()
  pipe.return
}

// -----

func.func private @s0_N(tensor<f32> {nn.name = "grad:pipedream.grad_norm_sq", nn.role = "grad"}) -> (tensor<f32> {nn.updates = "grad:pipedream.grad_norm_sq"}) attributes {pipe.stage = #pipe.stage<0>}

// An asynchronous schedule updates its stages at different times: there
// is no one norm of a step.
pipe.program @train schedule #pipe.schedule<kind = pipedream, stages = 2, microbatches = 1> () {
  // expected-error @+1 {{'pipe.call_stage' op action N (the gradient norm of clipping) needs a synchronous schedule, got 'pipedream'}}
  pipe.call_stage N @s0_N() stage 0 microbatch 0 : () -> ()
  pipe.return
}

// -----

func.func private @s0_N(tensor<4xf32> {nn.name = "grad:w", nn.role = "grad"}, tensor<f32> {nn.name = "grad:pipedream.grad_norm_sq", nn.role = "grad"}) -> (tensor<f32> {nn.updates = "grad:pipedream.grad_norm_sq"}) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0_U(tensor<4xf32> {nn.name = "grad:w", nn.role = "grad"}, tensor<f32> {nn.name = "grad:pipedream.grad_norm_sq", nn.role = "grad"}) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s1_N(tensor<f32> {nn.name = "grad:pipedream.grad_norm_sq", nn.role = "grad"}) -> (tensor<f32> {nn.updates = "grad:pipedream.grad_norm_sq"}) attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1_U(tensor<4xf32> {nn.name = "grad:w", nn.role = "grad"}, tensor<f32> {nn.name = "grad:pipedream.grad_norm_sq", nn.role = "grad"}) attributes {pipe.stage = #pipe.stage<1>}

// A shared weight w (both U apply it): rank 0's N reads its gradient
// before the all-reduce has summed the two ranks' parts.
pipe.program @train schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 1> () {
  // expected-error @+1 {{rank 0: N of stage 0 micro-batch 0 reads 'grad:w' of a shared weight before the pipe.all_reduce_grad summing it over the ranks that hold the weight}}
  pipe.call_stage N @s0_N() stage 0 microbatch 0 : () -> ()
  pipe.all_reduce_grad "w" stages [#pipe.stage<0>, #pipe.stage<1>] microbatch 0 : tensor<4xf32>
  pipe.call_stage N @s1_N() stage 1 microbatch 0 : () -> ()
  pipe.all_reduce_grad "pipedream.grad_norm_sq" stages [#pipe.stage<0>, #pipe.stage<1>] microbatch 0 : tensor<f32>
  pipe.call_stage U @s0_U() stage 0 microbatch 0 : () -> ()
  pipe.call_stage U @s1_U() stage 1 microbatch 0 : () -> ()
  pipe.return
}
