// RUN: pipedream-opt %s -split-input-file -pipe-shard-optimizer="stage-shards=2" -verify-diagnostics
// RUN: not pipedream-opt %s -pipe-shard-optimizer="stage-shards=2,0" 2>&1 | FileCheck %s --check-prefix=ZERO
// ZERO: error: pipe-shard-optimizer: stage-shards must be at least 1, got 0

// A call on a stage that stage-shards does not list.
func.func @s1_U(%w: tensor<4xf32> {nn.name = "w", nn.param = dense<1.0> : tensor<4xf32>, nn.role = "weight"}) -> (tensor<4xf32> {nn.updates = "w"}) attributes {pipe.stage = #pipe.stage<1>} {
  return %w : tensor<4xf32>
}
pipe.program @step_rank1 rank 1 schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 1> () {
  // expected-error @+1 {{pipe-shard-optimizer: stage 1 has no entry in stage-shards (1 stages)}}
  pipe.call_stage U @s1_U() stage 1 microbatch 0 : () -> ()
  pipe.return
}
