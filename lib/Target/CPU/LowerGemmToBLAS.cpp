//===- LowerGemmToBLAS.cpp - linalg contractions to cblas_?gemm -----------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Replaces f32/f64 linalg contractions on memrefs by CBLAS gemm calls, or
// f32 ones by calls to pipedream's own kernel `pd_cpu_sgemm` (same
// arguments; lib/Target/CPU/Kernels/Gemm.cpp) with `sgemm=pd_cpu_sgemm`,
// or to its bf16 GEMM `pd_cpu_gemm_bf16` (`--dtype bf16`: bf16 operands and
// product, f32 accumulation and C) with `sgemm=pd_cpu_gemm_bf16`.
//
// In the default GEMM lowering (`--gemm=auto`) every f32 contraction goes
// to pd_cpu_sgemm and f64 ones to OpenBLAS; `--gemm=kernel` leaves f64 to
// loops; with `--gemm=blas` every contraction goes to OpenBLAS.
// Measurements behind that choice: lib/Target/CPU/README.md.
//
// The contraction analysis (GemmPlan.h, shared with the CUDA target's
// cuda-lower-gemm-to-library) describes each contraction by the loop
// dimensions of its four roles (batch, M, N, K;
// `linalg::inferContractionDims`) and, per operand, the stride of every loop
// dimension in elements (0 where the operand does not use the dimension).
// Dimensions of one role merge into one GEMM dimension when both operands
// that use them lay them out contiguously; M and N dimensions that do not
// merge, and batch dimensions, become `scf.for` loops around the call. K
// dimensions must merge (a loop over K would need to switch beta from 0 to 1
// across iterations; no model needs it).
//
//===----------------------------------------------------------------------===//

#include "pipedream/Target/CPU/GemmPlan.h"
#include "pipedream/Target/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <limits>
#include <numeric>

namespace pipedream::cpu {
#define GEN_PASS_DEF_LOWERGEMMTOBLASPASS
#include "pipedream/Target/CPU/Passes.h.inc"
} // namespace pipedream::cpu

using namespace mlir;

namespace {

/// CBLAS enum values (cblas.h).
constexpr int32_t kCblasRowMajor = 101;
constexpr int32_t kCblasNoTrans = 111;
constexpr int32_t kCblasTrans = 112;

/// Declares `name` (cblas_sgemm, cblas_dgemm or pd_cpu_sgemm: CBLAS's
/// arguments) in `module` if needed.
func::FuncOp getOrInsertGemm(ModuleOp module, FloatType elementType,
                             StringRef name) {
  if (auto existing = module.lookupSymbol<func::FuncOp>(name))
    return existing;
  MLIRContext *ctx = module.getContext();
  Type i32 = IntegerType::get(ctx, 32);
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  // (order, transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)
  SmallVector<Type> inputs = {i32, i32, i32, i32, i32, i32, elementType,
                              ptr, i32, ptr, i32, elementType, ptr, i32};
  OpBuilder builder(module.getBodyRegion());
  auto func = func::FuncOp::create(builder, module.getLoc(), name,
                                   builder.getFunctionType(inputs, {}));
  func.setPrivate();
  return func;
}

/// Emits the loops and calls for `plan` in place of `op`.
void emitGemm(linalg::LinalgOp op, const pipedream::GemmPlan &plan,
              func::FuncOp gemm) {
  OpBuilder builder(op);
  Location loc = op.getLoc();
  auto elementType = cast<FloatType>(
      cast<MemRefType>(plan.memrefs[2].getType()).getElementType());

  // beta = 0 when the output was just zero-filled: saves a pass over C.
  Operation *zeroFill = pipedream::findZeroFillOfOutput(op);
  bool zeroInit = zeroFill != nullptr;
  if (zeroFill)
    zeroFill->erase();

  // Base pointers (aligned pointer + the view's offset) and element offsets.
  Value bases[3];
  Value offsets[3];
  for (int i = 0; i < 3; ++i)
    pipedream::emitBasePointerAndOffset(builder, loc, plan.memrefs[i],
                                        bases[i], offsets[i]);

  auto i32Const = [&](int64_t v) -> Value {
    return arith::ConstantIntOp::create(builder, loc, v, 32);
  };
  Value order = i32Const(kCblasRowMajor);
  Value transA = i32Const(plan.transA ? kCblasTrans : kCblasNoTrans);
  Value transB = i32Const(plan.transB ? kCblasTrans : kCblasNoTrans);
  Value m = i32Const(plan.m), n = i32Const(plan.n), k = i32Const(plan.k);
  Value lda = i32Const(plan.lda), ldb = i32Const(plan.ldb),
        ldc = i32Const(plan.ldc);
  Value alpha = arith::ConstantFloatOp::create(
      builder, loc, elementType, APFloat(elementType.getFloatSemantics(), 1));
  Value beta = arith::ConstantFloatOp::create(
      builder, loc, elementType,
      zeroInit ? APFloat::getZero(elementType.getFloatSemantics())
               : APFloat(elementType.getFloatSemantics(), 1));

  // Loop nest over batch (and unmerged M/N) dimensions.
  Value pointers[3];
  pipedream::emitGemmItemPointers(builder, loc, bases, offsets, plan.loops,
                                  elementType, pointers);
  func::CallOp::create(builder, loc, gemm,
                       ValueRange{order, transA, transB, m, n, k, alpha,
                                  pointers[0], lda, pointers[1], ldb, beta,
                                  pointers[2], ldc});
  op->erase();
}

struct LowerGemmToBLASPass
    : pipedream::cpu::impl::LowerGemmToBLASPassBase<LowerGemmToBLASPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (sgemm != "cblas_sgemm" && sgemm != "pd_cpu_sgemm" &&
        sgemm != "pd_cpu_gemm_bf16") {
      module.emitError() << "cpu-lower-gemm-to-blas: sgemm=" << sgemm
                         << ": expected cblas_sgemm, pd_cpu_sgemm or "
                            "pd_cpu_gemm_bf16";
      return signalPassFailure();
    }
    bool f64 = lowerF64;
    SmallVector<std::pair<linalg::LinalgOp, pipedream::GemmPlan>> work;
    module.walk([&](linalg::LinalgOp op) {
      FailureOr<pipedream::GemmPlan> plan =
          pipedream::planGemm(op, [f64](Type type) {
            return isa<Float32Type>(type) || (f64 && isa<Float64Type>(type));
          });
      if (succeeded(plan))
        work.emplace_back(op, std::move(*plan));
    });
    for (auto &[op, plan] : work) {
      auto elementType = cast<FloatType>(
          cast<MemRefType>(plan.memrefs[2].getType()).getElementType());
      func::FuncOp gemm = getOrInsertGemm(
          module, elementType,
          elementType.isF32() ? StringRef(sgemm) : StringRef("cblas_dgemm"));
      emitGemm(op, plan, gemm);
    }
  }
};

} // namespace
