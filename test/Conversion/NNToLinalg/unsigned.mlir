// RUN: pipedream-opt %s -convert-nn-to-linalg -split-input-file | FileCheck %s
// Unsigned integers (ONNX uint8..uint64, docs/Importer.md): the patterns
// choose the unsigned arith ops, then the pass drops the signedness of every
// type (function type and constants included), since arith takes signless
// integers only.

// CHECK-LABEL: func.func @div_mod(
// CHECK-SAME: %{{.*}}: tensor<4xi8>, %{{.*}}: tensor<4xi8>) -> (tensor<4xi8>, tensor<4xi8>)
// CHECK: linalg.generic
// CHECK: arith.cmpi eq
// CHECK: arith.divui
// CHECK-NOT: arith.divsi
// CHECK: linalg.generic
// CHECK: arith.remui
// CHECK-NOT: arith.remsi
// CHECK-NOT: ui8
func.func @div_mod(%a: tensor<4xui8>, %b: tensor<4xui8>) -> (tensor<4xui8>, tensor<4xui8>) {
  %0 = nn.div %a, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  %1 = nn.mod %a, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  return %0, %1 : tensor<4xui8>, tensor<4xui8>
}

// -----

// CHECK-LABEL: func.func @order(
// CHECK: arith.maxui
// CHECK: arith.minui
// CHECK: arith.cmpi ult
// CHECK-NOT: arith.maxsi
// CHECK-NOT: ui16
func.func @order(%a: tensor<4xui16>, %b: tensor<4xui16>) -> (tensor<4xui16>, tensor<4xui16>, tensor<4xi1>) {
  %0 = nn.max %a, %b : (tensor<4xui16>, tensor<4xui16>) -> tensor<4xui16>
  %1 = nn.min %a, %b : (tensor<4xui16>, tensor<4xui16>) -> tensor<4xui16>
  %2 = nn.less %a, %b : (tensor<4xui16>, tensor<4xui16>) -> tensor<4xi1>
  return %0, %1, %2 : tensor<4xui16>, tensor<4xui16>, tensor<4xi1>
}

// -----

// CHECK-LABEL: func.func @casts(
// CHECK: arith.uitofp %{{.*}} : i32 to f32
// CHECK: arith.extui %{{.*}} : i32 to i64
// CHECK: arith.fptoui %{{.*}} : f32 to i8
func.func @casts(%a: tensor<4xui32>, %f: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi64>, tensor<4xui8>) {
  %0 = nn.cast %a {to = f32} : (tensor<4xui32>) -> tensor<4xf32>
  %1 = nn.cast %a {to = i64} : (tensor<4xui32>) -> tensor<4xi64>
  %2 = nn.cast %f {to = ui8} : (tensor<4xf32>) -> tensor<4xui8>
  return %0, %1, %2 : tensor<4xf32>, tensor<4xi64>, tensor<4xui8>
}

// -----

// A shift by the width or more is 0 (numpy), not LLVM's poison.
// CHECK-LABEL: func.func @shifts(
// CHECK: %[[W:.*]] = arith.constant 64 : i64
// CHECK: arith.cmpi uge, %{{.*}}, %[[W]] : i64
// CHECK: arith.shrui
// CHECK: arith.shli
func.func @shifts(%a: tensor<4xui64>, %s: tensor<4xui64>) -> (tensor<4xui64>, tensor<4xui64>) {
  %0 = nn.bit_shift %a, %s {left = false} : (tensor<4xui64>, tensor<4xui64>) -> tensor<4xui64>
  %1 = nn.bit_shift %a, %s {left = true} : (tensor<4xui64>, tensor<4xui64>) -> tensor<4xui64>
  return %0, %1 : tensor<4xui64>, tensor<4xui64>
}

// -----

// Constants keep their bytes (255 prints as the signless -1).
// CHECK-LABEL: func.func @constant(
// CHECK: arith.constant dense<[-1, 1]> : tensor<2xi8>
func.func @constant() -> tensor<2xui8> {
  %0 = nn.constant dense<[255, 1]> : tensor<2xui8>
  return %0 : tensor<2xui8>
}

// -----

// MaxPool on ui8: padded with 0 (the lowest unsigned value) and reduced
// with maxui in a generic (linalg's named max pools compare signed); on i8:
// padded with -128 and the named pooling op.
// CHECK-LABEL: func.func @max_pool_ints(
// CHECK-SAME: %[[U:.*]]: tensor<1x1x4x4xi8>, %[[S:.*]]: tensor<1x1x4x4xi8>)
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0 : i8
// CHECK: tensor.pad %[[U]]
// CHECK: tensor.yield %[[ZERO]] : i8
// CHECK: linalg.generic
// CHECK: arith.maxui
// CHECK: %[[MIN:.*]] = arith.constant -128 : i8
// CHECK: tensor.pad %[[S]]
// CHECK: tensor.yield %[[MIN]] : i8
// CHECK: linalg.pooling_nchw_max
func.func @max_pool_ints(%u: tensor<1x1x4x4xui8>, %s: tensor<1x1x4x4xi8>) -> (tensor<1x1x2x2xui8>, tensor<1x1x2x2xi8>) {
  %0 = nn.max_pool %u {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>,
                       pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>}
      : (tensor<1x1x4x4xui8>) -> tensor<1x1x2x2xui8>
  %1 = nn.max_pool %s {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>,
                       pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>}
      : (tensor<1x1x4x4xi8>) -> tensor<1x1x2x2xi8>
  return %0, %1 : tensor<1x1x2x2xui8>, tensor<1x1x2x2xi8>
}

// -----

// Order-dependent reductions of unsigned integers compare and divide
// unsigned (a signed max of ui8 would rank 200 below 3): reduce_max /
// reduce_min / reduce_mean, arg_max, top_k, and a scatter's max and min.
// CHECK-LABEL: func.func @ordered_reductions(
// CHECK: linalg.reduce
// CHECK: arith.maxui
// CHECK: linalg.reduce
// CHECK: arith.minui
// CHECK: linalg.reduce
// CHECK: arith.addi
// CHECK: arith.divui
// CHECK: arith.cmpi ugt
// CHECK: arith.cmpi ugt
// CHECK: arith.maxui
// CHECK: arith.minui
// The signed ones left are the index checks' (i64).
// CHECK-NOT: {{arith.(max|min|div)si .* : i(8|32)$}}
// CHECK-NOT: {{arith.cmpi s.*: i(8|32)$}}
func.func @ordered_reductions(%x: tensor<3x4xui8>, %w: tensor<5xui32>, %i: tensor<3xi64>, %u: tensor<3xui32>)
    -> (tensor<3xui8>, tensor<3xui8>, tensor<3xui8>, tensor<3x1xi64>, tensor<3x2xui8>, tensor<5xui32>, tensor<5xui32>) {
  %0 = nn.reduce_max %x {axes = array<i64: 1>, keepdims = false} : (tensor<3x4xui8>) -> tensor<3xui8>
  %1 = nn.reduce_min %x {axes = array<i64: 1>, keepdims = false} : (tensor<3x4xui8>) -> tensor<3xui8>
  %2 = nn.reduce_mean %x {axes = array<i64: 1>, keepdims = false} : (tensor<3x4xui8>) -> tensor<3xui8>
  %3 = nn.arg_max %x {axis = 1 : i64} : (tensor<3x4xui8>) -> tensor<3x1xi64>
  %v, %k = nn.top_k %x {axis = 1 : i64, k = 2 : i64} : (tensor<3x4xui8>) -> (tensor<3x2xui8>, tensor<3x2xi64>)
  %4 = nn.scatter_elements %w, %i, %u {axis = 0 : i64, reduction = "max"} : (tensor<5xui32>, tensor<3xi64>, tensor<3xui32>) -> tensor<5xui32>
  %5 = nn.scatter_elements %w, %i, %u {axis = 0 : i64, reduction = "min"} : (tensor<5xui32>, tensor<3xi64>, tensor<3xui32>) -> tensor<5xui32>
  return %0, %1, %2, %3, %v, %4, %5 : tensor<3xui8>, tensor<3xui8>, tensor<3xui8>, tensor<3x1xi64>, tensor<3x2xui8>, tensor<5xui32>, tensor<5xui32>
}

// -----

// Bools order false < true: a scatter's max of i1 is an unsigned max (a
// signed one would rank true, all ones, below false).
// CHECK-LABEL: func.func @bool_scatter_max(
// CHECK: arith.maxui {{.*}} : i1
// CHECK-NOT: {{arith.maxsi .* : i1$}}
func.func @bool_scatter_max(%w: tensor<5xi1>, %i: tensor<3xi64>, %u: tensor<3xi1>) -> tensor<5xi1> {
  %0 = nn.scatter_elements %w, %i, %u {axis = 0 : i64, reduction = "max"} : (tensor<5xi1>, tensor<3xi64>, tensor<3xi1>) -> tensor<5xi1>
  return %0 : tensor<5xi1>
}
