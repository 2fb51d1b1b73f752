// RUN: pipedream-opt %s --nn-mark-trainable="freeze=l[0-9]\.weight" | FileCheck %s --check-prefix=REGEX
// RUN: pipedream-opt %s --nn-mark-trainable="print=true" | FileCheck %s --check-prefix=PRINT
// RUN: not pipedream-opt %s --nn-mark-trainable="train=bn.running_mean" 2>&1 | FileCheck %s --check-prefix=STAT

// Regular expressions match whole names; running statistics are neither
// trained nor frozen (the step updates them).
// REGEX-LABEL: func.func @main(
// REGEX-SAME: {nn.frozen, nn.name = "l1.weight", nn.param
// REGEX-SAME: {nn.name = "l1.weight.extra", nn.param
// REGEX-SAME: {nn.name = "bn.running_mean", nn.param
// PRINT: trainable: 4 tensors, 40 elements
// PRINT: frozen:    0 tensors, 0 elements
// PRINT-NEXT: running statistics: 2 tensors
// PRINT-NEXT:   bn.running_mean
// PRINT-NEXT:   bn.running_var
func.func @main(%x: tensor<8x4xf32> {nn.name = "x"},
                %w: tensor<4x4xf32> {nn.name = "l1.weight", nn.param = dense<0.5> : tensor<4x4xf32>},
                %w2: tensor<4x4xf32> {nn.name = "l1.weight.extra", nn.param = dense<0.5> : tensor<4x4xf32>},
                %s: tensor<4xf32> {nn.name = "bn.weight", nn.param = dense<1.0> : tensor<4xf32>},
                %b: tensor<4xf32> {nn.name = "bn.bias", nn.param = dense<0.0> : tensor<4xf32>},
                %m: tensor<4xf32> {nn.name = "bn.running_mean", nn.param = dense<0.0> : tensor<4xf32>},
                %v: tensor<4xf32> {nn.name = "bn.running_var", nn.param = dense<1.0> : tensor<4xf32>})
    -> (tensor<8x4xf32> {nn.name = "y"}) {
  %0 = nn.matmul %x, %w : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %1 = nn.matmul %0, %w2 : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %2 = nn.batch_normalization %1, %s, %b, %m, %v {epsilon = 1.0e-5 : f64, momentum = 0.9 : f64}
      : (tensor<8x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<8x4xf32>
  return %2 : tensor<8x4xf32>
}

// STAT: weight 'bn.running_mean' is a BatchNormalization running statistic (updated by the step, never trained): --train/--freeze do not apply to it
