//===- VectorizeGemm.cpp - register-blocked GEMM kernels from linalg ------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Tiles f32 contractions on tensors for the caches and the registers and
// vectorizes the register tile, the recipe of the transform-dialect script
//
//   tile_using_for [TM, TN, TK]; tile_using_for [RM, RN, 1]; vectorize;
//   lower_contraction "outerproduct"; lower_outerproduct;
//   hoist_loop_invariant_subsets; transfer_to_scf full_unroll
//
// written with the C++ APIs so that tile sizes follow each op's shape and
// dimension roles. On the Zen 5 machines of this project the kernel matches
// OpenBLAS's AVX-512 (Cooperlake) kernel on one core and runs at twice its
// Haswell kernel, which these machines select (lib/Target/CPU/README.md).
//
//===----------------------------------------------------------------------===//

#include "pipedream/Target/CPU/GemmPlan.h"
#include "pipedream/Target/CPU/Passes.h"

#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Transforms/CSE.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"

namespace pipedream::cpu {
#define GEN_PASS_DEF_VECTORIZEGEMMPASS
#include "pipedream/Target/CPU/Passes.h.inc"
} // namespace pipedream::cpu

using namespace mlir;

namespace {

/// Cache tile bounds: A and B panels of 64 rows/columns by up to 1024 K
/// stay in the 1 MiB L2 of a Zen 5 core; measured best among 16..256 on
/// 512^3 and GPT-sized GEMMs.
constexpr int64_t kCacheTileM = 64;
constexpr int64_t kCacheTileN = 64;
constexpr int64_t kMaxUntiledK = 1024;
constexpr int64_t kCacheTileK = 512;

/// Tile sizes (one per loop, 0 = not tiled) of the two tiling levels.
struct GemmTiling {
  SmallVector<int64_t> cache;
  SmallVector<int64_t> registers;
};

/// Largest multiple of `step` that divides `size` and is at most `bound`
/// (at least `step`, which must divide `size`).
int64_t largestDividingMultiple(int64_t size, int64_t step, int64_t bound) {
  int64_t best = step;
  for (int64_t t = step; t <= std::min(size, bound); t += step)
    if (size % t == 0)
      best = t;
  return best;
}

/// Position of loop dimension `dim` among the results of `map`, or -1.
int64_t resultPosition(AffineMap map, unsigned dim) {
  for (auto [i, expr] : llvm::enumerate(map.getResults()))
    if (auto d = dyn_cast<AffineDimExpr>(expr); d && d.getPosition() == dim)
      return i;
  return -1;
}

/// Chooses the tiling of `op`, or fails when the kernel does not apply.
FailureOr<GemmTiling> planTiling(linalg::LinalgOp op) {
  if (!op.hasPureTensorSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 || !pipedream::isMulAddContraction(op))
    return failure();
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<RankedTensorType>(operand.get().getType());
    if (!type || !type.hasStaticShape() || !type.getElementType().isF32())
      return failure();
    if (!op.getMatchingIndexingMap(&operand).isProjectedPermutation(
            /*allowZeroInResults=*/false))
      return failure();
  }
  SmallVector<int64_t> sizes = op.getStaticLoopRanges();
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (failed(dims) || dims->m.empty() || dims->n.empty() || dims->k.empty() ||
      dims->batch.size() + dims->m.size() + dims->n.size() + dims->k.size() !=
          op.getNumLoops())
    return failure();

  AffineMap mapA = op.getMatchingIndexingMap(op.getDpsInputOperand(0));
  AffineMap mapB = op.getMatchingIndexingMap(op.getDpsInputOperand(1));
  AffineMap mapC = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  // N must be the innermost (unit-stride) dimension of both B and C: the
  // kernel loads and stores rows of 32 consecutive elements.
  auto innerC = dyn_cast<AffineDimExpr>(mapC.getResults().back());
  auto innerB = dyn_cast<AffineDimExpr>(mapB.getResults().back());
  if (!innerC || !innerB || innerC != innerB ||
      !llvm::is_contained(dims->n, innerC.getPosition()))
    return failure();
  unsigned nDim = innerC.getPosition();
  // M: the m dimension innermost in C; K: the k dimension innermost in A.
  unsigned mDim = *llvm::max_element(dims->m, [&](unsigned a, unsigned b) {
    return resultPosition(mapC, a) < resultPosition(mapC, b);
  });
  unsigned kDim = *llvm::max_element(dims->k, [&](unsigned a, unsigned b) {
    return resultPosition(mapA, a) < resultPosition(mapA, b);
  });

  int64_t m = sizes[mDim], n = sizes[nDim], k = sizes[kDim];
  int64_t regN = 0;
  for (int64_t candidate : {32, 16, 8})
    if (n % candidate == 0) {
      regN = candidate;
      break;
    }
  if (regN == 0)
    return failure();
  int64_t regM = 1;
  for (int64_t candidate : {8, 4, 2})
    // NOTE: never a square 8 x 8 register tile: with it the upstream vector
    // lowering (MLIR 22) computes wrong results for every row but the first
    // (test/Target/CPU/gemm-shapes.mlir covers it). 4 x 8 is correct.
    if (m % candidate == 0 && !(candidate == 8 && regN == 8)) {
      regM = candidate;
      break;
    }

  GemmTiling tiling;
  tiling.cache.assign(op.getNumLoops(), 0);
  tiling.registers.assign(op.getNumLoops(), 0);
  for (unsigned d = 0; d < op.getNumLoops(); ++d)
    if (sizes[d] != 1)
      tiling.cache[d] = 1; // batch and secondary M/N/K dimensions
  tiling.cache[mDim] = largestDividingMultiple(m, regM, kCacheTileM);
  tiling.cache[nDim] = largestDividingMultiple(n, regN, kCacheTileN);
  tiling.cache[kDim] = k <= kMaxUntiledK
                           ? k
                           : largestDividingMultiple(k, 1, kCacheTileK);
  tiling.registers[mDim] = regM;
  tiling.registers[nDim] = regN;
  tiling.registers[kDim] = 1;
  return tiling;
}

/// Tiles `op` by `tileSizes` (0: not tiled) and returns the tiled op.
static FailureOr<Operation *>
tile(RewriterBase &rewriter, Operation *op, ArrayRef<int64_t> tileSizes) {
  // NOTE: linalg's TilingInterface is an external model
  // (registerCPUCodegenDialects registers it).
  auto tilable = dyn_cast<TilingInterface>(op);
  if (!tilable)
    return failure();
  scf::SCFTilingOptions options;
  options.setTileSizes(getAsIndexOpFoldResult(op->getContext(), tileSizes));
  rewriter.setInsertionPoint(op);
  FailureOr<scf::SCFTilingResult> result =
      scf::tileUsingSCF(rewriter, tilable, options);
  if (failed(result) || result->tiledOps.size() != 1)
    return failure();
  rewriter.replaceOp(op, result->replacements);
  return result->tiledOps.front();
}

struct VectorizeGemmPass
    : pipedream::cpu::impl::VectorizeGemmPassBase<VectorizeGemmPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    MLIRContext *ctx = &getContext();

    SmallVector<std::pair<linalg::LinalgOp, GemmTiling>> work;
    func.walk([&](linalg::LinalgOp op) {
      FailureOr<GemmTiling> tiling = planTiling(op);
      if (succeeded(tiling))
        work.emplace_back(op, std::move(*tiling));
    });
    if (work.empty())
      return;

    IRRewriter rewriter(ctx);
    for (auto &[op, tiling] : work) {
      FailureOr<Operation *> cacheTile = tile(rewriter, op, tiling.cache);
      if (failed(cacheTile))
        continue; // the op is untouched: BLAS or loops take it
      FailureOr<Operation *> registerTile =
          tile(rewriter, *cacheTile, tiling.registers);
      if (failed(registerTile))
        continue;
      if (failed(linalg::vectorizeOpPrecondition(*registerTile)))
        continue; // stays a (tiled) linalg op: correct, only slower
      rewriter.setInsertionPoint(*registerTile);
      FailureOr<linalg::VectorizationResult> vectorized =
          linalg::vectorize(rewriter, *registerTile);
      if (succeeded(vectorized))
        rewriter.replaceOp(*registerTile, vectorized->replacements);
    }

    // Contraction -> outer products -> FMAs with a broadcast A element,
    // unit dimensions dropped.
    {
      RewritePatternSet patterns(ctx);
      vector::populateVectorContractLoweringPatterns(
          patterns, vector::VectorContractLowering::OuterProduct);
      vector::populateVectorOuterProductLoweringPatterns(patterns);
      vector::populateVectorTransferPermutationMapLoweringPatterns(patterns);
      vector::populateDropUnitDimWithShapeCastPatterns(patterns);
      vector::populateCastAwayVectorLeadingOneDimPatterns(patterns);
      addCanonicalization(patterns);
      if (failed(applyPatternsGreedily(func, std::move(patterns))))
        return signalPassFailure();
    }
    eliminateCommonSubExpressions(rewriter, getAnalysis<DominanceInfo>(),
                                  func);
    // Keep the accumulator in registers across the K loop: hoist the C
    // tile's extract/insert_slice and then its vector transfers out of the
    // loops. Each round peels one level; two are needed, three are enough.
    // NOTE: needs the SubsetOpInterface models of tensor and vector
    // (registerCPUCodegenDialects); without them nothing is hoisted and the
    // kernel runs at half speed.
    for (int round = 0; round < 3; ++round) {
      SmallVector<LoopLikeOpInterface> loops;
      func.walk<WalkOrder::PreOrder>(
          [&](scf::ForOp loop) { loops.push_back(loop); });
      for (LoopLikeOpInterface loop : loops)
        hoistLoopInvariantSubsets(rewriter, loop);
    }
    // 2-D transfers to 1-D rows, fully unrolled.
    {
      RewritePatternSet patterns(ctx);
      populateVectorToSCFConversionPatterns(
          patterns, VectorTransferToSCFOptions().setTargetRank(1).enableFullUnroll());
      vector::populateVectorTransposeLoweringPatterns(
          patterns, vector::VectorTransposeLowering::EltWise);
      vector::populateVectorShapeCastLoweringPatterns(patterns);
      vector::populateVectorBroadcastLoweringPatterns(patterns);
      addCanonicalization(patterns);
      if (failed(applyPatternsGreedily(func, std::move(patterns))))
        return signalPassFailure();
    }
  }

  /// The canonicalization patterns of every loaded dialect and op.
  void addCanonicalization(RewritePatternSet &patterns) {
    MLIRContext *ctx = &getContext();
    for (Dialect *dialect : ctx->getLoadedDialects())
      dialect->getCanonicalizationPatterns(patterns);
    for (RegisteredOperationName op : ctx->getRegisteredOperations())
      op.getCanonicalizationPatterns(patterns, ctx);
  }
};

} // namespace
