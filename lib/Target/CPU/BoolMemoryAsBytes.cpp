//===- BoolMemoryAsBytes.cpp - i1 loads and stores as byte accesses -------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// An i1 in memory takes a byte, but LLVM's loop vectorizer only widens a
// load whose type fills its store size: `<8 x i1>` is 8 bits in memory. The
// element-by-element loads it falls back to cost more than the arithmetic
// of a masked softmax row. As bytes (`load i8` + `trunc`), the same accesses
// vectorize (see Passes.td).
//
//===----------------------------------------------------------------------===//

#include "pipedream/Target/CPU/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"

namespace pipedream::cpu {
#define GEN_PASS_DEF_BOOLMEMORYASBYTESPASS
#include "pipedream/Target/CPU/Passes.h.inc"
} // namespace pipedream::cpu

using namespace mlir;

namespace {

bool isBool(Type type) { return type.isInteger(1); }

struct BoolMemoryAsBytesPass
    : pipedream::cpu::impl::BoolMemoryAsBytesPassBase<BoolMemoryAsBytesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // memref accesses left would reach LLVM as i1 accesses after this pass.
    WalkResult early = module.walk([](Operation *op) {
      Type element;
      if (auto load = dyn_cast<memref::LoadOp>(op))
        element = load.getType();
      else if (auto store = dyn_cast<memref::StoreOp>(op))
        element = store.getValueToStore().getType();
      if (!element || !isBool(element))
        return WalkResult::advance();
      op->emitOpError("cpu-bool-memory-as-bytes expects the LLVM dialect "
                      "(i1 memref accesses left); run convert-to-llvm first");
      return WalkResult::interrupt();
    });
    if (early.wasInterrupted())
      return signalPassFailure();

    OpBuilder b(&getContext());
    Type bit = b.getI1Type(), byte = b.getI8Type();
    module.walk([&](Operation *op) {
      if (auto load = dyn_cast<LLVM::LoadOp>(op);
          load && isBool(load.getType())) {
        b.setInsertionPointAfter(load);
        load.getResult().setType(byte);
        auto low =
            LLVM::TruncOp::create(b, load.getLoc(), bit, load.getResult());
        load.getResult().replaceAllUsesExcept(low, low);
        ++numLoads;
      } else if (auto store = dyn_cast<LLVM::StoreOp>(op);
                 store && isBool(store.getValue().getType())) {
        b.setInsertionPoint(store);
        auto wide =
            LLVM::ZExtOp::create(b, store.getLoc(), byte, store.getValue());
        store.getValueMutable().assign(wide);
        ++numStores;
      }
    });
  }
};

} // namespace
