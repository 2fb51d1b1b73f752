// RUN: pipedream-opt %s --split-input-file --nn-build-training --verify-diagnostics

// expected-error @+1 {{training: the prediction (first result) has type 'tensor<4xi64>'; a loss needs a float tensor}}
func.func @main(%x: tensor<4xi64>, %w: tensor<4xf32> {nn.name = "w", nn.param = dense<1.0> : tensor<4xf32>}) -> tensor<4xi64> {
  return %x : tensor<4xi64>
}

// -----

// expected-error @+1 {{training: the labels name 'labels' is already the name of an input or weight; choose another with --labels-name}}
func.func @main(%x: tensor<2x4xf32> {nn.name = "labels"}, %w: tensor<4xf32> {nn.name = "w", nn.param = dense<1.0> : tensor<4xf32>}) -> tensor<2x4xf32> {
  %0 = nn.mul %x, %w : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// expected-error @+1 {{training: 'main' has no trainable weight}}
func.func @main(%x: tensor<2x4xf32> {nn.name = "x"}) -> tensor<2x4xf32> {
  return %x : tensor<2x4xf32>
}

// -----

// expected-error @+1 {{training: no function 'main' with a body to train}}
module {
  func.func @other(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
    return %x : tensor<2x4xf32>
  }
}

// -----

// expected-error @+1 {{training: cross-entropy needs a prediction with a class axis, got 'tensor<f32>'}}
func.func @main(%x: tensor<f32> {nn.name = "x"}, %w: tensor<f32> {nn.name = "w", nn.param = dense<1.0> : tensor<f32>}) -> tensor<f32> {
  %0 = nn.mul %x, %w : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}
