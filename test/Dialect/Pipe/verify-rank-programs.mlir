// RUN: pipedream-opt %s -split-input-file -pipe-verify-schedule -verify-diagnostics
// Per-rank programs that pipe-verify-schedule rejects (mutations of a
// valid projection), each with the message naming rank, op and peer.
// A valid pair of per-rank programs (GPipe, K = 2, M = 1): no diagnostics.

func.func private @s0_F(tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0_B(tensor<2x4xf32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0_U() attributes {pipe.stage = #pipe.stage<0>}
func.func private @s1_F(tensor<2x4xf32>) -> (tensor<f32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1_B(tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1_U() attributes {pipe.stage = #pipe.stage<1>}

pipe.program @valid_rank0 rank 0 schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 1> (%x: tensor<2x4xf32>) {
  %a:2 = pipe.call_stage F @s0_F(%x) stage 0 microbatch 0 : (tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
  pipe.send %a#0 to 1 tag 0 : tensor<2x4xf32>
  pipe.stash %a#1 into activation slot 0 stage 0 microbatch 0 : tensor<2x4xf32>
  %r = pipe.restore activation slot 0 stage 0 microbatch 0 : tensor<2x4xf32>
  %g = pipe.recv from 1 tag 0 : tensor<2x4xf32>
  pipe.call_stage B @s0_B(%r, %g) stage 0 microbatch 0 : (tensor<2x4xf32>, tensor<2x4xf32>) -> ()
  pipe.call_stage U @s0_U() stage 0 microbatch 0 : () -> ()
  pipe.return
}
pipe.program @valid_rank1 rank 1 schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 1> () {
  %y = pipe.recv from 0 tag 0 : tensor<2x4xf32>
  %f:2 = pipe.call_stage F @s1_F(%y) stage 1 microbatch 0 : (tensor<2x4xf32>) -> (tensor<f32>, tensor<2x4xf32>)
  pipe.stash %f#1 into activation slot 0 stage 1 microbatch 0 : tensor<2x4xf32>
  %r = pipe.restore activation slot 0 stage 1 microbatch 0 : tensor<2x4xf32>
  %d = pipe.call_stage B @s1_B(%r) stage 1 microbatch 0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  pipe.send %d to 0 tag 0 : tensor<2x4xf32>
  pipe.call_stage U @s1_U() stage 1 microbatch 0 : () -> ()
  pipe.return
}

// -----

// A receive whose tag is not the one its peer sends.

func.func private @s0_F(tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0_B(tensor<2x4xf32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0_U() attributes {pipe.stage = #pipe.stage<0>}
func.func private @s1_F(tensor<2x4xf32>) -> (tensor<f32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1_B(tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1_U() attributes {pipe.stage = #pipe.stage<1>}

pipe.program @tag_rank0 rank 0 schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 1> (%x: tensor<2x4xf32>) {
  %a:2 = pipe.call_stage F @s0_F(%x) stage 0 microbatch 0 : (tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
  pipe.send %a#0 to 1 tag 0 : tensor<2x4xf32>
  pipe.stash %a#1 into activation slot 0 stage 0 microbatch 0 : tensor<2x4xf32>
  %r = pipe.restore activation slot 0 stage 0 microbatch 0 : tensor<2x4xf32>
  %g = pipe.recv from 1 tag 0 : tensor<2x4xf32>
  pipe.call_stage B @s0_B(%r, %g) stage 0 microbatch 0 : (tensor<2x4xf32>, tensor<2x4xf32>) -> ()
  pipe.call_stage U @s0_U() stage 0 microbatch 0 : () -> ()
  pipe.return
}
pipe.program @tag_rank1 rank 1 schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 1> () {
  // expected-error @+1 {{rank 1: receive from rank 0 tag 5: the 1st message from rank 0 is sent with tag 0 (messages of a pair arrive in the order they are sent)}}
  %y = pipe.recv from 0 tag 5 : tensor<2x4xf32>
  %f:2 = pipe.call_stage F @s1_F(%y) stage 1 microbatch 0 : (tensor<2x4xf32>) -> (tensor<f32>, tensor<2x4xf32>)
  pipe.stash %f#1 into activation slot 0 stage 1 microbatch 0 : tensor<2x4xf32>
  %r = pipe.restore activation slot 0 stage 1 microbatch 0 : tensor<2x4xf32>
  %d = pipe.call_stage B @s1_B(%r) stage 1 microbatch 0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  pipe.send %d to 0 tag 0 : tensor<2x4xf32>
  pipe.call_stage U @s1_U() stage 1 microbatch 0 : () -> ()
  pipe.return
}

// -----

// A dropped receive.

func.func private @s0_F(tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0_B(tensor<2x4xf32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0_U() attributes {pipe.stage = #pipe.stage<0>}
func.func private @s1_F(tensor<2x4xf32>) -> (tensor<f32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1_B(tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1_U() attributes {pipe.stage = #pipe.stage<1>}

pipe.program @norecv_rank0 rank 0 schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 1> (%x: tensor<2x4xf32>) {
  %a:2 = pipe.call_stage F @s0_F(%x) stage 0 microbatch 0 : (tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
  pipe.send %a#0 to 1 tag 0 : tensor<2x4xf32>
  pipe.stash %a#1 into activation slot 0 stage 0 microbatch 0 : tensor<2x4xf32>
  %r = pipe.restore activation slot 0 stage 0 microbatch 0 : tensor<2x4xf32>
  pipe.call_stage B @s0_B(%r, %r) stage 0 microbatch 0 : (tensor<2x4xf32>, tensor<2x4xf32>) -> ()
  pipe.call_stage U @s0_U() stage 0 microbatch 0 : () -> ()
  pipe.return
}
pipe.program @norecv_rank1 rank 1 schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 1> () {
  %y = pipe.recv from 0 tag 0 : tensor<2x4xf32>
  %f:2 = pipe.call_stage F @s1_F(%y) stage 1 microbatch 0 : (tensor<2x4xf32>) -> (tensor<f32>, tensor<2x4xf32>)
  pipe.stash %f#1 into activation slot 0 stage 1 microbatch 0 : tensor<2x4xf32>
  %r = pipe.restore activation slot 0 stage 1 microbatch 0 : tensor<2x4xf32>
  %d = pipe.call_stage B @s1_B(%r) stage 1 microbatch 0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  // expected-error @+1 {{rank 1: send to rank 0 tag 0: no matching receive on rank 0}}
  pipe.send %d to 0 tag 0 : tensor<2x4xf32>
  pipe.call_stage U @s1_U() stage 1 microbatch 0 : () -> ()
  pipe.return
}

// -----

// Rank 0 waits for the gradient before it sends the activation.

func.func private @s0_F(tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0_B(tensor<2x4xf32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0_U() attributes {pipe.stage = #pipe.stage<0>}
func.func private @s1_F(tensor<2x4xf32>) -> (tensor<f32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1_B(tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1_U() attributes {pipe.stage = #pipe.stage<1>}

pipe.program @deadlock_rank0 rank 0 schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 1> (%x: tensor<2x4xf32>) {
  %a:2 = pipe.call_stage F @s0_F(%x) stage 0 microbatch 0 : (tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
  pipe.stash %a#1 into activation slot 0 stage 0 microbatch 0 : tensor<2x4xf32>
  // expected-error @+1 {{deadlock under blocking send/recv: rank 0: receive from rank 1 tag 0 (event 2) waits; rank 1: receive from rank 0 tag 0 (event 0) waits}}
  %g = pipe.recv from 1 tag 0 : tensor<2x4xf32>
  pipe.send %a#0 to 1 tag 0 : tensor<2x4xf32>
  %r = pipe.restore activation slot 0 stage 0 microbatch 0 : tensor<2x4xf32>
  pipe.call_stage B @s0_B(%r, %g) stage 0 microbatch 0 : (tensor<2x4xf32>, tensor<2x4xf32>) -> ()
  pipe.call_stage U @s0_U() stage 0 microbatch 0 : () -> ()
  pipe.return
}
pipe.program @deadlock_rank1 rank 1 schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 1> () {
  %y = pipe.recv from 0 tag 0 : tensor<2x4xf32>
  %f:2 = pipe.call_stage F @s1_F(%y) stage 1 microbatch 0 : (tensor<2x4xf32>) -> (tensor<f32>, tensor<2x4xf32>)
  pipe.stash %f#1 into activation slot 0 stage 1 microbatch 0 : tensor<2x4xf32>
  %r = pipe.restore activation slot 0 stage 1 microbatch 0 : tensor<2x4xf32>
  %d = pipe.call_stage B @s1_B(%r) stage 1 microbatch 0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  pipe.send %d to 0 tag 0 : tensor<2x4xf32>
  pipe.call_stage U @s1_U() stage 1 microbatch 0 : () -> ()
  pipe.return
}

// -----

// A dropped stash.

func.func private @s0_F(tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0_B(tensor<2x4xf32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0_U() attributes {pipe.stage = #pipe.stage<0>}
func.func private @s1_F(tensor<2x4xf32>) -> (tensor<f32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1_B(tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1_U() attributes {pipe.stage = #pipe.stage<1>}

pipe.program @nostash_rank0 rank 0 schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 1> (%x: tensor<2x4xf32>) {
  %a:2 = pipe.call_stage F @s0_F(%x) stage 0 microbatch 0 : (tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
  pipe.send %a#0 to 1 tag 0 : tensor<2x4xf32>
  // expected-error @+1 {{rank 0: restore of stage 0 micro-batch 0 from slot 0 has no live matching stash before it}}
  %r = pipe.restore activation slot 0 stage 0 microbatch 0 : tensor<2x4xf32>
  %g = pipe.recv from 1 tag 0 : tensor<2x4xf32>
  pipe.call_stage B @s0_B(%r, %g) stage 0 microbatch 0 : (tensor<2x4xf32>, tensor<2x4xf32>) -> ()
  pipe.call_stage U @s0_U() stage 0 microbatch 0 : () -> ()
  pipe.return
}
pipe.program @nostash_rank1 rank 1 schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 1> () {
  %y = pipe.recv from 0 tag 0 : tensor<2x4xf32>
  %f:2 = pipe.call_stage F @s1_F(%y) stage 1 microbatch 0 : (tensor<2x4xf32>) -> (tensor<f32>, tensor<2x4xf32>)
  pipe.stash %f#1 into activation slot 0 stage 1 microbatch 0 : tensor<2x4xf32>
  %r = pipe.restore activation slot 0 stage 1 microbatch 0 : tensor<2x4xf32>
  %d = pipe.call_stage B @s1_B(%r) stage 1 microbatch 0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  pipe.send %d to 0 tag 0 : tensor<2x4xf32>
  pipe.call_stage U @s1_U() stage 1 microbatch 0 : () -> ()
  pipe.return
}

// -----

// A backward before its forward.

func.func private @s0_F(tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0_B(tensor<2x4xf32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0_U() attributes {pipe.stage = #pipe.stage<0>}
func.func private @s1_F(tensor<2x4xf32>) -> (tensor<f32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1_B(tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1_U() attributes {pipe.stage = #pipe.stage<1>}

pipe.program @bf_rank0 rank 0 schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 1> (%x: tensor<2x4xf32>) {
  %a:2 = pipe.call_stage F @s0_F(%x) stage 0 microbatch 0 : (tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
  pipe.send %a#0 to 1 tag 0 : tensor<2x4xf32>
  pipe.stash %a#1 into activation slot 0 stage 0 microbatch 0 : tensor<2x4xf32>
  %r = pipe.restore activation slot 0 stage 0 microbatch 0 : tensor<2x4xf32>
  %g = pipe.recv from 1 tag 0 : tensor<2x4xf32>
  pipe.call_stage B @s0_B(%r, %g) stage 0 microbatch 0 : (tensor<2x4xf32>, tensor<2x4xf32>) -> ()
  pipe.call_stage U @s0_U() stage 0 microbatch 0 : () -> ()
  pipe.return
}
pipe.program @bf_rank1 rank 1 schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 1> () {
  %y = pipe.recv from 0 tag 0 : tensor<2x4xf32>
  // expected-error @+1 {{rank 1, action 0 (B of stage 1 micro-batch 0): B runs before its F}}
  %d = pipe.call_stage B @s1_B(%y) stage 1 microbatch 0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  pipe.send %d to 0 tag 0 : tensor<2x4xf32>
  %f:2 = pipe.call_stage F @s1_F(%y) stage 1 microbatch 0 : (tensor<2x4xf32>) -> (tensor<f32>, tensor<2x4xf32>)
  pipe.call_stage U @s1_U() stage 1 microbatch 0 : () -> ()
  pipe.return
}

// -----

// A set without a program for rank 1.

func.func private @s0_F(tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0_B(tensor<2x4xf32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0_U() attributes {pipe.stage = #pipe.stage<0>}
func.func private @s1_F(tensor<2x4xf32>) -> (tensor<f32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1_B(tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1_U() attributes {pipe.stage = #pipe.stage<1>}

// expected-error @+1 {{the per-rank programs @alone_rank* have no program for rank 1 of 2}}
pipe.program @alone_rank0 rank 0 schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 1> (%x: tensor<2x4xf32>) {
  %a:2 = pipe.call_stage F @s0_F(%x) stage 0 microbatch 0 : (tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
  pipe.send %a#0 to 1 tag 0 : tensor<2x4xf32>
  pipe.stash %a#1 into activation slot 0 stage 0 microbatch 0 : tensor<2x4xf32>
  %r = pipe.restore activation slot 0 stage 0 microbatch 0 : tensor<2x4xf32>
  %g = pipe.recv from 1 tag 0 : tensor<2x4xf32>
  pipe.call_stage B @s0_B(%r, %g) stage 0 microbatch 0 : (tensor<2x4xf32>, tensor<2x4xf32>) -> ()
  pipe.call_stage U @s0_U() stage 0 microbatch 0 : () -> ()
  pipe.return
}

// -----

// Two programs for rank 1 in one set.

func.func private @s0_F(tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0_B(tensor<2x4xf32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0_U() attributes {pipe.stage = #pipe.stage<0>}
func.func private @s1_F(tensor<2x4xf32>) -> (tensor<f32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1_B(tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1_U() attributes {pipe.stage = #pipe.stage<1>}

pipe.program @dup_rank0 rank 0 schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 1> (%x: tensor<2x4xf32>) {
  %a:2 = pipe.call_stage F @s0_F(%x) stage 0 microbatch 0 : (tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
  pipe.send %a#0 to 1 tag 0 : tensor<2x4xf32>
  pipe.stash %a#1 into activation slot 0 stage 0 microbatch 0 : tensor<2x4xf32>
  %r = pipe.restore activation slot 0 stage 0 microbatch 0 : tensor<2x4xf32>
  %g = pipe.recv from 1 tag 0 : tensor<2x4xf32>
  pipe.call_stage B @s0_B(%r, %g) stage 0 microbatch 0 : (tensor<2x4xf32>, tensor<2x4xf32>) -> ()
  pipe.call_stage U @s0_U() stage 0 microbatch 0 : () -> ()
  pipe.return
}
pipe.program @dup_rank1 rank 1 schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 1> () {
  %y = pipe.recv from 0 tag 0 : tensor<2x4xf32>
  %f:2 = pipe.call_stage F @s1_F(%y) stage 1 microbatch 0 : (tensor<2x4xf32>) -> (tensor<f32>, tensor<2x4xf32>)
  pipe.stash %f#1 into activation slot 0 stage 1 microbatch 0 : tensor<2x4xf32>
  %r = pipe.restore activation slot 0 stage 1 microbatch 0 : tensor<2x4xf32>
  %d = pipe.call_stage B @s1_B(%r) stage 1 microbatch 0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  pipe.send %d to 0 tag 0 : tensor<2x4xf32>
  pipe.call_stage U @s1_U() stage 1 microbatch 0 : () -> ()
  pipe.return
}
// expected-error @+1 {{a second program for rank 1 (@dup_rank1 is one)}}
pipe.program @dup_rank01 rank 1 schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 1> () {
  %y = pipe.recv from 0 tag 0 : tensor<2x4xf32>
  %f:2 = pipe.call_stage F @s1_F(%y) stage 1 microbatch 0 : (tensor<2x4xf32>) -> (tensor<f32>, tensor<2x4xf32>)
  pipe.stash %f#1 into activation slot 0 stage 1 microbatch 0 : tensor<2x4xf32>
  %r = pipe.restore activation slot 0 stage 1 microbatch 0 : tensor<2x4xf32>
  %d = pipe.call_stage B @s1_B(%r) stage 1 microbatch 0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  pipe.send %d to 0 tag 0 : tensor<2x4xf32>
  pipe.call_stage U @s1_U() stage 1 microbatch 0 : () -> ()
  pipe.return
}

// -----

// Rank 0's two sends swapped: rank 1 receives micro-batch 1 first.

func.func private @s0_F(tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0_B(tensor<2x4xf32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0_U() attributes {pipe.stage = #pipe.stage<0>}
func.func private @s1_F(tensor<2x4xf32>) -> (tensor<f32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1_B(tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1_U() attributes {pipe.stage = #pipe.stage<1>}

pipe.program @swap_rank0 rank 0 schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 2> (%x: tensor<2x4xf32>) {
  %a:2 = pipe.call_stage F @s0_F(%x) stage 0 microbatch 0 : (tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
  pipe.stash %a#1 into activation slot 0 stage 0 microbatch 0 : tensor<2x4xf32>
  %b:2 = pipe.call_stage F @s0_F(%x) stage 0 microbatch 1 : (tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
  pipe.stash %b#1 into activation slot 1 stage 0 microbatch 1 : tensor<2x4xf32>
  pipe.send %b#0 to 1 tag 1 : tensor<2x4xf32>
  pipe.send %a#0 to 1 tag 0 : tensor<2x4xf32>
  %g0 = pipe.recv from 1 tag 0 : tensor<2x4xf32>
  %r0 = pipe.restore activation slot 0 stage 0 microbatch 0 : tensor<2x4xf32>
  pipe.call_stage B @s0_B(%r0, %g0) stage 0 microbatch 0 : (tensor<2x4xf32>, tensor<2x4xf32>) -> ()
  %g1 = pipe.recv from 1 tag 1 : tensor<2x4xf32>
  %r1 = pipe.restore activation slot 1 stage 0 microbatch 1 : tensor<2x4xf32>
  pipe.call_stage B @s0_B(%r1, %g1) stage 0 microbatch 1 : (tensor<2x4xf32>, tensor<2x4xf32>) -> ()
  pipe.call_stage U @s0_U() stage 0 microbatch 1 : () -> ()
  pipe.return
}
pipe.program @swap_rank1 rank 1 schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 2> () {
  // expected-error @+1 {{rank 1: receive from rank 0 tag 0: the 1st message from rank 0 is sent with tag 1}}
  %y0 = pipe.recv from 0 tag 0 : tensor<2x4xf32>
  %f0:2 = pipe.call_stage F @s1_F(%y0) stage 1 microbatch 0 : (tensor<2x4xf32>) -> (tensor<f32>, tensor<2x4xf32>)
  %y1 = pipe.recv from 0 tag 1 : tensor<2x4xf32>
  %f1:2 = pipe.call_stage F @s1_F(%y1) stage 1 microbatch 1 : (tensor<2x4xf32>) -> (tensor<f32>, tensor<2x4xf32>)
  %d0 = pipe.call_stage B @s1_B(%f0#1) stage 1 microbatch 0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  pipe.send %d0 to 0 tag 0 : tensor<2x4xf32>
  %d1 = pipe.call_stage B @s1_B(%f1#1) stage 1 microbatch 1 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  pipe.send %d1 to 0 tag 1 : tensor<2x4xf32>
  pipe.call_stage U @s1_U() stage 1 microbatch 1 : () -> ()
  pipe.return
}
