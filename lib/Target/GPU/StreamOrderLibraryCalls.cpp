//===- StreamOrderLibraryCalls.cpp - no host sync around pd_gpu_* calls ---===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// After gpu-async-region, every call to the runtime's GEMM sits between a
// host synchronization of the stream and the creation of a new one. The
// bundle ABI (docs/GPU.md, section 3) makes both streams the runtime's
// current stream, on which the GEMM runs too: the synchronization only
// costs time. This pass removes such wait pairs and threads the first
// stream's token through.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Target/GPU/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace pipedream::cuda {
#define GEN_PASS_DEF_STREAMORDERLIBRARYCALLSPASS
#include "pipedream/Target/GPU/Passes.h.inc"
} // namespace pipedream::cuda

using namespace mlir;

namespace {

/// True for a call to a function of the runtime's GPU library (stream
/// ordered on the current stream), or a loop of such calls.
bool isStreamOrderedLibraryWork(Operation *op) {
  if (auto call = dyn_cast<func::CallOp>(op))
    return call.getCallee().starts_with("pd_gpu_");
  if (isa<scf::ForOp>(op)) {
    bool onlyLibrary = true;
    op->walk([&](Operation *nested) {
      if (nested == op || isa<scf::YieldOp>(nested))
        return;
      if (!isMemoryEffectFree(nested) && !isStreamOrderedLibraryWork(nested))
        onlyLibrary = false;
    });
    return onlyLibrary;
  }
  return false;
}

struct StreamOrderLibraryCallsPass
    : pipedream::cuda::impl::StreamOrderLibraryCallsPassBase<
          StreamOrderLibraryCallsPass> {
  void runOnOperation() override {
    SmallVector<gpu::WaitOp> syncs;
    getOperation().walk([&](gpu::WaitOp wait) {
      if (!wait.getAsyncToken() && wait.getAsyncDependencies().size() == 1)
        syncs.push_back(wait);
    });
    for (gpu::WaitOp sync : syncs) {
      bool sawLibraryCall = false;
      gpu::WaitOp restart;
      for (Operation *op = sync->getNextNode(); op; op = op->getNextNode()) {
        auto wait = dyn_cast<gpu::WaitOp>(op);
        if (wait && wait.getAsyncToken() &&
            wait.getAsyncDependencies().empty()) {
          restart = wait;
          break;
        }
        if (isStreamOrderedLibraryWork(op)) {
          sawLibraryCall = true;
          continue;
        }
        if (!isMemoryEffectFree(op))
          break;
      }
      if (!sawLibraryCall || !restart)
        continue;
      restart.getAsyncToken().replaceAllUsesWith(
          sync.getAsyncDependencies().front());
      restart.erase();
      sync.erase();
    }

    // NOTE: an entry point returns only when its device work is done (the
    // runtime reads outputs right after). A library call after the last
    // synchronization gets one more: `gpu.wait async` + `gpu.wait`
    // synchronize the current stream.
    getOperation().walk([&](func::ReturnOp ret) {
      for (Operation *op = ret->getPrevNode(); op; op = op->getPrevNode()) {
        if (isa<gpu::GPUDialect>(op->getDialect()))
          return;
        if (!isStreamOrderedLibraryWork(op))
          continue;
        OpBuilder builder(ret);
        auto stream = gpu::WaitOp::create(
            builder, ret.getLoc(), builder.getType<gpu::AsyncTokenType>(),
            ValueRange());
        gpu::WaitOp::create(builder, ret.getLoc(), Type(),
                            ValueRange{stream.getAsyncToken()});
        return;
      }
    });
  }
};

} // namespace
