//===- Conv.cpp - nn.conv to linalg convolutions --------------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// `nn.conv` pads its input with zeros (`tensor.pad`, ONNX pads: all begins
// then all ends), starts from the broadcast bias (or zeros) and accumulates
// with the named linalg convolution that fits:
//
//   group 1:           linalg.conv_{1d_ncw_fcw, 2d_nchw_fchw, 3d_ncdhw_fcdhw}
//   2-D depthwise:     linalg.depthwise_conv_2d_nchw_chw (group = C = M)
//   2-D grouped:       linalg.conv_2d_ngchw_gfchw on [N, G, C/G, H, W]
//   anything else:     a linalg.generic with the same grouped layout
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

/// Grouped N-d convolution as a linalg.generic on the grouped layout:
/// input [N, G, Cg, D...], weight [G, Mg, Cg, K...], init [N, G, Mg, O...].
Value buildGenericConv(OpBuilder &b, Location loc, Value input, Value weight,
                       Value init, ArrayRef<int64_t> strides,
                       ArrayRef<int64_t> dilations) {
  MLIRContext *ctx = b.getContext();
  int64_t n = strides.size();
  // Loops: batch, group, filter, O_1..O_n | channel, K_1..K_n.
  int64_t numLoops = 3 + n + 1 + n;
  auto dim = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
  AffineExpr batch = dim(0), group = dim(1), filter = dim(2),
             channel = dim(3 + n);
  SmallVector<AffineExpr> inputExprs{batch, group, channel};
  SmallVector<AffineExpr> weightExprs{group, filter, channel};
  SmallVector<AffineExpr> outputExprs{batch, group, filter};
  for (int64_t i = 0; i < n; ++i) {
    AffineExpr out = dim(3 + i), window = dim(4 + n + i);
    inputExprs.push_back(out * strides[i] + window * dilations[i]);
    weightExprs.push_back(window);
    outputExprs.push_back(out);
  }
  SmallVector<AffineMap> maps{AffineMap::get(numLoops, 0, inputExprs, ctx),
                              AffineMap::get(numLoops, 0, weightExprs, ctx),
                              AffineMap::get(numLoops, 0, outputExprs, ctx)};
  SmallVector<utils::IteratorType> iterators(3 + n,
                                             utils::IteratorType::parallel);
  iterators.append(1 + n, utils::IteratorType::reduction);
  return buildGeneric(b, loc, init, ValueRange{input, weight}, maps, iterators,
                      [](OpBuilder &nb, Location l, ValueRange args) -> Value {
                        Value product =
                            arith::MulFOp::create(nb, l, args[0], args[1]);
                        return arith::AddFOp::create(nb, l, args[2], product);
                      });
}

struct ConvLowering : OpConversionPattern<nn::ConvOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(nn::ConvOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = adaptor.getInput(), weight = adaptor.getWeight();
    auto inputType = cast<RankedTensorType>(input.getType());
    auto weightType = cast<RankedTensorType>(weight.getType());
    auto resultType = cast<RankedTensorType>(op.getType());
    Type element = resultType.getElementType();
    int64_t rank = inputType.getRank(), n = rank - 2;
    ArrayRef<int64_t> pads = op.getPads();
    ArrayRef<int64_t> strides = op.getStrides(), dilations = op.getDilations();

    SmallVector<int64_t> low{0, 0}, high{0, 0};
    llvm::append_range(low, pads.take_front(n));
    llvm::append_range(high, pads.drop_front(n));
    Value zero = createScalar(rewriter, loc, element, 0.0);
    input = padConstant(rewriter, loc, input, low, high, zero);

    // Accumulator: the bias along the filter dimension, or zeros.
    Value init;
    if (Value bias = adaptor.getBias()) {
      SmallVector<int64_t> broadcastDims{0};
      for (int64_t d = 2; d < rank; ++d)
        broadcastDims.push_back(d);
      init = linalg::BroadcastOp::create(rewriter, loc, bias,
                                         createEmpty(rewriter, loc, resultType),
                                         broadcastDims)
                 .getResult()[0];
    } else {
      init = createFilled(rewriter, loc, resultType, zero);
    }

    int64_t group = op.getGroup();
    int64_t channels = inputType.getDimSize(1);
    int64_t filters = weightType.getDimSize(0);
    auto stridesAttr = getI64VectorAttr(rewriter, strides);
    auto dilationsAttr = getI64VectorAttr(rewriter, dilations);
    SmallVector<Type> resultTypes{resultType};
    SmallVector<Value> ins{input, weight};

    Value result;
    if (group == 1 && n == 1) {
      result = linalg::Conv1DNcwFcwOp::create(rewriter, loc, resultTypes, ins,
                                              init, stridesAttr, dilationsAttr)
                   .getResult(0);
    } else if (group == 1 && n == 2) {
      result =
          linalg::Conv2DNchwFchwOp::create(rewriter, loc, resultTypes, ins,
                                           init, stridesAttr, dilationsAttr)
              .getResult(0);
    } else if (group == 1 && n == 3) {
      result =
          linalg::Conv3DNcdhwFcdhwOp::create(rewriter, loc, resultTypes, ins,
                                             init, stridesAttr, dilationsAttr)
              .getResult(0);
    } else if (n == 2 && group == channels && filters == channels) {
      // Depthwise, one filter per channel: weight [C, 1, kh, kw] -> [C, kh,
      // kw].
      SmallVector<int64_t> kernelShape{filters};
      llvm::append_range(kernelShape, weightType.getShape().drop_front(2));
      Value kernel = reshapeTo(rewriter, loc, weight, kernelShape);
      result = linalg::DepthwiseConv2DNchwChwOp::create(
                   rewriter, loc, resultTypes, ValueRange{input, kernel}, init,
                   stridesAttr, dilationsAttr)
                   .getResult(0);
    } else {
      // Split channels and filters into (group, per-group) dimensions.
      auto padded = cast<RankedTensorType>(input.getType()).getShape();
      SmallVector<int64_t> groupedInput{padded[0], group, channels / group};
      llvm::append_range(groupedInput, padded.drop_front(2));
      SmallVector<int64_t> groupedWeight{group, filters / group,
                                         weightType.getDimSize(1)};
      llvm::append_range(groupedWeight, weightType.getShape().drop_front(2));
      SmallVector<int64_t> groupedOutput{resultType.getDimSize(0), group,
                                         filters / group};
      llvm::append_range(groupedOutput, resultType.getShape().drop_front(2));
      Value gInput = reshapeTo(rewriter, loc, input, groupedInput);
      Value gWeight = reshapeTo(rewriter, loc, weight, groupedWeight);
      Value gInit = reshapeTo(rewriter, loc, init, groupedOutput);
      Value gResult;
      if (n == 2)
        gResult =
            linalg::Conv2DNgchwGfchwOp::create(
                rewriter, loc, TypeRange{gInit.getType()},
                ValueRange{gInput, gWeight}, gInit, stridesAttr, dilationsAttr)
                .getResult(0);
      else
        gResult = buildGenericConv(rewriter, loc, gInput, gWeight, gInit,
                                   strides, dilations);
      result = reshapeTo(rewriter, loc, gResult, resultType.getShape());
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void populateConvPatterns(RewritePatternSet &patterns) {
  patterns.add<ConvLowering>(patterns.getContext());
}

} // namespace pipedream::nn_to_linalg
