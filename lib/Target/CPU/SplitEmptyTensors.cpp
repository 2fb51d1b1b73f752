//===- SplitEmptyTensors.cpp - one tensor.empty per use -------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Before bufferization, every destination use of a linalg.fill of a
// tensor.empty and every use of a tensor.empty gets its own op, so One-Shot
// Analysis does not see one alias set spanning the whole function (see
// Passes.td).
//
//===----------------------------------------------------------------------===//

#include "pipedream/Target/CPU/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

namespace pipedream::cpu {
#define GEN_PASS_DEF_SPLITEMPTYTENSORSPASS
#include "pipedream/Target/CPU/Passes.h.inc"
} // namespace pipedream::cpu

using namespace mlir;

namespace {

struct SplitEmptyTensorsPass
    : pipedream::cpu::impl::SplitEmptyTensorsPassBase<SplitEmptyTensorsPass> {
  void runOnOperation() override {
    splitFills();
    splitEmpties();
  }

  /// A fill of a tensor.empty that is the destination of several ops: each
  /// destination use gets a fill (and an empty) of its own, right before
  /// its user; reads keep the original.
  void splitFills() {
    SmallVector<linalg::FillOp> fills;
    getOperation().walk([&](linalg::FillOp op) {
      if (op->getNumResults() == 1 && !op->hasOneUse() &&
          op.getOutputs()[0].getDefiningOp<tensor::EmptyOp>())
        fills.push_back(op);
    });
    OpBuilder builder(&getContext());
    for (linalg::FillOp fill : fills) {
      SmallVector<OpOperand *> inits;
      for (OpOperand &use : fill->getResult(0).getUses()) {
        auto dps = dyn_cast<DestinationStyleOpInterface>(use.getOwner());
        if (dps && dps.isDpsInit(&use))
          inits.push_back(&use);
      }
      // One destination and nothing else: already its own.
      if (inits.size() < 2 && fill->hasOneUse())
        continue;
      llvm::sort(inits, [](OpOperand *a, OpOperand *b) {
        if (a->getOwner() != b->getOwner())
          return a->getOwner() < b->getOwner();
        return a->getOperandNumber() < b->getOperandNumber();
      });
      Operation *empty = fill.getOutputs()[0].getDefiningOp();
      for (OpOperand *use : inits) {
        builder.setInsertionPoint(use->getOwner());
        IRMapping mapping;
        mapping.map(empty->getResult(0),
                    builder.clone(*empty)->getResult(0));
        use->set(builder.clone(*fill, mapping)->getResult(0));
      }
      if (fill->use_empty()) {
        fill->erase();
        if (empty->use_empty())
          empty->erase();
      }
    }
  }

  void splitEmpties() {
    SmallVector<tensor::EmptyOp> empties;
    getOperation().walk([&](tensor::EmptyOp op) {
      if (!op->hasOneUse() && !op->use_empty())
        empties.push_back(op);
    });
    OpBuilder builder(&getContext());
    for (tensor::EmptyOp op : empties) {
      // The uses, collected first: each rewrite edits the use list.
      SmallVector<OpOperand *> uses;
      for (OpOperand &use : op->getUses())
        uses.push_back(&use);
      // Clones before one user in operand order (the order between
      // different users does not show: each clone sits before its user).
      llvm::sort(uses, [](OpOperand *a, OpOperand *b) {
        if (a->getOwner() != b->getOwner())
          return a->getOwner() < b->getOwner();
        return a->getOperandNumber() < b->getOperandNumber();
      });
      // Every use gets a clone right before its user (use-list order is
      // not program order: a clone for each keeps the output independent
      // of it), then the original goes.
      for (OpOperand *use : uses) {
        builder.setInsertionPoint(use->getOwner());
        use->set(builder.clone(*op)->getResult(0));
      }
      numClones += uses.size() - 1;
      op->erase();
    }
  }
};

} // namespace
