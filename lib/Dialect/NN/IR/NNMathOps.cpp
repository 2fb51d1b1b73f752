//===- NNMathOps.cpp - nn math, comparison and scan ops -------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Result-type inference, verifiers and costs of the ops of NNMathOps.td
// (the elementwise ones infer their types from ODS traits or the shared
// broadcasting rule).
//
//===----------------------------------------------------------------------===//

#include "pipedream/Dialect/NN/IR/NNOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace pipedream::nn;

//===----------------------------------------------------------------------===//
// Activations with attributes
//===----------------------------------------------------------------------===//

LogicalResult CeluOp::verify() {
  if (getAlpha().convertToDouble() == 0.0)
    return emitOpError("alpha must be non-zero");
  return success();
}

LogicalResult ShrinkOp::verify() {
  double lambd = getLambd().convertToDouble();
  if (!(lambd >= 0.0))
    return emitOpError("lambd must be non-negative, got ") << lambd;
  return success();
}

LogicalResult ModOp::verify() {
  if (isa<FloatType>(getElementTypeOrSelf(getLhs().getType())) && !getFmod())
    return emitOpError("a floating-point remainder needs fmod = true");
  return success();
}

//===----------------------------------------------------------------------===//
// Arg-max/min
//===----------------------------------------------------------------------===//

static LogicalResult inferArgReduce(MLIRContext *context,
                                    std::optional<Location> loc,
                                    Type inputType, int64_t axis,
                                    bool keepdims,
                                    SmallVectorImpl<Type> &inferred) {
  auto input = cast<RankedTensorType>(inputType);
  int64_t rank = input.getRank();
  if (axis < 0 || axis >= rank)
    return emitOptionalError(loc, "axis ", axis, " is out of range [0, ",
                             rank, ")");
  if (input.getDimSize(axis) == 0)
    return emitOptionalError(loc, "axis ", axis,
                             " is empty: it has no maximum or minimum");
  SmallVector<int64_t> shape(input.getShape());
  if (keepdims)
    shape[axis] = 1;
  else
    shape.erase(shape.begin() + axis);
  inferred.push_back(RankedTensorType::get(shape, IntegerType::get(context, 64)));
  return success();
}

#define NN_ARG_REDUCE_OP(OP)                                                   \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *context, std::optional<Location> loc, Adaptor adaptor,      \
      SmallVectorImpl<Type> &inferred) {                                       \
    return inferArgReduce(context, loc, adaptor.getInput().getType(),          \
                          adaptor.getAxis(), adaptor.getKeepdims(), inferred); \
  }
NN_ARG_REDUCE_OP(ArgMaxOp)
NN_ARG_REDUCE_OP(ArgMinOp)
#undef NN_ARG_REDUCE_OP

//===----------------------------------------------------------------------===//
// CumSumOp
//===----------------------------------------------------------------------===//

LogicalResult CumSumOp::verify() {
  int64_t rank = getInput().getType().getRank();
  // I64Attr's getter zero-extends: a negative axis reads as a huge one.
  auto axis = static_cast<int64_t>(getAxis());
  if (axis < 0 || axis >= rank)
    return emitOpError("axis ")
           << axis << " is out of range [0, " << rank << ")";
  return success();
}

// The lowering sums a masked row per output element: n^2 per axis row.
int64_t CumSumOp::getForwardFlops() {
  auto type = getInput().getType();
  int64_t axis = getAxis();
  int64_t length = axis >= 0 && axis < type.getRank() ? type.getDimSize(axis) : 1;
  return type.getNumElements() * std::max<int64_t>(length, 1);
}

//===----------------------------------------------------------------------===//
// TriluOp
//===----------------------------------------------------------------------===//

LogicalResult TriluOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  if (input.getRank() < 2)
    return emitOptionalError(loc, "'nn.trilu' input must have rank >= 2, got ",
                             input.getRank());
  inferred.push_back(input);
  return success();
}

//===----------------------------------------------------------------------===//
// TopKOp
//===----------------------------------------------------------------------===//

LogicalResult TopKOp::inferReturnTypes(MLIRContext *context,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  int64_t rank = input.getRank(), axis = adaptor.getAxis();
  if (axis < 0 || axis >= rank)
    return emitOptionalError(loc, "'nn.top_k' axis ", axis,
                             " is out of range [0, ", rank, ")");
  int64_t k = adaptor.getK();
  if (k < 0 || k > input.getDimSize(axis))
    return emitOptionalError(loc, "'nn.top_k' k = ", k,
                             " is out of range [0, ", input.getDimSize(axis),
                             "]");
  SmallVector<int64_t> shape(input.getShape());
  shape[axis] = k;
  inferred.push_back(input.clone(shape));
  inferred.push_back(RankedTensorType::get(shape, IntegerType::get(context, 64)));
  return success();
}

// The lowering ranks every element against its whole row, then gathers k
// of them: n^2 + k n per row of n.
int64_t TopKOp::getForwardFlops() {
  auto type = getInput().getType();
  int64_t axis = getAxis();
  int64_t n = axis >= 0 && axis < type.getRank() ? type.getDimSize(axis) : 1;
  return type.getNumElements() * (n + std::max<int64_t>(getK(), 0));
}
