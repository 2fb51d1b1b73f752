//===- ShardOptimizer.cpp - pipe-shard-optimizer (ZeRO-1) -----------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Splits every stage's update function over the stage's replicas, so each
// replica keeps and updates 1/R of the optimizer state (Passes.td has the
// contract; the runtime all-gathers the weights, docs/Bundle.md
// "Replicated stages").
//
//===----------------------------------------------------------------------===//

#include "pipedream/Dialect/NN/IR/NNDialect.h"
#include "pipedream/Dialect/Pipe/IR/PipeOps.h"
#include "pipedream/Dialect/Pipe/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/MapVector.h"

#include <algorithm>
#include <numeric>

namespace pipedream::pipe {
#define GEN_PASS_DEF_SHARDOPTIMIZERPASS
#include "pipedream/Dialect/Pipe/Transforms/Passes.h.inc"
} // namespace pipedream::pipe

using namespace mlir;
using namespace pipedream::pipe;
using NNNames = pipedream::nn::NNDialect;

namespace {

int64_t tensorBytes(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return 0;
  return tensor.getNumElements() *
         std::max<int64_t>(1, tensor.getElementTypeBitWidth() / 8);
}

StringRef stringAttr(DictionaryAttr attrs, StringRef name) {
  if (!attrs)
    return {};
  if (auto value = attrs.getAs<StringAttr>(name))
    return value.getValue();
  return {};
}

/// The weight (an index into `weights`) a persistent buffer named `target`
/// belongs to: the weight itself, its gradient accumulator or optimizer
/// state `<kind>:<weight>`; -1 for none (a step counter).
int64_t ownerOf(StringRef target, ArrayRef<StringRef> weights) {
  for (auto [w, name] : llvm::enumerate(weights)) {
    if (target == name)
      return w;
    size_t colon = target.find(':');
    if (colon != StringRef::npos && target.drop_front(colon + 1) == name)
      return w;
  }
  return -1;
}

/// Erases the ops of `func` whose results are unused and that have no
/// effects, then its unused arguments.
void pruneFunction(func::FuncOp func) {
  IRRewriter rewriter(func.getContext());
  (void)runRegionDCE(rewriter, func.getBody());
  llvm::BitVector unused(func.getNumArguments());
  for (BlockArgument arg : func.getArguments())
    if (arg.use_empty())
      unused.set(arg.getArgNumber());
  (void)func.eraseArguments(unused);
}

struct ShardOptimizerPass
    : pipedream::pipe::impl::ShardOptimizerPassBase<ShardOptimizerPass> {
  using Base::Base;
  void runOnOperation() override;
};

void ShardOptimizerPass::runOnOperation() {
  ModuleOp module = getOperation();
  if (shards < 1) {
    module.emitError() << "pipe-shard-optimizer: shards must be at least 1, "
                          "got "
                       << shards.getValue();
    return signalPassFailure();
  }
  for (int64_t n : stageShards)
    if (n < 1) {
      module.emitError() << "pipe-shard-optimizer: stage-shards must be at "
                            "least 1, got "
                         << n;
      return signalPassFailure();
    }
  if (stageShards.empty() && shards == 1)
    return;
  // The shards of the update a call at `stage` makes (0: no such stage).
  auto shardsOf = [&](int64_t stage) -> int64_t {
    if (stageShards.empty())
      return shards;
    if (stage < 0 || stage >= static_cast<int64_t>(stageShards.size()))
      return 0;
    return stageShards[stage];
  };
  SymbolTable symbols(module);
  // The update functions, in order of first call, and their calls.
  llvm::MapVector<func::FuncOp, SmallVector<CallStageOp>> updates;
  WalkResult walk = module.walk([&](CallStageOp call) {
    if (call.getAction() != ActionKind::Update)
      return WalkResult::advance();
    // A stage of one replica keeps its whole state.
    const int64_t n = shardsOf(call.getStage().getRank());
    if (n == 1)
      return WalkResult::advance();
    auto program = call->getParentOfType<ProgramOp>();
    if (program) {
      ScheduleKind kind = program.getSchedule().getKind();
      if (kind == ScheduleKind::PipeDream || kind == ScheduleKind::TwoBW) {
        call.emitError() << "pipe-shard-optimizer: sharded optimizer state "
                            "needs a synchronous schedule, not '"
                         << stringifyScheduleKind(kind) << "'";
        return WalkResult::interrupt();
      }
    }
    auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
    if (!callee || callee.isDeclaration()) {
      call.emitError() << "pipe-shard-optimizer: no update function '"
                       << call.getCallee() << "'";
      return WalkResult::interrupt();
    }
    if (!call.getArgs().empty() || call.getNumResults() != 0) {
      call.emitError() << "pipe-shard-optimizer: the update '"
                       << call.getCallee()
                       << "' takes or returns values; expected one that "
                          "binds only persistent buffers";
      return WalkResult::interrupt();
    }
    if (n == 0) {
      call.emitError() << "pipe-shard-optimizer: stage "
                       << call.getStage().getRank()
                       << " has no entry in stage-shards ("
                       << stageShards.size() << " stages)";
      return WalkResult::interrupt();
    }
    auto [it, inserted] = updates.try_emplace(callee);
    if (!inserted && shardsOf(it->second.front().getStage().getRank()) != n) {
      call.emitError() << "pipe-shard-optimizer: the update '"
                       << call.getCallee()
                       << "' is called by stages with different replica "
                          "counts";
      return WalkResult::interrupt();
    }
    it->second.push_back(call);
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return signalPassFailure();

  for (auto &[update, calls] : updates) {
    const int64_t numShards = shardsOf(calls.front().getStage().getRank());
    // The weights of the update, dealt to the shards by size.
    SmallVector<StringRef> weights;
    SmallVector<int64_t> bytes;
    for (unsigned i = 0; i < update.getNumArguments(); ++i) {
      DictionaryAttr attrs = update.getArgAttrDict(i);
      if (stringAttr(attrs, NNNames::kRoleAttrName) != "weight")
        continue;
      weights.push_back(stringAttr(attrs, NNNames::kNameAttrName));
      bytes.push_back(tensorBytes(update.getArgument(i).getType()));
    }
    SmallVector<int64_t> order(weights.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return bytes[a] > bytes[b]; });
    SmallVector<int64_t> shardOf(weights.size(), 0), load(numShards, 0);
    for (int64_t w : order) {
      int64_t best = 0;
      for (int64_t j = 1; j < numShards; ++j)
        if (load[j] < load[best])
          best = j;
      shardOf[w] = best;
      load[best] += bytes[w];
    }
    // Which shard keeps each result (-1: every shard).
    SmallVector<int64_t> resultShard;
    for (unsigned r = 0; r < update.getNumResults(); ++r) {
      StringRef target = stringAttr(update.getResultAttrDict(r),
                                    NNNames::kUpdatesAttrName);
      int64_t owner = ownerOf(target, weights);
      resultShard.push_back(owner < 0 ? -1 : shardOf[owner]);
    }

    OpBuilder b(update);
    SmallVector<func::FuncOp> shardFunctions;
    for (int64_t j = 0; j < numShards; ++j) {
      auto clone = cast<func::FuncOp>(b.clone(*update));
      std::string name =
          (update.getSymName() + "_shard" + std::to_string(j)).str();
      clone.setSymName(name);
      clone->setAttr("pipe.replica", b.getI64IntegerAttr(j));
      llvm::BitVector drop(clone.getNumResults());
      for (unsigned r = 0; r < clone.getNumResults(); ++r)
        if (resultShard[r] >= 0 && resultShard[r] != j)
          drop.set(r);
      Operation *ret = clone.getBody().front().getTerminator();
      ret->eraseOperands(drop);
      if (failed(clone.eraseResults(drop))) {
        update.emitError() << "pipe-shard-optimizer: cannot split '"
                           << update.getSymName() << "'";
        return signalPassFailure();
      }
      pruneFunction(clone);
      shardFunctions.push_back(clone);
    }
    for (CallStageOp call : calls) {
      OpBuilder cb(call);
      for (int64_t j = 0; j < numShards; ++j) {
        auto shard = CallStageOp::create(
            cb, call.getLoc(), shardFunctions[j], ActionKind::Update,
            ValueRange(), call.getStage(), call.getMicrobatch());
        shard->setAttr("pipe.replica", cb.getI64IntegerAttr(j));
      }
      call.erase();
    }
    // NOTE: kept while a call of a one-replica stage still names it.
    if (SymbolTable::symbolKnownUseEmpty(update, module))
      update.erase();
  }
}

} // namespace
