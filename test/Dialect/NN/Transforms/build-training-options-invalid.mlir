// RUN: not pipedream-opt %s --nn-build-training=loss=hinge 2>&1 | FileCheck %s --check-prefix=LOSS
// RUN: not pipedream-opt %s --nn-build-training=optimizer=lbfgs 2>&1 | FileCheck %s --check-prefix=OPT
// RUN: not pipedream-opt %s --nn-build-training=microbatches=0 2>&1 | FileCheck %s --check-prefix=MB
// RUN: not pipedream-opt %s --nn-build-training=lr-schedule=step 2>&1 | FileCheck %s --check-prefix=SCHED
// RUN: not pipedream-opt %s --nn-build-training="lr-schedule=cosine warmup-steps=5 total-steps=5" 2>&1 | FileCheck %s --check-prefix=TOTAL
// RUN: not pipedream-opt %s --nn-build-training="warmup-steps=-1" 2>&1 | FileCheck %s --check-prefix=NEG
// RUN: not pipedream-opt %s --nn-build-training="clip-grad-norm=-0.5" 2>&1 | FileCheck %s --check-prefix=CLIP

// LOSS: error: nn-build-training: unknown loss 'hinge' (expected cross-entropy, mse or none)
// OPT: error: nn-build-training: unknown optimizer 'lbfgs' (expected sgd, momentum, adam or adamw)
// SCHED: error: nn-build-training: unknown lr-schedule 'step' (expected constant, linear or cosine)
// TOTAL: error: nn-build-training: lr-schedule cosine needs total-steps greater than warmup-steps (got 5 and 5)
// NEG: error: nn-build-training: warmup-steps and total-steps must be at least 0
// CLIP: error: nn-build-training: clip-grad-norm must be a positive number (0: no clipping), got -0.5
// MB: error: training: the number of micro-batches must be at least 1, got 0
func.func @main(%x: tensor<2x4xf32> {nn.name = "x"}, %w: tensor<4xf32> {nn.name = "w", nn.param = dense<1.0> : tensor<4xf32>}) -> tensor<2x4xf32> {
  %0 = nn.mul %x, %w : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}
