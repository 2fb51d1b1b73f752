//===- AllocateDeviceMemory.cpp - host allocations on the device ----------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// After cuda-map-to-kernels, host functions only hand buffers to kernels and
// to the GEMM library: every buffer they allocate becomes device memory.
//
//   memref.alloc / memref.alloca   -> gpu.alloc
//   memref.dealloc                 -> gpu.dealloc (allocas: before returns)
//   memref.get_global (host use)   -> gpu.alloc + gpu.memcpy of the constant
//
// Kernels read globals from their own gpu.module (gpu-kernel-outlining
// copies the memref.global there), so only host uses need the copy.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Target/GPU/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"

namespace pipedream::cuda {
#define GEN_PASS_DEF_ALLOCATEDEVICEMEMORYPASS
#include "pipedream/Target/GPU/Passes.h.inc"
} // namespace pipedream::cuda

using namespace mlir;

namespace {

struct AllocateDeviceMemoryPass
    : pipedream::cuda::impl::AllocateDeviceMemoryPassBase<
          AllocateDeviceMemoryPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isDeclaration())
      return;
    IRRewriter rewriter(&getContext());
    auto onHost = [](Operation *op) {
      return !op->getParentOfType<gpu::LaunchOp>();
    };

    WalkResult checked = func.walk([&](Operation *op) {
      if (onHost(op) && isa<memref::LoadOp, memref::StoreOp>(op)) {
        op->emitError("host code reads or writes device memory (run "
                      "cuda-map-to-kernels first)");
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (checked.wasInterrupted())
      return signalPassFailure();

    SmallVector<Operation *> work;
    func.walk([&](Operation *op) {
      if (onHost(op) && isa<memref::AllocOp, memref::AllocaOp,
                            memref::DeallocOp, memref::GetGlobalOp>(op))
        work.push_back(op);
    });
    SmallVector<func::ReturnOp> returns;
    func.walk([&](func::ReturnOp ret) { returns.push_back(ret); });

    for (Operation *op : work) {
      rewriter.setInsertionPoint(op);
      Location loc = op->getLoc();
      if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
        auto device = gpu::AllocOp::create(
            rewriter, loc, alloc.getType(), /*asyncToken=*/Type(),
            /*asyncDependencies=*/ValueRange(), alloc.getDynamicSizes(),
            alloc.getSymbolOperands(), /*hostShared=*/false);
        rewriter.replaceOp(alloc, device.getMemref());
      } else if (auto alloca = dyn_cast<memref::AllocaOp>(op)) {
        if (alloca->getParentRegion() != &func.getBody()) {
          alloca.emitError("stack allocation inside a host loop or branch; "
                           "the CUDA target only moves function-level ones "
                           "to the device");
          return signalPassFailure();
        }
        auto device = gpu::AllocOp::create(
            rewriter, loc, alloca.getType(), Type(), ValueRange(),
            alloca.getDynamicSizes(), alloca.getSymbolOperands(), false);
        for (func::ReturnOp ret : returns) {
          rewriter.setInsertionPoint(ret);
          gpu::DeallocOp::create(rewriter, loc, Type(), ValueRange(),
                                 device.getMemref());
        }
        rewriter.replaceOp(alloca, device.getMemref());
      } else if (auto dealloc = dyn_cast<memref::DeallocOp>(op)) {
        gpu::DeallocOp::create(rewriter, loc, Type(), ValueRange(),
                               dealloc.getMemref());
        rewriter.eraseOp(dealloc);
      } else if (auto global = dyn_cast<memref::GetGlobalOp>(op)) {
        // Uses inside kernels keep the global (their own copy).
        bool hostUse = llvm::any_of(global->getUsers(), onHost);
        if (!hostUse)
          continue;
        auto type = cast<MemRefType>(global.getType());
        if (!type.getLayout().isIdentity()) {
          global.emitError("constant with a non-identity layout");
          return signalPassFailure();
        }
        auto device = gpu::AllocOp::create(rewriter, loc, type, Type(),
                                           ValueRange(), ValueRange(),
                                           ValueRange(), false);
        rewriter.setInsertionPointAfter(global);
        gpu::MemcpyOp::create(rewriter, loc, Type(), ValueRange(),
                              device.getMemref(), global.getResult());
        rewriter.replaceUsesWithIf(global.getResult(), device.getMemref(),
                                   [&](OpOperand &use) {
                                     return onHost(use.getOwner()) &&
                                            !isa<gpu::MemcpyOp>(
                                                use.getOwner());
                                   });
        for (func::ReturnOp ret : returns) {
          rewriter.setInsertionPoint(ret);
          gpu::DeallocOp::create(rewriter, loc, Type(), ValueRange(),
                                 device.getMemref());
        }
      }
    }
  }
};

} // namespace
