// RUN: pipedream-opt %s --nn-mark-trainable | FileCheck %s
// RUN: pipedream-opt %s --nn-mark-trainable="freeze=cos,sin train=eps" | FileCheck %s --check-prefix=OVR
// RUN: pipedream-opt %s --nn-mark-trainable="print=true" | FileCheck %s --check-prefix=PRINT

// The constants a torch export or onnxscript's optimizer leaves as float
// initializers: an RMSNorm's exponent and eps (rank 0), a float mask only
// compared (its gradient cannot flow through nn.equal's i1 result), a
// rotary-style cos/sin table (differentiable through nn.mul: trainable by
// the rule, frozen with --freeze), and the real parameters.
// CHECK-LABEL: func.func @main(
// CHECK-SAME: %{{[^:]*}}: tensor<2x4xf32> {nn.name = "x"}
// CHECK-SAME: {nn.name = "w", nn.param
// CHECK-NOT: nn.frozen
// CHECK-SAME: {nn.frozen, nn.name = "two", nn.param
// CHECK-SAME: {nn.frozen, nn.name = "eps", nn.param
// CHECK-SAME: {nn.frozen, nn.name = "mask", nn.param
// CHECK-SAME: {nn.name = "cos", nn.param
// CHECK-SAME: {nn.name = "sin", nn.param
// CHECK-SAME: {nn.frozen, nn.name = "aux_scale", nn.param
// OVR-LABEL: func.func @main(
// OVR-SAME: {nn.name = "w", nn.param
// OVR-SAME: {nn.frozen, nn.name = "two", nn.param
// OVR-SAME: {nn.name = "eps", nn.param
// OVR-SAME: {nn.frozen, nn.name = "mask", nn.param
// OVR-SAME: {nn.frozen, nn.name = "cos", nn.param
// OVR-SAME: {nn.frozen, nn.name = "sin", nn.param
// PRINT: trainable: 3 tensors, 32 elements
// PRINT-NEXT:   w{{ +}}parameter
// PRINT-NEXT:   cos{{ +}}parameter
// PRINT-NEXT:   sin{{ +}}parameter
// PRINT-NEXT: frozen:    4 tensors, 11 elements
// PRINT-NEXT:   two{{ +}}scalar constant
// PRINT-NEXT:   eps{{ +}}scalar constant
// PRINT-NEXT:   mask{{ +}}no differentiable path to the loss
// PRINT-NEXT:   aux_scale{{ +}}no differentiable path to the loss
func.func @main(%x: tensor<2x4xf32> {nn.name = "x"},
                %w: tensor<4x4xf32> {nn.name = "w", nn.param = dense<0.5> : tensor<4x4xf32>},
                %two: tensor<f32> {nn.name = "two", nn.param = dense<2.0> : tensor<f32>},
                %eps: tensor<f32> {nn.name = "eps", nn.param = dense<1.0e-6> : tensor<f32>},
                %mask: tensor<2x4xf32> {nn.name = "mask", nn.param = dense<1.0> : tensor<2x4xf32>},
                %cos: tensor<2x4xf32> {nn.name = "cos", nn.param = dense<1.0> : tensor<2x4xf32>},
                %sin: tensor<2x4xf32> {nn.name = "sin", nn.param = dense<0.0> : tensor<2x4xf32>},
                %scale: tensor<1xf32> {nn.name = "aux_scale", nn.param = dense<3.0> : tensor<1xf32>})
    -> (tensor<2x4xf32> {nn.name = "y"}, tensor<2x4xf32> {nn.name = "aux"}) {
  %h = nn.matmul %x, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  // RMSNorm: h / sqrt(mean(h^2) + eps)
  %sq = nn.pow %h, %two : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %ms = nn.reduce_mean %sq {axes = array<i64: 1>, keepdims = true} : (tensor<2x4xf32>) -> tensor<2x1xf32>
  %var = nn.add %ms, %eps : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %rms = nn.sqrt %var : tensor<2x1xf32>
  %n = nn.div %h, %rms : (tensor<2x4xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  // Rotary-style: n * cos + n * sin.
  %rc = nn.mul %n, %cos : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %rs = nn.mul %n, %sin : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %r = nn.add %rc, %rs : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  // where(mask == 0, -1e4, r)
  %zero = nn.constant dense<0.0> : tensor<f32>
  %ninf = nn.constant dense<-1.0e4> : tensor<f32>
  %c = nn.equal %mask, %zero : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xi1>
  %y = nn.where %c, %ninf, %r : (tensor<2x4xi1>, tensor<f32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  // A second output is not trained: its weight does not reach the loss.
  %aux = nn.mul %x, %scale : (tensor<2x4xf32>, tensor<1xf32>) -> tensor<2x4xf32>
  return %y, %aux : tensor<2x4xf32>, tensor<2x4xf32>
}
