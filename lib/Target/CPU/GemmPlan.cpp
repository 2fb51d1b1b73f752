//===- GemmPlan.cpp - linalg contractions as strided GEMM calls -----------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The contraction analysis shared by cpu-lower-gemm-to-blas and
// cuda-lower-gemm-to-library (see GemmPlan.h).
//
//===----------------------------------------------------------------------===//

#include "pipedream/Target/CPU/GemmPlan.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <limits>

using namespace mlir;
using pipedream::GemmOuterLoop;
using pipedream::GemmPlan;

namespace {

/// One operand of the contraction: its memref and the stride, in elements,
/// of every loop dimension (0 where the operand does not index by it).
struct OperandStrides {
  Value memref;
  SmallVector<int64_t> loopStride;
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
MergedDim mergeDims(ArrayRef<unsigned> dims, ArrayRef<int64_t> sizes,
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
bool isUnit(int64_t size, int64_t stride) {
  return size == 1 || stride == 1;
}

/// Leading dimension for a dimension of `size` with `stride`, at least
/// `minimum` (BLAS requires ld >= max(1, columns) even for one row).
int64_t leadingDim(int64_t size, int64_t stride, int64_t minimum) {
  minimum = std::max<int64_t>(minimum, 1);
  return size == 1 ? minimum : stride;
}

/// Builds the plan for `op`, or fails when it is not a contraction BLAS can
/// run (the op then goes to the loop lowering).
} // namespace

bool pipedream::isMulAddContraction(linalg::LinalgOp op) {
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      !linalg::isaContractionOpInterface(op))
    return false;
  Block *body = op.getBlock();
  if (!body || body->getNumArguments() != 3)
    return false;
  auto yield = dyn_cast<linalg::YieldOp>(body->getTerminator());
  if (!yield || yield.getNumOperands() != 1)
    return false;
  Operation *add = yield.getOperand(0).getDefiningOp();
  if (!add || !isa<arith::AddFOp, arith::AddIOp>(add) ||
      add->getBlock() != body)
    return false;
  Value a = body->getArgument(0), b = body->getArgument(1),
        out = body->getArgument(2);
  auto isProduct = [&](Value v) {
    Operation *mul = v.getDefiningOp();
    if (!mul || !isa<arith::MulFOp, arith::MulIOp>(mul) ||
        mul->getBlock() != body)
      return false;
    return (mul->getOperand(0) == a && mul->getOperand(1) == b) ||
           (mul->getOperand(0) == b && mul->getOperand(1) == a);
  };
  // Exactly the mul, the add and the yield.
  if (!llvm::hasNItems(body->getOperations(), 3))
    return false;
  return (add->getOperand(0) == out && isProduct(add->getOperand(1))) ||
         (add->getOperand(1) == out && isProduct(add->getOperand(0)));
}

FailureOr<GemmPlan>
pipedream::planGemm(linalg::LinalgOp op,
                    llvm::function_ref<bool(Type)> acceptElementType) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1)
    return failure();
  if (!isMulAddContraction(op))
    return failure();

  // One element type everywhere (no mixed-precision contractions).
  Type elementType;
  SmallVector<OperandStrides, 3> operands;
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    if (!type || !type.hasStaticShape())
      return failure();
    if (!elementType)
      elementType = type.getElementType();
    if (type.getElementType() != elementType ||
        !acceptElementType(elementType))
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
    GemmOuterLoop loop{sizes[d], {sA[d], sB[d], sC[d]}};
    if (swapped)
      std::swap(loop.stride[0], loop.stride[1]);
    plan.loops.push_back(loop);
  }
  // A 1 x 1 GEMM in a loop is a row-wise dot product (softmax's and
  // LayerNorm's backward: sum_k dy * y per row), one library call per
  // output element; the reduction lowerings do it in one pass.
  if (plan.m == 1 && plan.n == 1 && !plan.loops.empty())
    return failure();
  return plan;
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


Operation *pipedream::findZeroFillOfOutput(linalg::LinalgOp op) {
  // Views and constants between the fill and the op read or write nothing.
  Value output = op.getDpsInitOperand(0)->get();
  Operation *previous = op->getPrevNode();
  while (previous && !isa<linalg::FillOp>(previous) &&
         isMemoryEffectFree(previous))
    previous = previous->getPrevNode();
  return isZeroFillOf(previous, output) ? previous : nullptr;
}

void pipedream::emitBasePointerAndOffset(OpBuilder &builder, Location loc,
                                         Value memref, Value &base,
                                         Value &offset) {
  Value aligned =
      memref::ExtractAlignedPointerAsIndexOp::create(builder, loc, memref);
  Value asInt =
      arith::IndexCastOp::create(builder, loc, builder.getI64Type(), aligned);
  base = LLVM::IntToPtrOp::create(builder, loc,
                                  LLVM::LLVMPointerType::get(builder.getContext()),
                                  asInt);
  offset = memref::ExtractStridedMetadataOp::create(builder, loc, memref)
               .getOffset();
}

void pipedream::emitGemmItemPointers(OpBuilder &builder, Location loc,
                                     const Value (&bases)[3],
                                     const Value (&offsets)[3],
                                     ArrayRef<GemmOuterLoop> loops,
                                     Type elementType, Value (&pointers)[3]) {
  auto indexConst = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(builder, loc, v);
  };
  Value current[3] = {offsets[0], offsets[1], offsets[2]};
  Value zero = indexConst(0), one = indexConst(1);
  for (const GemmOuterLoop &loop : loops) {
    auto forOp =
        scf::ForOp::create(builder, loc, zero, indexConst(loop.size), one);
    builder.setInsertionPointToStart(forOp.getBody());
    Value iv = forOp.getInductionVar();
    for (int i = 0; i < 3; ++i) {
      if (loop.stride[i] == 0)
        continue;
      Value step = arith::MulIOp::create(builder, loc, iv,
                                         indexConst(loop.stride[i]));
      current[i] = arith::AddIOp::create(builder, loc, current[i], step);
    }
  }
  Type ptrType = LLVM::LLVMPointerType::get(builder.getContext());
  for (int i = 0; i < 3; ++i) {
    Value offset = arith::IndexCastOp::create(builder, loc,
                                              builder.getI64Type(), current[i]);
    pointers[i] = LLVM::GEPOp::create(builder, loc, ptrType, elementType,
                                      bases[i], ArrayRef<LLVM::GEPArg>{offset});
  }
}
