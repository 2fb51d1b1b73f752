//===- NNGradients.h - derivative rules of nn ops (internal) ----*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The derivative rules (GradientOpInterface) are external models attached
// when the dialect is initialized, one file per op family:
//   NNGradientsElementwise.cpp  elementwise, activations, softmax, matmul,
//                               gemm, layer normalization, losses
//   NNGradientsShape.cpp        shape ops, reductions, gather, where, cast,
//                               dropout, concat/split/slice/expand
//   NNGradientsNeural.cpp       convolution, pooling, batch normalization
//   NNGradientsMath.cpp         the ops of NNMathOps.td (trigonometric,
//                               activations, max/min/mod, reduce_min/prod,
//                               cumsum)
// plus the helpers every rule shares (NNGradientUtils.cpp).
//
// A rule is built at the builder's insertion point from the gradients of
// the op's results (a null value: that result does not reach the loss; when
// every result gradient is null the rule is not called). It appends one value
// per operand, null where the operand has no gradient.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_LIB_DIALECT_NN_IR_NNGRADIENTS_H
#define PIPEDREAM_LIB_DIALECT_NN_IR_NNGRADIENTS_H

#include "pipedream/Dialect/NN/IR/NNInterfaces.h"
#include "pipedream/Dialect/NN/IR/NNOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

#include <utility>

namespace pipedream::nn::detail {

/// Attaches every derivative rule; called from NNDialect::initialize().
void attachGradientModels(mlir::MLIRContext *context);
void attachElementwiseGradientModels(mlir::MLIRContext *context);
void attachShapeGradientModels(mlir::MLIRContext *context);
void attachNeuralGradientModels(mlir::MLIRContext *context);
void attachMathGradientModels(mlir::MLIRContext *context);

/// The gradient of a broadcast operand of type `target` from the gradient
/// `grad` of the broadcast result: sums over the dimensions broadcasting
/// added (leading ones) or stretched (size 1 in `target`), then reshapes to
/// `target`. Returns `grad` unchanged when the shapes already agree.
mlir::Value sumToShape(mlir::OpBuilder &builder, mlir::Location loc,
                       mlir::Value grad, mlir::RankedTensorType target);

/// A rank-0 constant of `elementType` (float) holding `value`.
mlir::Value createScalar(mlir::OpBuilder &builder, mlir::Location loc,
                         mlir::Type elementType, double value);

/// A splat constant of `type` (float) holding `value`.
mlir::Value createSplat(mlir::OpBuilder &builder, mlir::Location loc,
                        mlir::RankedTensorType type, double value);

/// `grad` when non-null, else zeros of `type` (for multi-result ops where
/// only some results reach the loss).
mlir::Value gradOrZeros(mlir::OpBuilder &builder, mlir::Location loc,
                        mlir::Value grad, mlir::RankedTensorType type);

/// The ranked tensor type of `v`.
inline mlir::RankedTensorType typeOf(mlir::Value v) {
  return llvm::cast<mlir::RankedTensorType>(v.getType());
}

/// Whether `v` is a tensor of floats (has a gradient).
inline bool isFloatTensor(mlir::Value v) {
  return llvm::isa<mlir::FloatType>(typeOf(v).getElementType());
}

/// `grad` summed to `operand`'s shape (the gradient of a broadcast
/// operand), or null when `operand` is not float.
inline mlir::Value unbroadcast(mlir::OpBuilder &b, mlir::Location loc,
                               mlir::Value grad, mlir::Value operand) {
  if (!isFloatTensor(operand))
    return mlir::Value();
  return sumToShape(b, loc, grad, typeOf(operand));
}

/// The guard of a rule whose operands have gradients only when `x` is a
/// tensor of floats: when it is not, appends `numOperands` null gradients
/// and returns true (the rule is done).
inline bool
appendNullGradsUnlessFloat(mlir::Value x, size_t numOperands,
                           llvm::SmallVectorImpl<mlir::Value> &out) {
  if (isFloatTensor(x))
    return false;
  out.append(numOperands, mlir::Value());
  return true;
}

/// Builders the derivative rules compose: a rank-0 constant of `like`'s
/// element type (broadcasts against anything), and the nn arithmetic ops.
inline mlir::Value scalar(mlir::OpBuilder &b, mlir::Location loc,
                          mlir::Value like, double value) {
  return createScalar(b, loc, typeOf(like).getElementType(), value);
}
inline mlir::Value mul(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x,
                       mlir::Value y) {
  return MulOp::create(b, loc, x, y);
}
inline mlir::Value mul(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x,
                       double c) {
  return MulOp::create(b, loc, x, scalar(b, loc, x, c));
}
inline mlir::Value add(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x,
                       mlir::Value y) {
  return AddOp::create(b, loc, x, y);
}
inline mlir::Value sub(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x,
                       mlir::Value y) {
  return SubOp::create(b, loc, x, y);
}
inline mlir::Value div(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x,
                       mlir::Value y) {
  return DivOp::create(b, loc, x, y);
}

/// A rule `dx = g * slope(op)`, `slope` built from the op.
template <typename OpTy,
          mlir::Value (*Slope)(OpTy, mlir::OpBuilder &, mlir::Location)>
mlir::LogicalResult slopeGrad(OpTy op, mlir::OpBuilder &b,
                              mlir::ValueRange grads,
                              llvm::SmallVectorImpl<mlir::Value> &out) {
  mlir::Location loc = op.getLoc();
  out.push_back(mul(b, loc, grads[0], Slope(op, b, loc)));
  return mlir::success();
}

/// The rule of a broadcasting binary op z = f(x, y) whose operands have
/// gradients only when x is a tensor of floats: `partials(loc, x, y, g)`
/// returns dx and dy at the result's shape (g: the result's gradient), each
/// then summed back to its operand's shape.
template <typename OpTy, typename PartialsFn>
mlir::LogicalResult
binaryFloatGrad(OpTy op, mlir::OpBuilder &b, mlir::ValueRange grads,
                llvm::SmallVectorImpl<mlir::Value> &out, PartialsFn partials) {
  mlir::Location loc = op.getLoc();
  mlir::Value x = op.getLhs(), y = op.getRhs();
  if (appendNullGradsUnlessFloat(x, 2, out))
    return mlir::success();
  auto [dx, dy] = partials(loc, x, y, grads[0]);
  out.push_back(unbroadcast(b, loc, dx, x));
  out.push_back(unbroadcast(b, loc, dy, y));
  return mlir::success();
}

/// The rule of reduce_max and reduce_min: the gradient goes to the positions
/// equal to the extremum, split evenly among ties (torch.amax's backward).
/// `kept(v)` gives a reduction-shaped value with the reduced axes as size 1,
/// so it broadcasts against the input.
template <typename OpTy, typename KeptFn>
mlir::LogicalResult
reduceExtremumGrad(OpTy op, mlir::OpBuilder &b, mlir::ValueRange grads,
                   llvm::SmallVectorImpl<mlir::Value> &out, KeptFn kept) {
  mlir::Location loc = op.getLoc();
  mlir::Value x = op.getInput();
  if (appendNullGradsUnlessFloat(x, 1, out))
    return mlir::success();
  mlir::Type element = typeOf(x).getElementType();
  mlir::Value extremum = kept(op.getOutput());
  mlir::Value mask =
      CastOp::create(b, loc, EqualOp::create(b, loc, x, extremum), element);
  mlir::Value ties = ReduceSumOp::create(b, loc, mask, op.getAxes(),
                                         /*keepdims=*/true);
  mlir::Value share = div(b, loc, kept(grads[0]), ties);
  out.push_back(mul(b, loc, mask, share));
  return mlir::success();
}

/// A rule written as a function of the concrete op; it appends one value
/// per operand.
template <typename OpTy>
using RuleFn = mlir::LogicalResult (*)(OpTy, mlir::OpBuilder &,
                                       mlir::ValueRange,
                                       llvm::SmallVectorImpl<mlir::Value> &);

/// The external model of a rule function.
template <typename OpTy, RuleFn<OpTy> Fn>
struct Rule : GradientOpInterface::ExternalModel<Rule<OpTy, Fn>, OpTy> {
  mlir::LogicalResult
  buildGradient(mlir::Operation *op, mlir::OpBuilder &b,
                mlir::ValueRange resultGrads,
                llvm::SmallVectorImpl<mlir::Value> &operandGrads) const {
    return Fn(llvm::cast<OpTy>(op), b, resultGrads, operandGrads);
  }
};

/// Attaches `Fn` as the derivative rule of `OpTy`.
template <typename OpTy, RuleFn<OpTy> Fn>
void attach(mlir::MLIRContext *ctx) {
  OpTy::template attachInterface<Rule<OpTy, Fn>>(*ctx);
}

} // namespace pipedream::nn::detail

#endif // PIPEDREAM_LIB_DIALECT_NN_IR_NNGRADIENTS_H
