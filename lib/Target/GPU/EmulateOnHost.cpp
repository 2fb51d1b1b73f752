//===- EmulateOnHost.cpp - CUDA lowering executed on the CPU (tests) ------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Test-only: turns the output of cuda-map-to-kernels and
// cuda-allocate-device-memory back into host code, so the numerics of the
// CUDA lowering (index flattening, row reductions, fill folding, GEMM plans
// and their pd_gpu_gemm_f32 arguments, allocation and frees) can be checked
// against PyTorch on a machine without a GPU. pd_gpu_gemm_f32 gets a plain
// loop implementation of the ABI's row-major semantics, and so does
// pd_gpu_gemm_bf16 (bf16 A, B and C widened to f32, f32 accumulation and
// alpha/beta, the result rounded to bf16, round-to-nearest-even).
//
//===----------------------------------------------------------------------===//

#include "pipedream/Target/GPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"

namespace pipedream::cuda {
#define GEN_PASS_DEF_EMULATEONHOSTPASS
#include "pipedream/Target/GPU/Passes.h.inc"
} // namespace pipedream::cuda

using namespace mlir;

namespace {

/// Body of pd_gpu_gemm_f32 / pd_gpu_gemm_bf16 (see docs/GPU.md):
///   C[b] = alpha * op(A[b]) @ op(B[b]) + beta * C[b], row-major,
///   A element (i, p) at A + b*strideA + (transA ? p*lda + i : i*lda + p).
/// `storage` is the element type of A, B and C (f32 or bf16); arithmetic
/// is f32.
void defineGemm(func::FuncOp gemm, Type storage) {
  MLIRContext *ctx = gemm.getContext();
  Block *entry = gemm.addEntryBlock();
  gemm.setPrivate();
  OpBuilder b = OpBuilder::atBlockBegin(entry);
  Location loc = gemm.getLoc();
  auto arg = [&](unsigned i) { return entry->getArgument(i); };
  Value batch = arg(0), m = arg(1), n = arg(2), k = arg(3);
  Value transA = arg(4), transB = arg(5), alpha = arg(6);
  Value a = arg(7), lda = arg(8), strideA = arg(9);
  Value bm = arg(10), ldb = arg(11), strideB = arg(12);
  Value beta = arg(13), c = arg(14), ldc = arg(15), strideC = arg(16);
  Type i64 = b.getI64Type(), f32 = b.getF32Type();
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  Value zero = arith::ConstantIntOp::create(b, loc, 0, 64);
  Value one = arith::ConstantIntOp::create(b, loc, 1, 64);
  Value zeroI32 = arith::ConstantIntOp::create(b, loc, 0, 32);
  Value fzero = arith::ConstantFloatOp::create(b, loc, cast<FloatType>(f32),
                                               APFloat(0.0f));
  Value ta = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, transA,
                                   zeroI32);
  Value tb = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, transB,
                                   zeroI32);
  Value betaZero = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                         beta, fzero);
  auto mul = [&](Value x, Value y) -> Value {
    return arith::MulIOp::create(b, loc, x, y);
  };
  auto add = [&](Value x, Value y) -> Value {
    return arith::AddIOp::create(b, loc, x, y);
  };
  auto element = [&](Value base, Value index) -> Value {
    return LLVM::GEPOp::create(b, loc, ptr, storage, base,
                               ArrayRef<LLVM::GEPArg>{index});
  };
  auto load = [&](Value address) -> Value {
    Value v = LLVM::LoadOp::create(b, loc, storage, address);
    return storage == f32 ? v : arith::ExtFOp::create(b, loc, f32, v);
  };
  auto forB = scf::ForOp::create(b, loc, zero, batch, one);
  b.setInsertionPointToStart(forB.getBody());
  Value ib = forB.getInductionVar();
  auto forI = scf::ForOp::create(b, loc, zero, m, one);
  b.setInsertionPointToStart(forI.getBody());
  Value ii = forI.getInductionVar();
  auto forJ = scf::ForOp::create(b, loc, zero, n, one);
  b.setInsertionPointToStart(forJ.getBody());
  Value jj = forJ.getInductionVar();
  auto forP = scf::ForOp::create(b, loc, zero, k, one, ValueRange{fzero});
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(forP.getBody());
    Value pp = forP.getInductionVar();
    Value aIndex = arith::SelectOp::create(b, loc, ta, add(mul(pp, lda), ii),
                                           add(mul(ii, lda), pp));
    Value bIndex = arith::SelectOp::create(b, loc, tb, add(mul(jj, ldb), pp),
                                           add(mul(pp, ldb), jj));
    Value av = load(element(a, add(mul(ib, strideA), aIndex)));
    Value bv = load(element(bm, add(mul(ib, strideB), bIndex)));
    Value prod = arith::MulFOp::create(b, loc, av, bv);
    Value sum =
        arith::AddFOp::create(b, loc, forP.getRegionIterArgs()[0], prod);
    scf::YieldOp::create(b, loc, sum);
  }
  Value cPtr = element(c, add(mul(ib, strideC), add(mul(ii, ldc), jj)));
  Value scaled = arith::MulFOp::create(b, loc, alpha, forP.getResult(0));
  // beta = 0 never reads C (it may be uninitialized).
  auto ifOp = scf::IfOp::create(b, loc, f32, betaZero, true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    scf::YieldOp::create(b, loc, scaled);
    b.setInsertionPointToStart(&ifOp.getElseRegion().front());
    Value old = load(cPtr);
    Value result = arith::AddFOp::create(
        b, loc, scaled, arith::MulFOp::create(b, loc, beta, old));
    scf::YieldOp::create(b, loc, result);
  }
  Value result = ifOp.getResult(0);
  if (storage != f32)
    result = arith::TruncFOp::create(b, loc, storage, result);
  LLVM::StoreOp::create(b, loc, result, cPtr);
  b.setInsertionPointAfter(forB);
  func::ReturnOp::create(b, loc);
  (void)i64;
}

struct EmulateOnHostPass
    : pipedream::cuda::impl::EmulateOnHostPassBase<EmulateOnHostPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (auto gemm = module.lookupSymbol<func::FuncOp>("pd_gpu_gemm_f32"))
      if (gemm.isDeclaration())
        defineGemm(gemm, Float32Type::get(module.getContext()));
    if (auto gemm = module.lookupSymbol<func::FuncOp>("pd_gpu_gemm_bf16"))
      if (gemm.isDeclaration())
        defineGemm(gemm, BFloat16Type::get(module.getContext()));

    SmallVector<gpu::LaunchOp> launches;
    module.walk([&](gpu::LaunchOp launch) { launches.push_back(launch); });
    for (gpu::LaunchOp launch : launches) {
      gpu::KernelDim3 grid = launch.getGridSizeOperandValues();
      gpu::KernelDim3 block = launch.getBlockSizeOperandValues();
      std::optional<int64_t> bx = getConstantIntValue(block.x),
                             by = getConstantIntValue(block.y),
                             bz = getConstantIntValue(block.z);
      bool synchronizes = false;
      launch.getBody().walk([&](Operation *op) {
        if (isa<gpu::AllReduceOp, gpu::BarrierOp>(op))
          synchronizes = true;
      });
      if (synchronizes && (!bx || !by || !bz || *bx * *by * *bz != 1)) {
        launch.emitError("a launch that synchronizes threads needs one "
                         "thread per block to run on the host");
        return signalPassFailure();
      }
      OpBuilder builder(launch);
      Location loc = launch.getLoc();
      Value zero = arith::ConstantIndexOp::create(builder, loc, 0);
      Value one = arith::ConstantIndexOp::create(builder, loc, 1);
      IRMapping mapping;
      Value sizes[6] = {grid.z, grid.y, grid.x, block.z, block.y, block.x};
      gpu::KernelDim3 blockIds = launch.getBlockIds();
      gpu::KernelDim3 threadIds = launch.getThreadIds();
      Value ids[6] = {blockIds.z, blockIds.y, blockIds.x,
                      threadIds.z, threadIds.y, threadIds.x};
      scf::ForOp outermost;
      for (int i = 0; i < 6; ++i) {
        auto loop = scf::ForOp::create(builder, loc, zero, sizes[i], one);
        if (!outermost)
          outermost = loop;
        builder.setInsertionPointToStart(loop.getBody());
        mapping.map(ids[i], loop.getInductionVar());
      }
      gpu::KernelDim3 gridArgs = launch.getGridSize();
      gpu::KernelDim3 blockArgs = launch.getBlockSize();
      mapping.map(gridArgs.x, grid.x);
      mapping.map(gridArgs.y, grid.y);
      mapping.map(gridArgs.z, grid.z);
      mapping.map(blockArgs.x, block.x);
      mapping.map(blockArgs.y, block.y);
      mapping.map(blockArgs.z, block.z);
      for (Operation &op : launch.getBody().front().without_terminator())
        builder.clone(op, mapping);
      // One thread per block: the reduction over the block is the value.
      SmallVector<Operation *> sync;
      outermost->walk([&](Operation *op) {
        if (isa<gpu::AllReduceOp, gpu::BarrierOp>(op))
          sync.push_back(op);
      });
      for (Operation *op : sync) {
        if (auto reduce = dyn_cast<gpu::AllReduceOp>(op))
          reduce.getResult().replaceAllUsesWith(reduce.getValue());
        op->erase();
      }
      launch.erase();
    }

    module.walk([&](Operation *op) {
      OpBuilder builder(op);
      if (auto alloc = dyn_cast<gpu::AllocOp>(op)) {
        Value host = memref::AllocOp::create(builder, op->getLoc(),
                                             alloc.getMemref().getType(),
                                             alloc.getDynamicSizes());
        alloc.getMemref().replaceAllUsesWith(host);
        op->erase();
      } else if (auto dealloc = dyn_cast<gpu::DeallocOp>(op)) {
        memref::DeallocOp::create(builder, op->getLoc(), dealloc.getMemref());
        op->erase();
      } else if (auto copy = dyn_cast<gpu::MemcpyOp>(op)) {
        memref::CopyOp::create(builder, op->getLoc(), copy.getSrc(),
                               copy.getDst());
        op->erase();
      }
    });
  }
};

} // namespace
