// RUN: pipedream-opt %s --split-input-file --pipe-build-stage-training --verify-diagnostics

// expected-error @+1 {{pipe-build-stage-training: no function 'main' (run pipe-outline-stages first)}}
module {
  func.func @other(%x: tensor<2xf32>) -> tensor<2xf32> {
    return %x : tensor<2xf32>
  }
}

// -----

func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{pipe-build-stage-training: expected a call of an outlined stage function with a pipe.stage}}
  %0 = call @helper(%x) : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
func.func private @helper(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}
