// RUN: pipedream-opt %s --nn-build-training="evaluate=true" --verify-diagnostics

// The evaluation function's name is taken.
// expected-error @+1 {{training: the module already has a symbol 'evaluate'}}
module {
  func.func @main(%x: tensor<2x4xf32> {nn.name = "x"}, %w: tensor<4xf32> {nn.name = "w", nn.param = dense<1.0> : tensor<4xf32>}) -> tensor<2x4xf32> {
    %0 = nn.mul %x, %w : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
    return %0 : tensor<2x4xf32>
  }
  func.func @evaluate() {
    return
  }
}
