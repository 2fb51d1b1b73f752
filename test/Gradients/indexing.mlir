// RUN: %python %S/gradcheck.py %s --bin %pipedream_bin | FileCheck %s
// Derivative rules of the data-dependent indexing ops (gather_elements,
// scatter_elements, gather_nd, scatter_nd; NNGradientsShape.cpp) and of
// conv_backward_input (ONNX ConvTranspose; NNGradientsNeural.cpp), checked
// against central finite differences in f64.
// CHECK-NOT: FAIL

// Repeated and negative indices along axis 1: the data gradient sums them.
// CHECK: PASS @gather_elements_axis1
func.func @gather_elements_axis1(%x: tensor<3x4xf64>, %i: tensor<2x5xi64> {gradcheck.int_range = [-4, 4]}) -> tensor<2x5xf64> {
  %0 = nn.gather_elements %x, %i {axis = 1 : i64} : (tensor<3x4xf64>, tensor<2x5xi64>) -> tensor<2x5xf64>
  return %0 : tensor<2x5xf64>
}

// CHECK: PASS @gather_elements_axis0
func.func @gather_elements_axis0(%x: tensor<4x3xf64>, %i: tensor<2x3xi32> {gradcheck.int_range = [-4, 4]}) -> tensor<2x3xf64> {
  %0 = nn.gather_elements %x, %i {axis = 0 : i64} : (tensor<4x3xf64>, tensor<2x3xi32>) -> tensor<2x3xf64>
  return %0 : tensor<2x3xf64>
}

// Distinct target positions (ONNX leaves duplicates undefined for none):
// overwritten data elements get no gradient, the updates get theirs.
// CHECK: PASS @scatter_elements_none
func.func @scatter_elements_none(%x: tensor<3x3xf64>, %u: tensor<2x3xf64>) -> tensor<3x3xf64> {
  %i = nn.constant dense<[[1, 0, 2], [-1, 2, 0]]> : tensor<2x3xi64>
  %0 = nn.scatter_elements %x, %i, %u {axis = 0 : i64, reduction = "none"} : (tensor<3x3xf64>, tensor<2x3xi64>, tensor<2x3xf64>) -> tensor<3x3xf64>
  return %0 : tensor<3x3xf64>
}

// add: duplicates accumulate; every update gets the gradient of its target.
// CHECK: PASS @scatter_elements_add
func.func @scatter_elements_add(%x: tensor<3x4xf64>, %i: tensor<3x2xi64> {gradcheck.int_range = [-4, 4]}, %u: tensor<3x2xf64>) -> tensor<3x4xf64> {
  %0 = nn.scatter_elements %x, %i, %u {axis = 1 : i64, reduction = "add"} : (tensor<3x4xf64>, tensor<3x2xi64>, tensor<3x2xf64>) -> tensor<3x4xf64>
  return %0 : tensor<3x4xf64>
}

// Tuples of 2 coordinates with 1 batch dimension, reading rows of 3.
// CHECK: PASS @gather_nd_batch
func.func @gather_nd_batch(%x: tensor<2x3x4x3xf64>, %i: tensor<2x5x2xi64> {gradcheck.int_range = [-3, 3]}) -> tensor<2x5x3xf64> {
  %0 = nn.gather_nd %x, %i {batch_dims = 1 : i64} : (tensor<2x3x4x3xf64>, tensor<2x5x2xi64>) -> tensor<2x5x3xf64>
  return %0 : tensor<2x5x3xf64>
}

// CHECK: PASS @scatter_nd_none
func.func @scatter_nd_none(%x: tensor<4x3xf64>, %u: tensor<2x3xf64>) -> tensor<4x3xf64> {
  %i = nn.constant dense<[[3], [-4]]> : tensor<2x1xi64>
  %0 = nn.scatter_nd %x, %i, %u {reduction = "none"} : (tensor<4x3xf64>, tensor<2x1xi64>, tensor<2x3xf64>) -> tensor<4x3xf64>
  return %0 : tensor<4x3xf64>
}

// CHECK: PASS @scatter_nd_add
func.func @scatter_nd_add(%x: tensor<3x4xf64>, %i: tensor<5x2xi64> {gradcheck.int_range = [-3, 3]}, %u: tensor<5xf64>) -> tensor<3x4xf64> {
  %0 = nn.scatter_nd %x, %i, %u {reduction = "add"} : (tensor<3x4xf64>, tensor<5x2xi64>, tensor<5xf64>) -> tensor<3x4xf64>
  return %0 : tensor<3x4xf64>
}

// A strided, padded, grouped transposed convolution (ConvTranspose) with
// an extra output row (output_padding): both operands' gradients.
// CHECK: PASS @conv_transpose
func.func @conv_transpose(%x: tensor<1x4x3x3xf64>, %w: tensor<4x1x3x2xf64>) -> tensor<1x2x6x6xf64> {
  %0 = nn.conv_backward_input %x, %w {dilations = array<i64: 1, 1>, group = 2 : i64,
                                      input_shape = array<i64: 1, 2, 6, 6>,
                                      pads = array<i64: 1, 0, 0, 0>, strides = array<i64: 2, 2>}
      : (tensor<1x4x3x3xf64>, tensor<4x1x3x2xf64>) -> tensor<1x2x6x6xf64>
  return %0 : tensor<1x2x6x6xf64>
}

// A divisor broadcast along the last axis (as MeanVarianceNormalization's):
// its gradient reduces `-(g / y) * z`, which CPU elementwise fusion turns
// into a contraction-like generic; it must not become a GEMM (that dropped
// the negation, flipping the gradient's sign).
// CHECK: PASS @div_trailing_broadcast
func.func @div_trailing_broadcast(%x: tensor<2x3xf64>, %y: tensor<2x1xf64> {gradcheck.positive}) -> tensor<2x3xf64> {
  %0 = nn.div %x, %y : (tensor<2x3xf64>, tensor<2x1xf64>) -> tensor<2x3xf64>
  return %0 : tensor<2x3xf64>
}
