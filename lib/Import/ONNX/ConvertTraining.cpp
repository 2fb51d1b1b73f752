//===- ConvertTraining.cpp - ai.onnx.preview.training optimizers ----------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The optimizer ops of ONNX's `ai.onnx.preview.training` domain (opset 1):
// Adagrad, Momentum and Adam. Each updates n tensors at once; its inputs are
// R (learning rate, a float scalar), T (update count, an int64 scalar), then
// n tensors X, n gradients G and n (Adagrad, Momentum) or 2n (Adam)
// accumulators; its outputs are the n new X then the new accumulators. The
// update rules are ONNX's (Operators.md), composed of nn ops that all have
// derivative rules and lowerings; R and T may be run-time values:
//
//   Adagrad:  r = R / (1 + T * decay_factor)
//             g = norm_coefficient * X + G
//             H' = H + g * g
//             X' = X - r * g / (sqrt(H') + epsilon)
//   Momentum: g = norm_coefficient * X + G
//             b = T > 0 ? beta : 1
//             V' = alpha * V + b * g
//             X' = X - R * V'                   (mode "standard")
//             X' = X - R * (g + alpha * V')     (mode "nesterov")
//   Adam:     g = norm_coefficient * X + G
//             V' = alpha * V + (1 - alpha) * g
//             H' = beta * H + (1 - beta) * g * g
//             r = T > 0 ? R * sqrt(1 - beta^T) / (1 - alpha^T) : R
//             X' = (1 - norm_coefficient_post) * (X - r * V' / (sqrt(H') +
//             epsilon))
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

using namespace mlir;
using namespace pipedream;
using namespace pipedream::onnx_import;

namespace {

/// The values of one optimizer node, checked: R, T and the groups of n
/// tensors that follow them (X, G, then the accumulators).
struct OptimizerOperands {
  Value rate, count;
  /// groups[k][i]: tensor i of group k (0: X, 1: G, 2...: accumulators).
  SmallVector<SmallVector<Value>> groups;
  Type element;
};

/// Reads and checks R, T and `numGroups` groups of tensors; the tensors of
/// one index i must all have X_i's type.
std::optional<OptimizerOperands> readOperands(NodeContext &ctx,
                                              unsigned numGroups,
                                              ArrayRef<StringRef> groupNames) {
  size_t inputs = ctx.numInputs();
  if (inputs < 2 + numGroups || (inputs - 2) % numGroups != 0) {
    ctx.fail("expected R, T and " + Twine(numGroups) +
             " groups of n tensors (" + Twine(2 + numGroups) + ", " +
             Twine(2 + 2 * numGroups) + ", ... inputs); got " + Twine(inputs));
    return std::nullopt;
  }
  size_t n = (inputs - 2) / numGroups;
  size_t outputs = ctx.numOutputs();
  if (outputs > n * (numGroups - 1)) {
    ctx.fail("has " + Twine(outputs) + " outputs; at most " +
             Twine(n * (numGroups - 1)) + " (the new X and accumulators of " +
             Twine(n) + " tensors)");
    return std::nullopt;
  }
  OptimizerOperands ops;
  RankedTensorType rType = ctx.inputType(0, "R");
  RankedTensorType tType = ctx.inputType(1, "T");
  if (!rType || !tType)
    return std::nullopt;
  if (rType.getRank() != 0 || !isa<FloatType>(rType.getElementType())) {
    ctx.fail("input 'R' must be a float scalar (the learning rate)");
    return std::nullopt;
  }
  if (tType.getRank() != 0 || !tType.getElementType().isInteger(64)) {
    ctx.fail("input 'T' must be an int64 scalar (the update count)");
    return std::nullopt;
  }
  ops.element = rType.getElementType();
  ops.rate = ctx.operand(0, "R");
  ops.count = ctx.operand(1, "T");
  if (!ops.rate || !ops.count)
    return std::nullopt;
  ops.groups.resize(numGroups);
  for (size_t i = 0; i < n; ++i) {
    RankedTensorType xType;
    for (unsigned k = 0; k < numGroups; ++k) {
      size_t index = 2 + k * n + i;
      std::string what = (groupNames[k] + Twine(i + 1)).str();
      RankedTensorType type = ctx.inputType(index, what);
      if (!type)
        return std::nullopt;
      if (k == 0) {
        xType = type;
        if (type.getElementType() != ops.element) {
          ctx.fail("input '" + what + "' must have the element type of 'R'");
          return std::nullopt;
        }
      } else if (type != xType) {
        ctx.fail("input '" + what + "' of shape " +
                 shapeToString(type.getShape()) + " must have the type of '" +
                 groupNames[0] + Twine(i + 1) + "' (" +
                 shapeToString(xType.getShape()) + ")");
        return std::nullopt;
      }
      Value v = ctx.operand(index, what);
      if (!v)
        return std::nullopt;
      ops.groups[k].push_back(v);
    }
  }
  return ops;
}

/// Small builder of the update expressions (null propagates: the first
/// failure is already reported on the node).
struct Expr {
  NodeContext &ctx;
  Type element;

  Value scalar(double v) {
    auto type = RankedTensorType::get({}, element);
    return nn::ConstantOp::create(
               ctx.builder(), ctx.getLoc(),
               DenseElementsAttr::get(type, FloatAttr::get(element, v)))
        .getResult();
  }
  template <typename OpTy> Value bin(Value a, Value b) {
    return a && b ? ctx.createValue<OpTy>(a, b) : Value();
  }
  Value add(Value a, Value b) { return bin<nn::AddOp>(a, b); }
  Value sub(Value a, Value b) { return bin<nn::SubOp>(a, b); }
  Value mul(Value a, Value b) { return bin<nn::MulOp>(a, b); }
  Value div(Value a, Value b) { return bin<nn::DivOp>(a, b); }
  Value pow(Value a, Value b) { return bin<nn::PowOp>(a, b); }
  Value sqrt(Value a) { return a ? ctx.createValue<nn::SqrtOp>(a) : Value(); }
  Value where(Value c, Value a, Value b) {
    return c && a && b ? ctx.createValue<nn::WhereOp>(c, a, b) : Value();
  }
  /// T as a float of the optimizer's element type.
  Value countAsFloat(Value count) {
    return ctx.createValue<nn::CastOp>(count, TypeAttr::get(element));
  }
  /// T > 0 (a bool scalar).
  Value countPositive(Value count) {
    auto i64 = IntegerType::get(ctx.getContext(), 64);
    auto type = RankedTensorType::get({}, i64);
    Value zero = nn::ConstantOp::create(
                     ctx.builder(), ctx.getLoc(),
                     DenseElementsAttr::get(type, IntegerAttr::get(i64, 0)))
                     .getResult();
    return ctx.createValue<nn::GreaterOp>(count, zero);
  }
  /// norm_coefficient * X + G (G itself when the coefficient is 0).
  Value regularized(double normCoefficient, Value x, Value g) {
    if (normCoefficient == 0.0)
      return g;
    return add(mul(scalar(normCoefficient), x), g);
  }
};

/// Computes every tensor's update with `update` (given X_i, G_i and the
/// accumulators of tensor i; returning X_i' and the new accumulators, in
/// input order) and sets the outputs: the n new X, then each accumulator
/// group's n new tensors.
void applyPerTensor(
    NodeContext &ctx, const OptimizerOperands &ops,
    llvm::function_ref<SmallVector<Value>(ArrayRef<Value>)> update) {
  size_t numGroups = ops.groups.size();
  size_t n = ops.groups[0].size();
  SmallVector<SmallVector<Value>> out(numGroups - 1);
  for (size_t i = 0; i < n; ++i) {
    SmallVector<Value> tensors;
    for (const SmallVector<Value> &group : ops.groups)
      tensors.push_back(group[i]);
    SmallVector<Value> results = update(tensors);
    if (results.size() != numGroups - 1 ||
        llvm::any_of(results, [](Value v) { return !v; }))
      return;
    for (size_t k = 0; k < results.size(); ++k)
      out[k].push_back(results[k]);
  }
  size_t index = 0;
  for (const SmallVector<Value> &group : out)
    for (Value v : group) {
      if (index < ctx.numOutputs())
        ctx.setOutput(index, v);
      ++index;
    }
}

void convertAdagrad(NodeContext &ctx) {
  auto ops = readOperands(ctx, 3, {"X", "G", "H"});
  if (!ops)
    return;
  double decay = ctx.floatAttr("decay_factor", 0.0);
  double epsilon = ctx.floatAttr("epsilon", 0.0);
  double norm = ctx.floatAttr("norm_coefficient", 0.0);
  if (ctx.failed())
    return;
  Expr e{ctx, ops->element};
  Value rate = ops->rate;
  if (decay != 0.0)
    rate = e.div(rate, e.add(e.scalar(1.0), e.mul(e.countAsFloat(ops->count),
                                                  e.scalar(decay))));
  applyPerTensor(ctx, *ops, [&](ArrayRef<Value> t) -> SmallVector<Value> {
    Value x = t[0], reg = e.regularized(norm, x, t[1]);
    Value hNew = e.add(t[2], e.mul(reg, reg));
    Value denom = e.add(e.sqrt(hNew), e.scalar(epsilon));
    return {e.sub(x, e.div(e.mul(rate, reg), denom)), hNew};
  });
}

void convertMomentum(NodeContext &ctx) {
  auto ops = readOperands(ctx, 3, {"X", "G", "V"});
  if (!ops)
    return;
  double alpha = ctx.floatAttr("alpha", 0.0);
  double beta = ctx.floatAttr("beta", 0.0);
  double norm = ctx.floatAttr("norm_coefficient", 0.0);
  std::string mode = ctx.stringAttr("mode", "standard");
  if (ctx.failed())
    return;
  if (!ctx.attr("alpha") || !ctx.attr("beta") || !ctx.attr("mode") ||
      !ctx.attr("norm_coefficient")) {
    ctx.fail("attributes 'alpha', 'beta', 'mode' and 'norm_coefficient' are "
             "required");
    return;
  }
  if (mode != "standard" && mode != "nesterov") {
    ctx.fail("attribute 'mode' is '" + mode +
             "'; expected standard or nesterov");
    return;
  }
  Expr e{ctx, ops->element};
  // beta on every update but the first (T == 0), where it is 1.
  Value b = e.where(e.countPositive(ops->count), e.scalar(beta), e.scalar(1.0));
  applyPerTensor(ctx, *ops, [&](ArrayRef<Value> t) -> SmallVector<Value> {
    Value x = t[0], reg = e.regularized(norm, x, t[1]);
    Value vNew = e.add(e.mul(e.scalar(alpha), t[2]), e.mul(b, reg));
    Value step =
        mode == "standard" ? vNew : e.add(reg, e.mul(e.scalar(alpha), vNew));
    return {e.sub(x, e.mul(ops->rate, step)), vNew};
  });
}

void convertAdam(NodeContext &ctx) {
  auto ops = readOperands(ctx, 4, {"X", "G", "V", "H"});
  if (!ops)
    return;
  double alpha = ctx.floatAttr("alpha", 0.9);
  double beta = ctx.floatAttr("beta", 0.999);
  double epsilon = ctx.floatAttr("epsilon", 1e-6);
  double norm = ctx.floatAttr("norm_coefficient", 0.0);
  double normPost = ctx.floatAttr("norm_coefficient_post", 0.0);
  if (ctx.failed())
    return;
  Expr e{ctx, ops->element};
  // Bias correction from the second update on (T > 0).
  Value t = e.countAsFloat(ops->count);
  Value corrected = e.div(
      e.mul(ops->rate, e.sqrt(e.sub(e.scalar(1.0), e.pow(e.scalar(beta), t)))),
      e.sub(e.scalar(1.0), e.pow(e.scalar(alpha), t)));
  Value rate = e.where(e.countPositive(ops->count), corrected, ops->rate);
  applyPerTensor(ctx, *ops, [&](ArrayRef<Value> t) -> SmallVector<Value> {
    Value x = t[0], reg = e.regularized(norm, x, t[1]);
    Value vNew =
        e.add(e.mul(e.scalar(alpha), t[2]), e.mul(e.scalar(1.0 - alpha), reg));
    Value hNew = e.add(e.mul(e.scalar(beta), t[3]),
                       e.mul(e.scalar(1.0 - beta), e.mul(reg, reg)));
    Value denom = e.add(e.sqrt(hNew), e.scalar(epsilon));
    Value xNew = e.sub(x, e.mul(rate, e.div(vNew, denom)));
    if (normPost != 0.0)
      xNew = e.mul(e.scalar(1.0 - normPost), xNew);
    return {xNew, vNew, hNew};
  });
}

} // namespace

void onnx_import::registerTrainingOps(OpTable &table) {
  // Keyed by domain: the nodes' domain is ai.onnx.preview.training, whose
  // only opset so far is 1.
  table[std::string(kPreviewTrainingDomain) + ".Adagrad"] = {convertAdagrad,
                                                             {1}};
  table[std::string(kPreviewTrainingDomain) + ".Momentum"] = {convertMomentum,
                                                              {1}};
  table[std::string(kPreviewTrainingDomain) + ".Adam"] = {convertAdam, {1}};
}
