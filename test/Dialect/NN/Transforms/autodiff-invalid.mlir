// RUN: pipedream-opt %s --split-input-file --nn-autodiff --verify-diagnostics

func.func @no_rule(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{nn-autodiff: 'arith.addf' has no derivative rule, but a gradient flows through it}}
  %0 = arith.addf %x, %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// expected-error @+1 {{nn-autodiff: symbol 'taken_forward' already exists}}
func.func @taken(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = nn.neg %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func private @taken_forward(%x: tensor<4xf32>) -> tensor<4xf32>

// -----

// An op without a rule is fine where no gradient flows through it.
func.func @not_active(%x: tensor<4xf32>, %i: tensor<4xi64>) -> (tensor<4xf32>, tensor<4xi64>) {
  %0 = arith.addi %i, %i : tensor<4xi64>
  %1 = nn.neg %x : tensor<4xf32>
  return %1, %0 : tensor<4xf32>, tensor<4xi64>
}
