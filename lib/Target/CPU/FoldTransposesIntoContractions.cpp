//===- FoldTransposesIntoContractions.cpp - GEMM operands read in place ---===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// A `linalg.transpose` that feeds a multiply-accumulate contraction becomes
// part of the contraction's indexing map: the contraction reads the
// transpose's input with permuted indices, and the GEMM lowerings
// (GemmPlan) see an operand with its unit stride on another dimension, a
// transposed A or B, which their packing reads directly. Training graphs
// are full of these (a Linear's backward multiplies by the transposed
// weight; attention transposes K), and each was a separate strided copy
// per micro-batch (see Passes.td).
//
//===----------------------------------------------------------------------===//

#include "pipedream/Target/CPU/GemmPlan.h"
#include "pipedream/Target/CPU/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace pipedream::cpu {
#define GEN_PASS_DEF_FOLDTRANSPOSESINTOCONTRACTIONSPASS
#include "pipedream/Target/CPU/Passes.h.inc"
} // namespace pipedream::cpu

using namespace mlir;

namespace {

/// The indexing map that reads `transpose`'s input where `map` read its
/// result. The result holds at (x_0 .. x_n-1) the input's element at y with
/// y[perm[i]] = x[i], so the new map's result perm[i] is `map`'s result i.
AffineMap readThroughTranspose(AffineMap map, linalg::TransposeOp transpose) {
  ArrayRef<int64_t> perm = transpose.getPermutation();
  SmallVector<AffineExpr> exprs(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    exprs[p] = map.getResult(i);
  return AffineMap::get(map.getNumDims(), map.getNumSymbols(), exprs,
                        map.getContext());
}

struct FoldTransposeIntoContraction
    : OpInterfaceRewritePattern<linalg::LinalgOp> {
  using OpInterfaceRewritePattern::OpInterfaceRewritePattern;

  LogicalResult matchAndRewrite(linalg::LinalgOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.hasPureTensorSemantics() || !pipedream::isMulAddContraction(op))
      return failure();
    auto isTransposed = [](OpOperand *operand) {
      return operand->get().getDefiningOp<linalg::TransposeOp>() != nullptr;
    };
    if (llvm::none_of(op.getDpsInputOperands(), isTransposed))
      return failure();
    // A named contraction (linalg.matmul, batch_matmul...) as the generic
    // it stands for, whose maps can be anything.
    auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
    if (!generic) {
      FailureOr<linalg::GenericOp> g = linalg::generalizeNamedOp(rewriter, op);
      if (failed(g))
        return failure();
      generic = *g;
    }
    SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
    rewriter.modifyOpInPlace(generic, [&] {
      for (OpOperand *operand : generic.getDpsInputOperands()) {
        auto transpose = operand->get().getDefiningOp<linalg::TransposeOp>();
        if (!transpose)
          continue;
        unsigned index = operand->getOperandNumber();
        maps[index] = readThroughTranspose(maps[index], transpose);
        operand->set(transpose.getInput());
      }
      generic.setIndexingMapsAttr(rewriter.getAffineMapArrayAttr(maps));
    });
    return success();
  }
};

struct FoldTransposesIntoContractionsPass
    : pipedream::cpu::impl::FoldTransposesIntoContractionsPassBase<
          FoldTransposesIntoContractionsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FoldTransposeIntoContraction>(&getContext());
    // A transpose left without users goes with the driver's dead-code
    // removal.
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
