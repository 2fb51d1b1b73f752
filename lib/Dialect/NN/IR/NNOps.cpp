//===- NNOps.cpp - nn dialect operations ----------------------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Result-type inference and verifiers. Inference is the single place where
// ONNX shape rules live: the importer and every pass build ops without
// computing result types, and the InferTypeOpInterface verifier checks
// declared result types against these rules.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Dialect/NN/IR/NNOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/Support/CheckedArithmetic.h"

using namespace mlir;
using namespace pipedream::nn;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

static std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "[";
  llvm::interleaveComma(shape, os);
  os << "]";
  return s;
}

/// The product of `dims`, or std::nullopt when it overflows int64.
// NOTE: type inference runs on hostile .mlir input; every size it computes
// from attributes or dimensions goes through llvm::checked* (UB otherwise).
static std::optional<int64_t> checkedProduct(ArrayRef<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    auto next = llvm::checkedMul(n, d);
    if (!next)
      return std::nullopt;
    n = *next;
  }
  return n;
}

static RankedTensorType tensorType(Type type) {
  return cast<RankedTensorType>(type);
}

/// Checks that `axes` is sorted, duplicate-free and within [0, rank).
static LogicalResult checkAxes(std::optional<Location> loc, StringRef what,
                               ArrayRef<int64_t> axes, int64_t rank) {
  for (auto [i, axis] : llvm::enumerate(axes)) {
    if (axis < 0 || axis >= rank)
      return emitOptionalError(loc, what, " axis ", axis,
                               " is out of range [0, ", rank, ")");
    if (i > 0 && axes[i - 1] >= axis)
      return emitOptionalError(loc, what,
                               " axes must be sorted and unique, got ",
                               shapeStr(axes));
  }
  return success();
}

static LogicalResult checkAxis(std::optional<Location> loc, int64_t axis,
                               int64_t rank, bool inclusiveEnd = false) {
  int64_t limit = inclusiveEnd ? rank + 1 : rank;
  if (axis < 0 || axis >= limit)
    return emitOptionalError(loc, "axis ", axis, " is out of range [0, ",
                             limit, ")");
  return success();
}

std::optional<SmallVector<int64_t>>
pipedream::nn::detail::broadcastShapes(ArrayRef<int64_t> lhs,
                                       ArrayRef<int64_t> rhs) {
  size_t rank = std::max(lhs.size(), rhs.size());
  SmallVector<int64_t> result(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t l = i < rank - lhs.size() ? 1 : lhs[i - (rank - lhs.size())];
    int64_t r = i < rank - rhs.size() ? 1 : rhs[i - (rank - rhs.size())];
    if (l != r && l != 1 && r != 1)
      return std::nullopt;
    result[i] = l == 1 ? r : l;
  }
  return result;
}

LogicalResult pipedream::nn::detail::inferBroadcastBinaryOp(
    StringRef opName, std::optional<Location> loc, Type lhs, Type rhs,
    bool boolResult, SmallVectorImpl<Type> &inferred) {
  auto lhsType = tensorType(lhs), rhsType = tensorType(rhs);
  // ONNX Pow allows a different exponent type; every other binary op
  // requires matching element types.
  if (opName != PowOp::getOperationName() &&
      lhsType.getElementType() != rhsType.getElementType())
    return emitOptionalError(loc, "operand element types differ: ",
                             lhsType.getElementType(), " vs ",
                             rhsType.getElementType());
  auto shape = broadcastShapes(lhsType.getShape(), rhsType.getShape());
  if (!shape)
    return emitOptionalError(loc, "operand shapes ",
                             shapeStr(lhsType.getShape()), " and ",
                             shapeStr(rhsType.getShape()),
                             " are not broadcast-compatible");
  Type element = boolResult ? IntegerType::get(lhs.getContext(), 1)
                            : lhsType.getElementType();
  inferred.push_back(RankedTensorType::get(*shape, element));
  return success();
}

//===----------------------------------------------------------------------===//
// ConstantOp
//===----------------------------------------------------------------------===//

LogicalResult ConstantOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &inferred) {
  auto type = dyn_cast<RankedTensorType>(adaptor.getValue().getType());
  if (!type || !type.hasStaticShape())
    return emitOptionalError(loc, "value must be a statically shaped tensor");
  inferred.push_back(type);
  return success();
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

//===----------------------------------------------------------------------===//
// WhereOp
//===----------------------------------------------------------------------===//

LogicalResult WhereOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  auto cond = tensorType(adaptor.getCondition().getType());
  auto lhs = tensorType(adaptor.getLhs().getType());
  auto rhs = tensorType(adaptor.getRhs().getType());
  if (lhs.getElementType() != rhs.getElementType())
    return emitOptionalError(loc, "operand element types differ: ",
                             lhs.getElementType(), " vs ",
                             rhs.getElementType());
  auto shape = detail::broadcastShapes(cond.getShape(), lhs.getShape());
  if (shape)
    shape = detail::broadcastShapes(*shape, rhs.getShape());
  if (!shape)
    return emitOptionalError(loc, "operand shapes ", shapeStr(cond.getShape()),
                             ", ", shapeStr(lhs.getShape()), " and ",
                             shapeStr(rhs.getShape()),
                             " are not broadcast-compatible");
  inferred.push_back(RankedTensorType::get(*shape, lhs.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Unary ops with attributes
//===----------------------------------------------------------------------===//

LogicalResult GeluOp::verify() {
  if (getApproximate() != "none" && getApproximate() != "tanh")
    return emitOpError("approximate must be \"none\" or \"tanh\", got \"")
           << getApproximate() << "\"";
  return success();
}

LogicalResult ClipOp::verify() {
  if (getMin() && getMax() && getMin()->convertToDouble() >
                                  getMax()->convertToDouble())
    return emitOpError("min ") << getMin()->convertToDouble()
                               << " is greater than max "
                               << getMax()->convertToDouble();
  return success();
}

LogicalResult DropoutOp::verify() {
  double ratio = getRatio().convertToDouble();
  if (!(ratio >= 0.0 && ratio < 1.0))
    return emitOpError("ratio must be in [0, 1), got ") << ratio;
  return success();
}

LogicalResult DropoutMaskOp::verify() {
  if (!getInput().getDefiningOp<DropoutOp>())
    return emitOpError("operand must be the result of an nn.dropout (the "
                       "mask is that dropout's)");
  return success();
}

//===----------------------------------------------------------------------===//
// OneHotOp
//===----------------------------------------------------------------------===//

LogicalResult OneHotOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> location,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  int64_t depth = adaptor.getDepth();
  if (depth <= 0)
    return emitOptionalError(location, "'nn.one_hot' depth must be positive, got ",
                             depth);
  auto indices = tensorType(adaptor.getIndices().getType());
  SmallVector<int64_t> shape(indices.getShape());
  shape.push_back(depth);
  inferred.push_back(RankedTensorType::get(shape, adaptor.getDtype()));
  return success();
}

LogicalResult OneHotOp::verify() {
  if (getDepth() <= 0)
    return emitOpError("depth must be positive, got ") << getDepth();
  return success();
}

LogicalResult CheckIndexRangeOp::verify() {
  // NOTE: I64Attr getters return uint64_t; the bounds are signed.
  int64_t lower = getLowerAttr().getInt(), upper = getUpperAttr().getInt();
  if (lower > upper)
    return emitOpError("needs lower <= upper, got [")
           << lower << ", " << upper << ")";
  if (getKind() != "index" && getKind() != "size")
    return emitOpError("kind must be 'index' or 'size', got '")
           << getKind() << "'";
  return success();
}

LogicalResult CheckSizeOp::verify() {
  // NOTE: I64Attr getters return uint64_t.
  if (getExpectedAttr().getInt() < 0)
    return emitOpError("expected size must be non-negative, got ")
           << getExpectedAttr().getInt();
  return success();
}

LogicalResult CastOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  inferred.push_back(tensorType(adaptor.getInput().getType())
                         .clone(adaptor.getTo()));
  return success();
}

//===----------------------------------------------------------------------===//
// Softmax family
//===----------------------------------------------------------------------===//

/// The softmax axis must name a dimension of the input.
static LogicalResult verifySoftmaxAxis(Operation *op, int64_t axis,
                                       int64_t rank) {
  if (axis < 0 || axis >= rank)
    return op->emitOpError("axis ")
           << axis << " is out of range [0, " << rank << ")";
  return success();
}

LogicalResult SoftmaxOp::verify() {
  return verifySoftmaxAxis(*this, getAxis(), getInput().getType().getRank());
}

LogicalResult LogSoftmaxOp::verify() {
  return verifySoftmaxAxis(*this, getAxis(), getInput().getType().getRank());
}

// max, subtract, exp, sum, divide (and log): about five ops per element.
int64_t SoftmaxOp::getForwardFlops() {
  return 5 * getInput().getType().getNumElements();
}

int64_t LogSoftmaxOp::getForwardFlops() {
  return 5 * getInput().getType().getNumElements();
}

//===----------------------------------------------------------------------===//
// MatMulOp
//===----------------------------------------------------------------------===//

LogicalResult MatMulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  auto lhs = tensorType(adaptor.getLhs().getType());
  auto rhs = tensorType(adaptor.getRhs().getType());
  if (lhs.getRank() == 0 || rhs.getRank() == 0)
    return emitOptionalError(loc, "operands must have rank >= 1");
  if (lhs.getElementType() != rhs.getElementType())
    return emitOptionalError(loc, "operand element types differ: ",
                             lhs.getElementType(), " vs ",
                             rhs.getElementType());
  // numpy.matmul: promote 1-D operands to matrices, then drop the
  // promoted dimension from the result.
  SmallVector<int64_t> l(lhs.getShape()), r(rhs.getShape());
  bool lhsVector = l.size() == 1, rhsVector = r.size() == 1;
  if (lhsVector)
    l.insert(l.begin(), 1);
  if (rhsVector)
    r.push_back(1);
  int64_t m = l[l.size() - 2], k = l.back();
  int64_t k2 = r[r.size() - 2], n = r.back();
  if (k != k2)
    return emitOptionalError(loc, "contracting dimensions differ: lhs ",
                             shapeStr(lhs.getShape()), " vs rhs ",
                             shapeStr(rhs.getShape()));
  auto batch = detail::broadcastShapes(ArrayRef(l).drop_back(2),
                                       ArrayRef(r).drop_back(2));
  if (!batch)
    return emitOptionalError(loc, "batch dimensions of ",
                             shapeStr(lhs.getShape()), " and ",
                             shapeStr(rhs.getShape()),
                             " are not broadcast-compatible");
  SmallVector<int64_t> shape(*batch);
  if (!lhsVector)
    shape.push_back(m);
  if (!rhsVector)
    shape.push_back(n);
  inferred.push_back(RankedTensorType::get(shape, lhs.getElementType()));
  return success();
}

int64_t MatMulOp::getForwardFlops() {
  // Every result element is a K-long dot product.
  auto lhs = getLhs().getType();
  return 2 * getOutput().getType().getNumElements() * lhs.getShape().back();
}

//===----------------------------------------------------------------------===//
// GemmOp
//===----------------------------------------------------------------------===//

LogicalResult GemmOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  auto a = tensorType(adaptor.getA().getType());
  auto b = tensorType(adaptor.getB().getType());
  if (a.getRank() != 2 || b.getRank() != 2)
    return emitOptionalError(loc, "a and b must be matrices");
  if (a.getElementType() != b.getElementType())
    return emitOptionalError(loc, "operand element types differ");
  bool transA = adaptor.getTransA(), transB = adaptor.getTransB();
  int64_t m = a.getDimSize(transA ? 1 : 0), k = a.getDimSize(transA ? 0 : 1);
  int64_t k2 = b.getDimSize(transB ? 1 : 0), n = b.getDimSize(transB ? 0 : 1);
  if (k != k2)
    return emitOptionalError(loc, "contracting dimensions differ: ", k,
                             " vs ", k2);
  SmallVector<int64_t> shape{m, n};
  if (Value c = adaptor.getC()) {
    auto cType = tensorType(c.getType());
    auto bcast = detail::broadcastShapes(cType.getShape(), shape);
    if (cType.getRank() > 2 || !bcast || *bcast != shape)
      return emitOptionalError(loc, "c of shape ",
                               shapeStr(cType.getShape()),
                               " does not broadcast to ", shapeStr(shape));
    if (cType.getElementType() != a.getElementType())
      return emitOptionalError(loc, "operand element types differ");
  }
  inferred.push_back(RankedTensorType::get(shape, a.getElementType()));
  return success();
}

int64_t GemmOp::getForwardFlops() {
  int64_t k = getA().getType().getDimSize(getTransA() ? 0 : 1);
  int64_t mn = getOutput().getType().getNumElements();
  return 2 * mn * k + (getC() ? 2 * mn : 0);
}

//===----------------------------------------------------------------------===//
// Windowed ops (Conv, pooling)
//===----------------------------------------------------------------------===//

namespace {
/// Attributes shared by convolution and pooling windows.
struct Window {
  ArrayRef<int64_t> kernel, strides, pads, dilations;
  bool ceilMode = false;
};
} // namespace

/// Spatial output sizes of a window sliding over `spatial`. Errors name the
/// offending attribute.
static FailureOr<SmallVector<int64_t>>
inferWindowOutput(std::optional<Location> loc, ArrayRef<int64_t> spatial,
                  const Window &w) {
  size_t n = spatial.size();
  if (w.kernel.size() != n || w.strides.size() != n ||
      w.dilations.size() != n || w.pads.size() != 2 * n)
    return emitOptionalError(
        loc, "expected ", n, " kernel/stride/dilation entries and ", 2 * n,
        " pads for ", n, " spatial dimensions, got kernel ",
        shapeStr(w.kernel), ", strides ", shapeStr(w.strides), ", dilations ",
        shapeStr(w.dilations), ", pads ", shapeStr(w.pads));
  SmallVector<int64_t> out;
  for (size_t i = 0; i < n; ++i) {
    if (w.kernel[i] <= 0 || w.strides[i] <= 0 || w.dilations[i] <= 0)
      return emitOptionalError(loc, "kernel, strides and dilations must be "
                                    "positive");
    if (w.pads[i] < 0 || w.pads[i + n] < 0)
      return emitOptionalError(loc, "pads must be non-negative, got ",
                               shapeStr(w.pads));
    std::optional<int64_t> padded = llvm::checkedAdd(spatial[i], w.pads[i]);
    if (padded)
      padded = llvm::checkedAdd(*padded, w.pads[i + n]);
    std::optional<int64_t> extent =
        llvm::checkedMul(w.dilations[i], w.kernel[i] - 1);
    if (extent)
      extent = llvm::checkedAdd(*extent, int64_t(1));
    if (!padded || !extent)
      return emitOptionalError(loc, "window (kernel ", shapeStr(w.kernel),
                               ", dilations ", shapeStr(w.dilations),
                               ", pads ", shapeStr(w.pads),
                               ") overflows in spatial dimension ", i);
    if (*padded < *extent)
      return emitOptionalError(loc, "window extent ", *extent,
                               " exceeds padded input size ", *padded,
                               " in spatial dimension ", i);
    int64_t span = *padded - *extent;
    int64_t size = span / w.strides[i] + 1;
    if (w.ceilMode) {
      if (span % w.strides[i] != 0)
        ++size;
      // The last window must start inside the input or its leading
      // padding. PyTorch, onnxruntime and the ONNX reference drop it
      // otherwise, whether or not rounding up added it: with end padding
      // at least as wide as the window, even the floor count ends in one.
      // Both sides are below padded, which fits; an overflowing product is
      // past the input too.
      std::optional<int64_t> lastStart =
          llvm::checkedMul(size - 1, w.strides[i]);
      if (!lastStart || *lastStart >= spatial[i] + w.pads[i])
        --size;
    }
    out.push_back(size);
  }
  return out;
}

/// Checks a convolution of an input of shape `input` with a weight of shape
/// `weight` (ranks, groups, window) and returns its output shape. Shared by
/// nn.conv and its gradient ops, which state the same shapes differently.
static FailureOr<SmallVector<int64_t>>
inferConvShape(std::optional<Location> loc, ArrayRef<int64_t> input,
               ArrayRef<int64_t> weight, int64_t group,
               ArrayRef<int64_t> strides, ArrayRef<int64_t> pads,
               ArrayRef<int64_t> dilations) {
  if (input.size() < 3)
    return emitOptionalError(loc, "input must be N x C x spatial..., got rank ",
                             input.size());
  if (weight.size() != input.size())
    return emitOptionalError(loc, "weight rank ", weight.size(),
                             " differs from input rank ", input.size());
  int64_t channels = input[1], filters = weight[0];
  if (group <= 0 || channels % group != 0 || filters % group != 0)
    return emitOptionalError(loc, "group ", group,
                             " must divide input channels ", channels,
                             " and filters ", filters);
  std::optional<int64_t> groupChannels = llvm::checkedMul(weight[1], group);
  if (!groupChannels || *groupChannels != channels)
    return emitOptionalError(loc, "weight expects ", weight[1],
                             " channels per group, input has ", channels,
                             " channels in ", group, " groups");
  Window w{weight.drop_front(2), strides, pads, dilations};
  auto spatial = inferWindowOutput(loc, input.drop_front(2), w);
  if (failed(spatial))
    return failure();
  SmallVector<int64_t> shape{input[0], filters};
  llvm::append_range(shape, *spatial);
  return shape;
}

LogicalResult ConvOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  auto input = tensorType(adaptor.getInput().getType());
  auto weight = tensorType(adaptor.getWeight().getType());
  if (input.getRank() >= 3 && weight.getRank() == input.getRank() &&
      input.getElementType() != weight.getElementType())
    return emitOptionalError(loc, "operand element types differ");
  auto shape = inferConvShape(loc, input.getShape(), weight.getShape(),
                              adaptor.getGroup(), adaptor.getStrides(),
                              adaptor.getPads(), adaptor.getDilations());
  if (failed(shape))
    return failure();
  if (Value bias = adaptor.getBias()) {
    int64_t filters = weight.getDimSize(0);
    auto biasType = tensorType(bias.getType());
    if (biasType.getRank() != 1 || biasType.getDimSize(0) != filters)
      return emitOptionalError(loc, "bias must have shape [", filters, "]");
    if (biasType.getElementType() != input.getElementType())
      return emitOptionalError(loc, "operand element types differ");
  }
  inferred.push_back(RankedTensorType::get(*shape, input.getElementType()));
  return success();
}

int64_t ConvOp::getForwardFlops() {
  auto weight = getWeight().getType();
  // One multiply-add per weight element of a group per output element.
  int64_t perOutput =
      ShapedType::getNumElements(weight.getShape().drop_front(1));
  return 2 * getOutput().getType().getNumElements() * perOutput;
}

static LogicalResult inferPool(std::optional<Location> loc, Type inputType,
                               const Window &w,
                               SmallVectorImpl<Type> &inferred) {
  auto input = tensorType(inputType);
  if (input.getRank() < 3)
    return emitOptionalError(loc, "input must be N x C x spatial..., got rank ",
                             input.getRank());
  auto spatial = inferWindowOutput(loc, input.getShape().drop_front(2), w);
  if (failed(spatial))
    return failure();
  SmallVector<int64_t> shape(input.getShape().take_front(2));
  llvm::append_range(shape, *spatial);
  inferred.push_back(input.clone(shape));
  return success();
}

LogicalResult MaxPoolOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  Window w{adaptor.getKernelShape(), adaptor.getStrides(), adaptor.getPads(),
           adaptor.getDilations(), adaptor.getCeilMode()};
  return inferPool(loc, adaptor.getInput().getType(), w, inferred);
}

int64_t MaxPoolOp::getForwardFlops() {
  return getOutput().getType().getNumElements() *
         ShapedType::getNumElements(getKernelShape());
}

LogicalResult AveragePoolOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &inferred) {
  SmallVector<int64_t> dilations(adaptor.getKernelShape().size(), 1);
  Window w{adaptor.getKernelShape(), adaptor.getStrides(), adaptor.getPads(),
           dilations, adaptor.getCeilMode()};
  return inferPool(loc, adaptor.getInput().getType(), w, inferred);
}

int64_t AveragePoolOp::getForwardFlops() {
  return getOutput().getType().getNumElements() *
         ShapedType::getNumElements(getKernelShape());
}

LogicalResult GlobalAveragePoolOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  auto input = tensorType(adaptor.getInput().getType());
  if (input.getRank() < 3)
    return emitOptionalError(loc, "input must be N x C x spatial..., got rank ",
                             input.getRank());
  SmallVector<int64_t> shape(input.getShape().take_front(2));
  shape.append(input.getRank() - 2, 1);
  inferred.push_back(input.clone(shape));
  return success();
}

int64_t GlobalAveragePoolOp::getForwardFlops() {
  return getInput().getType().getNumElements();
}

//===----------------------------------------------------------------------===//
// Gradients of the windowed ops
//===----------------------------------------------------------------------===//

/// The forward output shape a gradient op names (through its operands and
/// attributes) must be the shape of its `output_grad`.
static LogicalResult checkOutputGrad(std::optional<Location> loc,
                                     RankedTensorType outputGrad,
                                     ArrayRef<int64_t> forwardShape) {
  if (outputGrad.getShape() != forwardShape)
    return emitOptionalError(loc, "output_grad shape ",
                             shapeStr(outputGrad.getShape()),
                             " differs from the forward output shape ",
                             shapeStr(forwardShape));
  return success();
}

/// A shape attribute naming an input: N x C x spatial..., no negative sizes.
static LogicalResult checkInputShape(std::optional<Location> loc,
                                     ArrayRef<int64_t> shape) {
  if (shape.size() < 3 || llvm::any_of(shape, [](int64_t d) { return d < 0; }))
    return emitOptionalError(loc, "input_shape ", shapeStr(shape),
                             " must be N x C x spatial... with non-negative "
                             "sizes");
  return success();
}

LogicalResult ConvBackwardInputOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  auto outputGrad = tensorType(adaptor.getOutputGrad().getType());
  auto weight = tensorType(adaptor.getWeight().getType());
  if (outputGrad.getElementType() != weight.getElementType())
    return emitOptionalError(loc, "operand element types differ");
  ArrayRef<int64_t> inputShape = adaptor.getInputShape();
  if (failed(checkInputShape(loc, inputShape)))
    return failure();
  auto forward = inferConvShape(loc, inputShape, weight.getShape(),
                                adaptor.getGroup(), adaptor.getStrides(),
                                adaptor.getPads(), adaptor.getDilations());
  if (failed(forward) || failed(checkOutputGrad(loc, outputGrad, *forward)))
    return failure();
  inferred.push_back(outputGrad.clone(inputShape));
  return success();
}

// The forward convolution's multiply-adds, once more.
int64_t ConvBackwardInputOp::getForwardFlops() {
  int64_t perOutput = ShapedType::getNumElements(
      getWeight().getType().getShape().drop_front(1));
  return 2 * getOutputGrad().getType().getNumElements() * perOutput;
}

LogicalResult ConvBackwardWeightOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  auto outputGrad = tensorType(adaptor.getOutputGrad().getType());
  auto input = tensorType(adaptor.getInput().getType());
  if (outputGrad.getElementType() != input.getElementType())
    return emitOptionalError(loc, "operand element types differ");
  if (input.getRank() < 3 || outputGrad.getRank() != input.getRank())
    return emitOptionalError(loc, "input and output_grad must be N x C x "
                                  "spatial... of the same rank");
  int64_t group = adaptor.getGroup();
  int64_t channels = input.getDimSize(1);
  if (group <= 0 || channels % group != 0)
    return emitOptionalError(loc, "group ", group,
                             " must divide input channels ", channels);
  ArrayRef<int64_t> kernel = adaptor.getKernelShape();
  SmallVector<int64_t> weightShape{outputGrad.getDimSize(1),
                                   channels / group};
  llvm::append_range(weightShape, kernel);
  if (kernel.size() + 2 != size_t(input.getRank()))
    return emitOptionalError(loc, "kernel_shape ", shapeStr(kernel),
                             " needs one entry per spatial dimension (",
                             input.getRank() - 2, ")");
  auto forward = inferConvShape(loc, input.getShape(), weightShape, group,
                                adaptor.getStrides(), adaptor.getPads(),
                                adaptor.getDilations());
  if (failed(forward) || failed(checkOutputGrad(loc, outputGrad, *forward)))
    return failure();
  inferred.push_back(outputGrad.clone(weightShape));
  return success();
}

int64_t ConvBackwardWeightOp::getForwardFlops() {
  int64_t perOutput = ShapedType::getNumElements(
      getWeightGrad().getType().getShape().drop_front(1));
  return 2 * getOutputGrad().getType().getNumElements() * perOutput;
}

/// The gradient of a pool over `input` by `w`: `outputGrad` has the pool's
/// result shape, the gradient is the input's type.
static LogicalResult inferPoolGrad(std::optional<Location> loc,
                                   RankedTensorType input,
                                   RankedTensorType outputGrad, const Window &w,
                                   SmallVectorImpl<Type> &inferred) {
  SmallVector<Type> forward;
  if (failed(inferPool(loc, input, w, forward)) ||
      failed(
          checkOutputGrad(loc, outputGrad, tensorType(forward[0]).getShape())))
    return failure();
  inferred.push_back(input);
  return success();
}

LogicalResult MaxPoolGradOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &inferred) {
  auto outputGrad = tensorType(adaptor.getOutputGrad().getType());
  auto input = tensorType(adaptor.getInput().getType());
  if (outputGrad.getElementType() != input.getElementType())
    return emitOptionalError(loc, "operand element types differ");
  Window w{adaptor.getKernelShape(), adaptor.getStrides(), adaptor.getPads(),
           adaptor.getDilations(), adaptor.getCeilMode()};
  return inferPoolGrad(loc, input, outputGrad, w, inferred);
}

// Finding each window's maximum again, then routing the gradient.
int64_t MaxPoolGradOp::getForwardFlops() {
  return 2 * getOutputGrad().getType().getNumElements() *
         ShapedType::getNumElements(getKernelShape());
}

LogicalResult AveragePoolGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  auto outputGrad = tensorType(adaptor.getOutputGrad().getType());
  ArrayRef<int64_t> inputShape = adaptor.getInputShape();
  if (failed(checkInputShape(loc, inputShape)))
    return failure();
  auto input = outputGrad.clone(inputShape);
  SmallVector<int64_t> dilations(adaptor.getKernelShape().size(), 1);
  Window w{adaptor.getKernelShape(), adaptor.getStrides(), adaptor.getPads(),
           dilations, adaptor.getCeilMode()};
  return inferPoolGrad(loc, input, outputGrad, w, inferred);
}

int64_t AveragePoolGradOp::getForwardFlops() {
  return getOutputGrad().getType().getNumElements() *
         ShapedType::getNumElements(getKernelShape());
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

/// Checks the operands of a batch normalization (per-channel vectors of
/// the input's channel count and element type).
static LogicalResult checkBatchNorm(std::optional<Location> loc,
                                    RankedTensorType input,
                                    ValueRange perChannel) {
  if (input.getRank() < 2)
    return emitOptionalError(loc, "input must have rank >= 2");
  int64_t channels = input.getDimSize(1);
  for (Value v : perChannel) {
    auto t = tensorType(v.getType());
    if (t.getRank() != 1 || t.getDimSize(0) != channels)
      return emitOptionalError(loc, "scale, bias, mean and var must have "
                                    "shape [",
                               channels, "], got ", shapeStr(t.getShape()));
    if (t.getElementType() != input.getElementType())
      return emitOptionalError(loc, "operand element types differ");
  }
  return success();
}

LogicalResult BatchNormalizationOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  auto input = tensorType(adaptor.getInput().getType());
  if (failed(checkBatchNorm(loc, input,
                            {adaptor.getScale(), adaptor.getBias(),
                             adaptor.getMean(), adaptor.getVar()})))
    return failure();
  inferred.push_back(input);
  return success();
}

int64_t BatchNormalizationOp::getForwardFlops() {
  return 2 * getInput().getType().getNumElements();
}

LogicalResult BatchNormTrainOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  auto input = tensorType(adaptor.getInput().getType());
  if (failed(checkBatchNorm(loc, input,
                            {adaptor.getScale(), adaptor.getBias(),
                             adaptor.getRunningMean(),
                             adaptor.getRunningVar()})))
    return failure();
  auto stats =
      RankedTensorType::get({input.getDimSize(1)}, input.getElementType());
  inferred.append({input, stats, stats});
  return success();
}

LogicalResult BatchNormTrainOp::verify() {
  // The unbiased variance of the running update divides by count - 1
  // (PyTorch refuses such batches too).
  auto type = getInput().getType();
  int64_t count = type.getNumElements() / std::max<int64_t>(type.getDimSize(1), 1);
  if (count <= 1)
    return emitOpError("needs more than one value per channel to compute "
                       "batch statistics, got input shape ")
           << shapeStr(type.getShape());
  double momentum = getMomentum().convertToDouble();
  if (!(momentum >= 0.0 && momentum <= 1.0))
    return emitOpError("momentum must be in [0, 1], got ") << momentum;
  return success();
}

// Mean, variance (two passes), normalize, scale and shift.
int64_t BatchNormTrainOp::getForwardFlops() {
  return 8 * getInput().getType().getNumElements();
}

LogicalResult LayerNormalizationOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  auto input = tensorType(adaptor.getInput().getType());
  int64_t axis = adaptor.getAxis();
  if (failed(checkAxis(loc, axis, input.getRank())))
    return failure();
  ArrayRef<int64_t> normalized = input.getShape().drop_front(axis);
  for (Value v : {adaptor.getScale(), adaptor.getBias()}) {
    if (!v)
      continue;
    auto t = tensorType(v.getType());
    auto bcast = detail::broadcastShapes(t.getShape(), normalized);
    if (!bcast || ArrayRef<int64_t>(*bcast) != ArrayRef<int64_t>(normalized))
      return emitOptionalError(loc, "scale/bias of shape ",
                               shapeStr(t.getShape()),
                               " does not broadcast to the normalized shape ",
                               shapeStr(normalized));
    if (t.getElementType() != input.getElementType())
      return emitOptionalError(loc, "operand element types differ");
  }
  inferred.push_back(input);
  return success();
}

// mean, variance, normalize, scale and shift.
int64_t LayerNormalizationOp::getForwardFlops() {
  return 8 * getInput().getType().getNumElements();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

static LogicalResult inferReduce(std::optional<Location> loc, Type inputType,
                                 ArrayRef<int64_t> axes, bool keepdims,
                                 SmallVectorImpl<Type> &inferred) {
  auto input = tensorType(inputType);
  if (failed(checkAxes(loc, "reduction", axes, input.getRank())))
    return failure();
  SmallVector<int64_t> shape;
  for (auto [i, dim] : llvm::enumerate(input.getShape())) {
    if (!llvm::is_contained(axes, int64_t(i)))
      shape.push_back(dim);
    else if (keepdims)
      shape.push_back(1);
  }
  inferred.push_back(input.clone(shape));
  return success();
}

#define NN_REDUCE_OP(OP)                                                       \
  LogicalResult OP::inferReturnTypes(MLIRContext *,                            \
                                     std::optional<Location> loc,              \
                                     Adaptor adaptor,                          \
                                     SmallVectorImpl<Type> &inferred) {        \
    return inferReduce(loc, adaptor.getInput().getType(), adaptor.getAxes(),   \
                       adaptor.getKeepdims(), inferred);                       \
  }                                                                            \
  LogicalResult OP::verify() {                                                 \
    if (getAxes().empty())                                                     \
      return emitOpError("axes must not be empty (list every axis to reduce "  \
                         "all)");                                              \
    return success();                                                          \
  }                                                                            \
  int64_t OP::getForwardFlops() {                                              \
    return getInput().getType().getNumElements();                              \
  }
NN_REDUCE_OP(ReduceMeanOp)
NN_REDUCE_OP(ReduceSumOp)
NN_REDUCE_OP(ReduceMaxOp)
NN_REDUCE_OP(ReduceMinOp)
NN_REDUCE_OP(ReduceProdOp)
#undef NN_REDUCE_OP

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

/// The result of an op that gives its input the `shape` attribute (reshape,
/// expand). `shape` must be fully resolved: a negative (dynamic) entry would
/// build an invalid or dynamic result type. `fits` checks that the input, of
/// shape `inputShape`, can take it.
static LogicalResult
inferToShape(std::optional<Location> loc, Type inputType,
             ArrayRef<int64_t> shape,
             function_ref<LogicalResult(ArrayRef<int64_t> inputShape)> fits,
             SmallVectorImpl<Type> &inferred) {
  if (llvm::any_of(shape, [](int64_t d) { return d < 0; }))
    return emitOptionalError(loc, "shape ", shapeStr(shape),
                             " must be fully resolved (no negative entries)");
  auto input = tensorType(inputType);
  if (failed(fits(input.getShape())))
    return failure();
  inferred.push_back(input.clone(shape));
  return success();
}

LogicalResult ReshapeOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  ArrayRef<int64_t> shape = adaptor.getShape();
  auto sameElements = [&](ArrayRef<int64_t> inputShape) -> LogicalResult {
    std::optional<int64_t> inputElements = checkedProduct(inputShape);
    std::optional<int64_t> elements = checkedProduct(shape);
    if (!inputElements || !elements)
      return emitOptionalError(loc, "element count of ",
                               shapeStr(inputElements ? shape : inputShape),
                               " overflows int64");
    if (*elements != *inputElements)
      return emitOptionalError(loc, "cannot reshape ", shapeStr(inputShape),
                               " (", *inputElements, " elements) to ",
                               shapeStr(shape), " (", *elements, " elements)");
    return success();
  };
  return inferToShape(loc, adaptor.getInput().getType(), shape, sameElements,
                      inferred);
}

LogicalResult FlattenOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  auto input = tensorType(adaptor.getInput().getType());
  int64_t axis = adaptor.getAxis();
  if (failed(checkAxis(loc, axis, input.getRank(), /*inclusiveEnd=*/true)))
    return failure();
  std::optional<int64_t> outer = checkedProduct(input.getShape().take_front(axis));
  std::optional<int64_t> inner = checkedProduct(input.getShape().drop_front(axis));
  if (!outer || !inner)
    return emitOptionalError(loc, "element count of ",
                             shapeStr(input.getShape()), " overflows int64");
  SmallVector<int64_t> shape{*outer, *inner};
  inferred.push_back(input.clone(shape));
  return success();
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  auto input = tensorType(adaptor.getInput().getType());
  ArrayRef<int64_t> perm = adaptor.getPerm();
  int64_t rank = input.getRank();
  SmallVector<bool> seen(rank, false);
  if (int64_t(perm.size()) != rank)
    return emitOptionalError(loc, "perm ", shapeStr(perm),
                             " is not a permutation of ", rank, " dimensions");
  SmallVector<int64_t> shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[p])
      return emitOptionalError(loc, "perm ", shapeStr(perm),
                               " is not a permutation of ", rank,
                               " dimensions");
    seen[p] = true;
    shape.push_back(input.getDimSize(p));
  }
  inferred.push_back(input.clone(shape));
  return success();
}

LogicalResult SqueezeOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  auto input = tensorType(adaptor.getInput().getType());
  ArrayRef<int64_t> axes = adaptor.getAxes();
  if (failed(checkAxes(loc, "squeeze", axes, input.getRank())))
    return failure();
  SmallVector<int64_t> shape;
  for (auto [i, dim] : llvm::enumerate(input.getShape())) {
    if (!llvm::is_contained(axes, int64_t(i))) {
      shape.push_back(dim);
      continue;
    }
    if (dim != 1)
      return emitOptionalError(loc, "cannot squeeze axis ", i, " of size ",
                               dim);
  }
  inferred.push_back(input.clone(shape));
  return success();
}

LogicalResult UnsqueezeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  auto input = tensorType(adaptor.getInput().getType());
  ArrayRef<int64_t> axes = adaptor.getAxes();
  int64_t rank = input.getRank() + axes.size();
  if (failed(checkAxes(loc, "unsqueeze", axes, rank)))
    return failure();
  SmallVector<int64_t> shape;
  ArrayRef<int64_t> rest = input.getShape();
  for (int64_t i = 0; i < rank; ++i) {
    if (llvm::is_contained(axes, i)) {
      shape.push_back(1);
    } else {
      shape.push_back(rest.front());
      rest = rest.drop_front();
    }
  }
  inferred.push_back(input.clone(shape));
  return success();
}

LogicalResult ExpandOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  ArrayRef<int64_t> shape = adaptor.getShape();
  auto broadcasts = [&](ArrayRef<int64_t> inputShape) -> LogicalResult {
    auto bcast = detail::broadcastShapes(inputShape, shape);
    if (!bcast || ArrayRef<int64_t>(*bcast) != shape)
      return emitOptionalError(loc, "input of shape ", shapeStr(inputShape),
                               " does not broadcast to ", shapeStr(shape));
    return success();
  };
  return inferToShape(loc, adaptor.getInput().getType(), shape, broadcasts,
                      inferred);
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  ValueRange inputs = adaptor.getInputs();
  if (inputs.empty())
    return emitOptionalError(loc, "expected at least one input");
  auto first = tensorType(inputs.front().getType());
  int64_t axis = adaptor.getAxis();
  if (failed(checkAxis(loc, axis, first.getRank())))
    return failure();
  SmallVector<int64_t> shape(first.getShape());
  for (Value v : inputs.drop_front()) {
    auto t = tensorType(v.getType());
    if (t.getElementType() != first.getElementType())
      return emitOptionalError(loc, "input element types differ");
    if (t.getRank() != first.getRank())
      return emitOptionalError(loc, "input ranks differ");
    for (int64_t d = 0; d < t.getRank(); ++d) {
      if (d == axis)
        continue;
      if (t.getDimSize(d) != shape[d])
        return emitOptionalError(loc, "input shapes ",
                                 shapeStr(first.getShape()), " and ",
                                 shapeStr(t.getShape()),
                                 " differ outside axis ", axis);
    }
    std::optional<int64_t> sum = llvm::checkedAdd(shape[axis], t.getDimSize(axis));
    if (!sum)
      return emitOptionalError(loc, "concatenated size of axis ", axis,
                               " overflows int64");
    shape[axis] = *sum;
  }
  inferred.push_back(first.clone(shape));
  return success();
}

LogicalResult SplitOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  auto input = tensorType(adaptor.getInput().getType());
  int64_t axis = adaptor.getAxis();
  if (failed(checkAxis(loc, axis, input.getRank())))
    return failure();
  ArrayRef<int64_t> sizes = adaptor.getSplitSizes();
  if (sizes.empty() || llvm::any_of(sizes, [](int64_t s) { return s < 0; }))
    return emitOptionalError(loc, "split_sizes ", shapeStr(sizes),
                             " must be non-empty and non-negative");
  int64_t total = 0;
  for (int64_t s : sizes) {
    std::optional<int64_t> sum = llvm::checkedAdd(total, s);
    if (!sum)
      return emitOptionalError(loc, "split_sizes ", shapeStr(sizes),
                               " overflow int64");
    total = *sum;
  }
  if (total != input.getDimSize(axis))
    return emitOptionalError(loc, "split_sizes ", shapeStr(sizes), " sum to ",
                             total, " but axis ", axis, " has size ",
                             input.getDimSize(axis));
  for (int64_t s : sizes) {
    SmallVector<int64_t> shape(input.getShape());
    shape[axis] = s;
    inferred.push_back(input.clone(shape));
  }
  return success();
}

/// Checks that the `size` elements from `start` by `step` (non-zero) of
/// dimension `d` lie in [0, dim); an empty slice always does.
static LogicalResult checkSliceInBounds(std::optional<Location> loc, int64_t d,
                                        int64_t start, int64_t size,
                                        int64_t step, int64_t dim) {
  if (size == 0)
    return success();
  std::optional<int64_t> last = llvm::checkedMul(size - 1, step);
  if (last)
    last = llvm::checkedAdd(start, *last);
  if (start < 0 || start >= dim || !last || *last < 0 || *last >= dim)
    return emitOptionalError(loc, "slice of dimension ", d, " (start ", start,
                             ", size ", size, ", step ", step, ") leaves [0, ",
                             dim, ")");
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  auto input = tensorType(adaptor.getInput().getType());
  ArrayRef<int64_t> starts = adaptor.getStarts(), sizes = adaptor.getSizes(),
                    steps = adaptor.getSteps();
  int64_t rank = input.getRank();
  if (int64_t(starts.size()) != rank || int64_t(sizes.size()) != rank ||
      int64_t(steps.size()) != rank)
    return emitOptionalError(loc, "starts, sizes and steps need one entry "
                                  "per dimension (",
                             rank, ")");
  for (int64_t d = 0; d < rank; ++d) {
    int64_t dim = input.getDimSize(d);
    if (steps[d] == 0)
      return emitOptionalError(loc, "step of dimension ", d, " is zero");
    if (sizes[d] < 0)
      return emitOptionalError(loc, "size of dimension ", d, " is negative");
    if (failed(checkSliceInBounds(loc, d, starts[d], sizes[d], steps[d], dim)))
      return failure();
  }
  inferred.push_back(input.clone(sizes));
  return success();
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  auto data = tensorType(adaptor.getData().getType());
  auto indices = tensorType(adaptor.getIndices().getType());
  int64_t axis = adaptor.getAxis();
  if (failed(checkAxis(loc, axis, data.getRank())))
    return failure();
  SmallVector<int64_t> shape(data.getShape().take_front(axis));
  llvm::append_range(shape, indices.getShape());
  llvm::append_range(shape, data.getShape().drop_front(axis + 1));
  inferred.push_back(data.clone(shape));
  return success();
}

//===----------------------------------------------------------------------===//
// Data-dependent indexing
//===----------------------------------------------------------------------===//

/// `indices` (and `updates`, when given) of an element-wise gather/scatter
/// along `axis` of `data`: same rank, no dimension larger except at `axis`.
static LogicalResult checkElementIndices(std::optional<Location> loc,
                                         RankedTensorType data,
                                         RankedTensorType indices,
                                         int64_t axis) {
  if (failed(checkAxis(loc, axis, data.getRank())))
    return failure();
  if (indices.getRank() != data.getRank())
    return emitOptionalError(loc, "indices of rank ", indices.getRank(),
                             " differ in rank from data of rank ",
                             data.getRank());
  for (int64_t d = 0; d < data.getRank(); ++d)
    if (d != axis && indices.getDimSize(d) > data.getDimSize(d))
      return emitOptionalError(loc, "indices shape ",
                               shapeStr(indices.getShape()),
                               " exceeds data shape ",
                               shapeStr(data.getShape()), " in dimension ", d);
  return success();
}

static LogicalResult checkReduction(Operation *op, StringRef reduction) {
  if (!llvm::is_contained({"none", "add", "mul", "max", "min"}, reduction))
    return op->emitOpError("reduction must be none, add, mul, max or min, "
                           "got '")
           << reduction << "'";
  return success();
}

LogicalResult GatherElementsOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  auto data = tensorType(adaptor.getData().getType());
  auto indices = tensorType(adaptor.getIndices().getType());
  if (failed(checkElementIndices(loc, data, indices, adaptor.getAxis())))
    return failure();
  inferred.push_back(data.clone(indices.getShape()));
  return success();
}

LogicalResult ScatterElementsOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  auto data = tensorType(adaptor.getData().getType());
  auto indices = tensorType(adaptor.getIndices().getType());
  auto updates = tensorType(adaptor.getUpdates().getType());
  if (failed(checkElementIndices(loc, data, indices, adaptor.getAxis())))
    return failure();
  if (updates.getShape() != indices.getShape() ||
      updates.getElementType() != data.getElementType())
    return emitOptionalError(loc, "updates ", updates,
                             " must have the indices' shape ",
                             shapeStr(indices.getShape()),
                             " and the data's element type");
  inferred.push_back(data);
  return success();
}

LogicalResult ScatterElementsOp::verify() {
  return checkReduction(*this, getReduction());
}

int64_t ScatterElementsOp::getForwardFlops() {
  return getUpdates().getType().getNumElements();
}

/// The shape gather_nd reads (and scatter_nd writes): indices.shape[:-1] ++
/// data.shape[batch_dims + q:].
static FailureOr<SmallVector<int64_t>>
inferNDSliceShape(std::optional<Location> loc, RankedTensorType data,
                  RankedTensorType indices, int64_t batchDims) {
  int64_t rank = data.getRank(), indexRank = indices.getRank();
  if (indexRank < 1)
    return emitOptionalError(loc, "indices must have rank >= 1");
  if (batchDims < 0 || batchDims >= indexRank || batchDims > rank)
    return emitOptionalError(loc, "batch_dims ", batchDims,
                             " must be in [0, min(data rank ", rank,
                             ", indices rank ", indexRank, " - 1)]");
  int64_t q = indices.getDimSize(indexRank - 1);
  if (q < 1 || batchDims + q > rank)
    return emitOptionalError(loc, "index tuples of length ", q,
                             " do not fit data of rank ", rank,
                             " after ", batchDims, " batch dimensions");
  if (data.getShape().take_front(batchDims) !=
      indices.getShape().take_front(batchDims))
    return emitOptionalError(loc, "batch dimensions of data ",
                             shapeStr(data.getShape()), " and indices ",
                             shapeStr(indices.getShape()), " differ");
  SmallVector<int64_t> shape(indices.getShape().drop_back());
  llvm::append_range(shape, data.getShape().drop_front(batchDims + q));
  return shape;
}

LogicalResult GatherNDOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &inferred) {
  auto data = tensorType(adaptor.getData().getType());
  auto indices = tensorType(adaptor.getIndices().getType());
  auto shape = inferNDSliceShape(loc, data, indices, adaptor.getBatchDims());
  if (failed(shape))
    return failure();
  inferred.push_back(data.clone(*shape));
  return success();
}

LogicalResult ScatterNDOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  auto data = tensorType(adaptor.getData().getType());
  auto indices = tensorType(adaptor.getIndices().getType());
  auto updates = tensorType(adaptor.getUpdates().getType());
  auto shape = inferNDSliceShape(loc, data, indices, adaptor.getBatchDims());
  if (failed(shape))
    return failure();
  if (updates.getShape() != ArrayRef<int64_t>(*shape) ||
      updates.getElementType() != data.getElementType())
    return emitOptionalError(loc, "updates ", updates, " must have shape ",
                             shapeStr(*shape),
                             " and the data's element type");
  inferred.push_back(data);
  return success();
}

LogicalResult ScatterNDOp::verify() {
  return checkReduction(*this, getReduction());
}

int64_t ScatterNDOp::getForwardFlops() {
  return getUpdates().getType().getNumElements();
}

//===----------------------------------------------------------------------===//
// Training support
//===----------------------------------------------------------------------===//

LogicalResult SliceGradOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  auto input = tensorType(adaptor.getInput().getType());
  ArrayRef<int64_t> shape = adaptor.getShape(), starts = adaptor.getStarts(),
                    steps = adaptor.getSteps();
  int64_t rank = input.getRank();
  if (int64_t(shape.size()) != rank || int64_t(starts.size()) != rank ||
      int64_t(steps.size()) != rank)
    return emitOptionalError(loc, "shape, starts and steps need one entry "
                                  "per dimension (",
                             rank, ")");
  // The input must be a slice `nn.slice` could read from `shape`.
  for (int64_t d = 0; d < rank; ++d) {
    int64_t dim = shape[d], size = input.getDimSize(d);
    if (dim < 0)
      return emitOptionalError(loc, "shape ", shapeStr(shape),
                               " must be fully resolved (no negative entries)");
    if (steps[d] == 0)
      return emitOptionalError(loc, "step of dimension ", d, " is zero");
    if (failed(checkSliceInBounds(loc, d, starts[d], size, steps[d], dim)))
      return failure();
  }
  inferred.push_back(input.clone(shape));
  return success();
}

LogicalResult GatherGradOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &inferred) {
  auto grad = tensorType(adaptor.getGrad().getType());
  auto indices = tensorType(adaptor.getIndices().getType());
  int64_t axis = adaptor.getAxis(), axisSize = adaptor.getAxisSize();
  int64_t indexRank = indices.getRank();
  if (axis < 0 || axis + indexRank > grad.getRank())
    return emitOptionalError(loc, "axis ", axis, " and ", indexRank,
                             " index dimensions do not fit grad of rank ",
                             grad.getRank());
  if (axisSize < 0)
    return emitOptionalError(loc, "axis_size must be non-negative, got ",
                             axisSize);
  ArrayRef<int64_t> walked = grad.getShape().slice(axis, indexRank);
  if (walked != indices.getShape())
    return emitOptionalError(loc, "grad dimensions ", shapeStr(walked),
                             " at axis ", axis,
                             " differ from the indices' shape ",
                             shapeStr(indices.getShape()));
  SmallVector<int64_t> shape(grad.getShape().take_front(axis));
  shape.push_back(axisSize);
  llvm::append_range(shape, grad.getShape().drop_front(axis + indexRank));
  inferred.push_back(grad.clone(shape));
  return success();
}

// One add per gradient element.
int64_t GatherGradOp::getForwardFlops() {
  return getGrad().getType().getNumElements();
}

LogicalResult BernoulliOp::verify() {
  double p = getProbability().convertToDouble();
  if (!(p >= 0.0 && p <= 1.0))
    return emitOpError("probability must be in [0, 1], got ") << p;
  return success();
}

#define GET_OP_CLASSES
#include "pipedream/Dialect/NN/IR/NNOps.cpp.inc"
