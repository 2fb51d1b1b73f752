//===- Math.cpp - nn math, comparison, arg and scan ops to linalg --------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The elementwise ops of NNMathOps.td become one broadcasting
// `linalg.generic` each, with the scalar arith/math computation as body.
// `arg_max`/`arg_min` are one `linalg.generic` reducing over the axis into
// a (value, index) pair; `cumsum` is a `linalg.generic` with an extra
// reduction loop `j` over the axis that adds `input[.., j, ..]` where `j`
// is before (or after, reversed) the output position: quadratic in the axis
// length, but one plain loop nest every target compiles. `trilu` selects
// by comparing `j - i` of the last two loop indices with its scalar `k`.
//
//===----------------------------------------------------------------------===//

#include "Utils.h"

#include "pipedream/Dialect/NN/IR/NNOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
namespace nn = pipedream::nn;

namespace pipedream::nn_to_linalg {
namespace {

//===----------------------------------------------------------------------===//
// Scalar helpers
//===----------------------------------------------------------------------===//

Value cst(OpBuilder &b, Location loc, Type type, double v) {
  return createScalar(b, loc, type, v);
}
Value cmpf(OpBuilder &b, Location loc, arith::CmpFPredicate p, Value x,
           Value y) {
  return arith::CmpFOp::create(b, loc, p, x, y);
}
Value select(OpBuilder &b, Location loc, Value c, Value x, Value y) {
  return arith::SelectOp::create(b, loc, c, x, y);
}
Value mulf(OpBuilder &b, Location loc, Value x, Value y) {
  return arith::MulFOp::create(b, loc, x, y);
}
Value addf(OpBuilder &b, Location loc, Value x, Value y) {
  return arith::AddFOp::create(b, loc, x, y);
}
/// max(lo, min(hi, x)), NaN propagating.
Value clampf(OpBuilder &b, Location loc, Value x, double lo, double hi) {
  Type t = x.getType();
  Value upper = arith::MinimumFOp::create(b, loc, x, cst(b, loc, t, hi));
  return arith::MaximumFOp::create(b, loc, upper, cst(b, loc, t, lo));
}
/// alpha * (exp(x) - 1).
Value scaledExpm1(OpBuilder &b, Location loc, Value x, double alpha) {
  return mulf(b, loc, cst(b, loc, x.getType(), alpha),
              math::ExpM1Op::create(b, loc, x));
}

//===----------------------------------------------------------------------===//
// Scalar bodies, one overload per op
//===----------------------------------------------------------------------===//

template <typename MathOp>
Value unaryMath(OpBuilder &b, Location loc, ValueRange args) {
  return MathOp::create(b, loc, args[0]);
}

#define NN_MATH_UNARY(NNOP, MATHOP)                                            \
  Value compute(nn::NNOP, OpBuilder &b, Location loc, ValueRange args, Type) { \
    return unaryMath<math::MATHOP>(b, loc, args);                              \
  }
NN_MATH_UNARY(SinOp, SinOp)
NN_MATH_UNARY(CosOp, CosOp)
NN_MATH_UNARY(TanOp, TanOp)
NN_MATH_UNARY(AsinOp, AsinOp)
NN_MATH_UNARY(AcosOp, AcosOp)
NN_MATH_UNARY(AtanOp, AtanOp)
NN_MATH_UNARY(SinhOp, SinhOp)
NN_MATH_UNARY(CoshOp, CoshOp)
NN_MATH_UNARY(AsinhOp, AsinhOp)
NN_MATH_UNARY(AcoshOp, AcoshOp)
NN_MATH_UNARY(AtanhOp, AtanhOp)
NN_MATH_UNARY(FloorOp, FloorOp)
NN_MATH_UNARY(CeilOp, CeilOp)
NN_MATH_UNARY(RoundOp, RoundEvenOp)
#undef NN_MATH_UNARY

Value compute(nn::ReciprocalOp, OpBuilder &b, Location loc, ValueRange args,
              Type t) {
  return arith::DivFOp::create(b, loc, cst(b, loc, t, 1.0), args[0]);
}

Value compute(nn::AbsOp, OpBuilder &b, Location loc, ValueRange args, Type t) {
  if (isa<FloatType>(t))
    return math::AbsFOp::create(b, loc, args[0]);
  // x < 0 ? 0 - x : x (not math.absi, which not every pipeline lowers);
  // the most negative value wraps to itself, as in numpy.
  Value x = args[0], zero = cst(b, loc, t, 0);
  Value negative =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, x, zero);
  return select(b, loc, negative, arith::SubIOp::create(b, loc, zero, x), x);
}

// Floats: 1, -1, or the input itself (zeros keep their sign, NaN stays).
Value compute(nn::SignOp, OpBuilder &b, Location loc, ValueRange args,
              Type t) {
  Value x = args[0];
  if (isa<FloatType>(t)) {
    Value zero = cst(b, loc, t, 0.0);
    Value neg = select(b, loc, cmpf(b, loc, arith::CmpFPredicate::OLT, x, zero),
                       cst(b, loc, t, -1.0), x);
    return select(b, loc, cmpf(b, loc, arith::CmpFPredicate::OGT, x, zero),
                  cst(b, loc, t, 1.0), neg);
  }
  Value zero = cst(b, loc, t, 0);
  Value pos = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, x, zero);
  Value neg = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, x, zero);
  if (t.isInteger(1))
    return x;
  return select(b, loc, pos, cst(b, loc, t, 1),
                select(b, loc, neg, cst(b, loc, t, -1), zero));
}

Value compute(nn::IsNaNOp, OpBuilder &b, Location loc, ValueRange args, Type) {
  return cmpf(b, loc, arith::CmpFPredicate::UNO, args[0], args[0]);
}

Value compute(nn::IsInfOp op, OpBuilder &b, Location loc, ValueRange args,
              Type) {
  Value x = args[0];
  auto ft = cast<FloatType>(x.getType());
  auto inf = [&](bool negative) {
    return arith::ConstantOp::create(
        b, loc,
        b.getFloatAttr(ft, APFloat::getInf(ft.getFloatSemantics(), negative)));
  };
  Value result = arith::ConstantOp::create(b, loc, b.getBoolAttr(false));
  if (op.getDetectPositive())
    result = arith::OrIOp::create(
        b, loc, result, cmpf(b, loc, arith::CmpFPredicate::OEQ, x, inf(false)));
  if (op.getDetectNegative())
    result = arith::OrIOp::create(
        b, loc, result, cmpf(b, loc, arith::CmpFPredicate::OEQ, x, inf(true)));
  return result;
}

Value compute(nn::NotOp, OpBuilder &b, Location loc, ValueRange args, Type) {
  return arith::XOrIOp::create(
      b, loc, args[0], arith::ConstantOp::create(b, loc, b.getBoolAttr(true)));
}

// max(x, 0) + log1p(exp(-|x|)): log(1 + exp(x)) without overflow.
Value compute(nn::SoftplusOp, OpBuilder &b, Location loc, ValueRange args,
              Type t) {
  Value x = args[0];
  Value positive = arith::MaximumFOp::create(b, loc, x, cst(b, loc, t, 0.0));
  Value negAbs = arith::NegFOp::create(b, loc, math::AbsFOp::create(b, loc, x));
  Value tail = math::Log1pOp::create(b, loc, math::ExpOp::create(b, loc, negAbs));
  return addf(b, loc, positive, tail);
}

Value compute(nn::SoftsignOp, OpBuilder &b, Location loc, ValueRange args,
              Type t) {
  Value x = args[0];
  Value d = addf(b, loc, cst(b, loc, t, 1.0), math::AbsFOp::create(b, loc, x));
  return arith::DivFOp::create(b, loc, x, d);
}

Value compute(nn::EluOp op, OpBuilder &b, Location loc, ValueRange args,
              Type t) {
  Value x = args[0];
  Value positive = cmpf(b, loc, arith::CmpFPredicate::OGT, x, cst(b, loc, t, 0.0));
  return select(b, loc, positive, x,
                scaledExpm1(b, loc, x, op.getAlpha().convertToDouble()));
}

Value compute(nn::SeluOp op, OpBuilder &b, Location loc, ValueRange args,
              Type t) {
  Value x = args[0];
  double alpha = op.getAlpha().convertToDouble();
  double gamma = op.getGamma().convertToDouble();
  Value positive = cmpf(b, loc, arith::CmpFPredicate::OGT, x, cst(b, loc, t, 0.0));
  return select(b, loc, positive, mulf(b, loc, cst(b, loc, t, gamma), x),
                scaledExpm1(b, loc, x, alpha * gamma));
}

Value compute(nn::CeluOp op, OpBuilder &b, Location loc, ValueRange args,
              Type t) {
  Value x = args[0];
  double alpha = op.getAlpha().convertToDouble();
  Value zero = cst(b, loc, t, 0.0);
  Value scaled = mulf(b, loc, x, cst(b, loc, t, 1.0 / alpha));
  Value negative =
      arith::MinimumFOp::create(b, loc, zero, scaledExpm1(b, loc, scaled, alpha));
  return addf(b, loc, arith::MaximumFOp::create(b, loc, zero, x), negative);
}

Value compute(nn::HardSigmoidOp op, OpBuilder &b, Location loc,
              ValueRange args, Type t) {
  Value v = addf(b, loc,
                 mulf(b, loc, cst(b, loc, t, op.getAlpha().convertToDouble()),
                      args[0]),
                 cst(b, loc, t, op.getBeta().convertToDouble()));
  return clampf(b, loc, v, 0.0, 1.0);
}

Value compute(nn::HardSwishOp, OpBuilder &b, Location loc, ValueRange args,
              Type t) {
  Value x = args[0];
  Value v = addf(b, loc, mulf(b, loc, cst(b, loc, t, 1.0 / 6.0), x),
                 cst(b, loc, t, 0.5));
  return mulf(b, loc, x, clampf(b, loc, v, 0.0, 1.0));
}

Value compute(nn::ThresholdedReluOp op, OpBuilder &b, Location loc,
              ValueRange args, Type t) {
  Value x = args[0];
  Value above = cmpf(b, loc, arith::CmpFPredicate::OGT, x,
                     cst(b, loc, t, op.getAlpha().convertToDouble()));
  return select(b, loc, above, x, cst(b, loc, t, 0.0));
}

Value compute(nn::ShrinkOp op, OpBuilder &b, Location loc, ValueRange args,
              Type t) {
  Value x = args[0];
  double lambd = op.getLambd().convertToDouble();
  Value bias = cst(b, loc, t, op.getBias().convertToDouble());
  Value below = cmpf(b, loc, arith::CmpFPredicate::OLT, x, cst(b, loc, t, -lambd));
  Value above = cmpf(b, loc, arith::CmpFPredicate::OGT, x, cst(b, loc, t, lambd));
  Value high = select(b, loc, above, arith::SubFOp::create(b, loc, x, bias),
                      cst(b, loc, t, 0.0));
  return select(b, loc, below, addf(b, loc, x, bias), high);
}

Value compute(nn::PReluOp, OpBuilder &b, Location loc, ValueRange args,
              Type t) {
  Value x = args[0];
  Value negative = cmpf(b, loc, arith::CmpFPredicate::OLT, x, cst(b, loc, t, 0.0));
  return select(b, loc, negative, mulf(b, loc, args[1], x), x);
}

Value compute(nn::MaxOp, OpBuilder &b, Location loc, ValueRange args, Type) {
  return createMax(b, loc, args[0], args[1]);
}

Value compute(nn::MinOp, OpBuilder &b, Location loc, ValueRange args, Type) {
  return createMin(b, loc, args[0], args[1]);
}

// Unsigned integers: << or the logical >>; a shift by the width or more
// is 0 (numpy), not LLVM's poison.
Value compute(nn::BitShiftOp op, OpBuilder &b, Location loc, ValueRange args,
              Type t) {
  Value x = args[0], y = args[1];
  unsigned width = t.getIntOrFloatBitWidth();
  Value tooFar = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, y,
                                       cst(b, loc, t, double(width)));
  Value zero = cst(b, loc, t, 0);
  Value amount = select(b, loc, tooFar, zero, y);
  Value shifted = op.getLeft()
                      ? Value(arith::ShLIOp::create(b, loc, x, amount))
                      : Value(arith::ShRUIOp::create(b, loc, x, amount));
  return select(b, loc, tooFar, zero, shifted);
}

// Floats: C fmod (arith.remf). Integers: remsi (sign of the dividend), then
// for Python's mod (fmod = false) plus the divisor when the signs differ. A
// zero divisor gives 0 and -1 is replaced by 1 (same remainder, 0), so the
// division never traps on a zero divisor or INT_MIN % -1.
Value compute(nn::ModOp op, OpBuilder &b, Location loc, ValueRange args,
              Type t) {
  Value x = args[0], y = args[1];
  if (isa<FloatType>(t))
    return arith::RemFOp::create(b, loc, x, y);
  Value zero = cst(b, loc, t, 0), one = cst(b, loc, t, 1);
  if (t.isUnsignedInteger()) {
    // No signs: remui (fmod or not), 0 for a zero divisor.
    Value isZero =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, y, zero);
    Value rem =
        arith::RemUIOp::create(b, loc, x, select(b, loc, isZero, one, y));
    return select(b, loc, isZero, zero, rem);
  }
  auto cmp = [&](arith::CmpIPredicate p, Value l, Value r) {
    return arith::CmpIOp::create(b, loc, p, l, r);
  };
  Value unsafe = arith::OrIOp::create(
      b, loc, cmp(arith::CmpIPredicate::eq, y, zero),
      cmp(arith::CmpIPredicate::eq, y, cst(b, loc, t, -1)));
  Value divisor = select(b, loc, unsafe, one, y);
  Value rem = arith::RemSIOp::create(b, loc, x, divisor);
  if (op.getFmod())
    return rem;
  Value signsDiffer = arith::XOrIOp::create(
      b, loc, cmp(arith::CmpIPredicate::slt, rem, zero),
      cmp(arith::CmpIPredicate::slt, divisor, zero));
  Value adjust = arith::AndIOp::create(
      b, loc, cmp(arith::CmpIPredicate::ne, rem, zero), signsDiffer);
  return select(b, loc, adjust, arith::AddIOp::create(b, loc, rem, divisor),
                rem);
}

/// The unsigned form of a signed integer comparison.
arith::CmpIPredicate unsignedPredicate(arith::CmpIPredicate p) {
  switch (p) {
  case arith::CmpIPredicate::slt: return arith::CmpIPredicate::ult;
  case arith::CmpIPredicate::sle: return arith::CmpIPredicate::ule;
  case arith::CmpIPredicate::sgt: return arith::CmpIPredicate::ugt;
  case arith::CmpIPredicate::sge: return arith::CmpIPredicate::uge;
  default: return p;
  }
}

Value compare(OpBuilder &b, Location loc, ValueRange args,
              arith::CmpFPredicate fp, arith::CmpIPredicate ip) {
  if (isa<FloatType>(args[0].getType()))
    return cmpf(b, loc, fp, args[0], args[1]);
  if (ordersUnsigned(args[0].getType()))
    ip = unsignedPredicate(ip);
  return arith::CmpIOp::create(b, loc, ip, args[0], args[1]);
}

Value compute(nn::LessOp, OpBuilder &b, Location loc, ValueRange args, Type) {
  return compare(b, loc, args, arith::CmpFPredicate::OLT,
                 arith::CmpIPredicate::slt);
}
Value compute(nn::LessEqualOp, OpBuilder &b, Location loc, ValueRange args,
              Type) {
  return compare(b, loc, args, arith::CmpFPredicate::OLE,
                 arith::CmpIPredicate::sle);
}
Value compute(nn::GreaterOp, OpBuilder &b, Location loc, ValueRange args,
              Type) {
  return compare(b, loc, args, arith::CmpFPredicate::OGT,
                 arith::CmpIPredicate::sgt);
}
Value compute(nn::GreaterEqualOp, OpBuilder &b, Location loc, ValueRange args,
              Type) {
  return compare(b, loc, args, arith::CmpFPredicate::OGE,
                 arith::CmpIPredicate::sge);
}
Value compute(nn::AndOp, OpBuilder &b, Location loc, ValueRange args, Type) {
  return arith::AndIOp::create(b, loc, args[0], args[1]);
}
Value compute(nn::OrOp, OpBuilder &b, Location loc, ValueRange args, Type) {
  return arith::OrIOp::create(b, loc, args[0], args[1]);
}
Value compute(nn::XorOp, OpBuilder &b, Location loc, ValueRange args, Type) {
  return arith::XOrIOp::create(b, loc, args[0], args[1]);
}

//===----------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------===//

/// The `compute` overload for the op as a broadcasting `linalg.generic`,
/// computing in the operand's type (the result is i1 for predicates).
template <typename OpTy>
using MathElementwiseLowering =
    ElementwiseComputeLowering<OpTy, compute, ComputeType::Operand>;

/// arg_max / arg_min: a (value, index) reduction over the axis. The running
/// value starts at the lowest (highest) value and index 0; an element
/// replaces it when strictly better (or equal, for select_last_index).
template <typename OpTy, bool IsMax>
struct ArgReduceLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = adaptor.getInput();
    auto type = cast<RankedTensorType>(input.getType());
    Type element = type.getElementType();
    int64_t rank = type.getRank(), axis = op.getAxis();
    bool last = op.getSelectLastIndex();
    SmallVector<int64_t> reduced = dropDims(type.getShape(), {axis});
    Type i64 = rewriter.getI64Type();
    Value values = createFilled(
        rewriter, loc, RankedTensorType::get(reduced, element),
        IsMax ? createLowest(rewriter, loc, element)
              : createHighest(rewriter, loc, element));
    Value indices = createFilled(rewriter, loc,
                                 RankedTensorType::get(reduced, i64),
                                 createScalar(rewriter, loc, i64, 0));
    MLIRContext *ctx = rewriter.getContext();
    AffineMap inputMap = AffineMap::getMultiDimIdentityMap(rank, ctx);
    AffineMap outputMap = getDropDimsMap(ctx, rank, {axis});
    SmallVector<utils::IteratorType> iterators(rank,
                                               utils::IteratorType::parallel);
    iterators[axis] = utils::IteratorType::reduction;
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{values.getType(), indices.getType()},
        ValueRange{input}, ValueRange{values, indices},
        ArrayRef<AffineMap>{inputMap, outputMap, outputMap}, iterators,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value x = args[0], best = args[1], bestIndex = args[2];
          // Unsigned integers and bools (false < true) order unsigned.
          Value better = compare(b, l, ValueRange{x, best},
                                 IsMax ? (last ? arith::CmpFPredicate::OGE
                                               : arith::CmpFPredicate::OGT)
                                       : (last ? arith::CmpFPredicate::OLE
                                               : arith::CmpFPredicate::OLT),
                                 IsMax ? (last ? arith::CmpIPredicate::sge
                                               : arith::CmpIPredicate::sgt)
                                       : (last ? arith::CmpIPredicate::sle
                                               : arith::CmpIPredicate::slt));
          Value index = arith::IndexCastOp::create(
              b, l, b.getI64Type(), linalg::IndexOp::create(b, l, axis));
          linalg::YieldOp::create(
              b, l,
              ValueRange{select(b, l, better, x, best),
                         select(b, l, better, index, bestIndex)});
        });
    auto resultType = cast<RankedTensorType>(op.getType());
    rewriter.replaceOp(op, reshapeTo(rewriter, loc, generic.getResult(1),
                                     resultType.getShape()));
    return success();
  }
};

/// The loops of a generic over the input's dimensions plus an innermost
/// reduction loop j over the same range as dimension `axis` (as i):
/// `atI` reads the input at i (the output's map), `atJ` at j.
struct AxisPairLoops {
  AffineMap atI, atJ;
  SmallVector<utils::IteratorType> iterators;
};

AxisPairLoops getAxisPairLoops(MLIRContext *ctx, int64_t rank, int64_t axis) {
  SmallVector<AffineExpr> atJ;
  for (int64_t d = 0; d < rank; ++d)
    atJ.push_back(getAffineDimExpr(d == axis ? rank : d, ctx));
  AxisPairLoops loops;
  loops.atI =
      AffineMap::getMultiDimIdentityMap(rank + 1, ctx).getMajorSubMap(rank);
  loops.atJ = AffineMap::get(rank + 1, 0, atJ, ctx);
  loops.iterators.assign(rank, utils::IteratorType::parallel);
  loops.iterators.push_back(utils::IteratorType::reduction);
  return loops;
}

/// cumsum: out[.., i, ..] = sum over j of input[.., j, ..] where j is in
/// range of i (j <= i; j < i exclusive; j >= i / j > i reversed), with the
/// extra reduction loop j as the innermost one.
struct CumSumLowering : OpConversionPattern<nn::CumSumOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(nn::CumSumOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = adaptor.getInput();
    auto type = cast<RankedTensorType>(input.getType());
    Type element = type.getElementType();
    int64_t rank = type.getRank(), axis = op.getAxis();
    AxisPairLoops loops = getAxisPairLoops(rewriter.getContext(), rank, axis);
    Value init = createFilled(rewriter, loc, type,
                              createScalar(rewriter, loc, element, 0.0));
    arith::CmpIPredicate p =
        op.getReverse()
            ? (op.getExclusive() ? arith::CmpIPredicate::sgt
                                 : arith::CmpIPredicate::sge)
            : (op.getExclusive() ? arith::CmpIPredicate::slt
                                 : arith::CmpIPredicate::sle);
    Value result = buildGeneric(
        rewriter, loc, init, ValueRange{input}, {loops.atJ, loops.atI},
        loops.iterators,
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value i = linalg::IndexOp::create(b, l, axis);
          Value j = linalg::IndexOp::create(b, l, rank);
          Value inRange = arith::CmpIOp::create(b, l, p, j, i);
          Value sum = createArith<arith::AddFOp, arith::AddIOp>(b, l, args[1],
                                                                args[0]);
          return select(b, l, inRange, sum, args[1]);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// trilu: a generic over the result reading the input and the scalar `k`;
/// the element is kept when `j - i` (last two loop indices) compares with
/// `k`, else zero.
struct TriluLowering : OpConversionPattern<nn::TriluOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(nn::TriluOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    int64_t rank = type.getRank();
    MLIRContext *ctx = rewriter.getContext();
    AffineMap identity = AffineMap::getMultiDimIdentityMap(rank, ctx);
    AffineMap scalarMap = AffineMap::get(rank, 0, {}, ctx);
    SmallVector<utils::IteratorType> iterators(rank,
                                               utils::IteratorType::parallel);
    bool upper = op.getUpper();
    Type element = type.getElementType();
    Value result = buildGeneric(
        rewriter, loc, createEmpty(rewriter, loc, type),
        ValueRange{adaptor.getInput(), adaptor.getK()},
        {identity, scalarMap, identity}, iterators,
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Type i64 = b.getI64Type();
          Value i = arith::IndexCastOp::create(
              b, l, i64, linalg::IndexOp::create(b, l, rank - 2));
          Value j = arith::IndexCastOp::create(
              b, l, i64, linalg::IndexOp::create(b, l, rank - 1));
          // j - i cannot overflow (both are dimension indices); comparing
          // it with k needs no arithmetic on k.
          Value diff = arith::SubIOp::create(b, l, j, i);
          Value keep = arith::CmpIOp::create(
              b, l, upper ? arith::CmpIPredicate::sge : arith::CmpIPredicate::sle,
              diff, args[1]);
          return select(b, l, keep, args[0], createScalar(b, l, element, 0.0));
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// top_k in two generics, both with an extra reduction loop over the axis:
/// 1. rank[.., i, ..] = number of j that come before i in the order
///    (better value, or equal value and j < i): a permutation of 0..n-1;
/// 2. values/indices[.., p, ..] = the element (and its index i) whose rank
///    is p, for p < k.
/// NaN is larger than every number and equal to NaN, so the order is total.
struct TopKLowering : OpConversionPattern<nn::TopKOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(nn::TopKOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = adaptor.getInput();
    auto type = cast<RankedTensorType>(input.getType());
    Type element = type.getElementType();
    int64_t rank = type.getRank(), axis = op.getAxis();
    bool largest = op.getLargest();
    Type i64 = rewriter.getI64Type();

    // Loops (d0 .. d{rank-1}, j): the input at d (as i) and at j.
    AxisPairLoops loops = getAxisPairLoops(rewriter.getContext(), rank, axis);
    AffineMap atI = loops.atI, atJMap = loops.atJ;
    bool isFloat = isa<FloatType>(element);

    // Whether (a at index ia) comes strictly before (c at index ic).
    auto before = [&](OpBuilder &b, Location l, Value a, Value c, Value ia,
                      Value ic) -> Value {
      Value better, equal;
      if (isFloat) {
        Value aNan = cmpf(b, l, arith::CmpFPredicate::UNO, a, a);
        Value cNan = cmpf(b, l, arith::CmpFPredicate::UNO, c, c);
        Value notA = arith::XOrIOp::create(
            b, l, aNan, arith::ConstantOp::create(b, l, b.getBoolAttr(true)));
        Value notC = arith::XOrIOp::create(
            b, l, cNan, arith::ConstantOp::create(b, l, b.getBoolAttr(true)));
        // Largest: a > c, or a is NaN and c is not. Smallest: a < c, or c
        // is NaN and a is not.
        better = largest
                     ? arith::OrIOp::create(
                           b, l, cmpf(b, l, arith::CmpFPredicate::OGT, a, c),
                           arith::AndIOp::create(b, l, aNan, notC))
                     : arith::OrIOp::create(
                           b, l, cmpf(b, l, arith::CmpFPredicate::OLT, a, c),
                           arith::AndIOp::create(b, l, cNan, notA));
        equal = arith::OrIOp::create(
            b, l, cmpf(b, l, arith::CmpFPredicate::OEQ, a, c),
            arith::AndIOp::create(b, l, aNan, cNan));
      } else {
        auto p =
            largest ? arith::CmpIPredicate::sgt : arith::CmpIPredicate::slt;
        // Unsigned integers and bools (false < true) order unsigned.
        if (ordersUnsigned(element))
          p = unsignedPredicate(p);
        better = arith::CmpIOp::create(b, l, p, a, c);
        equal = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, a, c);
      }
      Value earlier =
          arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, ia, ic);
      return arith::OrIOp::create(b, l, better,
                                  arith::AndIOp::create(b, l, equal, earlier));
    };

    auto ranksType = RankedTensorType::get(type.getShape(), i64);
    Value zero = createScalar(rewriter, loc, i64, 0);
    Value ranks = buildGeneric(
        rewriter, loc, createFilled(rewriter, loc, ranksType, zero),
        ValueRange{input, input}, {atI, atJMap, atI}, loops.iterators,
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value i = linalg::IndexOp::create(b, l, axis);
          Value j = linalg::IndexOp::create(b, l, rank);
          Value one = createScalar(b, l, b.getI64Type(), 1);
          Value counts = before(b, l, args[1], args[0], j, i);
          return select(b, l, counts,
                        arith::AddIOp::create(b, l, args[2], one), args[2]);
        });

    // Loops (d0 .. d{rank-1} with d{axis} = p < k, i): read input and rank
    // at i, write position p.
    auto resultType = cast<RankedTensorType>(op.getValues().getType());
    auto indicesType = cast<RankedTensorType>(op.getIndices().getType());
    Value values = createFilled(rewriter, loc, resultType,
                                createScalar(rewriter, loc, element, 0.0));
    Value indices = createFilled(rewriter, loc, indicesType, zero);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{resultType, indicesType},
        ValueRange{input, ranks}, ValueRange{values, indices},
        ArrayRef<AffineMap>{atJMap, atJMap, atI, atI}, loops.iterators,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value p = arith::IndexCastOp::create(
              b, l, b.getI64Type(), linalg::IndexOp::create(b, l, axis));
          Value i = arith::IndexCastOp::create(
              b, l, b.getI64Type(), linalg::IndexOp::create(b, l, rank));
          Value hit =
              arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, args[1], p);
          linalg::YieldOp::create(b, l,
                                  ValueRange{select(b, l, hit, args[0], args[2]),
                                             select(b, l, hit, i, args[3])});
        });
    rewriter.replaceOp(op, generic.getResults());
    return success();
  }
};

} // namespace

void populateMathPatterns(RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<
      MathElementwiseLowering<nn::SinOp>, MathElementwiseLowering<nn::CosOp>,
      MathElementwiseLowering<nn::TanOp>, MathElementwiseLowering<nn::AsinOp>,
      MathElementwiseLowering<nn::AcosOp>, MathElementwiseLowering<nn::AtanOp>,
      MathElementwiseLowering<nn::SinhOp>, MathElementwiseLowering<nn::CoshOp>,
      MathElementwiseLowering<nn::AsinhOp>,
      MathElementwiseLowering<nn::AcoshOp>,
      MathElementwiseLowering<nn::AtanhOp>,
      MathElementwiseLowering<nn::ReciprocalOp>,
      MathElementwiseLowering<nn::FloorOp>, MathElementwiseLowering<nn::CeilOp>,
      MathElementwiseLowering<nn::RoundOp>, MathElementwiseLowering<nn::AbsOp>,
      MathElementwiseLowering<nn::SignOp>, MathElementwiseLowering<nn::IsNaNOp>,
      MathElementwiseLowering<nn::IsInfOp>, MathElementwiseLowering<nn::NotOp>,
      MathElementwiseLowering<nn::SoftplusOp>,
      MathElementwiseLowering<nn::SoftsignOp>,
      MathElementwiseLowering<nn::EluOp>, MathElementwiseLowering<nn::SeluOp>,
      MathElementwiseLowering<nn::CeluOp>,
      MathElementwiseLowering<nn::HardSigmoidOp>,
      MathElementwiseLowering<nn::HardSwishOp>,
      MathElementwiseLowering<nn::ThresholdedReluOp>,
      MathElementwiseLowering<nn::ShrinkOp>,
      MathElementwiseLowering<nn::PReluOp>, MathElementwiseLowering<nn::MaxOp>,
      MathElementwiseLowering<nn::MinOp>, MathElementwiseLowering<nn::ModOp>,
      MathElementwiseLowering<nn::BitShiftOp>,
      MathElementwiseLowering<nn::LessOp>,
      MathElementwiseLowering<nn::LessEqualOp>,
      MathElementwiseLowering<nn::GreaterOp>,
      MathElementwiseLowering<nn::GreaterEqualOp>,
      MathElementwiseLowering<nn::AndOp>, MathElementwiseLowering<nn::OrOp>,
      MathElementwiseLowering<nn::XorOp>,
      ArgReduceLowering<nn::ArgMaxOp, true>,
      ArgReduceLowering<nn::ArgMinOp, false>, CumSumLowering, TriluLowering,
      TopKLowering>(ctx);
}

} // namespace pipedream::nn_to_linalg
