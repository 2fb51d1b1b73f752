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
// nn.conv: zero tensor.pad (ONNX pads: all begins, then all ends), bias
// broadcast into the accumulator, then the named linalg convolution.

// CHECK-LABEL: func.func @conv2d_bias(
// CHECK-SAME: %[[X:.*]]: tensor<1x3x8x8xf32>, %[[W:.*]]: tensor<4x3x3x3xf32>, %[[B:.*]]: tensor<4xf32>)
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[PAD:.*]] = tensor.pad %[[X]] low[0, 0, 1, 2] high[0, 0, 0, 2]
// CHECK: tensor.yield %[[ZERO]] : f32
// CHECK: } : tensor<1x3x8x8xf32> to tensor<1x3x9x12xf32>
// CHECK: %[[ACC:.*]] = linalg.broadcast ins(%[[B]] : tensor<4xf32>) outs(%{{.*}} : tensor<1x4x4x8xf32>) dimensions = [0, 2, 3]
// CHECK: %[[R:.*]] = linalg.conv_2d_nchw_fchw {dilations = dense<[1, 2]> : tensor<2xi64>, strides = dense<[2, 1]> : tensor<2xi64>}
// CHECK-SAME: ins(%[[PAD]], %[[W]] : tensor<1x3x9x12xf32>, tensor<4x3x3x3xf32>) outs(%[[ACC]] : tensor<1x4x4x8xf32>)
// CHECK: return %[[R]]
// LLVM-LABEL: llvm.func @conv2d_bias(
func.func @conv2d_bias(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x4x4x8xf32> {
  %0 = nn.conv %x, %w, %b {dilations = array<i64: 1, 2>, group = 1 : i64, pads = array<i64: 1, 2, 0, 2>, strides = array<i64: 2, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x4x8xf32>
  return %0 : tensor<1x4x4x8xf32>
}

// -----

// No padding, no bias: no tensor.pad, a zero-filled accumulator.
// CHECK-LABEL: func.func @conv2d_no_pad(
// CHECK-SAME: %[[X:.*]]: tensor<1x3x8x8xf32>, %[[W:.*]]: tensor<4x3x3x3xf32>)
// CHECK-NOT: tensor.pad
// CHECK: %[[ACC:.*]] = linalg.fill
// CHECK: linalg.conv_2d_nchw_fchw {{.*}} ins(%[[X]], %[[W]] : {{.*}}) outs(%[[ACC]] : tensor<1x4x6x6xf32>)
// LLVM-LABEL: llvm.func @conv2d_no_pad(
func.func @conv2d_no_pad(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = nn.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}

// -----

// Groups: channels and filters split into [group, per group].
// CHECK-LABEL: func.func @conv2d_grouped(
// CHECK-SAME: %[[X:.*]]: tensor<1x4x8x8xf32>, %[[W:.*]]: tensor<6x2x3x3xf32>)
// CHECK: %[[PAD:.*]] = tensor.pad %[[X]] low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: %[[ACC:.*]] = linalg.fill
// CHECK: %[[GX:.*]] = tensor.expand_shape %[[PAD]] {{\[}}[0], [1, 2], [3], [4]] output_shape [1, 2, 2, 10, 10]
// CHECK: %[[GW:.*]] = tensor.expand_shape %[[W]] {{\[}}[0, 1], [2], [3], [4]] output_shape [2, 3, 2, 3, 3]
// CHECK: %[[GACC:.*]] = tensor.expand_shape %[[ACC]] {{\[}}[0], [1, 2], [3], [4]] output_shape [1, 2, 3, 4, 4]
// CHECK: %[[GR:.*]] = linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
// CHECK-SAME: ins(%[[GX]], %[[GW]] : tensor<1x2x2x10x10xf32>, tensor<2x3x2x3x3xf32>) outs(%[[GACC]] : tensor<1x2x3x4x4xf32>)
// CHECK: %[[R:.*]] = tensor.collapse_shape %[[GR]] {{\[}}[0], [1, 2], [3], [4]] : tensor<1x2x3x4x4xf32> into tensor<1x6x4x4xf32>
// CHECK: return %[[R]]
// LLVM-LABEL: llvm.func @conv2d_grouped(
func.func @conv2d_grouped(%x: tensor<1x4x8x8xf32>, %w: tensor<6x2x3x3xf32>) -> tensor<1x6x4x4xf32> {
  %0 = nn.conv %x, %w {dilations = array<i64: 1, 1>, group = 2 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x4x4xf32>
  return %0 : tensor<1x6x4x4xf32>
}

// -----

// One filter per channel: linalg.depthwise_conv_2d_nchw_chw.
// CHECK-LABEL: func.func @conv2d_depthwise(
// CHECK-SAME: %[[X:.*]]: tensor<2x3x6x6xf32>, %[[W:.*]]: tensor<3x1x3x3xf32>, %[[B:.*]]: tensor<3xf32>)
// CHECK: %[[PAD:.*]] = tensor.pad %[[X]]
// CHECK: %[[ACC:.*]] = linalg.broadcast ins(%[[B]]
// CHECK: %[[K:.*]] = tensor.collapse_shape %[[W]] {{\[}}[0], [1, 2], [3]] : tensor<3x1x3x3xf32> into tensor<3x3x3xf32>
// CHECK: linalg.depthwise_conv_2d_nchw_chw {{.*}} ins(%[[PAD]], %[[K]] : tensor<2x3x8x8xf32>, tensor<3x3x3xf32>) outs(%[[ACC]] : tensor<2x3x6x6xf32>)
// LLVM-LABEL: llvm.func @conv2d_depthwise(
func.func @conv2d_depthwise(%x: tensor<2x3x6x6xf32>, %w: tensor<3x1x3x3xf32>, %b: tensor<3xf32>) -> tensor<2x3x6x6xf32> {
  %0 = nn.conv %x, %w, %b {dilations = array<i64: 1, 1>, group = 3 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x3x6x6xf32>, tensor<3x1x3x3xf32>, tensor<3xf32>) -> tensor<2x3x6x6xf32>
  return %0 : tensor<2x3x6x6xf32>
}

// -----

// CHECK-LABEL: func.func @conv1d(
// CHECK: %[[PAD:.*]] = tensor.pad %{{.*}} low[0, 0, 1] high[0, 0, 1]
// CHECK: linalg.conv_1d_ncw_fcw {dilations = dense<1> : tensor<1xi64>, strides = dense<2> : tensor<1xi64>} ins(%[[PAD]], %{{.*}} : tensor<2x3x12xf32>, tensor<4x3x3xf32>)
// LLVM-LABEL: llvm.func @conv1d(
func.func @conv1d(%x: tensor<2x3x10xf32>, %w: tensor<4x3x3xf32>) -> tensor<2x4x5xf32> {
  %0 = nn.conv %x, %w {dilations = array<i64: 1>, group = 1 : i64, pads = array<i64: 1, 1>, strides = array<i64: 2>} : (tensor<2x3x10xf32>, tensor<4x3x3xf32>) -> tensor<2x4x5xf32>
  return %0 : tensor<2x4x5xf32>
}

// -----

// CHECK-LABEL: func.func @conv3d(
// CHECK: linalg.conv_3d_ncdhw_fcdhw {dilations = dense<1> : tensor<3xi64>, strides = dense<1> : tensor<3xi64>}
// LLVM-LABEL: llvm.func @conv3d(
func.func @conv3d(%x: tensor<1x2x4x4x4xf32>, %w: tensor<3x2x2x2x2xf32>) -> tensor<1x3x3x3x3xf32> {
  %0 = nn.conv %x, %w {dilations = array<i64: 1, 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0, 0, 0>, strides = array<i64: 1, 1, 1>} : (tensor<1x2x4x4x4xf32>, tensor<3x2x2x2x2xf32>) -> tensor<1x3x3x3x3xf32>
  return %0 : tensor<1x3x3x3x3xf32>
}

// -----

// No named op for grouped 1-D (or 3-D) convolution: a linalg.generic on the
// grouped layout, loops (n, g, m, o | c, k), input read at o * stride + k *
// dilation.
// CHECK-DAG: #[[$IN:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4, d3 + d5 * 2)>
// CHECK-DAG: #[[$W:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d1, d2, d4, d5)>
// CHECK-DAG: #[[$OUT:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @conv1d_grouped(
// CHECK: %[[GX:.*]] = tensor.expand_shape %{{.*}} {{\[}}[0], [1, 2], [3]] output_shape [1, 2, 2, 9]
// CHECK: %[[GW:.*]] = tensor.expand_shape %{{.*}} {{\[}}[0, 1], [2], [3]] output_shape [2, 2, 2, 3]
// CHECK: %[[GACC:.*]] = tensor.expand_shape
// CHECK: %[[GR:.*]] = linalg.generic {indexing_maps = [#[[$IN]], #[[$W]], #[[$OUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
// CHECK-SAME: ins(%[[GX]], %[[GW]] : tensor<1x2x2x9xf64>, tensor<2x2x2x3xf64>) outs(%[[GACC]] : tensor<1x2x2x5xf64>)
// CHECK: ^bb0(%[[I:.*]]: f64, %[[K:.*]]: f64, %[[O:.*]]: f64):
// CHECK: %[[P:.*]] = arith.mulf %[[I]], %[[K]]
// CHECK: arith.addf %[[O]], %[[P]]
// CHECK: tensor.collapse_shape %[[GR]] {{\[}}[0], [1, 2], [3]] : tensor<1x2x2x5xf64> into tensor<1x4x5xf64>
// LLVM-LABEL: llvm.func @conv1d_grouped(
func.func @conv1d_grouped(%x: tensor<1x4x9xf64>, %w: tensor<4x2x3xf64>) -> tensor<1x4x5xf64> {
  %0 = nn.conv %x, %w {dilations = array<i64: 2>, group = 2 : i64, pads = array<i64: 0, 0>, strides = array<i64: 1>} : (tensor<1x4x9xf64>, tensor<4x2x3xf64>) -> tensor<1x4x5xf64>
  return %0 : tensor<1x4x5xf64>
}

// -----

// nn.conv_backward_weight: padded input grouped [N, G, Cg, H, W], im2col
// gather into [G, Cg, KH, KW, N, OH, OW], the output gradient transposed to
// [G, Mg, N, OH, OW], then one contraction over (N, OH, OW) per group.
// CHECK-DAG: #[[IM2COL:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d0, d1, d5 * 2 + d2, d6 * 2 + d3)>
// CHECK-DAG: #[[DYTMAP:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d5, d6, d7)>
// CHECK-DAG: #[[COLMAP:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d2, d3, d4, d5, d6, d7)>
// CHECK-DAG: #[[DWMAP:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>
// CHECK-LABEL: func.func @conv_backward_weight(
// CHECK-SAME: %[[DY:.*]]: tensor<2x4x4x4xf32>, %[[X:.*]]: tensor<2x4x8x8xf32>)
// CHECK: %[[PAD:.*]] = tensor.pad %[[X]] low[0, 0, 1, 1] high[0, 0, 0, 0]
// CHECK: %[[XG:.*]] = tensor.expand_shape %[[PAD]] {{\[}}[0], [1, 2], [3], [4]] output_shape [2, 2, 2, 9, 9]
// CHECK: %[[COL:.*]] = linalg.generic {indexing_maps = [#[[IM2COL]], #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%[[XG]] : tensor<2x2x2x9x9xf32>) outs(%{{.*}} : tensor<2x2x3x3x2x4x4xf32>)
// CHECK: %[[DYG:.*]] = tensor.expand_shape %[[DY]]
// CHECK: %[[T:.*]] = linalg.transpose ins(%[[DYG]] : tensor<2x2x2x4x4xf32>) outs(%{{.*}} : tensor<2x2x2x4x4xf32>) permutation = [1, 2, 0, 3, 4]
// CHECK: %[[ZERO:.*]] = linalg.fill
// CHECK: %[[DW:.*]] = linalg.generic {indexing_maps = [#[[DYTMAP]], #[[COLMAP]], #[[DWMAP]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%[[T]], %[[COL]] : {{.*}}) outs(%[[ZERO]] : tensor<2x2x2x3x3xf32>)
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: %[[R:.*]] = tensor.collapse_shape %[[DW]] {{\[}}[0, 1], [2], [3], [4]] : tensor<2x2x2x3x3xf32> into tensor<4x2x3x3xf32>
// CHECK: return %[[R]]
// LLVM-LABEL: llvm.func @conv_backward_weight(
func.func @conv_backward_weight(%dy: tensor<2x4x4x4xf32>, %x: tensor<2x4x8x8xf32>) -> tensor<4x2x3x3xf32> {
  %0 = nn.conv_backward_weight %dy, %x {dilations = array<i64: 1, 1>, group = 2 : i64, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 0, 0>, strides = array<i64: 2, 2>} : (tensor<2x4x4x4xf32>, tensor<2x4x8x8xf32>) -> tensor<4x2x3x3xf32>
  return %0 : tensor<4x2x3x3xf32>
}

// -----

// nn.conv_backward_input: dcols[N, G, Cg, KH, KW, OH, OW] as a contraction
// over the filters, then col2im: per kernel offset, an add into the strided
// view (stride 2 along H) of the padded gradient, and the padding cropped.
// CHECK-DAG: #[[WMAP:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d7, d2, d3, d4)>
// CHECK-DAG: #[[DYMAP:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d7, d5, d6)>
// CHECK-DAG: #[[COLMAP:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4, d5, d6)>
// CHECK-LABEL: func.func @conv_backward_input(
// CHECK: %[[COL:.*]] = linalg.generic {indexing_maps = [#[[WMAP]], #[[DYMAP]], #[[COLMAP]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} {{.*}} outs(%{{.*}} : tensor<1x1x3x2x1x3x4xf32>)
// CHECK: %[[ACC:.*]] = linalg.fill {{.*}} -> tensor<1x1x3x7x4xf32>
// CHECK: %[[C0:.*]] = tensor.extract_slice %[[COL]][0, 0, 0, 0, 0, 0, 0] [1, 1, 3, 1, 1, 3, 4] [1, 1, 1, 1, 1, 1, 1] : tensor<1x1x3x2x1x3x4xf32> to tensor<1x1x3x3x4xf32>
// CHECK: %[[V0:.*]] = tensor.extract_slice %[[ACC]][0, 0, 0, 0, 0] [1, 1, 3, 3, 4] [1, 1, 1, 2, 1]
// CHECK: %[[S0:.*]] = linalg.generic {{.*}} ins(%[[C0]] : tensor<1x1x3x3x4xf32>) outs(%[[V0]] : tensor<1x1x3x3x4xf32>)
// CHECK: %[[ACC1:.*]] = tensor.insert_slice %[[S0]] into %[[ACC]][0, 0, 0, 0, 0] [1, 1, 3, 3, 4] [1, 1, 1, 2, 1]
// CHECK: %[[C1:.*]] = tensor.extract_slice %[[COL]][0, 0, 0, 1, 0, 0, 0]
// CHECK: %[[V1:.*]] = tensor.extract_slice %[[ACC1]][0, 0, 0, 1, 0] [1, 1, 3, 3, 4] [1, 1, 1, 2, 1]
// CHECK: %[[S1:.*]] = linalg.generic {{.*}} ins(%[[C1]] : {{.*}}) outs(%[[V1]] : {{.*}})
// CHECK: %[[ACC2:.*]] = tensor.insert_slice %[[S1]] into %[[ACC1]][0, 0, 0, 1, 0]
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %[[ACC2]] {{\[}}[0], [1, 2], [3], [4]] : tensor<1x1x3x7x4xf32> into tensor<1x3x7x4xf32>
// CHECK: %[[R:.*]] = tensor.extract_slice %[[FLAT]][0, 0, 1, 0] [1, 3, 6, 4] [1, 1, 1, 1]
// CHECK: return %[[R]]
// LLVM-LABEL: llvm.func @conv_backward_input(
func.func @conv_backward_input(%dy: tensor<1x4x3x4xf32>, %w: tensor<4x3x2x1xf32>) -> tensor<1x3x6x4xf32> {
  %0 = nn.conv_backward_input %dy, %w {dilations = array<i64: 1, 1>, group = 1 : i64, input_shape = array<i64: 1, 3, 6, 4>, pads = array<i64: 1, 0, 0, 0>, strides = array<i64: 2, 1>} : (tensor<1x4x3x4xf32>, tensor<4x3x2x1xf32>) -> tensor<1x3x6x4xf32>
  return %0 : tensor<1x3x6x4xf32>
}

// -----

// nn.conv_backward_input, 2-D, ungrouped, stride 1: a forward convolution
// of dY padded by d * (K - 1) - pads (ONNX pads [1, 0, 2, 0], dilation
// [2, 1], kernel 3x2: H 4 - 1 = 3 before and 4 - 2 = 2 after, W 1 - 0 = 1
// on both sides) with the kernel flipped and its channel and filter
// dimensions swapped. Only from 16 input channels on (fewer: the col2im
// lowering above, whose GEMM has C * K rows).
// CHECK-DAG: #[[FLIP:.*]] = affine_map<(d0, d1, d2, d3) -> (d1, d0, -d2 + 2, -d3 + 1)>
// CHECK-DAG: #[[ID4:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @conv_backward_input_stride1(
// CHECK-SAME: %[[DY:[^:]*]]: tensor<2x4x5x5xf32>, %[[W:[^:]*]]: tensor<4x16x3x2xf32>)
// CHECK: %[[WF:.*]] = linalg.generic {indexing_maps = [#[[FLIP]], #[[ID4]]], {{.*}} ins(%[[W]] : tensor<4x16x3x2xf32>) outs(%{{.*}} : tensor<16x4x3x2xf32>)
// CHECK: %[[P:.*]] = tensor.pad %[[DY]] low[0, 0, 3, 1] high[0, 0, 2, 1]
// CHECK: %[[R:.*]] = linalg.conv_2d_nchw_fchw {dilations = dense<[2, 1]> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%[[P]], %[[WF]] : tensor<2x4x10x7xf32>, tensor<16x4x3x2xf32>)
// CHECK-SAME: -> tensor<2x16x6x6xf32>
// CHECK: return %[[R]]
// LLVM-LABEL: llvm.func @conv_backward_input_stride1(
func.func @conv_backward_input_stride1(%dy: tensor<2x4x5x5xf32>, %w: tensor<4x16x3x2xf32>) -> tensor<2x16x6x6xf32> {
  %0 = nn.conv_backward_input %dy, %w {dilations = array<i64: 2, 1>, group = 1 : i64, input_shape = array<i64: 2, 16, 6, 6>, pads = array<i64: 1, 0, 2, 0>, strides = array<i64: 1, 1>} : (tensor<2x4x5x5xf32>, tensor<4x16x3x2xf32>) -> tensor<2x16x6x6xf32>
  return %0 : tensor<2x16x6x6xf32>
}
