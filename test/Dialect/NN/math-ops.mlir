// RUN: pipedream-opt %s | pipedream-opt | FileCheck %s
// Round trip of the ops of NNMathOps.td: custom syntax and inferred types.

// CHECK-LABEL: func.func @unary
func.func @unary(%x: tensor<2x3xf32>, %i: tensor<4xi32>, %b: tensor<4xi1>) -> (tensor<2x3xf32>, tensor<4xi32>, tensor<2x3xi1>, tensor<4xi1>) {
  // CHECK: nn.sin %{{.*}} : tensor<2x3xf32>
  %0 = nn.sin %x : tensor<2x3xf32>
  // CHECK: nn.atanh
  %1 = nn.atanh %0 : tensor<2x3xf32>
  // CHECK: nn.round
  %2 = nn.round %1 : tensor<2x3xf32>
  // CHECK: nn.selu %{{.*}} {alpha = 1.500000e+00 : f64} : tensor<2x3xf32>
  %3 = nn.selu %2 {alpha = 1.5 : f64} : tensor<2x3xf32>
  // CHECK: nn.hard_swish
  %4 = nn.hard_swish %3 : tensor<2x3xf32>
  // CHECK: nn.abs %{{.*}} : tensor<4xi32>
  %5 = nn.abs %i : tensor<4xi32>
  // CHECK: nn.sign %{{.*}} : tensor<4xi32>
  %6 = nn.sign %5 : tensor<4xi32>
  // CHECK: nn.is_inf %{{.*}} {detect_negative = false} : (tensor<2x3xf32>) -> tensor<2x3xi1>
  %7 = nn.is_inf %4 {detect_negative = false} : (tensor<2x3xf32>) -> tensor<2x3xi1>
  // CHECK: nn.not %{{.*}} : tensor<4xi1>
  %8 = nn.not %b : tensor<4xi1>
  return %4, %6, %7, %8 : tensor<2x3xf32>, tensor<4xi32>, tensor<2x3xi1>, tensor<4xi1>
}

// CHECK-LABEL: func.func @binary
func.func @binary(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %i: tensor<4xi64>) -> (tensor<2x3xi1>, tensor<4xi64>, tensor<2x3xf32>) {
  // CHECK: nn.greater_equal %{{.*}}, %{{.*}} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %0 = nn.greater_equal %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %1 = nn.less %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  // CHECK: nn.xor
  %2 = nn.xor %0, %1 : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  // CHECK: nn.mod %{{.*}}, %{{.*}} : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %3 = nn.mod %i, %i : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  // CHECK: nn.max
  %4 = nn.max %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK: nn.prelu
  %5 = nn.prelu %4, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %2, %3, %5 : tensor<2x3xi1>, tensor<4xi64>, tensor<2x3xf32>
}

// CHECK-LABEL: func.func @reductions_and_scans
func.func @reductions_and_scans(%x: tensor<2x3xf32>, %k: tensor<i64>) -> (tensor<2xi64>, tensor<1x3xi64>, tensor<2x3xf32>, tensor<2x1xf32>, tensor<3xf32>, tensor<2x3xf32>) {
  // CHECK: nn.arg_max %{{.*}} {axis = 1 : i64, keepdims = false, select_last_index = true} : (tensor<2x3xf32>) -> tensor<2xi64>
  %0 = nn.arg_max %x {axis = 1 : i64, keepdims = false, select_last_index = true} : (tensor<2x3xf32>) -> tensor<2xi64>
  // CHECK: nn.arg_min %{{.*}} {axis = 0 : i64} : (tensor<2x3xf32>) -> tensor<1x3xi64>
  %1 = nn.arg_min %x {axis = 0 : i64} : (tensor<2x3xf32>) -> tensor<1x3xi64>
  // CHECK: nn.cumsum %{{.*}} {axis = 1 : i64, exclusive = true} : tensor<2x3xf32>
  %2 = nn.cumsum %x {axis = 1 : i64, exclusive = true} : tensor<2x3xf32>
  // CHECK: nn.reduce_min
  %3 = nn.reduce_min %2 {axes = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  // CHECK: nn.reduce_prod
  %4 = nn.reduce_prod %2 {axes = array<i64: 0>, keepdims = false} : (tensor<2x3xf32>) -> tensor<3xf32>
  // CHECK: nn.trilu %{{.*}}, %{{.*}} {upper = false} : (tensor<2x3xf32>, tensor<i64>) -> tensor<2x3xf32>
  %5 = nn.trilu %x, %k {upper = false} : (tensor<2x3xf32>, tensor<i64>) -> tensor<2x3xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<2xi64>, tensor<1x3xi64>, tensor<2x3xf32>, tensor<2x1xf32>, tensor<3xf32>, tensor<2x3xf32>
}

// CHECK-LABEL: func.func @top_k
func.func @top_k(%x: tensor<3x5xf32>) -> (tensor<2x5xf32>, tensor<2x5xi64>) {
  // CHECK: %{{.*}}, %{{.*}} = nn.top_k %{{.*}} {axis = 0 : i64, k = 2 : i64, largest = false} : (tensor<3x5xf32>) -> (tensor<2x5xf32>, tensor<2x5xi64>)
  %v, %i = nn.top_k %x {axis = 0 : i64, k = 2 : i64, largest = false} : (tensor<3x5xf32>) -> (tensor<2x5xf32>, tensor<2x5xi64>)
  return %v, %i : tensor<2x5xf32>, tensor<2x5xi64>
}

// -----

// CHECK-LABEL: func.func @bit_shift_unsigned(
// CHECK: nn.bit_shift %{{.*}}, %{{.*}} {left = true} : (tensor<2x3xui8>, tensor<3xui8>) -> tensor<2x3xui8>
func.func @bit_shift_unsigned(%a: tensor<2x3xui8>, %b: tensor<3xui8>) -> tensor<2x3xui8> {
  %0 = nn.bit_shift %a, %b {left = true} : (tensor<2x3xui8>, tensor<3xui8>) -> tensor<2x3xui8>
  return %0 : tensor<2x3xui8>
}
