// RUN: pipedream-opt %s -split-input-file -pipe-shard-optimizer="shards=2" -verify-diagnostics

func.func @s0_U(%w: tensor<4xf32> {nn.name = "w", nn.param = dense<1.0> : tensor<4xf32>, nn.role = "weight"}) -> (tensor<4xf32> {nn.updates = "w"}) attributes {pipe.stage = #pipe.stage<0>} {
  return %w : tensor<4xf32>
}
pipe.program @step_rank0 rank 0 schedule #pipe.schedule<kind = pipedream, stages = 1, microbatches = 1> () {
  // expected-error @+1 {{pipe-shard-optimizer: sharded optimizer state needs a synchronous schedule, not 'pipedream'}}
  pipe.call_stage U @s0_U() stage 0 microbatch 0 : () -> ()
  pipe.return
}

// -----

func.func @s0_U(%w: tensor<4xf32> {nn.name = "w", nn.param = dense<1.0> : tensor<4xf32>, nn.role = "weight"}) -> tensor<4xf32> attributes {pipe.stage = #pipe.stage<0>} {
  return %w : tensor<4xf32>
}
pipe.program @step_rank0 rank 0 schedule #pipe.schedule<kind = gpipe, stages = 1, microbatches = 1> () {
  // expected-error @+1 {{pipe-shard-optimizer: the update 's0_U' takes or returns values; expected one that binds only persistent buffers}}
  %n = pipe.call_stage U @s0_U() stage 0 microbatch 0 : () -> tensor<4xf32>
  pipe.return
}
