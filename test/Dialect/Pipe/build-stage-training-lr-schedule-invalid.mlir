// RUN: pipedream-opt %s --split-input-file --pipe-build-stage-training="lr-schedule=linear warmup-steps=3 total-steps=2" --verify-diagnostics
// RUN: not pipedream-opt %s --split-input-file --pipe-build-stage-training="lr-schedule=exponential" 2>&1 | FileCheck %s --check-prefix=KIND

// KIND: pipe-build-stage-training: unknown lr-schedule 'exponential' (expected constant, linear or cosine)

// expected-error @+1 {{pipe-build-stage-training: lr-schedule linear needs total-steps greater than warmup-steps (got 2 and 3)}}
module {
  func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    return %x : tensor<2xf32>
  }
}
