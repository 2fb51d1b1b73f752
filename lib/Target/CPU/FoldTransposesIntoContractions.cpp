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
// Attention's head splits reach a batched contraction through a reshape
// (`[B, T, H, D] -> transpose -> [B, H, T, D] -> collapse -> [B*H, T, D]`),
// and its result leaves through one (`expand -> transpose -> collapse`).
// There the contraction's loops are first expanded to the uncollapsed
// shape (upstream's reshape fusion by expansion, only for these), which
// puts the transpose next to it; a transpose of a contraction's result
// whose init is a zero fill becomes the contraction's output map.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Target/CPU/GemmPlan.h"
#include "pipedream/Target/CPU/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
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

/// A named contraction (linalg.matmul, batch_matmul...) as the generic it
/// stands for, whose maps can be anything; a generic as it is.
FailureOr<linalg::GenericOp> asGeneric(PatternRewriter &rewriter,
                                       linalg::LinalgOp op) {
  if (auto generic = dyn_cast<linalg::GenericOp>(op.getOperation()))
    return generic;
  return linalg::generalizeNamedOp(rewriter, op);
}

/// The dims of `role` that `map` reads, in the order of its results, when
/// they are consecutive results (so a row-major operand lays them out as
/// one merged dimension); std::nullopt otherwise.
std::optional<SmallVector<unsigned>> consecutiveRun(AffineMap map,
                                                    ArrayRef<unsigned> role) {
  SmallVector<unsigned> order;
  int64_t first = -1, last = -1;
  for (auto [i, expr] : llvm::enumerate(map.getResults())) {
    auto dim = dyn_cast<AffineDimExpr>(expr);
    if (!dim || !llvm::is_contained(role, dim.getPosition()))
      continue;
    if (first < 0)
      first = int64_t(i);
    last = int64_t(i);
    order.push_back(dim.getPosition());
  }
  if (!order.empty() && last - first + 1 != int64_t(order.size()))
    return std::nullopt;
  return order;
}

/// Whether the contraction with indexing maps `maps` (A, B, C) has the
/// layout the GEMM lowerings merge into one GEMM per batch index (GemmPlan):
/// in each operand the M, N and K dimensions it reads are consecutive, and
/// A and B read the K dimensions (A and C the M ones, B and C the N ones)
/// in the same order.
bool gemmLayout(ArrayRef<AffineMap> maps,
                const linalg::ContractionDimensions &dims) {
  auto run = [&](unsigned operand, ArrayRef<unsigned> role) {
    return consecutiveRun(maps[operand], role);
  };
  auto a = run(0, dims.k), b = run(1, dims.k), am = run(0, dims.m),
       cm = run(2, dims.m), bn = run(1, dims.n), cn = run(2, dims.n);
  return a && b && am && cm && bn && cn && *a == *b && *am == *cm && *bn == *cn;
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
    // A transpose whose folding would leave the operands in a layout no
    // GEMM takes (a convolution's weight gradient: dY read as [N, M, O...]
    // with N and O the reduction, not [M, N, O...]) stays: its copy is
    // cheaper than the loops the contraction would become.
    FailureOr<linalg::ContractionDimensions> dims =
        linalg::inferContractionDims(op);
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    bool wasGemm = succeeded(dims) && gemmLayout(maps, *dims);
    SmallVector<std::pair<unsigned, linalg::TransposeOp>> folds;
    for (OpOperand *operand : op.getDpsInputOperands()) {
      auto transpose = operand->get().getDefiningOp<linalg::TransposeOp>();
      if (!transpose)
        continue;
      unsigned index = operand->getOperandNumber();
      AffineMap before = maps[index];
      maps[index] = readThroughTranspose(before, transpose);
      if (wasGemm && !gemmLayout(maps, *dims)) {
        maps[index] = before;
        continue;
      }
      folds.emplace_back(index, transpose);
    }
    if (folds.empty())
      return failure();
    FailureOr<linalg::GenericOp> generalized = asGeneric(rewriter, op);
    if (failed(generalized))
      return failure();
    linalg::GenericOp generic = *generalized;
    rewriter.modifyOpInPlace(generic, [&] {
      for (auto [index, transpose] : folds)
        generic->getOpOperand(index).set(transpose.getInput());
      generic.setIndexingMapsAttr(rewriter.getAffineMapArrayAttr(maps));
    });
    return success();
  }
};

/// A contraction's result that a transpose reads and nothing else: the
/// contraction writes the transposed layout itself when its init is a fill
/// of a new tensor (refilled in the transposed shape). The transpose's
/// result holds at x the contraction's element at y with y[perm[i]] = x[i],
/// so the new output map's result i is the old one's result perm[i].
struct FoldTransposeOfContraction : OpRewritePattern<linalg::TransposeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::TransposeOp transpose,
                                PatternRewriter &rewriter) const override {
    auto result = dyn_cast<OpResult>(transpose.getInput());
    if (!result || !result.hasOneUse())
      return failure();
    auto op = dyn_cast<linalg::LinalgOp>(result.getOwner());
    if (!op || !op.hasPureTensorSemantics() || op.getNumDpsInits() != 1 ||
        !pipedream::isMulAddContraction(op))
      return failure();
    auto fill = op.getDpsInits()[0].getDefiningOp<linalg::FillOp>();
    if (!fill || !fill.getOutputs()[0].getDefiningOp<tensor::EmptyOp>())
      return failure();
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    AffineMap out = maps.back();
    SmallVector<AffineExpr> exprs;
    for (int64_t p : transpose.getPermutation())
      exprs.push_back(out.getResult(p));
    maps.back() = AffineMap::get(out.getNumDims(), out.getNumSymbols(), exprs,
                                 out.getContext());
    // A GEMM writes C with unit stride along M or N: the transposed
    // layout's innermost dimension must be one of them.
    FailureOr<linalg::ContractionDimensions> dims =
        linalg::inferContractionDims(op);
    auto inner = dyn_cast<AffineDimExpr>(exprs.back());
    if (failed(dims) || !inner ||
        !(llvm::is_contained(dims->m, inner.getPosition()) ||
          llvm::is_contained(dims->n, inner.getPosition())))
      return failure();
    FailureOr<linalg::GenericOp> generalized = asGeneric(rewriter, op);
    if (failed(generalized))
      return failure();
    linalg::GenericOp generic = *generalized;

    Location loc = generic.getLoc();
    auto type = cast<RankedTensorType>(transpose.getResult()[0].getType());
    rewriter.setInsertionPoint(generic);
    Value empty = tensor::EmptyOp::create(rewriter, loc, type.getShape(),
                                          type.getElementType());
    Value init =
        linalg::FillOp::create(rewriter, loc, fill.getInputs()[0], empty)
            .getResult(0);
    auto transposed = linalg::GenericOp::create(
        rewriter, loc, TypeRange{type}, generic.getDpsInputs(),
        ValueRange{init}, maps, generic.getIteratorTypesArray());
    rewriter.inlineRegionBefore(generic.getRegion(), transposed.getRegion(),
                                transposed.getRegion().begin());
    rewriter.replaceOp(transpose, transposed.getResults());
    rewriter.eraseOp(generic);
    return success();
  }
};

/// Whether every group of more than one dimension in `reassociation` (of
/// the operand or result of `op` read or written through `map`) is a batch
/// dimension of the contraction `op` (a loop of A, B and C alike), so that
/// expanding the loops splits a batch (attention's B * H into B and H) and
/// leaves M, N and K, the GEMM's dimensions, as they were.
bool splitsOnlyBatchDims(linalg::LinalgOp op, AffineMap map,
                         ArrayRef<ReassociationIndices> reassociation) {
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (failed(dims) || reassociation.size() != map.getNumResults())
    return false;
  for (auto [group, expr] : llvm::zip(reassociation, map.getResults())) {
    if (group.size() == 1)
      continue;
    auto dim = dyn_cast<AffineDimExpr>(expr);
    if (!dim || !llvm::is_contained(dims->batch, dim.getPosition()))
      return false;
  }
  return true;
}

/// Which reshapes the expansion folds into a contraction: a collapse of a
/// transpose that the contraction reads, and an expansion of its result
/// that a transpose reads, when they split only batch dimensions (the
/// contraction's loops expand; the transpose then folds as above). No other
/// reshape moves.
bool expandsAroundTranspose(OpOperand *fused) {
  Operation *owner = fused->getOwner();
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(owner)) {
    auto producer = fused->get().getDefiningOp<linalg::LinalgOp>();
    return producer && pipedream::isMulAddContraction(producer) &&
           llvm::any_of(expand->getUsers(),
                        llvm::IsaPred<linalg::TransposeOp>) &&
           splitsOnlyBatchDims(producer,
                               producer.getIndexingMapMatchingResult(
                                   cast<OpResult>(fused->get())),
                               expand.getReassociationIndices());
  }
  auto consumer = dyn_cast<linalg::LinalgOp>(owner);
  auto collapse = fused->get().getDefiningOp<tensor::CollapseShapeOp>();
  return consumer && collapse && pipedream::isMulAddContraction(consumer) &&
         collapse.getSrc().getDefiningOp<linalg::TransposeOp>() &&
         splitsOnlyBatchDims(consumer, consumer.getMatchingIndexingMap(fused),
                             collapse.getReassociationIndices());
}

struct FoldTransposesIntoContractionsPass
    : pipedream::cpu::impl::FoldTransposesIntoContractionsPassBase<
          FoldTransposesIntoContractionsPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    RewritePatternSet patterns(ctx);
    patterns.add<FoldTransposeIntoContraction, FoldTransposeOfContraction>(ctx);
    linalg::populateFoldReshapeOpsByExpansionPatterns(patterns,
                                                      expandsAroundTranspose);
    // The expand_shape(collapse_shape(x)) the expansion leaves on the other
    // operands and results fold away; an expanded fill of a tensor.empty
    // becomes a fill of a tensor.empty (for FoldTransposeOfContraction).
    tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, ctx);
    tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns, ctx);
    tensor::populateFoldTensorEmptyPatterns(patterns);
    linalg::FillOp::getCanonicalizationPatterns(patterns, ctx);
    // A transpose left without users goes with the driver's dead-code
    // removal.
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
