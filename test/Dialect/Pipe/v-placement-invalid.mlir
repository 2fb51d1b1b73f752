// RUN: pipedream-opt %s -split-input-file -verify-diagnostics

// The V placement (zb-v, dualpipe-v): the second chunk of rank r is virtual
// stage 2K-1-r, spelled `chunk 1 reversed`. Errors: a reversed even chunk;
// a stage that does not follow its program's placement (either way); the
// V kinds' chunk and micro-batch counts.

// expected-error @+1 {{only an odd chunk can be reversed (V placement: chunk 1 runs stage 2K-1-s on rank s), got chunk 2}}
func.func private @f() attributes {pipe.stage = #pipe.stage<0, chunk = 2, reversed = true>}

// -----

func.func private @s(tensor<4xf32>) -> tensor<4xf32>

pipe.program @p schedule #pipe.schedule<kind = "zb-v", stages = 2, microbatches = 4, chunks = 2> (%x: tensor<4xf32>) {
  // expected-error @+1 {{stage #pipe.stage<1, chunk = 1> does not follow the V placement of 'zb-v' (expected #pipe.stage<0, chunk = 1, reversed = true>)}}
  %0 = pipe.call_stage F @s(%x) stage 1 chunk 1 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return
}

// -----

func.func private @s(tensor<4xf32>) -> tensor<4xf32>

pipe.program @p schedule #pipe.schedule<kind = "interleaved-zb", stages = 2, microbatches = 4, chunks = 2> (%x: tensor<4xf32>) {
  // expected-error @+1 {{stage #pipe.stage<1, chunk = 1, reversed = true> does not follow the loop placement of 'interleaved-zb' (expected #pipe.stage<0, chunk = 1>)}}
  %0 = pipe.call_stage F @s(%x) stage 1 chunk 1 reversed microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return
}

// -----

// expected-error @+1 {{'zb-v' runs exactly 2 chunks per stage (a V: stage s and 2K-1-s on rank s), got 1}}
func.func private @f() attributes {pipe.schedule = #pipe.schedule<kind = "zb-v", stages = 2, microbatches = 4>}

// -----

// expected-error @+1 {{'dualpipe-v' needs at least 2K = 4 microbatches, got 3}}
func.func private @f() attributes {pipe.schedule = #pipe.schedule<kind = "dualpipe-v", stages = 2, microbatches = 3, chunks = 2>}
