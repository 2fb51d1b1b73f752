//===- Pooling.cpp - nn pooling ops to linalg pooling ---------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// `nn.max_pool` pads with -inf (padding never wins) and runs
// `linalg.pooling_{ncw,nchw}_max`; `nn.average_pool` pads with zeros, sums
// with `linalg.pooling_{ncw,nchw}_sum` and divides by the number of
// elements each window counts. Other spatial ranks use a linalg.generic of
// the same shape.
//
// In ceil_mode the last window may reach past the end padding: the input is
// padded further at the end so every window the result shape (from
// inference) asks for is in bounds. Those extra elements never count:
// - max: they are -inf;
// - average: the divisor of a window is, per spatial dimension, the number of
//   its positions inside [0, D) (count_include_pad = false) or inside
//   [-pad_begin, D + pad_end) (count_include_pad = true), multiplied over
//   dimensions, as onnxruntime and PyTorch compute it. The divisor is a
//   scalar when every window has the same count, a constant tensor over the
//   output's spatial shape otherwise.
//
// The gradients scatter-add into the input padded the same way
// (accumulateWindows: one strided elementwise add per window offset), then
// crop the padding:
// - `nn.max_pool_grad` first finds, per window, the row-major index of the
//   first maximum (a reduction generic with a value and an index result,
//   `>` so ties keep the earliest, NaN wins as in PyTorch), then adds the
//   output gradient at the offset whose index matches;
// - `nn.average_pool_grad` adds the output gradient divided by the same
//   divisors as the forward at every offset.
//
//===----------------------------------------------------------------------===//

#include "Utils.h"

#include "pipedream/Dialect/NN/IR/NNOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
namespace nn = pipedream::nn;

namespace pipedream::nn_to_linalg {
namespace {

enum class PoolKind { Max, Sum };

/// Pads `input` with `padValue`: `pads` (ONNX layout) plus whatever the end
/// needs so that the result's windows stay in bounds (ceil_mode).
/// The low and high padding (over every dimension, zero on N and C) that
/// padForWindows applies to an input of `inputShape` pooled to `resultShape`.
std::pair<SmallVector<int64_t>, SmallVector<int64_t>>
getWindowPadding(ArrayRef<int64_t> inputShape, ArrayRef<int64_t> resultShape,
                 ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                 ArrayRef<int64_t> dilations, ArrayRef<int64_t> pads) {
  int64_t n = kernel.size();
  SmallVector<int64_t> low{0, 0}, high{0, 0};
  for (int64_t i = 0; i < n; ++i) {
    int64_t size = inputShape[2 + i];
    int64_t out = resultShape[2 + i];
    int64_t needed =
        (out - 1) * strides[i] + dilations[i] * (kernel[i] - 1) + 1;
    int64_t available = size + pads[i] + pads[n + i];
    low.push_back(pads[i]);
    high.push_back(pads[n + i] + std::max<int64_t>(0, needed - available));
  }
  return {low, high};
}

Value padForWindows(OpBuilder &b, Location loc, Value input,
                    RankedTensorType resultType, ArrayRef<int64_t> kernel,
                    ArrayRef<int64_t> strides, ArrayRef<int64_t> dilations,
                    ArrayRef<int64_t> pads, Value padValue) {
  auto inputType = cast<RankedTensorType>(input.getType());
  auto [low, high] =
      getWindowPadding(inputType.getShape(), resultType.getShape(), kernel,
                       strides, dilations, pads);
  return padConstant(b, loc, input, low, high, padValue);
}

/// Zeros of `inputShape` padded as padForWindows pads it: the accumulator
/// of a pooling gradient.
Value createPaddedZeros(OpBuilder &b, Location loc,
                        ArrayRef<int64_t> inputShape,
                        RankedTensorType resultType, ArrayRef<int64_t> kernel,
                        ArrayRef<int64_t> strides, ArrayRef<int64_t> dilations,
                        ArrayRef<int64_t> pads) {
  auto [low, high] = getWindowPadding(inputShape, resultType.getShape(),
                                      kernel, strides, dilations, pads);
  SmallVector<int64_t> shape;
  for (auto [size, l, h] : llvm::zip(inputShape, low, high))
    shape.push_back(size + l + h);
  Type element = resultType.getElementType();
  return createFilled(b, loc, RankedTensorType::get(shape, element),
                      createScalar(b, loc, element, 0.0));
}

/// The input-shaped part of a padded pooling gradient accumulator.
Value cropPadding(OpBuilder &b, Location loc, Value padded,
                  RankedTensorType inputType, ArrayRef<int64_t> pads) {
  if (cast<RankedTensorType>(padded.getType()) == inputType)
    return padded;
  int64_t n = inputType.getRank() - 2;
  SmallVector<OpFoldResult> offsets(2, b.getIndexAttr(0)), sizes,
      unit(inputType.getRank(), b.getIndexAttr(1));
  for (int64_t i = 0; i < n; ++i)
    offsets.push_back(b.getIndexAttr(pads[i]));
  for (int64_t d : inputType.getShape())
    sizes.push_back(b.getIndexAttr(d));
  return tensor::ExtractSliceOp::create(b, loc, inputType, padded, offsets,
                                        sizes, unit);
}

/// A pooling gradient: the sum, over the window offsets, of `contribution`
/// (of the output gradient's shape `outType`) added into zeros of the padded
/// input, cropped back to `inputType`.
Value accumulatePoolGrad(OpBuilder &b, Location loc, RankedTensorType inputType,
                         RankedTensorType outType, ArrayRef<int64_t> kernel,
                         ArrayRef<int64_t> strides, ArrayRef<int64_t> dilations,
                         ArrayRef<int64_t> pads,
                         WindowContributionFn contribution) {
  Value acc = createPaddedZeros(b, loc, inputType.getShape(), outType, kernel,
                                strides, dilations, pads);
  acc = accumulateWindows(b, loc, acc, outType.getShape().drop_front(2), kernel,
                          strides, dilations, contribution);
  return cropPadding(b, loc, acc, inputType, pads);
}

/// The loop nest of a window reduction: loops batch, channel, O_1..O_n
/// (parallel) | K_1..K_n (reduction); the maps read the input at
/// O * stride + K * dilation, the (unread) window tensor at K and the output
/// at O.
struct WindowLoops {
  SmallVector<AffineMap> maps; // input, window, output
  SmallVector<utils::IteratorType> iterators;
};
WindowLoops getWindowLoops(MLIRContext *ctx, ArrayRef<int64_t> strides,
                           ArrayRef<int64_t> dilations) {
  int64_t n = strides.size();
  int64_t numLoops = 2 + 2 * n;
  auto dim = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
  SmallVector<AffineExpr> inputExprs{dim(0), dim(1)};
  SmallVector<AffineExpr> windowExprs, outputExprs{dim(0), dim(1)};
  for (int64_t i = 0; i < n; ++i) {
    inputExprs.push_back(dim(2 + i) * strides[i] +
                         dim(2 + n + i) * dilations[i]);
    windowExprs.push_back(dim(2 + n + i));
    outputExprs.push_back(dim(2 + i));
  }
  WindowLoops loops;
  loops.maps = {AffineMap::get(numLoops, 0, inputExprs, ctx),
                AffineMap::get(numLoops, 0, windowExprs, ctx),
                AffineMap::get(numLoops, 0, outputExprs, ctx)};
  loops.iterators.assign(2 + n, utils::IteratorType::parallel);
  loops.iterators.append(n, utils::IteratorType::reduction);
  return loops;
}

/// Pools `input` (already padded) into `init` with the named linalg op for
/// 1-D and 2-D, a linalg.generic otherwise.
Value buildPool(OpBuilder &b, Location loc, PoolKind kind, Value input,
                Value init, ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                ArrayRef<int64_t> dilations) {
  auto initType = cast<RankedTensorType>(init.getType());
  Type element = initType.getElementType();
  int64_t n = kernel.size();
  // The window shape is carried by an (unread) kernel tensor.
  Value window = tensor::EmptyOp::create(b, loc, kernel, element);
  auto stridesAttr = getI64VectorAttr(b, strides);
  auto dilationsAttr = getI64VectorAttr(b, dilations);
  SmallVector<Type> resultTypes{initType};
  SmallVector<Value> ins{input, window};
  // NOTE: linalg's NCHW/NCW max pools compare signed: unsigned integers
  // take the generic below.
  bool unsignedMax = kind == PoolKind::Max && element.isUnsignedInteger();
  // `named` is a null op of the named pooling op to build.
  auto createNamed = [&](auto named) -> Value {
    return decltype(named)::create(b, loc, resultTypes, ins, init, stridesAttr,
                                   dilationsAttr)
        .getResult(0);
  };
  if (kind == PoolKind::Max && !unsignedMax) {
    if (n == 2)
      return createNamed(linalg::PoolingNchwMaxOp());
    if (n == 1)
      return createNamed(linalg::PoolingNcwMaxOp());
  }
  if (kind == PoolKind::Sum) {
    if (n == 2)
      return createNamed(linalg::PoolingNchwSumOp());
    if (n == 1)
      return createNamed(linalg::PoolingNcwSumOp());
  }

  WindowLoops loops = getWindowLoops(b.getContext(), strides, dilations);
  return buildGeneric(
      b, loc, init, ins, loops.maps, loops.iterators,
      [kind](OpBuilder &nb, Location l, ValueRange args) -> Value {
        if (kind == PoolKind::Max)
          return createMax(nb, l, args[2], args[0]);
        return arith::AddFOp::create(nb, l, args[2], args[0]);
      });
}

/// Pools `input` into a `resultType` value with windows padded (and the
/// accumulator started) with `padValue`.
Value padAndPool(OpBuilder &b, Location loc, PoolKind kind, Value input,
                 RankedTensorType resultType, ArrayRef<int64_t> kernel,
                 ArrayRef<int64_t> strides, ArrayRef<int64_t> dilations,
                 ArrayRef<int64_t> pads, Value padValue) {
  Value padded = padForWindows(b, loc, input, resultType, kernel, strides,
                               dilations, pads, padValue);
  Value init = createFilled(b, loc, resultType, padValue);
  return buildPool(b, loc, kind, padded, init, kernel, strides, dilations);
}

/// `value` (of the pooling output's shape) divided elementwise by the number
/// of elements each average-pooling window counts (see the file comment).
Value divideByWindowCounts(OpBuilder &rewriter, Location loc, Value value,
                           ArrayRef<int64_t> inputShape,
                           ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                           ArrayRef<int64_t> pads, bool includePad) {
  auto resultType = cast<RankedTensorType>(value.getType());
  Type element = resultType.getElementType();
  int64_t n = kernel.size();
  Value sum = value;
  // Per spatial dimension, how many positions of each window count.
  SmallVector<SmallVector<int64_t>> counts(n);
  bool uniform = true;
  for (int64_t i = 0; i < n; ++i) {
    int64_t size = inputShape[2 + i];
    int64_t lo = includePad ? -pads[i] : 0;
    int64_t hi = includePad ? size + pads[n + i] : size;
    for (int64_t o = 0, e = resultType.getDimSize(2 + i); o < e; ++o) {
      int64_t start = o * strides[i] - pads[i];
      int64_t count = std::min(start + kernel[i], hi) - std::max(start, lo);
      counts[i].push_back(std::max<int64_t>(count, 0));
      uniform &= counts[i].back() == counts[i].front();
    }
  }

  Value result;
  if (uniform) {
    int64_t divisor = 1;
    for (auto &c : counts)
      divisor *= c.empty() ? 1 : c.front();
    Value divisorValue = createScalar(rewriter, loc, element, divisor);
    result = buildElementwise(
        rewriter, loc, resultType, ValueRange{sum},
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          return arith::DivFOp::create(b, l, args[0], divisorValue);
        });
  } else {
    // Divisor tensor over the output's spatial shape (row-major product
    // of the per-dimension counts).
    ArrayRef<int64_t> spatial = resultType.getShape().drop_front(2);
    auto divisorType = RankedTensorType::get(spatial, element);
    SmallVector<Attribute> values;
    SmallVector<int64_t> index(n, 0);
    for (int64_t flat = 0, e = divisorType.getNumElements(); flat < e;
         ++flat) {
      int64_t divisor = 1;
      for (int64_t i = 0; i < n; ++i)
        divisor *= counts[i][index[i]];
      values.push_back(rewriter.getFloatAttr(element, divisor));
      for (int64_t i = n - 1; i >= 0; --i) {
        if (++index[i] < spatial[i])
          break;
        index[i] = 0;
      }
    }
    Value divisors = arith::ConstantOp::create(
        rewriter, loc, DenseElementsAttr::get(divisorType, values));
    result = buildElementwise(
        rewriter, loc, resultType, ValueRange{sum, divisors},
        [](OpBuilder &b, Location l, ValueRange args) -> Value {
          return arith::DivFOp::create(b, l, args[0], args[1]);
        });
  }
  return result;
}

struct MaxPoolLowering : OpConversionPattern<nn::MaxPoolOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(nn::MaxPoolOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto resultType = cast<RankedTensorType>(op.getType());
    Value lowest = createLowest(rewriter, loc, resultType.getElementType());
    rewriter.replaceOp(op, padAndPool(rewriter, loc, PoolKind::Max,
                                      adaptor.getInput(), resultType,
                                      op.getKernelShape(), op.getStrides(),
                                      op.getDilations(), op.getPads(), lowest));
    return success();
  }
};

struct AveragePoolLowering : OpConversionPattern<nn::AveragePoolOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(nn::AveragePoolOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto inputType = cast<RankedTensorType>(adaptor.getInput().getType());
    auto resultType = cast<RankedTensorType>(op.getType());
    Type element = resultType.getElementType();
    ArrayRef<int64_t> kernel = op.getKernelShape(), strides = op.getStrides(),
                      pads = op.getPads();
    int64_t n = kernel.size();
    SmallVector<int64_t> dilations(n, 1);

    Value zero = createScalar(rewriter, loc, element, 0.0);
    Value sum = padAndPool(rewriter, loc, PoolKind::Sum, adaptor.getInput(),
                           resultType, kernel, strides, dilations, pads, zero);

    Value result =
        divideByWindowCounts(rewriter, loc, sum, inputType.getShape(), kernel,
                             strides, pads, op.getCountIncludePad());
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct MaxPoolGradLowering : OpConversionPattern<nn::MaxPoolGradOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(nn::MaxPoolGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value outputGrad = adaptor.getOutputGrad();
    auto inputType = cast<RankedTensorType>(adaptor.getInput().getType());
    auto outType = cast<RankedTensorType>(outputGrad.getType());
    Type element = outType.getElementType();
    ArrayRef<int64_t> kernel = op.getKernelShape(), strides = op.getStrides(),
                      dilations = op.getDilations(), pads = op.getPads();
    int64_t n = kernel.size();
    Value lowest = createLowest(rewriter, loc, element);
    Value input = padForWindows(rewriter, loc, adaptor.getInput(), outType,
                                kernel, strides, dilations, pads, lowest);

    // Per window, the maximum and the row-major index of its first
    // occurrence; the index output has the maximum's map.
    WindowLoops loops = getWindowLoops(ctx, strides, dilations);
    loops.maps.push_back(loops.maps.back());
    // The window shape is carried by an (unread) kernel tensor.
    Value window = tensor::EmptyOp::create(rewriter, loc, kernel, element);
    Type i64 = rewriter.getI64Type();
    auto indexType = RankedTensorType::get(outType.getShape(), i64);
    Value maxInit = createFilled(rewriter, loc, outType, lowest);
    Value indexInit =
        createFilled(rewriter, loc, indexType, createScalar(rewriter, loc, i64, 0));
    auto argmax = linalg::GenericOp::create(
        rewriter, loc, TypeRange{outType, indexType}, ValueRange{input, window},
        ValueRange{maxInit, indexInit}, loops.maps, loops.iterators,
        [&](OpBuilder &b, Location l, ValueRange args) {
          // Row-major rank of the window offset.
          Value rank = arith::ConstantIndexOp::create(b, l, 0);
          for (int64_t i = 0; i < n; ++i) {
            Value size = arith::ConstantIndexOp::create(b, l, kernel[i]);
            rank = arith::AddIOp::create(
                b, l, arith::MulIOp::create(b, l, rank, size),
                linalg::IndexOp::create(b, l, 2 + n + i));
          }
          Value rank64 = arith::IndexCastOp::create(b, l, i64, rank);
          // Strictly greater keeps the first maximum; a NaN wins (and then
          // stays), as in PyTorch.
          Value greater = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OGT,
                                                args[0], args[2]);
          Value nan = arith::CmpFOp::create(b, l, arith::CmpFPredicate::UNO,
                                            args[0], args[0]);
          Value take = arith::OrIOp::create(b, l, greater, nan);
          Value max = arith::SelectOp::create(b, l, take, args[0], args[2]);
          Value index = arith::SelectOp::create(b, l, take, rank64, args[3]);
          linalg::YieldOp::create(b, l, ValueRange{max, index});
        });
    Value indices = argmax.getResult(1);

    // Each offset receives the output gradient where it held the maximum.
    Value zero = createScalar(rewriter, loc, element, 0.0);
    Value grad = accumulatePoolGrad(
        rewriter, loc, inputType, outType, kernel, strides, dilations, pads,
        [&](OpBuilder &b, Location l, ArrayRef<int64_t>, int64_t rank) {
          Value rankValue = createScalar(b, l, i64, rank);
          return buildElementwise(
              b, l, outType, ValueRange{outputGrad, indices},
              [&](OpBuilder &nb, Location nl, ValueRange args) -> Value {
                Value hit = arith::CmpIOp::create(
                    nb, nl, arith::CmpIPredicate::eq, args[1], rankValue);
                return arith::SelectOp::create(nb, nl, hit, args[0], zero);
              });
        });
    rewriter.replaceOp(op, grad);
    return success();
  }
};

struct AveragePoolGradLowering
    : OpConversionPattern<nn::AveragePoolGradOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(nn::AveragePoolGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value outputGrad = adaptor.getOutputGrad();
    auto outType = cast<RankedTensorType>(outputGrad.getType());
    auto inputType = cast<RankedTensorType>(op.getType());
    ArrayRef<int64_t> kernel = op.getKernelShape(), strides = op.getStrides(),
                      pads = op.getPads();
    SmallVector<int64_t> dilations(kernel.size(), 1);
    Value scaled =
        divideByWindowCounts(rewriter, loc, outputGrad, inputType.getShape(),
                             kernel, strides, pads, op.getCountIncludePad());
    rewriter.replaceOp(
        op, accumulatePoolGrad(rewriter, loc, inputType, outType, kernel,
                               strides, dilations, pads,
                               [&](OpBuilder &, Location, ArrayRef<int64_t>,
                                   int64_t) { return scaled; }));
    return success();
  }
};

/// Mean over every spatial dimension: a sum `linalg.reduce` to [N, C], a
/// division by the spatial size, and an expand back to [N, C, 1, ...].
struct GlobalAveragePoolLowering
    : OpConversionPattern<nn::GlobalAveragePoolOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(nn::GlobalAveragePoolOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = adaptor.getInput();
    auto inputType = cast<RankedTensorType>(input.getType());
    auto resultType = cast<RankedTensorType>(op.getType());
    Type element = resultType.getElementType();
    SmallVector<int64_t> spatialDims;
    int64_t count = 1;
    for (int64_t d = 2; d < inputType.getRank(); ++d) {
      spatialDims.push_back(d);
      count *= inputType.getDimSize(d);
    }
    auto reducedType =
        RankedTensorType::get(inputType.getShape().take_front(2), element);
    Value init = createFilled(rewriter, loc, reducedType,
                              createScalar(rewriter, loc, element, 0.0));
    Value sum =
        linalg::ReduceOp::create(
            rewriter, loc, ValueRange{input}, ValueRange{init}, spatialDims,
            [](OpBuilder &b, Location l, ValueRange args) {
              linalg::YieldOp::create(
                  b, l,
                  ValueRange{arith::AddFOp::create(b, l, args[0], args[1])});
            })
            .getResult(0);
    Value countValue = createScalar(rewriter, loc, element, count);
    Value mean = buildElementwise(
        rewriter, loc, reducedType, ValueRange{sum},
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          return arith::DivFOp::create(b, l, args[0], countValue);
        });
    rewriter.replaceOp(op,
                       reshapeTo(rewriter, loc, mean, resultType.getShape()));
    return success();
  }
};

} // namespace

void populatePoolingPatterns(RewritePatternSet &patterns) {
  patterns.add<MaxPoolLowering, AveragePoolLowering, GlobalAveragePoolLowering,
               MaxPoolGradLowering, AveragePoolGradLowering>(
      patterns.getContext());
}

} // namespace pipedream::nn_to_linalg
