// RUN: pipedream-opt %s --pipe-build-stage-training="replicas=0" --verify-diagnostics

// expected-error @+1 {{pipe-build-stage-training: replicas must be at least 1, got 0}}
module {
  func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    return %x : tensor<2xf32>
  }
}
