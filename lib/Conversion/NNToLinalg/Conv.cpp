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
// Its gradients reuse the im2col idea of cpu-lower-conv-to-gemm so that the
// arithmetic is a contraction cpu-lower-gemm-to-blas turns into GEMM calls
// (layouts chosen so every contraction dimension merges):
//
//   nn.conv_backward_weight: cols[G, Cg, K..., N, O...] = Xpad[n, g, c,
//     o * s + k * d] (a gather), dY transposed to [G, Mg, N, O...], then
//     dW[g, m, (c, k)] = sum over (n, o) of dYt[g, m, (n, o)] * cols[g,
//     (c, k), (n, o)]: one GEMM per group.
//   nn.conv_backward_input, 2-D, ungrouped, stride 1: a forward convolution
//     of dY padded by d * (K - 1) - pads with the flipped, transposed kernel
//     (buildFullCorrelation), lowered like nn.conv.
//   nn.conv_backward_input otherwise: dcols[N, G, Cg, K..., O...] = sum
//     over m of W[g, m, (c, k)] * dY[n, g, m, (o)] (one GEMM per image and
//     group),
//     then col2im: for every kernel offset k, the strided view
//     dXpad[n, g, c, o * s + k * d] += dcols[n, g, c, k, o]
//     (accumulateWindows), and the padding cropped off.
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

/// `init[outExprs] += lhs[lhsExprs] * rhs[rhsExprs]` as a linalg.generic
/// with `iterators` (one per loop): the contraction of a convolution or of
/// one of its gradients.
Value buildMulAccumulate(OpBuilder &b, Location loc, Value lhs, Value rhs,
                         Value init, ArrayRef<AffineExpr> lhsExprs,
                         ArrayRef<AffineExpr> rhsExprs,
                         ArrayRef<AffineExpr> outExprs,
                         ArrayRef<utils::IteratorType> iterators) {
  MLIRContext *ctx = b.getContext();
  int64_t loops = iterators.size();
  return buildGeneric(
      b, loc, init, ValueRange{lhs, rhs},
      {AffineMap::get(loops, 0, lhsExprs, ctx),
       AffineMap::get(loops, 0, rhsExprs, ctx),
       AffineMap::get(loops, 0, outExprs, ctx)},
      iterators, [](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value product = arith::MulFOp::create(nb, l, args[0], args[1]);
        return arith::AddFOp::create(nb, l, args[2], product);
      });
}

/// Grouped N-d convolution as a linalg.generic on the grouped layout:
/// input [N, G, Cg, D...], weight [G, Mg, Cg, K...], init [N, G, Mg, O...].
Value buildGenericConv(OpBuilder &b, Location loc, Value input, Value weight,
                       Value init, ArrayRef<int64_t> strides,
                       ArrayRef<int64_t> dilations) {
  MLIRContext *ctx = b.getContext();
  int64_t n = strides.size();
  // Loops: batch, group, filter, O_1..O_n | channel, K_1..K_n.
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
  SmallVector<utils::IteratorType> iterators(3 + n,
                                             utils::IteratorType::parallel);
  iterators.append(1 + n, utils::IteratorType::reduction);
  return buildMulAccumulate(b, loc, input, weight, init, inputExprs,
                            weightExprs, outputExprs, iterators);
}

/// `value` [N, C, D...] padded with zeros by the ONNX `pads` of its
/// spatial dimensions (all begins, then all ends).
Value padSpatial(OpBuilder &b, Location loc, Value value,
                 ArrayRef<int64_t> pads, Value zero) {
  int64_t n = pads.size() / 2;
  SmallVector<int64_t> low{0, 0}, high{0, 0};
  llvm::append_range(low, pads.take_front(n));
  llvm::append_range(high, pads.drop_front(n));
  return padConstant(b, loc, value, low, high, zero);
}

/// `shape` split at dimension `dim` into (group, shape[dim] / group).
SmallVector<int64_t> groupedShape(ArrayRef<int64_t> shape, int64_t group,
                                  int64_t dim = 1) {
  SmallVector<int64_t> grouped(shape.take_front(dim));
  grouped.append({group, shape[dim] / group});
  llvm::append_range(grouped, shape.drop_front(dim + 1));
  return grouped;
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

    Value zero = createScalar(rewriter, loc, element, 0.0);
    input = padSpatial(rewriter, loc, input, pads, zero);

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
      Value gInput =
          reshapeTo(rewriter, loc, input, groupedShape(padded, group));
      Value gWeight =
          reshapeTo(rewriter, loc, weight,
                    groupedShape(weightType.getShape(), group, /*dim=*/0));
      Value gInit = reshapeTo(rewriter, loc, init,
                              groupedShape(resultType.getShape(), group));
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

struct ConvBackwardWeightLowering
    : OpConversionPattern<nn::ConvBackwardWeightOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(nn::ConvBackwardWeightOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value input = adaptor.getInput(), outputGrad = adaptor.getOutputGrad();
    auto inputType = cast<RankedTensorType>(input.getType());
    auto gradType = cast<RankedTensorType>(outputGrad.getType());
    auto resultType = cast<RankedTensorType>(op.getType());
    Type element = resultType.getElementType();
    int64_t n = inputType.getRank() - 2, group = op.getGroup();
    ArrayRef<int64_t> pads = op.getPads(), strides = op.getStrides(),
                      dilations = op.getDilations(),
                      kernel = op.getKernelShape();
    int64_t batch = inputType.getDimSize(0);
    int64_t groupChannels = inputType.getDimSize(1) / group;
    int64_t groupFilters = gradType.getDimSize(1) / group;
    ArrayRef<int64_t> outSpatial = gradType.getShape().drop_front(2);

    Value zero = createScalar(rewriter, loc, element, 0.0);
    Value padded = padSpatial(rewriter, loc, input, pads, zero);
    Value grouped = reshapeTo(
        rewriter, loc, padded,
        groupedShape(cast<RankedTensorType>(padded.getType()).getShape(),
                     group));

    // im2col: loops g, c, k_1..k_n, batch, o_1..o_n (all parallel).
    auto dim = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
    int64_t colLoops = 2 + n + 1 + n;
    AffineExpr g = dim(0), c = dim(1), b = dim(2 + n);
    SmallVector<AffineExpr> readExprs{b, g, c};
    for (int64_t i = 0; i < n; ++i)
      readExprs.push_back(dim(3 + n + i) * strides[i] +
                          dim(2 + i) * dilations[i]);
    SmallVector<int64_t> colShape{group, groupChannels};
    llvm::append_range(colShape, kernel);
    colShape.push_back(batch);
    llvm::append_range(colShape, outSpatial);
    auto colType = RankedTensorType::get(colShape, element);
    Value cols = buildGeneric(
        rewriter, loc, createEmpty(rewriter, loc, colType), ValueRange{grouped},
        {AffineMap::get(colLoops, 0, readExprs, ctx),
         rewriter.getMultiDimIdentityMap(colLoops)},
        SmallVector<utils::IteratorType>(colLoops,
                                         utils::IteratorType::parallel),
        [](OpBuilder &, Location, ValueRange args) -> Value {
          return args[0];
        });

    // dY [N, M, O...] -> [G, Mg, N, O...].
    Value gradGrouped =
        reshapeTo(rewriter, loc, outputGrad,
                  groupedShape(gradType.getShape(), group));
    SmallVector<int64_t> perm{1, 2, 0};
    SmallVector<int64_t> gradTShape{group, groupFilters, batch};
    for (int64_t i = 0; i < n; ++i) {
      perm.push_back(3 + i);
      gradTShape.push_back(outSpatial[i]);
    }
    Value gradT =
        linalg::TransposeOp::create(
            rewriter, loc, gradGrouped,
            createEmpty(rewriter, loc,
                        RankedTensorType::get(gradTShape, element)),
            perm)
            .getResult()[0];

    // dW[g, m, c, k] += dYt[g, m, b, o] * cols[g, c, k, b, o]; loops g, m,
    // c, k_1..k_n | b, o_1..o_n.
    SmallVector<AffineExpr> gradExprs{dim(0), dim(1), dim(3 + n)};
    SmallVector<AffineExpr> colExprs{dim(0), dim(2)};
    SmallVector<AffineExpr> outExprs{dim(0), dim(1), dim(2)};
    for (int64_t i = 0; i < n; ++i) {
      colExprs.push_back(dim(3 + i));
      outExprs.push_back(dim(3 + i));
    }
    colExprs.push_back(dim(3 + n));
    for (int64_t i = 0; i < n; ++i) {
      gradExprs.push_back(dim(4 + n + i));
      colExprs.push_back(dim(4 + n + i));
    }
    SmallVector<int64_t> weightShape{group, groupFilters, groupChannels};
    llvm::append_range(weightShape, kernel);
    auto weightType = RankedTensorType::get(weightShape, element);
    SmallVector<utils::IteratorType> iterators(3 + n,
                                               utils::IteratorType::parallel);
    iterators.append(1 + n, utils::IteratorType::reduction);
    Value weightGrad =
        buildMulAccumulate(rewriter, loc, gradT, cols,
                           createFilled(rewriter, loc, weightType, zero),
                           gradExprs, colExprs, outExprs, iterators);
    rewriter.replaceOp(
        op, reshapeTo(rewriter, loc, weightGrad, resultType.getShape()));
    return success();
  }
};

/// The input gradient of a 2-D, ungrouped, stride-1 convolution as a
/// forward convolution (the "full" correlation of dY with the flipped,
/// transposed kernel), which cpu-lower-conv-to-gemm turns into im2col + one
/// GEMM, instead of a GEMM into a K-times larger dcols and a col2im of K
/// strided adds:
///   dX = conv(pad(dY, d * (K - 1) - pads), W'),
///   W'[c, m, k] = W[m, c, K - 1 - k].
/// Null when the convolution does not qualify (strided, grouped, other
/// ranks, or pads past d * (K - 1), which would need a crop of dY) or has
/// fewer than 16 input channels: the forward convolution's GEMM has one row
/// per input channel against an im2col matrix of M * K rows, so with few
/// channels the im2col dominates (32x8x32x32 to 32x3x32x32, 3x3: 1.08 ms
/// against 0.35 ms for GEMM + col2im; 8 channels tie; 16 channels: 0.48
/// against 0.70 ms).
Value buildFullCorrelation(OpBuilder &b, Location loc, Value weight,
                           Value outputGrad, RankedTensorType resultType,
                           int64_t group, ArrayRef<int64_t> pads,
                           ArrayRef<int64_t> strides,
                           ArrayRef<int64_t> dilations) {
  auto weightType = cast<RankedTensorType>(weight.getType());
  int64_t n = resultType.getRank() - 2;
  if (n != 2 || group != 1 || resultType.getDimSize(1) < 16 ||
      llvm::any_of(strides, [](int64_t s) { return s != 1; }))
    return {};
  ArrayRef<int64_t> kernel = weightType.getShape().drop_front(2);
  SmallVector<int64_t> low{0, 0}, high{0, 0};
  for (int64_t i = 0; i < n; ++i) {
    int64_t extent = dilations[i] * (kernel[i] - 1);
    if (pads[i] > extent || pads[n + i] > extent)
      return {};
    low.push_back(extent - pads[i]);
    high.push_back(extent - pads[n + i]);
  }
  MLIRContext *ctx = b.getContext();
  Type element = resultType.getElementType();
  Value zero = createScalar(b, loc, element, 0.0);

  // W'[c, m, k_1, k_2] = W[m, c, K_1 - 1 - k_1, K_2 - 1 - k_2].
  SmallVector<int64_t> flippedShape{weightType.getDimSize(1),
                                    weightType.getDimSize(0)};
  llvm::append_range(flippedShape, kernel);
  auto dim = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
  SmallVector<AffineExpr> readExprs{dim(1), dim(0)};
  for (int64_t i = 0; i < n; ++i)
    readExprs.push_back(getAffineConstantExpr(kernel[i] - 1, ctx) -
                        dim(2 + i));
  Value flipped = buildGeneric(
      b, loc,
      createEmpty(b, loc, RankedTensorType::get(flippedShape, element)),
      ValueRange{weight},
      {AffineMap::get(2 + n, 0, readExprs, ctx),
       b.getMultiDimIdentityMap(2 + n)},
      SmallVector<utils::IteratorType>(2 + n, utils::IteratorType::parallel),
      [](OpBuilder &, Location, ValueRange args) -> Value { return args[0]; });

  Value padded = padConstant(b, loc, outputGrad, low, high, zero);
  return linalg::Conv2DNchwFchwOp::create(
             b, loc, TypeRange{resultType}, ValueRange{padded, flipped},
             createFilled(b, loc, resultType, zero),
             getI64VectorAttr(b, strides), getI64VectorAttr(b, dilations))
      .getResult(0);
}

struct ConvBackwardInputLowering
    : OpConversionPattern<nn::ConvBackwardInputOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(nn::ConvBackwardInputOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value weight = adaptor.getWeight(), outputGrad = adaptor.getOutputGrad();
    auto weightType = cast<RankedTensorType>(weight.getType());
    auto gradType = cast<RankedTensorType>(outputGrad.getType());
    auto resultType = cast<RankedTensorType>(op.getType());
    Type element = resultType.getElementType();
    int64_t n = resultType.getRank() - 2, group = op.getGroup();
    ArrayRef<int64_t> pads = op.getPads(), strides = op.getStrides(),
                      dilations = op.getDilations();
    if (Value result =
            buildFullCorrelation(rewriter, loc, weight, outputGrad, resultType,
                                 group, pads, strides, dilations)) {
      rewriter.replaceOp(op, result);
      return success();
    }
    ArrayRef<int64_t> kernel = weightType.getShape().drop_front(2);
    ArrayRef<int64_t> outSpatial = gradType.getShape().drop_front(2);
    int64_t batch = resultType.getDimSize(0);
    int64_t groupChannels = weightType.getDimSize(1);
    Value zero = createScalar(rewriter, loc, element, 0.0);

    // W [M, Cg, K...] -> [G, Mg, Cg, K...]; dY [N, M, O...] -> [N, G, Mg, O...].
    Value w = reshapeTo(rewriter, loc, weight,
                        groupedShape(weightType.getShape(), group, /*dim=*/0));
    Value dy = reshapeTo(rewriter, loc, outputGrad,
                         groupedShape(gradType.getShape(), group));

    // dcols[b, g, c, k, o] += W[g, m, c, k] * dY[b, g, m, o]; loops b, g, c,
    // k_1..k_n, o_1..o_n | m.
    auto dim = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
    int64_t loops = 3 + 2 * n + 1;
    AffineExpr m = dim(3 + 2 * n);
    SmallVector<AffineExpr> weightExprs{dim(1), m, dim(2)};
    SmallVector<AffineExpr> gradExprs{dim(0), dim(1), m};
    SmallVector<AffineExpr> outExprs{dim(0), dim(1), dim(2)};
    for (int64_t i = 0; i < n; ++i) {
      weightExprs.push_back(dim(3 + i));
      outExprs.push_back(dim(3 + i));
    }
    for (int64_t i = 0; i < n; ++i) {
      gradExprs.push_back(dim(3 + n + i));
      outExprs.push_back(dim(3 + n + i));
    }
    SmallVector<int64_t> colShape{batch, group, groupChannels};
    llvm::append_range(colShape, kernel);
    llvm::append_range(colShape, outSpatial);
    auto colType = RankedTensorType::get(colShape, element);
    SmallVector<utils::IteratorType> iterators(loops - 1,
                                               utils::IteratorType::parallel);
    iterators.push_back(utils::IteratorType::reduction);
    Value cols = buildMulAccumulate(
        rewriter, loc, w, dy, createFilled(rewriter, loc, colType, zero),
        weightExprs, gradExprs, outExprs, iterators);

    // col2im into the padded input [N, G, Cg, Dp...].
    SmallVector<int64_t> paddedShape{batch, group, groupChannels};
    for (int64_t i = 0; i < n; ++i)
      paddedShape.push_back(resultType.getDimSize(2 + i) + pads[i] +
                            pads[n + i]);
    auto paddedType = RankedTensorType::get(paddedShape, element);
    SmallVector<int64_t> viewShape{batch, group, groupChannels};
    llvm::append_range(viewShape, outSpatial);
    auto viewType = RankedTensorType::get(viewShape, element);
    Value acc = accumulateWindows(
        rewriter, loc, createFilled(rewriter, loc, paddedType, zero),
        outSpatial, kernel, strides, dilations,
        [&](OpBuilder &b, Location l, ArrayRef<int64_t> offset,
            int64_t) -> Value {
          // dcols[:, :, :, offset..., :...] as [N, G, Cg, O...].
          SmallVector<OpFoldResult> offsets(3, b.getIndexAttr(0)), sizes,
              unit(colShape.size(), b.getIndexAttr(1));
          for (int64_t k : offset)
            offsets.push_back(b.getIndexAttr(k));
          offsets.append(n, b.getIndexAttr(0));
          for (int64_t d = 0; d < int64_t(colShape.size()); ++d)
            sizes.push_back(
                b.getIndexAttr(d >= 3 && d < 3 + n ? 1 : colShape[d]));
          return tensor::ExtractSliceOp::create(b, l, viewType, cols, offsets,
                                                sizes, unit);
        });

    // [N, G, Cg, Dp...] -> [N, C, Dp...], then crop the padding.
    SmallVector<int64_t> flatShape(resultType.getShape().take_front(2));
    llvm::append_range(flatShape, ArrayRef(paddedShape).drop_front(3));
    Value result = reshapeTo(rewriter, loc, acc, flatShape);
    if (llvm::any_of(pads, [](int64_t p) { return p != 0; })) {
      SmallVector<OpFoldResult> offsets(2, rewriter.getIndexAttr(0)), sizes,
          unit(resultType.getRank(), rewriter.getIndexAttr(1));
      for (int64_t i = 0; i < n; ++i)
        offsets.push_back(rewriter.getIndexAttr(pads[i]));
      for (int64_t d : resultType.getShape())
        sizes.push_back(rewriter.getIndexAttr(d));
      result = tensor::ExtractSliceOp::create(rewriter, loc, resultType, result,
                                              offsets, sizes, unit);
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void populateConvPatterns(RewritePatternSet &patterns) {
  patterns.add<ConvLowering, ConvBackwardWeightLowering,
               ConvBackwardInputLowering>(patterns.getContext());
}

} // namespace pipedream::nn_to_linalg
