//===- NNGradientUtils.cpp - helpers shared by the derivative rules -------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "NNGradients.h"

#include "pipedream/Dialect/NN/IR/NNDialect.h"

#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;

namespace pipedream::nn::detail {

void attachGradientModels(MLIRContext *context) {
  attachElementwiseGradientModels(context);
  attachShapeGradientModels(context);
  attachNeuralGradientModels(context);
  attachMathGradientModels(context);
}

Value sumToShape(OpBuilder &builder, Location loc, Value grad,
                 RankedTensorType target) {
  auto gradType = cast<RankedTensorType>(grad.getType());
  if (gradType.getShape() == target.getShape())
    return grad;
  int64_t rank = gradType.getRank();
  int64_t lead = rank - target.getRank();
  SmallVector<int64_t> axes;
  for (int64_t d = 0; d < rank; ++d) {
    if (d < lead) {
      axes.push_back(d);
      continue;
    }
    if (target.getDimSize(d - lead) == 1 && gradType.getDimSize(d) != 1)
      axes.push_back(d);
  }
  Value summed = grad;
  if (!axes.empty())
    summed = ReduceSumOp::create(builder, loc, grad, axes,
                                 /*keepdims=*/true);
  if (cast<RankedTensorType>(summed.getType()).getShape() ==
      target.getShape())
    return summed;
  return ReshapeOp::create(builder, loc, summed, target.getShape());
}

Value createScalar(OpBuilder &builder, Location loc, Type elementType,
                   double value) {
  auto type = RankedTensorType::get({}, elementType);
  return createSplat(builder, loc, type, value);
}

Value createSplat(OpBuilder &builder, Location loc, RankedTensorType type,
                  double value) {
  auto attr = DenseElementsAttr::get(
      type, builder.getFloatAttr(type.getElementType(), value));
  return ConstantOp::create(builder, loc, attr);
}

Value gradOrZeros(OpBuilder &builder, Location loc, Value grad,
                  RankedTensorType type) {
  if (grad)
    return grad;
  return createSplat(builder, loc, type, 0.0);
}

} // namespace pipedream::nn::detail
