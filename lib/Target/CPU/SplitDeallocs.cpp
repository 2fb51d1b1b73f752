//===- SplitDeallocs.cpp - deallocs of owned allocations ------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// A bufferization.dealloc that retains nothing and frees distinct
// memref.alloc results unconditionally becomes one memref.dealloc per
// allocation, in linear time, before buffer-deallocation-simplification
// (quadratic in the number of memrefs of one dealloc; see Passes.td).
//
//===----------------------------------------------------------------------===//

#include "pipedream/Target/CPU/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallVector.h"

namespace pipedream::cpu {
#define GEN_PASS_DEF_SPLITDEALLOCSPASS
#include "pipedream/Target/CPU/Passes.h.inc"
} // namespace pipedream::cpu

using namespace mlir;

namespace {

/// The allocations `op` frees, in order and without repeats, when it is one
/// this pass may split; std::nullopt otherwise.
std::optional<llvm::SetVector<Value>>
splittableMemrefs(bufferization::DeallocOp op) {
  if (!op.getRetained().empty() || !op->use_empty())
    return std::nullopt;
  llvm::SetVector<Value> memrefs;
  for (auto [memref, cond] : llvm::zip(op.getMemrefs(), op.getConditions())) {
    if (!memref.getDefiningOp<memref::AllocOp>() ||
        !matchPattern(cond, m_One()))
      return std::nullopt;
    memrefs.insert(memref);
  }
  return memrefs;
}

struct SplitDeallocsPass
    : pipedream::cpu::impl::SplitDeallocsPassBase<SplitDeallocsPass> {
  void runOnOperation() override {
    SmallVector<bufferization::DeallocOp> deallocs;
    getOperation().walk(
        [&](bufferization::DeallocOp op) { deallocs.push_back(op); });
    OpBuilder builder(&getContext());
    for (bufferization::DeallocOp op : deallocs) {
      std::optional<llvm::SetVector<Value>> memrefs = splittableMemrefs(op);
      if (!memrefs)
        continue;
      builder.setInsertionPoint(op);
      for (Value memref : *memrefs)
        memref::DeallocOp::create(builder, op.getLoc(), memref);
      op->erase();
      ++numSplit;
    }
  }
};

} // namespace
