// RUN: %python %S/gradcheck.py %s --bin %pipedream_bin | FileCheck %s
// Derivative rules of the data-movement ops, reductions, where, cast,
// dropout and the ops without gradients (NNGradientsShape.cpp), checked
// against central finite differences in f64.
// CHECK-NOT: FAIL

//===----------------------------------------------------------------------===//
// Ops without gradients, masking, casts
//===----------------------------------------------------------------------===//

// CHECK: PASS @constant_operand
func.func @constant_operand(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
  %c = nn.constant dense<[1.5, -2.0, 0.25]> : tensor<3xf64>
  %0 = nn.mul %x, %c : (tensor<2x3xf64>, tensor<3xf64>) -> tensor<2x3xf64>
  return %0 : tensor<2x3xf64>
}

// The mask comes from an integer comparison: no gradient through it.
// CHECK: PASS @where_equal_mask
func.func @where_equal_mask(%i: tensor<2x3xi64> {gradcheck.int_range = [0, 2]}, %j: tensor<3xi64> {gradcheck.int_range = [0, 2]},
                            %x: tensor<2x3xf64>, %y: tensor<2x3xf64>) -> tensor<2x3xf64> {
  %m = nn.equal %i, %j : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi1>
  %0 = nn.where %m, %x, %y : (tensor<2x3xi1>, tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  return %0 : tensor<2x3xf64>
}

// A float equality: its operands get no gradient either (x also flows
// through the multiplication, which carries all of its gradient).
// CHECK: PASS @equal_float
func.func @equal_float(%x: tensor<4xf64>, %y: tensor<4xf64>) -> tensor<4xf64> {
  %m = nn.equal %x, %y : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xi1>
  %s = nn.mul %x, %y : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  %0 = nn.where %m, %x, %s : (tensor<4xi1>, tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  return %0 : tensor<4xf64>
}

// Both sides broadcast: each sums its masked gradient back.
// CHECK: PASS @where_broadcast
func.func @where_broadcast(%c: tensor<2x1xi1>, %x: tensor<3xf64>, %y: tensor<f64>) -> tensor<2x3xf64> {
  %0 = nn.where %c, %x, %y : (tensor<2x1xi1>, tensor<3xf64>, tensor<f64>) -> tensor<2x3xf64>
  return %0 : tensor<2x3xf64>
}

// Through f32 and back: the gradient is cast back (f32 rounding in the
// function: a larger step and tolerance).
// CHECK: PASS @cast_float
func.func @cast_float(%x: tensor<2x3xf64>) -> tensor<2x3xf64>
    attributes {gradcheck.step = 1.0e-02 : f64, gradcheck.rtol = 1.0e-04 : f64, gradcheck.atol = 1.0e-06 : f64} {
  %0 = nn.cast %x {to = f32} : (tensor<2x3xf64>) -> tensor<2x3xf32>
  %1 = nn.mul %0, %0 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = nn.cast %1 {to = f64} : (tensor<2x3xf32>) -> tensor<2x3xf64>
  return %2 : tensor<2x3xf64>
}

// Through an integer: piecewise constant, no gradient (x's gradient is the
// one of the addition alone).
// CHECK: PASS @cast_integer
func.func @cast_integer(%x: tensor<2x3xf64> {gradcheck.range = [-4.0, 4.0]}) -> tensor<2x3xf64> {
  %0 = nn.cast %x {to = i64} : (tensor<2x3xf64>) -> tensor<2x3xi64>
  %1 = nn.cast %0 {to = f64} : (tensor<2x3xi64>) -> tensor<2x3xf64>
  %2 = nn.add %1, %x : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  return %2 : tensor<2x3xf64>
}

// CHECK: PASS @dropout
func.func @dropout(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
  %0 = nn.dropout %x {ratio = 0.5 : f64, seed = 3 : i64} : tensor<2x3xf64>
  return %0 : tensor<2x3xf64>
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

// CHECK: PASS @reduce_sum_keepdims
func.func @reduce_sum_keepdims(%x: tensor<2x3x4xf64>) -> tensor<2x1x4xf64> {
  %0 = nn.reduce_sum %x {axes = array<i64: 1>, keepdims = true} : (tensor<2x3x4xf64>) -> tensor<2x1x4xf64>
  return %0 : tensor<2x1x4xf64>
}

// CHECK: PASS @reduce_sum_all
func.func @reduce_sum_all(%x: tensor<2x3xf64>) -> tensor<f64> {
  %0 = nn.reduce_sum %x {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf64>) -> tensor<f64>
  return %0 : tensor<f64>
}

// CHECK: PASS @reduce_mean_keepdims
func.func @reduce_mean_keepdims(%x: tensor<2x3x4xf64>) -> tensor<1x3x1xf64> {
  %0 = nn.reduce_mean %x {axes = array<i64: 0, 2>, keepdims = true} : (tensor<2x3x4xf64>) -> tensor<1x3x1xf64>
  return %0 : tensor<1x3x1xf64>
}

// CHECK: PASS @reduce_mean_drop
func.func @reduce_mean_drop(%x: tensor<2x3x4xf64>) -> tensor<3xf64> {
  %0 = nn.reduce_mean %x {axes = array<i64: 0, 2>, keepdims = false} : (tensor<2x3x4xf64>) -> tensor<3xf64>
  return %0 : tensor<3xf64>
}

// Random inputs: no ties.
// CHECK: PASS @reduce_max_drop
func.func @reduce_max_drop(%x: tensor<3x5xf64>) -> tensor<3xf64> {
  %0 = nn.reduce_max %x {axes = array<i64: 1>, keepdims = false} : (tensor<3x5xf64>) -> tensor<3xf64>
  return %0 : tensor<3xf64>
}

// CHECK: PASS @reduce_max_keepdims
func.func @reduce_max_keepdims(%x: tensor<2x3x4xf64>) -> tensor<2x1x1xf64> {
  %0 = nn.reduce_max %x {axes = array<i64: 1, 2>, keepdims = true} : (tensor<2x3x4xf64>) -> tensor<2x1x1xf64>
  return %0 : tensor<2x1x1xf64>
}

// Deliberate two-way ties (rows 0 and 1): the gradient is split evenly, as
// torch.amax's backward does, which is also what central differences see
// at a two-way tie (raising one raises the max, lowering it does not).
// CHECK: PASS @reduce_max_ties
func.func @reduce_max_ties(%x: tensor<3x4xf64> {gradcheck.values = [1.0, 3.0, 3.0, 0.5, -1.0, 2.0, -4.0, 2.0, 0.25, -0.5, 1.5, 0.75]})
    -> tensor<3xf64> {
  %0 = nn.reduce_max %x {axes = array<i64: 1>, keepdims = false} : (tensor<3x4xf64>) -> tensor<3xf64>
  return %0 : tensor<3xf64>
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

// CHECK: PASS @reshape
func.func @reshape(%x: tensor<2x3x4xf64>) -> tensor<4x6xf64> {
  %0 = nn.reshape %x {shape = array<i64: 4, 6>} : (tensor<2x3x4xf64>) -> tensor<4x6xf64>
  return %0 : tensor<4x6xf64>
}

// CHECK: PASS @flatten
func.func @flatten(%x: tensor<2x3x4xf64>) -> tensor<6x4xf64> {
  %0 = nn.flatten %x {axis = 2 : i64} : (tensor<2x3x4xf64>) -> tensor<6x4xf64>
  return %0 : tensor<6x4xf64>
}

// CHECK: PASS @transpose
func.func @transpose(%x: tensor<2x3x4xf64>) -> tensor<4x2x3xf64> {
  %0 = nn.transpose %x {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf64>) -> tensor<4x2x3xf64>
  return %0 : tensor<4x2x3xf64>
}

// CHECK: PASS @squeeze_unsqueeze
func.func @squeeze_unsqueeze(%x: tensor<2x1x3xf64>) -> tensor<1x2x3x1xf64> {
  %0 = nn.squeeze %x {axes = array<i64: 1>} : (tensor<2x1x3xf64>) -> tensor<2x3xf64>
  %1 = nn.unsqueeze %0 {axes = array<i64: 0, 3>} : (tensor<2x3xf64>) -> tensor<1x2x3x1xf64>
  return %1 : tensor<1x2x3x1xf64>
}

// CHECK: PASS @expand
func.func @expand(%x: tensor<3x1xf64>) -> tensor<2x3x4xf64> {
  %0 = nn.expand %x {shape = array<i64: 2, 3, 4>} : (tensor<3x1xf64>) -> tensor<2x3x4xf64>
  return %0 : tensor<2x3x4xf64>
}

// CHECK: PASS @concat
func.func @concat(%a: tensor<2x1xf64>, %b: tensor<2x3xf64>, %c: tensor<2x2xf64>) -> tensor<2x6xf64> {
  %0 = nn.concat %a, %b, %c {axis = 1 : i64} : (tensor<2x1xf64>, tensor<2x3xf64>, tensor<2x2xf64>) -> tensor<2x6xf64>
  return %0 : tensor<2x6xf64>
}

// One piece is unused: zeros in its place.
// CHECK: PASS @split
func.func @split(%x: tensor<5x2xf64>) -> (tensor<2x2xf64>, tensor<1x2xf64>) {
  %0:3 = nn.split %x {axis = 0 : i64, split_sizes = array<i64: 2, 2, 1>}
      : (tensor<5x2xf64>) -> (tensor<2x2xf64>, tensor<2x2xf64>, tensor<1x2xf64>)
  return %0#0, %0#2 : tensor<2x2xf64>, tensor<1x2xf64>
}

// CHECK: PASS @slice_strided
func.func @slice_strided(%x: tensor<4x6xf64>) -> tensor<2x3xf64> {
  %0 = nn.slice %x {sizes = array<i64: 2, 3>, starts = array<i64: 1, 0>, steps = array<i64: 2, 2>}
      : (tensor<4x6xf64>) -> tensor<2x3xf64>
  return %0 : tensor<2x3xf64>
}

// CHECK: PASS @slice_negative_steps
func.func @slice_negative_steps(%x: tensor<4x6xf64>) -> tensor<4x2xf64> {
  %0 = nn.slice %x {sizes = array<i64: 4, 2>, starts = array<i64: 3, 5>, steps = array<i64: -1, -2>}
      : (tensor<4x6xf64>) -> tensor<4x2xf64>
  return %0 : tensor<4x2xf64>
}

// Overlapping slices of one input accumulate.
// CHECK: PASS @slice_overlap
func.func @slice_overlap(%x: tensor<6xf64>) -> tensor<4xf64> {
  %0 = nn.slice %x {sizes = array<i64: 4>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<6xf64>) -> tensor<4xf64>
  %1 = nn.slice %x {sizes = array<i64: 4>, starts = array<i64: 2>, steps = array<i64: 1>} : (tensor<6xf64>) -> tensor<4xf64>
  %2 = nn.mul %0, %1 : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  return %2 : tensor<4xf64>
}

// An embedding lookup: repeated indices add up, negative ones count from
// the end (the range covers [-5, 5) on a table of 5 rows).
// CHECK: PASS @gather_embedding
func.func @gather_embedding(%table: tensor<5x3xf64>, %ids: tensor<2x4xi64> {gradcheck.int_range = [-5, 5]}) -> tensor<2x4x3xf64> {
  %0 = nn.gather %table, %ids {axis = 0 : i64} : (tensor<5x3xf64>, tensor<2x4xi64>) -> tensor<2x4x3xf64>
  return %0 : tensor<2x4x3xf64>
}

// Explicit indices with a repeat and negatives, along a middle axis.
// CHECK: PASS @gather_axis1
func.func @gather_axis1(%x: tensor<2x4x3xf64>, %ids: tensor<5xi32> {gradcheck.values = [1, -1, 1, 0, -4]}) -> tensor<2x5x3xf64> {
  %0 = nn.gather %x, %ids {axis = 1 : i64} : (tensor<2x4x3xf64>, tensor<5xi32>) -> tensor<2x5x3xf64>
  return %0 : tensor<2x5x3xf64>
}

// A scalar index on the last axis.
// CHECK: PASS @gather_scalar_index
func.func @gather_scalar_index(%x: tensor<2x4xf64>, %i: tensor<i64> {gradcheck.values = [-2]}) -> tensor<2xf64> {
  %0 = nn.gather %x, %i {axis = 1 : i64} : (tensor<2x4xf64>, tensor<i64>) -> tensor<2xf64>
  return %0 : tensor<2xf64>
}
