//===- NNGradientsShape.cpp - derivative rules ------------------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Vector-Jacobian products of the data-movement ops (reshapes, transposes,
// broadcasts, concat/split/slice, gather), the reductions, `where`, `cast`,
// `dropout` and the ops without gradients (`constant`, `equal`). See
// NNGradients.h for the contract every rule follows.
//
// Slices and gathers scatter their gradient back with the adjoint ops
// `nn.slice_grad` and `nn.gather_grad`; everything else is a composition of
// existing nn ops.
//
//===----------------------------------------------------------------------===//

#include "NNGradients.h"

#include "pipedream/Dialect/NN/IR/NNInterfaces.h"

using namespace mlir;

namespace pipedream::nn::detail {
namespace {

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

Value reshape(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> shape) {
  if (typeOf(x).getShape() == shape)
    return x;
  return ReshapeOp::create(b, loc, x, shape);
}

/// `shape` with the dimensions in `axes` (sorted) set to 1: the keepdims
/// form of a reduction's result.
SmallVector<int64_t> keptShape(ArrayRef<int64_t> shape,
                               ArrayRef<int64_t> axes) {
  SmallVector<int64_t> kept(shape);
  for (int64_t axis : axes)
    kept[axis] = 1;
  return kept;
}

/// Same, for ops with no differentiable operand at all (`equal`, `cast`
/// between floats and integers...): the default would call a float
/// comparison differentiable.
template <typename OpTy, RuleFn<OpTy> Fn, bool (*Differentiable)(OpTy,
                                                                 unsigned)>
struct RuleWithOperands
    : GradientOpInterface::ExternalModel<
          RuleWithOperands<OpTy, Fn, Differentiable>, OpTy> {
  LogicalResult buildGradient(Operation *op, OpBuilder &b,
                              ValueRange resultGrads,
                              SmallVectorImpl<Value> &operandGrads) const {
    return Fn(cast<OpTy>(op), b, resultGrads, operandGrads);
  }
  bool isDifferentiableOperand(Operation *op, unsigned index) const {
    return Differentiable(cast<OpTy>(op), index);
  }
};

/// The gradient of a result shaped like `operand` by a pure reshape, or
/// null for integer operands.
Value reshapeBack(OpBuilder &b, Location loc, Value grad, Value operand) {
  if (!isFloatTensor(operand))
    return Value();
  return reshape(b, loc, grad, typeOf(operand).getShape());
}

//===----------------------------------------------------------------------===//
// Ops without gradients
//===----------------------------------------------------------------------===//

LogicalResult constantGrad(ConstantOp, OpBuilder &, ValueRange,
                           SmallVectorImpl<Value> &) {
  return success();
}

LogicalResult equalGrad(EqualOp, OpBuilder &, ValueRange,
                        SmallVectorImpl<Value> &out) {
  out.append({Value(), Value()});
  return success();
}

bool never(EqualOp, unsigned) { return false; }

//===----------------------------------------------------------------------===//
// Elementwise data flow
//===----------------------------------------------------------------------===//

// The gradient goes to the selected side; each side sums over what it was
// broadcast along.
LogicalResult whereGrad(WhereOp op, OpBuilder &b, ValueRange grads,
                        SmallVectorImpl<Value> &out) {
  Location loc = op.getLoc();
  Value g = grads[0], cond = op.getCondition();
  out.push_back(Value());
  if (appendNullGradsUnlessFloat(op.getLhs(), 2, out))
    return success();
  Value zero = createScalar(b, loc, typeOf(g).getElementType(), 0.0);
  Value toLhs = WhereOp::create(b, loc, cond, g, zero);
  Value toRhs = WhereOp::create(b, loc, cond, zero, g);
  out.push_back(sumToShape(b, loc, toLhs, typeOf(op.getLhs())));
  out.push_back(sumToShape(b, loc, toRhs, typeOf(op.getRhs())));
  return success();
}

bool castIsDifferentiable(CastOp op, unsigned) {
  return isFloatTensor(op.getInput()) && isFloatTensor(op.getOutput());
}

// Between float types the gradient is cast back; through integers the
// function is piecewise constant and has none.
LogicalResult castGrad(CastOp op, OpBuilder &b, ValueRange grads,
                       SmallVectorImpl<Value> &out) {
  if (!castIsDifferentiable(op, 0)) {
    out.push_back(Value());
    return success();
  }
  Type from = typeOf(op.getInput()).getElementType();
  Value g = grads[0];
  out.push_back(typeOf(g).getElementType() == from
                    ? g
                    : Value(CastOp::create(b, op.getLoc(), g, from)));
  return success();
}

// NOTE: nn.dropout is the identity (inference semantics); training-mode
// dropout is built from nn.bernoulli and nn.mul, which have their own rules.
LogicalResult dropoutGrad(DropoutOp, OpBuilder &, ValueRange grads,
                          SmallVectorImpl<Value> &out) {
  out.push_back(grads[0]);
  return success();
}

// nn.check_size is its input (the size operand is an integer count).
LogicalResult checkSizeGrad(CheckSizeOp, OpBuilder &, ValueRange grads,
                            SmallVectorImpl<Value> &out) {
  out.push_back(grads[0]);
  out.push_back(Value());
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// The gradient of a reduction's result in keepdims form, broadcast back to
/// the input shape by the consumer.
template <typename OpTy>
Value keptGrad(OpTy op, OpBuilder &b, Value g) {
  return reshape(b, op.getLoc(), g,
                 keptShape(typeOf(op.getInput()).getShape(), op.getAxes()));
}

LogicalResult reduceSumGrad(ReduceSumOp op, OpBuilder &b, ValueRange grads,
                            SmallVectorImpl<Value> &out) {
  if (appendNullGradsUnlessFloat(op.getInput(), 1, out))
    return success();
  out.push_back(ExpandOp::create(b, op.getLoc(), keptGrad(op, b, grads[0]),
                                 typeOf(op.getInput()).getShape()));
  return success();
}

LogicalResult reduceMeanGrad(ReduceMeanOp op, OpBuilder &b, ValueRange grads,
                             SmallVectorImpl<Value> &out) {
  Location loc = op.getLoc();
  RankedTensorType inputType = typeOf(op.getInput());
  if (appendNullGradsUnlessFloat(op.getInput(), 1, out))
    return success();
  int64_t count = 1;
  for (int64_t axis : op.getAxes())
    count *= inputType.getDimSize(axis);
  Value scaled = MulOp::create(
      b, loc, keptGrad(op, b, grads[0]),
      createScalar(b, loc, inputType.getElementType(),
                   count ? 1.0 / double(count) : 0.0));
  out.push_back(ExpandOp::create(b, loc, scaled, inputType.getShape()));
  return success();
}

// The gradient goes to the positions equal to the maximum, split evenly
// among ties (torch.amax's backward).
LogicalResult reduceMaxGrad(ReduceMaxOp op, OpBuilder &b, ValueRange grads,
                            SmallVectorImpl<Value> &out) {
  return reduceExtremumGrad(op, b, grads, out,
                            [&](Value v) { return keptGrad(op, b, v); });
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

template <typename OpTy>
LogicalResult reshapeGrad(OpTy op, OpBuilder &b, ValueRange grads,
                          SmallVectorImpl<Value> &out) {
  out.push_back(reshapeBack(b, op.getLoc(), grads[0], op.getInput()));
  return success();
}

LogicalResult transposeGrad(TransposeOp op, OpBuilder &b, ValueRange grads,
                            SmallVectorImpl<Value> &out) {
  if (appendNullGradsUnlessFloat(op.getInput(), 1, out))
    return success();
  ArrayRef<int64_t> perm = op.getPerm();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  out.push_back(TransposeOp::create(b, op.getLoc(), grads[0], inverse));
  return success();
}

LogicalResult expandGrad(ExpandOp op, OpBuilder &b, ValueRange grads,
                         SmallVectorImpl<Value> &out) {
  out.push_back(isFloatTensor(op.getInput())
                    ? sumToShape(b, op.getLoc(), grads[0],
                                 typeOf(op.getInput()))
                    : Value());
  return success();
}

// The gradient splits back into the pieces.
LogicalResult concatGrad(ConcatOp op, OpBuilder &b, ValueRange grads,
                         SmallVectorImpl<Value> &out) {
  ValueRange inputs = op.getInputs();
  if (appendNullGradsUnlessFloat(op.getOutput(), inputs.size(), out))
    return success();
  int64_t axis = op.getAxis();
  if (inputs.size() == 1) {
    out.push_back(grads[0]);
    return success();
  }
  SmallVector<int64_t> sizes;
  for (Value input : inputs)
    sizes.push_back(typeOf(input).getDimSize(axis));
  auto split = SplitOp::create(b, op.getLoc(), grads[0], axis, sizes);
  llvm::append_range(out, split.getOutputs());
  return success();
}

// The pieces' gradients concatenate (zeros for pieces off the loss path).
LogicalResult splitGrad(SplitOp op, OpBuilder &b, ValueRange grads,
                        SmallVectorImpl<Value> &out) {
  Location loc = op.getLoc();
  if (appendNullGradsUnlessFloat(op.getInput(), 1, out))
    return success();
  SmallVector<Value> pieces;
  for (auto [grad, result] : llvm::zip(grads, op.getOutputs()))
    pieces.push_back(gradOrZeros(b, loc, grad, typeOf(result)));
  if (pieces.size() == 1) {
    out.push_back(pieces.front());
    return success();
  }
  out.push_back(ConcatOp::create(b, loc, pieces, op.getAxis()));
  return success();
}

LogicalResult sliceGrad(SliceOp op, OpBuilder &b, ValueRange grads,
                        SmallVectorImpl<Value> &out) {
  RankedTensorType inputType = typeOf(op.getInput());
  if (appendNullGradsUnlessFloat(op.getInput(), 1, out))
    return success();
  // A slice reading everything in order is the identity.
  bool identity = inputType.getShape() == op.getSizes() &&
                  llvm::all_of(op.getStarts(), [](int64_t s) { return s == 0; }) &&
                  llvm::all_of(op.getSteps(), [](int64_t s) { return s == 1; });
  if (identity) {
    out.push_back(grads[0]);
    return success();
  }
  out.push_back(SliceGradOp::create(b, op.getLoc(), grads[0],
                                    inputType.getShape(), op.getStarts(),
                                    op.getSteps()));
  return success();
}

// The data gradient scatter-adds the result gradient over the indices; the
// indices have none.
LogicalResult gatherGrad(GatherOp op, OpBuilder &b, ValueRange grads,
                         SmallVectorImpl<Value> &out) {
  RankedTensorType dataType = typeOf(op.getData());
  if (appendNullGradsUnlessFloat(op.getData(), 2, out))
    return success();
  int64_t axis = op.getAxis();
  out.push_back(GatherGradOp::create(b, op.getLoc(), grads[0],
                                     op.getIndices(), axis,
                                     dataType.getDimSize(axis)));
  out.push_back(Value());
  return success();
}

//===----------------------------------------------------------------------===//
// Data-dependent indexing: a gather's adjoint is a scatter-add, a scatter's
// is a gather (and, for `none`, the data gradient with the overwritten
// positions zeroed). ONNX leaves duplicate indices undefined for `none`.
//===----------------------------------------------------------------------===//

/// Where the indices of an elements / nd pair point: the axis of
/// gather_elements and scatter_elements, the batch_dims of gather_nd and
/// scatter_nd.
int64_t indexedPlace(GatherElementsOp op) { return op.getAxis(); }
int64_t indexedPlace(ScatterElementsOp op) { return op.getAxis(); }
int64_t indexedPlace(GatherNDOp op) { return op.getBatchDims(); }
int64_t indexedPlace(ScatterNDOp op) { return op.getBatchDims(); }

/// gather_elements / gather_nd: the data gradient scatter-adds the result
/// gradient into zeros with `ScatterTy`.
template <typename GatherTy, typename ScatterTy>
LogicalResult indexedGatherGrad(GatherTy op, OpBuilder &b, ValueRange grads,
                                SmallVectorImpl<Value> &out) {
  if (appendNullGradsUnlessFloat(op.getData(), 2, out))
    return success();
  Location loc = op.getLoc();
  Value zeros = createSplat(b, loc, typeOf(op.getData()), 0.0);
  out.push_back(ScatterTy::create(b, loc, zeros, op.getIndices(), grads[0],
                                  indexedPlace(op), "add"));
  out.push_back(Value());
  return success();
}

/// scatter_elements / scatter_nd: the updates gradient gathers the result
/// gradient with `GatherTy`.
template <typename ScatterTy, typename GatherTy>
LogicalResult indexedScatterGrad(ScatterTy op, OpBuilder &b, ValueRange grads,
                                 SmallVectorImpl<Value> &out) {
  if (appendNullGradsUnlessFloat(op.getData(), 3, out))
    return success();
  StringRef reduction = op.getReduction();
  if (reduction != "none" && reduction != "add")
    return op.emitOpError("has no derivative rule for reduction '")
           << reduction << "'";
  Location loc = op.getLoc();
  Value g = grads[0];
  Value dataGrad = g;
  if (reduction == "none")
    dataGrad =
        ScatterTy::create(b, loc, g, op.getIndices(),
                          createSplat(b, loc, typeOf(op.getUpdates()), 0.0),
                          indexedPlace(op), "none");
  out.push_back(dataGrad);
  out.push_back(Value());
  out.push_back(GatherTy::create(b, loc, g, op.getIndices(), indexedPlace(op)));
  return success();
}

} // namespace

void attachShapeGradientModels(MLIRContext *context) {
  attach<ConstantOp, constantGrad>(context);
  EqualOp::attachInterface<RuleWithOperands<EqualOp, equalGrad, never>>(
      *context);
  attach<WhereOp, whereGrad>(context);
  CastOp::attachInterface<
      RuleWithOperands<CastOp, castGrad, castIsDifferentiable>>(*context);
  attach<DropoutOp, dropoutGrad>(context);
  attach<CheckSizeOp, checkSizeGrad>(context);
  attach<ReduceSumOp, reduceSumGrad>(context);
  attach<ReduceMeanOp, reduceMeanGrad>(context);
  attach<ReduceMaxOp, reduceMaxGrad>(context);
  attach<ReshapeOp, reshapeGrad<ReshapeOp>>(context);
  attach<FlattenOp, reshapeGrad<FlattenOp>>(context);
  attach<SqueezeOp, reshapeGrad<SqueezeOp>>(context);
  attach<UnsqueezeOp, reshapeGrad<UnsqueezeOp>>(context);
  attach<TransposeOp, transposeGrad>(context);
  attach<ExpandOp, expandGrad>(context);
  attach<ConcatOp, concatGrad>(context);
  attach<SplitOp, splitGrad>(context);
  attach<SliceOp, sliceGrad>(context);
  attach<GatherOp, gatherGrad>(context);
  attach<GatherElementsOp,
         indexedGatherGrad<GatherElementsOp, ScatterElementsOp>>(context);
  attach<ScatterElementsOp,
         indexedScatterGrad<ScatterElementsOp, GatherElementsOp>>(context);
  attach<GatherNDOp, indexedGatherGrad<GatherNDOp, ScatterNDOp>>(context);
  attach<ScatterNDOp, indexedScatterGrad<ScatterNDOp, GatherNDOp>>(context);
}

} // namespace pipedream::nn::detail
