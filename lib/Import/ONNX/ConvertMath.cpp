//===- ConvertMath.cpp - math, activation, reduction and scan ONNX ops ----===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Unary math (trigonometric and hyperbolic functions, rounding, Reciprocal,
// Abs, Sign, IsNaN, IsInf, Not), the activations beyond Relu/Gelu (Elu,
// Selu, Celu, HardSigmoid, HardSwish, Softplus, Softsign, ThresholdedRelu,
// Shrink, PRelu, Hardmax), CastLike, the reductions built from others
// (ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum, ReduceLogSumExp),
// ArgMax/ArgMin, CumSum, TopK, Trilu and EyeLike. Ops are folded when a
// folding kernel exists and the inputs are constants; otherwise they become
// nn ops.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

using namespace mlir;
using namespace pipedream;
using namespace pipedream::onnx_import;

/// Input `i` has a floating-point element type (reports otherwise).
static bool requireFloatInput(NodeContext &ctx, size_t i) {
  RankedTensorType type = ctx.inputType(i);
  if (!type)
    return false;
  if (!isa<FloatType>(type.getElementType())) {
    ctx.fail("input " + Twine(i) + " must be a floating-point tensor");
    return false;
  }
  return true;
}

/// Input `i` has a float or (signed) integer element type, not bool.
static bool requireNumericInput(NodeContext &ctx, size_t i) {
  RankedTensorType type = ctx.inputType(i);
  if (!type)
    return false;
  if (type.getElementType().isInteger(1)) {
    ctx.fail("input " + Twine(i) + " must be numeric, not bool");
    return false;
  }
  return true;
}

/// A rank-0 `nn.constant` of `element` holding `value`.
static Value scalarConstant(NodeContext &ctx, Type element, double value) {
  auto type = RankedTensorType::get({}, element);
  Attribute v = isa<FloatType>(element)
                    ? Attribute(FloatAttr::get(element, value))
                    : Attribute(IntegerAttr::get(element, int64_t(value)));
  return ctx.createValue<nn::ConstantOp>(DenseElementsAttr::get(type, v));
}

//===----------------------------------------------------------------------===//
// Unary math
//===----------------------------------------------------------------------===//

/// What the input of a unary op may be.
enum class Operand { Float, Numeric, Bool };

/// A unary op: folded with `Fold` when the input is a constant and `Fold`
/// is not Identity (Identity: no folding kernel; a constant input becomes
/// an `nn.constant` operand).
template <typename OpTy, Operand Allowed, UnaryKind Fold = UnaryKind::Identity>
static void convertMathUnary(NodeContext &ctx) {
  if (!ctx.requireInputs(1))
    return;
  RankedTensorType type = ctx.inputType(0);
  if (!type)
    return;
  Type element = type.getElementType();
  bool ok = Allowed == Operand::Float  ? isa<FloatType>(element)
            : Allowed == Operand::Bool ? element.isInteger(1)
                                       : !element.isInteger(1);
  if (!ok) {
    ctx.fail(Twine("input must be ") +
             (Allowed == Operand::Float  ? "a floating-point tensor"
              : Allowed == Operand::Bool ? "a bool tensor"
                                         : "a numeric (not bool) tensor"));
    return;
  }
  if (Fold != UnaryKind::Identity) {
    if (const HostTensor *c = ctx.constantInput(0)) {
      ctx.setFolded(foldUnary(Fold, *c));
      return;
    }
  }
  if (Value x = ctx.operand(0))
    ctx.setOutput(0, ctx.createValue<OpTy>(x));
}

static void convertIsInf(NodeContext &ctx) {
  if (!ctx.requireInputs(1) || !requireFloatInput(ctx, 0))
    return;
  bool negative = ctx.intAttr("detect_negative", 1) != 0;
  bool positive = ctx.intAttr("detect_positive", 1) != 0;
  if (Value x = ctx.operand(0))
    ctx.setOutput(0, ctx.createValue<nn::IsInfOp>(x, ctx.boolean(negative),
                                                  ctx.boolean(positive)));
}

static void convertCastLike(NodeContext &ctx) {
  if (!ctx.requireInputs(2))
    return;
  ImportedValue *in = ctx.input(0), *like = ctx.input(1);
  if (!in || !like) {
    ctx.fail("missing input");
    return;
  }
  Type element = like->type.getElementType();
  if (const HostTensor *c = ctx.constantInput(0)) {
    ctx.setFolded(foldCast(*c, like->dtype));
    return;
  }
  if (in->type.getElementType() == element) {
    ctx.setOutputAlias(0, *in);
    return;
  }
  if (Value x = ctx.operand(0))
    ctx.setOutput(0, ctx.createValue<nn::CastOp>(x, TypeAttr::get(element)));
}

//===----------------------------------------------------------------------===//
// Activations
//===----------------------------------------------------------------------===//

/// Float-input activation with float attributes `names` (defaults
/// `defaults`), passed to OpTy's builder in order.
template <typename OpTy, size_t N>
static void convertActivation(NodeContext &ctx, const char *const (&names)[N],
                              const double (&defaults)[N]) {
  if (!ctx.requireInputs(1) || !requireFloatInput(ctx, 0))
    return;
  std::array<FloatAttr, N> attrs;
  for (size_t i = 0; i < N; ++i)
    attrs[i] = ctx.f64(ctx.floatAttr(names[i], defaults[i]));
  if (ctx.failed())
    return;
  Value x = ctx.operand(0);
  if (!x)
    return;
  std::apply(
      [&](auto... a) { ctx.setOutput(0, ctx.createValue<OpTy>(x, a...)); },
      attrs);
}

static void convertElu(NodeContext &ctx) {
  static const char *const names[] = {"alpha"};
  convertActivation<nn::EluOp>(ctx, names, {1.0});
}

static void convertSelu(NodeContext &ctx) {
  static const char *const names[] = {"alpha", "gamma"};
  // ONNX's defaults are these float32 values.
  convertActivation<nn::SeluOp>(
      ctx, names, {1.67326319217681884765625, 1.05070102214813232421875});
}

static void convertCelu(NodeContext &ctx) {
  static const char *const names[] = {"alpha"};
  if (ctx.attr("alpha") && ctx.floatAttr("alpha", 1.0) == 0.0) {
    ctx.fail("attribute 'alpha' must be non-zero");
    return;
  }
  convertActivation<nn::CeluOp>(ctx, names, {1.0});
}

static void convertHardSigmoid(NodeContext &ctx) {
  static const char *const names[] = {"alpha", "beta"};
  convertActivation<nn::HardSigmoidOp>(ctx, names, {0.2, 0.5});
}

static void convertThresholdedRelu(NodeContext &ctx) {
  static const char *const names[] = {"alpha"};
  convertActivation<nn::ThresholdedReluOp>(ctx, names, {1.0});
}

static void convertShrink(NodeContext &ctx) {
  static const char *const names[] = {"bias", "lambd"};
  if (ctx.floatAttr("lambd", 0.5) < 0.0) {
    ctx.fail("attribute 'lambd' must be non-negative");
    return;
  }
  convertActivation<nn::ShrinkOp>(ctx, names, {0.0, 0.5});
}

// PRelu: the slope broadcasts to the input (unidirectionally, opset 7+).
// Before opset 7 the slope is one value or one per channel (axis 1), as
// PyTorch's exporter of that time emits it; it is reshaped to [C, 1, ...].
static void convertPRelu(NodeContext &ctx) {
  if (!ctx.requireInputs(2) || !requireFloatInput(ctx, 0) ||
      !requireFloatInput(ctx, 1))
    return;
  RankedTensorType x = ctx.inputType(0), slope = ctx.inputType(1);
  Value a = ctx.operand(0), b = ctx.operand(1);
  if (!a || !b)
    return;
  if (ctx.sinceVersion() < 7 && slope.getShape() != x.getShape()) {
    SmallVector<int64_t> shape;
    if (slope.getNumElements() == 1) {
      // A scalar broadcasts to anything.
    } else if (slope.getRank() == 1 && x.getRank() >= 2 &&
               slope.getDimSize(0) == x.getDimSize(1)) {
      shape.push_back(slope.getDimSize(0));
      shape.append(x.getRank() - 2, 1);
    } else {
      ctx.unsupported("an opset-6 slope of shape " +
                      shapeToString(slope.getShape()) + " for input " +
                      shapeToString(x.getShape()) +
                      " (one value or one per channel)");
      return;
    }
    b = ctx.createValue<nn::ReshapeOp>(b, ctx.i64s(shape));
    if (!b)
      return;
    slope = cast<RankedTensorType>(b.getType());
  }
  auto shape = nn::detail::broadcastShapes(x.getShape(), slope.getShape());
  if (!shape || ArrayRef<int64_t>(*shape) != x.getShape()) {
    ctx.fail("slope shape " + shapeToString(slope.getShape()) +
             " does not broadcast to the input shape " +
             shapeToString(x.getShape()));
    return;
  }
  ctx.setOutput(0, ctx.createValue<nn::PReluOp>(a, b));
}

/// Hardmax: 1 at the first maximum along the axis, 0 elsewhere, built as
/// one_hot(arg_max) with the one-hot axis moved back in place. Before
/// opset 13 the input is coerced to 2-D at `axis` (default 1) first.
static void convertHardmax(NodeContext &ctx) {
  if (!ctx.requireInputs(1) || !requireFloatInput(ctx, 0))
    return;
  RankedTensorType type = ctx.inputType(0);
  bool legacy = ctx.sinceVersion() < 13;
  int64_t rank = type.getRank();
  auto axis = ctx.normalizeAxis(ctx.intAttr("axis", legacy ? 1 : -1),
                                legacy ? rank + 1 : rank);
  if (!axis || ctx.failed())
    return;
  Value x = ctx.operand(0);
  if (!x)
    return;
  ArrayRef<int64_t> shape = type.getShape();
  if (legacy) {
    int64_t rows = 1, cols = 1;
    for (int64_t d = 0; d < rank; ++d)
      (d < *axis ? rows : cols) *= shape[d];
    x = ctx.createValue<nn::ReshapeOp>(x, ctx.i64s({rows, cols}));
    rank = 2;
    axis = 1;
  }
  auto xType = x ? cast<RankedTensorType>(x.getType()) : RankedTensorType();
  if (!x || xType.getDimSize(*axis) == 0) {
    if (x)
      ctx.fail("the hardmax axis is empty");
    return;
  }
  Value index = ctx.createValue<nn::ArgMaxOp>(x, ctx.i64(*axis),
                                              ctx.boolean(false),
                                              ctx.boolean(false));
  if (!index)
    return;
  Value y = ctx.createValue<nn::OneHotOp>(
      index, ctx.i64(xType.getDimSize(*axis)),
      TypeAttr::get(type.getElementType()));
  if (y && *axis != rank - 1) {
    SmallVector<int64_t> perm;
    for (int64_t d = 0; d < rank; ++d)
      perm.push_back(d < *axis ? d : d == *axis ? rank - 1 : d - 1);
    y = ctx.createValue<nn::TransposeOp>(y, ctx.i64s(perm));
  }
  if (y && legacy)
    y = ctx.createValue<nn::ReshapeOp>(y, ctx.i64s(shape));
  ctx.setOutput(0, y);
}

//===----------------------------------------------------------------------===//
// Reductions built from other ops
//===----------------------------------------------------------------------===//

enum class Composite { L1, L2, SumSquare, LogSum, LogSumExp };

/// ReduceL1 = sum |x|, ReduceL2 = sqrt(sum x^2), ReduceSumSquare = sum x^2,
/// ReduceLogSum = log(sum x), ReduceLogSumExp = m + log(sum exp(x - m)) with
/// m the (finite) maximum, which does not overflow.
template <Composite Kind>
static void convertCompositeReduce(NodeContext &ctx) {
  if (!ctx.requireInputs(1))
    return;
  bool floatOnly = Kind == Composite::L2 || Kind == Composite::LogSum ||
                   Kind == Composite::LogSumExp;
  if (floatOnly ? !requireFloatInput(ctx, 0) : !requireNumericInput(ctx, 0))
    return;
  SmallVector<int64_t> axes;
  bool keepdims;
  if (!resolveReduceAxes(ctx, 18, axes, keepdims))
    return;
  if (axes.empty()) {
    ctx.setOutputAlias(0, *ctx.input(0));
    return;
  }
  Value x = ctx.operand(0);
  if (!x)
    return;
  Type element = cast<RankedTensorType>(x.getType()).getElementType();
  auto sum = [&](Value v, bool keep) -> Value {
    return v ? ctx.createValue<nn::ReduceSumOp>(v, ctx.i64s(axes),
                                                ctx.boolean(keep))
             : Value();
  };
  Value y;
  switch (Kind) {
  case Composite::L1:
    y = sum(ctx.createValue<nn::AbsOp>(x), keepdims);
    break;
  case Composite::SumSquare:
    y = sum(ctx.createValue<nn::MulOp>(x, x), keepdims);
    break;
  case Composite::L2:
    y = sum(ctx.createValue<nn::MulOp>(x, x), keepdims);
    y = y ? ctx.createValue<nn::SqrtOp>(y) : Value();
    break;
  case Composite::LogSum:
    y = sum(x, keepdims);
    y = y ? ctx.createValue<nn::LogOp>(y) : Value();
    break;
  case Composite::LogSumExp: {
    Value max = ctx.createValue<nn::ReduceMaxOp>(x, ctx.i64s(axes),
                                                 ctx.boolean(true));
    Value zero = scalarConstant(ctx, element, 0.0);
    if (!max || !zero)
      return;
    // An infinite maximum (all -inf, or a +inf) shifts by 0 instead, so
    // x - m is never inf - inf.
    Value isInf = ctx.createValue<nn::IsInfOp>(max, ctx.boolean(true),
                                               ctx.boolean(true));
    Value shift = isInf ? ctx.createValue<nn::WhereOp>(isInf, zero, max)
                        : Value();
    Value centered = shift ? ctx.createValue<nn::SubOp>(x, shift) : Value();
    Value e = centered ? ctx.createValue<nn::ExpOp>(centered) : Value();
    Value s = sum(e, /*keep=*/true);
    Value l = s ? ctx.createValue<nn::LogOp>(s) : Value();
    y = l ? ctx.createValue<nn::AddOp>(l, shift) : Value();
    if (y && !keepdims) {
      auto type = cast<RankedTensorType>(y.getType());
      SmallVector<int64_t> shape;
      for (int64_t d = 0; d < type.getRank(); ++d)
        if (!llvm::is_contained(axes, d))
          shape.push_back(type.getDimSize(d));
      y = ctx.createValue<nn::ReshapeOp>(y, ctx.i64s(shape));
    }
    break;
  }
  }
  ctx.setOutput(0, y);
}

//===----------------------------------------------------------------------===//
// ArgMax / ArgMin, CumSum
//===----------------------------------------------------------------------===//

template <typename OpTy>
static void convertArgReduce(NodeContext &ctx) {
  if (!ctx.requireInputs(1) || !requireNumericInput(ctx, 0))
    return;
  RankedTensorType type = ctx.inputType(0);
  auto axis = ctx.normalizeAxis(ctx.intAttr("axis", 0), type.getRank());
  bool keepdims = ctx.intAttr("keepdims", 1) != 0;
  bool last = ctx.intAttr("select_last_index", 0) != 0;
  if (!axis || ctx.failed())
    return;
  if (type.getDimSize(*axis) == 0) {
    ctx.fail("axis " + Twine(*axis) + " is empty");
    return;
  }
  if (Value x = ctx.operand(0))
    ctx.setOutput(0, ctx.createValue<OpTy>(x, ctx.i64(*axis),
                                           ctx.boolean(keepdims),
                                           ctx.boolean(last)));
}

static void convertCumSum(NodeContext &ctx) {
  if (!ctx.requireInputs(2) || !requireNumericInput(ctx, 0))
    return;
  RankedTensorType type = ctx.inputType(0);
  const HostTensor *axisInput = ctx.requireConstant(1, "axis");
  if (!axisInput)
    return;
  if (axisInput->numElements() != 1 || axisInput->isFloat()) {
    ctx.fail("input 'axis' must be an integer scalar");
    return;
  }
  auto axis = ctx.normalizeAxis(axisInput->getInt(0), type.getRank());
  bool exclusive = ctx.intAttr("exclusive", 0) != 0;
  bool reverse = ctx.intAttr("reverse", 0) != 0;
  if (!axis || ctx.failed())
    return;
  if (Value x = ctx.operand(0))
    ctx.setOutput(0, ctx.createValue<nn::CumSumOp>(x, ctx.i64(*axis),
                                                   ctx.boolean(exclusive),
                                                   ctx.boolean(reverse)));
}

/// TopK: `k` from the attribute (opset 1) or the constant `K` input
/// (10+); `largest` (11+). `sorted` = 0 lets any order through, so the
/// sorted result is always right.
static void convertTopK(NodeContext &ctx) {
  if (!ctx.requireInputs(1) || !requireNumericInput(ctx, 0))
    return;
  RankedTensorType type = ctx.inputType(0);
  auto axis = ctx.normalizeAxis(ctx.intAttr("axis", -1), type.getRank());
  bool largest = ctx.intAttr("largest", 1) != 0;
  int64_t k;
  if (ctx.sinceVersion() < 10) {
    k = ctx.intAttr("k", -1);
  } else {
    if (!ctx.requireInputs(2))
      return;
    const HostTensor *kt = ctx.requireConstant(1, "K");
    if (!kt)
      return;
    if (kt->numElements() != 1 || kt->isFloat()) {
      ctx.fail("input 'K' must hold one integer");
      return;
    }
    k = kt->getInt(0);
  }
  if (!axis || ctx.failed())
    return;
  if (k < 0 || k > type.getDimSize(*axis)) {
    ctx.fail("k = " + Twine(k) + " is out of range [0, " +
             Twine(type.getDimSize(*axis)) + "]");
    return;
  }
  Value x = ctx.operand(0);
  if (!x)
    return;
  SmallVector<int64_t> shape(type.getShape());
  shape[*axis] = k;
  // The result types are computed here (k and axis are checked above), as
  // the op has two results.
  auto op = nn::TopKOp::create(
      ctx.builder(), ctx.getLoc(), type.clone(shape),
      RankedTensorType::get(shape, IntegerType::get(ctx.getContext(), 64)), x,
      ctx.i64(*axis), ctx.i64(k), ctx.boolean(largest));
  ctx.setOutput(0, op.getValues());
  ctx.setOutput(1, op.getIndices());
}

//===----------------------------------------------------------------------===//
// Trilu, EyeLike
//===----------------------------------------------------------------------===//

/// Trilu: folded when the input and `k` are constants, else `nn.trilu`
/// (`k` may be computed at run time; absent, it is 0).
static void convertTrilu(NodeContext &ctx) {
  if (!ctx.requireInputs(1))
    return;
  RankedTensorType type = ctx.inputType(0);
  if (!type)
    return;
  if (type.getRank() < 2) {
    ctx.fail("input must have rank >= 2");
    return;
  }
  bool upper = ctx.intAttr("upper", 1) != 0;
  if (ctx.failed())
    return;
  const HostTensor *kConstant = nullptr;
  if (ctx.hasInput(1)) {
    RankedTensorType kType = ctx.inputType(1, "k");
    if (!kType)
      return;
    if (kType.getNumElements() != 1 || !kType.getElementType().isInteger(64)) {
      ctx.fail("input 'k' must be an int64 scalar");
      return;
    }
    kConstant = ctx.constantInput(1);
  }
  const HostTensor *input = ctx.constantInput(0);
  if (input && (kConstant || !ctx.hasInput(1))) {
    ctx.setFolded(
        foldTrilu(*input, kConstant ? kConstant->getInt(0) : 0, upper));
    return;
  }
  Value x = ctx.operand(0);
  Value k;
  if (!ctx.hasInput(1)) {
    k = scalarConstant(ctx, IntegerType::get(ctx.getContext(), 64), 0.0);
  } else {
    k = ctx.operand(1, "k");
    // A one-element [1] tensor becomes the scalar the op takes.
    if (k && cast<RankedTensorType>(k.getType()).getRank() != 0)
      k = ctx.createValue<nn::ReshapeOp>(k, ctx.i64s({}));
  }
  if (x && k)
    ctx.setOutput(0, ctx.createValue<nn::TriluOp>(x, k, ctx.boolean(upper)));
}

/// EyeLike: a constant (only the input's shape matters).
static void convertEyeLike(NodeContext &ctx) {
  if (!ctx.requireInputs(1))
    return;
  ImportedValue *in = ctx.input(0);
  if (!in) {
    ctx.fail("missing input");
    return;
  }
  if (in->type.getRank() != 2) {
    ctx.fail("input must be 2-D");
    return;
  }
  int64_t dtype = ctx.attr("dtype") ? ctx.intAttr("dtype", 0) : in->dtype;
  int64_t k = ctx.intAttr("k", 0);
  if (ctx.failed())
    return;
  if (dtype < 0 || dtype > INT32_MAX || !isSupportedDType(int32_t(dtype)) ||
      !getElementType(ctx.getContext(), int32_t(dtype))) {
    ctx.unsupported("output type " +
                    dtypeName(int32_t(std::clamp<int64_t>(dtype, INT32_MIN,
                                                          INT32_MAX))));
    return;
  }
  int64_t rows = in->type.getDimSize(0), cols = in->type.getDimSize(1);
  if (!ctx.check(ctx.budget().fits(rows * cols)))
    return;
  HostTensor eye = HostTensor::zeros(int32_t(dtype), {rows, cols});
  for (int64_t i = 0; i < rows; ++i) {
    int64_t j = i + k;
    if (k > -kMaxDim && k < kMaxDim && j >= 0 && j < cols)
      eye.set(i * cols + j, 1.0);
  }
  ctx.setOutput(0, std::move(eye));
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

void onnx_import::registerMathOps(OpTable &table) {
  // Schema versions from ONNX's Changelog.md.
  using O = Operand;
  table["Sin"] = {convertMathUnary<nn::SinOp, O::Float>, {7}};
  table["Cos"] = {convertMathUnary<nn::CosOp, O::Float>, {7}};
  table["Tan"] = {convertMathUnary<nn::TanOp, O::Float>, {7}};
  table["Asin"] = {convertMathUnary<nn::AsinOp, O::Float>, {7}};
  table["Acos"] = {convertMathUnary<nn::AcosOp, O::Float>, {7}};
  table["Atan"] = {convertMathUnary<nn::AtanOp, O::Float>, {7}};
  table["Sinh"] = {convertMathUnary<nn::SinhOp, O::Float>, {9}};
  table["Cosh"] = {convertMathUnary<nn::CoshOp, O::Float>, {9}};
  table["Asinh"] = {convertMathUnary<nn::AsinhOp, O::Float>, {9}};
  table["Acosh"] = {convertMathUnary<nn::AcoshOp, O::Float>, {9}};
  table["Atanh"] = {convertMathUnary<nn::AtanhOp, O::Float>, {9}};
  table["Reciprocal"] = {
      convertMathUnary<nn::ReciprocalOp, O::Float, UnaryKind::Reciprocal>,
      {1, 6, 13}};
  table["Floor"] = {convertMathUnary<nn::FloorOp, O::Float, UnaryKind::Floor>,
                    {1, 6, 13}};
  table["Ceil"] = {convertMathUnary<nn::CeilOp, O::Float, UnaryKind::Ceil>,
                   {1, 6, 13}};
  table["Round"] = {convertMathUnary<nn::RoundOp, O::Float>, {11}};
  table["Abs"] = {convertMathUnary<nn::AbsOp, O::Numeric, UnaryKind::Abs>,
                  {1, 6, 13}};
  table["Sign"] = {convertMathUnary<nn::SignOp, O::Numeric>, {9, 13}};
  table["IsNaN"] = {convertMathUnary<nn::IsNaNOp, O::Float>, {9, 13}};
  table["IsInf"] = {convertIsInf, {10}};
  table["Not"] = {convertMathUnary<nn::NotOp, O::Bool, UnaryKind::Not>, {1}};
  table["CastLike"] = {convertCastLike, {15}};

  table["Softplus"] = {convertMathUnary<nn::SoftplusOp, O::Float>, {1}};
  table["Softsign"] = {convertMathUnary<nn::SoftsignOp, O::Float>, {1}};
  table["HardSwish"] = {convertMathUnary<nn::HardSwishOp, O::Float>, {14}};
  // Before opset 6 Elu/Selu/HardSigmoid had `consumed_inputs` (ignored).
  table["Elu"] = {convertElu, {1, 6}};
  table["Selu"] = {convertSelu, {1, 6}};
  table["Celu"] = {convertCelu, {12}};
  table["HardSigmoid"] = {convertHardSigmoid, {1, 6}};
  table["ThresholdedRelu"] = {convertThresholdedRelu, {10}};
  table["Shrink"] = {convertShrink, {9}};
  // Before opset 6 PRelu had `consumed_inputs` (ignored).
  table["PRelu"] = {convertPRelu, {1, 6, 7, 9, 16}};
  table["Hardmax"] = {convertHardmax, {1, 11, 13}};

  table["ReduceL1"] = {convertCompositeReduce<Composite::L1>, {1, 11, 13, 18}};
  table["ReduceL2"] = {convertCompositeReduce<Composite::L2>, {1, 11, 13, 18}};
  table["ReduceSumSquare"] = {convertCompositeReduce<Composite::SumSquare>,
                              {1, 11, 13, 18}};
  table["ReduceLogSum"] = {convertCompositeReduce<Composite::LogSum>,
                           {1, 11, 13, 18}};
  table["ReduceLogSumExp"] = {convertCompositeReduce<Composite::LogSumExp>,
                              {1, 11, 13, 18}};
  table["ArgMax"] = {convertArgReduce<nn::ArgMaxOp>, {1, 11, 12, 13}};
  table["ArgMin"] = {convertArgReduce<nn::ArgMinOp>, {1, 11, 12, 13}};
  table["CumSum"] = {convertCumSum, {11, 14}};
  table["TopK"] = {convertTopK, {1, 10, 11}};
  table["Trilu"] = {convertTrilu, {14}};
  table["EyeLike"] = {convertEyeLike, {9}};
}
