// RUN: pipedream-opt %s --nn-mark-trainable | FileCheck %s
// RUN: pipedream-opt %s --nn-mark-trainable="train=causal" | FileCheck %s --check-prefix=OVR
// RUN: pipedream-opt %s --nn-mark-trainable="print=true" | FileCheck %s --check-prefix=PRINT

// Additive attention masks as torch's dynamo exporter leaves them in float
// initializers (0 where attended, finfo.min where masked, here also -inf and
// f16's lowest): differentiable through nn.add, but never parameters. A
// bias added the same way, with ordinary values, stays trainable; --train
// overrides the rule.
// CHECK-LABEL: func.func @main(
// CHECK-SAME: {nn.name = "bias", nn.param
// CHECK-SAME: {nn.frozen, nn.name = "causal", nn.param
// CHECK-SAME: {nn.frozen, nn.name = "causal_resource", nn.param
// CHECK-SAME: {nn.frozen, nn.name = "ninf", nn.param
// CHECK-SAME: {nn.frozen, nn.name = "half_mask", nn.param
// OVR-LABEL: func.func @main(
// OVR-SAME: {nn.name = "causal", nn.param
// OVR-SAME: {nn.frozen, nn.name = "causal_resource", nn.param
// PRINT: trainable: 1 tensors, 4 elements
// PRINT-NEXT:   bias{{ +}}parameter
// PRINT-NEXT: frozen:    4 tensors, 16 elements
// PRINT-NEXT:   causal{{ +}}mask (infinite or extreme values)
// PRINT-NEXT:   causal_resource{{ +}}mask (infinite or extreme values)
// PRINT-NEXT:   ninf{{ +}}mask (infinite or extreme values)
// PRINT-NEXT:   half_mask{{ +}}mask (infinite or extreme values)
func.func @main(%x: tensor<2x2xf32> {nn.name = "x"},
                %bias: tensor<2x2xf32> {nn.name = "bias", nn.param = dense<[[0.1, -0.2], [0.3, 0.0]]> : tensor<2x2xf32>},
                %causal: tensor<2x2xf32> {nn.name = "causal", nn.param = dense<[[0.0, -3.40282347E+38], [0.0, 0.0]]> : tensor<2x2xf32>},
                %causal_r: tensor<2x2xf32> {nn.name = "causal_resource", nn.param = dense_resource<causal_blob> : tensor<2x2xf32>},
                %ninf: tensor<2x2xf32> {nn.name = "ninf", nn.param = dense<[[0.0, 0xFF800000], [0.0, 0.0]]> : tensor<2x2xf32>},
                %xh: tensor<2x2xf16> {nn.name = "xh"},
                %half: tensor<2x2xf16> {nn.name = "half_mask", nn.param = dense<[[0.0, -65504.0], [0.0, 0.0]]> : tensor<2x2xf16>})
    -> (tensor<2x2xf32> {nn.name = "y"}) {
  %a = nn.add %x, %bias : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %b = nn.add %a, %causal : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %c = nn.add %b, %causal_r : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %d = nn.add %c, %ninf : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %h = nn.add %xh, %half : (tensor<2x2xf16>, tensor<2x2xf16>) -> tensor<2x2xf16>
  %hf = nn.cast %h {to = f32} : (tensor<2x2xf16>) -> tensor<2x2xf32>
  %y = nn.add %d, %hf : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  return %y : tensor<2x2xf32>
}

{-#
  dialect_resources: {
    builtin: {
      causal_blob: "0x0400000000000000FFFF7FFF0000000000000000"
    }
  }
#-}
