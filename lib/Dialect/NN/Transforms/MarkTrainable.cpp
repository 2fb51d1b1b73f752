//===- MarkTrainable.cpp - the nn-mark-trainable pass ---------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The pass over markFrozenWeights (Trainable.h): `nn.frozen` on every weight
// of the function that is not a trainable parameter.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Dialect/NN/Transforms/Passes.h"
#include "pipedream/Dialect/NN/Transforms/Trainable.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace pipedream::nn {
#define GEN_PASS_DEF_MARKTRAINABLEPASS
#include "pipedream/Dialect/NN/Transforms/Passes.h.inc"
} // namespace pipedream::nn

namespace {
struct MarkTrainablePass
    : pipedream::nn::impl::MarkTrainablePassBase<MarkTrainablePass> {
  using Base::Base;

  void runOnOperation() override {
    using namespace pipedream::nn;
    auto func = getOperation().lookupSymbol<func::FuncOp>(function);
    if (!func) {
      getOperation().emitError("nn-mark-trainable: no function '")
          << function << "'";
      return signalPassFailure();
    }
    TrainableOptions options;
    options.freeze.assign(freeze.begin(), freeze.end());
    options.train.assign(train.begin(), train.end());
    options.trainedResult = result;
    FailureOr<SmallVector<WeightDecision>> decisions =
        markFrozenWeights(func, options);
    if (failed(decisions))
      return signalPassFailure();
    if (printDecisions)
      printWeightDecisions(*decisions, llvm::outs());
  }
};
} // namespace
