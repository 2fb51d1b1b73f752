// RUN: pipedream-opt %s -split-input-file -pipe-project-ranks -verify-diagnostics

func.func private @s0_F(tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<0>}
func.func private @s1_F(tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<1>}

// expected-error @+1 {{argument 0 has no pipe.stage: pipe-project-ranks cannot tell which rank owns it}}
pipe.program @no_stage schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 1>
    (%x: tensor<2x4xf32>) {
  %a = pipe.call_stage F @s0_F(%x) stage 0 microbatch 0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  pipe.return
}

// -----

func.func private @s0_F(tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<0>}
func.func private @s1_F(tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<1>}

// A value of rank 0 read on rank 1 without a transfer.
pipe.program @no_transfer schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 1>
    (%x: tensor<2x4xf32> {pipe.stage = #pipe.stage<0>}) {
  %a = pipe.call_stage F @s0_F(%x) stage 0 microbatch 0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  // expected-error @+1 {{runs on rank 1 but operand 0 is a value of rank 0: values cross ranks only through pipe.transfer}}
  %b = pipe.call_stage F @s1_F(%a) stage 1 microbatch 0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  pipe.return
}

// -----

func.func private @s0_F(tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<0>}
func.func private @s1_F(tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<1>}

// An op without a stage that reads values of two ranks.
pipe.program @two_ranks schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 1>
    (%x: tensor<2x4xf32> {pipe.stage = #pipe.stage<0>}) {
  %a = pipe.call_stage F @s0_F(%x) stage 0 microbatch 0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %t = pipe.transfer %a from stage 0 to stage 1 : tensor<2x4xf32>
  %b = pipe.call_stage F @s1_F(%t) stage 1 microbatch 0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  // expected-error @+1 {{has no pipe.stage and reads values of ranks 0 and 1: pipe-project-ranks cannot place it}}
  %s = arith.addf %a, %b : tensor<2x4xf32>
  pipe.return
}

// -----

func.func private @s0_F(tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<0>}

// The name a per-rank program would take is already used.
func.func private @taken_rank1()
// expected-error @+1 {{cannot project: symbol @taken_rank1 already exists}}
pipe.program @taken schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 1>
    (%x: tensor<2x4xf32> {pipe.stage = #pipe.stage<0>}) {
  %a = pipe.call_stage F @s0_F(%x) stage 0 microbatch 0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  pipe.return
}
