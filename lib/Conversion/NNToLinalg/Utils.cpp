//===- Utils.cpp - helpers shared by the nn-to-linalg patterns ------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "Utils.h"

#include "pipedream/Dialect/NN/IR/NNOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/IR/AttrTypeSubElements.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

using namespace mlir;

namespace pipedream::nn_to_linalg {

Value createEmpty(OpBuilder &b, Location loc, RankedTensorType type) {
  return tensor::EmptyOp::create(b, loc, type.getShape(),
                                 type.getElementType());
}

Value createFilled(OpBuilder &b, Location loc, RankedTensorType type,
                   Value value) {
  Value empty = createEmpty(b, loc, type);
  return linalg::FillOp::create(b, loc, value, empty).getResult(0);
}

Value createScalar(OpBuilder &b, Location loc, Type type, double value) {
  if (isa<FloatType>(type))
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, value));
  return arith::ConstantOp::create(
      b, loc, b.getIntegerAttr(type, static_cast<int64_t>(value)));
}

/// The lowest (`highest` false) or highest value of `type`: -inf or +inf for
/// floats; for `i1` (ONNX bool) and unsigned integers 0 or all ones, for
/// signed integers the signed minimum or maximum.
static Value createExtreme(OpBuilder &b, Location loc, Type type,
                           bool highest) {
  if (auto floatType = dyn_cast<FloatType>(type))
    return arith::ConstantOp::create(
        b, loc,
        b.getFloatAttr(floatType, APFloat::getInf(floatType.getFloatSemantics(),
                                                  /*Negative=*/!highest)));
  unsigned width = type.getIntOrFloatBitWidth();
  APInt value;
  if (width == 1 || type.isUnsignedInteger())
    value = highest ? APInt::getAllOnes(width) : APInt::getZero(width);
  else
    value = highest ? APInt::getSignedMaxValue(width)
                    : APInt::getSignedMinValue(width);
  return arith::ConstantOp::create(b, loc, b.getIntegerAttr(type, value));
}

Value createLowest(OpBuilder &b, Location loc, Type type) {
  return createExtreme(b, loc, type, /*highest=*/false);
}

bool ordersUnsigned(Type type) {
  return type.isInteger(1) || type.isUnsignedInteger();
}

/// The float, unsigned or signed form of a binary arith op, by the element
/// type of `lhs`.
template <typename FloatOp, typename UnsignedOp, typename SignedOp>
static Value createBySignedness(OpBuilder &b, Location loc, Value lhs,
                                Value rhs) {
  Type type = lhs.getType();
  if (isa<FloatType>(type))
    return FloatOp::create(b, loc, lhs, rhs);
  if (ordersUnsigned(type))
    return UnsignedOp::create(b, loc, lhs, rhs);
  return SignedOp::create(b, loc, lhs, rhs);
}

Value createMax(OpBuilder &b, Location loc, Value lhs, Value rhs) {
  return createBySignedness<arith::MaximumFOp, arith::MaxUIOp, arith::MaxSIOp>(
      b, loc, lhs, rhs);
}

Value createMin(OpBuilder &b, Location loc, Value lhs, Value rhs) {
  return createBySignedness<arith::MinimumFOp, arith::MinUIOp, arith::MinSIOp>(
      b, loc, lhs, rhs);
}

void dropIntegerSignedness(Operation *op) {
  auto signless = [](Type type) -> Type {
    auto integer = dyn_cast<IntegerType>(type);
    if (!integer || integer.isSignless())
      return Type();
    return IntegerType::get(type.getContext(), integer.getWidth());
  };
  auto signlessShaped = [&](ShapedType type) -> ShapedType {
    Type element = signless(type.getElementType());
    return element ? type.clone(element) : ShapedType();
  };
  AttrTypeReplacer replacer;
  replacer.addReplacement([&](IntegerType type) -> std::optional<Type> {
    if (Type t = signless(type))
      return t;
    return std::nullopt;
  });
  // Elements attributes keep their bytes under the signless type.
  replacer.addReplacement([&](IntegerAttr attr) -> std::optional<Attribute> {
    if (Type t = signless(attr.getType()))
      return IntegerAttr::get(t, attr.getValue());
    return std::nullopt;
  });
  replacer.addReplacement(
      [&](DenseIntElementsAttr attr) -> std::optional<Attribute> {
        if (Type t = signless(attr.getElementType()))
          return attr.bitcast(t);
        return std::nullopt;
      });
  replacer.addReplacement(
      [&](DenseResourceElementsAttr attr) -> std::optional<Attribute> {
        if (ShapedType t = signlessShaped(attr.getType()))
          return DenseResourceElementsAttr::get(t, attr.getRawHandle());
        return std::nullopt;
      });
  replacer.recursivelyReplaceElementsIn(op, /*replaceAttrs=*/true,
                                        /*replaceLocs=*/false,
                                        /*replaceTypes=*/true);
}

Value createHighest(OpBuilder &b, Location loc, Type type) {
  return createExtreme(b, loc, type, /*highest=*/true);
}

AffineMap getBroadcastMap(MLIRContext *ctx, ArrayRef<int64_t> operandShape,
                          ArrayRef<int64_t> resultShape) {
  int64_t offset = resultShape.size() - operandShape.size();
  SmallVector<AffineExpr> exprs;
  for (auto [i, dim] : llvm::enumerate(operandShape)) {
    int64_t resultDim = offset + i;
    if (dim == 1 && resultShape[resultDim] != 1)
      exprs.push_back(getAffineConstantExpr(0, ctx));
    else
      exprs.push_back(getAffineDimExpr(resultDim, ctx));
  }
  return AffineMap::get(resultShape.size(), 0, exprs, ctx);
}

Value buildElementwise(OpBuilder &b, Location loc, RankedTensorType resultType,
                       ValueRange inputs, ScalarFn fn) {
  MLIRContext *ctx = b.getContext();
  ArrayRef<int64_t> shape = resultType.getShape();
  SmallVector<AffineMap> maps;
  for (Value input : inputs)
    maps.push_back(getBroadcastMap(
        ctx, cast<RankedTensorType>(input.getType()).getShape(), shape));
  maps.push_back(b.getMultiDimIdentityMap(shape.size()));
  SmallVector<utils::IteratorType> iterators(shape.size(),
                                             utils::IteratorType::parallel);
  Value init = createEmpty(b, loc, resultType);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{resultType}, inputs, ValueRange{init}, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value result = fn(nb, nloc, args.drop_back());
        linalg::YieldOp::create(nb, nloc, result);
      });
  return generic.getResult(0);
}

Value buildGeneric(OpBuilder &b, Location loc, Value init, ValueRange inputs,
                   ArrayRef<AffineMap> maps,
                   ArrayRef<utils::IteratorType> iterators, ScalarFn fn) {
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{init.getType()}, inputs, ValueRange{init}, maps,
      iterators, [&](OpBuilder &nb, Location nloc, ValueRange args) {
        linalg::YieldOp::create(nb, nloc, fn(nb, nloc, args));
      });
  return generic.getResult(0);
}

StridedWindow getStridedWindow(Builder &b, ArrayRef<int64_t> starts,
                               ArrayRef<int64_t> steps,
                               ArrayRef<int64_t> sizes) {
  StridedWindow window;
  for (int64_t d = 0, rank = sizes.size(); d < rank; ++d) {
    int64_t start = starts[d], step = steps[d];
    AffineExpr dim = getAffineDimExpr(d, b.getContext());
    if (step < 0 && sizes[d] > 1) {
      start += (sizes[d] - 1) * step;
      window.readExprs.push_back(sizes[d] - 1 - dim);
      window.reversed = true;
    } else {
      window.readExprs.push_back(dim);
    }
    window.offsets.push_back(b.getIndexAttr(start));
    window.sizes.push_back(b.getIndexAttr(sizes[d]));
    window.strides.push_back(b.getIndexAttr(std::abs(step)));
  }
  return window;
}

Value reverseWindow(OpBuilder &b, Location loc, Value value,
                    const StridedWindow &window) {
  if (!window.reversed)
    return value;
  auto type = cast<RankedTensorType>(value.getType());
  int64_t rank = type.getRank();
  SmallVector<AffineMap> maps{
      AffineMap::get(rank, 0, window.readExprs, b.getContext()),
      b.getMultiDimIdentityMap(rank)};
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  return buildGeneric(
      b, loc, createEmpty(b, loc, type), ValueRange{value}, maps, iterators,
      [](OpBuilder &, Location, ValueRange args) { return args[0]; });
}

AffineMap getDropDimsMap(MLIRContext *ctx, int64_t rank,
                         ArrayRef<int64_t> dropped) {
  SmallVector<AffineExpr> exprs;
  for (int64_t d = 0; d < rank; ++d)
    if (!llvm::is_contained(dropped, d))
      exprs.push_back(getAffineDimExpr(d, ctx));
  return AffineMap::get(rank, 0, exprs, ctx);
}

SmallVector<int64_t> dropDims(ArrayRef<int64_t> shape,
                              ArrayRef<int64_t> dropped) {
  SmallVector<int64_t> result;
  for (auto [d, size] : llvm::enumerate(shape))
    if (!llvm::is_contained(dropped, static_cast<int64_t>(d)))
      result.push_back(size);
  return result;
}

Value broadcastTo(OpBuilder &b, Location loc, Value value,
                  ArrayRef<int64_t> shape) {
  auto type = cast<RankedTensorType>(value.getType());
  ArrayRef<int64_t> source = type.getShape();
  if (source == shape)
    return value;
  int64_t offset = shape.size() - source.size();
  // Source dimensions that survive (equal to their target dimension); the
  // others are broadcast unit dimensions.
  SmallVector<int64_t> keptShape;
  SmallVector<int64_t> added;
  for (int64_t d = 0; d < offset; ++d)
    added.push_back(d);
  SmallVector<ReassociationIndices> reassociation;
  ReassociationIndices pending;
  for (auto [i, dim] : llvm::enumerate(source)) {
    pending.push_back(i);
    if (dim == shape[offset + i]) {
      keptShape.push_back(dim);
      reassociation.push_back(pending);
      pending.clear();
    } else {
      added.push_back(offset + i);
    }
  }
  // Trailing dropped unit dimensions join the last group.
  if (!pending.empty() && !reassociation.empty())
    llvm::append_range(reassociation.back(), pending);
  Value collapsed = value;
  if (keptShape.size() != source.size())
    collapsed = tensor::CollapseShapeOp::create(
        b, loc, RankedTensorType::get(keptShape, type.getElementType()), value,
        reassociation);
  Value init =
      createEmpty(b, loc, RankedTensorType::get(shape, type.getElementType()));
  return linalg::BroadcastOp::create(b, loc, collapsed, init, added)
      .getResult()[0];
}

Value reshapeTo(OpBuilder &b, Location loc, Value value,
                ArrayRef<int64_t> shape) {
  auto type = cast<RankedTensorType>(value.getType());
  ArrayRef<int64_t> source = type.getShape();
  if (source == shape)
    return value;
  auto resultType = RankedTensorType::get(shape, type.getElementType());
  // Rank 0 to or from all-unit shapes: the empty reassociation.
  if (source.empty())
    return tensor::ExpandShapeOp::create(b, loc, resultType, value,
                                         ArrayRef<ReassociationIndices>{});
  if (shape.empty())
    return tensor::CollapseShapeOp::create(b, loc, resultType, value,
                                           ArrayRef<ReassociationIndices>{});
  if (source.size() > shape.size()) {
    if (auto reassociation = getReassociationIndicesForCollapse(source, shape))
      return tensor::CollapseShapeOp::create(b, loc, resultType, value,
                                             *reassociation);
  } else if (source.size() < shape.size()) {
    if (auto reassociation = getReassociationIndicesForCollapse(shape, source))
      return tensor::ExpandShapeOp::create(b, loc, resultType, value,
                                           *reassociation);
  }
  // No single reassociation: go through the flat vector.
  ReassociationIndices all;
  for (int64_t i = 0, e = source.size(); i < e; ++i)
    all.push_back(i);
  auto flatType =
      RankedTensorType::get({type.getNumElements()}, type.getElementType());
  Value flat = tensor::CollapseShapeOp::create(b, loc, flatType, value, {all});
  ReassociationIndices allResult;
  for (int64_t i = 0, e = shape.size(); i < e; ++i)
    allResult.push_back(i);
  return tensor::ExpandShapeOp::create(b, loc, resultType, flat, {allResult});
}

Value padConstant(OpBuilder &b, Location loc, Value value,
                  ArrayRef<int64_t> low, ArrayRef<int64_t> high,
                  Value padValue) {
  if (llvm::all_of(low, [](int64_t p) { return p == 0; }) &&
      llvm::all_of(high, [](int64_t p) { return p == 0; }))
    return value;
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<int64_t> shape(type.getShape());
  SmallVector<OpFoldResult> lowAttrs, highAttrs;
  for (size_t i = 0; i < shape.size(); ++i) {
    shape[i] += low[i] + high[i];
    lowAttrs.push_back(b.getIndexAttr(low[i]));
    highAttrs.push_back(b.getIndexAttr(high[i]));
  }
  return tensor::PadOp::create(b, loc, type.clone(shape), value, lowAttrs,
                               highAttrs, padValue);
}

DenseIntElementsAttr getI64VectorAttr(Builder &b, ArrayRef<int64_t> values) {
  return DenseIntElementsAttr::get(
      RankedTensorType::get({static_cast<int64_t>(values.size())},
                            b.getI64Type()),
      values);
}

Value accumulateWindows(OpBuilder &b, Location loc, Value acc,
                        ArrayRef<int64_t> outputSpatial,
                        ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                        ArrayRef<int64_t> dilations,
                        WindowContributionFn contribution) {
  auto accType = cast<RankedTensorType>(acc.getType());
  int64_t n = kernel.size(), lead = accType.getRank() - n;
  SmallVector<int64_t> viewShape(accType.getShape().take_front(lead));
  llvm::append_range(viewShape, outputSpatial);
  auto viewType = RankedTensorType::get(viewShape, accType.getElementType());
  SmallVector<OpFoldResult> sizes, viewStrides;
  for (int64_t d : viewShape)
    sizes.push_back(b.getIndexAttr(d));
  viewStrides.append(lead, b.getIndexAttr(1));
  for (int64_t s : strides)
    viewStrides.push_back(b.getIndexAttr(s));
  SmallVector<AffineMap> maps(2, b.getMultiDimIdentityMap(viewShape.size()));
  SmallVector<utils::IteratorType> parallel(viewShape.size(),
                                            utils::IteratorType::parallel);

  SmallVector<int64_t> offset(n, 0);
  int64_t count = 1;
  for (int64_t k : kernel)
    count *= k;
  for (int64_t index = 0; index < count; ++index) {
    SmallVector<OpFoldResult> offsets(lead, b.getIndexAttr(0));
    for (int64_t i = 0; i < n; ++i)
      offsets.push_back(b.getIndexAttr(offset[i] * dilations[i]));
    Value part = contribution(b, loc, offset, index);
    Value view = tensor::ExtractSliceOp::create(b, loc, viewType, acc, offsets,
                                                sizes, viewStrides);
    Value sum = buildGeneric(
        b, loc, view, ValueRange{part}, maps, parallel,
        [](OpBuilder &nb, Location l, ValueRange args) -> Value {
          return arith::AddFOp::create(nb, l, args[1], args[0]);
        });
    acc = tensor::InsertSliceOp::create(b, loc, sum, acc, offsets, sizes,
                                        viewStrides);
    // Next window offset, row-major.
    for (int64_t i = n - 1; i >= 0; --i) {
      if (++offset[i] < kernel[i])
        break;
      offset[i] = 0;
    }
  }
  return acc;
}

NormalizedIndex normalizeIndex(OpBuilder &b, Location loc, Value index,
                               int64_t dimSize) {
  Type type = index.getType();
  Value zero = createScalar(b, loc, type, 0);
  Value size = createScalar(b, loc, type, double(dimSize));
  Value last = createScalar(b, loc, type, double(dimSize - 1));
  Value negative =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, index, zero);
  Value wrapped = arith::SelectOp::create(
      b, loc, negative, arith::AddIOp::create(b, loc, index, size), index);
  Value aboveZero =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, wrapped, zero);
  Value belowSize =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, wrapped, size);
  NormalizedIndex result;
  result.inBounds = arith::AndIOp::create(b, loc, aboveZero, belowSize);
  Value clamped = arith::MaxSIOp::create(
      b, loc, arith::MinSIOp::create(b, loc, wrapped, last), zero);
  result.index = arith::IndexCastOp::create(b, loc, b.getIndexType(), clamped);
  return result;
}

std::string getONNXNodeName(Location loc) {
  std::string name;
  loc->walk([&](Location l) {
    if (auto named = dyn_cast<NameLoc>(l)) {
      name = named.getName().str();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return name;
}

std::string getIndexInputName(Operation *op, Value indices) {
  auto arg = dyn_cast<BlockArgument>(indices);
  if (!arg)
    return "";
  if (auto named = dyn_cast<NameLoc>(arg.getLoc()))
    return named.getName().str();
  // Training and stage functions name their arguments with `nn.name`.
  if (auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp()))
    if (arg.getOwner()->isEntryBlock())
      if (auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                        "nn.name"))
        return name.str();
  return "";
}

void emitIndexRangeCheck(OpBuilder &b, Location loc, Value indices,
                         int64_t size, Operation *op, StringRef opType) {
  auto type = cast<RankedTensorType>(indices.getType());
  int64_t count = type.getNumElements();
  if (count == 0)
    return;
  Type element = type.getElementType();
  unsigned width = element.getIntOrFloatBitWidth();
  MLIRContext *ctx = b.getContext();
  Value flat = reshapeTo(b, loc, indices, {count});
  auto scalarType = RankedTensorType::get({}, element);
  Value lowest = createFilled(
      b, loc, scalarType,
      arith::ConstantOp::create(
          b, loc, b.getIntegerAttr(element, APInt::getSignedMaxValue(width))));
  Value highest = createFilled(
      b, loc, scalarType,
      arith::ConstantOp::create(
          b, loc, b.getIntegerAttr(element, APInt::getSignedMinValue(width))));
  SmallVector<AffineMap> maps{AffineMap::getMultiDimIdentityMap(1, ctx),
                              AffineMap::get(1, 0, {}, ctx),
                              AffineMap::get(1, 0, {}, ctx)};
  auto range = linalg::GenericOp::create(
      b, loc, TypeRange{scalarType, scalarType}, ValueRange{flat},
      ValueRange{lowest, highest}, maps,
      SmallVector<utils::IteratorType>{utils::IteratorType::reduction},
      [](OpBuilder &nb, Location l, ValueRange args) {
        Value min = arith::MinSIOp::create(nb, l, args[0], args[1]);
        Value max = arith::MaxSIOp::create(nb, l, args[0], args[2]);
        linalg::YieldOp::create(nb, l, ValueRange{min, max});
      });
  Value min = tensor::ExtractOp::create(b, loc, range.getResult(0),
                                        ValueRange{});
  Value max = tensor::ExtractOp::create(b, loc, range.getResult(1),
                                        ValueRange{});
  nn::CheckIndexRangeOp::create(
      b, loc, min, max, b.getI64IntegerAttr(-size), b.getI64IntegerAttr(size),
      b.getStringAttr(getONNXNodeName(op->getLoc())), b.getStringAttr(opType),
      b.getStringAttr(getIndexInputName(op, indices)));
}

} // namespace pipedream::nn_to_linalg
