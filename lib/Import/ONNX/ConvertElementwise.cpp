//===- ConvertElementwise.cpp - elementwise ONNX ops ----------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Arithmetic, comparisons, activations, Cast, Clip, Dropout, Where,
// Constant and Identity. Every op here is evaluated at import when all its
// inputs are constants; the comparison and logic ops that have no nn
// counterpart (Less, Not, ...) are only evaluated, which is what shape
// computations need.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace pipedream;
using namespace pipedream::onnx_import;

/// Reports the first input that is not a constant for an op that is only
/// evaluated at import time. Returns true when all inputs are constants.
static bool requireAllConstant(NodeContext &ctx) {
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    if (ctx.hasInput(i) && !ctx.constantInput(i)) {
      ctx.unsupported("'" + ctx.opType() +
                      "' is only evaluated at import time, and input " +
                      Twine(i) + " is not a constant");
      return false;
    }
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Binary
//===----------------------------------------------------------------------===//

/// Add, Sub, Mul, Div, Pow, Equal: folded or an nn op.
template <BinaryKind Kind, typename OpTy>
static void convertBinary(NodeContext &ctx) {
  if (!ctx.requireInputs(2))
    return;
  if (ctx.allInputsConstant()) {
    std::string error;
    ctx.setFolded(foldBinary(Kind, *ctx.constantInput(0),
                             *ctx.constantInput(1), ctx.budget(), error),
                  error);
    return;
  }
  Value lhs = ctx.operand(0), rhs = ctx.operand(1);
  if (lhs && rhs)
    ctx.setOutput(0, ctx.createValue<OpTy>(lhs, rhs));
}

/// Comparisons and logic without an nn op: evaluated only.
template <BinaryKind Kind>
static void foldBinaryOnly(NodeContext &ctx) {
  if (!ctx.requireInputs(2) || !requireAllConstant(ctx))
    return;
  std::string error;
  ctx.setFolded(foldBinary(Kind, *ctx.constantInput(0), *ctx.constantInput(1),
                           ctx.budget(), error),
                error);
}

static void convertMod(NodeContext &ctx) {
  if (!ctx.requireInputs(2) || !requireAllConstant(ctx))
    return;
  bool fmod = ctx.intAttr("fmod", 0) != 0;
  if (!fmod && ctx.constantInput(0)->isFloat()) {
    ctx.fail("floating-point Mod needs fmod=1");
    return;
  }
  std::string error;
  ctx.setFolded(foldBinary(fmod ? BinaryKind::FMod : BinaryKind::Mod,
                           *ctx.constantInput(0), *ctx.constantInput(1),
                           ctx.budget(), error),
                error);
}

/// Variadic Min / Max: evaluated only.
template <BinaryKind Kind>
static void foldVariadic(NodeContext &ctx) {
  if (!ctx.requireInputs(1) || !requireAllConstant(ctx))
    return;
  HostTensor acc = *ctx.constantInput(0);
  for (size_t i = 1; i < ctx.numInputs(); ++i) {
    const HostTensor *next = ctx.constantInput(i);
    if (!next) {
      ctx.fail("input " + Twine(i) + " is missing");
      return;
    }
    std::string error;
    auto r = foldBinary(Kind, acc, *next, ctx.budget(), error);
    if (!r) {
      ctx.fail(error);
      return;
    }
    acc = std::move(*r);
  }
  ctx.setOutput(0, std::move(acc));
}

static void convertWhere(NodeContext &ctx) {
  if (!ctx.requireInputs(3))
    return;
  if (ctx.allInputsConstant()) {
    std::string error;
    ctx.setFolded(foldWhere(*ctx.constantInput(0), *ctx.constantInput(1),
                            *ctx.constantInput(2), ctx.budget(), error),
                  error);
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
    std::string error;
    ctx.setFolded(foldUnary(Kind, *c, error), error);
    return;
  }
  if (Value x = ctx.operand(0))
    ctx.setOutput(0, ctx.createValue<OpTy>(x));
}

template <UnaryKind Kind>
static void foldUnaryOnly(NodeContext &ctx) {
  if (!ctx.requireInputs(1) || !requireAllConstant(ctx))
    return;
  std::string error;
  ctx.setFolded(foldUnary(Kind, *ctx.constantInput(0), error), error);
}

static void convertLeakyRelu(NodeContext &ctx) {
  if (!ctx.requireInputs(1))
    return;
  double alpha = ctx.floatAttr("alpha", 0.01);
  if (const HostTensor *c = ctx.constantInput(0)) {
    std::string error;
    ctx.setFolded(foldLeakyRelu(*c, alpha, error), error);
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

static void convertClip(NodeContext &ctx) {
  if (!ctx.requireInputs(1))
    return;
  bool ok = true;
  std::optional<double> min = scalarBound(ctx, 1, "min", ok);
  std::optional<double> max = scalarBound(ctx, 2, "max", ok);
  if (!ok)
    return;
  // ONNX: when min > max every element becomes max.
  if (min && max && *min > *max)
    min = max;
  if (const HostTensor *c = ctx.constantInput(0)) {
    std::string error;
    ctx.setFolded(foldClip(*c, min, max, error), error);
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
  int64_t to = ctx.intAttr("to", 0);
  if (ctx.failed())
    return;
  if (to < 0 || to > INT32_MAX || !isSupportedDType(int32_t(to))) {
    ctx.unsupported("cast to " + dtypeName(int32_t(std::clamp<int64_t>(
                                     to, INT32_MIN, INT32_MAX))));
    return;
  }
  if (const HostTensor *c = ctx.constantInput(0)) {
    std::string error;
    ctx.setFolded(foldCast(*c, int32_t(to), error), error);
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
  if (ctx.hasInput(1)) {
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
    if (training->getInt(0) != 0) {
      ctx.unsupported("training_mode=true (export the model in eval mode; "
                      "training is pipedream's job)");
      return;
    }
  }
  if (ctx.outputUsed(1)) {
    ctx.unsupported("the mask output is used");
    return;
  }
  if (!(ratio >= 0.0 && ratio < 1.0)) {
    ctx.fail("ratio " + std::to_string(ratio) + " is not in [0, 1)");
    return;
  }
  int64_t seed = ctx.intAttr("seed", 0);
  if (ratio == 0.0) {
    ctx.setOutputAlias(0, *ctx.input(0));
    return;
  }
  if (Value x = ctx.operand(0))
    ctx.setOutput(0, ctx.createValue<nn::DropoutOp>(x, ctx.f64(ratio),
                                                    ctx.i64(seed)));
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
  table["Add"] = {convertBinary<BinaryKind::Add, nn::AddOp>};
  table["Sub"] = {convertBinary<BinaryKind::Sub, nn::SubOp>};
  table["Mul"] = {convertBinary<BinaryKind::Mul, nn::MulOp>};
  table["Div"] = {convertBinary<BinaryKind::Div, nn::DivOp>};
  table["Pow"] = {convertBinary<BinaryKind::Pow, nn::PowOp>};
  table["Equal"] = {convertBinary<BinaryKind::Equal, nn::EqualOp>};
  table["Where"] = {convertWhere};

  table["Less"] = {foldBinaryOnly<BinaryKind::Less>};
  table["Greater"] = {foldBinaryOnly<BinaryKind::Greater>};
  table["LessOrEqual"] = {foldBinaryOnly<BinaryKind::LessOrEqual>};
  table["GreaterOrEqual"] = {foldBinaryOnly<BinaryKind::GreaterOrEqual>};
  table["And"] = {foldBinaryOnly<BinaryKind::And>};
  table["Or"] = {foldBinaryOnly<BinaryKind::Or>};
  table["Xor"] = {foldBinaryOnly<BinaryKind::Xor>};
  table["Mod"] = {convertMod};
  table["Min"] = {foldVariadic<BinaryKind::Min>};
  table["Max"] = {foldVariadic<BinaryKind::Max>};

  table["Sqrt"] = {convertUnary<UnaryKind::Sqrt, nn::SqrtOp>};
  table["Neg"] = {convertUnary<UnaryKind::Neg, nn::NegOp>};
  table["Exp"] = {convertUnary<UnaryKind::Exp, nn::ExpOp>};
  table["Log"] = {convertUnary<UnaryKind::Log, nn::LogOp>};
  table["Tanh"] = {convertUnary<UnaryKind::Tanh, nn::TanhOp>};
  table["Erf"] = {convertUnary<UnaryKind::Erf, nn::ErfOp>};
  table["Sigmoid"] = {convertUnary<UnaryKind::Sigmoid, nn::SigmoidOp>};
  table["Relu"] = {convertUnary<UnaryKind::Relu, nn::ReluOp>};
  table["LeakyRelu"] = {convertLeakyRelu};
  table["Gelu"] = {convertGelu, 20};
  table["Abs"] = {foldUnaryOnly<UnaryKind::Abs>};
  table["Floor"] = {foldUnaryOnly<UnaryKind::Floor>};
  table["Ceil"] = {foldUnaryOnly<UnaryKind::Ceil>};
  table["Reciprocal"] = {foldUnaryOnly<UnaryKind::Reciprocal>};
  table["Not"] = {foldUnaryOnly<UnaryKind::Not>};

  table["Clip"] = {convertClip};
  table["Cast"] = {convertCast};
  table["Dropout"] = {convertDropout};
  table["Constant"] = {convertConstant};
  table["Identity"] = {convertIdentity};
}
