//===- AutodiffPass.cpp - the nn-autodiff pass ----------------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Dialect/NN/Transforms/Autodiff.h"
#include "pipedream/Dialect/NN/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringSet.h"

namespace pipedream::nn {
#define GEN_PASS_DEF_AUTODIFFPASS
#include "pipedream/Dialect/NN/Transforms/Passes.h.inc"
} // namespace pipedream::nn

using namespace mlir;

namespace {

struct AutodiffPass
    : pipedream::nn::impl::AutodiffPassBase<AutodiffPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::StringSet<> wanted;
    for (const std::string &name : functions)
      wanted.insert(name);

    SmallVector<func::FuncOp> targets;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isDeclaration())
        continue;
      if (wanted.empty() ? func.isPublic()
                         : wanted.contains(func.getSymName()))
        targets.push_back(func);
    }
    for (const auto &entry : wanted) {
      auto found = module.lookupSymbol<func::FuncOp>(entry.getKey());
      if (!found || found.isDeclaration()) {
        module.emitError("nn-autodiff: no function '")
            << entry.getKey() << "' with a body";
        return signalPassFailure();
      }
    }

    pipedream::nn::AutodiffOptions options;
    options.inputGradients = inputGradients;
    options.splitBackward = splitBackward;
    for (func::FuncOp func : targets)
      if (failed(pipedream::nn::differentiateFunction(func, options)))
        return signalPassFailure();
  }
};

} // namespace
