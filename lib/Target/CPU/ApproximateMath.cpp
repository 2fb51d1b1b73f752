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

struct ApproximateMathPass
    : pipedream::cpu::impl::ApproximateMathPassBase<ApproximateMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    // The same set MLIR's default (compatibility) entry point enables: f32
    // only; ops on other types are left for libm.
    populateMathPolynomialApproximationPatterns(
        patterns, [](StringRef name) {
          return llvm::is_contained(
              {math::ErfOp::getOperationName(),
               math::ExpOp::getOperationName(),
               math::ExpM1Op::getOperationName(),
               math::TanhOp::getOperationName(),
               math::LogOp::getOperationName(),
               math::Log1pOp::getOperationName(),
               math::Log2Op::getOperationName()},
              name);
        });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
