//===- BuildTraining.cpp - the nn-build-training pass ---------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The pass over buildTrainingFunctions (Training.h): `@train_microbatch` and
// `@update` for the function the options name.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Dialect/NN/Transforms/Passes.h"
#include "pipedream/Dialect/NN/Transforms/Training.h"

using namespace mlir;

namespace pipedream::nn {
#define GEN_PASS_DEF_BUILDTRAININGPASS
#include "pipedream/Dialect/NN/Transforms/Passes.h.inc"
} // namespace pipedream::nn

namespace {
struct BuildTrainingPass
    : pipedream::nn::impl::BuildTrainingPassBase<BuildTrainingPass> {
  using Base::Base;

  void runOnOperation() override {
    using namespace pipedream::nn;
    TrainingOptions options;
    options.function = function;
    options.labelsName = labelsName;
    options.microbatches = microbatches;
    std::optional<LossKind> lossKind = parseLossKind(loss);
    if (!lossKind) {
      getOperation().emitError("nn-build-training: unknown loss '")
          << loss << "' (expected cross-entropy, mse or none)";
      return signalPassFailure();
    }
    options.loss = *lossKind;
    std::optional<OptimizerKind> optimizerKind = parseOptimizerKind(optimizer);
    if (!optimizerKind) {
      getOperation().emitError("nn-build-training: unknown optimizer '")
          << optimizer << "' (expected sgd, momentum, adam or adamw)";
      return signalPassFailure();
    }
    options.optimizer.kind = *optimizerKind;
    options.optimizer.lr = lr;
    options.optimizer.momentum = momentum;
    options.optimizer.weightDecay = weightDecay;
    options.optimizer.nesterov = nesterov;
    options.optimizer.beta1 = beta1;
    options.optimizer.beta2 = beta2;
    options.optimizer.eps = eps;
    if (failed(buildTrainingFunctions(getOperation(), options)))
      signalPassFailure();
  }
};
} // namespace
