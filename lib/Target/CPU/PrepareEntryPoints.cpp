//===- PrepareEntryPoints.cpp - one tensor per returned value -------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Makes every result of a public function a distinct value before
// bufferization, so each becomes its own out-parameter buffer.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Target/CPU/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"

namespace pipedream::cpu {
#define GEN_PASS_DEF_PREPAREENTRYPOINTSPASS
#include "pipedream/Target/CPU/Passes.h.inc"
} // namespace pipedream::cpu

using namespace mlir;

namespace {

struct PrepareEntryPointsPass
    : pipedream::cpu::impl::PrepareEntryPointsPassBase<
          PrepareEntryPointsPass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (!func.isPublic() || func.isDeclaration())
        continue;
      func.walk([&](func::ReturnOp ret) {
        llvm::DenseSet<Value> seen;
        OpBuilder builder(ret);
        for (OpOperand &operand : ret->getOpOperands()) {
          Value value = operand.get();
          auto type = dyn_cast<RankedTensorType>(value.getType());
          if (seen.insert(value).second || !type || !type.hasStaticShape())
            continue;
          // A copying alloc_tensor (not linalg.copy into tensor.empty,
          // which eliminate-empty-tensors would turn back into the value).
          operand.set(bufferization::AllocTensorOp::create(
              builder, ret.getLoc(), type, ValueRange(), value));
        }
      });
    }
  }
};

} // namespace
