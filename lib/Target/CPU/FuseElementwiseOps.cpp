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
// And FuseReturnedProducer: an optimizer step's moments and weight update
// as one multi-result loop.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Target/CPU/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/IR/IRMapping.h"
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

/// Whether upstream's fusion of `fusedOperand`'s producer into its consumer
/// would give the fused op an output that is updated more than once per
/// element. Upstream keeps a producer result whose payload reads its init
/// (an accumulation, e.g. `out + in` over a filled init: a sum over unit
/// dimensions once they are folded) as an output of the fused op, indexed
/// by the consumer's map of the fused operand. Where the consumer
/// broadcasts that operand (the map is not a permutation of its loops),
/// the output is then read and updated again at every broadcast iteration:
/// the sum accumulates once per broadcast element. (A 1x1 convolution's
/// input gradient through a global average pool's broadcast, as in
/// EfficientNet's squeeze-and-excitation, came out (k + 1) times too large
/// at the k-th pixel, silently.)
bool fusionRepeatsAnUpdate(OpOperand *fusedOperand) {
  auto producer = fusedOperand->get().getDefiningOp<linalg::GenericOp>();
  auto consumer = dyn_cast<linalg::LinalgOp>(fusedOperand->getOwner());
  if (!producer || !consumer ||
      consumer.getMatchingIndexingMap(fusedOperand).isPermutation())
    return false;
  return llvm::any_of(producer.getDpsInitsMutable(), [&](OpOperand &init) {
    return producer.payloadUsesValueFromOperand(&init);
  });
}

/// Whether every user of `op`'s results is the function's return or
/// `other`.
bool usedOnlyByReturnOr(Operation *op, Operation *other) {
  return llvm::all_of(op->getUsers(), [&](Operation *user) {
    return user == other || isa<func::ReturnOp>(user);
  });
}

/// Whether `op` is an all-parallel generic on tensors whose outputs are
/// indexed by the identity and whose body does not read them.
bool isPlainElementwise(linalg::GenericOp op) {
  if (!op.hasPureTensorSemantics() ||
      op.getNumParallelLoops() != op.getNumLoops())
    return false;
  for (OpOperand &init : op.getDpsInitsMutable())
    if (!op.getMatchingIndexingMap(&init).isIdentity() ||
        op.payloadUsesValueFromOperand(&init))
      return false;
  return true;
}

/// Fuses an elementwise producer whose results are both read by one
/// elementwise consumer and returned by the function into that consumer,
/// as one generic with the results of both: a loop that computes Adam's new
/// moments, returns them and updates the weight from them, reading and
/// writing each array once (three loops read 7 arrays and wrote 3 more).
/// Upstream's fusion does not apply: it fuses a producer with other uses
/// by recomputing it in the consumer, so the producer's loop stays. Only
/// where every result of the consumer is returned too (the end of an
/// optimizer step), so that forward and backward code, whose kernels would
/// grow many outputs, is left as upstream fuses it.
struct FuseReturnedProducer : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp consumer,
                                PatternRewriter &rewriter) const override {
    if (!isPlainElementwise(consumer) ||
        !usedOnlyByReturnOr(consumer, nullptr) || consumer->use_empty())
      return failure();
    for (OpOperand *operand : consumer.getDpsInputOperands()) {
      auto producer = operand->get().getDefiningOp<linalg::GenericOp>();
      if (!producer || !isPlainElementwise(producer) ||
          producer.getNumLoops() != consumer.getNumLoops() ||
          !consumer.getMatchingIndexingMap(operand).isIdentity() ||
          !usedOnlyByReturnOr(producer, consumer))
        continue;
      // The producer feeds the consumer through this operand only (another
      // would read the fused op's own result).
      if (llvm::count_if(consumer->getOperands(), [&](Value v) {
            return v.getDefiningOp() == producer.getOperation();
          }) != 1)
        continue;
      rewrite(consumer, producer, operand, rewriter);
      return success();
    }
    return failure();
  }

  static void rewrite(linalg::GenericOp consumer, linalg::GenericOp producer,
                      OpOperand *fused, PatternRewriter &rewriter) {
    SmallVector<Value> inputs, inits;
    SmallVector<AffineMap> maps;
    for (OpOperand *in : producer.getDpsInputOperands()) {
      inputs.push_back(in->get());
      maps.push_back(producer.getMatchingIndexingMap(in));
    }
    for (OpOperand *in : consumer.getDpsInputOperands()) {
      if (in == fused)
        continue;
      inputs.push_back(in->get());
      maps.push_back(consumer.getMatchingIndexingMap(in));
    }
    for (OpOperand &init : producer.getDpsInitsMutable()) {
      inits.push_back(init.get());
      maps.push_back(producer.getMatchingIndexingMap(&init));
    }
    for (OpOperand &init : consumer.getDpsInitsMutable()) {
      inits.push_back(init.get());
      maps.push_back(consumer.getMatchingIndexingMap(&init));
    }
    SmallVector<Type> resultTypes(producer->getResultTypes());
    llvm::append_range(resultTypes, consumer->getResultTypes());
    auto merged = linalg::GenericOp::create(rewriter, consumer.getLoc(),
                                            resultTypes, inputs, inits, maps,
                                            consumer.getIteratorTypesArray());
    Block &producerBody = producer.getRegion().front();
    Block &consumerBody = consumer.getRegion().front();
    SmallVector<Type> argTypes;
    SmallVector<Location> argLocs;
    auto addArg = [&](BlockArgument arg) {
      argTypes.push_back(arg.getType());
      argLocs.push_back(arg.getLoc());
    };
    // Block arguments in operand order: producer inputs, consumer inputs,
    // producer inits, consumer inits.
    unsigned pIn = producer.getNumDpsInputs(), cIn = consumer.getNumDpsInputs();
    for (unsigned i = 0; i < pIn; ++i)
      addArg(producerBody.getArgument(i));
    for (unsigned i = 0; i < cIn; ++i)
      if (i != fused->getOperandNumber())
        addArg(consumerBody.getArgument(i));
    for (unsigned i = pIn; i < producerBody.getNumArguments(); ++i)
      addArg(producerBody.getArgument(i));
    for (unsigned i = cIn; i < consumerBody.getNumArguments(); ++i)
      addArg(consumerBody.getArgument(i));
    Block *body =
        rewriter.createBlock(&merged.getRegion(), {}, argTypes, argLocs);
    IRMapping mapping;
    unsigned next = 0;
    for (unsigned i = 0; i < pIn; ++i)
      mapping.map(producerBody.getArgument(i), body->getArgument(next++));
    for (unsigned i = 0; i < cIn; ++i)
      if (i != fused->getOperandNumber())
        mapping.map(consumerBody.getArgument(i), body->getArgument(next++));
    for (unsigned i = pIn; i < producerBody.getNumArguments(); ++i)
      mapping.map(producerBody.getArgument(i), body->getArgument(next++));
    for (unsigned i = cIn; i < consumerBody.getNumArguments(); ++i)
      mapping.map(consumerBody.getArgument(i), body->getArgument(next++));
    rewriter.setInsertionPointToStart(body);
    for (Operation &op : producerBody.without_terminator())
      rewriter.clone(op, mapping);
    SmallVector<Value> yields;
    for (Value v : producerBody.getTerminator()->getOperands())
      yields.push_back(mapping.lookupOrDefault(v));
    auto fusedResult = cast<OpResult>(fused->get());
    mapping.map(consumerBody.getArgument(fused->getOperandNumber()),
                yields[fusedResult.getResultNumber()]);
    for (Operation &op : consumerBody.without_terminator())
      rewriter.clone(op, mapping);
    for (Value v : consumerBody.getTerminator()->getOperands())
      yields.push_back(mapping.lookupOrDefault(v));
    linalg::YieldOp::create(rewriter, consumer.getLoc(), yields);
    unsigned nProducer = producer->getNumResults();
    rewriter.replaceOp(consumer, merged->getResults().drop_front(nProducer));
    rewriter.replaceOp(producer, merged->getResults().take_front(nProducer));
  }
};

struct FuseElementwiseOpsPass
    : pipedream::cpu::impl::FuseElementwiseOpsPassBase<
          FuseElementwiseOpsPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    // Upstream's default (fuse single-use producers), minus contractions
    // on either side and fusions that would repeat an update.
    linalg::ControlFusionFn control = [](OpOperand *fusedOperand) {
      Operation *producer = fusedOperand->get().getDefiningOp();
      Operation *consumer = fusedOperand->getOwner();
      return producer && producer->hasOneUse() && !isContraction(consumer) &&
             !isContraction(producer) && !fusionRepeatsAnUpdate(fusedOperand);
    };
    RewritePatternSet patterns(ctx);
    linalg::populateElementwiseOpsFusionPatterns(patterns, control);
    patterns.add<FuseReturnedProducer>(ctx);
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
