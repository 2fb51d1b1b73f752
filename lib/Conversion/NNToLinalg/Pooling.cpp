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
Value padForWindows(OpBuilder &b, Location loc, Value input,
                    RankedTensorType resultType, ArrayRef<int64_t> kernel,
                    ArrayRef<int64_t> strides, ArrayRef<int64_t> dilations,
                    ArrayRef<int64_t> pads, Value padValue) {
  auto inputType = cast<RankedTensorType>(input.getType());
  int64_t n = kernel.size();
  SmallVector<int64_t> low{0, 0}, high{0, 0};
  for (int64_t i = 0; i < n; ++i) {
    int64_t size = inputType.getDimSize(2 + i);
    int64_t out = resultType.getDimSize(2 + i);
    int64_t needed =
        (out - 1) * strides[i] + dilations[i] * (kernel[i] - 1) + 1;
    int64_t available = size + pads[i] + pads[n + i];
    low.push_back(pads[i]);
    high.push_back(pads[n + i] + std::max<int64_t>(0, needed - available));
  }
  return padConstant(b, loc, input, low, high, padValue);
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
  if (n == 2 && kind == PoolKind::Max)
    return linalg::PoolingNchwMaxOp::create(b, loc, resultTypes, ins, init,
                                            stridesAttr, dilationsAttr)
        .getResult(0);
  if (n == 2 && kind == PoolKind::Sum)
    return linalg::PoolingNchwSumOp::create(b, loc, resultTypes, ins, init,
                                            stridesAttr, dilationsAttr)
        .getResult(0);
  if (n == 1 && kind == PoolKind::Max)
    return linalg::PoolingNcwMaxOp::create(b, loc, resultTypes, ins, init,
                                           stridesAttr, dilationsAttr)
        .getResult(0);
  if (n == 1 && kind == PoolKind::Sum)
    return linalg::PoolingNcwSumOp::create(b, loc, resultTypes, ins, init,
                                           stridesAttr, dilationsAttr)
        .getResult(0);

  // Loops: batch, channel, O_1..O_n | K_1..K_n.
  MLIRContext *ctx = b.getContext();
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
  SmallVector<AffineMap> maps{AffineMap::get(numLoops, 0, inputExprs, ctx),
                              AffineMap::get(numLoops, 0, windowExprs, ctx),
                              AffineMap::get(numLoops, 0, outputExprs, ctx)};
  SmallVector<utils::IteratorType> iterators(2 + n,
                                             utils::IteratorType::parallel);
  iterators.append(n, utils::IteratorType::reduction);
  return buildGeneric(
      b, loc, init, ins, maps, iterators,
      [kind](OpBuilder &nb, Location l, ValueRange args) -> Value {
        if (kind == PoolKind::Max)
          return arith::MaximumFOp::create(nb, l, args[2], args[0]);
        return arith::AddFOp::create(nb, l, args[2], args[0]);
      });
}

struct MaxPoolLowering : OpConversionPattern<nn::MaxPoolOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(nn::MaxPoolOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto resultType = cast<RankedTensorType>(op.getType());
    Value lowest = createLowest(rewriter, loc, resultType.getElementType());
    Value input = padForWindows(rewriter, loc, adaptor.getInput(), resultType,
                                op.getKernelShape(), op.getStrides(),
                                op.getDilations(), op.getPads(), lowest);
    Value init = createFilled(rewriter, loc, resultType, lowest);
    rewriter.replaceOp(op, buildPool(rewriter, loc, PoolKind::Max, input, init,
                                     op.getKernelShape(), op.getStrides(),
                                     op.getDilations()));
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
    Value input = padForWindows(rewriter, loc, adaptor.getInput(), resultType,
                                kernel, strides, dilations, pads, zero);
    Value init = createFilled(rewriter, loc, resultType, zero);
    Value sum = buildPool(rewriter, loc, PoolKind::Sum, input, init, kernel,
                          strides, dilations);

    // Per spatial dimension, how many positions of each window count.
    bool includePad = op.getCountIncludePad();
    SmallVector<SmallVector<int64_t>> counts(n);
    bool uniform = true;
    for (int64_t i = 0; i < n; ++i) {
      int64_t size = inputType.getDimSize(2 + i);
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
    rewriter.replaceOp(op, result);
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
  patterns.add<MaxPoolLowering, AveragePoolLowering, GlobalAveragePoolLowering>(
      patterns.getContext());
}

} // namespace pipedream::nn_to_linalg
