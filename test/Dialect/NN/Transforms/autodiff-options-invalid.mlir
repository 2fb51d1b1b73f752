// RUN: pipedream-opt %s --nn-autodiff=functions=missing --verify-diagnostics

// expected-error @+1 {{nn-autodiff: no function 'missing' with a body}}
module {
  func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}
