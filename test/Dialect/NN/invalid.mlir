// RUN: pipedream-opt %s -split-input-file -verify-diagnostics

// One case per verifier message of the nn dialect. Shape-inference failures
// report two errors on the op: the specific message, then the
// InferTypeOpInterface verifier's "failed to infer returned types".

//===----------------------------------------------------------------------===//
// Type constraints (ODS)
//===----------------------------------------------------------------------===//

func.func @dynamic_shape(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{'nn.relu' op operand #0 must be statically shaped tensor of floating-point values, but got 'tensor<?x4xf32>'}}
  %0 = nn.relu %x : tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

func.func @unranked(%a: tensor<*xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.add' op operand #0 must be statically shaped tensor of floating-point or signless integer or unsigned integer values, but got 'tensor<*xf32>'}}
  %0 = nn.add %a, %b : (tensor<*xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @float_op_on_integers(%x: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'nn.sqrt' op operand #0 must be statically shaped tensor of floating-point values, but got 'tensor<4xi32>'}}
  %0 = nn.sqrt %x : tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @matmul_on_integers(%a: tensor<2x4xi32>, %b: tensor<4x3xi32>) -> tensor<2x3xi32> {
  // expected-error @+1 {{'nn.matmul' op operand #0 must be statically shaped tensor of floating-point values}}
  %0 = nn.matmul %a, %b : (tensor<2x4xi32>, tensor<4x3xi32>) -> tensor<2x3xi32>
  return %0 : tensor<2x3xi32>
}

// -----

func.func @unsupported_element_type(%a: tensor<4xindex>) -> tensor<4xindex> {
  // expected-error @+1 {{'nn.neg' op operand #0 must be statically shaped tensor of floating-point or signless integer or unsigned integer values, but got 'tensor<4xindex>'}}
  %0 = nn.neg %a : tensor<4xindex>
  return %0 : tensor<4xindex>
}

// -----

func.func @non_bool_condition(%c: tensor<4xi32>, %x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.where' op operand #0 must be statically shaped tensor of 1-bit signless integer values}}
  %0 = nn.where %c, %x, %x : (tensor<4xi32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @equal_non_bool_result(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.equal' op result #0 must be statically shaped tensor of 1-bit signless integer values, but got 'tensor<4xf32>'}}
  %0 = nn.equal %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @float_indices(%t: tensor<10x4xf32>, %i: tensor<3xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{'nn.gather' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<3xf32>'}}
  %0 = nn.gather %t, %i {axis = 0 : i64} : (tensor<10x4xf32>, tensor<3xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

func.func @cast_to_index(%x: tensor<4xf32>) {
  // expected-error @+1 {{attribute 'to' failed to satisfy constraint: type attribute of floating-point or signless integer}}
  %0 = nn.cast %x {to = index} : (tensor<4xf32>) -> tensor<4xindex>
  return
}

// -----

func.func @missing_attribute(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'nn.softmax' op requires attribute 'axis'}}
  %0 = "nn.softmax"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

func.func @unary_result_type(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @+1 {{'nn.relu' op requires the same type for all operands and results}}
  %0 = "nn.relu"(%x) : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

//===----------------------------------------------------------------------===//
// Declared result types must be the inferred ones
//===----------------------------------------------------------------------===//

// -----

func.func @wrong_result_shape(%a: tensor<2x1xf32>, %b: tensor<1x3xf32>) -> tensor<2x1xf32> {
  // expected-error @+2 {{'nn.add' op inferred type(s) 'tensor<2x3xf32>' are incompatible with return type(s) of operation 'tensor<2x1xf32>'}}
  // expected-error @+1 {{'nn.add' op failed to infer returned types}}
  %0 = nn.add %a, %b : (tensor<2x1xf32>, tensor<1x3xf32>) -> tensor<2x1xf32>
  return %0 : tensor<2x1xf32>
}

// -----

func.func @wrong_result_element_type(%x: tensor<2x3xf32>) -> tensor<3x2xf16> {
  // expected-error @+2 {{'nn.transpose' op inferred type(s) 'tensor<3x2xf32>' are incompatible with return type(s) of operation 'tensor<3x2xf16>'}}
  // expected-error @+1 {{'nn.transpose' op failed to infer returned types}}
  %0 = nn.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf16>
  return %0 : tensor<3x2xf16>
}

// -----

// ceil_mode changes the result shape: 7 / 2 gives 4 windows, not 3.
func.func @max_pool_ceil_mode_shape(%x: tensor<1x1x7x7xf32>) -> tensor<1x1x3x3xf32> {
  // expected-error @+2 {{'nn.max_pool' op inferred type(s) 'tensor<1x1x4x4xf32>' are incompatible with return type(s) of operation 'tensor<1x1x3x3xf32>'}}
  // expected-error @+1 {{'nn.max_pool' op failed to infer returned types}}
  %0 = nn.max_pool %x {ceil_mode = true, dilations = array<i64: 1, 1>,
                       kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>,
                       strides = array<i64: 2, 2>}
      : (tensor<1x1x7x7xf32>) -> tensor<1x1x3x3xf32>
  return %0 : tensor<1x1x3x3xf32>
}

// -----

func.func @split_result_count(%x: tensor<2x3xf32>) -> tensor<1x3xf32> {
  // expected-error @+2 {{'nn.split' op inferred type(s) 'tensor<1x3xf32>', 'tensor<1x3xf32>' are incompatible with return type(s) of operation 'tensor<1x3xf32>', 'tensor<1x3xf32>', 'tensor<0x3xf32>'}}
  // expected-error @+1 {{'nn.split' op failed to infer returned types}}
  %0:3 = nn.split %x {axis = 0 : i64, split_sizes = array<i64: 1, 1>}
      : (tensor<2x3xf32>) -> (tensor<1x3xf32>, tensor<1x3xf32>, tensor<0x3xf32>)
  return %0#0 : tensor<1x3xf32>
}

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

// -----

func.func @constant_not_tensor() {
  // expected-error @+1 {{value must be a statically shaped tensor}}
  %0 = nn.constant dense<1.0> : vector<2xf32>
  return
}

// -----

func.func @constant_not_tensor_generic() {
  // expected-error @+2 {{value must be a statically shaped tensor}}
  // expected-error @+1 {{'nn.constant' op failed to infer returned types}}
  %0 = "nn.constant"() <{value = dense<1.0> : vector<2xf32>}> : () -> tensor<2xf32>
  return
}

// -----

func.func @constant_element_type() {
  // expected-error @+1 {{'nn.constant' op result #0 must be statically shaped tensor of floating-point or signless integer or unsigned integer values, but got 'tensor<2xcomplex<f32>>'}}
  %0 = nn.constant dense<(1.0, 2.0)> : tensor<2xcomplex<f32>>
  return
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

// -----

func.func @binary_element_types(%a: tensor<4xf32>, %b: tensor<4xi32>) {
  // expected-error @+2 {{operand element types differ: 'f32' vs 'i32'}}
  // expected-error @+1 {{'nn.sub' op failed to infer returned types}}
  %0 = nn.sub %a, %b : (tensor<4xf32>, tensor<4xi32>) -> tensor<4xf32>
  return
}

// -----

func.func @binary_shapes(%a: tensor<2x3xf32>, %b: tensor<2xf32>) {
  // expected-error @+2 {{operand shapes [2, 3] and [2] are not broadcast-compatible}}
  // expected-error @+1 {{'nn.mul' op failed to infer returned types}}
  %0 = nn.mul %a, %b : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @where_element_types(%c: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error @+2 {{operand element types differ: 'f32' vs 'f16'}}
  // expected-error @+1 {{'nn.where' op failed to infer returned types}}
  %0 = nn.where %c, %a, %b : (tensor<4xi1>, tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return
}

// -----

func.func @where_shapes(%c: tensor<3xi1>, %a: tensor<2x1xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{operand shapes [3], [2, 1] and [4] are not broadcast-compatible}}
  // expected-error @+1 {{'nn.where' op failed to infer returned types}}
  %0 = nn.where %c, %a, %b : (tensor<3xi1>, tensor<2x1xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @gelu_approximate(%x: tensor<4xf32>) {
  // expected-error @+1 {{'nn.gelu' op approximate must be "none" or "tanh", got "fast"}}
  %0 = nn.gelu %x {approximate = "fast"} : tensor<4xf32>
  return
}

// -----

func.func @clip_bounds(%x: tensor<4xf32>) {
  // expected-error @+1 {{'nn.clip' op min 6.000000e+00 is greater than max 0.000000e+00}}
  %0 = nn.clip %x {min = 6.0 : f64, max = 0.0 : f64} : tensor<4xf32>
  return
}

// -----

func.func @dropout_ratio(%x: tensor<4xf32>) {
  // expected-error @+1 {{'nn.dropout' op ratio must be in [0, 1), got 1.000000e+00}}
  %0 = nn.dropout %x {ratio = 1.0 : f64} : tensor<4xf32>
  return
}

// -----

func.func @dropout_negative_ratio(%x: tensor<4xf32>) {
  // expected-error @+1 {{'nn.dropout' op ratio must be in [0, 1), got -5.000000e-01}}
  %0 = nn.dropout %x {ratio = -0.5 : f64} : tensor<4xf32>
  return
}

// -----

func.func @dropout_mask_of_non_dropout(%x: tensor<4xf32>) {
  // expected-error @+1 {{'nn.dropout_mask' op operand must be the result of an nn.dropout (the mask is that dropout's)}}
  %0 = nn.dropout_mask %x : (tensor<4xf32>) -> tensor<4xi1>
  return
}

//===----------------------------------------------------------------------===//
// Softmax family
//===----------------------------------------------------------------------===//

// -----

func.func @softmax_axis(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{axis 2 is out of range [0, 2)}}
  %0 = nn.softmax %x {axis = 2 : i64} : tensor<2x8xf32>
  return
}

// -----

// Negative axes are resolved by the importer.
func.func @log_softmax_negative_axis(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{axis -1 is out of range [0, 2)}}
  %0 = nn.log_softmax %x {axis = -1 : i64} : tensor<2x8xf32>
  return
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

// -----

func.func @matmul_scalar(%a: tensor<f32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{operands must have rank >= 1}}
  // expected-error @+1 {{'nn.matmul' op failed to infer returned types}}
  %0 = nn.matmul %a, %b : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @matmul_element_types(%a: tensor<2x4xf32>, %b: tensor<4x3xf16>) {
  // expected-error @+2 {{operand element types differ: 'f32' vs 'f16'}}
  // expected-error @+1 {{'nn.matmul' op failed to infer returned types}}
  %0 = nn.matmul %a, %b : (tensor<2x4xf32>, tensor<4x3xf16>) -> tensor<2x3xf32>
  return
}

// -----

func.func @matmul_contracting(%a: tensor<2x4xf32>, %b: tensor<5x3xf32>) {
  // expected-error @+2 {{contracting dimensions differ: lhs [2, 4] vs rhs [5, 3]}}
  // expected-error @+1 {{'nn.matmul' op failed to infer returned types}}
  %0 = nn.matmul %a, %b : (tensor<2x4xf32>, tensor<5x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

// A vector lhs is a 1 x K row: its length must be rhs's K.
func.func @matmul_vector_contracting(%a: tensor<3xf32>, %b: tensor<4x3xf32>) {
  // expected-error @+2 {{contracting dimensions differ: lhs [3] vs rhs [4, 3]}}
  // expected-error @+1 {{'nn.matmul' op failed to infer returned types}}
  %0 = nn.matmul %a, %b : (tensor<3xf32>, tensor<4x3xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @matmul_batch(%a: tensor<2x2x4xf32>, %b: tensor<3x4x3xf32>) {
  // expected-error @+2 {{batch dimensions of [2, 2, 4] and [3, 4, 3] are not broadcast-compatible}}
  // expected-error @+1 {{'nn.matmul' op failed to infer returned types}}
  %0 = nn.matmul %a, %b : (tensor<2x2x4xf32>, tensor<3x4x3xf32>) -> tensor<2x2x3xf32>
  return
}

// -----

func.func @gemm_rank(%a: tensor<2x2x4xf32>, %b: tensor<4x3xf32>) {
  // expected-error @+2 {{a and b must be matrices}}
  // expected-error @+1 {{'nn.gemm' op failed to infer returned types}}
  %0 = nn.gemm %a, %b : (tensor<2x2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @gemm_element_types(%a: tensor<2x4xf32>, %b: tensor<4x3xbf16>) {
  // expected-error @+2 {{operand element types differ}}
  // expected-error @+1 {{'nn.gemm' op failed to infer returned types}}
  %0 = nn.gemm %a, %b : (tensor<2x4xf32>, tensor<4x3xbf16>) -> tensor<2x3xf32>
  return
}

// -----

func.func @gemm_c_element_type(%a: tensor<2x4xf32>, %b: tensor<4x3xf32>, %c: tensor<3xf16>) {
  // expected-error @+2 {{operand element types differ}}
  // expected-error @+1 {{'nn.gemm' op failed to infer returned types}}
  %0 = nn.gemm %a, %b, %c : (tensor<2x4xf32>, tensor<4x3xf32>, tensor<3xf16>) -> tensor<2x3xf32>
  return
}

// -----

// With trans_a, a (2 x 4) is read as 4 x 2: K is 2, but b^T has K = 4.
func.func @gemm_contracting(%a: tensor<2x4xf32>, %b: tensor<3x4xf32>) {
  // expected-error @+2 {{contracting dimensions differ: 2 vs 4}}
  // expected-error @+1 {{'nn.gemm' op failed to infer returned types}}
  %0 = nn.gemm %a, %b {trans_a = true, trans_b = true} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @gemm_c_shape(%a: tensor<2x4xf32>, %b: tensor<4x3xf32>, %c: tensor<2xf32>) {
  // expected-error @+2 {{c of shape [2] does not broadcast to [2, 3]}}
  // expected-error @+1 {{'nn.gemm' op failed to infer returned types}}
  %0 = nn.gemm %a, %b, %c : (tensor<2x4xf32>, tensor<4x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  return
}

// -----

// c broadcasts unidirectionally: it cannot grow the result.
func.func @gemm_c_rank(%a: tensor<2x4xf32>, %b: tensor<4x3xf32>, %c: tensor<5x2x3xf32>) {
  // expected-error @+2 {{c of shape [5, 2, 3] does not broadcast to [2, 3]}}
  // expected-error @+1 {{'nn.gemm' op failed to infer returned types}}
  %0 = nn.gemm %a, %b, %c : (tensor<2x4xf32>, tensor<4x3xf32>, tensor<5x2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @conv_input_rank(%x: tensor<3x8xf32>, %w: tensor<4x3xf32>) {
  // expected-error @+2 {{input must be N x C x spatial..., got rank 2}}
  // expected-error @+1 {{'nn.conv' op failed to infer returned types}}
  %0 = nn.conv %x, %w {dilations = array<i64>, pads = array<i64>, strides = array<i64>}
      : (tensor<3x8xf32>, tensor<4x3xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @conv_weight_rank(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3xf32>) {
  // expected-error @+2 {{weight rank 3 differs from input rank 4}}
  // expected-error @+1 {{'nn.conv' op failed to infer returned types}}
  %0 = nn.conv %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
      : (tensor<1x3x8x8xf32>, tensor<4x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_element_types(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf16>) {
  // expected-error @+2 {{operand element types differ}}
  // expected-error @+1 {{'nn.conv' op failed to infer returned types}}
  %0 = nn.conv %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
      : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf16>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_group(%x: tensor<1x6x8x8xf32>, %w: tensor<4x2x3x3xf32>) {
  // expected-error @+2 {{group 3 must divide input channels 6 and filters 4}}
  // expected-error @+1 {{'nn.conv' op failed to infer returned types}}
  %0 = nn.conv %x, %w {dilations = array<i64: 1, 1>, group = 3 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
      : (tensor<1x6x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_group_zero(%x: tensor<1x6x8x8xf32>, %w: tensor<4x2x3x3xf32>) {
  // expected-error @+2 {{group 0 must divide input channels 6 and filters 4}}
  // expected-error @+1 {{'nn.conv' op failed to infer returned types}}
  %0 = nn.conv %x, %w {dilations = array<i64: 1, 1>, group = 0 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
      : (tensor<1x6x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_channels(%x: tensor<1x6x8x8xf32>, %w: tensor<4x6x3x3xf32>) {
  // expected-error @+2 {{weight expects 6 channels per group, input has 6 channels in 2 groups}}
  // expected-error @+1 {{'nn.conv' op failed to infer returned types}}
  %0 = nn.conv %x, %w {dilations = array<i64: 1, 1>, group = 2 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
      : (tensor<1x6x8x8xf32>, tensor<4x6x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_bias_shape(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{bias must have shape [4]}}
  // expected-error @+1 {{'nn.conv' op failed to infer returned types}}
  %0 = nn.conv %x, %w, %b {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
      : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_bias_element_type(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf16>) {
  // expected-error @+2 {{operand element types differ}}
  // expected-error @+1 {{'nn.conv' op failed to infer returned types}}
  %0 = nn.conv %x, %w, %b {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
      : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf16>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_window_attributes(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{expected 2 kernel/stride/dilation entries and 4 pads for 2 spatial dimensions, got kernel [3, 3], strides [1, 1], dilations [1, 1], pads [1, 1]}}
  // expected-error @+1 {{'nn.conv' op failed to infer returned types}}
  %0 = nn.conv %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1>, strides = array<i64: 1, 1>}
      : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  return
}

// -----

func.func @conv_stride(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{kernel, strides and dilations must be positive}}
  // expected-error @+1 {{'nn.conv' op failed to infer returned types}}
  %0 = nn.conv %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 0>}
      : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_pads(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{pads must be non-negative, got [0, 0, -1, 0]}}
  // expected-error @+1 {{'nn.conv' op failed to infer returned types}}
  %0 = nn.conv %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, -1, 0>, strides = array<i64: 1, 1>}
      : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x5x6xf32>
  return
}

// -----

// Dilation 4 stretches the 3-wide kernel to 9 > 8.
func.func @conv_window_extent(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{window extent 9 exceeds padded input size 8 in spatial dimension 1}}
  // expected-error @+1 {{'nn.conv' op failed to infer returned types}}
  %0 = nn.conv %x, %w {dilations = array<i64: 1, 4>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
      : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x1xf32>
  return
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

// -----

func.func @batch_normalization_rank(%x: tensor<4xf32>, %s: tensor<4xf32>) {
  // expected-error @+2 {{input must have rank >= 2}}
  // expected-error @+1 {{'nn.batch_normalization' op failed to infer returned types}}
  %0 = nn.batch_normalization %x, %s, %s, %s, %s
      : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @batch_normalization_stats(%x: tensor<2x4x8xf32>, %s: tensor<4xf32>, %v: tensor<8xf32>) {
  // expected-error @+2 {{scale, bias, mean and var must have shape [4], got [8]}}
  // expected-error @+1 {{'nn.batch_normalization' op failed to infer returned types}}
  %0 = nn.batch_normalization %x, %s, %s, %s, %v
      : (tensor<2x4x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @batch_normalization_element_types(%x: tensor<2x4xf32>, %s: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error @+2 {{operand element types differ}}
  // expected-error @+1 {{'nn.batch_normalization' op failed to infer returned types}}
  %0 = nn.batch_normalization %x, %s, %b, %s, %s
      : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf16>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @layer_normalization_axis(%x: tensor<2x16xf32>, %g: tensor<16xf32>) {
  // expected-error @+2 {{axis 2 is out of range [0, 2)}}
  // expected-error @+1 {{'nn.layer_normalization' op failed to infer returned types}}
  %0 = nn.layer_normalization %x, %g {axis = 2 : i64} : (tensor<2x16xf32>, tensor<16xf32>) -> tensor<2x16xf32>
  return
}

// -----

func.func @layer_normalization_scale(%x: tensor<2x16x64xf32>, %g: tensor<16xf32>) {
  // expected-error @+2 {{scale/bias of shape [16] does not broadcast to the normalized shape [64]}}
  // expected-error @+1 {{'nn.layer_normalization' op failed to infer returned types}}
  %0 = nn.layer_normalization %x, %g {axis = 2 : i64} : (tensor<2x16x64xf32>, tensor<16xf32>) -> tensor<2x16x64xf32>
  return
}

// -----

func.func @layer_normalization_bias(%x: tensor<2x16x64xf32>, %g: tensor<64xf32>, %b: tensor<2x64xf32>) {
  // expected-error @+2 {{scale/bias of shape [2, 64] does not broadcast to the normalized shape [64]}}
  // expected-error @+1 {{'nn.layer_normalization' op failed to infer returned types}}
  %0 = nn.layer_normalization %x, %g, %b {axis = 2 : i64}
      : (tensor<2x16x64xf32>, tensor<64xf32>, tensor<2x64xf32>) -> tensor<2x16x64xf32>
  return
}

// -----

func.func @layer_normalization_element_types(%x: tensor<2x64xf32>, %g: tensor<64xf16>) {
  // expected-error @+2 {{operand element types differ}}
  // expected-error @+1 {{'nn.layer_normalization' op failed to infer returned types}}
  %0 = nn.layer_normalization %x, %g {axis = 1 : i64} : (tensor<2x64xf32>, tensor<64xf16>) -> tensor<2x64xf32>
  return
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

// -----

func.func @max_pool_rank(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{input must be N x C x spatial..., got rank 2}}
  // expected-error @+1 {{'nn.max_pool' op failed to infer returned types}}
  %0 = nn.max_pool %x {dilations = array<i64>, kernel_shape = array<i64>, pads = array<i64>, strides = array<i64>}
      : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @max_pool_bool(%x: tensor<1x1x4x4xi1>) {
  // expected-error @+1 {{'nn.max_pool' op operand #0 must be statically shaped tensor of floating-point or 8-bit signless integer or 16-bit signless integer or 32-bit signless integer or 64-bit signless integer or unsigned integer values}}
  %0 = nn.max_pool %x {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>,
                       pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>}
      : (tensor<1x1x4x4xi1>) -> tensor<1x1x2x2xi1>
  return
}

// -----

func.func @max_pool_attributes(%x: tensor<1x4x8x8xf32>) {
  // expected-error @+2 {{expected 2 kernel/stride/dilation entries and 4 pads for 2 spatial dimensions, got kernel [2, 2], strides [2, 2], dilations [1], pads [0, 0, 0, 0]}}
  // expected-error @+1 {{'nn.max_pool' op failed to infer returned types}}
  %0 = nn.max_pool %x {dilations = array<i64: 1>, kernel_shape = array<i64: 2, 2>,
                       pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>}
      : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  return
}

// -----

func.func @max_pool_kernel(%x: tensor<1x4x8x8xf32>) {
  // expected-error @+2 {{kernel, strides and dilations must be positive}}
  // expected-error @+1 {{'nn.max_pool' op failed to infer returned types}}
  %0 = nn.max_pool %x {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 0, 2>,
                       pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>}
      : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  return
}

// -----

func.func @max_pool_extent(%x: tensor<1x4x3x3xf32>) {
  // expected-error @+2 {{window extent 5 exceeds padded input size 4 in spatial dimension 0}}
  // expected-error @+1 {{'nn.max_pool' op failed to infer returned types}}
  %0 = nn.max_pool %x {dilations = array<i64: 2, 1>, kernel_shape = array<i64: 3, 3>,
                       pads = array<i64: 1, 0, 0, 0>, strides = array<i64: 1, 1>}
      : (tensor<1x4x3x3xf32>) -> tensor<1x4x1x1xf32>
  return
}

// -----

func.func @average_pool_rank(%x: tensor<8xf32>) {
  // expected-error @+2 {{input must be N x C x spatial..., got rank 1}}
  // expected-error @+1 {{'nn.average_pool' op failed to infer returned types}}
  %0 = nn.average_pool %x {kernel_shape = array<i64>, pads = array<i64>, strides = array<i64>}
      : (tensor<8xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @average_pool_pads(%x: tensor<1x4x8x8xf32>) {
  // expected-error @+2 {{pads must be non-negative, got [-1, 0, 0, 0]}}
  // expected-error @+1 {{'nn.average_pool' op failed to infer returned types}}
  %0 = nn.average_pool %x {kernel_shape = array<i64: 2, 2>, pads = array<i64: -1, 0, 0, 0>,
                           strides = array<i64: 2, 2>}
      : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  return
}

// -----

func.func @global_average_pool_rank(%x: tensor<2x8xf32>) {
  // expected-error @+2 {{input must be N x C x spatial..., got rank 2}}
  // expected-error @+1 {{'nn.global_average_pool' op failed to infer returned types}}
  %0 = nn.global_average_pool %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

// -----

func.func @reduce_axis_range(%x: tensor<2x8xf32>) {
  // expected-error @+2 {{reduction axis 2 is out of range [0, 2)}}
  // expected-error @+1 {{'nn.reduce_mean' op failed to infer returned types}}
  %0 = nn.reduce_mean %x {axes = array<i64: 2>} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @reduce_axes_unsorted(%x: tensor<2x8xf32>) {
  // expected-error @+2 {{reduction axes must be sorted and unique, got [1, 0]}}
  // expected-error @+1 {{'nn.reduce_sum' op failed to infer returned types}}
  %0 = nn.reduce_sum %x {axes = array<i64: 1, 0>, keepdims = false} : (tensor<2x8xf32>) -> tensor<f32>
  return
}

// -----

func.func @reduce_axes_duplicate(%x: tensor<2x8xf32>) {
  // expected-error @+2 {{reduction axes must be sorted and unique, got [1, 1]}}
  // expected-error @+1 {{'nn.reduce_max' op failed to infer returned types}}
  %0 = nn.reduce_max %x {axes = array<i64: 1, 1>} : (tensor<2x8xf32>) -> tensor<2x1xf32>
  return
}

// -----

func.func @reduce_empty_axes(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{'nn.reduce_max' op axes must not be empty (list every axis to reduce all)}}
  %0 = nn.reduce_max %x {axes = array<i64>} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

// -----

func.func @reshape_unresolved(%x: tensor<2x6xf32>) {
  // expected-error @+2 {{shape [-1, 3] must be fully resolved (no negative entries)}}
  // expected-error @+1 {{'nn.reshape' op failed to infer returned types}}
  %0 = nn.reshape %x {shape = array<i64: -1, 3>} : (tensor<2x6xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @reshape_count(%x: tensor<2x6xf32>) {
  // expected-error @+2 {{cannot reshape [2, 6] (12 elements) to [5, 2] (10 elements)}}
  // expected-error @+1 {{'nn.reshape' op failed to infer returned types}}
  %0 = nn.reshape %x {shape = array<i64: 5, 2>} : (tensor<2x6xf32>) -> tensor<5x2xf32>
  return
}

// -----

func.func @flatten_axis(%x: tensor<2x3x4xf32>) {
  // expected-error @+2 {{axis 4 is out of range [0, 4)}}
  // expected-error @+1 {{'nn.flatten' op failed to infer returned types}}
  %0 = nn.flatten %x {axis = 4 : i64} : (tensor<2x3x4xf32>) -> tensor<24x1xf32>
  return
}

// -----

func.func @transpose_perm_size(%x: tensor<2x3x4xf32>) {
  // expected-error @+2 {{perm [1, 0] is not a permutation of 3 dimensions}}
  // expected-error @+1 {{'nn.transpose' op failed to infer returned types}}
  %0 = nn.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  return
}

// -----

func.func @transpose_perm_duplicate(%x: tensor<2x3x4xf32>) {
  // expected-error @+2 {{perm [0, 2, 2] is not a permutation of 3 dimensions}}
  // expected-error @+1 {{'nn.transpose' op failed to infer returned types}}
  %0 = nn.transpose %x {perm = array<i64: 0, 2, 2>} : (tensor<2x3x4xf32>) -> tensor<2x4x4xf32>
  return
}

// -----

func.func @transpose_perm_range(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{perm [0, 2] is not a permutation of 2 dimensions}}
  // expected-error @+1 {{'nn.transpose' op failed to infer returned types}}
  %0 = nn.transpose %x {perm = array<i64: 0, 2>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @squeeze_axis_range(%x: tensor<2x1xf32>) {
  // expected-error @+2 {{squeeze axis 2 is out of range [0, 2)}}
  // expected-error @+1 {{'nn.squeeze' op failed to infer returned types}}
  %0 = nn.squeeze %x {axes = array<i64: 2>} : (tensor<2x1xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @squeeze_axes_unsorted(%x: tensor<1x2x1xf32>) {
  // expected-error @+2 {{squeeze axes must be sorted and unique, got [2, 0]}}
  // expected-error @+1 {{'nn.squeeze' op failed to infer returned types}}
  %0 = nn.squeeze %x {axes = array<i64: 2, 0>} : (tensor<1x2x1xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @squeeze_non_unit(%x: tensor<2x1xf32>) {
  // expected-error @+2 {{cannot squeeze axis 0 of size 2}}
  // expected-error @+1 {{'nn.squeeze' op failed to infer returned types}}
  %0 = nn.squeeze %x {axes = array<i64: 0>} : (tensor<2x1xf32>) -> tensor<1xf32>
  return
}

// -----

// Unsqueeze axes index the result (rank 2 + 1 here).
func.func @unsqueeze_axis_range(%x: tensor<2x4xf32>) {
  // expected-error @+2 {{unsqueeze axis 3 is out of range [0, 3)}}
  // expected-error @+1 {{'nn.unsqueeze' op failed to infer returned types}}
  %0 = nn.unsqueeze %x {axes = array<i64: 3>} : (tensor<2x4xf32>) -> tensor<2x4x1xf32>
  return
}

// -----

func.func @unsqueeze_axes_duplicate(%x: tensor<2x4xf32>) {
  // expected-error @+2 {{unsqueeze axes must be sorted and unique, got [0, 0]}}
  // expected-error @+1 {{'nn.unsqueeze' op failed to infer returned types}}
  %0 = nn.unsqueeze %x {axes = array<i64: 0, 0>} : (tensor<2x4xf32>) -> tensor<1x1x2x4xf32>
  return
}

// -----

func.func @expand_unresolved(%x: tensor<1x3xf32>) {
  // expected-error @+2 {{shape [-1, 3] must be fully resolved (no negative entries)}}
  // expected-error @+1 {{'nn.expand' op failed to infer returned types}}
  %0 = nn.expand %x {shape = array<i64: -1, 3>} : (tensor<1x3xf32>) -> tensor<1x3xf32>
  return
}

// -----

func.func @expand_incompatible(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{input of shape [2, 3] does not broadcast to [4, 3]}}
  // expected-error @+1 {{'nn.expand' op failed to infer returned types}}
  %0 = nn.expand %x {shape = array<i64: 4, 3>} : (tensor<2x3xf32>) -> tensor<4x3xf32>
  return
}

// -----

// `shape` is the resolved result shape, not ONNX's shape input: it must be
// the full broadcast.
func.func @expand_not_result_shape(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{input of shape [2, 3] does not broadcast to [1, 3]}}
  // expected-error @+1 {{'nn.expand' op failed to infer returned types}}
  %0 = nn.expand %x {shape = array<i64: 1, 3>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @concat_no_inputs() {
  // expected-error @+2 {{expected at least one input}}
  // expected-error @+1 {{'nn.concat' op failed to infer returned types}}
  %0 = nn.concat {axis = 0 : i64} : () -> tensor<2xf32>
  return
}

// -----

func.func @concat_axis(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{axis 2 is out of range [0, 2)}}
  // expected-error @+1 {{'nn.concat' op failed to infer returned types}}
  %0 = nn.concat %a, %a {axis = 2 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  return
}

// -----

func.func @concat_element_types(%a: tensor<2x3xf32>, %b: tensor<2x3xf16>) {
  // expected-error @+2 {{input element types differ}}
  // expected-error @+1 {{'nn.concat' op failed to infer returned types}}
  %0 = nn.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x3xf16>) -> tensor<2x6xf32>
  return
}

// -----

func.func @concat_ranks(%a: tensor<2x3xf32>, %b: tensor<2x3x1xf32>) {
  // expected-error @+2 {{input ranks differ}}
  // expected-error @+1 {{'nn.concat' op failed to infer returned types}}
  %0 = nn.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x3x1xf32>) -> tensor<2x6xf32>
  return
}

// -----

func.func @concat_shapes(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>) {
  // expected-error @+2 {{input shapes [2, 3] and [4, 3] differ outside axis 1}}
  // expected-error @+1 {{'nn.concat' op failed to infer returned types}}
  %0 = nn.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x6xf32>
  return
}

// -----

func.func @split_axis(%x: tensor<2x12xf32>) {
  // expected-error @+2 {{axis 2 is out of range [0, 2)}}
  // expected-error @+1 {{'nn.split' op failed to infer returned types}}
  %0:2 = nn.split %x {axis = 2 : i64, split_sizes = array<i64: 6, 6>}
      : (tensor<2x12xf32>) -> (tensor<2x6xf32>, tensor<2x6xf32>)
  return
}

// -----

func.func @split_empty_sizes(%x: tensor<2x12xf32>) {
  // expected-error @+2 {{split_sizes [] must be non-empty and non-negative}}
  // expected-error @+1 {{'nn.split' op failed to infer returned types}}
  nn.split %x {axis = 1 : i64, split_sizes = array<i64>} : (tensor<2x12xf32>) -> ()
  return
}

// -----

func.func @split_negative_size(%x: tensor<2x12xf32>) {
  // expected-error @+2 {{split_sizes [14, -2] must be non-empty and non-negative}}
  // expected-error @+1 {{'nn.split' op failed to infer returned types}}
  %0:2 = nn.split %x {axis = 1 : i64, split_sizes = array<i64: 14, -2>}
      : (tensor<2x12xf32>) -> (tensor<2x14xf32>, tensor<2x0xf32>)
  return
}

// -----

func.func @split_sum(%x: tensor<2x12xf32>) {
  // expected-error @+2 {{split_sizes [4, 4] sum to 8 but axis 1 has size 12}}
  // expected-error @+1 {{'nn.split' op failed to infer returned types}}
  %0:2 = nn.split %x {axis = 1 : i64, split_sizes = array<i64: 4, 4>}
      : (tensor<2x12xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
  return
}

// -----

func.func @slice_entries(%x: tensor<2x6xf32>) {
  // expected-error @+2 {{starts, sizes and steps need one entry per dimension (2)}}
  // expected-error @+1 {{'nn.slice' op failed to infer returned types}}
  %0 = nn.slice %x {sizes = array<i64: 2>, starts = array<i64: 0>, steps = array<i64: 1>}
      : (tensor<2x6xf32>) -> tensor<2x6xf32>
  return
}

// -----

func.func @slice_zero_step(%x: tensor<2x6xf32>) {
  // expected-error @+2 {{step of dimension 1 is zero}}
  // expected-error @+1 {{'nn.slice' op failed to infer returned types}}
  %0 = nn.slice %x {sizes = array<i64: 2, 2>, starts = array<i64: 0, 0>, steps = array<i64: 1, 0>}
      : (tensor<2x6xf32>) -> tensor<2x2xf32>
  return
}

// -----

func.func @slice_negative_size(%x: tensor<2x6xf32>) {
  // expected-error @+2 {{size of dimension 0 is negative}}
  // expected-error @+1 {{'nn.slice' op failed to infer returned types}}
  %0 = nn.slice %x {sizes = array<i64: -1, 2>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>}
      : (tensor<2x6xf32>) -> tensor<2x2xf32>
  return
}

// -----

func.func @slice_past_end(%x: tensor<2x6xf32>) {
  // expected-error @+2 {{slice of dimension 1 (start 1, size 4, step 2) leaves [0, 6)}}
  // expected-error @+1 {{'nn.slice' op failed to infer returned types}}
  %0 = nn.slice %x {sizes = array<i64: 2, 4>, starts = array<i64: 0, 1>, steps = array<i64: 1, 2>}
      : (tensor<2x6xf32>) -> tensor<2x4xf32>
  return
}

// -----

// Walking backwards from 1 with step -2 leaves the dimension after one step.
func.func @slice_negative_step_past_begin(%x: tensor<2x6xf32>) {
  // expected-error @+2 {{slice of dimension 1 (start 1, size 2, step -2) leaves [0, 6)}}
  // expected-error @+1 {{'nn.slice' op failed to infer returned types}}
  %0 = nn.slice %x {sizes = array<i64: 2, 2>, starts = array<i64: 0, 1>, steps = array<i64: 1, -2>}
      : (tensor<2x6xf32>) -> tensor<2x2xf32>
  return
}

// -----

// Starts are resolved: no ONNX-style negative start.
func.func @slice_negative_start(%x: tensor<2x6xf32>) {
  // expected-error @+2 {{slice of dimension 1 (start -1, size 1, step 1) leaves [0, 6)}}
  // expected-error @+1 {{'nn.slice' op failed to infer returned types}}
  %0 = nn.slice %x {sizes = array<i64: 2, 1>, starts = array<i64: 0, -1>, steps = array<i64: 1, 1>}
      : (tensor<2x6xf32>) -> tensor<2x1xf32>
  return
}

// -----

func.func @gather_axis(%t: tensor<10x4xf32>, %i: tensor<3xi64>) {
  // expected-error @+2 {{axis 2 is out of range [0, 2)}}
  // expected-error @+1 {{'nn.gather' op failed to infer returned types}}
  %0 = nn.gather %t, %i {axis = 2 : i64} : (tensor<10x4xf32>, tensor<3xi64>) -> tensor<10x4x3xf32>
  return
}

//===----------------------------------------------------------------------===//
// int64 overflow in type inference (hostile attributes and dimensions)
//===----------------------------------------------------------------------===//

// -----

// dilation * (kernel - 1) is 2^63.
func.func @conv_window_overflow(%x: tensor<1x1x8x8xf32>, %w: tensor<1x1x3x3xf32>) {
  // expected-error @+2 {{window (kernel [3, 3], dilations [4611686018427387904, 1], pads [0, 0, 0, 0]) overflows in spatial dimension 0}}
  // expected-error @+1 {{'nn.conv' op failed to infer returned types}}
  %0 = nn.conv %x, %w {dilations = array<i64: 4611686018427387904, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
      : (tensor<1x1x8x8xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x6x6xf32>
  return
}

// -----

// input size + pads is past INT64_MAX.
func.func @pool_pads_overflow(%x: tensor<1x1x8xf32>) {
  // expected-error @+2 {{window (kernel [2], dilations [1], pads [9223372036854775807, 0]) overflows in spatial dimension 0}}
  // expected-error @+1 {{'nn.max_pool' op failed to infer returned types}}
  %0 = nn.max_pool %x {ceil_mode = false, dilations = array<i64: 1>, kernel_shape = array<i64: 2>,
                       pads = array<i64: 9223372036854775807, 0>, strides = array<i64: 1>}
      : (tensor<1x1x8xf32>) -> tensor<1x1x7xf32>
  return
}

// -----

// Channels per group * group is 2^63.
func.func @conv_group_overflow(%x: tensor<1x0x8x8xf32>, %w: tensor<0x2x3x3xf32>) {
  // expected-error @+2 {{weight expects 2 channels per group, input has 0 channels in 4611686018427387904 groups}}
  // expected-error @+1 {{'nn.conv' op failed to infer returned types}}
  %0 = nn.conv %x, %w {dilations = array<i64: 1, 1>, group = 4611686018427387904 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
      : (tensor<1x0x8x8xf32>, tensor<0x2x3x3xf32>) -> tensor<1x0x6x6xf32>
  return
}

// -----

func.func @reshape_overflow(%x: tensor<2x6xf32>) {
  // expected-error @+2 {{element count of [4294967296, 4294967296, 4] overflows int64}}
  // expected-error @+1 {{'nn.reshape' op failed to infer returned types}}
  %0 = nn.reshape %x {shape = array<i64: 4294967296, 4294967296, 4>} : (tensor<2x6xf32>) -> tensor<4294967296x4294967296x4xf32>
  return
}

// -----

func.func @flatten_overflow(%x: tensor<4294967296x4294967296x2xf32>) {
  // expected-error @+2 {{element count of [4294967296, 4294967296, 2] overflows int64}}
  // expected-error @+1 {{'nn.flatten' op failed to infer returned types}}
  %0 = nn.flatten %x {axis = 3 : i64} : (tensor<4294967296x4294967296x2xf32>) -> tensor<1x1xf32>
  return
}

// -----

func.func @split_sizes_overflow(%x: tensor<2x12xf32>) {
  // expected-error @+2 {{split_sizes [9223372036854775807, 1] overflow int64}}
  // expected-error @+1 {{'nn.split' op failed to infer returned types}}
  %0:2 = nn.split %x {axis = 1 : i64, split_sizes = array<i64: 9223372036854775807, 1>}
      : (tensor<2x12xf32>) -> (tensor<2x9223372036854775807xf32>, tensor<2x1xf32>)
  return
}

// -----

func.func @concat_overflow(%a: tensor<9223372036854775807xf32>, %b: tensor<1xf32>) {
  // expected-error @+2 {{concatenated size of axis 0 overflows int64}}
  // expected-error @+1 {{'nn.concat' op failed to infer returned types}}
  %0 = nn.concat %a, %b {axis = 0 : i64} : (tensor<9223372036854775807xf32>, tensor<1xf32>) -> tensor<1xf32>
  return
}

// -----

// start + (size - 1) * step is past INT64_MAX.
func.func @slice_step_overflow(%x: tensor<6xf32>) {
  // expected-error @+2 {{slice of dimension 0 (start 1, size 3, step 9223372036854775807) leaves [0, 6)}}
  // expected-error @+1 {{'nn.slice' op failed to infer returned types}}
  %0 = nn.slice %x {sizes = array<i64: 3>, starts = array<i64: 1>, steps = array<i64: 9223372036854775807>}
      : (tensor<6xf32>) -> tensor<3xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Training support (slice_grad, gather_grad, bernoulli)
//===----------------------------------------------------------------------===//

func.func @slice_grad_rank(%g: tensor<2x2xf32>) {
  // expected-error @+2 {{shape, starts and steps need one entry per dimension (2)}}
  // expected-error @+1 {{'nn.slice_grad' op failed to infer returned types}}
  %0 = nn.slice_grad %g {shape = array<i64: 2, 6>, starts = array<i64: 0>, steps = array<i64: 1, 1>}
      : (tensor<2x2xf32>) -> tensor<2x6xf32>
  return
}

// -----

func.func @slice_grad_negative_shape(%g: tensor<2xf32>) {
  // expected-error @+2 {{shape [-1] must be fully resolved (no negative entries)}}
  // expected-error @+1 {{'nn.slice_grad' op failed to infer returned types}}
  %0 = nn.slice_grad %g {shape = array<i64: -1>, starts = array<i64: 0>, steps = array<i64: 1>}
      : (tensor<2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @slice_grad_zero_step(%g: tensor<2xf32>) {
  // expected-error @+2 {{step of dimension 0 is zero}}
  // expected-error @+1 {{'nn.slice_grad' op failed to infer returned types}}
  %0 = nn.slice_grad %g {shape = array<i64: 6>, starts = array<i64: 0>, steps = array<i64: 0>}
      : (tensor<2xf32>) -> tensor<6xf32>
  return
}

// -----

// Elements 4, 7 and 10 of a dimension of 8: the input is no slice of it.
func.func @slice_grad_out_of_bounds(%g: tensor<3xf32>) {
  // expected-error @+2 {{slice of dimension 0 (start 4, size 3, step 3) leaves [0, 8)}}
  // expected-error @+1 {{'nn.slice_grad' op failed to infer returned types}}
  %0 = nn.slice_grad %g {shape = array<i64: 8>, starts = array<i64: 4>, steps = array<i64: 3>}
      : (tensor<3xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @gather_grad_rank(%g: tensor<4xf32>, %i: tensor<2x2xi64>) {
  // expected-error @+2 {{axis 0 and 2 index dimensions do not fit grad of rank 1}}
  // expected-error @+1 {{'nn.gather_grad' op failed to infer returned types}}
  %0 = nn.gather_grad %g, %i {axis = 0 : i64, axis_size = 5 : i64}
      : (tensor<4xf32>, tensor<2x2xi64>) -> tensor<5xf32>
  return
}

// -----

func.func @gather_grad_indices_shape(%g: tensor<3x4xf32>, %i: tensor<2xi64>) {
  // expected-error @+2 {{grad dimensions [3] at axis 0 differ from the indices' shape [2]}}
  // expected-error @+1 {{'nn.gather_grad' op failed to infer returned types}}
  %0 = nn.gather_grad %g, %i {axis = 0 : i64, axis_size = 5 : i64}
      : (tensor<3x4xf32>, tensor<2xi64>) -> tensor<5x4xf32>
  return
}

// -----

func.func @gather_grad_axis_size(%g: tensor<2x4xf32>, %i: tensor<2xi64>) {
  // expected-error @+2 {{axis_size must be non-negative, got -1}}
  // expected-error @+1 {{'nn.gather_grad' op failed to infer returned types}}
  %0 = nn.gather_grad %g, %i {axis = 0 : i64, axis_size = -1 : i64}
      : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  return
}

// -----

func.func @bernoulli_probability(%seed: tensor<i64>) {
  // expected-error @+1 {{'nn.bernoulli' op probability must be in [0, 1], got 1.5}}
  %0 = nn.bernoulli %seed {probability = 1.5 : f64} : (tensor<i64>) -> tensor<4xf32>
  return
}

// -----

func.func @bernoulli_seed(%seed: tensor<2xi64>) {
  // expected-error @+1 {{'nn.bernoulli' op operand #0 must be 0D tensor of 64-bit signless integer values, but got 'tensor<2xi64>'}}
  %0 = nn.bernoulli %seed {probability = 0.5 : f64} : (tensor<2xi64>) -> tensor<4xf32>
  return
}

// -----

func.func @bernoulli_integer_mask(%seed: tensor<i64>) {
  // expected-error @+1 {{'nn.bernoulli' op result #0 must be statically shaped tensor of floating-point values, but got 'tensor<4xi1>'}}
  %0 = nn.bernoulli %seed {probability = 0.5 : f64} : (tensor<i64>) -> tensor<4xi1>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Gradients of convolution and pooling, training-mode batch normalization
//===----------------------------------------------------------------------===//

func.func @conv_backward_input_shape(%dy: tensor<1x4x6x6xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{output_grad shape [1, 4, 6, 6] differs from the forward output shape [1, 4, 8, 8]}}
  // expected-error @+1 {{'nn.conv_backward_input' op failed to infer returned types}}
  %0 = nn.conv_backward_input %dy, %w {dilations = array<i64: 1, 1>, input_shape = array<i64: 1, 3, 8, 8>,
                                       pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}
      : (tensor<1x4x6x6xf32>, tensor<4x3x3x3xf32>) -> tensor<1x3x8x8xf32>
  return
}

// -----

func.func @conv_backward_input_rank(%dy: tensor<1x4x6x6xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{input_shape [3, 8] must be N x C x spatial... with non-negative sizes}}
  // expected-error @+1 {{'nn.conv_backward_input' op failed to infer returned types}}
  %0 = nn.conv_backward_input %dy, %w {dilations = array<i64: 1, 1>, input_shape = array<i64: 3, 8>,
                                       pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}
      : (tensor<1x4x6x6xf32>, tensor<4x3x3x3xf32>) -> tensor<3x8xf32>
  return
}

// -----

func.func @conv_backward_input_group(%dy: tensor<1x4x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{weight expects 3 channels per group, input has 6 channels in 1 groups}}
  // expected-error @+1 {{'nn.conv_backward_input' op failed to infer returned types}}
  %0 = nn.conv_backward_input %dy, %w {dilations = array<i64: 1, 1>, input_shape = array<i64: 1, 6, 8, 8>,
                                       pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}
      : (tensor<1x4x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x6x8x8xf32>
  return
}

// -----

func.func @conv_backward_input_element_types(%dy: tensor<1x4x8x8xf64>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{operand element types differ}}
  // expected-error @+1 {{'nn.conv_backward_input' op failed to infer returned types}}
  %0 = nn.conv_backward_input %dy, %w {dilations = array<i64: 1, 1>, input_shape = array<i64: 1, 3, 8, 8>,
                                       pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}
      : (tensor<1x4x8x8xf64>, tensor<4x3x3x3xf32>) -> tensor<1x3x8x8xf64>
  return
}

// -----

func.func @conv_backward_weight_shape(%dy: tensor<1x4x8x8xf32>, %x: tensor<1x3x8x8xf32>) {
  // expected-error @+2 {{output_grad shape [1, 4, 8, 8] differs from the forward output shape [1, 4, 6, 6]}}
  // expected-error @+1 {{'nn.conv_backward_weight' op failed to infer returned types}}
  %0 = nn.conv_backward_weight %dy, %x {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>,
                                        pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
      : (tensor<1x4x8x8xf32>, tensor<1x3x8x8xf32>) -> tensor<4x3x3x3xf32>
  return
}

// -----

func.func @conv_backward_weight_kernel(%dy: tensor<1x4x8x8xf32>, %x: tensor<1x3x8x8xf32>) {
  // expected-error @+2 {{kernel_shape [3] needs one entry per spatial dimension (2)}}
  // expected-error @+1 {{'nn.conv_backward_weight' op failed to infer returned types}}
  %0 = nn.conv_backward_weight %dy, %x {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3>,
                                        pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}
      : (tensor<1x4x8x8xf32>, tensor<1x3x8x8xf32>) -> tensor<4x3x3xf32>
  return
}

// -----

func.func @conv_backward_weight_group(%dy: tensor<1x4x8x8xf32>, %x: tensor<1x3x8x8xf32>) {
  // expected-error @+2 {{group 2 must divide input channels 3}}
  // expected-error @+1 {{'nn.conv_backward_weight' op failed to infer returned types}}
  %0 = nn.conv_backward_weight %dy, %x {dilations = array<i64: 1, 1>, group = 2 : i64,
                                        kernel_shape = array<i64: 3, 3>,
                                        pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}
      : (tensor<1x4x8x8xf32>, tensor<1x3x8x8xf32>) -> tensor<4x1x3x3xf32>
  return
}

// -----

func.func @conv_backward_weight_ranks(%dy: tensor<1x4x8xf32>, %x: tensor<1x3x8x8xf32>) {
  // expected-error @+2 {{input and output_grad must be N x C x spatial... of the same rank}}
  // expected-error @+1 {{'nn.conv_backward_weight' op failed to infer returned types}}
  %0 = nn.conv_backward_weight %dy, %x {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>,
                                        pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}
      : (tensor<1x4x8xf32>, tensor<1x3x8x8xf32>) -> tensor<4x3x3x3xf32>
  return
}

// -----

func.func @max_pool_grad_shape(%dy: tensor<1x4x3x3xf32>, %x: tensor<1x4x8x8xf32>) {
  // expected-error @+2 {{output_grad shape [1, 4, 3, 3] differs from the forward output shape [1, 4, 4, 4]}}
  // expected-error @+1 {{'nn.max_pool_grad' op failed to infer returned types}}
  %0 = nn.max_pool_grad %dy, %x {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>,
                                 pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>}
      : (tensor<1x4x3x3xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  return
}

// -----

func.func @max_pool_grad_element_types(%dy: tensor<1x4x4x4xf64>, %x: tensor<1x4x8x8xf32>) {
  // expected-error @+2 {{operand element types differ}}
  // expected-error @+1 {{'nn.max_pool_grad' op failed to infer returned types}}
  %0 = nn.max_pool_grad %dy, %x {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>,
                                 pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>}
      : (tensor<1x4x4x4xf64>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  return
}

// -----

func.func @average_pool_grad_shape(%dy: tensor<1x4x4x4xf32>) {
  // expected-error @+2 {{output_grad shape [1, 4, 4, 4] differs from the forward output shape [1, 4, 3, 3]}}
  // expected-error @+1 {{'nn.average_pool_grad' op failed to infer returned types}}
  %0 = nn.average_pool_grad %dy {input_shape = array<i64: 1, 4, 7, 7>, kernel_shape = array<i64: 2, 2>,
                                 pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>}
      : (tensor<1x4x4x4xf32>) -> tensor<1x4x7x7xf32>
  return
}

// -----

func.func @average_pool_grad_input_shape(%dy: tensor<1x4x4x4xf32>) {
  // expected-error @+2 {{input_shape [1, 4, -7, 7] must be N x C x spatial... with non-negative sizes}}
  // expected-error @+1 {{'nn.average_pool_grad' op failed to infer returned types}}
  %0 = nn.average_pool_grad %dy {input_shape = array<i64: 1, 4, -7, 7>, kernel_shape = array<i64: 2, 2>,
                                 pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>}
      : (tensor<1x4x4x4xf32>) -> tensor<1x4x7x7xf32>
  return
}

// -----

func.func @batch_norm_train_stats(%x: tensor<2x4x8xf32>, %s: tensor<4xf32>, %m: tensor<3xf32>) {
  // expected-error @+2 {{scale, bias, mean and var must have shape [4], got [3]}}
  // expected-error @+1 {{'nn.batch_norm_train' op failed to infer returned types}}
  %0:3 = nn.batch_norm_train %x, %s, %s, %m, %s
      : (tensor<2x4x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<3xf32>, tensor<4xf32>)
      -> (tensor<2x4x8xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @batch_norm_train_one_value(%x: tensor<1x4xf32>, %s: tensor<4xf32>) {
  // expected-error @+1 {{'nn.batch_norm_train' op needs more than one value per channel to compute batch statistics, got input shape [1, 4]}}
  %0:3 = nn.batch_norm_train %x, %s, %s, %s, %s
      : (tensor<1x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
      -> (tensor<1x4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @batch_norm_train_momentum(%x: tensor<2x4xf32>, %s: tensor<4xf32>) {
  // expected-error @+1 {{'nn.batch_norm_train' op momentum must be in [0, 1], got 1.5}}
  %0:3 = nn.batch_norm_train %x, %s, %s, %s, %s {momentum = 1.5 : f64}
      : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
      -> (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @check_index_range_empty(%min: i64, %max: i64) {
  // expected-error @+1 {{'nn.check_index_range' op needs lower <= upper, got [5, -5)}}
  nn.check_index_range %min, %max {input = "idx", lower = 5 : i64, node = "n", op_type = "Gather", upper = -5 : i64} : i64
  return
}

// -----

func.func @check_index_range_kind(%min: i64, %max: i64) {
  // expected-error @+1 {{'nn.check_index_range' op kind must be 'index' or 'size', got 'count'}}
  nn.check_index_range %min, %max {input = "idx", kind = "count", lower = -5 : i64, node = "n", op_type = "Gather", upper = 5 : i64} : i64
  return
}

// -----

func.func @check_size_negative(%y: tensor<2x3xi64>, %n: tensor<i64>) {
  // expected-error @+1 {{'nn.check_size' op expected size must be non-negative, got -1}}
  %0 = nn.check_size %y, %n {expected = -1 : i64, op_type = "NonZero", output = "result"} : tensor<2x3xi64>, tensor<i64>
  return
}

// -----

func.func @check_index_range_types(%min: i64, %max: i32) {
  // expected-error @+1 {{'nn.check_index_range' op failed to verify that all of {min, max} have same type}}
  "nn.check_index_range"(%min, %max) {input = "idx", lower = -5 : i64, node = "n", op_type = "Gather", upper = 5 : i64} : (i64, i32) -> ()
  return
}
