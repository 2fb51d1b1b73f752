// RUN: pipedream-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// Weights are arguments with their ONNX name and initial value.
// CHECK-LABEL: func.func @main
// CHECK-SAME: nn.name = "x"
// CHECK-SAME: nn.name = "fc.weight", nn.param = dense<5.000000e-01> : tensor<4x3xf32>
// CHECK-SAME: -> (tensor<2x3xf32> {nn.name = "y"})
func.func @main(%x: tensor<2x4xf32> {nn.name = "x"},
                %w: tensor<4x3xf32> {nn.name = "fc.weight",
                                     nn.param = dense<0.5> : tensor<4x3xf32>})
    -> (tensor<2x3xf32> {nn.name = "y"}) {
  %0 = nn.matmul %x, %w : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Large weights keep their value out of line as a resource blob.
// CHECK-LABEL: func.func @resource
// CHECK-SAME: nn.param = dense_resource<w0> : tensor<2xf32>
func.func @resource(%w: tensor<2xf32> {nn.name = "w", nn.param = dense_resource<w0> : tensor<2xf32>}) {
  return
}
{-#
  dialect_resources: {
    builtin: {
      w0: "0x040000000000803F00000040"
    }
  }
#-}

// -----

// expected-error @+1 {{'nn.param' of argument #0 has type 'tensor<4x4xf32>' but the argument is 'tensor<4x3xf32>'}}
func.func @param_type(%w: tensor<4x3xf32> {nn.param = dense<0.5> : tensor<4x4xf32>}) {
  return
}

// -----

// expected-error @+1 {{'nn.param' of argument #0 must be an elements attribute}}
func.func @param_kind(%w: tensor<4x3xf32> {nn.param = 1.0 : f32}) {
  return
}

// -----

// expected-error @+1 {{'nn.name' must be a non-empty string}}
func.func @empty_name(%x: tensor<2xf32> {nn.name = ""}) {
  return
}

// -----

// expected-error @+1 {{'nn.name' must be a non-empty string}}
func.func @result_name(%x: tensor<2xf32>) -> (tensor<2xf32> {nn.name = 3 : i64}) {
  return %x : tensor<2xf32>
}

// -----

// expected-error @+1 {{unknown nn argument attribute 'nn.weight'}}
func.func @unknown_arg(%x: tensor<2xf32> {nn.weight}) {
  return
}

// -----

// expected-error @+1 {{unknown nn result attribute 'nn.param'}}
func.func @unknown_result(%x: tensor<2xf32>) -> (tensor<2xf32> {nn.param = dense<1.0> : tensor<2xf32>}) {
  return %x : tensor<2xf32>
}
