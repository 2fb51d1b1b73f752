// RUN: pipedream-opt %s -split-input-file -verify-diagnostics -pipe-partition="stages=3 memory-limit=1000"

#c = {activation_bytes = 0 : i64, backward_input = 1.0 : f64, backward_weight = 0.0 : f64, forward = 1.0 : f64, frozen_bytes = 0 : i64, output_bytes = 16 : i64, parameter_bytes = 0 : i64, source = "analytical"}
// expected-error @+1 {{pipe-partition: @too_few_ops: 3 pipeline stages requested but the function has only 2 ops to place; use at most 2 stages}}
func.func @too_few_ops(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = nn.relu %x {pipe.cost = #c} : tensor<4xf32>
  %1 = nn.relu %0 {pipe.cost = #c} : tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// Each op keeps 400 bytes for its backward; 1F1B with 3 stages keeps 3
// micro-batches on stage 0: 1200 bytes > 1000 whatever the cut.
#big = {activation_bytes = 400 : i64, backward_input = 1.0 : f64, backward_weight = 0.0 : f64, forward = 1.0 : f64, frozen_bytes = 0 : i64, output_bytes = 16 : i64, parameter_bytes = 0 : i64, source = "analytical"}
// expected-error @+1 {{pipe-partition: @too_much_memory: no partition into 3 stages fits memory-limit=1000 bytes (1000 B per rank); a single op already needs 1200 B: raise the limit, add stages, recompute activations or use fewer micro-batches in flight}}
func.func @too_much_memory(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = nn.relu %x {pipe.cost = #big} : tensor<4xf32>
  %1 = nn.relu %0 {pipe.cost = #big} : tensor<4xf32>
  %2 = nn.relu %1 {pipe.cost = #big} : tensor<4xf32>
  %3 = nn.relu %2 {pipe.cost = #big} : tensor<4xf32>
  return %3 : tensor<4xf32>
}

// -----

// expected-error @+1 {{pipe-partition: 3 of 3 ops have no pipe.cost; run pipe-annotate-costs first (or use method=uniform)}}
func.func @no_costs(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = nn.relu %x : tensor<4xf32>
  %1 = nn.relu %0 : tensor<4xf32>
  %2 = nn.relu %1 : tensor<4xf32>
  return %2 : tensor<4xf32>
}

// -----

func.func @bad_cost(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.relu' op pipe.cost entry 'forward' must be a non-negative float (seconds), got -1.000000e+00 : f64}}
  %0 = nn.relu %x {pipe.cost = {forward = -1.0 : f64}} : tensor<4xf32>
  return %0 : tensor<4xf32>
}
