// RUN: pipedream-opt %s --nn-fuse-activations --split-input-file | FileCheck %s
// The near misses and the shared intermediate change nothing and say nothing.
// RUN: pipedream-opt %s --nn-fuse-activations --split-input-file -verify-diagnostics > /dev/null

// PyTorch's export of nn.GELU() below opset 20: Div, Erf, Add, Mul, Mul.
// CHECK-LABEL: func.func @torch_order
// CHECK-SAME: (%[[X:.*]]: tensor<2x8xf32>)
// CHECK-NEXT: %[[G:.*]] = nn.gelu %[[X]] {nn.name = "/mlp/act/Mul_1"} : tensor<2x8xf32>
// CHECK-NEXT: return %[[G]]
func.func @torch_order(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %sqrt2 = nn.constant dense<1.41421354> : tensor<f32>
  %one = nn.constant dense<1.0> : tensor<f32>
  %half = nn.constant dense<0.5> : tensor<f32>
  %d = nn.div %x, %sqrt2 : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %e = nn.erf %d : tensor<2x8xf32>
  %a = nn.add %e, %one : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %m = nn.mul %x, %a : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %y = nn.mul %m, %half {nn.name = "/mlp/act/Mul_1"} : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// Operands swapped, x * (1 / sqrt 2), 0.5 applied to x first; f64.
// CHECK-LABEL: func.func @other_spelling
// CHECK-SAME: (%[[X:.*]]: tensor<4xf64>)
// CHECK-NEXT: %[[G:.*]] = nn.gelu %[[X]] : tensor<4xf64>
// CHECK-NEXT: return %[[G]]
func.func @other_spelling(%x: tensor<4xf64>) -> tensor<4xf64> {
  %c = nn.constant dense<0.70710678118654757> : tensor<1xf64>
  %one = nn.constant dense<1.0> : tensor<f64>
  %half = nn.constant dense<0.5> : tensor<f64>
  %s = nn.mul %c, %x : (tensor<1xf64>, tensor<4xf64>) -> tensor<4xf64>
  %e = nn.erf %s : tensor<4xf64>
  %a = nn.add %one, %e : (tensor<f64>, tensor<4xf64>) -> tensor<4xf64>
  %h = nn.mul %half, %x : (tensor<f64>, tensor<4xf64>) -> tensor<4xf64>
  %y = nn.mul %a, %h : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  return %y : tensor<4xf64>
}

// -----

// An intermediate with another user stays, and so does the chain.
// CHECK-LABEL: func.func @shared_intermediate
// CHECK-NOT: nn.gelu
// CHECK: nn.erf
func.func @shared_intermediate(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %sqrt2 = nn.constant dense<1.41421354> : tensor<f32>
  %one = nn.constant dense<1.0> : tensor<f32>
  %half = nn.constant dense<0.5> : tensor<f32>
  %d = nn.div %x, %sqrt2 : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %e = nn.erf %d : tensor<4xf32>
  %a = nn.add %e, %one : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %m = nn.mul %x, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %y = nn.mul %m, %half : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %y, %e : tensor<4xf32>, tensor<4xf32>
}

// -----

// Not GELU: a wrong constant (x / 2), a different x on the two sides, a
// result broadcast beyond x's shape.
// CHECK-LABEL: func.func @near_misses
// CHECK-NOT: nn.gelu
// CHECK: return
func.func @near_misses(%x: tensor<4xf32>, %z: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<3x4xf32>) {
  %two = nn.constant dense<2.0> : tensor<f32>
  %sqrt2 = nn.constant dense<1.41421354> : tensor<f32>
  %one = nn.constant dense<1.0> : tensor<f32>
  %half = nn.constant dense<0.5> : tensor<f32>
  %halves = nn.constant dense<0.5> : tensor<3x4xf32>
  %d0 = nn.div %x, %two : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %e0 = nn.erf %d0 : tensor<4xf32>
  %a0 = nn.add %e0, %one : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %m0 = nn.mul %x, %a0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %y0 = nn.mul %m0, %half : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %d1 = nn.div %x, %sqrt2 : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %e1 = nn.erf %d1 : tensor<4xf32>
  %a1 = nn.add %e1, %one : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %m1 = nn.mul %z, %a1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %y1 = nn.mul %m1, %half : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %d2 = nn.div %z, %sqrt2 : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %e2 = nn.erf %d2 : tensor<4xf32>
  %a2 = nn.add %e2, %one : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %m2 = nn.mul %z, %a2 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %y2 = nn.mul %m2, %halves : (tensor<4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  return %y0, %y1, %y2 : tensor<4xf32>, tensor<4xf32>, tensor<3x4xf32>
}

// -----

// GPT-2's gelu_new as both PyTorch exporters write it: the tanh form.
// CHECK-LABEL: func.func @gpt2_tanh
// CHECK-SAME: (%[[X:.*]]: tensor<2x8xf32>)
// CHECK-NEXT: %[[G:.*]] = nn.gelu %[[X]] {approximate = "tanh"} : tensor<2x8xf32>
// CHECK-NEXT: return %[[G]]
func.func @gpt2_tanh(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %half = nn.constant dense<0.5> : tensor<f32>
  %three = nn.constant dense<3.0> : tensor<f32>
  %c = nn.constant dense<0.044715> : tensor<f32>
  %k = nn.constant dense<0.797884583> : tensor<f32>
  %one = nn.constant dense<1.0> : tensor<f32>
  %h = nn.mul %x, %half : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %p = nn.pow %x, %three : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %m = nn.mul %p, %c : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %a = nn.add %x, %m : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %s = nn.mul %a, %k : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %t = nn.tanh %s : tensor<2x8xf32>
  %e = nn.add %t, %one : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %y = nn.mul %h, %e : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// The tanh form with x squared instead of cubed stays.
// CHECK-LABEL: func.func @tanh_wrong_power
// CHECK-NOT: nn.gelu
// CHECK: nn.tanh
func.func @tanh_wrong_power(%x: tensor<4xf32>) -> tensor<4xf32> {
  %half = nn.constant dense<0.5> : tensor<f32>
  %two = nn.constant dense<2.0> : tensor<f32>
  %c = nn.constant dense<0.044715> : tensor<f32>
  %k = nn.constant dense<0.797884583> : tensor<f32>
  %one = nn.constant dense<1.0> : tensor<f32>
  %h = nn.mul %x, %half : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %p = nn.pow %x, %two : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %m = nn.mul %p, %c : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %a = nn.add %x, %m : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %s = nn.mul %a, %k : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %t = nn.tanh %s : tensor<4xf32>
  %e = nn.add %t, %one : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %y = nn.mul %h, %e : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
