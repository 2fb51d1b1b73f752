//===- Training.cpp - nn training-support ops to tensor, scf and linalg ---===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The ops the derivative rules and training-mode dropout add:
// - `slice_grad`: zeros (`linalg.fill`) with the input written into the
//   strided window by `tensor.insert_slice` (positive strides; dimensions
//   with negative steps are reversed first by a copy generic, as `slice`
//   does);
// - `gather_grad`: the gradient and indices flattened to [outer, N, inner]
//   and [N], then one `scf.for` over the N indices, each adding its
//   [outer, 1, inner] slice into the row its index names with an
//   extract_slice / add generic / insert_slice triple that bufferizes in
//   place: O(gradient size), independent of the table size;
// - `bernoulli`: a `linalg.generic` whose body hashes the seed and the
//   element's row-major index (`linalg.index`) with splitmix64 and compares
//   the top 53 bits, as a uniform in [0, 1), against the probability.
//
//===----------------------------------------------------------------------===//

#include "Utils.h"

#include "pipedream/Dialect/NN/IR/NNOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
namespace nn = pipedream::nn;

namespace pipedream::nn_to_linalg {
namespace {

Value zerosOf(OpBuilder &b, Location loc, RankedTensorType type) {
  return createFilled(b, loc, type,
                      createScalar(b, loc, type.getElementType(), 0.0));
}

struct SliceGradLowering : OpConversionPattern<nn::SliceGradOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(nn::SliceGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto resultType = cast<RankedTensorType>(op.getType());
    Value input = adaptor.getInput();
    auto inputType = cast<RankedTensorType>(input.getType());
    ArrayRef<int64_t> starts = op.getStarts(), steps = op.getSteps(),
                      sizes = inputType.getShape();
    Value zeros = zerosOf(rewriter, loc, resultType);
    if (inputType.getNumElements() == 0) {
      rewriter.replaceOp(op, zeros);
      return success();
    }
    // A negative step writes the same positions as the positive one from
    // the last position written, with the input reversed.
    StridedWindow window = getStridedWindow(rewriter, starts, steps, sizes);
    input = reverseWindow(rewriter, loc, input, window);
    rewriter.replaceOp(op, tensor::InsertSliceOp::create(
                               rewriter, loc, input, zeros, window.offsets,
                               window.sizes, window.strides));
    return success();
  }
};

struct GatherGradLowering : OpConversionPattern<nn::GatherGradOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(nn::GatherGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value grad = adaptor.getGrad(), indices = adaptor.getIndices();
    auto gradType = cast<RankedTensorType>(grad.getType());
    auto indicesType = cast<RankedTensorType>(indices.getType());
    auto resultType = cast<RankedTensorType>(op.getType());
    Type element = resultType.getElementType();
    int64_t axis = op.getAxis(), axisSize = op.getAxisSize();
    int64_t indexRank = indicesType.getRank();
    auto product = [](ArrayRef<int64_t> dims) {
      int64_t n = 1;
      for (int64_t d : dims)
        n *= d;
      return n;
    };
    int64_t outer = product(gradType.getShape().take_front(axis));
    int64_t count = indicesType.getNumElements();
    int64_t inner = product(gradType.getShape().drop_front(axis + indexRank));
    if (resultType.getNumElements() == 0 || count == 0 || outer * inner == 0) {
      rewriter.replaceOp(op, zerosOf(rewriter, loc, resultType));
      return success();
    }

    emitIndexRangeCheck(rewriter, loc, indices, axisSize, op,
                        "Gather, backward");
    Value grad3 = reshapeTo(rewriter, loc, grad, {outer, count, inner});
    Value flatIndices = reshapeTo(rewriter, loc, indices, {count});
    auto accType = RankedTensorType::get({outer, axisSize, inner}, element);
    auto pieceType = RankedTensorType::get({outer, 1, inner}, element);
    Value init = zerosOf(rewriter, loc, accType);

    Value lower = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value upper = arith::ConstantIndexOp::create(rewriter, loc, count);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    auto loop = scf::ForOp::create(
        rewriter, loc, lower, upper, one, ValueRange{init},
        [&](OpBuilder &b, Location l, Value iv, ValueRange iterArgs) {
          Value acc = iterArgs[0];
          // ONNX wraps a negative index once (`index + axis_size`).
          Value index = tensor::ExtractOp::create(b, l, flatIndices, iv);
          NormalizedIndex normalized = normalizeIndex(b, l, index, axisSize);
          Value row = normalized.index;

          SmallVector<OpFoldResult> sizes{b.getIndexAttr(outer),
                                          b.getIndexAttr(1),
                                          b.getIndexAttr(inner)};
          SmallVector<OpFoldResult> strides(3, b.getIndexAttr(1));
          SmallVector<OpFoldResult> gradOffsets{b.getIndexAttr(0), iv,
                                                b.getIndexAttr(0)};
          SmallVector<OpFoldResult> rowOffsets{b.getIndexAttr(0), row,
                                               b.getIndexAttr(0)};
          Value piece = tensor::ExtractSliceOp::create(
              b, l, pieceType, grad3, gradOffsets, sizes, strides);
          Value current = tensor::ExtractSliceOp::create(
              b, l, pieceType, acc, rowOffsets, sizes, strides);
          SmallVector<AffineMap> maps(2, b.getMultiDimIdentityMap(3));
          SmallVector<utils::IteratorType> iterators(
              3, utils::IteratorType::parallel);
          Value sum = buildGeneric(
              b, l, current, ValueRange{piece}, maps, iterators,
              [](OpBuilder &bb, Location ll, ValueRange args) -> Value {
                return arith::AddFOp::create(bb, ll, args[1], args[0]);
              });
          // An out-of-range index adds nothing.
          sum = arith::SelectOp::create(b, l, normalized.inBounds, sum,
                                        current);
          Value updated = tensor::InsertSliceOp::create(
              b, l, sum, acc, rowOffsets, sizes, strides);
          scf::YieldOp::create(b, l, updated);
        });
    rewriter.replaceOp(op, reshapeTo(rewriter, loc, loop.getResult(0),
                                     resultType.getShape()));
    return success();
  }
};

/// splitmix64's output function: a bijective mix of the 64 bits.
Value mix64(OpBuilder &b, Location loc, Value z) {
  auto constant = [&](uint64_t v) -> Value {
    return arith::ConstantOp::create(
        b, loc, b.getI64IntegerAttr(static_cast<int64_t>(v)));
  };
  auto xorShift = [&](Value v, uint64_t shift) -> Value {
    return arith::XOrIOp::create(
        b, loc, v, arith::ShRUIOp::create(b, loc, v, constant(shift)));
  };
  z = arith::MulIOp::create(b, loc, xorShift(z, 30),
                            constant(0xBF58476D1CE4E5B9ULL));
  z = arith::MulIOp::create(b, loc, xorShift(z, 27),
                            constant(0x94D049BB133111EBULL));
  return xorShift(z, 31);
}

struct BernoulliLowering : OpConversionPattern<nn::BernoulliOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(nn::BernoulliOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    auto resultType = cast<RankedTensorType>(op.getType());
    Type element = resultType.getElementType();
    int64_t rank = resultType.getRank();
    ArrayRef<int64_t> shape = resultType.getShape();
    double probability = op.getProbability().convertToDouble();

    SmallVector<AffineMap> maps{AffineMap::get(rank, 0, {}, ctx),
                                rewriter.getMultiDimIdentityMap(rank)};
    SmallVector<utils::IteratorType> iterators(rank,
                                               utils::IteratorType::parallel);
    Value result = buildGeneric(
        rewriter, loc, createEmpty(rewriter, loc, resultType),
        ValueRange{adaptor.getSeed()}, maps, iterators,
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Type i64 = b.getI64Type();
          auto constant = [&](uint64_t v) -> Value {
            return arith::ConstantOp::create(
                b, l, b.getI64IntegerAttr(static_cast<int64_t>(v)));
          };
          // Row-major linear index of the element.
          Value linear = rank ? Value(linalg::IndexOp::create(b, l, 0))
                              : arith::ConstantIndexOp::create(b, l, 0);
          for (int64_t d = 1; d < rank; ++d) {
            Value scaled = arith::MulIOp::create(
                b, l, linear, arith::ConstantIndexOp::create(b, l, shape[d]));
            linear = arith::AddIOp::create(b, l, scaled,
                                           linalg::IndexOp::create(b, l, d));
          }
          Value counter = arith::IndexCastOp::create(b, l, i64, linear);
          // key = the first splitmix64 output of state `seed`; element i
          // takes output i + 1 of state `key`.
          const uint64_t golden = 0x9E3779B97F4A7C15ULL;
          Value key = mix64(
              b, l, arith::AddIOp::create(b, l, args[0], constant(golden)));
          Value step = arith::MulIOp::create(
              b, l, arith::AddIOp::create(b, l, counter, constant(1)),
              constant(golden));
          Value bits = mix64(b, l, arith::AddIOp::create(b, l, key, step));
          // The top 53 bits as a uniform double in [0, 1).
          Value top = arith::ShRUIOp::create(b, l, bits, constant(11));
          Value uniform = arith::MulFOp::create(
              b, l, arith::UIToFPOp::create(b, l, b.getF64Type(), top),
              createScalar(b, l, b.getF64Type(), 0x1.0p-53));
          Value hit = arith::CmpFOp::create(
              b, l, arith::CmpFPredicate::OLT, uniform,
              createScalar(b, l, b.getF64Type(), probability));
          return arith::SelectOp::create(b, l, hit,
                                         createScalar(b, l, element, 1.0),
                                         createScalar(b, l, element, 0.0));
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void populateTrainingPatterns(RewritePatternSet &patterns) {
  patterns.add<SliceGradLowering, GatherGradLowering, BernoulliLowering>(
      patterns.getContext());
}

} // namespace pipedream::nn_to_linalg
