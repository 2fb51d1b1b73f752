// RUN: pipedream-opt %s --pipe-build-stage-training="loss=mse microbatches=2 microbatches-per-update=1 clip-grad-norm=1" --pipe-unroll-schedule="kind=pipedream microbatches=2" -verify-diagnostics
// RUN: not pipedream-opt %s --pipe-build-stage-training="loss=mse microbatches=2 clip-grad-norm=-1" 2>&1 | FileCheck %s --check-prefix=NEG
// Gradient clipping needs one gradient norm a step: pipe-unroll-schedule
// refuses an asynchronous schedule (its stages update at different times),
// pipe-build-stage-training a negative bound.

// NEG: error: pipe-build-stage-training: clip-grad-norm must be a positive number (0: no clipping), got -1

// expected-error @+1 {{pipe-unroll-schedule: gradient clipping (the _N stage functions) needs a synchronous schedule, not pipedream}}
module {
  func.func private @main_stage0(%x: tensor<2x4xf32> {nn.name = "x"}, %w0: tensor<4xf32> {nn.name = "w0", nn.param = dense<1.0> : tensor<4xf32>}) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<0>} {
    %0 = nn.mul %x, %w0 : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
    return %0 : tensor<2x4xf32>
  }
  func.func private @main_stage1(%w1: tensor<4xf32> {nn.name = "w1", nn.param = dense<2.0> : tensor<4xf32>}, %h: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<1>} {
    %0 = nn.mul %h, %w1 : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
    return %0 : tensor<2x4xf32>
  }
  func.func @main(%x: tensor<2x4xf32> {nn.name = "x", pipe.stage = #pipe.stage<0>}, %w0: tensor<4xf32> {nn.name = "w0", nn.param = dense<1.0> : tensor<4xf32>}, %w1: tensor<4xf32> {nn.name = "w1", nn.param = dense<2.0> : tensor<4xf32>}) -> tensor<2x4xf32> {
    %0 = call @main_stage0(%x, %w0) {pipe.stage = #pipe.stage<0>} : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
    %1 = pipe.transfer %0 from stage 0 to stage 1 : tensor<2x4xf32>
    %2 = call @main_stage1(%w1, %1) {pipe.stage = #pipe.stage<1>} : (tensor<4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    return %2 : tensor<2x4xf32>
  }
}
