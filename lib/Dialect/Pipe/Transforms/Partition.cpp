//===- Partition.cpp - pipe-partition --------------------------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// MLIR side of the partitioner: extracts the partition problem of each
// public function (CostModel.h), solves it (PartitionSolver.h) and writes
// the result back as `pipe.stage` attributes.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Dialect/Pipe/IR/PipeAttrs.h"
#include "pipedream/Dialect/Pipe/Transforms/CostModel.h"
#include "pipedream/Dialect/Pipe/Transforms/PartitionSolver.h"
#include "pipedream/Dialect/Pipe/Transforms/Passes.h"
#include "pipedream/Dialect/Pipe/Transforms/ReplicationPlanner.h"
#include "pipedream/Dialect/Pipe/Transforms/ScheduleAttrs.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringSet.h"

namespace pipedream::pipe {
#define GEN_PASS_DEF_PARTITIONPASS
#include "pipedream/Dialect/Pipe/Transforms/Passes.h.inc"
} // namespace pipedream::pipe

using namespace mlir;
using namespace pipedream::pipe;

namespace {

struct PartitionPass : pipedream::pipe::impl::PartitionPassBase<PartitionPass> {
  using Base::Base;
  void runOnOperation() override;
  LogicalResult partitionFunction(func::FuncOp func,
                                  partition::Options options,
                                  int64_t memoryBytes);
};

} // namespace

/// Cut points for `split-after`: after the last op named by each node.
static FailureOr<std::vector<int64_t>>
manualCuts(func::FuncOp func, ArrayRef<Operation *> nodes,
           ArrayRef<std::string> names, int64_t pieces) {
  llvm::StringMap<int64_t> lastByName;
  for (auto [i, op] : llvm::enumerate(nodes)) {
    std::string name = getOpName(op);
    if (!name.empty())
      lastByName[name] = i;
  }
  std::vector<int64_t> cuts{0};
  llvm::StringSet<> seen;
  for (const std::string &name : names) {
    auto it = lastByName.find(name);
    if (it == lastByName.end())
      return func.emitError()
             << "pipe-partition: split-after: no op is named '" << name
             << "' (names are the ONNX node names the importer gives each "
                "op as its location, e.g. '/block/attn/MatMul')";
    if (!seen.insert(name).second)
      return func.emitError()
             << "pipe-partition: split-after: '" << name << "' given twice";
    cuts.push_back(it->second + 1);
  }
  if (static_cast<int64_t>(names.size()) != pieces - 1)
    return func.emitError() << "pipe-partition: split-after names "
                            << names.size() << " nodes but " << pieces
                            << " stages need " << pieces - 1;
  std::sort(cuts.begin() + 1, cuts.end());
  if (cuts.back() >= static_cast<int64_t>(nodes.size()))
    return func.emitError() << "pipe-partition: split-after: '"
                            << getOpName(nodes.back())
                            << "' is the last op; the last stage would be "
                               "empty";
  cuts.push_back(nodes.size());
  return cuts;
}

LogicalResult PartitionPass::partitionFunction(func::FuncOp func,
                                               partition::Options options,
                                               int64_t memoryBytes) {
  SmallVector<Operation *> nodes;
  int64_t missing = 0;
  partition::Graph graph = buildPartitionGraph(func, nodes, missing);
  std::string how = splitAfter.empty() ? method.getValue() : "manual";
  if (how == "auto" && missing > 0)
    return func.emitError()
           << "pipe-partition: " << missing << " of " << nodes.size()
           << " ops have no pipe.cost; run pipe-annotate-costs first (or "
              "use method=uniform)";

  partition::Result result;
  // ranks=N: the planner chooses K and the replication (Passes.td).
  SmallVector<PlanAttr> plans;
  int64_t replicas = 1;
  double plannedSlowest = 0;
  if (numRanks > 0) {
    auto planAttr = [&](const partition::ReplicatedPlan &plan, bool chosen,
                        bool uniform) {
      return PlanAttr::get(&getContext(), plan.numStages(), plan.replicas,
                           Builder(&getContext()).getF64FloatAttr(plan.slowest),
                           uniform, chosen);
    };
    partition::ReplicatedPlan best =
        partition::planReplicated(graph, options, numRanks);
    if (!best.ok())
      return func.emitError() << "pipe-partition: @" << func.getSymName()
                              << ": ranks=" << numRanks.getValue() << ": "
                              << best.error;
    std::optional<partition::ReplicatedPlan> chosen;
    std::vector<partition::ReplicatedPlan> uniformPlans;
    for (int64_t k = 1; k <= numRanks; ++k) {
      // Every replica runs M/R of the step's micro-batches.
      if (numRanks % k || k > static_cast<int64_t>(graph.nodes.size()) ||
          options.numMicrobatches % (numRanks / k) != 0)
        continue;
      partition::ReplicatedPlan plan =
          partition::planUniform(graph, options, k, numRanks / k);
      if (!plan.ok())
        continue;
      if (!chosen || plan.slowest < chosen->slowest)
        chosen = plan;
      uniformPlans.push_back(std::move(plan));
    }
    if (!chosen)
      return func.emitError()
             << "pipe-partition: @" << func.getSymName() << ": ranks="
             << numRanks.getValue()
             << ": no K x R plan (every stage the same replicas) fits the "
                "memory limit";
    // Non-uniform replication (PipeDream's 1F1B-RR: micro-batch m of stage
    // s on its replica m mod R_s) for synchronous schedules, with every
    // R_s dividing M so that each replica of a stage gets as many
    // micro-batches: chosen when strictly faster than every K x R plan.
    std::optional<partition::ReplicatedPlan> routed;
    if (schedule::Config{options.kind, 1, 1, 1}.isSynchronous()) {
      partition::ReplicatedPlan plan = partition::planReplicated(
          graph, options, numRanks, options.numMicrobatches);
      if (plan.ok() && !plan.isUniform() &&
          plan.slowest < chosen->slowest * (1 - 1e-9))
        routed = std::move(plan);
    }
    if (!best.isUniform() &&
        (!routed || best.replicas != routed->replicas ||
         best.cuts != routed->cuts))
      plans.push_back(planAttr(best, false, false));
    if (routed)
      plans.push_back(planAttr(*routed, true, false));
    for (const auto &plan : uniformPlans)
      plans.push_back(planAttr(plan, !routed && plan.cuts == chosen->cuts &&
                                         plan.replicas == chosen->replicas,
                               true));
    if (routed) {
      chosen = routed;
      // NOTE: the per-stage replication goes to the function as
      // `pipe.stage_replicas`; `replicas` in pipe.partition stays 1 (no
      // K x R layout).
      func->setAttr("pipe.stage_replicas",
                    Builder(&getContext())
                        .getDenseI64ArrayAttr(chosen->replicas));
    }
    options.numStages = chosen->numStages();
    replicas = routed ? 1 : chosen->replicas.front();
    plannedSlowest = chosen->slowest;
    result = partition::evaluateCuts(graph, options, chosen->cuts);
  } else if (how == "auto") {
    result = partition::solve(graph, options);
  } else if (how == "uniform") {
    result = partition::uniform(graph, options);
  } else {
    auto cuts = manualCuts(func, nodes, splitAfter, options.numPieces());
    if (failed(cuts))
      return failure();
    result = partition::evaluateCuts(graph, options, *cuts);
  }
  if (!result.ok())
    return func.emitError() << "pipe-partition: @" << func.getSymName()
                            << ": " << result.error;
  // Activation recomputation: the mode on the function (for the report),
  // the recomputing pieces on the module (for pipe-recompute).
  if (options.recompute != partition::Recompute::None) {
    Builder b(&getContext());
    func->setAttr("pipe.recompute_mode",
                  b.getStringAttr(options.recompute ==
                                          partition::Recompute::Full
                                      ? "full"
                                      : "auto"));
    SmallVector<int64_t> recomputing;
    for (auto [p, piece] : llvm::enumerate(result.pieces))
      if (piece.recompute)
        recomputing.push_back(p);
    func->getParentOfType<ModuleOp>()->setAttr(
        "pipe.recompute", b.getDenseI64ArrayAttr(recomputing));
  }

  MLIRContext *context = &getContext();
  int64_t k = options.numStages;
  // Loop placement (piece p on rank p % K), or the V of zb-v / dualpipe-v
  // (piece p and 2K-1-p on rank p).
  bool vShaped =
      schedule::Config{options.kind, k, 1, options.numChunks}.isVShaped();
  auto stageOf = [&](int64_t piece) {
    return StageAttr::getForVirtualIndex(context, piece, k, vShaped);
  };
  llvm::DenseMap<Operation *, int64_t> pieceOf;
  for (int64_t p = 0; p < options.numPieces(); ++p)
    for (int64_t i = result.cuts[p]; i < result.cuts[p + 1]; ++i)
      pieceOf[nodes[i]] = p;
  int64_t lastPiece = options.numPieces() - 1;
  // The piece of the first placed user of a value (constants, arguments).
  auto firstUserPiece = [&](Value value, int64_t fallback) {
    int64_t best = -1;
    for (Operation *user : value.getUsers()) {
      Operation *top = func.getBody().front().findAncestorOpInBlock(*user);
      auto it = top ? pieceOf.find(top) : pieceOf.end();
      int64_t p = it != pieceOf.end() ? it->second : lastPiece;
      if (best < 0 || p < best)
        best = p;
    }
    return best < 0 ? fallback : best;
  };
  for (Operation &op : func.getBody().front()) {
    if (op.hasTrait<OpTrait::IsTerminator>())
      continue;
    auto it = pieceOf.find(&op);
    int64_t p = it != pieceOf.end()
                    ? it->second
                    : (op.getNumResults() ? firstUserPiece(op.getResult(0), 0)
                                          : 0);
    op.setAttr(PipeDialect::kStageAttrName, stageOf(p));
  }
  for (BlockArgument arg : func.getArguments())
    func.setArgAttr(arg.getArgNumber(), PipeDialect::kStageAttrName,
                    stageOf(firstUserPiece(arg, 0)));
  Operation *terminator = func.getBody().front().getTerminator();
  for (auto [i, value] : llvm::enumerate(terminator->getOperands())) {
    int64_t p = 0;
    if (Operation *def = value.getDefiningOp())
      p = pieceOf.count(def) ? pieceOf[def] : lastPiece;
    else
      p = firstUserPiece(value, 0);
    func.setResultAttr(i, PipeDialect::kStageAttrName, stageOf(p));
  }

  // The other methods on the same function, for the partition report
  // (pipe-report-partition reads them instead of solving again).
  Builder b(context);
  FloatAttr uniformSlowest, autoSlowest;
  if (how == "uniform") {
    uniformSlowest = b.getF64FloatAttr(result.slowest);
  } else if (partition::Result uniform = partition::uniform(graph, options);
             uniform.ok()) {
    uniformSlowest = b.getF64FloatAttr(uniform.slowest);
  }
  if (how == "auto" && numRanks == 0) {
    autoSlowest = b.getF64FloatAttr(result.slowest);
  } else if (missing == 0) {
    if (partition::Result best = partition::solve(graph, options); best.ok())
      autoSlowest = b.getF64FloatAttr(best.slowest);
  }
  std::optional<ScheduleKind> kind = toScheduleKindAttr(options.kind);
  if (!kind)
    return func.emitError()
           << "pipe-partition: schedule '" << schedule::kindName(options.kind)
           << "' has no #pipe.schedule kind";
  func->setAttr(
      PipeDialect::kPartitionAttrName,
      PartitionAttr::get(
          context, how, options.numStages, options.numChunks, *kind,
          options.numMicrobatches, options.optimizerStates,
          b.getF64FloatAttr(result.slowest), b.getF64FloatAttr(result.ideal),
          uniformSlowest, autoSlowest, memoryBytes, numRanks > 0 ? replicas : 0,
          numRanks > 0 ? b.getF64FloatAttr(plannedSlowest) : FloatAttr(),
          plans));
  if (!result.fitsMemory)
    func.emitWarning() << "pipe-partition: the " << how
                       << " partition exceeds memory-limit on some stage";
  return success();
}

void PartitionPass::runOnOperation() {
  ModuleOp module = getOperation();
  partition::Options options;
  options.numStages = numStages;
  options.numChunks = numChunks;
  if (numStages < 1 || numChunks < 1) {
    module.emitError() << "pipe-partition: stages and virtual must be at "
                          "least 1";
    return signalPassFailure();
  }
  if (numRanks < 0 ||
      (numRanks > 0 && (method != "auto" || !splitAfter.empty() ||
                        numChunks != 1))) {
    module.emitError() << "pipe-partition: ranks=" << numRanks.getValue()
                       << ": the replication planner needs method=auto, no "
                          "split-after and virtual=1";
    return signalPassFailure();
  }
  if (method != "auto" && method != "uniform") {
    module.emitError() << "pipe-partition: unknown method '" << method
                       << "' (auto or uniform; split-after=... for manual)";
    return signalPassFailure();
  }
  std::optional<schedule::Kind> kind = schedule::parseKind(scheduleKind);
  if (!kind) {
    module.emitError() << "pipe-partition: unknown schedule '" << scheduleKind
                       << "' (" << schedule::kindNameList() << ")";
    return signalPassFailure();
  }
  // Virtual chunks imply Megatron's interleaved schedule.
  if (numChunks > 1 && *kind == schedule::Kind::OneFOneB)
    kind = schedule::Kind::Interleaved1F1B;
  options.kind = *kind;
  options.numMicrobatches = numMicrobatches > 0 ? numMicrobatches : numStages;
  options.optimizerStates = optimizerStates;
  if (recompute == "none")
    options.recompute = partition::Recompute::None;
  else if (recompute == "full")
    options.recompute = partition::Recompute::Full;
  else if (recompute == "auto")
    options.recompute = partition::Recompute::Auto;
  else {
    module.emitError() << "pipe-partition: unknown recompute '" << recompute
                       << "' (none, full or auto)";
    return signalPassFailure();
  }
  int64_t memoryBytes = 0;
  if (!memoryLimit.empty()) {
    std::optional<int64_t> bytes = parseByteSize(memoryLimit);
    if (!bytes || *bytes <= 0) {
      module.emitError() << "pipe-partition: memory-limit='" << memoryLimit
                         << "' is not a positive byte count (e.g. 80GiB)";
      return signalPassFailure();
    }
    memoryBytes = *bytes;
  }
  options.memoryLimit = memoryBytes;
  if (auto device = DeviceModel::fromAttr(module->getAttr(kDeviceAttrName))) {
    options.linkBandwidth = device->linkBandwidth;
    options.linkLatency = device->linkLatency;
  }
  bool any = false;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isExternal() || !func.isPublic() ||
        func->hasAttr(PipeDialect::kStageAttrName))
      continue;
    any = true;
    if (failed(partitionFunction(func, options, memoryBytes)))
      return signalPassFailure();
  }
  if (!any) {
    module.emitError() << "pipe-partition: no public function with a body to "
                          "partition";
    return signalPassFailure();
  }
}
