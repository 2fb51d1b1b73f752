//===- Normalization.cpp - nn normalizations and softmax to linalg --------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// - `nn.batch_normalization` (inference form): one elementwise generic,
//   `(x - mean) / sqrt(var + eps) * scale + bias` with the per-channel
//   operands reshaped to [C, 1, ...] so numpy broadcasting puts them on
//   axis 1.
// - `nn.batch_norm_train`: per-channel mean by a sum `linalg.reduce`, biased
//   variance by a reduction generic over `(x - mean)^2` (two passes), the
//   output as above with those statistics, and the running statistics
//   `running * momentum + batch * (1 - momentum)` on [C] (the variance
//   scaled by count / (count - 1), unbiased, as PyTorch).
// - `nn.layer_normalization`: mean by a sum `linalg.reduce`, variance by a
//   reduction generic over `(x - mean)^2` (two passes, as the ONNX
//   reference, not E[x^2] - E[x]^2), then
//   `(x - mean) * (1 / sqrt(var + eps)) * scale + bias`.
// - `nn.softmax`: `linalg.softmax` (decomposed upstream's way: max, exp of
//   the difference, sum, divide) unless the options keep it.
// - `nn.log_softmax`: `x - max - log(sum(exp(x - max)))` with the same
//   max-subtraction.
//
//===----------------------------------------------------------------------===//

#include "Utils.h"

#include "pipedream/Dialect/NN/IR/NNOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
namespace nn = pipedream::nn;

namespace pipedream::nn_to_linalg {
namespace {

/// Sum (`add`) or maximum of `input` over `dims` with `linalg.reduce`.
Value reduceFloat(OpBuilder &b, Location loc, Value input,
                  ArrayRef<int64_t> dims, bool isMax) {
  auto type = cast<RankedTensorType>(input.getType());
  Type element = type.getElementType();
  auto reducedType =
      RankedTensorType::get(dropDims(type.getShape(), dims), element);
  Value identity = isMax ? createLowest(b, loc, element)
                         : createScalar(b, loc, element, 0.0);
  Value init = createFilled(b, loc, reducedType, identity);
  return linalg::ReduceOp::create(
             b, loc, ValueRange{input}, ValueRange{init}, dims,
             [isMax](OpBuilder &nb, Location l, ValueRange args) {
               Value r =
                   isMax
                       ? Value(
                             arith::MaximumFOp::create(nb, l, args[0], args[1]))
                       : Value(arith::AddFOp::create(nb, l, args[0], args[1]));
               linalg::YieldOp::create(nb, l, r);
             })
      .getResult(0);
}

/// `value / divisor` elementwise (`divisor` a scalar).
Value divideElementwise(OpBuilder &b, Location loc, Value value,
                        Value divisor) {
  return buildElementwise(
      b, loc, cast<RankedTensorType>(value.getType()), ValueRange{value},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        return arith::DivFOp::create(nb, l, args[0], divisor);
      });
}

/// The mean of `input` over `dims`: its sum divided by `count` (a scalar).
Value meanOverDims(OpBuilder &b, Location loc, Value input,
                   ArrayRef<int64_t> dims, Value count) {
  Value sum = reduceFloat(b, loc, input, dims, /*isMax=*/false);
  return divideElementwise(b, loc, sum, count);
}

/// One term of a sum: computed from an input element and the statistic of
/// its row.
using TermFn =
    llvm::function_ref<Value(OpBuilder &, Location, Value element, Value stat)>;

/// The sum over `dims` of `term(x, s)` for every element `x` of `input`,
/// with `s` the element of `stat` (`input`'s shape without `dims`) at the
/// same outer position: the second pass of a two-pass statistic.
Value sumOverDims(OpBuilder &b, Location loc, Value input, Value stat,
                  ArrayRef<int64_t> dims, TermFn term) {
  auto statType = cast<RankedTensorType>(stat.getType());
  int64_t rank = cast<RankedTensorType>(input.getType()).getRank();
  AffineMap identity = b.getMultiDimIdentityMap(rank);
  AffineMap outer = getDropDimsMap(b.getContext(), rank, dims);
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  for (int64_t d : dims)
    iterators[d] = utils::IteratorType::reduction;
  Value zeros = createFilled(
      b, loc, statType, createScalar(b, loc, statType.getElementType(), 0.0));
  return buildGeneric(b, loc, zeros, ValueRange{input, stat},
                      {identity, outer, outer}, iterators,
                      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                        Value value = term(nb, l, args[0], args[1]);
                        return arith::AddFOp::create(nb, l, args[2], value);
                      });
}

/// `(x - x_mean)^2`: the term of a sum of squared deviations.
Value squaredDeviation(OpBuilder &b, Location l, Value x, Value mean) {
  Value centered = arith::SubFOp::create(b, l, x, mean);
  return arith::MulFOp::create(b, l, centered, centered);
}

/// `(x - mean) / sqrt(var + eps) * scale + bias`: one element of a batch
/// normalization.
Value batchNormalize(OpBuilder &b, Location l, Value x, Value mean, Value var,
                     Value scale, Value bias, Value eps) {
  Value centered = arith::SubFOp::create(b, l, x, mean);
  Value stddev =
      math::SqrtOp::create(b, l, arith::AddFOp::create(b, l, var, eps));
  Value normalized = arith::DivFOp::create(b, l, centered, stddev);
  Value scaled = arith::MulFOp::create(b, l, normalized, scale);
  return arith::AddFOp::create(b, l, scaled, bias);
}

struct BatchNormalizationLowering
    : OpConversionPattern<nn::BatchNormalizationOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(nn::BatchNormalizationOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto resultType = cast<RankedTensorType>(op.getType());
    Type element = resultType.getElementType();
    int64_t rank = resultType.getRank();
    // [C] -> [C, 1, ..., 1]: right-aligned broadcasting lands on axis 1.
    SmallVector<int64_t> channelShape{resultType.getDimSize(1)};
    channelShape.append(rank - 2, 1);
    auto perChannel = [&](Value v) {
      return reshapeTo(rewriter, loc, v, channelShape);
    };
    Value eps =
        createScalar(rewriter, loc, element, op.getEpsilon().convertToDouble());
    Value result = buildElementwise(
        rewriter, loc, resultType,
        ValueRange{adaptor.getInput(), perChannel(adaptor.getScale()),
                   perChannel(adaptor.getBias()), perChannel(adaptor.getMean()),
                   perChannel(adaptor.getVar())},
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          return batchNormalize(b, l, args[0], args[3], args[4], args[1],
                                args[2], eps);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct BatchNormTrainLowering : OpConversionPattern<nn::BatchNormTrainOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(nn::BatchNormTrainOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = adaptor.getInput();
    auto type = cast<RankedTensorType>(input.getType());
    Type element = type.getElementType();
    int64_t rank = type.getRank(), channels = type.getDimSize(1);
    SmallVector<int64_t> reduced{0};
    for (int64_t d = 2; d < rank; ++d)
      reduced.push_back(d);
    int64_t count = type.getNumElements() / channels;
    auto statsType = RankedTensorType::get({channels}, element);
    Value countValue = createScalar(rewriter, loc, element, count);

    Value mean = meanOverDims(rewriter, loc, input, reduced, countValue);
    Value squares =
        sumOverDims(rewriter, loc, input, mean, reduced, squaredDeviation);
    Value var = divideElementwise(rewriter, loc, squares, countValue);
    AffineMap identity = rewriter.getMultiDimIdentityMap(rank);
    AffineMap channel = getDropDimsMap(rewriter.getContext(), rank, reduced);

    Value eps =
        createScalar(rewriter, loc, element, op.getEpsilon().convertToDouble());
    SmallVector<AffineMap> maps(5, channel);
    maps.front() = identity;
    maps.push_back(identity);
    Value output = buildGeneric(
        rewriter, loc, createEmpty(rewriter, loc, type),
        ValueRange{input, mean, var, adaptor.getScale(), adaptor.getBias()},
        maps,
        SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          return batchNormalize(b, l, args[0], args[1], args[2], args[3],
                                args[4], eps);
        });

    double momentum = op.getMomentum().convertToDouble();
    Value keep = createScalar(rewriter, loc, element, momentum);
    Value take = createScalar(rewriter, loc, element, 1.0 - momentum);
    // count > 1 (verifier): the unbiased variance is finite.
    Value unbias = createScalar(rewriter, loc, element,
                                double(count) / double(count - 1));
    auto update = [&](Value running, Value batch, Value factor) {
      return buildElementwise(
          rewriter, loc, statsType, ValueRange{running, batch},
          [&](OpBuilder &b, Location l, ValueRange args) -> Value {
            Value batchValue = args[1];
            if (factor)
              batchValue = arith::MulFOp::create(b, l, batchValue, factor);
            Value kept = arith::MulFOp::create(b, l, args[0], keep);
            Value taken = arith::MulFOp::create(b, l, batchValue, take);
            return arith::AddFOp::create(b, l, kept, taken);
          });
    };
    Value newMean = update(adaptor.getRunningMean(), mean, Value());
    Value newVar = update(adaptor.getRunningVar(), var, unbias);
    rewriter.replaceOp(op, ValueRange{output, newMean, newVar});
    return success();
  }
};

struct LayerNormalizationLowering
    : OpConversionPattern<nn::LayerNormalizationOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(nn::LayerNormalizationOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = adaptor.getInput();
    auto type = cast<RankedTensorType>(input.getType());
    Type element = type.getElementType();
    int64_t rank = type.getRank(), axis = op.getAxis();
    SmallVector<int64_t> normalizedDims;
    int64_t count = 1;
    for (int64_t d = axis; d < rank; ++d) {
      normalizedDims.push_back(d);
      count *= type.getDimSize(d);
    }
    auto statsType =
        RankedTensorType::get(type.getShape().take_front(axis), element);
    // Statistics in keepdims form [outer..., 1, ..., 1] broadcast numpy-style.
    SmallVector<int64_t> keptShape(type.getShape().take_front(axis));
    keptShape.append(rank - axis, 1);
    Value countValue = createScalar(rewriter, loc, element, count);

    Value mean = meanOverDims(rewriter, loc, input, normalizedDims, countValue);
    Value squares = sumOverDims(rewriter, loc, input, mean, normalizedDims,
                                squaredDeviation);
    Value eps =
        createScalar(rewriter, loc, element, op.getEpsilon().convertToDouble());
    Value one = createScalar(rewriter, loc, element, 1.0);
    Value invStd = buildElementwise(
        rewriter, loc, statsType, ValueRange{squares},
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value var = arith::DivFOp::create(b, l, args[0], countValue);
          Value stddev =
              math::SqrtOp::create(b, l, arith::AddFOp::create(b, l, var, eps));
          return arith::DivFOp::create(b, l, one, stddev);
        });

    SmallVector<Value> operands{
        input, reshapeTo(rewriter, loc, mean, keptShape),
        reshapeTo(rewriter, loc, invStd, keptShape), adaptor.getScale()};
    if (Value bias = adaptor.getBias())
      operands.push_back(bias);
    Value result = buildElementwise(
        rewriter, loc, type, operands,
        [](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value centered = arith::SubFOp::create(b, l, args[0], args[1]);
          Value normalized = arith::MulFOp::create(b, l, centered, args[2]);
          Value scaled = arith::MulFOp::create(b, l, normalized, args[3]);
          if (args.size() == 4)
            return scaled;
          return arith::AddFOp::create(b, l, scaled, args[4]);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct SoftmaxLowering : OpConversionPattern<nn::SoftmaxOp> {
  SoftmaxLowering(MLIRContext *ctx, bool decompose)
      : OpConversionPattern(ctx), decompose(decompose) {}

  LogicalResult
  matchAndRewrite(nn::SoftmaxOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    auto softmax = linalg::SoftmaxOp::create(
        rewriter, loc, TypeRange{type}, adaptor.getInput(),
        createEmpty(rewriter, loc, type), static_cast<uint64_t>(op.getAxis()));
    if (!decompose) {
      rewriter.replaceOp(op, softmax.getResult());
      return success();
    }
    FailureOr<SmallVector<Value>> parts = softmax.decomposeOperation(rewriter);
    if (failed(parts))
      return rewriter.notifyMatchFailure(op, "cannot decompose linalg.softmax");
    rewriter.replaceOp(op, *parts);
    rewriter.eraseOp(softmax);
    return success();
  }

  bool decompose;
};

struct LogSoftmaxLowering : OpConversionPattern<nn::LogSoftmaxOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(nn::LogSoftmaxOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = adaptor.getInput();
    auto type = cast<RankedTensorType>(input.getType());
    int64_t rank = type.getRank(), axis = op.getAxis();

    Value max = reduceFloat(rewriter, loc, input, {axis}, /*isMax=*/true);
    Value sum = sumOverDims(
        rewriter, loc, input, max, {axis},
        [](OpBuilder &b, Location l, Value x, Value rowMax) -> Value {
          Value shifted = arith::SubFOp::create(b, l, x, rowMax);
          return math::ExpOp::create(b, l, shifted);
        });
    AffineMap identity = rewriter.getMultiDimIdentityMap(rank);
    AffineMap reduced = getDropDimsMap(rewriter.getContext(), rank, {axis});
    SmallVector<utils::IteratorType> parallel(rank,
                                              utils::IteratorType::parallel);
    Value result = buildGeneric(
        rewriter, loc, createEmpty(rewriter, loc, type),
        ValueRange{input, max, sum}, {identity, reduced, reduced, identity},
        parallel, [](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value shifted = arith::SubFOp::create(b, l, args[0], args[1]);
          Value logSum = math::LogOp::create(b, l, args[2]);
          return arith::SubFOp::create(b, l, shifted, logSum);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void populateNormalizationPatterns(RewritePatternSet &patterns,
                                   const NNToLinalgOptions &options) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<BatchNormalizationLowering, BatchNormTrainLowering,
               LayerNormalizationLowering, LogSoftmaxLowering>(ctx);
  patterns.add<SoftmaxLowering>(ctx, options.decomposeSoftmax);
}

} // namespace pipedream::nn_to_linalg
