// RUN: pipedream-opt %s --nn-build-training="loss=cross-entropy microbatches=4 optimizer=sgd lr=0.5" | FileCheck %s --check-prefix=SGD
// RUN: pipedream-opt %s --nn-build-training="loss=mse optimizer=momentum momentum=0.8 weight-decay=0.01" | FileCheck %s --check-prefix=MOM
// RUN: pipedream-opt %s --nn-build-training="loss=cross-entropy optimizer=adam lr=0.001" | FileCheck %s --check-prefix=ADAM
// RUN: pipedream-opt %s --nn-build-training="loss=cross-entropy microbatches=1" | FileCheck %s --check-prefix=ONE

// A linear classifier with a BatchNorm whose running statistics are weights
// that are updated, not trained.
func.func @main(%x: tensor<8x4xf32> {nn.name = "x"},
                %w: tensor<4x3xf32> {nn.name = "w", nn.param = dense<0.5> : tensor<4x3xf32>},
                %s: tensor<3xf32> {nn.name = "bn.weight", nn.param = dense<1.0> : tensor<3xf32>},
                %b: tensor<3xf32> {nn.name = "bn.bias", nn.param = dense<0.0> : tensor<3xf32>},
                %m: tensor<3xf32> {nn.name = "bn.running_mean", nn.param = dense<0.0> : tensor<3xf32>},
                %v: tensor<3xf32> {nn.name = "bn.running_var", nn.param = dense<1.0> : tensor<3xf32>})
    -> (tensor<8x3xf32> {nn.name = "y"}) {
  %0 = nn.matmul %x, %w : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
  %1 = nn.batch_normalization %0, %s, %b, %m, %v {epsilon = 1.0e-5 : f64, momentum = 0.9 : f64}
      : (tensor<8x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<8x3xf32>
  return %1 : tensor<8x3xf32>
}

// SGD-NOT: func.func @main
// SGD-LABEL: func.func @train_microbatch(
// SGD-SAME: {nn.name = "x", nn.role = "input"}
// SGD-SAME: {nn.name = "w", nn.param = {{[^}]*}}, nn.role = "weight"}
// SGD-SAME: {nn.frozen, nn.name = "bn.running_mean", nn.param = {{[^}]*}}, nn.role = "weight"}
// SGD-SAME: %[[LABELS:[^:]*]]: tensor<8xi64> {nn.name = "labels", nn.role = "input"}
// SGD-SAME: %[[GW:[^:]*]]: tensor<4x3xf32> {nn.name = "grad:w", nn.role = "grad"}
// SGD-SAME: {nn.name = "grad:bn.weight", nn.role = "grad"}
// SGD-SAME: {nn.name = "grad:bn.bias", nn.role = "grad"}
// SGD-NOT: grad:bn.running
// SGD-SAME: -> (tensor<f32> {nn.name = "loss"},
// SGD-SAME: tensor<4x3xf32> {nn.name = "grad:w.next", nn.updates = "grad:w"}
// SGD-SAME: tensor<3xf32> {nn.name = "bn.running_mean.next", nn.updates = "bn.running_mean"}
// SGD-SAME: tensor<3xf32> {nn.name = "bn.running_var.next", nn.updates = "bn.running_var"}
// The step loss is the mean over M = 4 micro-batches: d_loss = 1/4.
// SGD: nn.constant dense<2.500000e-01> : tensor<f32>
// SGD: nn.batch_norm_train
// SGD: %[[LOGP:.*]] = nn.log_softmax %{{.*}} {axis = 1 : i64}
// SGD: %[[HOT:.*]] = nn.one_hot %[[LABELS]] {depth = 3 : i64, dtype = f32}
// SGD: nn.mul %[[HOT]], %[[LOGP]]
// SGD: %[[ACC:.*]] = nn.add %[[GW]], %{{.*}} : (tensor<4x3xf32>, tensor<4x3xf32>)
// SGD-LABEL: func.func @update(
// SGD-SAME: %[[W:[^:]*]]: tensor<4x3xf32> {nn.name = "w", nn.param = {{[^}]*}}, nn.role = "weight"}
// SGD-SAME: %[[G:[^:]*]]: tensor<4x3xf32> {nn.name = "grad:w", nn.role = "grad"}
// SGD-SAME: -> (tensor<4x3xf32> {nn.name = "w.next", nn.updates = "w"}
// SGD: %[[LR:.*]] = nn.constant dense<5.000000e-01> : tensor<f32>
// SGD: %[[STEP:.*]] = nn.mul %[[LR]], %[[G]]
// SGD: nn.sub %[[W]], %[[STEP]]

// MSE: the labels are a float target of the prediction's shape.
// MOM-LABEL: func.func @train_microbatch(
// MOM-SAME: tensor<8x3xf32> {nn.name = "labels", nn.role = "input"}
// MOM: %[[D:.*]] = nn.sub %{{.*}}, %{{.*}} : (tensor<8x3xf32>, tensor<8x3xf32>)
// MOM: %[[SQ:.*]] = nn.mul %[[D]], %[[D]]
// MOM: nn.reduce_mean %[[SQ]] {axes = array<i64: 0, 1>, keepdims = false}
// torch.optim.SGD(momentum=0.8, weight_decay=0.01): g += wd*w; b = mu*b + g; w -= lr*b.
// MOM-LABEL: func.func @update(
// MOM-SAME: %[[W:[^:]*]]: tensor<4x3xf32> {nn.name = "w"
// MOM-SAME: %[[G:[^:]*]]: tensor<4x3xf32> {nn.name = "grad:w", nn.role = "grad"}
// MOM-SAME: %[[B:[^:]*]]: tensor<4x3xf32> {nn.name = "momentum_buffer:w", nn.role = "state"}
// MOM-SAME: tensor<4x3xf32> {nn.name = "momentum_buffer:w.next", nn.updates = "momentum_buffer:w"}
// MOM: %[[WD:.*]] = nn.constant dense<0.00999999977> : tensor<f32>
// MOM: %[[DEC:.*]] = nn.mul %[[WD]], %[[W]]
// MOM: %[[G2:.*]] = nn.add %[[G]], %[[DEC]]
// MOM: %[[MU:.*]] = nn.constant dense<8.000000e-01> : tensor<f32>
// MOM: %[[MB:.*]] = nn.mul %[[MU]], %[[B]]
// MOM: %[[NB:.*]] = nn.add %[[MB]], %[[G2]]
// MOM: %[[UPD:.*]] = nn.mul %{{.*}}, %[[NB]]
// MOM: nn.sub %[[W]], %[[UPD]]

// Adam keeps exp_avg, exp_avg_sq per weight and one step counter.
// ADAM-LABEL: func.func @update(
// ADAM-SAME: {nn.name = "exp_avg:w", nn.role = "state"}
// ADAM-SAME: {nn.name = "exp_avg_sq:w", nn.role = "state"}
// ADAM-SAME: %[[T:[^:]*]]: tensor<f32> {nn.name = "step", nn.role = "state"}
// ADAM-SAME: tensor<f32> {nn.name = "step.next", nn.updates = "step"}
// ADAM: %[[T1:.*]] = nn.add %[[T]], %{{.*}}
// ADAM: nn.pow %{{.*}}, %[[T1]]
// ADAM: nn.sqrt
// ADAM: return

// One micro-batch a step: nothing to accumulate. The step function returns
// each gradient as computed (its accumulator argument stays in the
// signature, unread; the manifest says "gradients": "written").
// ONE-LABEL: func.func @train_microbatch(
// ONE-SAME: %[[GW:[^:]*]]: tensor<4x3xf32> {nn.name = "grad:w", nn.role = "grad"}
// ONE-SAME: %[[GS:[^:]*]]: tensor<3xf32> {nn.name = "grad:bn.weight", nn.role = "grad"}
// ONE-SAME: %[[GB:[^:]*]]: tensor<3xf32> {nn.name = "grad:bn.bias", nn.role = "grad"}
// ONE-SAME: tensor<4x3xf32> {nn.name = "grad:w.next", nn.updates = "grad:w"}
// ONE: nn.constant dense<1.000000e+00> : tensor<f32>
// ONE-NOT: %[[GW]]
// ONE-NOT: %[[GS]]
// ONE-NOT: %[[GB]]
// ONE: return
// ONE-LABEL: func.func @update(
