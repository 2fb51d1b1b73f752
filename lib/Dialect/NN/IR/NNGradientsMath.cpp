//===- NNGradientsMath.cpp - derivative rules of the math ops -------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Vector-Jacobian products of the ops of NNMathOps.td: trigonometric and
// hyperbolic functions, reciprocal, abs, the activations, binary
// max/min/mod/prelu, reduce_min/reduce_prod, cumsum, trilu and top_k. floor, ceil, round
// and sign have a zero derivative (PyTorch's convention). Comparisons,
// logic, is_nan/is_inf and arg_max/arg_min have integer or boolean results,
// so no gradient ever reaches them and they have no rule.
//
//===----------------------------------------------------------------------===//

#include "NNGradients.h"

using namespace mlir;

namespace pipedream::nn::detail {
namespace {

/// `cond ? x : 0`.
Value maskOr0(OpBuilder &b, Location loc, Value cond, Value x) {
  return WhereOp::create(b, loc, cond, x, scalar(b, loc, x, 0.0));
}

//===----------------------------------------------------------------------===//
// Trigonometric and hyperbolic functions
//===----------------------------------------------------------------------===//

/// `1 / sqrt(sign * x^2 + c)`: the derivatives of asin, acos, asinh, acosh.
Value invSqrt(OpBuilder &b, Location loc, Value x, double sign, double c) {
  Value inner = add(b, loc, mul(b, loc, mul(b, loc, x, x), sign),
                    scalar(b, loc, x, c));
  return div(b, loc, scalar(b, loc, x, 1.0), SqrtOp::create(b, loc, inner));
}

Value sinSlope(SinOp op, OpBuilder &b, Location loc) {
  return CosOp::create(b, loc, op.getInput());
}
Value cosSlope(CosOp op, OpBuilder &b, Location loc) {
  return NegOp::create(b, loc, SinOp::create(b, loc, op.getInput()));
}
// 1 + tan^2.
Value tanSlope(TanOp op, OpBuilder &b, Location loc) {
  Value y = op.getOutput();
  return add(b, loc, scalar(b, loc, y, 1.0), mul(b, loc, y, y));
}
Value asinSlope(AsinOp op, OpBuilder &b, Location loc) {
  return invSqrt(b, loc, op.getInput(), -1.0, 1.0);
}
Value acosSlope(AcosOp op, OpBuilder &b, Location loc) {
  return NegOp::create(b, loc, invSqrt(b, loc, op.getInput(), -1.0, 1.0));
}
Value atanSlope(AtanOp op, OpBuilder &b, Location loc) {
  Value x = op.getInput();
  return div(b, loc, scalar(b, loc, x, 1.0),
             add(b, loc, scalar(b, loc, x, 1.0), mul(b, loc, x, x)));
}
Value sinhSlope(SinhOp op, OpBuilder &b, Location loc) {
  return CoshOp::create(b, loc, op.getInput());
}
Value coshSlope(CoshOp op, OpBuilder &b, Location loc) {
  return SinhOp::create(b, loc, op.getInput());
}
Value asinhSlope(AsinhOp op, OpBuilder &b, Location loc) {
  return invSqrt(b, loc, op.getInput(), 1.0, 1.0);
}
Value acoshSlope(AcoshOp op, OpBuilder &b, Location loc) {
  return invSqrt(b, loc, op.getInput(), 1.0, -1.0);
}
Value atanhSlope(AtanhOp op, OpBuilder &b, Location loc) {
  Value x = op.getInput();
  return div(b, loc, scalar(b, loc, x, 1.0),
             sub(b, loc, scalar(b, loc, x, 1.0), mul(b, loc, x, x)));
}

//===----------------------------------------------------------------------===//
// Reciprocal, abs, piecewise-constant ops
//===----------------------------------------------------------------------===//

// d(1/x) = -1/x^2 = -y^2.
Value reciprocalSlope(ReciprocalOp op, OpBuilder &b, Location loc) {
  Value y = op.getOutput();
  return NegOp::create(b, loc, mul(b, loc, y, y));
}

// sign(x) (0 at 0, as torch.abs).
LogicalResult absGrad(AbsOp op, OpBuilder &b, ValueRange grads,
                      SmallVectorImpl<Value> &out) {
  if (appendNullGradsUnlessFloat(op.getInput(), 1, out))
    return success();
  Location loc = op.getLoc();
  out.push_back(mul(b, loc, grads[0], SignOp::create(b, loc, op.getInput())));
  return success();
}

template <typename OpTy>
LogicalResult zeroGrad(OpTy op, OpBuilder &b, ValueRange,
                       SmallVectorImpl<Value> &out) {
  Value x = op->getOperand(0);
  out.push_back(isFloatTensor(x) ? createSplat(b, op.getLoc(), typeOf(x), 0.0)
                                 : Value());
  return success();
}

//===----------------------------------------------------------------------===//
// Activations
//===----------------------------------------------------------------------===//

Value softplusSlope(SoftplusOp op, OpBuilder &b, Location loc) {
  return SigmoidOp::create(b, loc, op.getInput());
}

// 1 / (1 + |x|)^2.
Value softsignSlope(SoftsignOp op, OpBuilder &b, Location loc) {
  Value x = op.getInput();
  Value d = add(b, loc, scalar(b, loc, x, 1.0), AbsOp::create(b, loc, x));
  return div(b, loc, scalar(b, loc, x, 1.0), mul(b, loc, d, d));
}

Value positive(OpBuilder &b, Location loc, Value x) {
  return GreaterOp::create(b, loc, x, scalar(b, loc, x, 0.0));
}

// x > 0: 1; else alpha exp(x) = y + alpha (torch's elu_backward).
Value eluSlope(EluOp op, OpBuilder &b, Location loc) {
  Value x = op.getInput(), y = op.getOutput();
  double alpha = op.getAlpha().convertToDouble();
  return WhereOp::create(b, loc, positive(b, loc, x), scalar(b, loc, x, 1.0),
                         add(b, loc, y, scalar(b, loc, y, alpha)));
}

// x > 0: gamma; else gamma alpha exp(x) = y + gamma alpha.
Value seluSlope(SeluOp op, OpBuilder &b, Location loc) {
  Value x = op.getInput(), y = op.getOutput();
  double alpha = op.getAlpha().convertToDouble();
  double gamma = op.getGamma().convertToDouble();
  return WhereOp::create(b, loc, positive(b, loc, x), scalar(b, loc, x, gamma),
                         add(b, loc, y, scalar(b, loc, y, gamma * alpha)));
}

// x > 0: 1; else exp(x / alpha).
Value celuSlope(CeluOp op, OpBuilder &b, Location loc) {
  Value x = op.getInput();
  double alpha = op.getAlpha().convertToDouble();
  Value e = ExpOp::create(b, loc, mul(b, loc, x, 1.0 / alpha));
  return WhereOp::create(b, loc, positive(b, loc, x), scalar(b, loc, x, 1.0), e);
}

/// `lo < v < hi` elementwise.
Value strictlyInside(OpBuilder &b, Location loc, Value v, double lo,
                     double hi) {
  return AndOp::create(b, loc, GreaterOp::create(b, loc, v, scalar(b, loc, v, lo)),
                       LessOp::create(b, loc, v, scalar(b, loc, v, hi)));
}

// alpha where 0 < alpha x + beta < 1, else 0.
Value hardSigmoidSlope(HardSigmoidOp op, OpBuilder &b, Location loc) {
  Value x = op.getInput();
  double alpha = op.getAlpha().convertToDouble();
  double beta = op.getBeta().convertToDouble();
  Value v = add(b, loc, mul(b, loc, x, alpha), scalar(b, loc, x, beta));
  return maskOr0(b, loc, strictlyInside(b, loc, v, 0.0, 1.0),
                 scalar(b, loc, x, alpha));
}

// y = x h(x), h = clamp(x / 6 + 1/2, 0, 1):
// dy/dx = h(x) + x / 6 where -3 < x < 3.
Value hardSwishSlope(HardSwishOp op, OpBuilder &b, Location loc) {
  Value x = op.getInput();
  Value h = HardSigmoidOp::create(b, loc, x, b.getF64FloatAttr(1.0 / 6.0),
                                  b.getF64FloatAttr(0.5));
  Value inner = maskOr0(b, loc, strictlyInside(b, loc, x, -3.0, 3.0),
                        mul(b, loc, x, 1.0 / 6.0));
  return add(b, loc, h, inner);
}

Value thresholdedReluSlope(ThresholdedReluOp op, OpBuilder &b, Location loc) {
  Value x = op.getInput();
  Value above = GreaterOp::create(
      b, loc, x, scalar(b, loc, x, op.getAlpha().convertToDouble()));
  return maskOr0(b, loc, above, scalar(b, loc, x, 1.0));
}

// 1 where |x| > lambd, else 0.
Value shrinkSlope(ShrinkOp op, OpBuilder &b, Location loc) {
  Value x = op.getInput();
  double lambd = op.getLambd().convertToDouble();
  Value outside = OrOp::create(
      b, loc, LessOp::create(b, loc, x, scalar(b, loc, x, -lambd)),
      GreaterOp::create(b, loc, x, scalar(b, loc, x, lambd)));
  return maskOr0(b, loc, outside, scalar(b, loc, x, 1.0));
}

// y = x < 0 ? s x : x: dx = x < 0 ? g s : g; ds = x < 0 ? g x : 0.
LogicalResult preluGrad(PReluOp op, OpBuilder &b, ValueRange grads,
                        SmallVectorImpl<Value> &out) {
  Location loc = op.getLoc();
  Value x = op.getLhs(), s = op.getRhs(), g = grads[0];
  Value negative = LessOp::create(b, loc, x, scalar(b, loc, x, 0.0));
  Value dx = WhereOp::create(b, loc, negative, mul(b, loc, g, s), g);
  out.push_back(unbroadcast(b, loc, dx, x));
  Value ds = maskOr0(b, loc, negative, mul(b, loc, g, x));
  out.push_back(unbroadcast(b, loc, ds, s));
  return success();
}

//===----------------------------------------------------------------------===//
// Binary max, min, mod
//===----------------------------------------------------------------------===//

// The gradient goes to the operand that wins; ties split it evenly (as
// torch.maximum / torch.minimum).
template <typename OpTy, bool IsMax>
LogicalResult extremumGrad(OpTy op, OpBuilder &b, ValueRange grads,
                           SmallVectorImpl<Value> &out) {
  return binaryFloatGrad(
      op, b, grads, out,
      [&](Location loc, Value x, Value y, Value g) -> std::pair<Value, Value> {
        Value lhsWins = IsMax ? Value(GreaterOp::create(b, loc, x, y))
                              : Value(LessOp::create(b, loc, x, y));
        Value tie = EqualOp::create(b, loc, x, y);
        Value half = mul(b, loc, g, 0.5);
        Value zero = scalar(b, loc, g, 0.0);
        Value dx = WhereOp::create(b, loc, tie, half,
                                   WhereOp::create(b, loc, lhsWins, g, zero));
        Value dy = WhereOp::create(b, loc, tie, half,
                                   WhereOp::create(b, loc, lhsWins, zero, g));
        return {dx, dy};
      });
}

// fmod: z = x - trunc(x / y) y: dx = g, dy = -g trunc(x / y) = -g (x - z) / y.
LogicalResult modGrad(ModOp op, OpBuilder &b, ValueRange grads,
                      SmallVectorImpl<Value> &out) {
  return binaryFloatGrad(
      op, b, grads, out,
      [&](Location loc, Value x, Value y, Value g) -> std::pair<Value, Value> {
        Value quotient = div(b, loc, sub(b, loc, x, op.getOutput()), y);
        return {g, NegOp::create(b, loc, mul(b, loc, g, quotient))};
      });
}

//===----------------------------------------------------------------------===//
// Reductions and scans
//===----------------------------------------------------------------------===//

/// A reduction's result (or its gradient) with the reduced axes kept as
/// size 1, so it broadcasts against the input.
template <typename OpTy>
Value kept(OpTy op, OpBuilder &b, Value v) {
  if (op.getKeepdims())
    return v;
  return UnsqueezeOp::create(b, op.getLoc(), v, op.getAxes());
}

// Like reduce_max: the gradient is shared by the elements equal to the min.
LogicalResult reduceMinGrad(ReduceMinOp op, OpBuilder &b, ValueRange grads,
                            SmallVectorImpl<Value> &out) {
  return reduceExtremumGrad(op, b, grads, out,
                            [&](Value v) { return kept(op, b, v); });
}

// d prod / dx_i = product of the other elements: prod / x_i without zeros;
// with one zero, the product of the non-zero elements at the zero and 0
// elsewhere; with more zeros, 0 everywhere.
LogicalResult reduceProdGrad(ReduceProdOp op, OpBuilder &b, ValueRange grads,
                             SmallVectorImpl<Value> &out) {
  Location loc = op.getLoc();
  Value x = op.getInput();
  if (appendNullGradsUnlessFloat(x, 1, out))
    return success();
  Type element = typeOf(x).getElementType();
  ArrayRef<int64_t> axes = op.getAxes();
  Value zero = scalar(b, loc, x, 0.0), one = scalar(b, loc, x, 1.0);
  Value isZero = EqualOp::create(b, loc, x, zero);
  Value zeros = ReduceSumOp::create(b, loc, CastOp::create(b, loc, isZero, element),
                                    axes, /*keepdims=*/true);
  Value nonZero = WhereOp::create(b, loc, isZero, one, x);
  Value prodNonZero = ReduceProdOp::create(b, loc, nonZero, axes,
                                           /*keepdims=*/true);
  Value noZero = EqualOp::create(b, loc, zeros, zero);
  Value oneZero = EqualOp::create(b, loc, zeros, one);
  Value others = WhereOp::create(
      b, loc, noZero, div(b, loc, prodNonZero, nonZero),
      maskOr0(b, loc, AndOp::create(b, loc, oneZero, isZero), prodNonZero));
  out.push_back(mul(b, loc, kept(op, b, grads[0]), others));
  return success();
}

// The adjoint of a cumulative sum is the cumulative sum the other way.
LogicalResult cumsumGrad(CumSumOp op, OpBuilder &b, ValueRange grads,
                         SmallVectorImpl<Value> &out) {
  if (appendNullGradsUnlessFloat(op.getInput(), 1, out))
    return success();
  out.push_back(CumSumOp::create(b, op.getLoc(), grads[0], op.getAxis(),
                                 op.getExclusive(), !op.getReverse()));
  return success();
}

// trilu is linear: its adjoint keeps the same triangle of the gradient.
LogicalResult triluGrad(TriluOp op, OpBuilder &b, ValueRange grads,
                        SmallVectorImpl<Value> &out) {
  out.push_back(isFloatTensor(op.getInput())
                    ? Value(TriluOp::create(b, op.getLoc(), grads[0], op.getK(),
                                            op.getUpper()))
                    : Value());
  out.push_back(Value());
  return success();
}

// dx[.., i, ..] = sum over p of g[.., p, ..] where indices[.., p, ..] == i:
// one_hot(indices, n) * g summed over the k positions, the one-hot axis
// moved back to `axis`.
LogicalResult topKGrad(TopKOp op, OpBuilder &b, ValueRange grads,
                       SmallVectorImpl<Value> &out) {
  Value x = op.getInput();
  if (!isFloatTensor(x) || !grads[0]) {
    out.push_back(Value());
    return success();
  }
  Location loc = op.getLoc();
  RankedTensorType type = typeOf(x);
  int64_t rank = type.getRank(), axis = op.getAxis();
  Value oneHot = OneHotOp::create(
      b, loc, op.getIndices(), b.getI64IntegerAttr(type.getDimSize(axis)),
      TypeAttr::get(type.getElementType()));
  Value g = UnsqueezeOp::create(b, loc, grads[0], ArrayRef<int64_t>{rank});
  Value dx = ReduceSumOp::create(b, loc, mul(b, loc, oneHot, g),
                                 ArrayRef<int64_t>{axis}, /*keepdims=*/false);
  if (axis != rank - 1) {
    SmallVector<int64_t> perm;
    for (int64_t d = 0; d < rank; ++d)
      perm.push_back(d < axis ? d : d == axis ? rank - 1 : d - 1);
    dx = TransposeOp::create(b, loc, dx, perm);
  }
  out.push_back(dx);
  return success();
}

} // namespace

void attachMathGradientModels(MLIRContext *context) {
  attach<SinOp, slopeGrad<SinOp, sinSlope>>(context);
  attach<CosOp, slopeGrad<CosOp, cosSlope>>(context);
  attach<TanOp, slopeGrad<TanOp, tanSlope>>(context);
  attach<AsinOp, slopeGrad<AsinOp, asinSlope>>(context);
  attach<AcosOp, slopeGrad<AcosOp, acosSlope>>(context);
  attach<AtanOp, slopeGrad<AtanOp, atanSlope>>(context);
  attach<SinhOp, slopeGrad<SinhOp, sinhSlope>>(context);
  attach<CoshOp, slopeGrad<CoshOp, coshSlope>>(context);
  attach<AsinhOp, slopeGrad<AsinhOp, asinhSlope>>(context);
  attach<AcoshOp, slopeGrad<AcoshOp, acoshSlope>>(context);
  attach<AtanhOp, slopeGrad<AtanhOp, atanhSlope>>(context);
  attach<ReciprocalOp, slopeGrad<ReciprocalOp, reciprocalSlope>>(context);
  attach<AbsOp, absGrad>(context);
  attach<FloorOp, zeroGrad<FloorOp>>(context);
  attach<CeilOp, zeroGrad<CeilOp>>(context);
  attach<RoundOp, zeroGrad<RoundOp>>(context);
  attach<SignOp, zeroGrad<SignOp>>(context);
  attach<SoftplusOp, slopeGrad<SoftplusOp, softplusSlope>>(context);
  attach<SoftsignOp, slopeGrad<SoftsignOp, softsignSlope>>(context);
  attach<EluOp, slopeGrad<EluOp, eluSlope>>(context);
  attach<SeluOp, slopeGrad<SeluOp, seluSlope>>(context);
  attach<CeluOp, slopeGrad<CeluOp, celuSlope>>(context);
  attach<HardSigmoidOp, slopeGrad<HardSigmoidOp, hardSigmoidSlope>>(context);
  attach<HardSwishOp, slopeGrad<HardSwishOp, hardSwishSlope>>(context);
  attach<ThresholdedReluOp,
         slopeGrad<ThresholdedReluOp, thresholdedReluSlope>>(context);
  attach<ShrinkOp, slopeGrad<ShrinkOp, shrinkSlope>>(context);
  attach<PReluOp, preluGrad>(context);
  attach<MaxOp, extremumGrad<MaxOp, true>>(context);
  attach<MinOp, extremumGrad<MinOp, false>>(context);
  attach<ModOp, modGrad>(context);
  attach<ReduceMinOp, reduceMinGrad>(context);
  attach<ReduceProdOp, reduceProdGrad>(context);
  attach<CumSumOp, cumsumGrad>(context);
  attach<TriluOp, triluGrad>(context);
  attach<TopKOp, topKGrad>(context);
}

} // namespace pipedream::nn::detail
