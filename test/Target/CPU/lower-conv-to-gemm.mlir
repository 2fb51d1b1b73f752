// RUN: pipedream-opt %s -split-input-file -verify-diagnostics --cpu-lower-conv-to-gemm | FileCheck %s
// The pass cannot fail (a convolution it does not rewrite stays one, and
// becomes loops); -verify-diagnostics checks that it reports nothing.

// An NCHW x FCHW convolution, stride 2: the im2col loops over n, c, kh,
// kw, oh, ow and reads the input at affine indices (oh * 2 + kh, ow * 2 +
// kw: no division or remainder per element), then collapses to
// [N, C*KH*KW, OH*OW]; the contraction [F, C*KH*KW] x that is a
// multiply-add over k, expanded back to [N, F, OH, OW].
// CHECK-DAG: #[[READ:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4 * 2 + d2, d5 * 2 + d3)>
// CHECK-DAG: #[[W:.*]] = affine_map<(d0, d1, d2, d3) -> (d1, d3)>
// CHECK-DAG: #[[COLS:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @strided
// CHECK:         %[[IM2COL:.*]] = linalg.generic {indexing_maps = [#[[READ]], #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%{{.*}} : tensor<2x3x9x9xf32>) outs(%{{.*}} : tensor<2x3x3x3x4x4xf32>)
// CHECK:         %[[COLS_T:.*]] = tensor.collapse_shape %[[IM2COL]] {{\[}}[0], [1, 2, 3], [4, 5]] : tensor<2x3x3x3x4x4xf32> into tensor<2x27x16xf32>
// CHECK:         %[[WEIGHTS:.*]] = tensor.collapse_shape %{{.*}} {{\[}}[0], [1, 2, 3]] : tensor<4x3x3x3xf32> into tensor<4x27xf32>
// CHECK:         %[[INIT:.*]] = tensor.collapse_shape %{{.*}} {{\[}}[0], [1], [2, 3]] : tensor<2x4x4x4xf32> into tensor<2x4x16xf32>
// CHECK:         %[[GEMM:.*]] = linalg.generic {indexing_maps = [#[[W]], #[[COLS]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[WEIGHTS]], %[[COLS_T]] : tensor<4x27xf32>, tensor<2x27x16xf32>) outs(%[[INIT]] : tensor<2x4x16xf32>)
// CHECK:           arith.mulf
// CHECK-NEXT:      arith.addf
// CHECK:         tensor.expand_shape %[[GEMM]] {{\[}}[0], [1], [2, 3]] output_shape [2, 4, 4, 4] : tensor<2x4x16xf32> into tensor<2x4x4x4xf32>
// CHECK-NOT:     linalg.conv_2d
func.func @strided(%x: tensor<2x3x9x9xf32>, %w: tensor<4x3x3x3xf32>, %init: tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf32> {
  %r = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %w : tensor<2x3x9x9xf32>, tensor<4x3x3x3xf32>) outs(%init : tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf32>
  return %r : tensor<2x4x4x4xf32>
}

// -----

// Dilation 2, stride 1: kh and kw step by 2 in the input.
// CHECK-DAG: #[[DREAD:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4 + d2 * 2, d5 + d3 * 2)>
// CHECK-LABEL: func.func @dilated
// CHECK:         linalg.generic {indexing_maps = [#[[DREAD]], #{{.*}}]
// CHECK-NOT:     linalg.conv_2d
func.func @dilated(%x: tensor<1x2x8x8xf32>, %w: tensor<3x2x3x3xf32>, %init: tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32> {
  %r = linalg.conv_2d_nchw_fchw {dilations = dense<2> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x2x8x8xf32>, tensor<3x2x3x3xf32>) outs(%init : tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  return %r : tensor<1x3x4x4xf32>
}

// -----

// Mixed element types (f16 operands, f32 result): upstream's im2col
// (rewriteInIm2Col), which casts in the contraction's body.
// CHECK-LABEL: func.func @mixed
// CHECK-NOT:     linalg.conv_2d
// CHECK:         arith.extf
func.func @mixed(%x: tensor<1x2x6x6xf16>, %w: tensor<3x2x3x3xf16>, %init: tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32> {
  %r = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x2x6x6xf16>, tensor<3x2x3x3xf16>) outs(%init : tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  return %r : tensor<1x3x4x4xf32>
}
