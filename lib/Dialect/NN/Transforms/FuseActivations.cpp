//===- FuseActivations.cpp - GELU spelled out as nn.gelu ------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// nn-fuse-activations (Passes.td): GELU as PyTorch exports it below opset
// 20, x * (erf(x / sqrt 2) + 1) * 0.5 or its tanh approximation (GPT-2's
// gelu_new), becomes one nn.gelu, whose derivative recomputes from x
// instead of reading saved intermediates.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Dialect/NN/IR/NNOps.h"
#include "pipedream/Dialect/NN/Transforms/Passes.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

namespace pipedream {
namespace nn {
#define GEN_PASS_DEF_FUSEACTIVATIONSPASS
#include "pipedream/Dialect/NN/Transforms/Passes.h.inc"
} // namespace nn
} // namespace pipedream

using namespace mlir;
using namespace pipedream;

namespace {

/// The value of `v` when it is a constant whose elements are all equal
/// (a scalar, a splat or a one-element tensor) and float.
std::optional<double> scalarOf(Value v) {
  ElementsAttr attr;
  if (!matchPattern(v, m_Constant(&attr)) ||
      !isa<FloatType>(attr.getElementType()) || attr.empty())
    return std::nullopt;
  auto values = attr.tryGetValues<APFloat>();
  if (!values)
    return std::nullopt;
  double first = (*values->begin()).convertToDouble();
  for (APFloat value : *values)
    if (value.convertToDouble() != first)
      return std::nullopt;
  return first;
}

/// `v` is a constant `expected` within 1e-6 relative.
bool isScalar(Value v, double expected) {
  std::optional<double> value = scalarOf(v);
  return value && std::fabs(*value - expected) <= 1e-6 * std::fabs(expected);
}

/// The op defining `v` if it is an `OpTy` and `v` has no other user.
template <typename OpTy> OpTy onlyUse(Value v) {
  auto op = v.getDefiningOp<OpTy>();
  return op && v.hasOneUse() ? op : OpTy();
}

/// The operand of the binary `op` other than the one `pred` accepts
/// (either order), or null.
template <typename OpTy, typename Pred> Value otherThan(OpTy op, Pred pred) {
  if (pred(op.getRhs()))
    return op.getLhs();
  if (pred(op.getLhs()))
    return op.getRhs();
  return Value();
}

/// The single-use `OpTy` operand of the binary `op` (null: none) whose
/// other operand is the constant `c`, or null.
template <typename OpTy, typename BinaryOpTy>
OpTy besideScalar(BinaryOpTy op, double c) {
  if (!op)
    return OpTy();
  Value v = otherThan(op, [c](Value s) { return isScalar(s, c); });
  return v ? onlyUse<OpTy>(v) : OpTy();
}

/// `erf(x / sqrt 2) + 1` or `erf(x * (1 / sqrt 2)) + 1` (single-use
/// intermediates): its x, or null.
Value erfPlusOne(Value v) {
  auto erf = besideScalar<nn::ErfOp>(onlyUse<nn::AddOp>(v), 1.0);
  if (!erf)
    return Value();
  Value scaled = erf.getInput();
  if (auto div = onlyUse<nn::DivOp>(scaled))
    return isScalar(div.getRhs(), M_SQRT2) ? div.getLhs() : Value();
  if (auto mul = onlyUse<nn::MulOp>(scaled))
    return otherThan(mul, [](Value c) { return isScalar(c, M_SQRT1_2); });
  return Value();
}

/// `tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)) + 1` (single-use
/// intermediates, x^3 as `nn.pow` by 3): its x, or null.
Value tanhPlusOne(Value v) {
  auto tanh = besideScalar<nn::TanhOp>(onlyUse<nn::AddOp>(v), 1.0);
  auto scale = tanh ? onlyUse<nn::MulOp>(tanh.getInput()) : nn::MulOp();
  auto poly = besideScalar<nn::AddOp>(scale, std::sqrt(2.0 / M_PI));
  if (!poly)
    return Value();
  for (auto [x, term] : {std::pair(poly.getLhs(), poly.getRhs()),
                         std::pair(poly.getRhs(), poly.getLhs())}) {
    auto cube = besideScalar<nn::PowOp>(onlyUse<nn::MulOp>(term), 0.044715);
    if (cube && cube.getLhs() == x && isScalar(cube.getRhs(), 3.0))
      return x;
  }
  return Value();
}

/// The x of `cdf + 1` in either GELU form, and the form's `approximate`
/// ("none": erf, "tanh"); a null x when `v` is neither.
std::pair<Value, StringRef> plusOne(Value v) {
  if (Value x = erfPlusOne(v))
    return {x, "none"};
  if (Value x = tanhPlusOne(v))
    return {x, "tanh"};
  return {Value(), ""};
}

/// x * (cdf + 1) * 0.5, or (0.5 * x) * (cdf + 1), with cdf the erf or the
/// tanh form, rooted at the last multiplication.
struct FuseGelu : OpRewritePattern<nn::MulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(nn::MulOp root,
                                PatternRewriter &rewriter) const override {
    auto [x, approximate] = match(root);
    if (!x || x.getType() != root.getType())
      return failure();
    auto gelu = nn::GeluOp::create(rewriter, root.getLoc(), x,
                                   rewriter.getStringAttr(approximate));
    if (auto name = root->getAttr(nn::NNDialect::kNameAttrName))
      gelu->setAttr(nn::NNDialect::kNameAttrName, name);
    rewriter.replaceOp(root, gelu.getResult());
    return success();
  }

  /// The x of the GELU `root` computes and its form, or a null x.
  static std::pair<Value, StringRef> match(nn::MulOp root) {
    // (x * (cdf + 1)) * 0.5
    if (Value product =
            otherThan(root, [](Value c) { return isScalar(c, 0.5); }))
      if (auto mul = onlyUse<nn::MulOp>(product)) {
        for (auto [a, b] : {std::pair(mul.getLhs(), mul.getRhs()),
                            std::pair(mul.getRhs(), mul.getLhs())})
          if (auto found = plusOne(b); found.first && found.first == a)
            return found;
      }
    // (0.5 * x) * (cdf + 1)
    for (auto [a, b] : {std::pair(root.getLhs(), root.getRhs()),
                        std::pair(root.getRhs(), root.getLhs())}) {
      auto half = onlyUse<nn::MulOp>(a);
      if (!half)
        continue;
      Value x = otherThan(half, [](Value c) { return isScalar(c, 0.5); });
      if (auto found = plusOne(b); x && found.first == x)
        return found;
    }
    return {Value(), ""};
  }
};

struct FuseActivationsPass
    : nn::impl::FuseActivationsPassBase<FuseActivationsPass> {
  void runOnOperation() override {
    if (failed(nn::fuseActivations(getOperation())))
      signalPassFailure();
  }
};

} // namespace

void nn::populateFuseActivationPatterns(RewritePatternSet &patterns) {
  patterns.add<FuseGelu>(patterns.getContext());
}

LogicalResult nn::fuseActivations(Operation *op) {
  RewritePatternSet patterns(op->getContext());
  populateFuseActivationPatterns(patterns);
  GreedyRewriteConfig config;
  // No folding, constant CSE or region simplification of the rest; ops
  // left without users (the replaced chains) are erased.
  config.enableFolding(false)
      .enableConstantCSE(false)
      .setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
  return applyPatternsGreedily(op, std::move(patterns), config);
}
