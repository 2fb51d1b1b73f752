//===- Shape.cpp - nn shape manipulation to tensor and linalg -------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// - `reshape`, `flatten`, `squeeze`, `unsqueeze`: `tensor.collapse_shape` /
//   `tensor.expand_shape` (through the flat vector when no single
//   reassociation exists);
// - `transpose`: `linalg.transpose`; `expand`: `linalg.broadcast`;
// - `concat`: `tensor.concat`; `split`: one `tensor.extract_slice` per piece;
// - `slice`: a strided `tensor.extract_slice` (positive strides), then a
//   generic reversing the dimensions with negative steps;
// - `gather`: a generic over the result whose body reads the index, wraps a
//   negative one and clamps it (`normalizeIndex`), and `tensor.extract`s the
//   element.
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

/// Every op whose result is its input's elements in the same row-major
/// order under another shape.
template <typename OpTy>
struct ReshapeLikeLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto resultType = cast<RankedTensorType>(op.getType());
    rewriter.replaceOp(op, reshapeTo(rewriter, op.getLoc(), adaptor.getInput(),
                                     resultType.getShape()));
    return success();
  }
};

struct TransposeLowering : OpConversionPattern<nn::TransposeOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(nn::TransposeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto resultType = cast<RankedTensorType>(op.getType());
    // The identity permutation (and rank 0, where upstream linalg.transpose
    // crashes in its verifier) moves nothing.
    if (llvm::equal(op.getPerm(),
                    llvm::seq<int64_t>(0, resultType.getRank()))) {
      rewriter.replaceOp(op, adaptor.getInput());
      return success();
    }
    Value init = createEmpty(rewriter, op.getLoc(), resultType);
    rewriter.replaceOp(op, linalg::TransposeOp::create(rewriter, op.getLoc(),
                                                       adaptor.getInput(), init,
                                                       op.getPerm())
                               .getResult()[0]);
    return success();
  }
};

struct ExpandLowering : OpConversionPattern<nn::ExpandOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(nn::ExpandOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, broadcastTo(rewriter, op.getLoc(),
                                       adaptor.getInput(), op.getShape()));
    return success();
  }
};

struct ConcatLowering : OpConversionPattern<nn::ConcatOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(nn::ConcatOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ValueRange inputs = adaptor.getInputs();
    if (inputs.size() == 1) {
      rewriter.replaceOp(op, inputs.front());
      return success();
    }
    rewriter.replaceOpWithNewOp<tensor::ConcatOp>(
        op, op.getType(), static_cast<uint64_t>(op.getAxis()), inputs);
    return success();
  }
};

struct SplitLowering : OpConversionPattern<nn::SplitOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(nn::SplitOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value input = adaptor.getInput();
    auto type = cast<RankedTensorType>(input.getType());
    int64_t axis = op.getAxis();
    SmallVector<Value> pieces;
    int64_t offset = 0;
    for (Value result : op.getOutputs()) {
      auto pieceType = cast<RankedTensorType>(result.getType());
      // An empty piece has no in-bounds offset to slice at.
      if (pieceType.getNumElements() == 0) {
        pieces.push_back(createEmpty(rewriter, op.getLoc(), pieceType));
        continue;
      }
      SmallVector<OpFoldResult> offsets(type.getRank(),
                                        rewriter.getIndexAttr(0));
      offsets[axis] = rewriter.getIndexAttr(offset);
      SmallVector<OpFoldResult> sizes,
          strides(type.getRank(), rewriter.getIndexAttr(1));
      for (int64_t size : pieceType.getShape())
        sizes.push_back(rewriter.getIndexAttr(size));
      pieces.push_back(tensor::ExtractSliceOp::create(
          rewriter, op.getLoc(), pieceType, input, offsets, sizes, strides));
      offset += pieceType.getDimSize(axis);
    }
    rewriter.replaceOp(op, pieces);
    return success();
  }
};

struct SliceLowering : OpConversionPattern<nn::SliceOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(nn::SliceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto resultType = cast<RankedTensorType>(op.getType());
    ArrayRef<int64_t> starts = op.getStarts(), sizes = op.getSizes(),
                      steps = op.getSteps();
    if (resultType.getNumElements() == 0) {
      rewriter.replaceOp(op, createEmpty(rewriter, loc, resultType));
      return success();
    }
    // A negative step reads the same elements as the positive one from the
    // last element read, in reverse.
    StridedWindow window = getStridedWindow(rewriter, starts, steps, sizes);
    Value slice = tensor::ExtractSliceOp::create(
        rewriter, loc, resultType, adaptor.getInput(), window.offsets,
        window.sizes, window.strides);
    slice = reverseWindow(rewriter, loc, slice, window);
    rewriter.replaceOp(op, slice);
    return success();
  }
};

struct GatherLowering : OpConversionPattern<nn::GatherOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(nn::GatherOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value data = adaptor.getData(), indices = adaptor.getIndices();
    auto dataType = cast<RankedTensorType>(data.getType());
    auto indicesType = cast<RankedTensorType>(indices.getType());
    auto resultType = cast<RankedTensorType>(op.getType());
    int64_t axis = op.getAxis();
    int64_t indexRank = indicesType.getRank();
    int64_t rank = resultType.getRank();
    int64_t axisSize = dataType.getDimSize(axis);
    if (resultType.getNumElements() == 0) {
      rewriter.replaceOp(op, createEmpty(rewriter, loc, resultType));
      return success();
    }
    if (axisSize == 0)
      return rewriter.notifyMatchFailure(op, "indexes an empty dimension");
    // Indices are data: checked once, up front (nn.check_index_range);
    // the access clamps them (normalizeIndex), so a bad one reads a valid
    // row, never past the table.
    emitIndexRangeCheck(rewriter, loc, indices, axisSize, op, "Gather");

    // Result dims [axis, axis + indexRank) walk the indices.
    SmallVector<AffineExpr> indexExprs;
    for (int64_t d = 0; d < indexRank; ++d)
      indexExprs.push_back(getAffineDimExpr(axis + d, ctx));
    SmallVector<AffineMap> maps{AffineMap::get(rank, 0, indexExprs, ctx),
                                rewriter.getMultiDimIdentityMap(rank)};
    SmallVector<utils::IteratorType> iterators(rank,
                                               utils::IteratorType::parallel);
    Value result = buildGeneric(
        rewriter, loc, createEmpty(rewriter, loc, resultType),
        ValueRange{indices}, maps, iterators,
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          SmallVector<Value> coords;
          for (int64_t d = 0; d < axis; ++d)
            coords.push_back(linalg::IndexOp::create(b, l, d));
          coords.push_back(normalizeIndex(b, l, args[0], axisSize).index);
          for (int64_t d = axis + indexRank; d < rank; ++d)
            coords.push_back(linalg::IndexOp::create(b, l, d));
          return tensor::ExtractOp::create(b, l, data, coords);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// `nn.one_hot`: a generic over the result comparing each index with the
/// position along the last dimension.
struct OneHotLowering : OpConversionPattern<nn::OneHotOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(nn::OneHotOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto resultType = cast<RankedTensorType>(op.getType());
    int64_t rank = resultType.getRank();
    MLIRContext *ctx = rewriter.getContext();
    SmallVector<AffineMap> maps{
        AffineMap::getMultiDimIdentityMap(rank, ctx).getMajorSubMap(rank - 1),
        rewriter.getMultiDimIdentityMap(rank)};
    SmallVector<utils::IteratorType> iterators(rank,
                                               utils::IteratorType::parallel);
    Type elementType = resultType.getElementType();
    Value result = buildGeneric(
        rewriter, loc, createEmpty(rewriter, loc, resultType),
        ValueRange{adaptor.getIndices()}, maps, iterators,
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value index = args[0];
          Value position = arith::IndexCastOp::create(
              b, l, index.getType(), linalg::IndexOp::create(b, l, rank - 1));
          Value equal = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                                              index, position);
          return arith::SelectOp::create(b, l, equal,
                                         createScalar(b, l, elementType, 1),
                                         createScalar(b, l, elementType, 0));
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void populateShapePatterns(RewritePatternSet &patterns) {
  patterns.add<
      ReshapeLikeLowering<nn::ReshapeOp>, ReshapeLikeLowering<nn::FlattenOp>,
      ReshapeLikeLowering<nn::SqueezeOp>, ReshapeLikeLowering<nn::UnsqueezeOp>,
      TransposeLowering, ExpandLowering, ConcatLowering, SplitLowering,
      SliceLowering, GatherLowering, OneHotLowering>(patterns.getContext());
}

} // namespace pipedream::nn_to_linalg
