//===- FuseElementwiseOps.cpp - elementwise fusion that spares GEMMs ------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The pattern set of upstream `linalg-fuse-elementwise-ops`, with a control
// function that never fuses into a contraction: a GEMM whose body gained a
// LayerNorm's scale or a bias add is no longer recognizable as a GEMM, and
// would be lowered as scalar loops instead of the vectorized kernel or BLAS.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Target/CPU/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace pipedream::cpu {
#define GEN_PASS_DEF_FUSEELEMENTWISEOPSPASS
#include "pipedream/Target/CPU/Passes.h.inc"
} // namespace pipedream::cpu

using namespace mlir;

namespace {

/// True when `op` is a linalg contraction (what the GEMM lowerings match).
bool isContraction(Operation *op) {
  auto linalgOp = dyn_cast_or_null<linalg::LinalgOp>(op);
  return linalgOp && linalgOp.getNumReductionLoops() > 0 &&
         linalg::isaContractionOpInterface(linalgOp);
}

struct FuseElementwiseOpsPass
    : pipedream::cpu::impl::FuseElementwiseOpsPassBase<
          FuseElementwiseOpsPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    // Upstream's default (fuse single-use producers), minus contractions
    // on either side.
    linalg::ControlFusionFn control = [](OpOperand *fusedOperand) {
      Operation *producer = fusedOperand->get().getDefiningOp();
      Operation *consumer = fusedOperand->getOwner();
      return producer && producer->hasOneUse() && !isContraction(consumer) &&
             !isContraction(producer);
    };
    RewritePatternSet patterns(ctx);
    linalg::populateElementwiseOpsFusionPatterns(patterns, control);
    linalg::populateFoldReshapeOpsByExpansionPatterns(patterns, control);
    tensor::populateBubbleUpExpandShapePatterns(patterns);
    affine::AffineApplyOp::getCanonicalizationPatterns(patterns, ctx);
    linalg::GenericOp::getCanonicalizationPatterns(patterns, ctx);
    tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, ctx);
    tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns, ctx);
    ctx->getLoadedDialect<linalg::LinalgDialect>()->getCanonicalizationPatterns(
        patterns);
    linalg::populateConstantFoldLinalgOperations(patterns, control);
    GreedyRewriteConfig config;
    config.setUseTopDownTraversal(true);
    (void)applyPatternsGreedily(getOperation(), std::move(patterns), config);
  }
};

} // namespace
