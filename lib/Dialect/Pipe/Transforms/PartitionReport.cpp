//===- PartitionReport.cpp - the partition report -------------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Dialect/Pipe/Transforms/PartitionReport.h"

#include "pipedream/Dialect/Pipe/IR/PipeAttrs.h"
#include "pipedream/Dialect/Pipe/IR/PipeDialect.h"
#include "pipedream/Dialect/Pipe/Transforms/CostModel.h"
#include "pipedream/Dialect/Pipe/Transforms/Passes.h"
#include "pipedream/Dialect/Pipe/Transforms/ScheduleAttrs.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <set>

using namespace mlir;
using namespace pipedream;
namespace pp = pipedream::pipe;
namespace partition = pipedream::pipe::partition;

FailureOr<PartitionReport> pipedream::collectPartitionReport(ModuleOp module) {
  func::FuncOp func;
  pp::PartitionAttr summary;
  for (auto f : module.getOps<func::FuncOp>())
    if ((summary = f->getAttrOfType<pp::PartitionAttr>(
             pp::PipeDialect::kPartitionAttrName))) {
      func = f;
      break;
    }
  if (!func)
    return module.emitError()
           << "no partitioned function (run pipe-partition first)";
  auto toDouble = [](FloatAttr attr, double fallback) {
    return attr ? attr.getValueAsDouble() : fallback;
  };
  PartitionReport report;
  report.function = func.getSymName().str();
  report.method = summary.getMethod().str();
  report.stages = summary.getStages();
  report.virtualStages = summary.getChunks();
  report.microbatches = summary.getMicrobatches();
  report.schedule = pp::stringifyScheduleKind(summary.getSchedule()).str();
  report.memoryLimit = summary.getMemoryLimit();
  report.uniformSlowest = toDouble(summary.getUniformSlowest(), -1);
  report.autoSlowest = toDouble(summary.getAutoSlowest(), -1);

  partition::Options options;
  options.numStages = report.stages;
  options.numChunks = report.virtualStages;
  options.kind = pp::toScheduleKind(summary.getSchedule());
  options.numMicrobatches = report.microbatches;
  options.memoryLimit = report.memoryLimit;
  options.optimizerStates = summary.getOptimizerStates();
  if (auto device =
          pp::DeviceModel::fromAttr(module->getAttr(pp::kDeviceAttrName))) {
    report.device = device->name;
    options.linkBandwidth = device->linkBandwidth;
    options.linkLatency = device->linkLatency;
  }

  // pipe-partition recompute=full|auto (the pieces' choice is re-made by
  // the evaluator from the same rule).
  if (auto mode = func->getAttrOfType<StringAttr>("pipe.recompute_mode")) {
    options.recompute = mode.getValue() == "full"
                            ? partition::Recompute::Full
                            : partition::Recompute::Auto;
    report.recompute = mode.str();
  }
  SmallVector<Operation *> nodes;
  int64_t missing = 0;
  partition::Graph graph = pp::buildPartitionGraph(func, nodes, missing);
  report.numOps = nodes.size();
  bool profiled = false, analytical = false;
  for (Operation *op : nodes)
    if (auto cost = pp::OpCost::fromAttr(op->getAttr(pp::kCostAttrName)))
      (cost->source == "profile" ? profiled : analytical) = true;
  report.costSource = missing == static_cast<int64_t>(nodes.size()) ? "none"
                      : profiled && analytical ? "profile + analytical"
                      : profiled               ? "profile"
                                               : "analytical";

  // Cut points from the stage attributes (pieces are contiguous in body
  // order after pipe-partition).
  int64_t pieces = options.numPieces();
  std::vector<int64_t> cuts(pieces + 1, 0);
  std::vector<int64_t> count(pieces, 0);
  int64_t previous = 0;
  for (auto [i, op] : llvm::enumerate(nodes)) {
    auto stage =
        op->getAttrOfType<pp::StageAttr>(pp::PipeDialect::kStageAttrName);
    if (!stage)
      return op->emitError() << "an op has no pipe.stage";
    int64_t piece = stage.getVirtualIndex(report.stages);
    if (piece < previous || piece >= pieces)
      return op->emitError() << "the stages are not contiguous in op order";
    previous = piece;
    ++count[piece];
  }
  for (int64_t p = 0; p < pieces; ++p)
    cuts[p + 1] = cuts[p] + count[p];
  // The costs of the pieces (an evaluation of the recorded cuts; the
  // comparisons with the other methods are the partition's own).
  partition::Result result = partition::evaluateCuts(graph, options, cuts);
  if (!result.ok())
    return func.emitError() << result.error;
  report.slowest = result.slowest;
  report.slowestStage = result.slowestPiece;
  report.ideal = result.ideal;
  report.fitsMemory = result.fitsMemory;
  for (int64_t p = 0; p < pieces; ++p) {
    StageReport stage;
    // Loop placement, or the V of zb-v / dualpipe-v (piece p and 2K-1-p
    // on rank p).
    pp::schedule::Config placement{options.kind, report.stages, 1,
                                   report.virtualStages};
    stage.index = placement.rankOf(p);
    stage.chunk = placement.chunkOf(p);
    stage.rank = stage.index;
    stage.numOps = count[p];
    stage.cost = result.pieces[p];
    if (count[p] > 0) {
      stage.firstOp = pp::getOpName(nodes[cuts[p]]);
      stage.lastOp = pp::getOpName(nodes[cuts[p + 1] - 1]);
    }
    report.stageReports.push_back(stage);
  }
  // Parameters, each weight once, and the weights several stages read.
  for (BlockArgument arg : func.getArguments()) {
    unsigned i = arg.getArgNumber();
    if (!func.getArgAttr(i, "nn.param") || func.getArgAttr(i, "nn.frozen"))
      continue;
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || !type.hasStaticShape())
      continue;
    int64_t bytes = type.getNumElements() *
                    std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
    report.numParameters += type.getNumElements();
    report.parameterBytes += bytes;
    std::set<int64_t> stages, ranks;
    for (Operation *user : arg.getUsers()) {
      Operation *top = func.getBody().front().findAncestorOpInBlock(*user);
      auto stage = top ? top->getAttrOfType<pp::StageAttr>(
                             pp::PipeDialect::kStageAttrName)
                       : pp::StageAttr();
      if (!stage)
        continue;
      stages.insert(stage.getVirtualIndex(report.stages));
      ranks.insert(stage.getRank());
    }
    if (ranks.size() < 2)
      continue;
    SharedWeightReport shared;
    auto name = func.getArgAttrOfType<StringAttr>(i, "nn.name");
    shared.name = name ? name.str() : "arg" + std::to_string(i);
    shared.bytes = bytes;
    shared.stages.assign(stages.begin(), stages.end());
    shared.ranks.assign(ranks.begin(), ranks.end());
    shared.updatesPerStep =
        options.kind == pp::schedule::Kind::PipeDream ? report.microbatches
        : options.kind == pp::schedule::Kind::TwoBW
            ? std::max<int64_t>(1, report.microbatches / report.stages)
            : 1;
    int64_t n = shared.ranks.size();
    shared.bytesPerStep = 2 * (n - 1) * bytes / n * shared.updatesPerStep;
    report.sharedWeights.push_back(std::move(shared));
  }
  return report;
}

//===----------------------------------------------------------------------===//
// Printing
//===----------------------------------------------------------------------===//

static std::string formatTime(double seconds) {
  if (seconds == 0)
    return "0";
  if (seconds < 1e-3)
    return llvm::formatv("{0:F2} us", seconds * 1e6).str();
  if (seconds < 1)
    return llvm::formatv("{0:F2} ms", seconds * 1e3).str();
  return llvm::formatv("{0:F2} s", seconds).str();
}

static std::string formatBytes(int64_t bytes) {
  if (bytes < 1024)
    return llvm::formatv("{0} B", bytes).str();
  if (bytes < 1024 * 1024)
    return llvm::formatv("{0:F1} KiB", bytes / 1024.0).str();
  if (bytes < (int64_t(1) << 30))
    return llvm::formatv("{0:F1} MiB", bytes / (1024.0 * 1024)).str();
  return llvm::formatv("{0:F2} GiB", bytes / double(int64_t(1) << 30)).str();
}

void pipedream::printPartitionReport(const PartitionReport &r,
                                     llvm::raw_ostream &os) {
  int64_t pieces = r.stageReports.size();
  os << "partition of @" << r.function << ": " << r.method << ", " << r.stages
     << " stage" << (r.stages == 1 ? "" : "s");
  if (r.virtualStages > 1)
    os << " x " << r.virtualStages << " chunks";
  os << ", schedule " << r.schedule << ", " << r.microbatches << " micro-batch"
     << (r.microbatches == 1 ? "" : "es") << "\n";
  os << "cost model: " << r.costSource << ", device " << r.device;
  if (r.memoryLimit > 0)
    os << ", memory limit " << formatBytes(r.memoryLimit) << " per rank";
  os << "\n";
  os << llvm::formatv("{0,5} {1,5} {2,4} {3,5} {4,10} {5,10} {6,10} {7,10} "
                      "{8,10} {9,11} {10,10} {11,10}  {12}\n",
                      "stage", "chunk", "rank", "ops", "forward", "backward",
                      "comm", "time", "params", "activations", "cut-out",
                      "memory", "ops (first .. last)");
  for (const StageReport &s : r.stageReports) {
    const partition::Piece &c = s.cost;
    os << llvm::formatv(
        "{0,5} {1,5} {2,4} {3,5} {4,10} {5,10} {6,10} {7,10} {8,10} {9,11} "
        "{10,10} {11,10}  {12} .. {13}\n",
        s.index, s.chunk, s.rank, s.numOps, formatTime(c.forward),
        formatTime(c.backwardInput + c.backwardWeight), formatTime(c.comm),
        formatTime(c.time), formatBytes(c.parameterBytes + c.frozenBytes),
        formatBytes(c.activationBytes), formatBytes(c.sendBytes),
        formatBytes(c.memory), s.firstOp.empty() ? "?" : s.firstOp,
        s.lastOp.empty() ? "?" : s.lastOp);
  }
  const StageReport &slow = r.stageReports[r.slowestStage];
  os << "slowest: stage " << slow.index;
  if (r.virtualStages > 1)
    os << " chunk " << slow.chunk;
  os << ", " << formatTime(r.slowest) << "; ideal (total compute / " << pieces
     << "): " << formatTime(r.ideal);
  if (r.ideal > 0)
    os << llvm::formatv("; slowest/ideal {0:F3}", r.slowest / r.ideal);
  os << "\n";
  if (r.method != "uniform" && r.uniformSlowest > 0) {
    os << "uniform (equal op counts): slowest " << formatTime(r.uniformSlowest);
    if (r.ideal > 0)
      os << llvm::formatv(", slowest/ideal {0:F3}", r.uniformSlowest / r.ideal);
    os << llvm::formatv("; this partition is {0:F2}x faster\n",
                        r.uniformSlowest / r.slowest);
  }
  if (r.method != "auto" && r.autoSlowest > 0) {
    os << "auto (dynamic program): slowest " << formatTime(r.autoSlowest);
    if (r.ideal > 0)
      os << llvm::formatv(", slowest/ideal {0:F3}", r.autoSlowest / r.ideal);
    os << "\n";
  }
  os << "parameters: " << r.numParameters << " trainable ("
     << formatBytes(r.parameterBytes) << "), each shared weight counted once";
  os << "\n";
  auto list = [](const std::vector<int64_t> &values) {
    std::string text;
    for (int64_t v : values)
      text += (text.empty() ? "" : ", ") + std::to_string(v);
    return text;
  };
  for (const SharedWeightReport &w : r.sharedWeights)
    os << "shared weight '" << w.name << "' (" << formatBytes(w.bytes)
       << "): stages " << list(w.stages) << " on ranks " << list(w.ranks)
       << "; a copy on each, gradient all-reduced before each of "
       << w.updatesPerStep << " update" << (w.updatesPerStep == 1 ? "" : "s")
       << " per step: " << formatBytes(w.bytesPerStep)
       << " sent per rank per step\n";
  if (r.recompute != "none") {
    os << "recompute (" << r.recompute << "):";
    bool any = false;
    for (const StageReport &s : r.stageReports)
      if (s.cost.recompute) {
        os << (any ? "," : "") << " stage " << s.index;
        if (r.virtualStages > 1)
          os << " chunk " << s.chunk;
        os << " stashes " << formatBytes(s.cost.stashBytes) << " instead of "
           << formatBytes(s.cost.activationBytes) << " per micro-batch";
        any = true;
      }
    if (!any)
      os << " no stage";
    os << "\n";
  }
  if (!r.fitsMemory)
    os << "warning: some stage exceeds the memory limit\n";
}

llvm::json::Object pipedream::partitionReportJSON(const PartitionReport &r) {
  llvm::json::Array stages;
  for (const StageReport &s : r.stageReports) {
    const partition::Piece &c = s.cost;
    stages.push_back(llvm::json::Object{
        {"index", s.index},
        {"chunk", s.chunk},
        {"ranks", llvm::json::Array{s.rank}},
        {"op_count", s.numOps},
        {"first_op", s.firstOp},
        {"last_op", s.lastOp},
        {"forward_time", c.forward},
        {"backward_time", c.backwardInput + c.backwardWeight},
        {"backward_input_time", c.backwardInput},
        {"backward_weight_time", c.backwardWeight},
        {"comm_time", c.comm},
        {"time", c.time},
        {"parameter_bytes", c.parameterBytes},
        {"frozen_bytes", c.frozenBytes},
        {"activation_bytes", c.activationBytes},
        {"cut_bytes", c.sendBytes},
        {"gradient_bytes", c.gradientBytes},
        {"in_flight_microbatches", c.inFlight},
        {"weight_versions", c.weightVersions},
        {"memory_bytes", c.memory},
        {"shared_copy_bytes", c.sharedCopyBytes},
        {"all_reduce_bytes", c.allReduceBytes},
        {"recompute", c.recompute},
        {"stash_bytes", c.stashBytes},
    });
  }
  llvm::json::Object partitionSection{
      {"function", r.function},
      {"method", r.method},
      {"stages", r.stages},
      {"virtual_stages", r.virtualStages},
      {"schedule", r.schedule},
      {"microbatches", r.microbatches},
      {"device", r.device},
      {"cost_model", r.costSource},
      {"memory_limit_bytes", r.memoryLimit},
      {"recompute", r.recompute},
      {"fits_memory", r.fitsMemory},
      {"slowest_stage", r.slowestStage},
      {"slowest_time", r.slowest},
      {"ideal_time", r.ideal},
      {"slowest_over_ideal", r.ideal > 0 ? r.slowest / r.ideal : 0.0},
  };
  if (r.uniformSlowest > 0) {
    partitionSection["uniform_slowest_time"] = r.uniformSlowest;
    partitionSection["uniform_over_ideal"] =
        r.ideal > 0 ? r.uniformSlowest / r.ideal : 0.0;
  }
  partitionSection["num_ops"] = r.numOps;
  if (r.autoSlowest > 0) {
    if (r.solveSeconds >= 0)
      partitionSection["dp_seconds"] = r.solveSeconds;
    partitionSection["auto_slowest_time"] = r.autoSlowest;
    partitionSection["auto_over_ideal"] =
        r.ideal > 0 ? r.autoSlowest / r.ideal : 0.0;
  }
  partitionSection["parameters"] = r.numParameters;
  partitionSection["parameter_bytes"] = r.parameterBytes;
  llvm::json::Array shared;
  for (const SharedWeightReport &w : r.sharedWeights) {
    llvm::json::Array stageList, rankList;
    for (int64_t v : w.stages)
      stageList.push_back(v);
    for (int64_t q : w.ranks)
      rankList.push_back(q);
    shared.push_back(
        llvm::json::Object{{"name", w.name},
                           {"bytes", w.bytes},
                           {"stages", std::move(stageList)},
                           {"ranks", std::move(rankList)},
                           {"updates_per_step", w.updatesPerStep},
                           {"all_reduce_bytes_per_step", w.bytesPerStep}});
  }
  return llvm::json::Object{{"stages", std::move(stages)},
                            {"partition", std::move(partitionSection)},
                            {"shared_weights", std::move(shared)}};
}
