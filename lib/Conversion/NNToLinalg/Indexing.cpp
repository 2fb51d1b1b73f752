//===- Indexing.cpp - nn data-dependent indexing to linalg and scf --------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// - `gather_elements`, `gather_nd`: a generic over the result whose body
//   reads the index (or index tuple), normalizes it (`normalizeIndex`) and
//   `tensor.extract`s the element;
// - `scatter_elements`, `scatter_nd`: an scf.for nest over `updates` (row-
//   major, so duplicate indices combine in ONNX's order) carrying the result
//   tensor, which reads the addressed element, combines it with the update
//   by the reduction and inserts it back; an out-of-range index writes
//   nothing.
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

/// The generic over `resultType` with every loop parallel and no inputs;
/// `fn` computes the element from the loop indices.
Value buildIndexedGeneric(
    OpBuilder &b, Location loc, RankedTensorType resultType,
    llvm::function_ref<Value(OpBuilder &, Location, ValueRange)> fn) {
  int64_t rank = resultType.getRank();
  SmallVector<AffineMap> maps{b.getMultiDimIdentityMap(rank)};
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  return buildGeneric(
      b, loc, createEmpty(b, loc, resultType), ValueRange{}, maps, iterators,
      [&](OpBuilder &bb, Location l, ValueRange) -> Value {
        SmallVector<Value> ivs;
        for (int64_t d = 0; d < rank; ++d)
          ivs.push_back(linalg::IndexOp::create(bb, l, d));
        return fn(bb, l, ivs);
      });
}

/// `old` combined with `update` by an ONNX scatter reduction.
Value combine(OpBuilder &b, Location loc, StringRef reduction, Value old,
              Value update) {
  if (reduction == "add")
    return createArith<arith::AddFOp, arith::AddIOp>(b, loc, old, update);
  if (reduction == "mul")
    return createArith<arith::MulFOp, arith::MulIOp>(b, loc, old, update);
  // Unsigned integers and bools compare unsigned.
  if (reduction == "max")
    return createMax(b, loc, old, update);
  if (reduction == "min")
    return createMin(b, loc, old, update);
  return update;
}

/// Runs `body` for every position of `shape` (row-major) with `init` as the
/// carried tensor; `body` returns the next value of it.
Value forEachPosition(
    OpBuilder &b, Location loc, ArrayRef<int64_t> shape, Value init,
    llvm::function_ref<Value(OpBuilder &, Location, ValueRange, Value)> body) {
  SmallVector<Value> lbs, ubs, steps;
  for (int64_t size : shape) {
    lbs.push_back(arith::ConstantIndexOp::create(b, loc, 0));
    ubs.push_back(arith::ConstantIndexOp::create(b, loc, size));
    steps.push_back(arith::ConstantIndexOp::create(b, loc, 1));
  }
  scf::LoopNest nest = scf::buildLoopNest(
      b, loc, lbs, ubs, steps, ValueRange{init},
      [&](OpBuilder &bb, Location l, ValueRange ivs,
          ValueRange iterArgs) -> scf::ValueVector {
        return {body(bb, l, ivs, iterArgs[0])};
      });
  return nest.results.front();
}

/// Writes `update` combined with the element at `coords` of `acc` (when
/// `inBounds`) and returns the new tensor.
Value scatterOne(OpBuilder &b, Location loc, StringRef reduction, Value acc,
                 ValueRange coords, Value inBounds, Value update) {
  Value old = tensor::ExtractOp::create(b, loc, acc, coords);
  Value next = combine(b, loc, reduction, old, update);
  next = arith::SelectOp::create(b, loc, inBounds, next, old);
  return tensor::InsertOp::create(b, loc, next, acc, coords);
}

/// A lowering must not address an empty dimension with an index.
LogicalResult checkAddressable(Operation *op, ConversionPatternRewriter &rw,
                               ArrayRef<int64_t> dims) {
  if (llvm::any_of(dims, [](int64_t d) { return d == 0; }))
    return rw.notifyMatchFailure(op, "indexes an empty dimension");
  return success();
}

/// The data coordinates an index (or index tuple) addresses.
struct NDAddress {
  SmallVector<Value> coords;
  /// i1: every index was in range.
  Value inBounds;
};

/// How gather_elements and scatter_elements address the data: `indices` has
/// the shape of the result (of the updates), and position `ivs` of it
/// addresses the data at `ivs` with dimension `axis` replaced by the index
/// there.
struct ElementsAddressing {
  template <typename OpTy>
  ElementsAddressing(OpTy op, Value data, Value indices)
      : indices(indices), axis(op.getAxis()),
        axisSize(cast<RankedTensorType>(data.getType()).getDimSize(axis)) {}

  /// What is checked before indexing: the indexed dimension is not empty
  /// (else a match failure), and every index gets its run-time range check.
  LogicalResult check(ConversionPatternRewriter &rewriter, Location loc,
                      Operation *op, StringRef opType) const {
    if (failed(checkAddressable(op, rewriter, {axisSize})))
      return failure();
    emitIndexRangeCheck(rewriter, loc, indices, axisSize, op, opType);
    return success();
  }

  NDAddress at(OpBuilder &b, Location loc, ValueRange ivs) const {
    Value index = tensor::ExtractOp::create(b, loc, indices, ivs);
    NormalizedIndex n = normalizeIndex(b, loc, index, axisSize);
    NDAddress a{SmallVector<Value>(ivs), n.inBounds};
    a.coords[axis] = n.index;
    return a;
  }

  Value indices;
  int64_t axis, axisSize;
};

/// The run-time checks of an ND index tensor: coordinate k of every tuple
/// (indices[..., k]) against data dimension batchDims + k.
void emitIndexTupleRangeChecks(OpBuilder &b, Location loc, Value indices,
                               ArrayRef<int64_t> dataShape, int64_t batchDims,
                               Operation *op, StringRef opType) {
  auto type = cast<RankedTensorType>(indices.getType());
  int64_t rank = type.getRank(), q = type.getShape().back();
  auto sliceType = RankedTensorType::get(type.getShape().drop_back(),
                                         type.getElementType());
  for (int64_t k = 0; k < q; ++k) {
    SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0)), sizes,
        strides(rank, b.getIndexAttr(1));
    offsets.back() = b.getIndexAttr(k);
    for (int64_t d : type.getShape().drop_back())
      sizes.push_back(b.getIndexAttr(d));
    sizes.push_back(b.getIndexAttr(1));
    Value column = tensor::ExtractSliceOp::create(b, loc, sliceType, indices,
                                                  offsets, sizes, strides);
    emitIndexRangeCheck(b, loc, column, dataShape[batchDims + k], op, opType);
  }
}

/// How gather_nd and scatter_nd address the data: the last dimension of
/// `indices` holds index tuples, and position `ivs` (of the result, of the
/// updates) addresses first the positions in indices.shape[:-1] (the first
/// `batchDims` shared with the data), then those in the trailing data
/// dimensions.
struct NDAddressing {
  template <typename OpTy>
  NDAddressing(OpTy op, Value data, Value indices)
      : indices(indices),
        dataShape(cast<RankedTensorType>(data.getType()).getShape()),
        batchDims(op.getBatchDims()) {}

  /// What is checked before indexing: no addressed data dimension is empty
  /// (else a match failure), and every index tuple gets its run-time range
  /// checks.
  LogicalResult check(ConversionPatternRewriter &rewriter, Location loc,
                      Operation *op, StringRef opType) const {
    int64_t q = cast<RankedTensorType>(indices.getType()).getShape().back();
    if (failed(checkAddressable(op, rewriter, dataShape.slice(batchDims, q))))
      return failure();
    emitIndexTupleRangeChecks(rewriter, loc, indices, dataShape, batchDims, op,
                              opType);
    return success();
  }

  NDAddress at(OpBuilder &b, Location loc, ValueRange ivs) const {
    auto indicesType = cast<RankedTensorType>(indices.getType());
    int64_t q = indicesType.getShape().back();
    ValueRange outer = ivs.take_front(indicesType.getRank() - 1),
               inner = ivs.drop_front(indicesType.getRank() - 1);
    NDAddress a;
    a.coords.assign(outer.begin(), outer.begin() + batchDims);
    a.inBounds = arith::ConstantIntOp::create(b, loc, 1, 1);
    SmallVector<Value> at(outer);
    at.push_back(Value());
    for (int64_t k = 0; k < q; ++k) {
      at.back() = arith::ConstantIndexOp::create(b, loc, k);
      Value index = tensor::ExtractOp::create(b, loc, indices, at);
      NormalizedIndex n =
          normalizeIndex(b, loc, index, dataShape[batchDims + k]);
      a.coords.push_back(n.index);
      a.inBounds = arith::AndIOp::create(b, loc, a.inBounds, n.inBounds);
    }
    llvm::append_range(a.coords, inner);
    return a;
  }

  Value indices;
  ArrayRef<int64_t> dataShape;
  int64_t batchDims;
};

/// gather_elements, gather_nd: a generic over the result reading the data
/// at the address (`Addressing`) of each position. `opType` is the ONNX op
/// the run-time checks name.
template <typename OpTy, typename Addressing>
struct IndexedGatherLowering : OpConversionPattern<OpTy> {
  IndexedGatherLowering(MLIRContext *ctx, StringRef opType)
      : OpConversionPattern<OpTy>(ctx), opType(opType) {}

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value data = adaptor.getData();
    auto resultType = cast<RankedTensorType>(op.getType());
    if (resultType.getNumElements() == 0) {
      rewriter.replaceOp(op, createEmpty(rewriter, loc, resultType));
      return success();
    }
    Addressing addressing(op, data, adaptor.getIndices());
    if (failed(addressing.check(rewriter, loc, op, opType)))
      return failure();
    Value result = buildIndexedGeneric(
        rewriter, loc, resultType,
        [&](OpBuilder &b, Location l, ValueRange ivs) -> Value {
          NDAddress a = addressing.at(b, l, ivs);
          return tensor::ExtractOp::create(b, l, data, a.coords);
        });
    rewriter.replaceOp(op, result);
    return success();
  }

  StringRef opType;
};

/// scatter_elements, scatter_nd: a loop nest over the updates writing each
/// one (combined by the reduction) at its address (`Addressing`) in the
/// data, nothing where an index is out of range. `opType` is the ONNX op
/// the run-time checks name.
template <typename OpTy, typename Addressing>
struct IndexedScatterLowering : OpConversionPattern<OpTy> {
  IndexedScatterLowering(MLIRContext *ctx, StringRef opType)
      : OpConversionPattern<OpTy>(ctx), opType(opType) {}

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value data = adaptor.getData(), updates = adaptor.getUpdates();
    auto updatesType = cast<RankedTensorType>(updates.getType());
    if (updatesType.getNumElements() == 0) {
      rewriter.replaceOp(op, data);
      return success();
    }
    Addressing addressing(op, data, adaptor.getIndices());
    if (failed(addressing.check(rewriter, loc, op, opType)))
      return failure();
    StringRef reduction = op.getReduction();
    Value result = forEachPosition(
        rewriter, loc, updatesType.getShape(), data,
        [&](OpBuilder &b, Location l, ValueRange ivs, Value acc) -> Value {
          NDAddress a = addressing.at(b, l, ivs);
          Value update = tensor::ExtractOp::create(b, l, updates, ivs);
          return scatterOne(b, l, reduction, acc, a.coords, a.inBounds,
                            update);
        });
    rewriter.replaceOp(op, result);
    return success();
  }

  StringRef opType;
};

/// `nn.check_size`: its input, and a run-time check of kind `size` that
/// the size the values give is the one compiled.
struct CheckSizeLowering : OpConversionPattern<nn::CheckSizeOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(nn::CheckSizeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value size =
        tensor::ExtractOp::create(rewriter, loc, adaptor.getSize(),
                                  ValueRange{});
    // NOTE: I64Attr getters return uint64_t.
    int64_t expected = op.getExpectedAttr().getInt();
    nn::CheckIndexRangeOp::create(
        rewriter, loc, size, size, rewriter.getI64IntegerAttr(expected),
        rewriter.getI64IntegerAttr(expected + 1),
        rewriter.getStringAttr(getONNXNodeName(loc)), op.getOpTypeAttr(),
        op.getOutputAttr(), rewriter.getStringAttr("size"));
    rewriter.replaceOp(op, adaptor.getInput());
    return success();
  }
};

} // namespace

void populateIndexingPatterns(RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<IndexedGatherLowering<nn::GatherElementsOp, ElementsAddressing>>(
      ctx, "GatherElements");
  patterns
      .add<IndexedScatterLowering<nn::ScatterElementsOp, ElementsAddressing>>(
          ctx, "ScatterElements");
  patterns.add<IndexedGatherLowering<nn::GatherNDOp, NDAddressing>>(ctx,
                                                                    "GatherND");
  patterns.add<IndexedScatterLowering<nn::ScatterNDOp, NDAddressing>>(
      ctx, "ScatterND");
  patterns.add<CheckSizeLowering>(ctx);
}

} // namespace pipedream::nn_to_linalg
