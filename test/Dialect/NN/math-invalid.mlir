// RUN: pipedream-opt %s -split-input-file -verify-diagnostics

// One case per verifier and inference message of NNMathOps.td.

func.func @celu_zero_alpha(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.celu' op alpha must be non-zero}}
  %0 = nn.celu %x {alpha = 0.0 : f64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @shrink_negative_lambd(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.shrink' op lambd must be non-negative, got -1}}
  %0 = nn.shrink %x {lambd = -1.0 : f64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @float_mod_without_fmod(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.mod' op a floating-point remainder needs fmod = true}}
  %0 = nn.mod %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @cumsum_axis_out_of_range(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'nn.cumsum' op axis 2 is out of range [0, 2)}}
  %0 = nn.cumsum %x {axis = 2 : i64} : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @cumsum_axis_negative(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'nn.cumsum' op axis -1 is out of range [0, 2)}}
  %0 = nn.cumsum %x {axis = -1 : i64} : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @arg_max_axis_out_of_range(%x: tensor<2x3xf32>) -> tensor<2xi64> {
  // expected-error @+2 {{axis 2 is out of range [0, 2)}}
  // expected-error @+1 {{'nn.arg_max' op failed to infer returned types}}
  %0 = nn.arg_max %x {axis = 2 : i64, keepdims = false} : (tensor<2x3xf32>) -> tensor<2xi64>
  return %0 : tensor<2xi64>
}

// -----

func.func @arg_min_empty_axis(%x: tensor<2x0xf32>) -> tensor<2xi64> {
  // expected-error @+2 {{axis 1 is empty: it has no maximum or minimum}}
  // expected-error @+1 {{'nn.arg_min' op failed to infer returned types}}
  %0 = nn.arg_min %x {axis = 1 : i64, keepdims = false} : (tensor<2x0xf32>) -> tensor<2xi64>
  return %0 : tensor<2xi64>
}

// -----

func.func @arg_max_wrong_result(%x: tensor<2x3xf32>) -> tensor<2xi64> {
  // expected-error @+2 {{'nn.arg_max' op inferred type(s) 'tensor<2x1xi64>' are incompatible with return type(s) of operation 'tensor<2xi64>'}}
  // expected-error @+1 {{'nn.arg_max' op failed to infer returned types}}
  %0 = nn.arg_max %x {axis = 1 : i64} : (tensor<2x3xf32>) -> tensor<2xi64>
  return %0 : tensor<2xi64>
}

// -----

func.func @trilu_vector(%x: tensor<4xf32>, %k: tensor<i64>) -> tensor<4xf32> {
  // expected-error @+2 {{'nn.trilu' input must have rank >= 2, got 1}}
  // expected-error @+1 {{'nn.trilu' op failed to infer returned types}}
  %0 = nn.trilu %x, %k : (tensor<4xf32>, tensor<i64>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @logic_on_floats(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xi1> {
  // expected-error @+1 {{'nn.and' op operand #0 must be statically shaped tensor of 1-bit signless integer values, but got 'tensor<4xf32>'}}
  %0 = nn.and %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

func.func @compare_mixed_types(%a: tensor<4xf32>, %b: tensor<4xf64>) -> tensor<4xi1> {
  // expected-error @+2 {{operand element types differ: 'f32' vs 'f64'}}
  // expected-error @+1 {{'nn.less' op failed to infer returned types}}
  %0 = nn.less %a, %b : (tensor<4xf32>, tensor<4xf64>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

func.func @is_nan_on_integers(%x: tensor<4xi32>) -> tensor<4xi1> {
  // expected-error @+1 {{'nn.is_nan' op operand #0 must be statically shaped tensor of floating-point values, but got 'tensor<4xi32>'}}
  %0 = nn.is_nan %x : (tensor<4xi32>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

func.func @reduce_min_no_axes(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.reduce_min' op axes must not be empty (list every axis to reduce all)}}
  %0 = nn.reduce_min %x {axes = array<i64>} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @reduce_prod_bad_axis(%x: tensor<4xf32>) -> tensor<1xf32> {
  // expected-error @+2 {{reduction axis 1 is out of range [0, 1)}}
  // expected-error @+1 {{'nn.reduce_prod' op failed to infer returned types}}
  %0 = nn.reduce_prod %x {axes = array<i64: 1>} : (tensor<4xf32>) -> tensor<1xf32>
  return %0 : tensor<1xf32>
}

// -----

func.func @top_k_too_many(%x: tensor<2x3xf32>) -> (tensor<2x4xf32>, tensor<2x4xi64>) {
  // expected-error @+2 {{'nn.top_k' k = 4 is out of range [0, 3]}}
  // expected-error @+1 {{'nn.top_k' op failed to infer returned types}}
  %v, %i = nn.top_k %x {axis = 1 : i64, k = 4 : i64} : (tensor<2x3xf32>) -> (tensor<2x4xf32>, tensor<2x4xi64>)
  return %v, %i : tensor<2x4xf32>, tensor<2x4xi64>
}

// -----

func.func @top_k_bad_axis(%x: tensor<2x3xf32>) -> (tensor<2x1xf32>, tensor<2x1xi64>) {
  // expected-error @+2 {{'nn.top_k' axis -1 is out of range [0, 2)}}
  // expected-error @+1 {{'nn.top_k' op failed to infer returned types}}
  %v, %i = nn.top_k %x {axis = -1 : i64, k = 1 : i64} : (tensor<2x3xf32>) -> (tensor<2x1xf32>, tensor<2x1xi64>)
  return %v, %i : tensor<2x1xf32>, tensor<2x1xi64>
}

// -----

func.func @bit_shift_float(%a: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'nn.bit_shift' op operand #0 must be statically shaped tensor of signless integer or unsigned integer values}}
  %0 = nn.bit_shift %a, %b {left = true} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
