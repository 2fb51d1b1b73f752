// nn-build-training evaluate=true (docs/Training.md "Evaluation"): also
// @evaluate, one micro-batch's loss through the forward as imported (eval
// mode: nn.dropout as it is, which lowers to the identity; BatchNorm with
// the running statistics, read as frozen weights the step updates), its
// weights bound by name to the step's, updating nothing.
// RUN: pipedream-opt %s --nn-build-training="loss=cross-entropy optimizer=sgd evaluate=true" | FileCheck %s
// RUN: pipedream-opt %s --nn-build-training="loss=cross-entropy optimizer=sgd" | FileCheck %s --check-prefix=NONE

func.func @main(%x: tensor<4x3x2x2xf32> {nn.name = "x"},
                %w: tensor<3xf32> {nn.name = "w", nn.param = dense<1.0> : tensor<3xf32>},
                %b: tensor<3xf32> {nn.name = "b", nn.param = dense<0.0> : tensor<3xf32>},
                %mean: tensor<3xf32> {nn.name = "mean", nn.param = dense<0.5> : tensor<3xf32>},
                %var: tensor<3xf32> {nn.name = "var", nn.param = dense<2.0> : tensor<3xf32>}) -> tensor<4x12xf32> {
  %0 = nn.batch_normalization %x, %w, %b, %mean, %var {epsilon = 1.0e-05 : f64, momentum = 0.9 : f64} : (tensor<4x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<4x3x2x2xf32>
  %1 = nn.dropout %0 {ratio = 0.5 : f64} : tensor<4x3x2x2xf32>
  %2 = nn.reshape %1 {shape = array<i64: 4, 12>} : (tensor<4x3x2x2xf32>) -> tensor<4x12xf32>
  return %2 : tensor<4x12xf32>
}

// The step trains in training mode (batch statistics, seeded masks).
// CHECK-LABEL: func.func @train_microbatch(
// CHECK: nn.batch_norm_train
// CHECK: nn.bernoulli
// CHECK-LABEL: func.func @evaluate(
// CHECK-SAME: %[[X:[^:]*]]: tensor<4x3x2x2xf32> {nn.name = "x", nn.role = "input"}
// CHECK-SAME: %[[W:[^:]*]]: tensor<3xf32> {nn.name = "w", nn.param = dense<1.000000e+00> : tensor<3xf32>, nn.role = "weight"}
// CHECK-SAME: %[[B:[^:]*]]: tensor<3xf32> {nn.name = "b", nn.param = dense<0.000000e+00> : tensor<3xf32>, nn.role = "weight"}
// CHECK-SAME: %[[M:[^:]*]]: tensor<3xf32> {nn.frozen, nn.name = "mean", nn.param = dense<5.000000e-01> : tensor<3xf32>, nn.role = "weight"}
// CHECK-SAME: %[[V:[^:]*]]: tensor<3xf32> {nn.frozen, nn.name = "var", nn.param = dense<2.000000e+00> : tensor<3xf32>, nn.role = "weight"}
// CHECK-SAME: %[[L:[^:]*]]: tensor<4xi64> {nn.name = "labels", nn.role = "input"}
// CHECK-SAME: -> (tensor<f32> {nn.name = "loss"})
// CHECK-NOT: nn.batch_norm_train
// CHECK-NOT: nn.bernoulli
// CHECK: %[[N:.*]] = nn.batch_normalization %[[X]], %[[W]], %[[B]], %[[M]], %[[V]]
// CHECK: %[[D:.*]] = nn.dropout %[[N]]
// CHECK: %[[R:.*]] = nn.reshape %[[D]]
// CHECK: nn.log_softmax %[[R]]
// CHECK: nn.one_hot %[[L]]
// CHECK: %[[LOSS:.*]] = nn.neg
// CHECK: return %[[LOSS]] : tensor<f32>
// CHECK-LABEL: func.func @update(

// NONE-NOT: func.func @evaluate
