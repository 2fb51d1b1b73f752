// RUN: pipedream-opt %s -convert-nn-to-linalg -split-input-file | FileCheck %s
// The CPU pipeline (TOOLCHAIN.md, plus convert-bufferization-to-memref for
// results that alias an argument or a constant, and convert-math-to-libm for
// math.erf) must turn the output into the llvm dialect alone.
// RUN: pipedream-opt %s -split-input-file -convert-nn-to-linalg \
// RUN:   -one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" \
// RUN:   -buffer-deallocation-pipeline -convert-bufferization-to-memref \
// RUN:   -convert-linalg-to-loops -convert-scf-to-cf -expand-strided-metadata \
// RUN:   -lower-affine -convert-math-to-libm -convert-to-llvm -reconcile-unrealized-casts \
// RUN: | FileCheck %s --check-prefix=LLVM \
// RUN:   --implicit-check-not="{{[^.a-z_](nn|linalg|tensor|memref|bufferization|arith|math|scf|cf|affine|func|builtin)\.}}"
// Pooling: tensor.pad (-inf for max, zeros for average), the named
// linalg.pooling op (a generic for 3-D), and for average pooling a division
// by the per-window element count.

// ceil_mode: the last window of each 5-wide dimension reaches past the
// input; the input is padded by one more -inf at the end.
// CHECK-LABEL: func.func @max_pool_ceil(
// CHECK-SAME: %[[X:.*]]: tensor<1x4x5x5xf32>)
// CHECK: %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: %[[PAD:.*]] = tensor.pad %[[X]] low[0, 0, 0, 0] high[0, 0, 1, 1]
// CHECK: tensor.yield %[[NEGINF]] : f32
// CHECK: } : tensor<1x4x5x5xf32> to tensor<1x4x6x6xf32>
// CHECK: %[[ACC:.*]] = linalg.fill ins(%[[NEGINF]] : f32) outs(%{{.*}} : tensor<1x4x3x3xf32>)
// CHECK: %[[WIN:.*]] = tensor.empty() : tensor<2x2xf32>
// CHECK: %[[R:.*]] = linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
// CHECK-SAME: ins(%[[PAD]], %[[WIN]] : tensor<1x4x6x6xf32>, tensor<2x2xf32>) outs(%[[ACC]] : tensor<1x4x3x3xf32>)
// CHECK: return %[[R]]
// LLVM-LABEL: llvm.func @max_pool_ceil(
func.func @max_pool_ceil(%x: tensor<1x4x5x5xf32>) -> tensor<1x4x3x3xf32> {
  %0 = nn.max_pool %x {ceil_mode = true, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x4x5x5xf32>) -> tensor<1x4x3x3xf32>
  return %0 : tensor<1x4x3x3xf32>
}

// -----

// CHECK-LABEL: func.func @max_pool_1d(
// CHECK: %[[PAD:.*]] = tensor.pad %{{.*}} low[0, 0, 1] high[0, 0, 0]
// CHECK: linalg.pooling_ncw_max {dilations = dense<2> : tensor<1xi64>, strides = dense<2> : tensor<1xi64>} ins(%[[PAD]], %{{.*}} : tensor<1x2x9xf32>, tensor<2xf32>)
// LLVM-LABEL: llvm.func @max_pool_1d(
func.func @max_pool_1d(%x: tensor<1x2x8xf32>) -> tensor<1x2x4xf32> {
  %0 = nn.max_pool %x {dilations = array<i64: 2>, kernel_shape = array<i64: 2>, pads = array<i64: 1, 0>, strides = array<i64: 2>} : (tensor<1x2x8xf32>) -> tensor<1x2x4xf32>
  return %0 : tensor<1x2x4xf32>
}

// -----

// No named NCDHW pooling upstream: a generic reading input[o * stride + k].
// CHECK-DAG: #[[$IN:.+]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2 * 2 + d5, d3 * 2 + d6, d4 * 2 + d7)>
// CHECK-DAG: #[[$WIN:.+]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d5, d6, d7)>
// CHECK-DAG: #[[$OUT:.+]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>
// CHECK-LABEL: func.func @max_pool_3d(
// CHECK: linalg.generic {indexing_maps = [#[[$IN]], #[[$WIN]], #[[$OUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
// CHECK: ^bb0(%[[I:.*]]: f32, %{{.*}}: f32, %[[O:.*]]: f32):
// CHECK: arith.maximumf %[[O]], %[[I]] : f32
// LLVM-LABEL: llvm.func @max_pool_3d(
func.func @max_pool_3d(%x: tensor<1x2x4x4x4xf32>) -> tensor<1x2x2x2x2xf32> {
  %0 = nn.max_pool %x {dilations = array<i64: 1, 1, 1>, kernel_shape = array<i64: 2, 2, 2>, pads = array<i64: 0, 0, 0, 0, 0, 0>, strides = array<i64: 2, 2, 2>} : (tensor<1x2x4x4x4xf32>) -> tensor<1x2x2x2x2xf32>
  return %0 : tensor<1x2x2x2x2xf32>
}

// -----

// count_include_pad = false: the divisor of each window counts its elements
// inside the input (2 or 3 per dimension here), a constant over the output's
// spatial shape.
// CHECK-DAG: #[[$ID4:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[$SPATIAL:.+]] = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
// CHECK-LABEL: func.func @average_pool_exclude_pad(
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[PAD:.*]] = tensor.pad %{{.*}} low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: tensor.yield %[[ZERO]] : f32
// CHECK: %[[SUM:.*]] = linalg.pooling_nchw_sum {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%[[PAD]], %{{.*}} : tensor<1x4x7x7xf32>, tensor<3x3xf32>)
// CHECK: %[[DIV:.*]] = arith.constant dense<{{\[}}[4.000000e+00, 6.000000e+00, 4.000000e+00], [6.000000e+00, 9.000000e+00, 6.000000e+00], [4.000000e+00, 6.000000e+00, 4.000000e+00]]> : tensor<3x3xf32>
// CHECK: linalg.generic {indexing_maps = [#[[$ID4]], #[[$SPATIAL]], #[[$ID4]]]
// CHECK-SAME: ins(%[[SUM]], %[[DIV]] : tensor<1x4x3x3xf32>, tensor<3x3xf32>)
// CHECK: arith.divf
// LLVM-LABEL: llvm.func @average_pool_exclude_pad(
func.func @average_pool_exclude_pad(%x: tensor<1x4x5x5xf32>) -> tensor<1x4x3x3xf32> {
  %0 = nn.average_pool %x {count_include_pad = false, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x4x5x5xf32>) -> tensor<1x4x3x3xf32>
  return %0 : tensor<1x4x3x3xf32>
}

// -----

// count_include_pad = true without ceil_mode: every window counts the whole
// kernel, a scalar divisor.
// CHECK-LABEL: func.func @average_pool_include_pad(
// CHECK: %[[SUM:.*]] = linalg.pooling_nchw_sum
// CHECK: %[[NINE:.*]] = arith.constant 9.000000e+00 : f32
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[SUM]] : tensor<1x4x3x3xf32>)
// CHECK: arith.divf %{{.*}}, %[[NINE]] : f32
// LLVM-LABEL: llvm.func @average_pool_include_pad(
func.func @average_pool_include_pad(%x: tensor<1x4x5x5xf32>) -> tensor<1x4x3x3xf32> {
  %0 = nn.average_pool %x {count_include_pad = true, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x4x5x5xf32>) -> tensor<1x4x3x3xf32>
  return %0 : tensor<1x4x3x3xf32>
}

// -----

// ceil_mode with count_include_pad: the last window (start 5 of 6, with
// one pad at each end) covers 5, 6 and an extra position 7 beyond the end
// padding, which does not count: 2 per dimension, as onnxruntime divides.
// CHECK-LABEL: func.func @average_pool_ceil_include_pad(
// CHECK: tensor.pad %{{.*}} low[0, 0, 1, 1] high[0, 0, 2, 2]
// CHECK: %[[SUM:.*]] = linalg.pooling_nchw_sum
// CHECK: %[[DIV:.*]] = arith.constant dense<{{\[}}[9.000000e+00, 9.000000e+00, 9.000000e+00, 6.000000e+00], [9.000000e+00, 9.000000e+00, 9.000000e+00, 6.000000e+00], [9.000000e+00, 9.000000e+00, 9.000000e+00, 6.000000e+00], [6.000000e+00, 6.000000e+00, 6.000000e+00, 4.000000e+00]]> : tensor<4x4xf32>
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[SUM]], %[[DIV]] : tensor<1x1x4x4xf32>, tensor<4x4xf32>)
// LLVM-LABEL: llvm.func @average_pool_ceil_include_pad(
func.func @average_pool_ceil_include_pad(%x: tensor<1x1x6x6xf32>) -> tensor<1x1x4x4xf32> {
  %0 = nn.average_pool %x {ceil_mode = true, count_include_pad = true, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x1x6x6xf32>) -> tensor<1x1x4x4xf32>
  return %0 : tensor<1x1x4x4xf32>
}

// -----

// CHECK-LABEL: func.func @global_average_pool(
// CHECK-SAME: %[[X:.*]]: tensor<2x3x4x5xf32>)
// CHECK: %[[SUM:.*]] = linalg.reduce ins(%[[X]] : tensor<2x3x4x5xf32>) outs(%{{.*}} : tensor<2x3xf32>) dimensions = [2, 3]
// CHECK: arith.addf
// CHECK: %[[COUNT:.*]] = arith.constant 2.000000e+01 : f32
// CHECK: %[[MEAN:.*]] = linalg.generic
// CHECK-SAME: ins(%[[SUM]] : tensor<2x3xf32>)
// CHECK: arith.divf %{{.*}}, %[[COUNT]]
// CHECK: %[[R:.*]] = tensor.expand_shape %[[MEAN]] {{\[}}[0], [1, 2, 3]] output_shape [2, 3, 1, 1]
// CHECK: return %[[R]]
// LLVM-LABEL: llvm.func @global_average_pool(
func.func @global_average_pool(%x: tensor<2x3x4x5xf32>) -> tensor<2x3x1x1xf32> {
  %0 = nn.global_average_pool %x : (tensor<2x3x4x5xf32>) -> tensor<2x3x1x1xf32>
  return %0 : tensor<2x3x1x1xf32>
}

// -----

// nn.max_pool_grad: the -inf padded input, one reduction generic with the
// window maximum and its row-major offset index (first maximum: `ogt`, or a
// NaN), then per window offset the output gradient where the index matches
// added into the strided view of the padded gradient, and the padding
// cropped.
// CHECK-LABEL: func.func @max_pool_grad(
// CHECK-SAME: %[[DY:.*]]: tensor<1x2x2x2xf32>, %[[X:.*]]: tensor<1x2x4x4xf32>)
// CHECK: %[[NEG_INF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: %[[PAD:.*]] = tensor.pad %[[X]] low[0, 0, 0, 1] high[0, 0, 0, 0]
// CHECK: %[[ARG:.*]]:2 = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%[[PAD]], %{{.*}} : tensor<1x2x4x5xf32>, tensor<1x2xf32>) outs(%{{.*}}, %{{.*}} : tensor<1x2x2x2xf32>, tensor<1x2x2x2xi64>)
// CHECK: linalg.index 4
// CHECK: linalg.index 5
// CHECK: %[[GT:.*]] = arith.cmpf ogt
// CHECK: %[[NAN:.*]] = arith.cmpf uno
// CHECK: %[[TAKE:.*]] = arith.ori %[[GT]], %[[NAN]]
// CHECK: arith.select %[[TAKE]]
// CHECK: arith.select %[[TAKE]]
// CHECK: %[[ACC:.*]] = linalg.fill {{.*}} -> tensor<1x2x4x5xf32>
// CHECK: %[[HIT0:.*]] = linalg.generic {{.*}} ins(%[[DY]], %[[ARG]]#1 : tensor<1x2x2x2xf32>, tensor<1x2x2x2xi64>)
// CHECK: arith.cmpi eq
// CHECK: %[[V0:.*]] = tensor.extract_slice %[[ACC]][0, 0, 0, 0] [1, 2, 2, 2] [1, 1, 2, 2]
// CHECK: %[[S0:.*]] = linalg.generic {{.*}} ins(%[[HIT0]] : {{.*}}) outs(%[[V0]] : {{.*}})
// CHECK: %[[ACC1:.*]] = tensor.insert_slice %[[S0]] into %[[ACC]][0, 0, 0, 0] [1, 2, 2, 2] [1, 1, 2, 2]
// CHECK: %[[V1:.*]] = tensor.extract_slice %[[ACC1]][0, 0, 0, 1] [1, 2, 2, 2] [1, 1, 2, 2]
// CHECK: %[[ACC2:.*]] = tensor.insert_slice %{{.*}} into %[[ACC1]][0, 0, 0, 1] [1, 2, 2, 2] [1, 1, 2, 2]
// CHECK: %[[R:.*]] = tensor.extract_slice %[[ACC2]][0, 0, 0, 1] [1, 2, 4, 4] [1, 1, 1, 1]
// CHECK: return %[[R]]
// LLVM-LABEL: llvm.func @max_pool_grad(
func.func @max_pool_grad(%dy: tensor<1x2x2x2xf32>, %x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %0 = nn.max_pool_grad %dy, %x {ceil_mode = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 1, 2>, pads = array<i64: 0, 1, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x2x2x2xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %0 : tensor<1x2x4x4xf32>
}

// -----

// nn.average_pool_grad: the output gradient divided by the forward's
// divisors (windows touching the begin padding count 1 element), added at
// every window offset, the padding cropped.
// CHECK-LABEL: func.func @average_pool_grad(
// CHECK-SAME: %[[DY:.*]]: tensor<1x2x3xf32>)
// CHECK: %[[DIV:.*]] = arith.constant dense<[1.000000e+00, 2.000000e+00, 2.000000e+00]> : tensor<3xf32>
// CHECK: %[[SCALED:.*]] = linalg.generic {{.*}} ins(%[[DY]], %[[DIV]] : tensor<1x2x3xf32>, tensor<3xf32>)
// CHECK: arith.divf
// CHECK: %[[ACC:.*]] = linalg.fill {{.*}} -> tensor<1x2x6xf32>
// CHECK: %[[V0:.*]] = tensor.extract_slice %[[ACC]][0, 0, 0] [1, 2, 3] [1, 1, 2]
// CHECK: %[[S0:.*]] = linalg.generic {{.*}} ins(%[[SCALED]] : {{.*}}) outs(%[[V0]] : {{.*}})
// CHECK: %[[ACC1:.*]] = tensor.insert_slice %[[S0]] into %[[ACC]][0, 0, 0] [1, 2, 3] [1, 1, 2]
// CHECK: %[[V1:.*]] = tensor.extract_slice %[[ACC1]][0, 0, 1] [1, 2, 3] [1, 1, 2]
// CHECK: %[[S1:.*]] = linalg.generic {{.*}} ins(%[[SCALED]] : {{.*}}) outs(%[[V1]] : {{.*}})
// CHECK: %[[ACC2:.*]] = tensor.insert_slice %[[S1]] into %[[ACC1]][0, 0, 1] [1, 2, 3] [1, 1, 2]
// CHECK: %[[R:.*]] = tensor.extract_slice %[[ACC2]][0, 0, 1] [1, 2, 5] [1, 1, 1]
// CHECK: return %[[R]]
// LLVM-LABEL: llvm.func @average_pool_grad(
func.func @average_pool_grad(%dy: tensor<1x2x3xf32>) -> tensor<1x2x5xf32> {
  %0 = nn.average_pool_grad %dy {ceil_mode = false, count_include_pad = false, input_shape = array<i64: 1, 2, 5>, kernel_shape = array<i64: 2>, pads = array<i64: 1, 0>, strides = array<i64: 2>} : (tensor<1x2x3xf32>) -> tensor<1x2x5xf32>
  return %0 : tensor<1x2x5xf32>
}
