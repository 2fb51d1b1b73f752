//===- LowerGemmToLibrary.cpp - contractions to pd_gpu_gemm_* -------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Replaces f32 / bf16 linalg contractions on (device) memrefs by calls to
// the runtime's strided-batched GEMM (docs/GPU.md):
//
//   void pd_gpu_gemm_f32(int64_t batch, int64_t m, int64_t n, int64_t k,
//                        int32_t transA, int32_t transB, float alpha,
//                        const float *A, int64_t lda, int64_t strideA,
//                        const float *B, int64_t ldb, int64_t strideB,
//                        float beta, float *C, int64_t ldc, int64_t strideC);
//
// The contraction analysis is the CPU target's (GemmPlan.h). Of the loops
// the plan leaves around the GEMM, the innermost becomes the batch (its
// per-operand strides; 0 broadcasts an operand); any further loops stay on
// the host as scf.for around the call.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Target/CPU/GemmPlan.h"
#include "pipedream/Target/GPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

namespace pipedream::cuda {
#define GEN_PASS_DEF_LOWERGEMMTOLIBRARYPASS
#include "pipedream/Target/GPU/Passes.h.inc"
} // namespace pipedream::cuda

using namespace mlir;
using pipedream::GemmOuterLoop;
using pipedream::GemmPlan;

namespace {

/// Declares `pd_gpu_gemm_f32` / `pd_gpu_gemm_bf16` in `module` if needed.
static func::FuncOp getOrInsertGemm(ModuleOp module, Type elementType) {
  StringRef name = elementType.isF32() ? "pd_gpu_gemm_f32" : "pd_gpu_gemm_bf16";
  if (auto existing = module.lookupSymbol<func::FuncOp>(name))
    return existing;
  MLIRContext *ctx = module.getContext();
  Type i32 = IntegerType::get(ctx, 32);
  Type i64 = IntegerType::get(ctx, 64);
  Type f32 = Float32Type::get(ctx);
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  // (batch, m, n, k, transA, transB, alpha, A, lda, strideA, B, ldb,
  //  strideB, beta, C, ldc, strideC)
  SmallVector<Type> inputs = {i64, i64, i64, i64, i32, i32, f32, ptr, i64,
                              i64, ptr, i64, i64, f32, ptr, i64, i64};
  OpBuilder builder(module.getBodyRegion());
  auto func = func::FuncOp::create(builder, module.getLoc(), name,
                                   builder.getFunctionType(inputs, {}));
  func.setPrivate();
  return func;
}

static void emitGemm(linalg::LinalgOp op, const GemmPlan &plan,
                     func::FuncOp gemm) {
  OpBuilder builder(op);
  Location loc = op.getLoc();
  Type elementType =
      cast<MemRefType>(plan.memrefs[2].getType()).getElementType();
  Type ptrType = LLVM::LLVMPointerType::get(op.getContext());
  Type i64 = builder.getI64Type();

  Operation *zeroFill = pipedream::findZeroFillOfOutput(op);
  bool zeroInit = zeroFill != nullptr;
  if (zeroFill)
    zeroFill->erase();

  Value bases[3], offsets[3];
  for (int i = 0; i < 3; ++i)
    pipedream::emitBasePointerAndOffset(builder, loc, plan.memrefs[i],
                                        bases[i], offsets[i]);

  auto i64Const = [&](int64_t v) -> Value {
    return arith::ConstantIntOp::create(builder, loc, v, 64);
  };
  auto i32Const = [&](int64_t v) -> Value {
    return arith::ConstantIntOp::create(builder, loc, v, 32);
  };
  auto indexConst = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(builder, loc, v);
  };

  // The innermost plan loop is the batch, when its C items do not
  // interleave (cuBLAS's strided batch, and the runtime's check, want each
  // C item after the previous one); the others loop on the host.
  ArrayRef<GemmOuterLoop> hostLoops = plan.loops;
  GemmOuterLoop batch{1, {0, 0, 0}};
  if (!hostLoops.empty() &&
      hostLoops.back().stride[2] >= (plan.m - 1) * plan.ldc + plan.n) {
    batch = hostLoops.back();
    hostLoops = hostLoops.drop_back();
  }
  Value zero = indexConst(0), one = indexConst(1);
  for (const GemmOuterLoop &loop : hostLoops) {
    auto forOp =
        scf::ForOp::create(builder, loc, zero, indexConst(loop.size), one);
    builder.setInsertionPointToStart(forOp.getBody());
    Value iv = forOp.getInductionVar();
    for (int i = 0; i < 3; ++i) {
      if (loop.stride[i] == 0)
        continue;
      Value step = arith::MulIOp::create(builder, loc, iv,
                                         indexConst(loop.stride[i]));
      offsets[i] = arith::AddIOp::create(builder, loc, offsets[i], step);
    }
  }

  Value pointers[3];
  for (int i = 0; i < 3; ++i) {
    Value offset = arith::IndexCastOp::create(builder, loc, i64, offsets[i]);
    pointers[i] =
        LLVM::GEPOp::create(builder, loc, ptrType, elementType, bases[i],
                            ArrayRef<LLVM::GEPArg>{offset});
  }
  Type f32 = builder.getF32Type();
  Value alpha = arith::ConstantFloatOp::create(builder, loc,
                                               cast<FloatType>(f32),
                                               APFloat(1.0f));
  Value beta = arith::ConstantFloatOp::create(
      builder, loc, cast<FloatType>(f32), APFloat(zeroInit ? 0.0f : 1.0f));
  func::CallOp::create(
      builder, loc, gemm,
      ValueRange{i64Const(batch.size), i64Const(plan.m), i64Const(plan.n),
                 i64Const(plan.k), i32Const(plan.transA ? 1 : 0),
                 i32Const(plan.transB ? 1 : 0), alpha, pointers[0],
                 i64Const(plan.lda), i64Const(batch.stride[0]), pointers[1],
                 i64Const(plan.ldb), i64Const(batch.stride[1]), beta,
                 pointers[2], i64Const(plan.ldc), i64Const(batch.stride[2])});
  op->erase();
}

struct LowerGemmToLibraryPass
    : pipedream::cuda::impl::LowerGemmToLibraryPassBase<
          LowerGemmToLibraryPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<std::pair<linalg::LinalgOp, GemmPlan>> work;
    module.walk([&](linalg::LinalgOp op) {
      FailureOr<GemmPlan> plan = pipedream::planGemm(
          op, [](Type type) { return isa<Float32Type, BFloat16Type>(type); });
      if (succeeded(plan))
        work.emplace_back(op, std::move(*plan));
    });
    for (auto &[op, plan] : work) {
      Type elementType =
          cast<MemRefType>(plan.memrefs[2].getType()).getElementType();
      emitGemm(op, plan, getOrInsertGemm(module, elementType));
    }
  }
};

} // namespace
