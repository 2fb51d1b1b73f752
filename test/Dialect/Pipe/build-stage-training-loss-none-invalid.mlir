// RUN: pipedream-opt %s --pipe-build-stage-training="loss=none" --verify-diagnostics

// --loss none trains the first output, which must be a scalar.
func.func private @main_stage0(%x: tensor<2x4xf32> {nn.name = "x"}, %w0: tensor<4xf32> {nn.name = "w0", nn.param = dense<1.0> : tensor<4xf32>}) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<0>} {
  %0 = nn.mul %x, %w0 : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}
// expected-error @+1 {{pipe-build-stage-training: --loss none trains the first output as the loss, which must be a scalar; it has type 'tensor<2x4xf32>'}}
func.func @main(%x: tensor<2x4xf32> {nn.name = "x", pipe.stage = #pipe.stage<0>}, %w0: tensor<4xf32> {nn.name = "w0", nn.param = dense<1.0> : tensor<4xf32>}) -> tensor<2x4xf32> {
  %0 = call @main_stage0(%x, %w0) {pipe.stage = #pipe.stage<0>} : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}
