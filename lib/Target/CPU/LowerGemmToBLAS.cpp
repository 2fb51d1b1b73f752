//===- LowerGemmToBLAS.cpp - linalg contractions to cblas_?gemm -----------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Replaces f32/f64 linalg contractions on memrefs by CBLAS gemm calls.
//
// In the default GEMM lowering (`--gemm=auto`) this pass only sees what
// cpu-vectorize-gemm left: transposed-B and column-major layouts, sizes the
// register tile does not divide, f64. With `--gemm=blas` it takes every
// contraction. Measurements behind that split: lib/Target/CPU/README.md.
//
// Each contraction is described by the loop dimensions of its four roles
// (batch, M, N, K; `linalg::inferContractionDims`) and, per operand, the
// stride of every loop dimension in elements (0 where the operand does not
// use the dimension). Dimensions of one role merge into one GEMM dimension
// when both operands that use them lay them out contiguously; M and N
// dimensions that do not merge, and batch dimensions, become `scf.for` loops
// around the call. K dimensions must merge (a loop over K would need to
// switch beta from 0 to 1 across iterations; no model needs it).
//
//===----------------------------------------------------------------------===//

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

/// One operand of the contraction: its memref and the stride, in elements,
/// of every loop dimension (0 where the operand does not index by it).
struct OperandStrides {
  Value memref;
  SmallVector<int64_t> loopStride;
};

/// A loop around the GEMM call: its trip count and the stride each operand
/// (A, B, C) advances by per iteration.
struct OuterLoop {
  int64_t size;
  int64_t stride[3];
};

/// Everything needed to emit the calls for one contraction.
struct GemmPlan {
  /// Operand order after a possible swap (C^T = B^T A^T): 0 = A, 1 = B, 2 = C.
  Value memrefs[3];
  int64_t m = 1, n = 1, k = 1;
  bool transA = false, transB = false;
  int64_t lda = 1, ldb = 1, ldc = 1;
  SmallVector<OuterLoop> loops;
};

/// A dimension group (M, N or K) reduced to one GEMM dimension: its size and
/// its stride in the two operands that use it.
struct MergedDim {
  int64_t size = 1;
  int64_t strideX = 0, strideY = 0;
};

/// Merges the dimensions `dims` of one role. Dimensions are ordered by
/// decreasing stride in the operand Y (the output for M and N); the longest
/// innermost run that is contiguous in both X and Y becomes the GEMM
/// dimension, the rest are returned in `rest` (to be looped over).
static MergedDim mergeDims(ArrayRef<unsigned> dims, ArrayRef<int64_t> sizes,
                           ArrayRef<int64_t> strideX,
                           ArrayRef<int64_t> strideY,
                           SmallVectorImpl<unsigned> &rest) {
  SmallVector<unsigned> order;
  for (unsigned d : dims)
    if (sizes[d] != 1)
      order.push_back(d);
  llvm::sort(order, [&](unsigned a, unsigned b) {
    return strideY[a] != strideY[b] ? strideY[a] > strideY[b] : a < b;
  });
  MergedDim merged;
  if (order.empty())
    return merged;
  unsigned last = order.back();
  merged.size = sizes[last];
  merged.strideX = strideX[last];
  merged.strideY = strideY[last];
  size_t first = order.size() - 1;
  while (first > 0) {
    unsigned outer = order[first - 1];
    if (strideX[outer] != merged.strideX * merged.size ||
        strideY[outer] != merged.strideY * merged.size)
      break;
    merged.size *= sizes[outer];
    --first;
  }
  rest.append(order.begin(), order.begin() + first);
  return merged;
}

/// True when a dimension of `size` elements with `stride` is unit-stride for
/// BLAS purposes (a size-1 dimension has any stride).
static bool isUnit(int64_t size, int64_t stride) {
  return size == 1 || stride == 1;
}

/// Leading dimension for a dimension of `size` with `stride`, at least
/// `minimum` (BLAS requires ld >= max(1, columns) even for one row).
static int64_t leadingDim(int64_t size, int64_t stride, int64_t minimum) {
  minimum = std::max<int64_t>(minimum, 1);
  return size == 1 ? minimum : stride;
}

/// Builds the plan for `op`, or fails when it is not a contraction BLAS can
/// run (the op then goes to the loop lowering).
static FailureOr<GemmPlan> planGemm(linalg::LinalgOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1)
    return failure();
  if (!linalg::isaContractionOpInterface(op))
    return failure();

  // Same f32/f64 element type everywhere (no mixed-precision contractions).
  Type elementType;
  SmallVector<OperandStrides, 3> operands;
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    if (!type || !type.hasStaticShape())
      return failure();
    if (!elementType)
      elementType = type.getElementType();
    if (type.getElementType() != elementType ||
        !isa<Float32Type, Float64Type>(elementType))
      return failure();
    SmallVector<int64_t> strides;
    int64_t offset;
    if (failed(type.getStridesAndOffset(strides, offset)) ||
        llvm::any_of(strides, ShapedType::isDynamic))
      return failure();
    AffineMap map = op.getMatchingIndexingMap(&operand);
    if (!map.isProjectedPermutation(/*allowZeroInResults=*/false))
      return failure();
    OperandStrides info{operand.get(),
                        SmallVector<int64_t>(op.getNumLoops(), 0)};
    for (auto [result, stride] : llvm::zip(map.getResults(), strides))
      info.loopStride[cast<AffineDimExpr>(result).getPosition()] = stride;
    operands.push_back(std::move(info));
  }

  SmallVector<int64_t> sizes = op.getStaticLoopRanges();
  if (llvm::any_of(sizes, ShapedType::isDynamic))
    return failure();
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (failed(dims))
    return failure();
  // Every loop must have a role, or the op computes something else
  // (e.g. a broadcast into the output).
  if (dims->batch.size() + dims->m.size() + dims->n.size() + dims->k.size() !=
      op.getNumLoops())
    return failure();

  ArrayRef<int64_t> sA = operands[0].loopStride;
  ArrayRef<int64_t> sB = operands[1].loopStride;
  ArrayRef<int64_t> sC = operands[2].loopStride;

  SmallVector<unsigned> loopDims(dims->batch.begin(), dims->batch.end());
  MergedDim m = mergeDims(dims->m, sizes, sA, sC, loopDims);
  MergedDim n = mergeDims(dims->n, sizes, sB, sC, loopDims);
  SmallVector<unsigned> kRest;
  MergedDim k = mergeDims(dims->k, sizes, sA, sB, kRest);
  if (!kRest.empty())
    return failure();

  GemmPlan plan;
  Value a = operands[0].memref, b = operands[1].memref,
        c = operands[2].memref;
  // m: (size, strideA, strideC); n: (size, strideB, strideC);
  // k: (size, strideA, strideB).
  int64_t aM = m.strideX, cM = m.strideY, bN = n.strideX, cN = n.strideY;
  int64_t aK = k.strideX, bK = k.strideY;
  int64_t sizeM = m.size, sizeN = n.size, sizeK = k.size;
  bool swapped = false;
  if (!isUnit(sizeN, cN)) {
    if (!isUnit(sizeM, cM))
      return failure();
    // Column-major output: compute C^T = B^T A^T instead.
    swapped = true;
    std::swap(a, b);
    std::swap(sizeM, sizeN);
    std::swap(cM, cN);
    std::swap(aM, bN);
    std::swap(aK, bK);
  }
  plan.memrefs[0] = a;
  plan.memrefs[1] = b;
  plan.memrefs[2] = c;
  plan.m = sizeM;
  plan.n = sizeN;
  plan.k = sizeK;

  plan.ldc = leadingDim(sizeM, cM, sizeN);
  if (plan.ldc < std::max<int64_t>(sizeN, 1))
    return failure();

  // A is M x K.
  if (isUnit(sizeK, aK) && leadingDim(sizeM, aM, sizeK) >= sizeK) {
    plan.transA = false;
    plan.lda = leadingDim(sizeM, aM, sizeK);
  } else if (isUnit(sizeM, aM) && leadingDim(sizeK, aK, sizeM) >= sizeM) {
    plan.transA = true;
    plan.lda = leadingDim(sizeK, aK, sizeM);
  } else {
    return failure();
  }
  // B is K x N.
  if (isUnit(sizeN, bN) && leadingDim(sizeK, bK, sizeN) >= sizeN) {
    plan.transB = false;
    plan.ldb = leadingDim(sizeK, bK, sizeN);
  } else if (isUnit(sizeK, bK) && leadingDim(sizeN, bN, sizeK) >= sizeK) {
    plan.transB = true;
    plan.ldb = leadingDim(sizeN, bN, sizeK);
  } else {
    return failure();
  }

  constexpr int64_t kMaxInt = std::numeric_limits<int32_t>::max();
  for (int64_t v : {plan.m, plan.n, plan.k, plan.lda, plan.ldb, plan.ldc})
    if (v > kMaxInt)
      return failure();

  for (unsigned d : loopDims) {
    if (sizes[d] == 1)
      continue;
    OuterLoop loop{sizes[d], {sA[d], sB[d], sC[d]}};
    if (swapped)
      std::swap(loop.stride[0], loop.stride[1]);
    plan.loops.push_back(loop);
  }
  return plan;
}

/// Declares `cblas_sgemm` / `cblas_dgemm` in `module` if needed.
static func::FuncOp getOrInsertGemm(ModuleOp module, FloatType elementType) {
  StringRef name = elementType.isF32() ? "cblas_sgemm" : "cblas_dgemm";
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

/// True when `op` is a `linalg.fill` of floating-point zero into `target`.
static bool isZeroFillOf(Operation *op, Value target) {
  auto fill = dyn_cast_or_null<linalg::FillOp>(op);
  if (!fill || fill.getOutputs().size() != 1 ||
      fill.getOutputs()[0] != target)
    return false;
  return matchPattern(fill.getInputs()[0], m_AnyZeroFloat()) &&
         !matchPattern(fill.getInputs()[0], m_NegZeroFloat());
}

/// Emits the loops and calls for `plan` in place of `op`.
static void emitGemm(linalg::LinalgOp op, const GemmPlan &plan,
                     func::FuncOp gemm) {
  OpBuilder builder(op);
  Location loc = op.getLoc();
  MLIRContext *ctx = op.getContext();
  auto elementType = cast<FloatType>(
      cast<MemRefType>(plan.memrefs[2].getType()).getElementType());
  Type ptrType = LLVM::LLVMPointerType::get(ctx);
  Type i64 = builder.getI64Type();

  // beta = 0 when the output was just zero-filled: saves a pass over C.
  // Views and constants between the fill and the op read or write nothing.
  Value output = op.getDpsInitOperand(0)->get();
  Operation *previous = op->getPrevNode();
  while (previous && !isa<linalg::FillOp>(previous) &&
         isMemoryEffectFree(previous))
    previous = previous->getPrevNode();
  bool zeroInit = isZeroFillOf(previous, output);
  if (zeroInit)
    previous->erase();

  // Base pointers (aligned pointer + the view's offset) and element offsets.
  Value bases[3];
  Value offsets[3];
  for (int i = 0; i < 3; ++i) {
    Value memref = plan.memrefs[i];
    Value aligned =
        memref::ExtractAlignedPointerAsIndexOp::create(builder, loc, memref);
    Value asInt = arith::IndexCastOp::create(builder, loc, i64, aligned);
    bases[i] = LLVM::IntToPtrOp::create(builder, loc, ptrType, asInt);
    auto metadata =
        memref::ExtractStridedMetadataOp::create(builder, loc, memref);
    offsets[i] = metadata.getOffset();
  }

  auto i32Const = [&](int64_t v) -> Value {
    return arith::ConstantIntOp::create(builder, loc, v, 32);
  };
  auto indexConst = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(builder, loc, v);
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
  Value zero = indexConst(0), one = indexConst(1);
  for (const OuterLoop &loop : plan.loops) {
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
  func::CallOp::create(builder, loc, gemm,
                       ValueRange{order, transA, transB, m, n, k, alpha,
                                  pointers[0], lda, pointers[1], ldb, beta,
                                  pointers[2], ldc});
  op->erase();
}

struct LowerGemmToBLASPass
    : pipedream::cpu::impl::LowerGemmToBLASPassBase<LowerGemmToBLASPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<std::pair<linalg::LinalgOp, GemmPlan>> work;
    module.walk([&](linalg::LinalgOp op) {
      FailureOr<GemmPlan> plan = planGemm(op);
      if (succeeded(plan))
        work.emplace_back(op, std::move(*plan));
    });
    for (auto &[op, plan] : work) {
      auto elementType = cast<FloatType>(
          cast<MemRefType>(plan.memrefs[2].getType()).getElementType());
      func::FuncOp gemm = getOrInsertGemm(module, elementType);
      emitGemm(op, plan, gemm);
    }
  }
};

} // namespace
