// RUN: not pipedream-opt %s --nn-build-training=loss=hinge 2>&1 | FileCheck %s --check-prefix=LOSS
// RUN: not pipedream-opt %s --nn-build-training=optimizer=lbfgs 2>&1 | FileCheck %s --check-prefix=OPT
// RUN: not pipedream-opt %s --nn-build-training=microbatches=0 2>&1 | FileCheck %s --check-prefix=MB

// LOSS: error: nn-build-training: unknown loss 'hinge' (expected cross-entropy, mse or none)
// OPT: error: nn-build-training: unknown optimizer 'lbfgs' (expected sgd, momentum, adam or adamw)
// MB: error: training: the number of micro-batches must be at least 1, got 0
func.func @main(%x: tensor<2x4xf32> {nn.name = "x"}, %w: tensor<4xf32> {nn.name = "w", nn.param = dense<1.0> : tensor<4xf32>}) -> tensor<2x4xf32> {
  %0 = nn.mul %x, %w : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}
