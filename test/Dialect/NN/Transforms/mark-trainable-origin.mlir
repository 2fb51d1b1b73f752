// RUN: pipedream-opt %s --nn-mark-trainable="print=true" | FileCheck %s
// RUN: pipedream-opt %s --nn-mark-trainable="train=mask" | FileCheck %s --check-prefix=TRAIN

// The exporter's record (`nn.origin`, from torch's export signature and
// folded_from) decides before the structural rules: a torch parameter is
// trained even when it is a scalar (a learnable temperature), a fold of one
// parameter (its transpose) is trained, and an all-zero additive mask or a
// rotary table the exporter computed is frozen although it reaches the
// loss through ordinary float ops. --train still overrides.
// CHECK: trainable: 3 tensors, 33 elements
// CHECK-NEXT:   w torch parameter
// CHECK-NEXT:   wt folded by the exporter from torch parameter 'head.weight'
// CHECK-NEXT:   scale torch parameter
// CHECK-NEXT: frozen:    3 tensors, 32 elements
// CHECK-NEXT:   mask constant made by the exporter (not a torch parameter)
// CHECK-NEXT:   cos constant folded by the exporter from torch buffer(s) 'rotary.inv_freq'
// CHECK-NEXT:   inv_freq torch buffer (export signature)
// TRAIN-LABEL: func.func @main(
// TRAIN-SAME: {nn.name = "mask", nn.origin
func.func @main(%x: tensor<2x4xf32> {nn.name = "x"},
                %w: tensor<4x4xf32> {nn.name = "w", nn.origin = {kind = "parameter", sources = ["w"]}, nn.param = dense<0.5> : tensor<4x4xf32>},
                %wt: tensor<4x4xf32> {nn.name = "wt", nn.origin = {kind = "folded", sources = ["head.weight"]}, nn.param = dense<0.25> : tensor<4x4xf32>},
                %scale: tensor<f32> {nn.name = "scale", nn.origin = {kind = "parameter", sources = ["scale"]}, nn.param = dense<2.0> : tensor<f32>},
                %mask: tensor<2x4xf32> {nn.name = "mask", nn.origin = {kind = "constant", sources = []}, nn.param = dense<0.0> : tensor<2x4xf32>},
                %cos: tensor<2x4xf32> {nn.name = "cos", nn.origin = {kind = "constant", sources = ["rotary.inv_freq"]}, nn.param = dense<0.5> : tensor<2x4xf32>},
                %inv: tensor<4x4xf32> {nn.name = "inv_freq", nn.origin = {kind = "buffer", sources = ["rotary.inv_freq"]}, nn.param = dense<0.5> : tensor<4x4xf32>})
    -> (tensor<2x4xf32> {nn.name = "y"}) {
  %0 = nn.matmul %x, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %1 = nn.add %0, %mask : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %2 = nn.mul %1, %cos : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %3 = nn.matmul %2, %wt : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %4 = nn.mul %3, %scale : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %5 = nn.matmul %4, %inv : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  return %5 : tensor<2x4xf32>
}
