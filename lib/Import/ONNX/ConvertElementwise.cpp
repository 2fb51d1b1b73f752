//===- ConvertElementwise.cpp - elementwise ONNX ops ----------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Arithmetic, comparisons and logic, variadic Max/Min/Sum/Mean, Mod,
// activations, Cast, Clip, Dropout, Where, Constant and Identity. Every op
// here is evaluated at import when all its inputs are constants (what shape
// computations need) and becomes nn ops otherwise. The other unary math ops
// are in ConvertMath.cpp.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

#include "llvm/ADT/StringSwitch.h"

#include <limits>

using namespace mlir;
using namespace pipedream;
using namespace pipedream::onnx_import;

//===----------------------------------------------------------------------===//
// Binary
//===----------------------------------------------------------------------===//

/// Binary ops before opset 7 broadcast only with `broadcast`=1, and then
/// only B to A's shape, B's dimensions aligned at `axis` (default: A's
/// trailing ones). Returns the shape that makes B numpy-broadcast the same
/// way (B's shape with trailing ones), or std::nullopt after an error.
static std::optional<SmallVector<int64_t>>
legacyBroadcastShape(NodeContext &ctx) {
  ArrayRef<int64_t> a = ctx.input(0)->type.getShape();
  ArrayRef<int64_t> b = ctx.input(1)->type.getShape();
  int64_t rankA = a.size(), rankB = b.size();
  bool broadcast = ctx.intAttr("broadcast", 0) != 0;
  if (ctx.failed())
    return std::nullopt;
  if (!broadcast) {
    if (a != b) {
      ctx.fail("operand shapes " + shapeToString(a) + " and " +
               shapeToString(b) + " differ and 'broadcast' is 0");
      return std::nullopt;
    }
    return SmallVector<int64_t>(b);
  }
  int64_t axis = ctx.intAttr("axis", rankA - rankB);
  if (ctx.failed())
    return std::nullopt;
  if (rankB > rankA || axis < 0 || axis > rankA - rankB) {
    ctx.unsupported("legacy broadcast (opset < 7) of " + shapeToString(b) +
                    " to " + shapeToString(a) +
                    (ctx.attr("axis") ? " at axis " + std::to_string(axis)
                                      : std::string()));
    return std::nullopt;
  }
  for (int64_t i = 0; i < rankB; ++i) {
    if (b[i] != 1 && b[i] != a[axis + i]) {
      ctx.fail("operand shape " + shapeToString(b) +
               " does not broadcast to " + shapeToString(a) + " at axis " +
               Twine(axis));
      return std::nullopt;
    }
  }
  SmallVector<int64_t> shape(b);
  shape.append(rankA - rankB - axis, 1);
  return shape;
}

/// The two operands of a binary op as constants: B reshaped for the
/// legacy (opset < 7) broadcast when `legacyShape` is given.
static std::optional<HostTensor>
legacyConstantRhs(NodeContext &ctx,
                  const std::optional<SmallVector<int64_t>> &legacyShape) {
  const HostTensor &rhs = *ctx.constantInput(1);
  if (!legacyShape || llvm::equal(*legacyShape, rhs.shape))
    return rhs;
  auto reshaped = foldReshape(rhs, *legacyShape);
  if (!reshaped) {
    ctx.check(reshaped.takeError());
    return std::nullopt;
  }
  return std::move(*reshaped);
}

/// Evaluates a binary node whose inputs are both constants (with the
/// legacy-broadcast reshape of the right side, when given).
template <BinaryKind Kind>
static void
foldBinaryNode(NodeContext &ctx,
               const std::optional<SmallVector<int64_t>> &legacyShape) {
  auto rhs = legacyConstantRhs(ctx, legacyShape);
  if (!rhs)
    return;
  ctx.setFolded(foldBinary(Kind, *ctx.constantInput(0), *rhs, ctx.budget()));
}

/// Add, Sub, Mul, Div, Pow, Equal: folded or an nn op.
template <BinaryKind Kind, typename OpTy>
static void convertBinary(NodeContext &ctx) {
  if (!ctx.requireInputs(2))
    return;
  std::optional<SmallVector<int64_t>> legacyShape;
  if (ctx.sinceVersion() < 7 && !(legacyShape = legacyBroadcastShape(ctx)))
    return;
  if (ctx.allInputsConstant()) {
    foldBinaryNode<Kind>(ctx, legacyShape);
    return;
  }
  Value lhs = ctx.operand(0), rhs = ctx.operand(1);
  if (!lhs || !rhs)
    return;
  if (legacyShape &&
      ArrayRef<int64_t>(*legacyShape) != ctx.input(1)->type.getShape())
    rhs = ctx.createValue<nn::ReshapeOp>(rhs, ctx.i64s(*legacyShape));
  if (rhs)
    ctx.setOutput(0, ctx.createValue<OpTy>(lhs, rhs));
}

static void convertMod(NodeContext &ctx) {
  if (!ctx.requireInputs(2))
    return;
  bool fmod = ctx.intAttr("fmod", 0) != 0;
  RankedTensorType type = ctx.inputType(0);
  if (!type || ctx.failed())
    return;
  if (!fmod && isa<FloatType>(type.getElementType())) {
    ctx.fail("floating-point Mod needs fmod=1");
    return;
  }
  if (ctx.allInputsConstant()) {
    ctx.setFolded(foldBinary(fmod ? BinaryKind::FMod : BinaryKind::Mod,
                             *ctx.constantInput(0), *ctx.constantInput(1),
                             ctx.budget()));
    return;
  }
  Value lhs = ctx.operand(0), rhs = ctx.operand(1);
  if (lhs && rhs)
    ctx.setOutput(0, ctx.createValue<nn::ModOp>(lhs, rhs, ctx.boolean(fmod)));
}

/// Variadic Max / Min / Sum (and Mean, `Mean` set): folded when every input
/// is a constant, else a chain of broadcasting binary ops (Mean divides the
/// sum by the input count). Before opset 8 the inputs have equal shapes, a
/// case of broadcasting.
template <BinaryKind Kind, typename OpTy, bool Mean = false>
static void convertVariadic(NodeContext &ctx) {
  if (!ctx.requireInputs(1))
    return;
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    if (!ctx.hasInput(i)) {
      ctx.fail("input " + Twine(i) + " is missing");
      return;
    }
  }
  int64_t count = ctx.numInputs();
  if (Mean && !ctx.inputType(0).getElementType().isFloat()) {
    ctx.fail("Mean needs floating-point inputs");
    return;
  }
  if (ctx.allInputsConstant()) {
    HostTensor acc = *ctx.constantInput(0);
    for (size_t i = 1; i < ctx.numInputs(); ++i) {
      auto r = foldBinary(Kind, acc, *ctx.constantInput(i), ctx.budget());
      if (!r) {
        ctx.check(r.takeError());
        return;
      }
      acc = std::move(*r);
    }
    if (Mean && count > 1) {
      HostTensor n = HostTensor::fromFloats(acc.dtype, {}, {double(count)});
      ctx.setFolded(foldBinary(BinaryKind::Div, acc, n, ctx.budget()));
      return;
    }
    ctx.setOutput(0, std::move(acc));
    return;
  }
  if (count == 1) {
    ctx.setOutputAlias(0, *ctx.input(0));
    return;
  }
  Value acc = ctx.operand(0);
  for (size_t i = 1; acc && i < ctx.numInputs(); ++i) {
    Value next = ctx.operand(i);
    acc = next ? ctx.createValue<OpTy>(acc, next) : Value();
  }
  if (acc && Mean) {
    auto type = cast<RankedTensorType>(acc.getType());
    auto scalarType = RankedTensorType::get({}, type.getElementType());
    Value n = ctx.createValue<nn::ConstantOp>(DenseElementsAttr::get(
        scalarType, FloatAttr::get(type.getElementType(), double(count))));
    acc = n ? ctx.createValue<nn::DivOp>(acc, n) : Value();
  }
  ctx.setOutput(0, acc);
}

static void convertWhere(NodeContext &ctx) {
  if (!ctx.requireInputs(3))
    return;
  if (ctx.allInputsConstant()) {
    ctx.setFolded(foldWhere(*ctx.constantInput(0), *ctx.constantInput(1),
                            *ctx.constantInput(2), ctx.budget()));
    return;
  }
  Value cond = ctx.operand(0), lhs = ctx.operand(1), rhs = ctx.operand(2);
  if (cond && lhs && rhs)
    ctx.setOutput(0, ctx.createValue<nn::WhereOp>(cond, lhs, rhs));
}

//===----------------------------------------------------------------------===//
// Unary
//===----------------------------------------------------------------------===//

template <UnaryKind Kind, typename OpTy>
static void convertUnary(NodeContext &ctx) {
  if (!ctx.requireInputs(1))
    return;
  if (const HostTensor *c = ctx.constantInput(0)) {
    ctx.setFolded(foldUnary(Kind, *c));
    return;
  }
  if (Value x = ctx.operand(0))
    ctx.setOutput(0, ctx.createValue<OpTy>(x));
}

static void convertLeakyRelu(NodeContext &ctx) {
  if (!ctx.requireInputs(1))
    return;
  double alpha = ctx.floatAttr("alpha", 0.01);
  if (const HostTensor *c = ctx.constantInput(0)) {
    ctx.setFolded(foldLeakyRelu(*c, alpha));
    return;
  }
  if (Value x = ctx.operand(0))
    ctx.setOutput(0, ctx.createValue<nn::LeakyReluOp>(x, ctx.f64(alpha)));
}

static void convertGelu(NodeContext &ctx) {
  if (!ctx.requireInputs(1))
    return;
  std::string approximate = ctx.stringAttr("approximate", "none");
  if (approximate != "none" && approximate != "tanh") {
    ctx.fail("attribute 'approximate' must be \"none\" or \"tanh\"");
    return;
  }
  if (Value x = ctx.operand(0))
    ctx.setOutput(0, ctx.createValue<nn::GeluOp>(
                         x, StringAttr::get(ctx.getContext(), approximate)));
}

/// Scalar value of an optional constant bound input (Clip min/max).
static std::optional<double> scalarBound(NodeContext &ctx, size_t i,
                                         StringRef what, bool &ok) {
  if (!ctx.hasInput(i))
    return std::nullopt;
  const HostTensor *t = ctx.requireConstant(i, what);
  if (!t) {
    ok = false;
    return std::nullopt;
  }
  if (t->numElements() != 1) {
    ctx.fail("input '" + what + "' must be a scalar");
    ok = false;
    return std::nullopt;
  }
  return t->getDouble(0);
}

/// Clip of integers (opset 12+): max(x, min), then min(., max), in the
/// input's own element type, so every int64 bound is exact (nn.clip's
/// bounds are f64) and every element is max when min > max, as ONNX says.
static void convertIntegerClip(NodeContext &ctx) {
  static constexpr std::pair<size_t, const char *> kBounds[] = {{1, "min"},
                                                                {2, "max"}};
  bool allConstant = ctx.constantInput(0) != nullptr;
  for (auto [i, what] : kBounds) {
    if (!ctx.hasInput(i))
      continue;
    RankedTensorType type = ctx.inputType(i, what);
    if (!type)
      return;
    if (type.getNumElements() != 1)
      return ctx.fail(llvm::Twine("input '") + what + "' must be a scalar");
    allConstant = allConstant && ctx.constantInput(i);
  }
  if (allConstant) {
    HostTensor y = *ctx.constantInput(0);
    for (auto [i, what] : kBounds) {
      if (!ctx.hasInput(i))
        continue;
      HostTensor bound = *ctx.constantInput(i);
      bound.shape.clear();
      HostResult next = foldBinary(i == 1 ? BinaryKind::Max : BinaryKind::Min,
                                   y, bound, ctx.budget());
      if (!next)
        return ctx.setFolded(std::move(next));
      y = std::move(*next);
    }
    return ctx.setFolded(std::move(y));
  }
  Value y = ctx.operand(0);
  for (auto [i, what] : kBounds) {
    if (!y || !ctx.hasInput(i))
      continue;
    Value bound = ctx.operand(i, what);
    if (bound && cast<RankedTensorType>(bound.getType()).getRank() != 0)
      bound = ctx.createValue<nn::ReshapeOp>(bound, ctx.i64s({}));
    if (!bound)
      return;
    y = i == 1 ? ctx.createValue<nn::MaxOp>(y, bound)
               : ctx.createValue<nn::MinOp>(y, bound);
  }
  ctx.setOutput(0, y);
}

static void convertClip(NodeContext &ctx) {
  if (!ctx.requireInputs(1))
    return;
  if (ctx.sinceVersion() >= 12) {
    RankedTensorType type = ctx.inputType(0, "input");
    if (!type)
      return;
    if (isa<IntegerType>(type.getElementType()))
      return convertIntegerClip(ctx);
  }
  bool ok = true;
  std::optional<double> min, max;
  Value runtimeMin, runtimeMax;
  if (ctx.sinceVersion() < 11) {
    // Attributes before opset 11; from opset 6 they default to the float
    // range (which clamps infinities).
    double limit = std::numeric_limits<float>::max();
    if (ctx.attr("min") || ctx.sinceVersion() >= 6)
      min = ctx.floatAttr("min", -limit);
    if (ctx.attr("max") || ctx.sinceVersion() >= 6)
      max = ctx.floatAttr("max", limit);
    ok = !ctx.failed();
  } else {
    // A bound known at import becomes an attribute of nn.clip; one known
    // only at run time (a graph input) an elementwise max / min.
    auto bound = [&](size_t i, StringRef what, std::optional<double> &out,
                     Value &runtime) {
      if (!ok || !ctx.hasInput(i))
        return;
      if (ctx.constantInput(i) || ctx.isWeightInput(i)) {
        out = scalarBound(ctx, i, what, ok);
        return;
      }
      RankedTensorType type = ctx.inputType(i, what);
      if (!type || type.getNumElements() != 1) {
        if (type)
          ctx.fail("input '" + what + "' must be a scalar");
        ok = false;
        return;
      }
      runtime = ctx.operand(i, what);
      if (runtime && type.getRank() != 0)
        runtime = ctx.createValue<nn::ReshapeOp>(runtime, ctx.i64s({}));
      ok = bool(runtime);
    };
    bound(1, "min", min, runtimeMin);
    bound(2, "max", max, runtimeMax);
  }
  if (!ok)
    return;
  if (runtimeMin || runtimeMax) {
    // Lower bounds first, then upper ones: every element is hi when
    // lo > hi, as ONNX says.
    Value y = ctx.operand(0);
    if (y && min)
      y = ctx.createValue<nn::ClipOp>(y, ctx.f64(*min), FloatAttr());
    if (y && runtimeMin)
      y = ctx.createValue<nn::MaxOp>(y, runtimeMin);
    if (y && max)
      y = ctx.createValue<nn::ClipOp>(y, FloatAttr(), ctx.f64(*max));
    if (y && runtimeMax)
      y = ctx.createValue<nn::MinOp>(y, runtimeMax);
    ctx.setOutput(0, y);
    return;
  }
  // ONNX: when min > max every element becomes max.
  if (min && max && *min > *max)
    min = max;
  if (const HostTensor *c = ctx.constantInput(0)) {
    ctx.setFolded(foldClip(*c, min, max));
    return;
  }
  Value x = ctx.operand(0);
  if (!x)
    return;
  if (!min && !max) {
    ctx.setOutputAlias(0, *ctx.input(0));
    return;
  }
  ctx.setOutput(0, ctx.createValue<nn::ClipOp>(
                       x, min ? ctx.f64(*min) : FloatAttr(),
                       max ? ctx.f64(*max) : FloatAttr()));
}

static void convertCast(NodeContext &ctx) {
  if (!ctx.requireInputs(1))
    return;
  const auto *toAttr = ctx.attr("to");
  if (!toAttr) {
    ctx.fail("attribute 'to' is required");
    return;
  }
  int64_t to;
  if (ctx.sinceVersion() < 6) {
    // Opset 1: the type's name ("FLOAT", "INT64", ...).
    std::string name = ctx.stringAttr("to", "");
    if (ctx.failed())
      return;
    onnx::TensorProto::DataType parsed;
    if (!onnx::TensorProto::DataType_Parse(name, &parsed)) {
      ctx.fail("attribute 'to' names no data type");
      return;
    }
    to = parsed;
  } else {
    to = ctx.intAttr("to", 0);
  }
  if (ctx.failed())
    return;
  if (to < 0 || to > INT32_MAX || !isSupportedDType(int32_t(to)) ||
      !getElementType(ctx.getContext(), int32_t(to))) {
    ctx.unsupported("cast to " + dtypeName(int32_t(std::clamp<int64_t>(
                                     to, INT32_MIN, INT32_MAX))));
    return;
  }
  if (const HostTensor *c = ctx.constantInput(0)) {
    ctx.setFolded(foldCast(*c, int32_t(to)));
    return;
  }
  ImportedValue *in = ctx.input(0);
  Type element = getElementType(ctx.getContext(), int32_t(to));
  if (in->type.getElementType() == element) {
    ctx.setOutputAlias(0, *in);
    return;
  }
  if (Value x = ctx.operand(0))
    ctx.setOutput(0, ctx.createValue<nn::CastOp>(x, TypeAttr::get(element)));
}

static void convertDropout(NodeContext &ctx) {
  if (!ctx.requireInputs(1))
    return;
  double ratio = 0.5;
  if (ctx.sinceVersion() < 12) {
    // Attributes before opset 12. Before opset 7 `is_test` (default 0)
    // selects training mode.
    ratio = ctx.floatAttr("ratio", 0.5);
    if (ctx.sinceVersion() < 7 && ctx.intAttr("is_test", 0) == 0) {
      if (!ctx.failed())
        ctx.unsupported("is_test=0 (training mode; export the model in eval "
                        "mode, training is pipedream's job)");
      return;
    }
    if (ctx.failed())
      return;
  } else if (ctx.hasInput(1)) {
    const HostTensor *r = ctx.requireConstant(1, "ratio");
    if (!r)
      return;
    if (r->numElements() != 1) {
      ctx.fail("input 'ratio' must be a scalar");
      return;
    }
    ratio = r->getDouble(0);
  }
  if (ctx.hasInput(2)) {
    const HostTensor *training = ctx.requireConstant(2, "training_mode");
    if (!training)
      return;
    if (training->numElements() != 1) {
      ctx.fail("input 'training_mode' must be a scalar");
      return;
    }
    // With ratio 0 training mode is the identity too.
    if (training->getInt(0) != 0 && ratio != 0.0) {
      ctx.unsupported("training_mode=true (export the model in eval mode; "
                      "training is pipedream's job)");
      return;
    }
  }
  if (!(ratio >= 0.0 && ratio < 1.0)) {
    ctx.fail("ratio " + std::to_string(ratio) + " is not in [0, 1)");
    return;
  }
  int64_t seed = ctx.intAttr("seed", 0);
  if (ratio == 0.0) {
    ctx.setOutputAlias(0, *ctx.input(0));
    if (ctx.outputUsed(1)) {
      ArrayRef<int64_t> shape = ctx.input(0)->type.getShape();
      auto n = checkedNumElements(shape);
      ctx.setOutput(1, HostTensor::fromInts(kBool, shape,
                                            std::vector<int64_t>(*n, 1)));
    }
    return;
  }
  Value x = ctx.operand(0);
  Value y = x ? ctx.createValue<nn::DropoutOp>(x, ctx.f64(ratio), ctx.i64(seed))
              : Value();
  if (!y)
    return;
  ctx.setOutput(0, y);
  // The mask: all true at inference (ONNX's eval mode), the drawn mask
  // when pipedream trains the model (nn.dropout_mask).
  if (ctx.outputUsed(1))
    ctx.setOutput(1, ctx.createValue<nn::DropoutMaskOp>(y));
}

//===----------------------------------------------------------------------===//
// Constant, Identity
//===----------------------------------------------------------------------===//

static void convertConstant(NodeContext &ctx) {
  static const char *const kValueAttrs[] = {
      "value",        "value_float",  "value_floats", "value_int",
      "value_ints",   "value_string", "value_strings", "sparse_value"};
  const char *which = nullptr;
  for (const char *name : kValueAttrs) {
    if (ctx.attr(name)) {
      if (which) {
        ctx.fail("has more than one value attribute");
        return;
      }
      which = name;
    }
  }
  if (!which) {
    ctx.fail("has no value attribute");
    return;
  }
  StringRef kind(which);
  if (kind == "value") {
    if (auto t = ctx.tensorAttr("value"))
      ctx.setOutput(0, std::move(*t));
    return;
  }
  if (kind == "value_float") {
    double v = ctx.floatAttr("value_float", 0.0);
    ctx.setOutput(0, HostTensor::fromFloats(kFloat, {}, {v}));
    return;
  }
  if (kind == "value_int") {
    int64_t v = ctx.intAttr("value_int", 0);
    ctx.setOutput(0, HostTensor::fromInts(kInt64, {}, {v}));
    return;
  }
  const onnx::AttributeProto *a = ctx.attr(which);
  if (kind == "value_floats" && (a->type() == onnx::AttributeProto::FLOATS ||
                                 a->type() == onnx::AttributeProto::UNDEFINED)) {
    std::vector<double> v(a->floats().begin(), a->floats().end());
    int64_t n = v.size();
    ctx.setOutput(0, HostTensor::fromFloats(kFloat, {n}, std::move(v)));
    return;
  }
  if (kind == "value_ints") {
    if (auto v = ctx.intsAttr("value_ints")) {
      int64_t n = v->size();
      ctx.setOutput(0, HostTensor::fromInts(
                           kInt64, {n}, std::vector<int64_t>(v->begin(),
                                                             v->end())));
    }
    return;
  }
  if (kind == "value_floats") {
    ctx.fail("attribute 'value_floats' must be a list of floats");
    return;
  }
  ctx.unsupported("'" + kind + "' constants");
}

static void convertIdentity(NodeContext &ctx) {
  if (!ctx.requireInputs(1))
    return;
  ctx.setOutputAlias(0, *ctx.input(0));
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

void onnx_import::registerElementwiseOps(OpTable &table) {
  // Schema versions from ONNX's Changelog.md. Before opset 7 the binary
  // ops broadcast only with the `broadcast`/`axis` attributes; before
  // opset 6 most ops had a `consumed_inputs` attribute, which is ignored.
  table["Add"] = {convertBinary<BinaryKind::Add, nn::AddOp>, {1, 6, 7, 13, 14}};
  table["Sub"] = {convertBinary<BinaryKind::Sub, nn::SubOp>, {1, 6, 7, 13, 14}};
  table["Mul"] = {convertBinary<BinaryKind::Mul, nn::MulOp>, {1, 6, 7, 13, 14}};
  table["Div"] = {convertBinary<BinaryKind::Div, nn::DivOp>, {1, 6, 7, 13, 14}};
  table["Pow"] = {convertBinary<BinaryKind::Pow, nn::PowOp>, {1, 7, 12, 13, 15}};
  table["Equal"] = {convertBinary<BinaryKind::Equal, nn::EqualOp>,
                    {1, 7, 11, 13, 19}};
  table["Where"] = {convertWhere, {9, 16}};

  table["Less"] = {convertBinary<BinaryKind::Less, nn::LessOp>, {1, 7, 9, 13}};
  table["Greater"] = {convertBinary<BinaryKind::Greater, nn::GreaterOp>,
                      {1, 7, 9, 13}};
  table["LessOrEqual"] = {
      convertBinary<BinaryKind::LessOrEqual, nn::LessEqualOp>, {12, 16}};
  table["GreaterOrEqual"] = {
      convertBinary<BinaryKind::GreaterOrEqual, nn::GreaterEqualOp>, {12, 16}};
  table["And"] = {convertBinary<BinaryKind::And, nn::AndOp>, {1, 7}};
  table["Or"] = {convertBinary<BinaryKind::Or, nn::OrOp>, {1, 7}};
  table["Xor"] = {convertBinary<BinaryKind::Xor, nn::XorOp>, {1, 7}};
  table["Mod"] = {convertMod, {10, 13}};
  table["Min"] = {convertVariadic<BinaryKind::Min, nn::MinOp>,
                  {1, 6, 8, 12, 13}};
  table["Max"] = {convertVariadic<BinaryKind::Max, nn::MaxOp>,
                  {1, 6, 8, 12, 13}};
  table["Sum"] = {convertVariadic<BinaryKind::Add, nn::AddOp>, {1, 6, 8, 13}};
  table["Mean"] = {convertVariadic<BinaryKind::Add, nn::AddOp, /*Mean=*/true>,
                   {1, 6, 8, 13}};

  table["Sqrt"] = {convertUnary<UnaryKind::Sqrt, nn::SqrtOp>, {1, 6, 13}};
  table["Neg"] = {convertUnary<UnaryKind::Neg, nn::NegOp>, {1, 6, 13}};
  table["Exp"] = {convertUnary<UnaryKind::Exp, nn::ExpOp>, {1, 6, 13}};
  table["Log"] = {convertUnary<UnaryKind::Log, nn::LogOp>, {1, 6, 13}};
  table["Tanh"] = {convertUnary<UnaryKind::Tanh, nn::TanhOp>, {1, 6, 13}};
  table["Erf"] = {convertUnary<UnaryKind::Erf, nn::ErfOp>, {9, 13}};
  table["Sigmoid"] = {convertUnary<UnaryKind::Sigmoid, nn::SigmoidOp>,
                      {1, 6, 13}};
  table["Relu"] = {convertUnary<UnaryKind::Relu, nn::ReluOp>, {1, 6, 13, 14}};
  table["LeakyRelu"] = {convertLeakyRelu, {1, 6, 16}};
  table["Gelu"] = {convertGelu, {20}};

  table["Clip"] = {convertClip, {1, 6, 11, 12, 13}};
  table["Cast"] = {convertCast, {1, 6, 9, 13, 19, 21}};
  table["Dropout"] = {convertDropout, {1, 6, 7, 10, 12, 13}};
  table["Constant"] = {convertConstant, {1, 9, 11, 12, 13, 19, 21}};
  table["Identity"] = {convertIdentity, {1, 13, 14, 16, 19, 21}};
}
