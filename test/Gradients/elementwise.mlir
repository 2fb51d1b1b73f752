// RUN: %python %S/gradcheck.py %s --bin %pipedream_bin | FileCheck %s
// Derivative rules of the elementwise ops, activations, softmax family,
// contractions and layer normalization (NNGradientsElementwise.cpp), checked
// against central finite differences in f64.
// CHECK-NOT: FAIL

//===----------------------------------------------------------------------===//
// Binary ops with broadcasting
//===----------------------------------------------------------------------===//

// CHECK: PASS @add_broadcast
func.func @add_broadcast(%a: tensor<2x3xf64>, %b: tensor<3xf64>) -> tensor<2x3xf64> {
  %0 = nn.add %a, %b : (tensor<2x3xf64>, tensor<3xf64>) -> tensor<2x3xf64>
  return %0 : tensor<2x3xf64>
}

// Both operands stretched ([2, 1] and [1, 3]), one of them rank 0.
// CHECK: PASS @sub_both_broadcast
func.func @sub_both_broadcast(%a: tensor<2x1xf64>, %b: tensor<1x3xf64>, %c: tensor<f64>) -> tensor<2x3xf64> {
  %0 = nn.sub %a, %b : (tensor<2x1xf64>, tensor<1x3xf64>) -> tensor<2x3xf64>
  %1 = nn.sub %c, %0 : (tensor<f64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  return %1 : tensor<2x3xf64>
}

// A denominator broadcast along the last axis: its gradient is a negated
// product summed over that axis, which the CPU pipeline once lowered to a
// GEMM without the negation.
// CHECK: PASS @div_broadcast_denominator
func.func @div_broadcast_denominator(%a: tensor<4x8xf64>, %b: tensor<4x1xf64> {gradcheck.positive}) -> tensor<4x8xf64> {
  %0 = nn.div %a, %b : (tensor<4x8xf64>, tensor<4x1xf64>) -> tensor<4x8xf64>
  return %0 : tensor<4x8xf64>
}

// x / sqrt(sum(x * x)): the normalization of RMSNorm-style layers.
// CHECK: PASS @rms_normalize
func.func @rms_normalize(%x: tensor<4x8xf64>) -> tensor<4x8xf64> {
  %sq = nn.mul %x, %x : (tensor<4x8xf64>, tensor<4x8xf64>) -> tensor<4x8xf64>
  %s = nn.reduce_sum %sq {axes = array<i64: 1>, keepdims = true} : (tensor<4x8xf64>) -> tensor<4x1xf64>
  %r = nn.sqrt %s : tensor<4x1xf64>
  %y = nn.div %x, %r : (tensor<4x8xf64>, tensor<4x1xf64>) -> tensor<4x8xf64>
  return %y : tensor<4x8xf64>
}

// CHECK: PASS @mul_broadcast
func.func @mul_broadcast(%a: tensor<4x1x3xf64>, %b: tensor<2x1xf64>) -> tensor<4x2x3xf64> {
  %0 = nn.mul %a, %b : (tensor<4x1x3xf64>, tensor<2x1xf64>) -> tensor<4x2x3xf64>
  return %0 : tensor<4x2x3xf64>
}

// The same value on both sides: the two gradients accumulate.
// CHECK: PASS @mul_square
func.func @mul_square(%a: tensor<5xf64>) -> tensor<5xf64> {
  %0 = nn.mul %a, %a : (tensor<5xf64>, tensor<5xf64>) -> tensor<5xf64>
  return %0 : tensor<5xf64>
}

// CHECK: PASS @div_broadcast
func.func @div_broadcast(%a: tensor<2x3xf64>, %b: tensor<3xf64> {gradcheck.positive}) -> tensor<2x3xf64> {
  %0 = nn.div %a, %b : (tensor<2x3xf64>, tensor<3xf64>) -> tensor<2x3xf64>
  return %0 : tensor<2x3xf64>
}

// CHECK: PASS @div_negative_divisor
func.func @div_negative_divisor(%a: tensor<f64>, %b: tensor<2x2xf64> {gradcheck.range = [-2.0, -0.5]}) -> tensor<2x2xf64> {
  %0 = nn.div %a, %b : (tensor<f64>, tensor<2x2xf64>) -> tensor<2x2xf64>
  return %0 : tensor<2x2xf64>
}

// Gradients for the base and the exponent (x > 0).
// CHECK: PASS @pow_grad
func.func @pow_grad(%x: tensor<2x3xf64> {gradcheck.positive}, %e: tensor<3xf64> {gradcheck.range = [-1.5, 2.5]}) -> tensor<2x3xf64> {
  %0 = nn.pow %x, %e : (tensor<2x3xf64>, tensor<3xf64>) -> tensor<2x3xf64>
  return %0 : tensor<2x3xf64>
}

// An integer exponent has no gradient; a negative base is fine then.
// CHECK: PASS @pow_integer_exponent
func.func @pow_integer_exponent(%x: tensor<2x3xf64>, %e: tensor<i64> {gradcheck.int_range = [2, 4]}) -> tensor<2x3xf64> {
  %0 = nn.pow %x, %e : (tensor<2x3xf64>, tensor<i64>) -> tensor<2x3xf64>
  return %0 : tensor<2x3xf64>
}

//===----------------------------------------------------------------------===//
// Unary ops and activations
//===----------------------------------------------------------------------===//

// CHECK: PASS @sqrt_grad
func.func @sqrt_grad(%x: tensor<2x3xf64> {gradcheck.positive}) -> tensor<2x3xf64> {
  %0 = nn.sqrt %x : tensor<2x3xf64>
  return %0 : tensor<2x3xf64>
}

// CHECK: PASS @neg_grad
func.func @neg_grad(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
  %0 = nn.neg %x : tensor<2x3xf64>
  return %0 : tensor<2x3xf64>
}

// CHECK: PASS @exp_grad
func.func @exp_grad(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
  %0 = nn.exp %x : tensor<2x3xf64>
  return %0 : tensor<2x3xf64>
}

// CHECK: PASS @log_grad
func.func @log_grad(%x: tensor<2x3xf64> {gradcheck.positive}) -> tensor<2x3xf64> {
  %0 = nn.log %x : tensor<2x3xf64>
  return %0 : tensor<2x3xf64>
}

// CHECK: PASS @tanh_grad
func.func @tanh_grad(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
  %0 = nn.tanh %x : tensor<2x3xf64>
  return %0 : tensor<2x3xf64>
}

// CHECK: PASS @erf_grad
func.func @erf_grad(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
  %0 = nn.erf %x : tensor<2x3xf64>
  return %0 : tensor<2x3xf64>
}

// CHECK: PASS @sigmoid_grad
func.func @sigmoid_grad(%x: tensor<2x3xf64> {gradcheck.range = [-4.0, 4.0]}) -> tensor<2x3xf64> {
  %0 = nn.sigmoid %x : tensor<2x3xf64>
  return %0 : tensor<2x3xf64>
}

// CHECK: PASS @relu_grad
func.func @relu_grad(%x: tensor<4x5xf64>) -> tensor<4x5xf64> {
  %0 = nn.relu %x : tensor<4x5xf64>
  return %0 : tensor<4x5xf64>
}

// CHECK: PASS @leaky_relu
func.func @leaky_relu(%x: tensor<4x5xf64>) -> tensor<4x5xf64> {
  %0 = nn.leaky_relu %x {alpha = 0.2 : f64} : tensor<4x5xf64>
  return %0 : tensor<4x5xf64>
}

// CHECK: PASS @gelu
func.func @gelu(%x: tensor<4x5xf64> {gradcheck.range = [-3.0, 3.0]}) -> tensor<4x5xf64> {
  %0 = nn.gelu %x : tensor<4x5xf64>
  return %0 : tensor<4x5xf64>
}

// CHECK: PASS @gelu_tanh
func.func @gelu_tanh(%x: tensor<4x5xf64> {gradcheck.range = [-3.0, 3.0]}) -> tensor<4x5xf64> {
  %0 = nn.gelu %x {approximate = "tanh"} : tensor<4x5xf64>
  return %0 : tensor<4x5xf64>
}

// Some inputs fall outside [min, max]: their gradient is zero.
// CHECK: PASS @clip
func.func @clip(%x: tensor<4x5xf64>) -> tensor<4x5xf64> {
  %0 = nn.clip %x {min = -0.5 : f64, max = 1.0 : f64} : tensor<4x5xf64>
  return %0 : tensor<4x5xf64>
}

// CHECK: PASS @clip_min_only
func.func @clip_min_only(%x: tensor<4x5xf64>) -> tensor<4x5xf64> {
  %0 = nn.clip %x {min = 0.25 : f64} : tensor<4x5xf64>
  return %0 : tensor<4x5xf64>
}

//===----------------------------------------------------------------------===//
// Softmax family
//===----------------------------------------------------------------------===//

// CHECK: PASS @softmax_last
func.func @softmax_last(%x: tensor<2x5xf64>) -> tensor<2x5xf64> {
  %0 = nn.softmax %x {axis = 1 : i64} : tensor<2x5xf64>
  return %0 : tensor<2x5xf64>
}

// CHECK: PASS @softmax_middle
func.func @softmax_middle(%x: tensor<2x4x3xf64>) -> tensor<2x4x3xf64> {
  %0 = nn.softmax %x {axis = 1 : i64} : tensor<2x4x3xf64>
  return %0 : tensor<2x4x3xf64>
}

// CHECK: PASS @log_softmax_last
func.func @log_softmax_last(%x: tensor<2x5xf64>) -> tensor<2x5xf64> {
  %0 = nn.log_softmax %x {axis = 1 : i64} : tensor<2x5xf64>
  return %0 : tensor<2x5xf64>
}

// CHECK: PASS @log_softmax_first
func.func @log_softmax_first(%x: tensor<4x2x3xf64>) -> tensor<4x2x3xf64> {
  %0 = nn.log_softmax %x {axis = 0 : i64} : tensor<4x2x3xf64>
  return %0 : tensor<4x2x3xf64>
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

// CHECK: PASS @matmul
func.func @matmul(%a: tensor<3x4xf64>, %b: tensor<4x5xf64>) -> tensor<3x5xf64> {
  %0 = nn.matmul %a, %b : (tensor<3x4xf64>, tensor<4x5xf64>) -> tensor<3x5xf64>
  return %0 : tensor<3x5xf64>
}

// The weight is shared by the batch: its gradient sums over it.
// CHECK: PASS @matmul_batch_rhs_shared
func.func @matmul_batch_rhs_shared(%a: tensor<2x3x4xf64>, %b: tensor<4x5xf64>) -> tensor<2x3x5xf64> {
  %0 = nn.matmul %a, %b : (tensor<2x3x4xf64>, tensor<4x5xf64>) -> tensor<2x3x5xf64>
  return %0 : tensor<2x3x5xf64>
}

// CHECK: PASS @matmul_batch_lhs_shared
func.func @matmul_batch_lhs_shared(%a: tensor<3x4xf64>, %b: tensor<2x4x5xf64>) -> tensor<2x3x5xf64> {
  %0 = nn.matmul %a, %b : (tensor<3x4xf64>, tensor<2x4x5xf64>) -> tensor<2x3x5xf64>
  return %0 : tensor<2x3x5xf64>
}

// Batch dimensions stretched on both sides ([2, 1] against [3]).
// CHECK: PASS @matmul_batch_broadcast
func.func @matmul_batch_broadcast(%a: tensor<2x1x3x4xf64>, %b: tensor<3x4x2xf64>) -> tensor<2x3x3x2xf64> {
  %0 = nn.matmul %a, %b : (tensor<2x1x3x4xf64>, tensor<3x4x2xf64>) -> tensor<2x3x3x2xf64>
  return %0 : tensor<2x3x3x2xf64>
}

// CHECK: PASS @matmul_vector_lhs
func.func @matmul_vector_lhs(%a: tensor<4xf64>, %b: tensor<2x4x5xf64>) -> tensor<2x5xf64> {
  %0 = nn.matmul %a, %b : (tensor<4xf64>, tensor<2x4x5xf64>) -> tensor<2x5xf64>
  return %0 : tensor<2x5xf64>
}

// CHECK: PASS @matmul_vector_rhs
func.func @matmul_vector_rhs(%a: tensor<3x4xf64>, %b: tensor<4xf64>) -> tensor<3xf64> {
  %0 = nn.matmul %a, %b : (tensor<3x4xf64>, tensor<4xf64>) -> tensor<3xf64>
  return %0 : tensor<3xf64>
}

// CHECK: PASS @matmul_dot
func.func @matmul_dot(%a: tensor<4xf64>, %b: tensor<4xf64>) -> tensor<f64> {
  %0 = nn.matmul %a, %b : (tensor<4xf64>, tensor<4xf64>) -> tensor<f64>
  return %0 : tensor<f64>
}

// CHECK: PASS @gemm
func.func @gemm(%a: tensor<3x4xf64>, %b: tensor<4x5xf64>, %c: tensor<3x5xf64>) -> tensor<3x5xf64> {
  %0 = nn.gemm %a, %b, %c : (tensor<3x4xf64>, tensor<4x5xf64>, tensor<3x5xf64>) -> tensor<3x5xf64>
  return %0 : tensor<3x5xf64>
}

// A linear layer: transposed weight, bias broadcast over the rows.
// CHECK: PASS @gemm_trans_b_bias
func.func @gemm_trans_b_bias(%x: tensor<3x4xf64>, %w: tensor<5x4xf64>, %b: tensor<5xf64>) -> tensor<3x5xf64> {
  %0 = nn.gemm %x, %w, %b {trans_b = true} : (tensor<3x4xf64>, tensor<5x4xf64>, tensor<5xf64>) -> tensor<3x5xf64>
  return %0 : tensor<3x5xf64>
}

// CHECK: PASS @gemm_trans_a_scaled
func.func @gemm_trans_a_scaled(%a: tensor<4x3xf64>, %b: tensor<4x5xf64>, %c: tensor<3x1xf64>) -> tensor<3x5xf64> {
  %0 = nn.gemm %a, %b, %c {alpha = 0.5 : f64, beta = -2.0 : f64, trans_a = true}
      : (tensor<4x3xf64>, tensor<4x5xf64>, tensor<3x1xf64>) -> tensor<3x5xf64>
  return %0 : tensor<3x5xf64>
}

// CHECK: PASS @gemm_trans_both_scalar_c
func.func @gemm_trans_both_scalar_c(%a: tensor<4x3xf64>, %b: tensor<5x4xf64>, %c: tensor<f64>) -> tensor<3x5xf64> {
  %0 = nn.gemm %a, %b, %c {alpha = 1.5 : f64, beta = 3.0 : f64, trans_a = true, trans_b = true}
      : (tensor<4x3xf64>, tensor<5x4xf64>, tensor<f64>) -> tensor<3x5xf64>
  return %0 : tensor<3x5xf64>
}

// CHECK: PASS @gemm_no_c
func.func @gemm_no_c(%a: tensor<3x4xf64>, %b: tensor<4x5xf64>) -> tensor<3x5xf64> {
  %0 = nn.gemm %a, %b {alpha = 2.0 : f64} : (tensor<3x4xf64>, tensor<4x5xf64>) -> tensor<3x5xf64>
  return %0 : tensor<3x5xf64>
}

//===----------------------------------------------------------------------===//
// Layer normalization
//===----------------------------------------------------------------------===//

// CHECK: PASS @layer_norm_last
func.func @layer_norm_last(%x: tensor<2x3x6xf64>, %g: tensor<6xf64>, %b: tensor<6xf64>) -> tensor<2x3x6xf64> {
  %0 = nn.layer_normalization %x, %g, %b {axis = 2 : i64, epsilon = 1.0e-05 : f64}
      : (tensor<2x3x6xf64>, tensor<6xf64>, tensor<6xf64>) -> tensor<2x3x6xf64>
  return %0 : tensor<2x3x6xf64>
}

// Two normalized axes, a scale broadcast along one of them, no bias, a
// large epsilon (it matters in the gradient).
// CHECK: PASS @layer_norm_two_axes
func.func @layer_norm_two_axes(%x: tensor<2x3x4xf64>, %g: tensor<1x4xf64>) -> tensor<2x3x4xf64> {
  %0 = nn.layer_normalization %x, %g {axis = 1 : i64, epsilon = 0.5 : f64}
      : (tensor<2x3x4xf64>, tensor<1x4xf64>) -> tensor<2x3x4xf64>
  return %0 : tensor<2x3x4xf64>
}

// Everything normalized (axis 0).
// CHECK: PASS @layer_norm_all
func.func @layer_norm_all(%x: tensor<3x4xf64>, %g: tensor<3x4xf64>, %b: tensor<4xf64>) -> tensor<3x4xf64> {
  %0 = nn.layer_normalization %x, %g, %b {axis = 0 : i64, epsilon = 1.0e-03 : f64}
      : (tensor<3x4xf64>, tensor<3x4xf64>, tensor<4xf64>) -> tensor<3x4xf64>
  return %0 : tensor<3x4xf64>
}
