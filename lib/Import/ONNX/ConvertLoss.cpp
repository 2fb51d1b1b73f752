//===- ConvertLoss.cpp - SoftmaxCrossEntropyLoss, NegativeLogLikelihoodLoss ===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The two loss ops of ONNX (opset 12 and 13 schemas), as compositions of nn
// ops whose derivative rules already exist, so a model with its loss inside
// the graph trains (`pipedream-compile --loss none`). For input x of shape
// [N, C, d1..dk] (log-probabilities; SoftmaxCrossEntropyLoss takes scores
// and applies log_softmax over C first), target t of shape [N, d1..dk],
// optional weight w of shape [C] and ignore_index ii:
//
//   ignored[n,d] = t[n,d] == ii                (all false without ii)
//   safe[n,d]    = ignored ? 0 : t[n,d]        (an index gather can take)
//   picked[n,d]  = sum_c one_hot(safe)[n,d,c] * x[n,c,d]
//   wt[n,d]      = ignored ? 0 : w[safe[n,d]]  (w = 1 without weights)
//   loss[n,d]   = -picked[n,d] * wt[n,d]
//
// reduced by `reduction`: none -> loss; sum -> sum(loss); mean ->
// sum(loss) / sum(wt) (ONNX's weighted mean, like torch's
// F.nll_loss / F.cross_entropy). SoftmaxCrossEntropyLoss's optional second
// output is the log_softmax itself.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

using namespace mlir;
using namespace pipedream;
using namespace pipedream::onnx_import;

namespace {

/// A rank-0 constant of `element` type.
Value scalarConstant(NodeContext &ctx, Type element, double value) {
  auto type = RankedTensorType::get({}, element);
  Attribute attr = isa<FloatType>(element)
                       ? Attribute(FloatAttr::get(element, value))
                       : Attribute(IntegerAttr::get(
                             element, static_cast<int64_t>(value)));
  return nn::ConstantOp::create(ctx.builder(), ctx.getLoc(),
                                DenseElementsAttr::get(type, attr))
      .getResult();
}

/// The loss of log-probabilities `logProb` ([N, C, d...]) against the
/// node's target (input 1) and optional weight (input 2).
Value buildNLL(NodeContext &ctx, Value logProb) {
  auto xType = cast<RankedTensorType>(logProb.getType());
  RankedTensorType tType = ctx.inputType(1, "target");
  if (!tType)
    return Value();
  int64_t rank = xType.getRank();
  if (rank < 2) {
    ctx.fail("input of shape " + shapeToString(xType.getShape()) +
             " has no class axis: expected [N, C, d1..dk]");
    return Value();
  }
  if (!isa<IntegerType>(tType.getElementType())) {
    ctx.fail("target must be an integer tensor of class indices");
    return Value();
  }
  SmallVector<int64_t> expected{xType.getDimSize(0)};
  llvm::append_range(expected, xType.getShape().drop_front(2));
  if (tType.getShape() != ArrayRef<int64_t>(expected)) {
    ctx.fail("target of shape " + shapeToString(tType.getShape()) +
             " does not match input " + shapeToString(xType.getShape()) +
             " (expected " + shapeToString(expected) + ")");
    return Value();
  }
  int64_t classes = xType.getDimSize(1);
  Type element = xType.getElementType();
  std::string reduction = ctx.stringAttr("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean") {
    ctx.fail("attribute 'reduction' is '" + reduction +
             "'; expected none, sum or mean");
    return Value();
  }
  bool hasWeight = ctx.hasInput(2);
  if (hasWeight) {
    RankedTensorType wType = ctx.inputType(2, "weight");
    if (!wType)
      return Value();
    if (wType.getRank() != 1 || wType.getDimSize(0) != classes ||
        wType.getElementType() != element) {
      ctx.fail("weight of type " + shapeToString(wType.getShape()) +
               " must be a 1-D tensor of the input's element type with C = " +
               Twine(classes) + " entries");
      return Value();
    }
  }
  std::optional<int64_t> ignoreIndex;
  if (ctx.attr("ignore_index"))
    ignoreIndex = ctx.intAttr("ignore_index", 0);
  if (ctx.failed())
    return Value();

  // Class weights are a constant of the loss (torch: F.cross_entropy's
  // `weight` tensor), never a parameter, though differentiable.
  if (hasWeight)
    ctx.markFrozenWeight(2);
  Value target = ctx.operand(1, "target");
  Value weight = hasWeight ? ctx.operand(2, "weight") : Value();
  if (!target || (hasWeight && !weight))
    return Value();
  Type indexType = tType.getElementType();
  // Ignored positions and indices a gather can take.
  Value ignored, safe = target;
  if (ignoreIndex) {
    Value ii = scalarConstant(ctx, indexType, double(*ignoreIndex));
    ignored = ctx.createValue<nn::EqualOp>(target, ii);
    if (!ignored)
      return Value();
    safe = ctx.createValue<nn::WhereOp>(
        ignored, scalarConstant(ctx, indexType, 0), target);
  }
  // The class axis last: [N, d..., C].
  Value x = logProb;
  if (rank > 2) {
    SmallVector<int64_t> perm{0};
    for (int64_t i = 2; i < rank; ++i)
      perm.push_back(i);
    perm.push_back(1);
    x = ctx.createValue<nn::TransposeOp>(x, ctx.i64s(perm));
  }
  Value hot = safe ? ctx.createValue<nn::OneHotOp>(
                         safe, ctx.i64(classes), TypeAttr::get(element))
                   : Value();
  Value prod = (hot && x) ? ctx.createValue<nn::MulOp>(hot, x) : Value();
  Value picked = prod ? ctx.createValue<nn::ReduceSumOp>(
                            prod, ctx.i64s({rank - 1}), ctx.boolean(false))
                      : Value();
  if (!picked)
    return Value();
  // Per-element weights (null: all ones).
  Value wt;
  if (weight)
    wt = ctx.createValue<nn::GatherOp>(weight, safe, ctx.i64(0));
  if (ignored) {
    // where(ignored [N, d...], 0, w or 1): the target's shape either way.
    Value zero = scalarConstant(ctx, element, 0.0);
    Value one = scalarConstant(ctx, element, 1.0);
    wt = ctx.createValue<nn::WhereOp>(ignored, zero, wt ? wt : one);
  }
  if ((weight || ignored) && !wt)
    return Value();
  Value loss = wt ? ctx.createValue<nn::MulOp>(picked, wt) : picked;
  loss = loss ? ctx.createValue<nn::NegOp>(loss) : Value();
  if (!loss || reduction == "none")
    return loss;
  SmallVector<int64_t> all;
  for (int64_t i = 0; i < rank - 1; ++i)
    all.push_back(i);
  Value total = ctx.createValue<nn::ReduceSumOp>(loss, ctx.i64s(all),
                                                 ctx.boolean(false));
  if (!total || reduction == "sum")
    return total;
  if (!wt)
    return ctx.createValue<nn::ReduceMeanOp>(loss, ctx.i64s(all),
                                             ctx.boolean(false));
  Value denominator = ctx.createValue<nn::ReduceSumOp>(wt, ctx.i64s(all),
                                                       ctx.boolean(false));
  return denominator ? ctx.createValue<nn::DivOp>(total, denominator)
                     : Value();
}

void convertNegativeLogLikelihoodLoss(NodeContext &ctx) {
  if (!ctx.requireInputs(2))
    return;
  RankedTensorType type = ctx.inputType(0, "input");
  if (!type)
    return;
  if (!isa<FloatType>(type.getElementType())) {
    ctx.fail("input must be a float tensor of log-probabilities");
    return;
  }
  Value x = ctx.operand(0, "input");
  if (!x)
    return;
  if (Value loss = buildNLL(ctx, x))
    ctx.setOutput(0, loss);
}

void convertSoftmaxCrossEntropyLoss(NodeContext &ctx) {
  if (!ctx.requireInputs(2))
    return;
  RankedTensorType type = ctx.inputType(0, "scores");
  if (!type)
    return;
  if (!isa<FloatType>(type.getElementType())) {
    ctx.fail("scores must be a float tensor");
    return;
  }
  if (type.getRank() < 2) {
    ctx.fail("scores of shape " + shapeToString(type.getShape()) +
             " have no class axis: expected [N, C, d1..dk]");
    return;
  }
  Value scores = ctx.operand(0, "scores");
  if (!scores)
    return;
  Value logProb = ctx.createValue<nn::LogSoftmaxOp>(scores, ctx.i64(1));
  if (!logProb)
    return;
  Value loss = buildNLL(ctx, logProb);
  if (!loss)
    return;
  ctx.setOutput(0, loss);
  ctx.setOutput(1, logProb);
}

} // namespace

void onnx_import::registerLossOps(OpTable &table) {
  // Schema versions from ONNX's Changelog.md (13 widened the types).
  table["SoftmaxCrossEntropyLoss"] = {convertSoftmaxCrossEntropyLoss,
                                      {12, 13}};
  table["NegativeLogLikelihoodLoss"] = {convertNegativeLogLikelihoodLoss,
                                        {12, 13}};
}
