//===- GemmPlan.h - linalg contractions as strided GEMM calls ---*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Describes a linalg contraction on memrefs as a row-major GEMM
// (C = alpha * op(A) op(B) + beta * C with transposition flags and leading
// dimensions) plus loops around it, for the passes that replace contractions
// by library calls: cpu-lower-gemm-to-blas (CBLAS) and
// cuda-lower-gemm-to-library (pd_gpu_gemm_f32, cuBLAS in the runtime).
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_TARGET_CPU_GEMMPLAN_H
#define PIPEDREAM_TARGET_CPU_GEMMPLAN_H

#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/IR/Builders.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

namespace pipedream {

/// A loop around the GEMM call: its trip count and the stride, in elements,
/// each operand (A, B, C) advances by per iteration (0 = not at all).
struct GemmOuterLoop {
  int64_t size;
  int64_t stride[3];
};

/// A contraction as a row-major GEMM on strided operands.
///
/// Each contraction is described by the loop dimensions of its four roles
/// (batch, M, N, K; `linalg::inferContractionDims`) and, per operand, the
/// stride of every loop dimension in elements. Dimensions of one role merge
/// into one GEMM dimension when both operands that use them lay them out
/// contiguously; M and N dimensions that do not merge, and batch
/// dimensions, become `loops`. K dimensions must merge.
struct GemmPlan {
  /// Operand order after a possible swap (C^T = B^T A^T): 0 = A, 1 = B, 2 = C.
  mlir::Value memrefs[3];
  int64_t m = 1, n = 1, k = 1;
  bool transA = false, transB = false;
  /// Row strides, in elements, of the stored (row-major) A, B and C.
  int64_t lda = 1, ldb = 1, ldc = 1;
  /// Outermost first.
  llvm::SmallVector<GemmOuterLoop> loops;
};

/// Whether `op` is a contraction whose body is exactly `out + a * b` (or
/// `out + b * a`, `a * b + out`) on its block arguments: what a GEMM
/// computes. NOTE: linalg::isaContractionOpInterface alone also accepts
/// bodies with unary ops around the multiply (`out + -(a * b)`, which the
/// elementwise fusion makes from a negated product feeding a sum); a GEMM
/// would drop them.
bool isMulAddContraction(mlir::linalg::LinalgOp op);

/// Builds the plan for `op` (a linalg op on statically shaped memrefs with
/// two inputs and one output, all of one element type accepted by
/// `acceptElementType`), or fails when it is not a contraction a strided
/// GEMM can run, or when the GEMM would be 1 x 1 in a loop (row-wise dot
/// products: one call per output element; a reduction loop does better).
/// Sizes and leading dimensions fit in int32.
mlir::FailureOr<GemmPlan>
planGemm(mlir::linalg::LinalgOp op,
         llvm::function_ref<bool(mlir::Type)> acceptElementType);

/// The `linalg.fill` of +0.0 into `op`'s output that immediately precedes
/// `op` (only memory-effect-free ops in between), or null. A GEMM call can
/// then use beta = 0 and the fill be erased.
mlir::Operation *findZeroFillOfOutput(mlir::linalg::LinalgOp op);

/// Emits, before the builder's insertion point, the aligned base pointer of
/// `memref` as an `!llvm.ptr` and the view's offset (index, in elements).
void emitBasePointerAndOffset(mlir::OpBuilder &builder, mlir::Location loc,
                              mlir::Value memref, mlir::Value &base,
                              mlir::Value &offset);

/// Emits an `scf.for` nest over `loops` (outermost first) at the builder's
/// insertion point, leaves the insertion point in the innermost body, and
/// returns there, for A, B and C, the `!llvm.ptr` of the current GEMM item:
/// `bases[i]` + `offsets[i]` + sum(iv * loop.stride[i]) elements of
/// `elementType`.
void emitGemmItemPointers(mlir::OpBuilder &builder, mlir::Location loc,
                          const mlir::Value (&bases)[3],
                          const mlir::Value (&offsets)[3],
                          llvm::ArrayRef<GemmOuterLoop> loops,
                          mlir::Type elementType, mlir::Value (&pointers)[3]);

} // namespace pipedream

#endif // PIPEDREAM_TARGET_CPU_GEMMPLAN_H
