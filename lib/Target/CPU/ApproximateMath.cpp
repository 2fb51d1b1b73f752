//===- ApproximateMath.cpp - vectorizable f32 transcendentals -------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Scalar libm calls (erff, expf, tanhf...) keep LLVM's loop vectorizer off the
// elementwise loops around them. Upstream's polynomial approximations are
// arithmetic only, so those loops vectorize.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Target/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace pipedream::cpu {
#define GEN_PASS_DEF_APPROXIMATEMATHPASS
#include "pipedream/Target/CPU/Passes.h.inc"
} // namespace pipedream::cpu

using namespace mlir;

namespace {

/// erf on f32 (scalars and vectors) as one odd rational function on
/// |x| <= 3.85, x P(x^2) / Q(x^2), P of degree 6 and Q of degree 5 in
/// x^2, fitted to erf by scripts/fit-erf.py (weighted least squares
/// towards the minimax error, in float64), the result clamped to [-1, 1].
/// Upstream's approximation picks one of three rational functions per
/// element (36 selects a vector); this one is 11 FMAs, two clamps and a
/// division: the GELU forward and backward loops of a GPT block's
/// training step are the largest outside its GEMMs (gpt256's step: 0.9-1.4
/// ms of 44 faster). Against float64 erf on 4 million f32 points of [0,
/// 4.5] and 2^-126 .. 4: at most 3.6e-7 absolute and relative error, 6.0 units
/// in the last place (upstream's: 2.7e-7, 4.6); odd, NaN stays NaN, +-inf gives
/// +-1, -0 gives -0 (test/Target/CPU/erf.mlir).
struct ErfRational : OpRewritePattern<math::ErfOp> {
  ErfRational(MLIRContext *context)
      : OpRewritePattern<math::ErfOp>(context, /*benefit=*/2) {}

  LogicalResult matchAndRewrite(math::ErfOp op,
                                PatternRewriter &rewriter) const override {
    Type type = op.getType();
    if (!getElementTypeOrSelf(type).isF32())
      return rewriter.notifyMatchFailure(op, "not f32");
    static constexpr float kP[] = {
        1.128379226e+00f, 1.847050339e-01f, 5.427775159e-02f, 3.832392627e-03f,
        3.803263826e-04f, 4.716521744e-06f, -1.332967159e-08f};
    static constexpr float kQ[] = {1.0f,
                                   4.970240891e-01f,
                                   1.137761995e-01f,
                                   1.543081738e-02f,
                                   1.304971520e-03f,
                                   6.340686377e-05f};
    Location loc = op.getLoc();
    auto constant = [&](float value) -> Value {
      TypedAttr attr = rewriter.getF32FloatAttr(value);
      if (auto shaped = dyn_cast<ShapedType>(type))
        attr = SplatElementsAttr::get(shaped, value);
      return arith::ConstantOp::create(rewriter, loc, type, attr);
    };
    // minimumf / maximumf: a NaN stays NaN. At +-3.85 the function rounds
    // to +-1 (so erf(+-inf) = +-1); within, it exceeds 1 by an ulp at
    // places: the result is clamped to [-1, 1] too.
    auto clamp = [&](Value v, float bound) -> Value {
      return arith::MaximumFOp::create(
          rewriter, loc,
          arith::MinimumFOp::create(rewriter, loc, v, constant(bound)),
          constant(-bound));
    };
    Value x = clamp(op.getOperand(), 3.85f);
    Value t = arith::MulFOp::create(rewriter, loc, x, x);
    auto horner = [&](ArrayRef<float> c) {
      Value acc = constant(c.back());
      for (float v : llvm::reverse(c.drop_back()))
        acc = math::FmaOp::create(rewriter, loc, acc, t, constant(v));
      return acc;
    };
    Value p = horner(kP), q = horner(kQ);
    Value result = arith::DivFOp::create(
        rewriter, loc, arith::MulFOp::create(rewriter, loc, x, p), q);
    rewriter.replaceOp(op, clamp(result, 1.0f));
    return success();
  }
};

struct ApproximateMathPass
    : pipedream::cpu::impl::ApproximateMathPassBase<ApproximateMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ErfRational>(&getContext());
    // The rest of the set MLIR's default (compatibility) entry point
    // enables: f32 only; ops on other types are left for libm.
    populateMathPolynomialApproximationPatterns(patterns, [](StringRef name) {
      return llvm::is_contained(
          {math::ExpOp::getOperationName(), math::ExpM1Op::getOperationName(),
           math::TanhOp::getOperationName(), math::LogOp::getOperationName(),
           math::Log1pOp::getOperationName(), math::Log2Op::getOperationName()},
          name);
    });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
