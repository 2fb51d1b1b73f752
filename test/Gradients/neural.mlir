// RUN: %python %S/gradcheck.py %s --bin %pipedream_bin | FileCheck %s
// Finite-difference checks of the derivative rules of convolution, pooling
// and batch normalization (NNGradientsNeural.cpp) and of the lowerings of
// the ops they emit (nn.conv_backward_input/weight, nn.max_pool_grad,
// nn.average_pool_grad, nn.batch_norm_train), in f64.

// CHECK-NOT: FAIL

// Stride, asymmetric padding, dilation and bias; the weights are parameters.
// No window reads the last input row (padded height 8, windows of 3 at
// stride 2 end at row 6): its gradient is zero.
// CHECK: PASS @conv2d_strided_dilated
func.func @conv2d_strided_dilated(
    %x: tensor<2x3x7x6xf64>,
    %w: tensor<4x3x3x2xf64> {nn.name = "conv2d_strided_dilated.w", nn.param = dense<0.0> : tensor<4x3x3x2xf64>},
    %b: tensor<4xf64> {nn.name = "conv2d_strided_dilated.b", nn.param = dense<0.0> : tensor<4xf64>})
    -> tensor<2x4x3x5xf64> {
  %0 = nn.conv %x, %w, %b {dilations = array<i64: 1, 2>, group = 1 : i64,
                           pads = array<i64: 1, 0, 0, 1>, strides = array<i64: 2, 1>}
      : (tensor<2x3x7x6xf64>, tensor<4x3x3x2xf64>, tensor<4xf64>) -> tensor<2x4x3x5xf64>
  return %0 : tensor<2x4x3x5xf64>
}

// CHECK: PASS @conv2d_grouped
func.func @conv2d_grouped(%x: tensor<1x4x6x6xf64>, %w: tensor<6x2x3x3xf64>)
    -> tensor<1x6x6x6xf64> {
  %0 = nn.conv %x, %w {dilations = array<i64: 1, 1>, group = 2 : i64,
                       pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}
      : (tensor<1x4x6x6xf64>, tensor<6x2x3x3xf64>) -> tensor<1x6x6x6xf64>
  return %0 : tensor<1x6x6x6xf64>
}

// CHECK: PASS @conv2d_depthwise
func.func @conv2d_depthwise(%x: tensor<2x3x5x5xf64>, %w: tensor<3x1x3x3xf64>,
                            %b: tensor<3xf64>) -> tensor<2x3x3x3xf64> {
  %0 = nn.conv %x, %w, %b {dilations = array<i64: 1, 1>, group = 3 : i64,
                           pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>}
      : (tensor<2x3x5x5xf64>, tensor<3x1x3x3xf64>, tensor<3xf64>) -> tensor<2x3x3x3xf64>
  return %0 : tensor<2x3x3x3xf64>
}

// CHECK: PASS @conv1d
func.func @conv1d(%x: tensor<2x3x9xf64>, %w: tensor<4x3x3xf64>, %b: tensor<4xf64>)
    -> tensor<2x4x4xf64> {
  %0 = nn.conv %x, %w, %b {dilations = array<i64: 2>, group = 1 : i64,
                           pads = array<i64: 1, 2>, strides = array<i64: 2>}
      : (tensor<2x3x9xf64>, tensor<4x3x3xf64>, tensor<4xf64>) -> tensor<2x4x4xf64>
  return %0 : tensor<2x4x4xf64>
}

// CHECK: PASS @conv3d
func.func @conv3d(%x: tensor<1x2x4x4x3xf64>, %w: tensor<2x2x2x2x2xf64>)
    -> tensor<1x2x3x2x2xf64> {
  %0 = nn.conv %x, %w {dilations = array<i64: 1, 1, 1>, group = 1 : i64,
                       pads = array<i64: 0, 0, 0, 0, 0, 0>, strides = array<i64: 1, 2, 1>}
      : (tensor<1x2x4x4x3xf64>, tensor<2x2x2x2x2xf64>) -> tensor<1x2x3x2x2xf64>
  return %0 : tensor<1x2x3x2x2xf64>
}

// Overlapping windows (stride < kernel) with padding.
// CHECK: PASS @max_pool_padded
func.func @max_pool_padded(%x: tensor<2x2x6x6xf64>) -> tensor<2x2x3x3xf64> {
  %0 = nn.max_pool %x {ceil_mode = false, dilations = array<i64: 1, 1>,
                       kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>,
                       strides = array<i64: 2, 2>}
      : (tensor<2x2x6x6xf64>) -> tensor<2x2x3x3xf64>
  return %0 : tensor<2x2x3x3xf64>
}

// CHECK: PASS @max_pool_ceil_dilated
func.func @max_pool_ceil_dilated(%x: tensor<1x2x7x8xf64>) -> tensor<1x2x3x4xf64> {
  %0 = nn.max_pool %x {ceil_mode = true, dilations = array<i64: 2, 1>,
                       kernel_shape = array<i64: 2, 3>, pads = array<i64: 0, 1, 0, 0>,
                       strides = array<i64: 2, 2>}
      : (tensor<1x2x7x8xf64>) -> tensor<1x2x3x4xf64>
  return %0 : tensor<1x2x3x4xf64>
}

// CHECK: PASS @max_pool_1d
func.func @max_pool_1d(%x: tensor<2x3x8xf64>) -> tensor<2x3x3xf64> {
  %0 = nn.max_pool %x {ceil_mode = true, dilations = array<i64: 1>,
                       kernel_shape = array<i64: 3>, pads = array<i64: 1, 1>,
                       strides = array<i64: 3>}
      : (tensor<2x3x8xf64>) -> tensor<2x3x3xf64>
  return %0 : tensor<2x3x3xf64>
}

// CHECK: PASS @average_pool_exclude_pad
func.func @average_pool_exclude_pad(%x: tensor<1x2x5x5xf64>) -> tensor<1x2x3x3xf64> {
  %0 = nn.average_pool %x {ceil_mode = false, count_include_pad = false,
                           kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>,
                           strides = array<i64: 2, 2>}
      : (tensor<1x2x5x5xf64>) -> tensor<1x2x3x3xf64>
  return %0 : tensor<1x2x3x3xf64>
}

// CHECK: PASS @average_pool_include_pad_ceil
func.func @average_pool_include_pad_ceil(%x: tensor<2x1x6x7xf64>) -> tensor<2x1x4x4xf64> {
  %0 = nn.average_pool %x {ceil_mode = true, count_include_pad = true,
                           kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>,
                           strides = array<i64: 2, 2>}
      : (tensor<2x1x6x7xf64>) -> tensor<2x1x4x4xf64>
  return %0 : tensor<2x1x4x4xf64>
}

// CHECK: PASS @average_pool_1d_overlap
func.func @average_pool_1d_overlap(%x: tensor<2x2x7xf64>) -> tensor<2x2x6xf64> {
  %0 = nn.average_pool %x {ceil_mode = false, count_include_pad = false,
                           kernel_shape = array<i64: 3>, pads = array<i64: 1, 0>,
                           strides = array<i64: 1>}
      : (tensor<2x2x7xf64>) -> tensor<2x2x6xf64>
  return %0 : tensor<2x2x6xf64>
}

// CHECK: PASS @global_average_pool
func.func @global_average_pool(%x: tensor<2x3x4x5xf64>) -> tensor<2x3x1x1xf64> {
  %0 = nn.global_average_pool %x : (tensor<2x3x4x5xf64>) -> tensor<2x3x1x1xf64>
  return %0 : tensor<2x3x1x1xf64>
}

// Inference form: every operand (the running statistics too) is
// differentiable.
// CHECK: PASS @batch_normalization
func.func @batch_normalization(%x: tensor<2x3x4x4xf64>, %s: tensor<3xf64>,
                               %b: tensor<3xf64>, %m: tensor<3xf64>,
                               %v: tensor<3xf64> {gradcheck.positive})
    -> tensor<2x3x4x4xf64> {
  %0 = nn.batch_normalization %x, %s, %b, %m, %v {epsilon = 1.0e-03 : f64}
      : (tensor<2x3x4x4xf64>, tensor<3xf64>, tensor<3xf64>, tensor<3xf64>,
         tensor<3xf64>) -> tensor<2x3x4x4xf64>
  return %0 : tensor<2x3x4x4xf64>
}

// Training form: gradients of x, scale and bias through the batch
// statistics; the running statistics have none.
// CHECK: PASS @batch_norm_train
func.func @batch_norm_train(
    %x: tensor<3x2x4x5xf64>,
    %s: tensor<2xf64> {nn.name = "batch_norm_train.s", nn.param = dense<1.0> : tensor<2xf64>},
    %b: tensor<2xf64> {nn.name = "batch_norm_train.b", nn.param = dense<0.0> : tensor<2xf64>},
    %m: tensor<2xf64> {nn.no_grad}, %v: tensor<2xf64> {nn.no_grad, gradcheck.positive})
    -> tensor<3x2x4x5xf64> {
  %0:3 = nn.batch_norm_train %x, %s, %b, %m, %v {epsilon = 1.0e-05 : f64, momentum = 0.9 : f64}
      : (tensor<3x2x4x5xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>)
      -> (tensor<3x2x4x5xf64>, tensor<2xf64>, tensor<2xf64>)
  return %0#0 : tensor<3x2x4x5xf64>
}

// CHECK: PASS @batch_norm_train_2d
func.func @batch_norm_train_2d(%x: tensor<6x4xf64>, %s: tensor<4xf64>, %b: tensor<4xf64>,
                               %m: tensor<4xf64> {nn.no_grad},
                               %v: tensor<4xf64> {nn.no_grad, gradcheck.positive})
    -> tensor<6x4xf64> {
  %0:3 = nn.batch_norm_train %x, %s, %b, %m, %v {epsilon = 1.0e-05 : f64, momentum = 0.9 : f64}
      : (tensor<6x4xf64>, tensor<4xf64>, tensor<4xf64>, tensor<4xf64>, tensor<4xf64>)
      -> (tensor<6x4xf64>, tensor<4xf64>, tensor<4xf64>)
  return %0#0 : tensor<6x4xf64>
}

// A CNN block: convolution, batch statistics, pooling.
// CHECK: PASS @conv_bn_pool
func.func @conv_bn_pool(
    %x: tensor<2x2x6x6xf64>,
    %w: tensor<3x2x3x3xf64> {nn.name = "conv_bn_pool.w", nn.param = dense<0.0> : tensor<3x2x3x3xf64>},
    %s: tensor<3xf64> {nn.name = "conv_bn_pool.s", nn.param = dense<1.0> : tensor<3xf64>},
    %b: tensor<3xf64> {nn.name = "conv_bn_pool.b", nn.param = dense<0.0> : tensor<3xf64>},
    %m: tensor<3xf64> {nn.no_grad}, %v: tensor<3xf64> {nn.no_grad, gradcheck.positive})
    -> tensor<2x3x1x1xf64> {
  %0 = nn.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64,
                       pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}
      : (tensor<2x2x6x6xf64>, tensor<3x2x3x3xf64>) -> tensor<2x3x6x6xf64>
  %1:3 = nn.batch_norm_train %0, %s, %b, %m, %v {epsilon = 1.0e-05 : f64, momentum = 0.9 : f64}
      : (tensor<2x3x6x6xf64>, tensor<3xf64>, tensor<3xf64>, tensor<3xf64>, tensor<3xf64>)
      -> (tensor<2x3x6x6xf64>, tensor<3xf64>, tensor<3xf64>)
  %2 = nn.max_pool %1#0 {ceil_mode = false, dilations = array<i64: 1, 1>,
                         kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>,
                         strides = array<i64: 2, 2>}
      : (tensor<2x3x6x6xf64>) -> tensor<2x3x3x3xf64>
  %3 = nn.global_average_pool %2 : (tensor<2x3x3x3xf64>) -> tensor<2x3x1x1xf64>
  return %3 : tensor<2x3x1x1xf64>
}

// A 1x1 convolution on a global average pool's 1x1 result, as in the
// squeeze-and-excitation blocks of EfficientNet and MobileNetV3. The
// convolution's input gradient is a sum over unit dimensions, read through
// the pool's (or the mean's) broadcast back over the pixels; an elementwise
// fusion once made the k-th pixel's gradient (k + 1) times too large
// (FuseElementwiseOps.cpp). Each of these failed so.
// CHECK: PASS @pool_conv1x1
func.func @pool_conv1x1(
    %x: tensor<2x4x3x3xf64>,
    %w: tensor<5x4x1x1xf64> {nn.name = "pool_conv1x1.w", nn.param = dense<0.0> : tensor<5x4x1x1xf64>},
    %b: tensor<5xf64> {nn.name = "pool_conv1x1.b", nn.param = dense<0.0> : tensor<5xf64>})
    -> tensor<2x5x1x1xf64> {
  %0 = nn.global_average_pool %x : (tensor<2x4x3x3xf64>) -> tensor<2x4x1x1xf64>
  %1 = nn.conv %0, %w, %b {dilations = array<i64: 1, 1>, group = 1 : i64,
                           pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
      : (tensor<2x4x1x1xf64>, tensor<5x4x1x1xf64>, tensor<5xf64>) -> tensor<2x5x1x1xf64>
  return %1 : tensor<2x5x1x1xf64>
}

// CHECK: PASS @mean_conv1x1
func.func @mean_conv1x1(
    %x: tensor<2x4x3x3xf64>,
    %w: tensor<5x4x1x1xf64> {nn.name = "mean_conv1x1.w", nn.param = dense<0.0> : tensor<5x4x1x1xf64>})
    -> tensor<2x5x1x1xf64> {
  %0 = nn.reduce_mean %x {axes = array<i64: 2, 3>} : (tensor<2x4x3x3xf64>) -> tensor<2x4x1x1xf64>
  %1 = nn.conv %0, %w {dilations = array<i64: 1, 1>, group = 1 : i64,
                       pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
      : (tensor<2x4x1x1xf64>, tensor<5x4x1x1xf64>) -> tensor<2x5x1x1xf64>
  return %1 : tensor<2x5x1x1xf64>
}

// The pooled, convolved value scaling the input (no sigmoid).
// CHECK: PASS @pool_conv1x1_scale
func.func @pool_conv1x1_scale(
    %x: tensor<2x4x3x3xf64>,
    %w: tensor<4x4x1x1xf64> {nn.name = "pool_conv1x1_scale.w", nn.param = dense<0.0> : tensor<4x4x1x1xf64>})
    -> tensor<2x4x3x3xf64> {
  %0 = nn.global_average_pool %x : (tensor<2x4x3x3xf64>) -> tensor<2x4x1x1xf64>
  %1 = nn.conv %0, %w {dilations = array<i64: 1, 1>, group = 1 : i64,
                       pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
      : (tensor<2x4x1x1xf64>, tensor<4x4x1x1xf64>) -> tensor<2x4x1x1xf64>
  %2 = nn.mul %x, %1 : (tensor<2x4x3x3xf64>, tensor<2x4x1x1xf64>) -> tensor<2x4x3x3xf64>
  return %2 : tensor<2x4x3x3xf64>
}
