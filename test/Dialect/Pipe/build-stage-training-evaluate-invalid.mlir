// RUN: pipedream-opt %s --pipe-build-stage-training="evaluate=true" --verify-diagnostics

// A stage's evaluation function name is taken.
module {
  func.func private @main_stage0(%x: tensor<2xf32> {nn.name = "x"}) -> tensor<2xf32> attributes {pipe.stage = #pipe.stage<0>} {
    return %x : tensor<2xf32>
  }
  func.func @main(%x: tensor<2xf32> {nn.name = "x", pipe.stage = #pipe.stage<0>}) -> tensor<2xf32> {
    %0 = call @main_stage0(%x) {pipe.stage = #pipe.stage<0>} : (tensor<2xf32>) -> tensor<2xf32>
    return %0 : tensor<2xf32>
  }
  // expected-error @+1 {{pipe-build-stage-training: evaluate builds @stage0_E, but the module already has it}}
  func.func @stage0_E() {
    return
  }
}
