// RUN: %python %S/gradcheck.py %s --bin %pipedream_bin | FileCheck %s
// Derivative rules of the ops of NNMathOps.td (NNGradientsMath.cpp):
// trigonometric and hyperbolic functions, reciprocal, abs, the piecewise
// constant ops (zero derivative), the activations, binary max/min/mod/prelu,
// reduce_min, reduce_prod, cumsum, trilu and top_k, checked against central finite
// differences in f64.
// CHECK-NOT: FAIL

//===----------------------------------------------------------------------===//
// Trigonometric and hyperbolic functions
//===----------------------------------------------------------------------===//

// CHECK: PASS @sin_grad
func.func @sin_grad(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
  %0 = nn.sin %x : tensor<2x3xf64>
  return %0 : tensor<2x3xf64>
}
// CHECK: PASS @cos_grad
func.func @cos_grad(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
  %0 = nn.cos %x : tensor<2x3xf64>
  return %0 : tensor<2x3xf64>
}
// CHECK: PASS @tan_grad
func.func @tan_grad(%x: tensor<2x3xf64> {gradcheck.range = [-1.2, 1.2]}) -> tensor<2x3xf64> {
  %0 = nn.tan %x : tensor<2x3xf64>
  return %0 : tensor<2x3xf64>
}
// CHECK: PASS @asin_grad
func.func @asin_grad(%x: tensor<2x3xf64> {gradcheck.range = [-0.9, 0.9]}) -> tensor<2x3xf64> {
  %0 = nn.asin %x : tensor<2x3xf64>
  return %0 : tensor<2x3xf64>
}
// CHECK: PASS @acos_grad
func.func @acos_grad(%x: tensor<2x3xf64> {gradcheck.range = [-0.9, 0.9]}) -> tensor<2x3xf64> {
  %0 = nn.acos %x : tensor<2x3xf64>
  return %0 : tensor<2x3xf64>
}
// CHECK: PASS @atan_grad
func.func @atan_grad(%x: tensor<2x3xf64> {gradcheck.range = [-3.0, 3.0]}) -> tensor<2x3xf64> {
  %0 = nn.atan %x : tensor<2x3xf64>
  return %0 : tensor<2x3xf64>
}
// CHECK: PASS @sinh_grad
func.func @sinh_grad(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
  %0 = nn.sinh %x : tensor<2x3xf64>
  return %0 : tensor<2x3xf64>
}
// CHECK: PASS @cosh_grad
func.func @cosh_grad(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
  %0 = nn.cosh %x : tensor<2x3xf64>
  return %0 : tensor<2x3xf64>
}
// CHECK: PASS @asinh_grad
func.func @asinh_grad(%x: tensor<2x3xf64> {gradcheck.range = [-3.0, 3.0]}) -> tensor<2x3xf64> {
  %0 = nn.asinh %x : tensor<2x3xf64>
  return %0 : tensor<2x3xf64>
}
// CHECK: PASS @acosh_grad
func.func @acosh_grad(%x: tensor<2x3xf64> {gradcheck.range = [1.2, 3.0]}) -> tensor<2x3xf64> {
  %0 = nn.acosh %x : tensor<2x3xf64>
  return %0 : tensor<2x3xf64>
}
// CHECK: PASS @atanh_grad
func.func @atanh_grad(%x: tensor<2x3xf64> {gradcheck.range = [-0.9, 0.9]}) -> tensor<2x3xf64> {
  %0 = nn.atanh %x : tensor<2x3xf64>
  return %0 : tensor<2x3xf64>
}
//===----------------------------------------------------------------------===//
// Reciprocal, abs, piecewise-constant ops (inputs away from the jumps)
//===----------------------------------------------------------------------===//

// CHECK: PASS @reciprocal_grad
func.func @reciprocal_grad(%x: tensor<2x3xf64> {gradcheck.range = [-2.0, -0.5]}) -> tensor<2x3xf64> {
  %0 = nn.reciprocal %x : tensor<2x3xf64>
  return %0 : tensor<2x3xf64>
}
// CHECK: PASS @reciprocal_positive
func.func @reciprocal_positive(%x: tensor<2x3xf64> {gradcheck.positive}) -> tensor<2x3xf64> {
  %0 = nn.reciprocal %x : tensor<2x3xf64>
  return %0 : tensor<2x3xf64>
}
// CHECK: PASS @abs_grad
func.func @abs_grad(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
  %0 = nn.abs %x : tensor<2x3xf64>
  return %0 : tensor<2x3xf64>
}
// CHECK: PASS @floor_grad
func.func @floor_grad(%x: tensor<2x3xf64> {gradcheck.range = [0.1, 0.9]}) -> tensor<2x3xf64> {
  %0 = nn.floor %x : tensor<2x3xf64>
  return %0 : tensor<2x3xf64>
}
// CHECK: PASS @ceil_grad
func.func @ceil_grad(%x: tensor<2x3xf64> {gradcheck.range = [0.1, 0.9]}) -> tensor<2x3xf64> {
  %0 = nn.ceil %x : tensor<2x3xf64>
  return %0 : tensor<2x3xf64>
}
// CHECK: PASS @round_grad
func.func @round_grad(%x: tensor<2x3xf64> {gradcheck.range = [0.1, 0.4]}) -> tensor<2x3xf64> {
  %0 = nn.round %x : tensor<2x3xf64>
  return %0 : tensor<2x3xf64>
}
// CHECK: PASS @sign_grad
func.func @sign_grad(%x: tensor<2x3xf64> {gradcheck.positive}) -> tensor<2x3xf64> {
  %0 = nn.sign %x : tensor<2x3xf64>
  return %0 : tensor<2x3xf64>
}
//===----------------------------------------------------------------------===//
// Activations (the kinks are a measure-zero set of the random inputs)
//===----------------------------------------------------------------------===//

// CHECK: PASS @softplus_grad
func.func @softplus_grad(%x: tensor<2x3xf64> {gradcheck.range = [-4.0, 4.0]}) -> tensor<2x3xf64> {
  %0 = nn.softplus %x : tensor<2x3xf64>
  return %0 : tensor<2x3xf64>
}
// CHECK: PASS @softsign_grad
func.func @softsign_grad(%x: tensor<2x3xf64> {gradcheck.range = [-3.0, 3.0]}) -> tensor<2x3xf64> {
  %0 = nn.softsign %x : tensor<2x3xf64>
  return %0 : tensor<2x3xf64>
}
// CHECK: PASS @elu_grad
func.func @elu_grad(%x: tensor<4x5xf64>) -> tensor<4x5xf64> {
  %0 = nn.elu %x {alpha = 0.7 : f64} : tensor<4x5xf64>
  return %0 : tensor<4x5xf64>
}
// CHECK: PASS @selu_grad
func.func @selu_grad(%x: tensor<4x5xf64>) -> tensor<4x5xf64> {
  %0 = nn.selu %x {alpha = 1.5 : f64, gamma = 1.2 : f64} : tensor<4x5xf64>
  return %0 : tensor<4x5xf64>
}
// CHECK: PASS @celu_grad
func.func @celu_grad(%x: tensor<4x5xf64>) -> tensor<4x5xf64> {
  %0 = nn.celu %x {alpha = 2.0 : f64} : tensor<4x5xf64>
  return %0 : tensor<4x5xf64>
}
// CHECK: PASS @hard_sigmoid_grad
func.func @hard_sigmoid_grad(%x: tensor<4x5xf64> {gradcheck.range = [-4.0, 4.0]}) -> tensor<4x5xf64> {
  %0 = nn.hard_sigmoid %x {alpha = 0.3 : f64, beta = 0.4 : f64} : tensor<4x5xf64>
  return %0 : tensor<4x5xf64>
}
// CHECK: PASS @hard_swish_grad
func.func @hard_swish_grad(%x: tensor<4x5xf64> {gradcheck.range = [-4.5, 4.5]}) -> tensor<4x5xf64> {
  %0 = nn.hard_swish %x : tensor<4x5xf64>
  return %0 : tensor<4x5xf64>
}
// CHECK: PASS @thresholded_relu_grad
func.func @thresholded_relu_grad(%x: tensor<4x5xf64>) -> tensor<4x5xf64> {
  %0 = nn.thresholded_relu %x {alpha = 0.5 : f64} : tensor<4x5xf64>
  return %0 : tensor<4x5xf64>
}
// CHECK: PASS @shrink_grad
func.func @shrink_grad(%x: tensor<4x5xf64>) -> tensor<4x5xf64> {
  %0 = nn.shrink %x {bias = 0.3 : f64, lambd = 0.6 : f64} : tensor<4x5xf64>
  return %0 : tensor<4x5xf64>
}
// The slope broadcasts over the rows; both gradients are checked.
// CHECK: PASS @prelu_grad
func.func @prelu_grad(%x: tensor<4x3xf64>, %s: tensor<3xf64>) -> tensor<4x3xf64> {
  %0 = nn.prelu %x, %s : (tensor<4x3xf64>, tensor<3xf64>) -> tensor<4x3xf64>
  return %0 : tensor<4x3xf64>
}

//===----------------------------------------------------------------------===//
// Binary max, min, mod
//===----------------------------------------------------------------------===//

// CHECK: PASS @max_broadcast
func.func @max_broadcast(%a: tensor<4x3xf64>, %b: tensor<3xf64>) -> tensor<4x3xf64> {
  %0 = nn.max %a, %b : (tensor<4x3xf64>, tensor<3xf64>) -> tensor<4x3xf64>
  return %0 : tensor<4x3xf64>
}

// CHECK: PASS @min_broadcast
func.func @min_broadcast(%a: tensor<4x1xf64>, %b: tensor<1x3xf64>) -> tensor<4x3xf64> {
  %0 = nn.min %a, %b : (tensor<4x1xf64>, tensor<1x3xf64>) -> tensor<4x3xf64>
  return %0 : tensor<4x3xf64>
}

// fmod with divisors of both signs (|x / y| stays away from integers for
// these seeded inputs).
// CHECK: PASS @fmod_grad
func.func @fmod_grad(%a: tensor<2x3xf64>, %b: tensor<3xf64> {gradcheck.values = [0.7, -1.3, 2.9]}) -> tensor<2x3xf64> {
  %0 = nn.mod %a, %b {fmod = true} : (tensor<2x3xf64>, tensor<3xf64>) -> tensor<2x3xf64>
  return %0 : tensor<2x3xf64>
}

//===----------------------------------------------------------------------===//
// Reductions and scans
//===----------------------------------------------------------------------===//

// CHECK: PASS @reduce_min_grad
func.func @reduce_min_grad(%x: tensor<3x4xf64>) -> tensor<3xf64> {
  %0 = nn.reduce_min %x {axes = array<i64: 1>, keepdims = false} : (tensor<3x4xf64>) -> tensor<3xf64>
  return %0 : tensor<3xf64>
}

// CHECK: PASS @reduce_prod_grad
func.func @reduce_prod_grad(%x: tensor<3x4xf64>) -> tensor<1x4xf64> {
  %0 = nn.reduce_prod %x {axes = array<i64: 0>, keepdims = true} : (tensor<3x4xf64>) -> tensor<1x4xf64>
  return %0 : tensor<1x4xf64>
}

// Rows with no, one and two zeros: the derivative at a lone zero is the
// product of the other elements, every other one is zero.
// CHECK: PASS @reduce_prod_zeros
func.func @reduce_prod_zeros(%x: tensor<3x3xf64> {gradcheck.values = [1.5, -2.0, 0.5, 0.0, 3.0, -1.25, 0.0, 2.0, 0.0]}) -> tensor<3xf64> {
  %0 = nn.reduce_prod %x {axes = array<i64: 1>, keepdims = false} : (tensor<3x3xf64>) -> tensor<3xf64>
  return %0 : tensor<3xf64>
}

// CHECK: PASS @cumsum_grad
func.func @cumsum_grad(%x: tensor<3x5xf64>) -> tensor<3x5xf64> {
  %0 = nn.cumsum %x {axis = 1 : i64} : tensor<3x5xf64>
  return %0 : tensor<3x5xf64>
}

// CHECK: PASS @cumsum_exclusive_reverse
func.func @cumsum_exclusive_reverse(%x: tensor<4x3xf64>) -> tensor<4x3xf64> {
  %0 = nn.cumsum %x {axis = 0 : i64, exclusive = true, reverse = true} : tensor<4x3xf64>
  return %0 : tensor<4x3xf64>
}

// CHECK: PASS @cumsum_exclusive
func.func @cumsum_exclusive(%x: tensor<6xf64>) -> tensor<6xf64> {
  %0 = nn.cumsum %x {axis = 0 : i64, exclusive = true} : tensor<6xf64>
  return %0 : tensor<6xf64>
}

// The gradient of the k selected values goes back to their positions.
// CHECK: PASS @top_k_grad
func.func @top_k_grad(%x: tensor<3x5xf64>) -> tensor<3x2xf64> {
  %v, %i = nn.top_k %x {axis = 1 : i64, k = 2 : i64} : (tensor<3x5xf64>) -> (tensor<3x2xf64>, tensor<3x2xi64>)
  return %v : tensor<3x2xf64>
}

// CHECK: PASS @top_k_smallest_axis0
func.func @top_k_smallest_axis0(%x: tensor<4x3xf64>) -> tensor<3x3xf64> {
  %v, %i = nn.top_k %x {axis = 0 : i64, k = 3 : i64, largest = false} : (tensor<4x3xf64>) -> (tensor<3x3xf64>, tensor<3x3xi64>)
  return %v : tensor<3x3xf64>
}

// CHECK: PASS @trilu_grad
func.func @trilu_grad(%x: tensor<2x3x4xf64>, %k: tensor<i64> {gradcheck.values = [1]}) -> tensor<2x3x4xf64> {
  %0 = nn.trilu %x, %k {upper = false} : (tensor<2x3x4xf64>, tensor<i64>) -> tensor<2x3x4xf64>
  return %0 : tensor<2x3x4xf64>
}
