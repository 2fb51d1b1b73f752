//===- Driver.cpp - ONNX model to a bundle, as a library -------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The driver of pipedream-compile (include/pipedream/Driver/Driver.h), one
// flow for single-rank and pipelined compiles:
//
//   resolve the options (Pipelines/Options.h) -> import (ONNX or .mlir) ->
//   [mark trainable] -> single rank: training functions (nn::Training) |
//   pipelined: partition -> outline -> schedule -> per-rank programs ->
//   convert-nn-to-linalg -> code generation -> program.so + bundle.json +
//   weights.bin.
//
// With an IR phase (`--emit` nn, train, partitioned, scheduled, linalg,
// llvm-dialect, llvm) it stops after that phase and returns its IR. The
// phases' pass pipelines are lib/Pipelines' builders, the ones
// pipedream-opt registers. Every error is one line (CompileResult::error).
//
//===----------------------------------------------------------------------===//

#include "pipedream/Driver/Driver.h"
#include "pipedream/Compiler/Bundle.h"
#include "pipedream/Compiler/BundleRanks.h"
#include "pipedream/Compiler/ReplicaLayout.h"
#include "pipedream/Compiler/ScheduleChoice.h"
#include "pipedream/Conversion/NNToLinalg/NNToLinalg.h"
#include "pipedream/Dialect/NN/IR/NNDialect.h"
#include "pipedream/Dialect/NN/Transforms/Trainable.h"
#include "pipedream/Dialect/NN/Transforms/Training.h"
#include "pipedream/Dialect/Pipe/IR/PipeAttrs.h"
#include "pipedream/Dialect/Pipe/IR/PipeDialect.h"
#include "pipedream/Dialect/Pipe/Transforms/CostModel.h"
#include "pipedream/Dialect/Pipe/Transforms/PartitionReport.h"
#include "pipedream/Dialect/Pipe/Transforms/Passes.h"
#include "pipedream/Dialect/Pipe/Transforms/Schedule.h"
#include "pipedream/Dialect/Pipe/Transforms/ScheduleCSV.h"
#include "pipedream/Dialect/Pipe/Transforms/ScheduleReport.h"
#include "pipedream/Driver/ModelLowering.h"
#include "pipedream/Import/ONNX/ImportONNX.h"
#include "pipedream/InitAllDialects.h"
#include "pipedream/Pipelines/Pipelines.h"
#include "pipedream/Support/CompileTiming.h"
#include "pipedream/Support/Diagnostics.h"
#include "pipedream/Target/CPU/CPUCodegen.h"
#include "pipedream/Target/CPU/Workspace.h"
#include "pipedream/Target/GPU/CUDACodegen.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

#include <chrono>
#include <mutex>

using namespace mlir;
using namespace pipedream;
namespace sched = pipedream::pipe::schedule;

/// Runs the passes `populate` adds on `module`, their errors formatted as
/// `format` by `errors` (`fallback` when the passes report none).
static LogicalResult
runPhasePipeline(ModuleOp module,
                 llvm::function_ref<void(OpPassManager &)> populate,
                 FirstErrorHandler &errors, FirstErrorHandler::Format format,
                 StringRef fallback) {
  ScopedErrorFormat scopedFormat(errors, format);
  PassManager pm(module.getContext(), ModuleOp::getOperationName());
  attachPassTiming(pm);
  populate(pm);
  if (succeeded(pm.run(module)))
    return success();
  return emitError(module.getContext()) << fallback;
}

/// Every dialect the driver's phases use (the CUDA target's registrations
/// include the CPU target's).
static DialectRegistry driverDialects() {
  DialectRegistry registry;
  pipedream::registerAllDialects(registry);
  pipedream::registerONNXImportDialects(registry);
  pipedream::cuda::registerCUDACodegenDialects(registry);
  return registry;
}

/// Imports the ONNX model (or parses the .mlir file) of `o` into `context`.
static FailureOr<OwningOpRef<ModuleOp>> loadModel(const ImportPhaseOptions &o,
                                                  MLIRContext &context) {
  TimedPhase phase("import");
  if (o.isMLIR) {
    llvm::SourceMgr sourceMgr;
    std::string openError;
    auto file = openInputFile(o.input, &openError);
    if (!file)
      return emitError(&context) << o.input << ": " << openError;
    sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
    OwningOpRef<ModuleOp> module =
        parseSourceFile<ModuleOp>(sourceMgr, &context);
    if (!module)
      return emitError(&context) << o.input << ": cannot parse";
    return module;
  }
  ImportOptions importOptions;
  importOptions.runChecker = o.runONNXChecker;
  if (o.microbatchSize)
    importOptions.batchSize = *o.microbatchSize;
  for (const std::string &shape : o.inputShapes)
    if (failed(parseInputShapeOption(context, shape, importOptions)))
      return failure();
  auto imported = importONNXFile(o.input, context, importOptions);
  if (failed(imported))
    return failure();
  printImportNote(**imported, o.input);
  return std::move(*imported);
}

void pipedream::registerDriverPasses() {
  static std::once_flag once;
  std::call_once(once, [] {
    pipedream::cpu::registerCPUCodegenPasses();
    pipedream::cuda::registerCUDACodegenPasses();
    pipedream::pipe::registerPipeTransformsPasses();
    // The code generator applies them to its pass managers: they must
    // exist (with their defaults) in a process without a command line.
    registerPassManagerCLOptions();
  });
}

bool pipedream::parseCompilerCommandLine(int argc, char **argv,
                                         llvm::cl::OptionCategory &category,
                                         StringRef overview) {
  // Pass names for --mlir-print-ir-after=PASS and friends (before the
  // pass manager options, whose parser lists the registered passes).
  registerDriverPasses();
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  llvm::cl::HideUnrelatedOptions(category);
  std::string errors;
  llvm::raw_string_ostream errorStream(errors);
  if (llvm::cl::ParseCommandLineOptions(argc, argv, overview, &errorStream))
    return true;
  // cl's messages start with the program name; keep only the message.
  StringRef line = StringRef(errors).split('\n').first;
  StringRef tool = llvm::sys::path::filename(argv[0]);
  if (line.starts_with(tool) && line.drop_front(tool.size()).starts_with(": "))
    line = line.drop_front(tool.size() + 2);
  printError(line);
  return false;
}

/// Compiles the lowered `module` into the bundle's program library at
/// `libraryPath` with the code generator of `p`'s target.
static LogicalResult compileProgramLibrary(
    const PhaseOptions &p, ModuleOp module, StringRef libraryPath,
    const std::vector<std::vector<std::string>> *rankRoots = nullptr,
    std::vector<cpu::WorkspaceEstimate> *workspace = nullptr) {
  switch (p.target.target) {
  case CompileTarget::CPU: {
    LogicalResult result = failure();
    if (!rankRoots || !workspace ||
        (p.codegen.cpu.gemm == cpu::GemmLowering::BLAS &&
         !cpu::isBLASAvailable())) {
      result = cpu::compileToSharedLibrary(module, p.codegen.cpu, libraryPath);
    } else if (succeeded(cpu::lowerToLLVMDialect(module, p.codegen.cpu))) {
      // Lowered first, so each rank's workspace can be read off the LLVM
      // dialect module (report.json `rank_memory`, Workspace.h).
      workspace->clear();
      for (const std::vector<std::string> &roots : *rankRoots)
        workspace->push_back(cpu::estimateWorkspace(module, roots));
      result = cpu::emitSharedLibrary(module, p.codegen.cpu, libraryPath,
                                      cpu::usesBLAS(p.codegen.cpu),
                                      /*runtimeSymbols=*/{});
    }
    return result;
  }
  case CompileTarget::CUDA:
    return cuda::compileToSharedLibrary(module, p.target.cuda, libraryPath);
  }
  return emitError(module.getContext()) << "unknown target";
}

/// Adds each rank's workspace (the stage functions' cached temporaries,
/// Workspace.h) to report.json's `rank_memory` entries (`workspace_bytes`,
/// and into `total_bytes`); a replicated entry takes its pipeline rank's.
/// False when the report has no `rank_memory`.
static bool
addWorkspaceToRankMemory(llvm::json::Object &report,
                         llvm::ArrayRef<cpu::WorkspaceEstimate> workspace) {
  llvm::json::Array *memory = report.getArray("rank_memory");
  if (!memory)
    return false;
  for (llvm::json::Value &value : *memory) {
    llvm::json::Object *entry = value.getAsObject();
    if (!entry)
      continue;
    std::optional<int64_t> rank = entry->getInteger("pipeline_rank");
    if (!rank)
      rank = entry->getInteger("rank");
    if (!rank || *rank < 0 || *rank >= int64_t(workspace.size()))
      continue;
    int64_t bytes = workspace[*rank].bytes;
    (*entry)["workspace_bytes"] = bytes;
    if (workspace[*rank].dynamicSites)
      (*entry)["workspace_dynamic_sites"] = workspace[*rank].dynamicSites;
    if (std::optional<int64_t> total = entry->getInteger("total_bytes"))
      (*entry)["total_bytes"] = *total + bytes;
  }
  return true;
}

/// True when `module` still holds nn ops (needs convert-nn-to-linalg).
static bool hasNNOps(ModuleOp module) {
  bool found = false;
  module.walk([&](Operation *op) {
    if (op->getDialect() &&
        op->getDialect()->getNamespace() ==
            pipedream::nn::NNDialect::getDialectNamespace()) {
      found = true;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return found;
}

void pipedream::stripModelAttributes(ModuleOp module) {
  auto isModelAttr = [](NamedAttribute attr) {
    StringRef name = attr.getName().getValue();
    return name.starts_with("nn.") || name.starts_with("onnx.");
  };
  auto filter = [&](DictionaryAttr dict) {
    SmallVector<NamedAttribute> kept;
    if (dict)
      for (NamedAttribute attr : dict)
        if (!isModelAttr(attr))
          kept.push_back(attr);
    return kept;
  };
  for (auto func : module.getOps<func::FuncOp>()) {
    for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
      func.setArgAttrs(i, filter(func.getArgAttrDict(i)));
    for (unsigned i = 0, e = func.getNumResults(); i < e; ++i)
      func.setResultAttrs(i, filter(func.getResultAttrDict(i)));
  }
  SmallVector<StringAttr> moduleAttrs;
  for (NamedAttribute attr : module->getDiscardableAttrs())
    if (isModelAttr(attr))
      moduleAttrs.push_back(attr.getName());
  for (StringAttr name : moduleAttrs)
    module->removeAttr(name);
}

LogicalResult pipedream::convertNNToLinalg(ModuleOp module) {
  registerDriverPasses();
  TimedPhase phase("nn to linalg");
  PassManager pm(module.getContext(), ModuleOp::getOperationName());
  if (failed(applyPassManagerCLOptions(pm)))
    return emitError(module.getContext()) << "invalid pass manager options";
  attachPassTiming(pm);
  pm.addNestedPass<func::FuncOp>(pipedream::createConvertNNToLinalgPass());
  if (succeeded(pm.run(module)))
    return success();
  return emitError(module.getContext()) << "convert-nn-to-linalg failed";
}

/// Returns `print`'s text as the IR of `result`.
static CompileResult &
emitIR(CompileResult &result,
       llvm::function_ref<void(llvm::raw_ostream &)> print) {
  result.hasIR = true;
  llvm::raw_string_ostream os(result.ir);
  print(os);
  return result;
}

/// nn-mark-trainable on @main with --freeze/--train: `nn.frozen` on every
/// weight that is not a parameter (docs/Training.md, "Trainable and frozen
/// weights"). The decisions go to the report.
static FailureOr<SmallVector<pipedream::nn::WeightDecision>>
markTrainable(const TrainingPhaseOptions &o, ModuleOp module) {
  TimedPhase phase("trainable weights");
  auto main = module.lookupSymbol<func::FuncOp>("main");
  if (!main || main.isDeclaration())
    return emitError(module.getContext())
           << "training: no function 'main' with a body to train";
  pipedream::nn::TrainableOptions options;
  options.freeze.assign(o.freeze.begin(), o.freeze.end());
  options.train.assign(o.train.begin(), o.train.end());
  SmallVector<std::string> constants;
  if (auto names = module->getAttrOfType<ArrayAttr>(
          pipedream::import_attrs::kConstantInitializers))
    for (auto name : names.getAsRange<StringAttr>())
      constants.push_back(name.getValue().str());
  auto decisions = pipedream::nn::markFrozenWeights(main, options, constants);
  if (failed(decisions))
    return emitError(module.getContext()) << "cannot classify the weights";
  for (const nn::WeightDecision &d : *decisions)
    if (!d.warning.empty())
      llvm::errs() << "warning: " << d.warning << "\n";
  return decisions;
}

/// Writes `text` and a newline to `path`.
static LogicalResult writeTextFile(MLIRContext *context, StringRef path,
                                   StringRef text) {
  std::string openError;
  auto file = openOutputFile(path, &openError);
  if (!file)
    return emitError(context) << path << ": " << openError;
  file->os() << text << "\n";
  file->keep();
  return success();
}

/// The manifest's `optimizer` object (docs/Bundle.md): the optimizer that
/// runs (`--optimizer sgd --momentum F` is `momentum`).
static llvm::json::Object optimizerJSON(const nn::OptimizerOptions &o) {
  return llvm::json::Object{
      {"kind", nn::stringifyOptimizerKind(o.kind)},
      {"lr", o.lr},
      {"momentum", o.kind == nn::OptimizerKind::Momentum ? o.momentum : 0.0},
      {"weight_decay", o.weightDecay},
      {"nesterov", o.nesterov},
      {"beta1", o.beta1},
      {"beta2", o.beta2},
      {"eps", o.eps},
      {"clip_grad_norm", o.clipGradNorm},
      {"lr_schedule",
       llvm::json::Object{{"kind", nn::stringifyLRScheduleKind(o.lrSchedule)},
                          {"warmup_steps", o.warmupSteps},
                          {"total_steps", o.totalSteps}}}};
}

//===----------------------------------------------------------------------===//
// Single rank: the training functions (nn/Transforms/Training.h)
//===----------------------------------------------------------------------===//

/// `@train_microbatch` and `@update`, and the manifest's `training`
/// section.
static FailureOr<llvm::json::Object>
buildSingleRankTraining(const PhaseOptions &p, ModuleOp module,
                        ArrayRef<nn::WeightDecision> weightDecisions,
                        std::vector<std::string> &dataInputs) {
  TimedPhase phase("autodiff (training program)");
  const nn::TrainingOptions &t = p.training.nn;
  auto info = nn::buildTrainingFunctions(module, t);
  if (failed(info))
    return emitError(module.getContext())
           << "cannot build the training program";
  const nn::OptimizerOptions &o = t.optimizer;
  llvm::json::Array inputs;
  for (const std::string &name : info->inputNames) {
    inputs.push_back(name);
    dataInputs.push_back(name);
  }
  llvm::json::Object section{
      {"loss", nn::stringifyLossKind(t.loss)},
      {"microbatches", t.microbatches},
      {"gradients", info->gradientsWritten ? "written" : "accumulated"},
      {"microbatch_size", info->microbatchSize},
      {"batch_size", t.microbatches * info->microbatchSize},
      {"inputs", std::move(inputs)},
      {"step_function", "train_microbatch"},
      {"update_function", "update"},
      {"optimizer", optimizerJSON(o)}};
  if (t.loss != nn::LossKind::None)
    section["labels"] = t.labelsName;
  if (t.loss == nn::LossKind::CrossEntropy)
    section["num_classes"] = info->numClasses;
  // Gradient clipping: the update writes the squared norm there.
  if (o.clipGradNorm > 0)
    section["grad_norm"] = nn::kGradNormBuffer.str();
  // --evaluate: one micro-batch's eval-mode loss.
  if (!info->evaluateFunction.empty())
    section["eval_function"] = info->evaluateFunction;
  // Informational (the runtime reads the roles of the functions).
  section["weights"] = nn::weightDecisionsJSON(weightDecisions);
  return section;
}

//===----------------------------------------------------------------------===//
// Pipelines: partition, schedule, per-rank programs (docs/Pipe.md)
//===----------------------------------------------------------------------===//

/// The schedule report (simulated with the partition's per-stage costs)
/// into `json` and `text`, and the --trace / --timeline files.
static LogicalResult reportSchedule(MLIRContext *context, const PhaseOptions &p,
                                    const PartitionReport &partition,
                                    llvm::json::Object &json,
                                    std::string &text) {
  const sched::Config &config = p.schedule.config;
  sched::Schedule schedule = p.schedule.fromCsv ? *p.schedule.fromCsv
                                                : sched::buildSchedule(config);
  sched::ReportOptions options = reportOptionsFromPartition(
      partition, config, p.training.optimizerStates());
  sched::Report report = sched::buildReport(schedule, options);
  sched::Report unitReport = sched::buildReport(schedule, {});
  llvm::json::Object scheduleJSON = sched::reportToJSON(report);
  for (auto &entry : scheduleJSON)
    json[entry.first] = std::move(entry.second);
  json["bubble_fraction_unit_costs"] = unitReport.bubbleFraction;
  json["optimizer_states"] = options.optimizerStates;
  int64_t k = config.numRanks, v = config.numChunks,
          m = config.numMicrobatches;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv(
      "schedule {0}: K = {1}, V = {2}, M = {3}; verified: {4}\n",
      sched::kindName(config.kind), k, v, m, report.verified ? "yes" : "no");
  os << llvm::formatv("bubble fraction: {0:f3} simulated with the stage "
                      "costs, {1:f3} with unit costs (theory for "
                      "synchronous schedules (K-1)/(V*M+K-1) = {2:f3})\n",
                      report.bubbleFraction, unitReport.bubbleFraction,
                      double(k - 1) / double(v * m + k - 1));
  os << llvm::formatv("optimizer {0}: {1} state copies per trainable "
                      "weight\n",
                      nn::stringifyOptimizerKind(p.training.nn.optimizer.kind),
                      options.optimizerStates);
  for (size_t r = 0; r < report.activationSlots.size(); ++r)
    os << llvm::formatv("rank {0}: peak stash {1} micro-batches, {2} weight "
                        "versions, peak memory {3} bytes\n",
                        r, report.activationSlots[r], report.weightVersions[r],
                        report.peakMemoryBytes[r]);
  if (!p.schedule.exportScheduleCsv.empty())
    if (std::string err = sched::writeTextFile(
            p.schedule.exportScheduleCsv, sched::exportScheduleCSV(schedule));
        !err.empty())
      return emitError(context) << "--export-schedule-csv: " << err;
  if (!p.schedule.trace.empty())
    if (std::string err = sched::writeTextFile(
            p.schedule.trace, sched::traceJSON(schedule, report, options));
        !err.empty())
      return emitError(context) << err;
  if (!p.schedule.timeline.empty())
    if (std::string err = sched::writeTextFile(
            p.schedule.timeline, sched::timelineSVG(schedule, report));
        !err.empty())
      return emitError(context) << err;
  json["verified"] = report.verified;
  return success();
}

/// What the partition and schedule phases leave for the report and the
/// bundle.
struct PipelineState {
  PartitionReport partition;
  llvm::json::Object json;
  std::string scheduleText;
  /// --ranks: the plans the planner compared (report text and JSON).
  std::string planText;
  llvm::json::Array plansJSON;
  /// Replicated stages: the rank layout and memory per rank (the bundle's).
  std::string replicaText;
  /// Per pipeline rank: the program.so symbols its step runs (its native
  /// entry and the functions it calls), for its workspace.
  std::vector<std::vector<std::string>> rankRoots;
  /// Read before the schedule phase replaces @main (docs/Bundle.md,
  /// "Pipeline bundles": `inputs`, `microbatch_size`, `num_classes`).
  std::vector<std::string> dataInputs;
  int64_t microbatchSize = 0, numClasses = 0;
};

/// What a pipeline bundle's runtime needs to feed the ranks, from the
/// (outlined) driver function @main: its data inputs, the micro-batch size
/// and the number of classes.
static void collectPipelineInputs(ModuleOp module, PipelineState &state) {
  auto main = module.lookupSymbol<func::FuncOp>("main");
  if (!main)
    return;
  for (unsigned i = 0, e = main.getNumArguments(); i < e; ++i) {
    if (main.getArgAttr(i, nn::NNDialect::kParamAttrName))
      continue;
    auto name =
        main.getArgAttrOfType<StringAttr>(i, nn::NNDialect::kNameAttrName);
    state.dataInputs.push_back(name ? name.getValue().str()
                                    : "arg" + std::to_string(i));
    auto type = cast<RankedTensorType>(main.getArgumentTypes()[i]);
    if (!state.microbatchSize && type.getRank())
      state.microbatchSize = type.getDimSize(0);
  }
  if (main.getNumResults())
    if (auto pred = dyn_cast<RankedTensorType>(main.getResultTypes()[0]);
        pred && pred.getRank())
      state.numClasses = pred.getShape().back();
}


/// Partition (and, unless only `partitioned` is asked for, schedule)
/// `module`: the phase pipelines of lib/Pipelines, the partition report
/// between them.
static LogicalResult partitionAndSchedule(
    PhaseOptions &p, ModuleOp module,
    const std::optional<SmallVector<nn::WeightDecision>> &weightDecisions,
    PipelineState &state, FirstErrorHandler &errors) {
  std::optional<TimedPhase> partitionPhase;
  partitionPhase.emplace("partition");
  auto start = std::chrono::steady_clock::now();
  if (failed(runPhasePipeline(
          module,
          [&](OpPassManager &pm) { buildPartitionPipeline(pm, p.partition); },
          errors, FirstErrorHandler::Format::MessageOnly,
          "partitioning failed")))
    return failure();
  double partitionSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  FailureOr<PartitionReport> report;
  {
    ScopedErrorFormat scopedFormat(errors,
                                   FirstErrorHandler::Format::MessageOnly);
    report = collectPartitionReport(module);
    if (failed(report))
      return failure();
  }
  state.partition = std::move(*report);
  state.partition.solveSeconds = partitionSeconds;
  // --ranks N: the schedule phase runs the planner's K x R plan.
  if (p.partition.ranks > 0) {
    int64_t replicas = 1;
    SmallVector<int64_t> stageReplicas;
    for (auto f : module.getOps<func::FuncOp>()) {
      if (auto summary = f->getAttrOfType<pipe::PartitionAttr>(
              pipe::PipeDialect::kPartitionAttrName))
        replicas = std::max<int64_t>(1, summary.getReplicas());
      // Non-uniform replication (pipe-partition's 1F1B-RR plan).
      if (auto routed =
              f->getAttrOfType<DenseI64ArrayAttr>("pipe.stage_replicas")) {
        stageReplicas.assign(routed.asArrayRef().begin(),
                             routed.asArrayRef().end());
      }
    }
    if (stageReplicas.empty()) {
      if (failed(applyReplicationPlan(module.getContext(), p,
                                      state.partition.stages, replicas)))
        return failure();
    } else if (failed(applyRoutedReplicationPlan(module.getContext(), p,
                                                 stageReplicas))) {
      return failure();
    }
    llvm::raw_string_ostream os(state.planText);
    printReplicationPlans(module, os);
    state.plansJSON = replicationPlansJSON(module);
  }
  if (failed(runPhasePipeline(
          module, [](OpPassManager &pm) { buildOutlinePipeline(pm); }, errors,
          FirstErrorHandler::Format::MessageOnly, "outlining failed")))
    return failure();
  state.json = partitionReportJSON(state.partition);
  if (!state.plansJSON.empty())
    state.json["replication_plans"] = std::move(state.plansJSON);
  if (weightDecisions)
    state.json["weights"] = nn::weightDecisionsJSON(*weightDecisions);
  collectPipelineInputs(module, state);
  partitionPhase.reset();
  if (!p.scheduled())
    return success();
  TimedPhase schedulePhase("autodiff + schedule (stage training, unroll, "
                           "ranks)");
  if (failed(runPhasePipeline(
          module,
          [&](OpPassManager &pm) {
            buildSchedulePipeline(pm, p.training, p.schedule);
          },
          errors, FirstErrorHandler::Format::WithLocation,
          "scheduling failed")))
    return failure();
  return reportSchedule(module.getContext(), p, state.partition, state.json,
                        state.scheduleText);
}

/// The per-rank programs as native entries and the manifest's `pipeline`
/// section in `bundle` (docs/Bundle.md, "Pipeline bundles").
static LogicalResult buildPipelineBundle(const PhaseOptions &p, ModuleOp module,
                                         StringRef modelName,
                                         PipelineState &state, Bundle &bundle) {
  const std::string &prefix = p.codegen.cpu.symbolPrefix;
  std::optional<TimedPhase> rankPhase;
  rankPhase.emplace("rank programs");
  auto ranks = serializeRankPrograms(module);
  if (failed(ranks) || failed(addEvalPrograms(module, *ranks)))
    return failure();
  // Each rank's step as a native entry of program.so (docs/Bundle.md).
  if (failed(lowerRankProgramsToNative(module, *ranks, prefix)))
    return failure();
  // Non-uniform replication: one program per world rank (each stage's
  // program split over its replicas, round-robin by micro-batch).
  const std::vector<int64_t> &stageReplicas = p.schedule.stageReplicas;
  if (!stageReplicas.empty()) {
    FailureOr<llvm::json::Array> world =
        splitRoutedRankPrograms(module.getContext(), *ranks, stageReplicas);
    if (failed(world))
      return failure();
    *ranks = std::move(*world);
  }
  rankPhase.reset();
  if (failed(collectBundle(module, modelName, "", prefix, bundle)))
    return failure();
  // Each rank's weights in its own file (docs/Bundle.md), and what the
  // runtime allocates per rank into report.json (`rank_memory`).
  if (failed(assignRankWeightFiles(module.getContext(), bundle, *ranks,
                                   p.linkWeights)))
    return failure();
  const int64_t replicas = p.schedule.replicas;
  if (!stageReplicas.empty()) {
    llvm::json::Array memory =
        routedRankMemoryJSON(bundle, *ranks, stageReplicas);
    llvm::raw_string_ostream os(state.replicaText);
    printRoutedRankLayout(stageReplicas, p.schedule.config.numMicrobatches,
                          memory, os);
    state.json["rank_memory"] = std::move(memory);
    state.json["rank_layout"] = routedRankLayoutJSON(stageReplicas);
    state.json["stage_replicas"] = llvm::json::Array(stageReplicas);
  } else if (replicas > 1) {
    // Replicated stages: every world rank's memory and the layout.
    llvm::json::Array memory =
        replicatedRankMemoryJSON(bundle, *ranks, replicas);
    llvm::raw_string_ostream os(state.replicaText);
    printRankLayout(static_cast<int64_t>(ranks->size()), replicas,
                    p.schedule.shardOptimizer, memory, os);
    state.json["rank_memory"] = std::move(memory);
    state.json["rank_layout"] =
        rankLayoutJSON(static_cast<int64_t>(ranks->size()), replicas);
    state.json["replicas"] = replicas;
  } else {
    state.json["rank_memory"] = rankMemoryJSON(bundle, *ranks);
  }
  {
    llvm::StringMap<std::string> symbolOf;
    for (const BundleFunction &f : bundle.functions)
      symbolOf[f.name] = f.symbol;
    state.rankRoots.clear();
    for (const llvm::json::Value &value : *ranks) {
      std::vector<std::string> &roots = state.rankRoots.emplace_back();
      const llvm::json::Object *rank = value.getAsObject();
      if (!rank)
        continue;
      if (auto entry = rank->getString("entry")) {
        roots.push_back(entry->str());
        roots.push_back(prefix + entry->str());
      }
      // With stage_replicas a stage's evaluation program is on its replica
      // 0, world rank `pipeline_rank`, and every replica runs it.
      const llvm::json::Object *eval = rank->getObject("eval");
      if (!eval && !stageReplicas.empty())
        if (auto stage = rank->getInteger("pipeline_rank"))
          if (const llvm::json::Object *first =
                  (*ranks)[static_cast<size_t>(*stage)].getAsObject())
            eval = first->getObject("eval");
      for (const llvm::json::Array *program :
           {rank->getArray("program"),
            eval ? eval->getArray("program") : nullptr}) {
        if (!program)
          continue;
        for (const llvm::json::Value &inst : *program)
          if (const llvm::json::Object *o = inst.getAsObject())
            if (o->getString("op") == "call")
              if (auto name = o->getString("function"))
                if (auto it = symbolOf.find(*name); it != symbolOf.end())
                  roots.push_back(it->second);
      }
    }
  }
  const nn::TrainingOptions &t = p.training.nn;
  const nn::OptimizerOptions &o = t.optimizer;
  const sched::Config &config = p.schedule.config;
  llvm::json::Object section{
      {"schedule", llvm::json::Object{{"kind", sched::kindName(config.kind)},
                                      {"stages", config.numRanks},
                                      {"microbatches", config.numMicrobatches},
                                      {"chunks", config.numChunks}}},
      {"loss", nn::stringifyLossKind(t.loss)},
      {"inputs", llvm::json::Array(state.dataInputs)},
      {"microbatch_size", state.microbatchSize},
      {"batch_size",
       replicas * config.numMicrobatches * state.microbatchSize},
      {"optimizer", optimizerJSON(o)},
      {"ranks", std::move(*ranks)}};
  if (t.loss != nn::LossKind::None)
    section["labels"] = t.labelsName;
  if (t.loss == nn::LossKind::CrossEntropy)
    section["num_classes"] = state.numClasses;
  // Gradient clipping: the accumulator of the squared norm, summed over the
  // pipeline's ranks (not over replicas: its terms already are the
  // replicas' sums).
  if (o.clipGradNorm > 0)
    section["grad_norm"] = pipe::PipeDialect::kGradNormBuffer.str();
  if (!stageReplicas.empty()) {
    section["stage_replicas"] = llvm::json::Array(stageReplicas);
    section["rank_layout"] = routedRankLayoutJSON(stageReplicas);
  }
  if (replicas > 1) {
    section["replicas"] = replicas;
    section["rank_layout"] = rankLayoutJSON(
        static_cast<int64_t>(section.getArray("ranks")->size()), replicas);
  }
  llvm::raw_string_ostream os(bundle.pipelineJSON);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(section)));
  return success();
}

//===----------------------------------------------------------------------===//
// compile
//===----------------------------------------------------------------------===//

/// --schedule auto: every synchronous kind, V and M (ScheduleChoice.h),
/// each partitioned on a copy of `module`; returns `options` with the
/// winner's kind, V and M, the candidates as a table (`text`, for
/// --report) and as JSON, and prints the choice as a note.
static FailureOr<CompileOptions>
chooseAutoSchedule(const CompileOptions &options, const PhaseOptions &p,
                   ModuleOp module, std::string &text,
                   std::optional<llvm::json::Array> &json) {
  TimedPhase phase("schedule search (--schedule auto)");
  MLIRContext *context = module.getContext();
  ScheduleChoiceOptions c;
  c.stages = p.partition.stages;
  c.importMicrobatches = p.partition.microbatches;
  c.fixedBatch = p.schedule.searchMicrobatches;
  c.batchSize = options.batchSize.value_or(0);
  c.chunks = {options.virtualStages > 1 ? options.virtualStages : 2};
  if (!p.partition.memoryLimit.empty()) {
    std::optional<int64_t> bytes =
        pipe::parseByteSize(p.partition.memoryLimit);
    if (!bytes || *bytes <= 0)
      return emitError(context) << "--memory-limit " << p.partition.memoryLimit
                                << ": not a positive byte count (e.g. 80GiB)";
    c.memoryLimitBytes = *bytes;
  }
  c.optimizerStates = p.training.optimizerStates();
  c.partitionOf = [&](const sched::Config &config,
                      std::string &reason) -> FailureOr<PartitionReport> {
    // NOTE: a candidate that cannot be partitioned is a row of the table,
    // not a failure of the compile: its errors go to this handler.
    FirstErrorHandler candidateErrors(context,
                                      FirstErrorHandler::Format::MessageOnly);
    OwningOpRef<ModuleOp> copy(cast<ModuleOp>(module->clone()));
    PartitionPhaseOptions part = p.partition;
    part.schedule = config.kind;
    part.virtualStages = config.numChunks;
    part.microbatches = config.numMicrobatches;
    FailureOr<PartitionReport> report = failure();
    if (succeeded(runPhasePipeline(
            *copy, [&](OpPassManager &pm) { buildPartitionPipeline(pm, part); },
            candidateErrors, FirstErrorHandler::Format::MessageOnly,
            "partitioning failed")))
      report = collectPartitionReport(*copy);
    if (failed(report))
      reason = candidateErrors.orElse("partitioning failed");
    return report;
  };
  FailureOr<ScheduleChoice> choice = chooseSchedule(context, c);
  if (failed(choice))
    return failure();
  const sched::SearchCandidate &best = choice->candidates.front();
  llvm::raw_string_ostream os(text);
  os << "schedule search (--schedule auto): " << choice->candidates.size()
     << " candidates, simulated with each one's partition (step time in "
        "seconds, peak memory in bytes per rank)";
  if (c.memoryLimitBytes > 0)
    os << ", memory limit " << c.memoryLimitBytes << " bytes per rank";
  os << "\n" << sched::candidatesTable(choice->candidates);
  for (const auto &[config, message] : choice->unpartitioned)
    os << llvm::formatv("  {0,-16} {1,2} {2,4}  not partitioned: {3}\n",
                        sched::kindName(config.kind), config.numChunks,
                        config.numMicrobatches, message);
  json.emplace();
  for (const sched::SearchCandidate &cand : choice->candidates) {
    llvm::json::Array peaks;
    for (int64_t b : cand.peakMemoryBytes)
      peaks.push_back(b);
    json->push_back(llvm::json::Object{
        {"kind", sched::kindName(cand.config.kind)},
        {"virtual_stages", cand.config.numChunks},
        {"microbatches", cand.config.numMicrobatches},
        {"step_time", cand.stepTime},
        {"bubble_fraction", cand.bubbleFraction},
        {"peak_memory_bytes", std::move(peaks)},
        {"fits", cand.fits}});
  }
  for (const auto &[config, message] : choice->unpartitioned)
    json->push_back(llvm::json::Object{
        {"kind", sched::kindName(config.kind)},
        {"virtual_stages", config.numChunks},
        {"microbatches", config.numMicrobatches},
        {"fits", false},
        {"error", message}});
  llvm::errs() << llvm::formatv(
      "note: --schedule auto: {0} with V = {1}, M = {2} (simulated step "
      "{3:e} s, bubble {4:f3}), the best of {5} candidates (--report lists "
      "them)\n",
      sched::kindName(choice->config.kind), choice->config.numChunks,
      choice->config.numMicrobatches, best.stepTime, best.bubbleFraction,
      choice->candidates.size());
  CompileOptions chosen = options;
  chosen.schedule = sched::kindName(choice->config.kind);
  chosen.virtualStages = choice->config.numChunks;
  chosen.microbatches = choice->config.numMicrobatches;
  return chosen;
}

CompileResult pipedream::compile(const CompileOptions &options) {
  registerDriverPasses();
  CompileResult result;
  auto fail = [&](const llvm::Twine &message) {
    result.error = firstLine(message);
    return result;
  };
  auto printModule = [](ModuleOp module) {
    return [module](llvm::raw_ostream &os) { module->print(os); };
  };
  MLIRContext context(driverDialects());
  context.loadAllAvailableDialects();
  // The one error channel of the compile: library code reports
  // diagnostics, the first error is the user's line (prefixed with the
  // model's name where the message does not name a file or flag itself).
  FirstErrorHandler firstError(&context);
  auto failWithError = [&](StringRef prefix = "") {
    return fail(prefix + firstError.orElse("compilation failed"));
  };

  FailureOr<PhaseOptions> resolved = resolvePhaseOptions(&context, options);
  if (failed(resolved))
    return failWithError();
  // NOTE: a reference, so that --schedule auto can resolve again below;
  // not const: --ranks sets the schedule phase's K and R after the
  // partition phase (applyReplicationPlan).
  PhaseOptions &p = *resolved;
  CompileTimingSession timing(p.timePhases, llvm::errs());

  // Import.
  std::string modelName = llvm::sys::path::filename(p.import.input).str();
  OwningOpRef<ModuleOp> module;
  {
    FailureOr<OwningOpRef<ModuleOp>> loaded = loadModel(p.import, context);
    if (failed(loaded))
      return failWithError();
    module = std::move(*loaded);
  }
  if (p.emit == CompilePhase::NN)
    return emitIR(result, printModule(*module));

  // Which weights train.
  std::optional<SmallVector<nn::WeightDecision>> weightDecisions;
  if (p.training.enabled) {
    auto decisions = markTrainable(p.training, *module);
    if (failed(decisions))
      return failWithError(modelName + ": ");
    weightDecisions = std::move(*decisions);
  }

  // --schedule auto (issue 17): search, then resolve the options again with
  // the winner (and import again when its M changes the micro-batch size).
  std::string autoText;
  std::optional<llvm::json::Array> autoJSON;
  if (p.schedule.autoSchedule) {
    FailureOr<CompileOptions> chosen =
        chooseAutoSchedule(options, p, *module, autoText, autoJSON);
    if (failed(chosen))
      return failWithError(modelName + ": ");
    std::optional<int64_t> oldSize = p.import.microbatchSize;
    FailureOr<PhaseOptions> again = resolvePhaseOptions(&context, *chosen);
    if (failed(again))
      return failWithError();
    *resolved = std::move(*again);
    if (p.import.microbatchSize != oldSize) {
      FailureOr<OwningOpRef<ModuleOp>> loaded = loadModel(p.import, context);
      if (failed(loaded))
        return failWithError();
      module = std::move(*loaded);
      if (p.training.enabled) {
        auto decisions = markTrainable(p.training, *module);
        if (failed(decisions))
          return failWithError(modelName + ": ");
        weightDecisions = std::move(*decisions);
      }
    }
  }

  // The training program: per stage in a pipeline, else one step function.
  std::optional<llvm::json::Object> trainingSection;
  std::optional<PipelineState> pipeline;
  std::vector<std::string> singleRankInputs;
  if (p.pipelined) {
    pipeline.emplace();
    if (failed(partitionAndSchedule(p, *module, weightDecisions, *pipeline,
                                    firstError)))
      return failWithError(modelName + ": ");
  } else if (p.training.enabled) {
    auto section =
        buildSingleRankTraining(p, *module, *weightDecisions, singleRankInputs);
    if (failed(section))
      return failWithError(modelName + ": ");
    trainingSection = std::move(*section);
  }
  if (p.emit == CompilePhase::Train)
    return emitIR(result, printModule(*module));

  // The manifest.
  Bundle bundle;
  // Known before the pipeline's report (rank_memory counts the CPU GEMM's
  // packed weights on CPU bundles only).
  if (p.target.target == CompileTarget::CUDA) {
    bundle.target = "cuda";
    bundle.gpuArch = p.target.cuda.gpuArch;
  }
  if (p.pipelined && p.emit == CompilePhase::Bundle) {
    if (failed(buildPipelineBundle(p, *module, modelName, *pipeline, bundle)))
      return failWithError(modelName + ": ");
  } else if (!p.pipelined) {
    if (failed(collectBundle(*module, modelName,
                             p.training.enabled ? "" : "inference",
                             p.codegen.cpu.symbolPrefix, bundle)))
      return failWithError(modelName + ": ");
  }
  if (trainingSection) {
    llvm::raw_string_ostream os(bundle.trainingJSON);
    os << llvm::json::Value(std::move(*trainingSection));
  }
  if (p.training.enabled && !p.import.isMLIR)
    bundle.copiedFiles.push_back({"model.onnx", p.import.input});

  // The reports of a pipelined compile.
  std::string renderedReport;
  std::optional<llvm::json::Object> reportObject;
  if (pipeline) {
    if (autoJSON)
      pipeline->json["schedule_search"] = std::move(*autoJSON);
    reportObject = pipeline->json;
    renderedReport =
        llvm::formatv("{0:2}", llvm::json::Value(std::move(pipeline->json)));
    result.reportJSON = renderedReport;
    if (p.reportText) {
      llvm::raw_string_ostream os(result.reportText);
      if (weightDecisions)
        nn::printWeightDecisions(*weightDecisions, os);
      os << autoText;
      printPartitionReport(pipeline->partition, os);
      os << pipeline->planText;
      os << pipeline->scheduleText;
      if (!pipeline->replicaText.empty())
        os << pipeline->replicaText;
      else if (p.schedule.replicas > 1)
        printRankLayout(p.schedule.config.numRanks, p.schedule.replicas,
                        p.schedule.shardOptimizer, {}, os);
    }
    if (p.emit != CompilePhase::Bundle) {
      if (!p.reportJSON.empty() &&
          failed(writeTextFile(&context, p.reportJSON, renderedReport)))
        return failWithError();
      return emitIR(result, printModule(*module));
    }
  }

  if (hasNNOps(*module) && failed(convertNNToLinalg(*module)))
    return failWithError(modelName + ": ");
  // cuda: the index checks the runtime makes on the host (docs/Bundle.md).
  if (bundle.target == "cuda" && p.codegen.cpu.runTimeChecks) {
    std::vector<std::string> dataNames;
    if (pipeline)
      dataNames = pipeline->dataInputs;
    else if (p.training.enabled)
      dataNames = singleRankInputs;
    else
      for (const BundleFunction &function : bundle.functions)
        for (const BundleBuffer &buffer : function.buffers)
          if (buffer.role == "input")
            dataNames.push_back(buffer.name);
    bundle.dataIndexChecks = collectDataIndexChecks(*module, dataNames);
  }
  // The linalg module keeps nn.name/nn.param: compiling it again gives the
  // same bundle.
  if (p.emit == CompilePhase::Linalg)
    return emitIR(result, printModule(*module));
  stripModelAttributes(*module);

  if (p.emit == CompilePhase::LLVMDialect || p.emit == CompilePhase::LLVM) {
    // --target cuda: the host module with the kernels in a gpu.binary.
    if (p.target.target == CompileTarget::CUDA
            ? failed(cuda::lowerToLLVMDialect(*module, p.target.cuda))
            : failed(cpu::lowerToLLVMDialect(*module, p.codegen.cpu)))
      return failWithError(modelName + ": ");
    if (p.emit == CompilePhase::LLVMDialect)
      return emitIR(result, printModule(*module));
    auto machine = cpu::createTargetMachine(p.codegen.cpu);
    if (!machine)
      return fail(llvm::toString(machine.takeError()));
    llvm::LLVMContext llvmContext;
    auto llvmModule = cpu::translateToLLVMIR(*module, llvmContext, **machine);
    if (failed(llvmModule))
      return failWithError(modelName + ": ");
    cpu::optimizeLLVMModule(**llvmModule, **machine, p.codegen.cpu.optLevel);
    return emitIR(result, [&](llvm::raw_ostream &os) {
      (*llvmModule)->print(os, nullptr);
    });
  }

  TimedPhase bundlePhase("write bundle");
  std::vector<cpu::WorkspaceEstimate> workspace;
  bool withWorkspace = pipeline && !pipeline->rankRoots.empty();
  if (failed(
          writeBundle(&context, bundle, p.output, [&](StringRef libraryPath) {
            return compileProgramLibrary(
                p, *module, libraryPath,
                withWorkspace ? &pipeline->rankRoots : nullptr,
                withWorkspace ? &workspace : nullptr);
          })))
    return failWithError(modelName + ": ");
  if (pipeline && reportObject && !workspace.empty() &&
      addWorkspaceToRankMemory(*reportObject, workspace)) {
    renderedReport = llvm::formatv(
        "{0:2}", llvm::json::Value(std::move(*reportObject)));
    result.reportJSON = renderedReport;
  }
  if (pipeline) {
    // docs/CLI.md: OUT_DIR holds report.json too.
    llvm::SmallString<256> reportPath(p.output);
    llvm::sys::path::append(reportPath, "report.json");
    if (failed(writeTextFile(&context, reportPath, renderedReport)) ||
        (!p.reportJSON.empty() &&
         failed(writeTextFile(&context, p.reportJSON, renderedReport))))
      return failWithError();
  }
  return result;
}
