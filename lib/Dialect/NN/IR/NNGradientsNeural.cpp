//===- NNGradientsNeural.cpp - derivative rules of conv, pooling, BN ------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Derivative rules of the neural-network layers: convolution, pooling and
// batch normalization. See NNGradients.h for the contract every rule
// follows.
//
// - nn.conv: the input and weight gradients are their own ops
//   (nn.conv_backward_input / nn.conv_backward_weight, lowered as GEMMs plus
//   col2im / im2col); the bias gradient sums the output gradient over every
//   axis but 1.
// - nn.max_pool / nn.average_pool: nn.max_pool_grad / nn.average_pool_grad.
// - nn.global_average_pool: the output gradient expanded over the spatial
//   dimensions and divided by their size.
// - nn.batch_normalization (running statistics, affine in x): compositions
//   of elementwise ops and sums, for every operand.
// - nn.batch_norm_train: the batch statistics are recomputed from x, then
//   the usual closed form (xhat = (x - mean) * invstd, M values per channel)
//     dbias  = sum(dy)
//     dscale = sum(dy * xhat)
//     dx     = scale * invstd * (dy - dbias / M - xhat * dscale / M).
//   The running statistics (operands and results) have no gradient.
//
//===----------------------------------------------------------------------===//

#include "NNGradients.h"

#include "pipedream/Dialect/NN/IR/NNInterfaces.h"

using namespace mlir;

namespace pipedream::nn::detail {
namespace {

RankedTensorType tensorTypeOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// Every axis of a rank-`rank` N x C x ... tensor but the channel axis 1.
SmallVector<int64_t> nonChannelAxes(int64_t rank) {
  SmallVector<int64_t> axes{0};
  for (int64_t d = 2; d < rank; ++d)
    axes.push_back(d);
  return axes;
}

/// A per-channel vector [C] reshaped to [C, 1, ..., 1] so that numpy
/// broadcasting against an N x C x ... tensor of rank `rank` puts it on
/// axis 1.
Value perChannel(OpBuilder &b, Location loc, Value v, int64_t rank) {
  auto type = tensorTypeOf(v);
  SmallVector<int64_t> shape{type.getDimSize(0)};
  shape.append(rank - 2, 1);
  if (ArrayRef<int64_t>(shape) == type.getShape())
    return v;
  return ReshapeOp::create(b, loc, v, shape);
}

/// A keepdims statistic [1, C, 1, ...] (or [C, 1, ...]) back to [C].
Value toChannelVector(OpBuilder &b, Location loc, Value v, int64_t channels) {
  SmallVector<int64_t> shape{channels};
  if (tensorTypeOf(v).getShape() == ArrayRef<int64_t>(shape))
    return v;
  return ReshapeOp::create(b, loc, v, shape);
}

//===----------------------------------------------------------------------===//
// Convolution
//===----------------------------------------------------------------------===//

LogicalResult convGrad(ConvOp conv, OpBuilder &b, ValueRange resultGrads,
                       SmallVectorImpl<Value> &operandGrads) {
  Location loc = conv.getLoc();
  Value dy = resultGrads[0];
  auto inputType = conv.getInput().getType();
  auto weightType = conv.getWeight().getType();
  operandGrads.push_back(ConvBackwardInputOp::create(
      b, loc, dy, conv.getWeight(), inputType.getShape(), conv.getStrides(),
      conv.getPads(), conv.getDilations(), conv.getGroup()));
  operandGrads.push_back(ConvBackwardWeightOp::create(
      b, loc, dy, conv.getInput(), weightType.getShape().drop_front(2),
      conv.getStrides(), conv.getPads(), conv.getDilations(), conv.getGroup()));
  if (conv.getBias())
    operandGrads.push_back(
        ReduceSumOp::create(b, loc, dy, nonChannelAxes(inputType.getRank()),
                            /*keepdims=*/false));
  return success();
}

/// `z = conv_backward_input(x, w)` (ONNX ConvTranspose) is linear in each
/// operand with `<z, dz> = <x, conv(dz, w)>`: the gradient of `x` is the
/// forward convolution of `dz`, and that of `w` the weight gradient of a
/// convolution of `dz` whose output gradient is `x`.
LogicalResult convBackwardInputGrad(ConvBackwardInputOp conv, OpBuilder &b,
                                    ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Location loc = conv.getLoc();
  Value dz = resultGrads[0];
  auto weightType = conv.getWeight().getType();
  operandGrads.push_back(ConvOp::create(b, loc, dz, conv.getWeight(), Value(),
                                        conv.getStrides(), conv.getPads(),
                                        conv.getDilations(), conv.getGroup()));
  operandGrads.push_back(ConvBackwardWeightOp::create(
      b, loc, conv.getOutputGrad(), dz, weightType.getShape().drop_front(2),
      conv.getStrides(), conv.getPads(), conv.getDilations(), conv.getGroup()));
  return success();
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

LogicalResult maxPoolGrad(MaxPoolOp pool, OpBuilder &b, ValueRange resultGrads,
                          SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(MaxPoolGradOp::create(
      b, pool.getLoc(), resultGrads[0], pool.getInput(), pool.getKernelShape(),
      pool.getStrides(), pool.getPads(), pool.getDilations(),
      pool.getCeilMode()));
  return success();
}

LogicalResult averagePoolGrad(AveragePoolOp pool, OpBuilder &b,
                              ValueRange resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(AveragePoolGradOp::create(
      b, pool.getLoc(), resultGrads[0], pool.getInput().getType().getShape(),
      pool.getKernelShape(), pool.getStrides(), pool.getPads(),
      pool.getCeilMode(), pool.getCountIncludePad()));
  return success();
}

LogicalResult globalAveragePoolGrad(GlobalAveragePoolOp pool, OpBuilder &b,
                                    ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Location loc = pool.getLoc();
  auto inputType = pool.getInput().getType();
  int64_t count = 1;
  for (int64_t d : inputType.getShape().drop_front(2))
    count *= d;
  Value expanded =
      ExpandOp::create(b, loc, resultGrads[0], inputType.getShape());
  Value scale =
      createScalar(b, loc, inputType.getElementType(), 1.0 / double(count));
  operandGrads.push_back(MulOp::create(b, loc, expanded, scale));
  return success();
}

//===----------------------------------------------------------------------===//
// Batch normalization
//===----------------------------------------------------------------------===//

/// Inference form: y = (x - mean) * k + bias with k = scale / sqrt(var + eps)
/// per channel, every operand differentiable.
LogicalResult batchNormalizationGrad(BatchNormalizationOp bn, OpBuilder &b,
                                     ValueRange resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  Location loc = bn.getLoc();
  Value dy = resultGrads[0];
  auto type = bn.getInput().getType();
  Type element = type.getElementType();
  int64_t rank = type.getRank(), channels = type.getDimSize(1);
  SmallVector<int64_t> axes = nonChannelAxes(rank);

  Value eps = createScalar(b, loc, element, bn.getEpsilon().convertToDouble());
  Value one = createScalar(b, loc, element, 1.0);
  // Per channel [C]: varEps = var + eps, invStd = 1 / sqrt(varEps),
  // k = scale * invStd.
  Value varEps = AddOp::create(b, loc, bn.getVar(), eps);
  Value invStd = DivOp::create(b, loc, one, SqrtOp::create(b, loc, varEps));
  Value k = MulOp::create(b, loc, bn.getScale(), invStd);

  Value centered = SubOp::create(b, loc, bn.getInput(),
                                 perChannel(b, loc, bn.getMean(), rank));
  Value xhat =
      MulOp::create(b, loc, centered, perChannel(b, loc, invStd, rank));
  // dx = dy * k.
  operandGrads.push_back(
      MulOp::create(b, loc, dy, perChannel(b, loc, k, rank)));
  // dscale = sum(dy * xhat).
  Value dScale = ReduceSumOp::create(b, loc, MulOp::create(b, loc, dy, xhat),
                                     axes, /*keepdims=*/false);
  operandGrads.push_back(toChannelVector(b, loc, dScale, channels));
  // dbias = sum(dy).
  Value dBias = toChannelVector(
      b, loc, ReduceSumOp::create(b, loc, dy, axes, /*keepdims=*/false),
      channels);
  operandGrads.push_back(dBias);
  // dmean = -k * sum(dy).
  operandGrads.push_back(
      NegOp::create(b, loc, MulOp::create(b, loc, k, dBias)));
  // dvar = sum(dy * (x - mean)) * scale * (-1/2) (var + eps)^(-3/2)
  //      = dscale * scale * (-1/2) / (var + eps).
  Value half = createScalar(b, loc, element, -0.5);
  Value dVar = MulOp::create(b, loc, dScale, bn.getScale());
  dVar = DivOp::create(b, loc, MulOp::create(b, loc, dVar, half), varEps);
  operandGrads.push_back(dVar);
  return success();
}

struct BatchNormTrainGrad
    : GradientOpInterface::ExternalModel<BatchNormTrainGrad,
                                         BatchNormTrainOp> {
  LogicalResult buildGradient(Operation *op, OpBuilder &b,
                              ValueRange resultGrads,
                              SmallVectorImpl<Value> &operandGrads) const {
    auto bn = cast<BatchNormTrainOp>(op);
    Value dy = resultGrads[0];
    // Only the normalized output carries a gradient; the running
    // statistics are state, not a function the loss differentiates.
    if (!dy) {
      operandGrads.append(op->getNumOperands(), Value());
      return success();
    }
    Location loc = bn.getLoc();
    Value x = bn.getInput();
    auto type = bn.getInput().getType();
    Type element = type.getElementType();
    int64_t rank = type.getRank(), channels = type.getDimSize(1);
    SmallVector<int64_t> axes = nonChannelAxes(rank);
    double count = double(type.getNumElements()) / double(channels);

    // Batch statistics as in the forward (keepdims: [1, C, 1, ...]).
    Value mean = ReduceMeanOp::create(b, loc, x, axes, /*keepdims=*/true);
    Value centered = SubOp::create(b, loc, x, mean);
    Value var = ReduceMeanOp::create(
        b, loc, MulOp::create(b, loc, centered, centered), axes,
        /*keepdims=*/true);
    Value eps = createScalar(b, loc, element, bn.getEpsilon().convertToDouble());
    Value one = createScalar(b, loc, element, 1.0);
    Value invStd = DivOp::create(
        b, loc, one, SqrtOp::create(b, loc, AddOp::create(b, loc, var, eps)));
    Value xhat = MulOp::create(b, loc, centered, invStd);

    Value sumDy = ReduceSumOp::create(b, loc, dy, axes, /*keepdims=*/true);
    Value sumDyXhat = ReduceSumOp::create(
        b, loc, MulOp::create(b, loc, dy, xhat), axes, /*keepdims=*/true);
    Value invCount = createScalar(b, loc, element, 1.0 / count);
    Value inner = SubOp::create(
        b, loc, dy, MulOp::create(b, loc, sumDy, invCount));
    inner = SubOp::create(
        b, loc, inner,
        MulOp::create(b, loc, xhat, MulOp::create(b, loc, sumDyXhat, invCount)));
    Value k = MulOp::create(b, loc, perChannel(b, loc, bn.getScale(), rank),
                            invStd);
    operandGrads.push_back(MulOp::create(b, loc, inner, k));
    operandGrads.push_back(toChannelVector(b, loc, sumDyXhat, channels));
    operandGrads.push_back(toChannelVector(b, loc, sumDy, channels));
    operandGrads.append(2, Value());
    return success();
  }

  bool isDifferentiableOperand(Operation *op, unsigned index) const {
    // input, scale, bias; not the running statistics.
    return index < 3;
  }
};

} // namespace

void attachNeuralGradientModels(MLIRContext *context) {
  attach<ConvOp, convGrad>(context);
  attach<MaxPoolOp, maxPoolGrad>(context);
  attach<AveragePoolOp, averagePoolGrad>(context);
  attach<ConvBackwardInputOp, convBackwardInputGrad>(context);
  attach<GlobalAveragePoolOp, globalAveragePoolGrad>(context);
  attach<BatchNormalizationOp, batchNormalizationGrad>(context);
  BatchNormTrainOp::attachInterface<BatchNormTrainGrad>(*context);
}

} // namespace pipedream::nn::detail
