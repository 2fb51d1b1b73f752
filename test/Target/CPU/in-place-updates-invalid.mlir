// RUN: pipedream-opt %s -split-input-file -cpu-in-place-updates -verify-diagnostics

// expected-error @+1 {{result #0: pipedream.in_place = 2 names no argument (the function has 1)}}
func.func @out_of_range(%w: tensor<4xf32>) -> (tensor<4xf32> {pipedream.in_place = 2 : i64}) {
  return %w : tensor<4xf32>
}

// -----

// expected-error @+1 {{result #0 ('tensor<4xf32>') cannot update argument #0 ('tensor<8xf32>') in place: both must be the same static tensor type}}
func.func @type(%w: tensor<8xf32>) -> (tensor<4xf32> {pipedream.in_place = 0 : i64}) {
  %c = arith.constant dense<1.0> : tensor<4xf32>
  return %c : tensor<4xf32>
}

// -----

// expected-error @+1 {{two results update argument #0 in place}}
func.func @twice(%w: tensor<4xf32>) -> (tensor<4xf32> {pipedream.in_place = 0 : i64}, tensor<4xf32> {pipedream.in_place = 0 : i64}) {
  return %w, %w : tensor<4xf32>, tensor<4xf32>
}

// -----

// expected-error @+1 {{result #0: pipedream.in_place must be an integer argument index}}
func.func @not_integer(%w: tensor<4xf32>) -> (tensor<4xf32> {pipedream.in_place = "w"}) {
  return %w : tensor<4xf32>
}

// -----

// expected-error @+1 {{result #0: pipedream.in_place on a function that is not a public definition}}
func.func private @private(%w: tensor<4xf32>) -> (tensor<4xf32> {pipedream.in_place = 0 : i64}) {
  return %w : tensor<4xf32>
}
