//===- Elementwise.cpp - nn elementwise ops to linalg.generic -------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Every elementwise nn op (binary with numpy broadcasting, `where`, unary,
// `cast`) becomes one `linalg.generic` whose indexing maps implement the
// broadcast (a size-1 operand dimension reads index 0) and whose body is
// the scalar arith/math computation. `dropout` is the identity at inference
// and `constant` an `arith.constant`.
//
//===----------------------------------------------------------------------===//

#include "Utils.h"

#include "pipedream/Dialect/NN/IR/NNOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Transforms/DialectConversion.h"

#include <cmath>

using namespace mlir;
namespace nn = pipedream::nn;

namespace pipedream::nn_to_linalg {
namespace {

//===----------------------------------------------------------------------===//
// Scalar bodies, one overload per op
//===----------------------------------------------------------------------===//

/// Converts a float or integer scalar to the float type `to` (signless
/// integers as signed, unsigned ones as unsigned, `i1` as 0/1).
Value toFloat(OpBuilder &b, Location loc, Value v, FloatType to) {
  Type from = v.getType();
  if (from == to)
    return v;
  if (auto fromFloat = dyn_cast<FloatType>(from)) {
    if (fromFloat.getWidth() < to.getWidth())
      return arith::ExtFOp::create(b, loc, to, v);
    if (fromFloat.getWidth() > to.getWidth())
      return arith::TruncFOp::create(b, loc, to, v);
    // Same width, other format (bf16 <-> f16): through f32.
    Value wide = arith::ExtFOp::create(b, loc, b.getF32Type(), v);
    return arith::TruncFOp::create(b, loc, to, wide);
  }
  if (from.isInteger(1) || from.isUnsignedInteger())
    return arith::UIToFPOp::create(b, loc, to, v);
  return arith::SIToFPOp::create(b, loc, to, v);
}

Value compute(nn::AddOp, OpBuilder &b, Location loc, ValueRange args, Type) {
  return createArith<arith::AddFOp, arith::AddIOp>(b, loc, args[0], args[1]);
}

Value compute(nn::SubOp, OpBuilder &b, Location loc, ValueRange args, Type) {
  return createArith<arith::SubFOp, arith::SubIOp>(b, loc, args[0], args[1]);
}

Value compute(nn::MulOp, OpBuilder &b, Location loc, ValueRange args, Type) {
  return createArith<arith::MulFOp, arith::MulIOp>(b, loc, args[0], args[1]);
}

// ONNX integer division truncates toward zero, like C and arith.divsi.
// Unsigned: arith.divui; a zero divisor gives 0 (numpy's result) instead of
// a trap.
Value compute(nn::DivOp, OpBuilder &b, Location loc, ValueRange args,
              Type type) {
  if (type.isUnsignedInteger()) {
    Value zero = createScalar(b, loc, type, 0);
    Value isZero = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                         args[1], zero);
    Value divisor = arith::SelectOp::create(
        b, loc, isZero, createScalar(b, loc, type, 1), args[1]);
    Value quotient = arith::DivUIOp::create(b, loc, args[0], divisor);
    return arith::SelectOp::create(b, loc, isZero, zero, quotient);
  }
  return createArith<arith::DivFOp, arith::DivSIOp>(b, loc, args[0], args[1]);
}

// NOTE: math.powf lowers to llvm.pow (libm pow), which is exact for a
// negative base with an integral exponent; an exp/log expansion is not.
Value compute(nn::PowOp, OpBuilder &b, Location loc, ValueRange args,
              Type resultType) {
  if (auto floatType = dyn_cast<FloatType>(resultType)) {
    Value exponent = toFloat(b, loc, args[1], floatType);
    return math::PowFOp::create(b, loc, args[0], exponent);
  }
  // Integer base: compute in f64 and truncate, as numpy's int power does for
  // in-range results.
  FloatType f64 = b.getF64Type();
  Value base = toFloat(b, loc, args[0], f64);
  Value exponent = toFloat(b, loc, args[1], f64);
  Value power = math::PowFOp::create(b, loc, base, exponent);
  if (resultType.isUnsignedInteger())
    return arith::FPToUIOp::create(b, loc, resultType, power);
  return arith::FPToSIOp::create(b, loc, resultType, power);
}

Value compute(nn::EqualOp, OpBuilder &b, Location loc, ValueRange args, Type) {
  if (isa<FloatType>(args[0].getType()))
    return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, args[0],
                                 args[1]);
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, args[0],
                               args[1]);
}

Value compute(nn::WhereOp, OpBuilder &b, Location loc, ValueRange args, Type) {
  return arith::SelectOp::create(b, loc, args[0], args[1], args[2]);
}

Value compute(nn::SqrtOp, OpBuilder &b, Location loc, ValueRange args, Type) {
  return math::SqrtOp::create(b, loc, args[0]);
}

Value compute(nn::ExpOp, OpBuilder &b, Location loc, ValueRange args, Type) {
  return math::ExpOp::create(b, loc, args[0]);
}

Value compute(nn::LogOp, OpBuilder &b, Location loc, ValueRange args, Type) {
  return math::LogOp::create(b, loc, args[0]);
}

Value compute(nn::TanhOp, OpBuilder &b, Location loc, ValueRange args, Type) {
  return math::TanhOp::create(b, loc, args[0]);
}

Value compute(nn::ErfOp, OpBuilder &b, Location loc, ValueRange args, Type) {
  return math::ErfOp::create(b, loc, args[0]);
}

Value compute(nn::NegOp, OpBuilder &b, Location loc, ValueRange args,
              Type type) {
  if (isa<FloatType>(type))
    return arith::NegFOp::create(b, loc, args[0]);
  return arith::SubIOp::create(b, loc, createScalar(b, loc, type, 0), args[0]);
}

// 1 / (1 + exp(-x)): exp overflows to +inf for very negative x and the
// quotient correctly becomes 0.
Value compute(nn::SigmoidOp, OpBuilder &b, Location loc, ValueRange args,
              Type type) {
  Value one = createScalar(b, loc, type, 1.0);
  Value negated = arith::NegFOp::create(b, loc, args[0]);
  Value exp = math::ExpOp::create(b, loc, negated);
  Value denominator = arith::AddFOp::create(b, loc, one, exp);
  return arith::DivFOp::create(b, loc, one, denominator);
}

// maximumf propagates NaN, like the ONNX reference (np.clip / np.maximum).
Value compute(nn::ReluOp, OpBuilder &b, Location loc, ValueRange args,
              Type type) {
  return arith::MaximumFOp::create(b, loc, args[0],
                                   createScalar(b, loc, type, 0.0));
}

Value compute(nn::LeakyReluOp op, OpBuilder &b, Location loc, ValueRange args,
              Type type) {
  Value x = args[0];
  Value zero = createScalar(b, loc, type, 0.0);
  Value alpha = createScalar(b, loc, type, op.getAlpha().convertToDouble());
  Value scaled = arith::MulFOp::create(b, loc, alpha, x);
  Value positive =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGE, x, zero);
  return arith::SelectOp::create(b, loc, positive, x, scaled);
}

Value compute(nn::GeluOp op, OpBuilder &b, Location loc, ValueRange args,
              Type type) {
  Value x = args[0];
  Value half = createScalar(b, loc, type, 0.5);
  Value one = createScalar(b, loc, type, 1.0);
  Value inner;
  if (op.getApproximate() == "tanh") {
    // tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))
    Value cube =
        arith::MulFOp::create(b, loc, x, arith::MulFOp::create(b, loc, x, x));
    Value poly = arith::AddFOp::create(
        b, loc, x,
        arith::MulFOp::create(b, loc, createScalar(b, loc, type, 0.044715),
                              cube));
    Value scaled = arith::MulFOp::create(
        b, loc, createScalar(b, loc, type, std::sqrt(2.0 / M_PI)), poly);
    inner = math::TanhOp::create(b, loc, scaled);
  } else {
    // erf(x / sqrt(2))
    Value scaled =
        arith::MulFOp::create(b, loc, x, createScalar(b, loc, type, M_SQRT1_2));
    inner = math::ErfOp::create(b, loc, scaled);
  }
  Value halfX = arith::MulFOp::create(b, loc, half, x);
  return arith::MulFOp::create(b, loc, halfX,
                               arith::AddFOp::create(b, loc, one, inner));
}

Value compute(nn::ClipOp op, OpBuilder &b, Location loc, ValueRange args,
              Type type) {
  Value x = args[0];
  if (auto min = op.getMin())
    x = arith::MaximumFOp::create(
        b, loc, x, createScalar(b, loc, type, min->convertToDouble()));
  if (auto max = op.getMax())
    x = arith::MinimumFOp::create(
        b, loc, x, createScalar(b, loc, type, max->convertToDouble()));
  return x;
}

// ONNX Cast: float -> int truncates toward zero, anything -> bool is
// `!= 0` (NaN is true, as numpy's astype(bool)), bool -> number is 0/1;
// a wider integer extends by the source's signedness (numpy's astype:
// int8 -1 -> uint16 65535, uint8 255 -> int16 255).
Value compute(nn::CastOp, OpBuilder &b, Location loc, ValueRange args,
              Type to) {
  Value x = args[0];
  Type from = x.getType();
  if (from == to)
    return x;
  if (auto toFloatType = dyn_cast<FloatType>(to))
    return toFloat(b, loc, x, toFloatType);
  auto toInt = cast<IntegerType>(to);
  if (isa<FloatType>(from)) {
    if (toInt.getWidth() == 1)
      return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, x,
                                   createScalar(b, loc, from, 0.0));
    if (toInt.isUnsigned())
      return arith::FPToUIOp::create(b, loc, to, x);
    return arith::FPToSIOp::create(b, loc, to, x);
  }
  unsigned fromWidth = from.getIntOrFloatBitWidth();
  if (toInt.getWidth() == 1)
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, x,
                                 createScalar(b, loc, from, 0));
  if (fromWidth == 1 || (fromWidth < toInt.getWidth() &&
                         from.isUnsignedInteger()))
    return arith::ExtUIOp::create(b, loc, to, x);
  if (fromWidth < toInt.getWidth())
    return arith::ExtSIOp::create(b, loc, to, x);
  if (fromWidth == toInt.getWidth())
    return x; // int8 <-> uint8: the same bits
  return arith::TruncIOp::create(b, loc, to, x);
}

//===----------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------===//

/// Lowers an elementwise op to a broadcasting `linalg.generic` whose body is
/// the `compute` overload for the op, computing in the result's type.
template <typename OpTy>
using ElementwiseLowering = ElementwiseComputeLowering<OpTy, compute>;

/// `nn.dropout` at inference: the input itself.
struct DropoutLowering : OpConversionPattern<nn::DropoutOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(nn::DropoutOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, adaptor.getInput());
    return success();
  }
};

/// `nn.dropout_mask` at inference: nothing is dropped, all true.
TypedAttr getConstantValue(nn::DropoutMaskOp op, Builder &b) {
  return DenseElementsAttr::get(cast<RankedTensorType>(op.getType()),
                                b.getBoolAttr(true));
}

/// `nn.constant`: its elements attribute (null unless typed).
TypedAttr getConstantValue(nn::ConstantOp op, Builder &) {
  return dyn_cast<TypedAttr>(op.getValue());
}

/// An op whose value is known at compile time -> `arith.constant` of the
/// attribute its getConstantValue overload gives.
template <typename OpTy> struct ConstantLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    TypedAttr value = getConstantValue(op, rewriter);
    if (!value)
      return rewriter.notifyMatchFailure(op, "value is not a typed attribute");
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(op, value);
    return success();
  }
};

} // namespace

void populateElementwisePatterns(RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<
      ElementwiseLowering<nn::AddOp>, ElementwiseLowering<nn::SubOp>,
      ElementwiseLowering<nn::MulOp>, ElementwiseLowering<nn::DivOp>,
      ElementwiseLowering<nn::PowOp>, ElementwiseLowering<nn::EqualOp>,
      ElementwiseLowering<nn::WhereOp>, ElementwiseLowering<nn::SqrtOp>,
      ElementwiseLowering<nn::ExpOp>, ElementwiseLowering<nn::LogOp>,
      ElementwiseLowering<nn::TanhOp>, ElementwiseLowering<nn::ErfOp>,
      ElementwiseLowering<nn::NegOp>, ElementwiseLowering<nn::SigmoidOp>,
      ElementwiseLowering<nn::ReluOp>, ElementwiseLowering<nn::LeakyReluOp>,
      ElementwiseLowering<nn::GeluOp>, ElementwiseLowering<nn::ClipOp>,
      ElementwiseLowering<nn::CastOp>, DropoutLowering,
      ConstantLowering<nn::DropoutMaskOp>, ConstantLowering<nn::ConstantOp>>(
      ctx);
}

} // namespace pipedream::nn_to_linalg
