//===- AnnotateCosts.cpp - pipe-annotate-costs -----------------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Dialect/Pipe/Transforms/CostModel.h"
#include "pipedream/Dialect/Pipe/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace pipedream::pipe {
#define GEN_PASS_DEF_ANNOTATECOSTSPASS
#include "pipedream/Dialect/Pipe/Transforms/Passes.h.inc"
} // namespace pipedream::pipe

using namespace mlir;
using namespace pipedream::pipe;

namespace {

struct AnnotateCostsPass
    : pipedream::pipe::impl::AnnotateCostsPassBase<AnnotateCostsPass> {
  using Base::Base;
  void runOnOperation() override;
};

} // namespace

void AnnotateCostsPass::runOnOperation() {
  ModuleOp module = getOperation();
  std::optional<DeviceModel> model = DeviceModel::lookup(device);
  if (!model) {
    module.emitError() << "pipe-annotate-costs: unknown device '" << device
                       << "' (cpu or h200)";
    return signalPassFailure();
  }
  std::optional<Profile> loaded;
  if (!profile.empty()) {
    FailureOr<Profile> read = Profile::read(
        profile, [&] { return module.emitError() << "pipe-annotate-costs: "; });
    if (failed(read))
      return signalPassFailure();
    loaded = std::move(*read);
    // A measured link replaces the device's.
    if (loaded->linkLatency && loaded->linkBandwidth) {
      model->linkLatency = *loaded->linkLatency;
      model->linkBandwidth = *loaded->linkBandwidth;
    }
  }
  module->setAttr(kDeviceAttrName, model->toAttr(&getContext()));
  for (auto func : module.getOps<func::FuncOp>()) {
    auto costs = computeCosts(func, *model, loaded ? &*loaded : nullptr);
    for (auto &[op, cost] : costs)
      op->setAttr(kCostAttrName, cost.toAttr(&getContext()));
  }
}
