//===- NNGradientsElementwise.cpp - derivative rules ------------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Vector-Jacobian products of the elementwise ops (with numpy broadcasting:
// every operand gradient goes through sumToShape), the activations, the
// softmax family, the contractions (matmul, gemm) and layer normalization.
// See NNGradients.h for the contract every rule follows.
//
// The rules reuse the op's own result where the derivative is a function of
// it (exp, tanh, sigmoid, softmax...), so the backward reads one residual
// instead of recomputing the forward.
//
//===----------------------------------------------------------------------===//

#include "NNGradients.h"

#include "pipedream/Dialect/NN/IR/NNInterfaces.h"

#include <cmath>

using namespace mlir;

namespace pipedream::nn::detail {
namespace {

//===----------------------------------------------------------------------===//
// Binary (broadcasting)
//===----------------------------------------------------------------------===//

LogicalResult addGrad(AddOp op, OpBuilder &b, ValueRange grads,
                      SmallVectorImpl<Value> &out) {
  Location loc = op.getLoc();
  out.push_back(unbroadcast(b, loc, grads[0], op.getLhs()));
  out.push_back(unbroadcast(b, loc, grads[0], op.getRhs()));
  return success();
}

LogicalResult subGrad(SubOp op, OpBuilder &b, ValueRange grads,
                      SmallVectorImpl<Value> &out) {
  Location loc = op.getLoc();
  out.push_back(unbroadcast(b, loc, grads[0], op.getLhs()));
  out.push_back(isFloatTensor(op.getRhs())
                    ? unbroadcast(b, loc, NegOp::create(b, loc, grads[0]),
                                  op.getRhs())
                    : Value());
  return success();
}

LogicalResult mulGrad(MulOp op, OpBuilder &b, ValueRange grads,
                      SmallVectorImpl<Value> &out) {
  return binaryFloatGrad(
      op, b, grads, out,
      [&](Location loc, Value x, Value y, Value g) -> std::pair<Value, Value> {
        return {mul(b, loc, g, y), mul(b, loc, g, x)};
      });
}

// z = x / y: dx = g / y, dy = -g * z / y.
LogicalResult divGrad(DivOp op, OpBuilder &b, ValueRange grads,
                      SmallVectorImpl<Value> &out) {
  return binaryFloatGrad(
      op, b, grads, out,
      [&](Location loc, Value x, Value y, Value g) -> std::pair<Value, Value> {
        Value gOverY = DivOp::create(b, loc, g, y);
        return {gOverY,
                NegOp::create(b, loc, mul(b, loc, gOverY, op.getOutput()))};
      });
}

// z = x ^ e: dx = g * e * x^(e - 1); de = g * z * log(x) (defined for
// x > 0, like torch.pow's exponent gradient). An integer exponent has no
// gradient.
LogicalResult powGrad(PowOp op, OpBuilder &b, ValueRange grads,
                      SmallVectorImpl<Value> &out) {
  Location loc = op.getLoc();
  Value g = grads[0], x = op.getLhs(), e = op.getRhs();
  if (appendNullGradsUnlessFloat(x, 2, out))
    return success();
  Type element = typeOf(x).getElementType();
  Value exponent = e;
  if (typeOf(e).getElementType() != element)
    exponent = CastOp::create(b, loc, e, element);
  Value lowered = sub(b, loc, exponent, scalar(b, loc, x, 1.0));
  Value dx = mul(b, loc, mul(b, loc, g, exponent),
                 PowOp::create(b, loc, x, lowered));
  out.push_back(unbroadcast(b, loc, dx, x));
  if (appendNullGradsUnlessFloat(e, 1, out))
    return success();
  Value de = mul(b, loc, mul(b, loc, g, op.getOutput()),
                 LogOp::create(b, loc, x));
  out.push_back(unbroadcast(b, loc, de, e));
  return success();
}

//===----------------------------------------------------------------------===//
// Unary
//===----------------------------------------------------------------------===//

LogicalResult negGrad(NegOp op, OpBuilder &b, ValueRange grads,
                      SmallVectorImpl<Value> &out) {
  out.push_back(isFloatTensor(op.getInput())
                    ? Value(NegOp::create(b, op.getLoc(), grads[0]))
                    : Value());
  return success();
}

// d sqrt(x) = g / (2 sqrt(x)).
LogicalResult sqrtGrad(SqrtOp op, OpBuilder &b, ValueRange grads,
                       SmallVectorImpl<Value> &out) {
  Location loc = op.getLoc();
  out.push_back(DivOp::create(b, loc, mul(b, loc, grads[0], 0.5),
                              op.getOutput()));
  return success();
}

Value expSlope(ExpOp op, OpBuilder &, Location) { return op.getOutput(); }

LogicalResult logGrad(LogOp op, OpBuilder &b, ValueRange grads,
                      SmallVectorImpl<Value> &out) {
  out.push_back(DivOp::create(b, op.getLoc(), grads[0], op.getInput()));
  return success();
}

// d tanh = g * (1 - tanh^2).
Value tanhSlope(TanhOp op, OpBuilder &b, Location loc) {
  Value y = op.getOutput();
  return sub(b, loc, scalar(b, loc, y, 1.0), mul(b, loc, y, y));
}

// d erf = g * 2 / sqrt(pi) * exp(-x^2).
Value erfSlope(ErfOp op, OpBuilder &b, Location loc) {
  Value x = op.getInput();
  Value gauss = ExpOp::create(b, loc, mul(b, loc, mul(b, loc, x, x), -1.0));
  return mul(b, loc, gauss, M_2_SQRTPI);
}

// d sigmoid = g * y * (1 - y).
Value sigmoidSlope(SigmoidOp op, OpBuilder &b, Location loc) {
  Value y = op.getOutput();
  return mul(b, loc, y, sub(b, loc, scalar(b, loc, y, 1.0), y));
}

// The gradient flows where x > 0, i.e. where relu(x) != 0 (torch's
// threshold_backward: none at x = 0).
LogicalResult reluGrad(ReluOp op, OpBuilder &b, ValueRange grads,
                       SmallVectorImpl<Value> &out) {
  Location loc = op.getLoc();
  Value y = op.getOutput();
  Value off = EqualOp::create(b, loc, y, scalar(b, loc, y, 0.0));
  out.push_back(WhereOp::create(b, loc, off, scalar(b, loc, y, 0.0), grads[0]));
  return success();
}

// g where x > 0, alpha * g elsewhere (torch's leaky_relu_backward).
LogicalResult leakyReluGrad(LeakyReluOp op, OpBuilder &b, ValueRange grads,
                            SmallVectorImpl<Value> &out) {
  Location loc = op.getLoc();
  Value x = op.getInput(), g = grads[0];
  Value positive = ReluOp::create(b, loc, x);
  Value off = EqualOp::create(b, loc, positive, scalar(b, loc, x, 0.0));
  Value scaled = mul(b, loc, g, op.getAlpha().convertToDouble());
  out.push_back(WhereOp::create(b, loc, off, scaled, g));
  return success();
}

LogicalResult geluGrad(GeluOp op, OpBuilder &b, ValueRange grads,
                       SmallVectorImpl<Value> &out) {
  Location loc = op.getLoc();
  Value x = op.getInput();
  Value one = scalar(b, loc, x, 1.0);
  Value slope;
  if (op.getApproximate() == "tanh") {
    // y = x/2 (1 + t), t = tanh(k (x + c x^3)):
    // dy/dx = (1 + t)/2 + x/2 (1 - t^2) k (1 + 3 c x^2).
    const double k = std::sqrt(2.0 / M_PI), c = 0.044715;
    Value square = mul(b, loc, x, x);
    Value poly = add(b, loc, x, mul(b, loc, mul(b, loc, square, x), c));
    Value t = TanhOp::create(b, loc, mul(b, loc, poly, k));
    Value cdf = mul(b, loc, add(b, loc, one, t), 0.5);
    Value sech2 = sub(b, loc, one, mul(b, loc, t, t));
    Value inner = add(b, loc, one, mul(b, loc, square, 3.0 * c));
    Value pdf = mul(b, loc, mul(b, loc, sech2, inner), 0.5 * k);
    slope = add(b, loc, cdf, mul(b, loc, x, pdf));
  } else {
    // y = x Phi(x): dy/dx = Phi(x) + x phi(x).
    Value erf = ErfOp::create(b, loc, mul(b, loc, x, M_SQRT1_2));
    Value cdf = mul(b, loc, add(b, loc, one, erf), 0.5);
    Value gauss = ExpOp::create(b, loc, mul(b, loc, mul(b, loc, x, x), -0.5));
    Value pdf = mul(b, loc, gauss, 1.0 / std::sqrt(2.0 * M_PI));
    slope = add(b, loc, cdf, mul(b, loc, x, pdf));
  }
  out.push_back(mul(b, loc, grads[0], slope));
  return success();
}

// The gradient flows where min <= x <= max, i.e. where clip(x) == x (torch's
// clamp_backward).
LogicalResult clipGrad(ClipOp op, OpBuilder &b, ValueRange grads,
                       SmallVectorImpl<Value> &out) {
  Location loc = op.getLoc();
  Value g = grads[0];
  if (!op.getMin() && !op.getMax()) {
    out.push_back(g);
    return success();
  }
  Value inside = EqualOp::create(b, loc, op.getOutput(), op.getInput());
  out.push_back(WhereOp::create(b, loc, inside, g, scalar(b, loc, g, 0.0)));
  return success();
}

//===----------------------------------------------------------------------===//
// Softmax family
//===----------------------------------------------------------------------===//

// dx = y * (g - sum(g * y)).
LogicalResult softmaxGrad(SoftmaxOp op, OpBuilder &b, ValueRange grads,
                          SmallVectorImpl<Value> &out) {
  Location loc = op.getLoc();
  Value g = grads[0], y = op.getOutput();
  int64_t axis = op.getAxis();
  Value dot = ReduceSumOp::create(b, loc, mul(b, loc, g, y), {axis},
                                  /*keepdims=*/true);
  out.push_back(mul(b, loc, y, sub(b, loc, g, dot)));
  return success();
}

// dx = g - softmax(x) * sum(g), softmax(x) = exp(y).
LogicalResult logSoftmaxGrad(LogSoftmaxOp op, OpBuilder &b, ValueRange grads,
                             SmallVectorImpl<Value> &out) {
  Location loc = op.getLoc();
  Value g = grads[0];
  int64_t axis = op.getAxis();
  Value total = ReduceSumOp::create(b, loc, g, {axis}, /*keepdims=*/true);
  Value probs = ExpOp::create(b, loc, op.getOutput());
  out.push_back(sub(b, loc, g, mul(b, loc, probs, total)));
  return success();
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

/// `x` with its last two dimensions swapped (rank >= 2).
Value transposeLast2(OpBuilder &b, Location loc, Value x) {
  int64_t rank = typeOf(x).getRank();
  auto perm = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  std::swap(perm[rank - 2], perm[rank - 1]);
  return TransposeOp::create(b, loc, x, perm);
}

Value reshape(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> shape) {
  if (typeOf(x).getShape() == shape)
    return x;
  return ReshapeOp::create(b, loc, x, shape);
}

// numpy matmul: 1-D operands are promoted to matrices ([K] -> [1, K] on the
// left, [K, 1] on the right) and the promoted dimension dropped from the
// result. On promoted operands A [..., M, K], B [..., K, N]:
// dA = g B^T and dB = A^T g, summed over the batch dimensions broadcasting
// added or stretched.
LogicalResult matmulGrad(MatMulOp op, OpBuilder &b, ValueRange grads,
                         SmallVectorImpl<Value> &out) {
  Location loc = op.getLoc();
  Value lhs = op.getLhs(), rhs = op.getRhs(), g = grads[0];
  RankedTensorType lhsType = typeOf(lhs), rhsType = typeOf(rhs);
  bool lhsVector = lhsType.getRank() == 1, rhsVector = rhsType.getRank() == 1;
  SmallVector<int64_t> lhsShape(lhsType.getShape()),
      rhsShape(rhsType.getShape());
  if (lhsVector)
    lhsShape.insert(lhsShape.begin(), 1);
  if (rhsVector)
    rhsShape.push_back(1);
  Value a = reshape(b, loc, lhs, lhsShape);
  Value bm = reshape(b, loc, rhs, rhsShape);
  // The result gradient with the promoted dimensions restored.
  SmallVector<int64_t> gShape(typeOf(g).getShape());
  if (lhsVector)
    gShape.insert(gShape.end() - (rhsVector ? 0 : 1), 1);
  if (rhsVector)
    gShape.push_back(1);
  Value gm = reshape(b, loc, g, gShape);

  Value da = MatMulOp::create(b, loc, gm, transposeLast2(b, loc, bm));
  da = sumToShape(b, loc, da, lhsType.clone(lhsShape));
  out.push_back(reshape(b, loc, da, lhsType.getShape()));
  Value db = MatMulOp::create(b, loc, transposeLast2(b, loc, a), gm);
  db = sumToShape(b, loc, db, rhsType.clone(rhsShape));
  out.push_back(reshape(b, loc, db, rhsType.getShape()));
  return success();
}

// y = alpha op(A) op(B) + beta C with op(A) [M, K], op(B) [K, N]:
// d op(A) = alpha g op(B)^T, d op(B) = alpha op(A)^T g, dC = beta g summed
// to C's shape. Transposed operands take the transposed products, so every
// product is one gemm with the right transpose flags.
LogicalResult gemmGrad(GemmOp op, OpBuilder &b, ValueRange grads,
                       SmallVectorImpl<Value> &out) {
  Location loc = op.getLoc();
  Value a = op.getA(), bm = op.getB(), c = op.getC(), g = grads[0];
  bool transA = op.getTransA(), transB = op.getTransB();
  APFloat alpha = op.getAlpha();
  APFloat zero(0.0);
  // d op(A) = g op(B)^T; dA = (d op(A))^T = op(B) g^T when transposed.
  Value da = transA ? GemmOp::create(b, loc, bm, g, Value(), alpha, zero,
                                     /*trans_a=*/transB, /*trans_b=*/true)
                    : GemmOp::create(b, loc, g, bm, Value(), alpha, zero,
                                     /*trans_a=*/false, /*trans_b=*/!transB);
  // d op(B) = op(A)^T g; dB = g^T op(A) when transposed.
  Value db = transB ? GemmOp::create(b, loc, g, a, Value(), alpha, zero,
                                     /*trans_a=*/true, /*trans_b=*/transA)
                    : GemmOp::create(b, loc, a, g, Value(), alpha, zero,
                                     /*trans_a=*/!transA, /*trans_b=*/false);
  out.push_back(da);
  out.push_back(db);
  if (c) {
    Value dc = sumToShape(b, loc, g, typeOf(c));
    double beta = op.getBeta().convertToDouble();
    if (beta != 1.0)
      dc = mul(b, loc, dc, beta);
    out.push_back(dc);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Layer normalization
//===----------------------------------------------------------------------===//

// With xhat = (x - mean) * invstd over the normalized axes A and
// y = xhat * scale + bias:
//   dscale = sum over the other axes of g * xhat, dbias = sum of g,
//   dx = invstd * (dxhat - mean_A(dxhat) - xhat * mean_A(dxhat * xhat)),
//   dxhat = g * scale.
// The statistics are recomputed from the input (nn ops only; the forward
// lowering keeps them internal).
LogicalResult layerNormGrad(LayerNormalizationOp op, OpBuilder &b,
                            ValueRange grads, SmallVectorImpl<Value> &out) {
  Location loc = op.getLoc();
  Value x = op.getInput(), scale = op.getScale(), bias = op.getBias();
  Value g = grads[0];
  int64_t rank = typeOf(x).getRank();
  auto axes = llvm::to_vector(llvm::seq<int64_t>(op.getAxis(), rank));
  if (axes.empty())
    return op.emitOpError("gradient needs at least one normalized axis");

  Value mean = ReduceMeanOp::create(b, loc, x, axes, /*keepdims=*/true);
  Value centered = sub(b, loc, x, mean);
  Value var = ReduceMeanOp::create(b, loc, mul(b, loc, centered, centered),
                                   axes, /*keepdims=*/true);
  Value eps = scalar(b, loc, x, op.getEpsilon().convertToDouble());
  Value invstd = DivOp::create(b, loc, scalar(b, loc, x, 1.0),
                               SqrtOp::create(b, loc, add(b, loc, var, eps)));
  Value xhat = mul(b, loc, centered, invstd);

  Value dxhat = mul(b, loc, g, scale);
  Value meanDxhat = ReduceMeanOp::create(b, loc, dxhat, axes, true);
  Value meanDxhatXhat =
      ReduceMeanOp::create(b, loc, mul(b, loc, dxhat, xhat), axes, true);
  Value inner = sub(b, loc, sub(b, loc, dxhat, meanDxhat),
                    mul(b, loc, xhat, meanDxhatXhat));
  out.push_back(mul(b, loc, invstd, inner));
  out.push_back(sumToShape(b, loc, mul(b, loc, g, xhat), typeOf(scale)));
  if (bias)
    out.push_back(sumToShape(b, loc, g, typeOf(bias)));
  return success();
}

} // namespace

void attachElementwiseGradientModels(MLIRContext *context) {
  attach<AddOp, addGrad>(context);
  attach<SubOp, subGrad>(context);
  attach<MulOp, mulGrad>(context);
  attach<DivOp, divGrad>(context);
  attach<PowOp, powGrad>(context);
  attach<NegOp, negGrad>(context);
  attach<SqrtOp, sqrtGrad>(context);
  attach<ExpOp, slopeGrad<ExpOp, expSlope>>(context);
  attach<LogOp, logGrad>(context);
  attach<TanhOp, slopeGrad<TanhOp, tanhSlope>>(context);
  attach<ErfOp, slopeGrad<ErfOp, erfSlope>>(context);
  attach<SigmoidOp, slopeGrad<SigmoidOp, sigmoidSlope>>(context);
  attach<ReluOp, reluGrad>(context);
  attach<LeakyReluOp, leakyReluGrad>(context);
  attach<GeluOp, geluGrad>(context);
  attach<ClipOp, clipGrad>(context);
  attach<SoftmaxOp, softmaxGrad>(context);
  attach<LogSoftmaxOp, logSoftmaxGrad>(context);
  attach<MatMulOp, matmulGrad>(context);
  attach<GemmOp, gemmGrad>(context);
  attach<LayerNormalizationOp, layerNormGrad>(context);
}

} // namespace pipedream::nn::detail
