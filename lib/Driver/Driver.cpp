//===- Driver.cpp - ONNX model to a bundle, as a library -------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The driver of pipedream-compile (include/pipedream/Driver/Driver.h):
//   import (ONNX or .mlir) -> [training program] -> convert-nn-to-linalg ->
//   CPU lowering -> program.so + bundle.json + weights.bin,
// or, for pipelines, partition -> schedule -> per-rank programs -> bundle.
// With an IR phase (`emit` nn, train, linalg, llvm-dialect, llvm,
// partitioned, scheduled) it stops after that phase and returns its IR.
// Every error is one line (CompileResult::error).
//
//===----------------------------------------------------------------------===//

#include "pipedream/Driver/Driver.h"
#include "pipedream/Driver/ModelLowering.h"
#include "pipedream/Compiler/Bundle.h"
#include "pipedream/Compiler/Pipeline.h"
#include "pipedream/Compiler/Partition.h"
#include "pipedream/Conversion/NNToLinalg/NNToLinalg.h"
#include "pipedream/Dialect/NN/IR/NNDialect.h"
#include "pipedream/Dialect/NN/Transforms/Trainable.h"
#include "pipedream/Dialect/NN/Transforms/Training.h"
#include "pipedream/Dialect/Pipe/Transforms/Passes.h"
#include "pipedream/Dialect/Pipe/Transforms/Schedule.h"
#include "pipedream/Dialect/Pipe/Transforms/ScheduleCSV.h"
#include "pipedream/Dialect/Pipe/Transforms/ScheduleReport.h"
#include "pipedream/Import/ONNX/ImportONNX.h"
#include "pipedream/Support/CompileTiming.h"
#include "pipedream/InitAllDialects.h"
#include "pipedream/Target/CPU/CPUCodegen.h"
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
#include "llvm/ADT/StringSwitch.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

#include <mutex>

using namespace mlir;
using pipedream::CompileOptions;
using pipedream::CompileResult;

namespace {
/// The options after defaults that depend on nothing else, read once.
struct Flags {
  explicit Flags(const CompileOptions &o)
      : o(o), loss(o.loss.value_or("")),
        labelsName(o.labelsName.value_or("labels")),
        optimizer(o.optimizer.value_or("sgd")),
        momentum(o.momentum.value_or(0.0)),
        nesterov(o.nesterov.value_or(false)),
        weightDecay(o.weightDecay.value_or(0.0)),
        beta1(o.beta1.value_or(0.9)), beta2(o.beta2.value_or(0.999)),
        eps(o.eps.value_or(1e-8)), stages(o.stages.value_or(1)),
        schedule(o.schedule.value_or("1f1b")) {}
  const CompileOptions &o;
  std::string loss, labelsName, optimizer;
  double momentum;
  bool nesterov;
  double weightDecay, beta1, beta2, eps;
  int64_t stages;
  std::string schedule;
};
} // namespace

/// The first line of `message` (errors are one line).
static std::string firstLine(const llvm::Twine &message) {
  std::string text = message.str();
  return StringRef(text).split('\n').first.str();
}

std::optional<pipedream::CompileTarget>
pipedream::parseCompileTarget(StringRef name) {
  return llvm::StringSwitch<std::optional<CompileTarget>>(name)
      .Case("cpu", CompileTarget::CPU)
      .Case("cuda", CompileTarget::CUDA)
      .Default(std::nullopt);
}

/// Captures the first error diagnostic of `context` while alive, as
/// "LOCATION: message" (the driver's one-line errors).
class FirstError {
public:
  explicit FirstError(MLIRContext *context)
      : handler(context, [this](Diagnostic &diag) {
          if (diag.getSeverity() == DiagnosticSeverity::Error &&
              text.empty()) {
            llvm::raw_string_ostream os(text);
            os << diag.getLocation() << ": " << diag.str();
          }
          return success();
        }) {}
  /// The captured error, or `fallback` when none was reported.
  std::string orElse(const llvm::Twine &fallback) const {
    return text.empty() ? fallback.str() : text;
  }
  FirstError(const FirstError &) = delete;
  FirstError &operator=(const FirstError &) = delete;

private:
  std::string text;
  ScopedDiagnosticHandler handler;
};

/// Every dialect the driver's phases use (the CUDA target's registrations
/// include the CPU target's).
static DialectRegistry driverDialects() {
  DialectRegistry registry;
  pipedream::registerAllDialects(registry);
  pipedream::registerONNXImportDialects(registry);
  pipedream::cuda::registerCUDACodegenDialects(registry);
  return registry;
}

/// Imports `o.input` (ONNX) or parses it (.mlir) into `context`. An ONNX
/// model's batch dimension is fixed to `batchSize` when given.
static FailureOr<OwningOpRef<ModuleOp>>
loadModel(const pipedream::CompileOptions &o, std::optional<int64_t> batchSize,
          MLIRContext &context, std::string &error) {
  pipedream::TimedPhase phase("import");
  if (StringRef(o.input).ends_with(".mlir")) {
    if (!o.inputShapes.empty()) {
      error = "--input-shape applies to ONNX models, not .mlir input";
      return failure();
    }
    FirstError firstError(&context);
    llvm::SourceMgr sourceMgr;
    std::string openError;
    auto file = openInputFile(o.input, &openError);
    if (!file) {
      error = o.input + ": " + openError;
      return failure();
    }
    sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
    OwningOpRef<ModuleOp> module =
        parseSourceFile<ModuleOp>(sourceMgr, &context);
    if (!module) {
      error = firstError.orElse(o.input + ": cannot parse");
      return failure();
    }
    return module;
  }
  pipedream::ImportOptions importOptions;
  importOptions.runChecker = o.runONNXChecker;
  if (batchSize)
    importOptions.batchSize = *batchSize;
  for (const std::string &shape : o.inputShapes)
    if (!pipedream::parseInputShapeOption(shape, importOptions, error))
      return failure();
  auto imported =
      pipedream::importONNXFile(o.input, context, importOptions, error);
  if (failed(imported))
    return failure();
  if (auto note = (**imported)->getAttrOfType<StringAttr>(
          pipedream::import_attrs::kBatchRespecialized))
    llvm::errs() << "note: " << o.input << ": " << note.getValue() << "\n";
  return std::move(*imported);
}

/// The error for a `--target` that is not built.
static std::string unknownTargetMessage(StringRef name) {
  return ("--target " + name + ": expected cpu or cuda").str();
}

/// The CUDA code generator's options from the command line, checked: a bad
/// --gpu-arch, --dtype or a missing toolkit fails before the import.
/// --gpu-arch and --dtype are refused with another target.
static LogicalResult
buildCUDACodegenOptions(const pipedream::CompileOptions &o,
                        pipedream::CompileTarget target,
                        pipedream::cuda::CUDACodegenOptions &cuda,
                        std::string &error) {
  if (target != pipedream::CompileTarget::CUDA) {
    if (o.gpuArch || o.dtype) {
      error = std::string(o.gpuArch ? "--gpu-arch" : "--dtype") +
              " applies to --target cuda";
      return failure();
    }
    return success();
  }
  cuda.gpuArch = o.gpuArch.value_or("sm_90");
  cuda.optLevel = o.optLevel;
  if (failed(pipedream::cuda::verifyGPUArch(cuda.gpuArch, error)))
    return failure();
  std::string dtype = o.dtype.value_or("f32");
  std::optional<pipedream::cuda::DType> parsed =
      pipedream::cuda::parseDType(dtype);
  if (!parsed) {
    error = "--dtype " + dtype + ": expected f32 or bf16";
    return failure();
  }
  cuda.dtype = *parsed;
  return pipedream::cuda::verifyToolkit(cuda, error);
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

//===--- Compile time (issue 16; ctime) -----------------------------------===//
/// The code generator's compile-time options from the command line.
static void applyCompileTimeOptions(const CompileOptions &o,
                                    pipedream::cpu::CPUCodegenOptions &codegen) {
  codegen.codegenThreads = o.codegenThreads;
  codegen.outlineKernels = o.outlineKernels;
  codegen.cacheDir = o.cacheDir;
  codegen.useCache = !o.noCache;
}
//===----------------------------------------------------------------------===//

/// Compiles the lowered `module` into the bundle's program library at
/// `libraryPath` with the code generator of `target`.
static LogicalResult
compileProgramLibrary(pipedream::CompileTarget target, ModuleOp module,
                      const pipedream::cpu::CPUCodegenOptions &codegen,
                      const pipedream::cuda::CUDACodegenOptions &cuda,
                      StringRef libraryPath, std::string &error) {
  switch (target) {
  case pipedream::CompileTarget::CPU:
    return pipedream::cpu::compileToSharedLibrary(module, codegen, libraryPath,
                                                  error);
  case pipedream::CompileTarget::CUDA:
    return pipedream::cuda::compileToSharedLibrary(module, cuda, libraryPath,
                                                   error);
  }
  error = "unknown target";
  return failure();
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

LogicalResult pipedream::convertNNToLinalg(ModuleOp module,
                                          std::string &error) {
  registerDriverPasses();
  FirstError firstError(module.getContext());
  pipedream::TimedPhase phase("nn to linalg");
  PassManager pm(module.getContext(), ModuleOp::getOperationName());
  if (failed(applyPassManagerCLOptions(pm))) {
    error = "invalid pass manager options";
    return failure();
  }
  pipedream::attachPassTiming(pm);
  pm.addNestedPass<func::FuncOp>(pipedream::createConvertNNToLinalgPass());
  if (succeeded(pm.run(module)))
    return success();
  error = firstError.orElse("convert-nn-to-linalg failed");
  return failure();
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
markTrainable(const CompileOptions &o, ModuleOp module, std::string &error) {
  auto main = module.lookupSymbol<func::FuncOp>("main");
  if (!main || main.isDeclaration()) {
    error = "training: no function 'main' with a body to train";
    return failure();
  }
  pipedream::nn::TrainableOptions options;
  options.freeze.assign(o.freeze.begin(), o.freeze.end());
  options.train.assign(o.train.begin(), o.train.end());
  SmallVector<std::string> constants;
  if (auto names = module->getAttrOfType<ArrayAttr>(
          pipedream::import_attrs::kConstantInitializers))
    for (auto name : names.getAsRange<StringAttr>())
      constants.push_back(name.getValue().str());
  FirstError firstError(module.getContext());
  auto decisions = pipedream::nn::markFrozenWeights(main, options, constants);
  if (failed(decisions)) {
    error = firstError.orElse("cannot classify the weights");
    return failure();
  }
  for (const pipedream::nn::WeightDecision &d : *decisions)
    if (!d.warning.empty())
      llvm::errs() << "warning: " << d.warning << "\n";
  return decisions;
}

//===----------------------------------------------------------------------===//
// Pipeline partitioning (issue 5; lib/Compiler/Partition.cpp does the work)
//===----------------------------------------------------------------------===//

/// `--emit scheduled`: per-stage training functions, the unrolled global
/// program, its verification and the schedule report.
static LogicalResult
scheduleModule(const Flags &f, ModuleOp module,
               const pipedream::PartitionReport &partition,
               llvm::json::Object &json, std::string &reportText,
               std::string &error) {
  namespace sched = pipedream::pipe::schedule;
  std::optional<sched::Kind> kind = sched::parseKind(f.schedule);
  if (!kind) {
    error = "--schedule " + f.schedule + ": expected " +
            sched::kindNameList();
    return failure();
  }
  if (f.loss.empty()) {
    error = "a pipeline trains: pass --loss cross-entropy|mse (pipelines of "
            "forward-only --inference bundles are not supported)";
    return failure();
  }
  int64_t m = f.o.microbatches ? *f.o.microbatches
                  : std::max<int64_t>(1, f.stages);
  // --- --schedule-csv (issue 17): kind and M from the file unless given ---
  std::optional<sched::Schedule> fromCsv;
  if (!f.o.scheduleCsv.empty()) {
    fromCsv.emplace();
    std::string note;
    if (std::string err = sched::readScheduleCSVFile(
            f.o.scheduleCsv, f.o.schedule ? kind : std::nullopt, f.stages,
            f.o.microbatches.value_or(0), f.o.virtualStages, *fromCsv, &note);
        !err.empty()) {
      error = "--schedule-csv " + err;
      return failure();
    }
    if (!note.empty())
      llvm::errs() << "note: --schedule-csv " << f.o.scheduleCsv << ": "
                   << note << "\n";
    kind = fromCsv->config.kind;
    m = fromCsv->config.numMicrobatches;
  }
  // --- end issue 17 ---
  sched::Config config{*kind, f.stages, m, f.o.virtualStages};
  if (std::string err = sched::validate(config); !err.empty()) {
    error = err;
    return failure();
  }
  bool split = config.splitsBackward();
  // Asynchronous schedules update several times per step: each update
  // applies the mean gradient of its micro-batches (pipedream: one, 2bw: a
  // window of K, as in the papers).
  int64_t perUpdate = m;
  if (*kind == sched::Kind::PipeDream)
    perUpdate = 1;
  if (*kind == sched::Kind::TwoBW) {
    if (m % f.stages != 0) {
      error = "--schedule 2bw coalesces gradients over windows of K = " +
              std::to_string(f.stages) +
              " micro-batches: --microbatches must be a multiple of it";
      return failure();
    }
    perUpdate = f.stages;
  }
  FirstError firstError(module.getContext());
  // Doubles with full precision (formatv would round them).
  auto number = [](double value) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << llvm::format("%.17g", value);
    return text;
  };
  double lr = f.o.lr ? *f.o.lr
                  : (f.optimizer == "adam" || f.optimizer == "adamw"
                         ? 0.001
                         : 0.01);
  std::string pipeline =
      "pipe-build-stage-training{loss=" + f.loss +
      " labels-name=" + f.labelsName +
      " microbatches=" + std::to_string(m) +
      " microbatches-per-update=" + std::to_string(perUpdate) +
      " split-backward=" + (split ? "true" : "false") +
      " optimizer=" + f.optimizer + " lr=" + number(lr) +
      " momentum=" +
      number(f.o.momentum ? *f.o.momentum
                                                : 0.9) +
      " weight-decay=" + number(f.weightDecay) +
      " nesterov=" + (f.nesterov ? "true" : "false") +
      " beta1=" + number(f.beta1) + " beta2=" + number(f.beta2) +
      " eps=" + number(f.eps) + "},pipe-unroll-schedule{kind=" +
      sched::kindName(*kind) + " microbatches=" + std::to_string(m) +
      " virtual=" + std::to_string(f.o.virtualStages) +
      (fromCsv ? " schedule-csv=\"" + f.o.scheduleCsv + "\"" : "") +
      "},pipe-project-ranks{keep-global=true},pipe-verify-schedule";
  pipedream::TimedPhase phase("autodiff + schedule (stage training, unroll, "
                              "ranks)");
  PassManager pm(module.getContext(), ModuleOp::getOperationName());
  pipedream::attachPassTiming(pm);
  if (failed(parsePassPipeline(pipeline, pm)) || failed(pm.run(module))) {
    error = firstError.orElse("scheduling failed");
    return failure();
  }

  // The report: simulated with the partition's per-stage costs.
  sched::Schedule schedule =
      fromCsv ? *fromCsv : sched::buildSchedule(config); // issue 17
  sched::ReportOptions options;
  sched::Costs costs;
  for (const pipedream::StageReport &stage : partition.stageReports) {
    sched::Costs::Stage c;
    c.forward = stage.cost.forward + stage.cost.comm / 2;
    c.backward = split ? stage.cost.backwardInput + stage.cost.comm / 2
                       : stage.cost.backwardInput + stage.cost.backwardWeight +
                             stage.cost.comm / 2;
    c.weightGrad = split ? stage.cost.backwardWeight : 0;
    costs.perStage.push_back(c);
    options.memory.push_back(
        {stage.cost.parameterBytes, stage.cost.activationBytes,
         stage.cost.frozenBytes});
  }
  options.costs = costs;
  options.optimizerStates =
      f.optimizer == "adam" || f.optimizer == "adamw" ? 2
      : f.optimizer == "momentum" ? 1
                                      : 0;
  sched::Report report = sched::buildReport(schedule, options);
  sched::Report unitReport = sched::buildReport(schedule, {});
  llvm::json::Object scheduleJSON = sched::reportToJSON(report);
  for (auto &entry : scheduleJSON)
    json[entry.first] = std::move(entry.second);
  json["bubble_fraction_unit_costs"] = unitReport.bubbleFraction;
  llvm::raw_string_ostream os(reportText);
  os << llvm::formatv("schedule {0}: K = {1}, V = {2}, M = {3}; verified: {4}\n",
                      sched::kindName(*kind), f.stages, f.o.virtualStages, m,
                      report.verified ? "yes" : "no");
  os << llvm::formatv("bubble fraction: {0:f3} simulated with the stage "
                      "costs, {1:f3} with unit costs (theory for "
                      "synchronous schedules (K-1)/(V*M+K-1) = {2:f3})\n",
                      report.bubbleFraction, unitReport.bubbleFraction,
                      double(f.stages - 1) /
                          double(f.o.virtualStages * m + f.stages - 1));
  for (size_t r = 0; r < report.activationSlots.size(); ++r)
    os << llvm::formatv("rank {0}: peak stash {1} micro-batches, {2} weight "
                        "versions, peak memory {3} bytes\n",
                        r, report.activationSlots[r],
                        report.weightVersions[r],
                        report.peakMemoryBytes[r]);
  // --- --export-schedule-csv (issue 17) ---
  if (!f.o.exportScheduleCsv.empty())
    if (std::string err = sched::writeTextFile(
            f.o.exportScheduleCsv, sched::exportScheduleCSV(schedule));
        !err.empty()) {
      error = "--export-schedule-csv: " + err;
      return failure();
    }
  // --- end issue 17 ---
  if (!f.o.trace.empty())
    if (std::string err = sched::writeTextFile(
            f.o.trace, sched::traceJSON(schedule, report, options));
        !err.empty()) {
      error = err;
      return failure();
    }
  if (!f.o.timeline.empty())
    if (std::string err = sched::writeTextFile(
            f.o.timeline, sched::timelineSVG(schedule, report));
        !err.empty()) {
      error = err;
      return failure();
    }
  json["verified"] = report.verified;
  return success();
}

/// Handles `--emit partitioned` and `--emit scheduled` (and refuses
/// pipeline flags elsewhere until pipeline bundles exist), and pipeline
/// bundles. Returns false when the compilation is not one of these.
static bool runPartitioning(const Flags &f, CompileResult &result) {
  auto fail = [&](const llvm::Twine &message) {
    result.error = firstLine(message);
    return true;
  };
  bool pipelineFlags = f.stages > 1 || f.o.virtualStages > 1 ||
                       !f.o.splitAfter.empty();
  bool reportFlags = f.o.report || !f.o.reportJSON.empty();
  bool pipelineBundle = f.o.emit == "bundle" && !f.o.inference &&
                        (f.stages > 1 || f.o.virtualStages > 1 ||
                         f.o.schedule.has_value() ||
                         !f.o.scheduleCsv.empty()); // issue 17
  bool scheduled = f.o.emit == "scheduled" || pipelineBundle;
  if (f.o.emit != "partitioned" && !scheduled) {
    if (pipelineFlags || reportFlags || f.o.schedule.has_value() ||
        !f.o.trace.empty()) {
      return fail(llvm::Twine(pipelineFlags ? "--stages/--virtual-stages/"
                                              "--split-after"
                                            : "--report/--report-json/"
                                              "--schedule/--trace") +
                  " only work with --emit partitioned or scheduled so far "
                  "(pipeline bundles are not implemented yet)");
    }
    return false;
  }
  if (!scheduled && (!f.o.trace.empty() || !f.o.timeline.empty())) {
    return fail("--trace/--timeline need --emit scheduled");
  }
  // --- issue 17 ---
  if (!scheduled &&
      (!f.o.scheduleCsv.empty() || !f.o.exportScheduleCsv.empty()))
    return fail("--schedule-csv/--export-schedule-csv need --emit scheduled "
                "(or a pipeline bundle)");
  // --- end issue 17 ---
  if (f.o.input.empty())
    return fail("no input model");
  std::optional<pipedream::CompileTarget> target =
      pipedream::parseCompileTarget(f.o.target);
  if (!target)
    return fail(unknownTargetMessage(f.o.target));
  pipedream::cuda::CUDACodegenOptions cuda;
  {
    std::string error;
    if (failed(buildCUDACodegenOptions(f.o, *target, cuda, error)))
      return fail(error);
  }
  pipedream::PartitionConfig config;
  config.stages = f.stages;
  config.virtualStages = f.o.virtualStages;
  config.method = f.o.partition;
  config.splitAfter.assign(f.o.splitAfter.begin(), f.o.splitAfter.end());
  if (!f.o.splitAfter.empty() && !f.o.stages.has_value())
    config.stages = (f.o.splitAfter.size() + 1) / config.virtualStages;
  config.device = f.o.device;
  config.costModel = f.o.costModel;
  config.microbatches = f.o.microbatches.value_or(0);
  // The partitioner's memory and all-reduce models follow the schedule
  // (weight versions, updates per step).
  // (An unknown kind is reported by the scheduling phase.)
  if (pipedream::pipe::schedule::parseKind(f.schedule))
    config.schedule = f.schedule;
  config.memoryLimit = f.o.memoryLimit;
  if (f.optimizer == "adam" || f.optimizer == "adamw")
    config.optimizerStates = 2;
  else if (f.optimizer == "momentum" || f.momentum > 0)
    config.optimizerStates = 1;
  if (config.method != "auto" && config.method != "uniform")
    return fail("--partition " + config.method +
                       ": expected auto or uniform");
  if (config.device != "cpu" && config.device != "h200")
    return fail("--device " + config.device + ": expected cpu or h200");

  int64_t m = f.o.microbatches ? *f.o.microbatches
                  : std::max<int64_t>(1, f.stages);
  if (f.o.batchSize.has_value() &&
      (*f.o.batchSize <= 0 || *f.o.batchSize % m != 0))
    return fail("--batch-size " + llvm::Twine(*f.o.batchSize) +
                ": must be a positive multiple of --microbatches (" +
                llvm::Twine(m) + ")");
  MLIRContext context(driverDialects());
  context.loadAllAvailableDialects();
  std::string error;
  std::optional<int64_t> importBatch;
  if (f.o.batchSize.has_value())
    importBatch = *f.o.batchSize / m;
  FailureOr<OwningOpRef<ModuleOp>> loaded =
      loadModel(f.o, importBatch, context, error);
  if (failed(loaded))
    return fail(error);
  OwningOpRef<ModuleOp> module = std::move(*loaded);
  std::string modelName = llvm::sys::path::filename(f.o.input).str();
  std::optional<SmallVector<pipedream::nn::WeightDecision>> weightDecisions;
  if (!f.o.inference) {
    auto decisions = markTrainable(f.o, *module, error);
    if (failed(decisions))
      return fail(modelName + ": " + error);
    weightDecisions = std::move(*decisions);
  } else if (!f.o.freeze.empty() || !f.o.train.empty()) {
    return fail("--freeze/--train are training flags; they do not apply to "
                "--inference");
  }
  std::optional<pipedream::TimedPhase> partitionPhase;
  partitionPhase.emplace("partition");
  if (failed(pipedream::partitionModule(*module, config, error)))
    return fail(modelName + ": " + error);
  auto report = pipedream::collectPartitionReport(*module, error);
  if (failed(report))
    return fail(modelName + ": " + error);
  if (failed(pipedream::outlineStages(*module, error)))
    return fail(modelName + ": " + error);
  partitionPhase.reset();
  llvm::json::Object json = pipedream::partitionReportJSON(*report);
  if (weightDecisions)
    json["weights"] = pipedream::nn::weightDecisionsJSON(*weightDecisions);
  // What a pipeline bundle's runtime needs to feed the ranks.
  llvm::json::Array dataInputs;
  std::vector<std::string> dataInputNames;
  int64_t microbatchSize = 0, numClasses = 0;
  if (auto main = module->lookupSymbol<func::FuncOp>("main")) {
    for (unsigned i = 0, e = main.getNumArguments(); i < e; ++i) {
      if (main.getArgAttr(i, pipedream::nn::NNDialect::kParamAttrName))
        continue;
      auto name = main.getArgAttrOfType<StringAttr>(
          i, pipedream::nn::NNDialect::kNameAttrName);
      dataInputs.push_back(name ? name.getValue().str()
                                : "arg" + std::to_string(i));
      dataInputNames.push_back(dataInputs.back().getAsString()->str());
      auto type = cast<RankedTensorType>(main.getArgumentTypes()[i]);
      if (!microbatchSize && type.getRank())
        microbatchSize = type.getDimSize(0);
    }
    if (main.getNumResults())
      if (auto pred = dyn_cast<RankedTensorType>(main.getResultTypes()[0]);
          pred && pred.getRank())
        numClasses = pred.getShape().back();
  }
  std::string scheduleText;
  if (scheduled &&
      failed(scheduleModule(f, *module, *report, json, scheduleText, error)))
    return fail(modelName + ": " + error);
  std::string renderedReport =
      llvm::formatv("{0:2}", llvm::json::Value(std::move(json)));
  const std::string &reportJSONPath = f.o.reportJSON;
  const std::string &outputDir = f.o.output;
  if (pipelineBundle) {
    std::optional<pipedream::TimedPhase> rankPhase;
    rankPhase.emplace("rank programs");
    auto ranks = pipedream::serializeRankPrograms(*module, error);
    if (failed(ranks))
      return fail(modelName + ": " + error);
    // Each rank's step as a native entry of program.so (docs/Bundle.md).
    if (failed(pipedream::lowerRankProgramsToNative(*module, *ranks,
                                                    "pipedream_", error)))
      return fail(modelName + ": " + error);
    rankPhase.reset();
    pipedream::Bundle bundle;
    if (failed(pipedream::collectBundle(*module, modelName, "", "pipedream_",
                                        bundle, error)))
      return fail(modelName + ": " + error);
    // Each rank's weights in its own file (docs/Bundle.md), and what the
    // runtime allocates per rank into report.json (`rank_memory`).
    if (failed(pipedream::assignRankWeightFiles(bundle, *ranks, error)))
      return fail(modelName + ": " + error);
    if (auto parsed = llvm::json::parse(renderedReport)) {
      if (llvm::json::Object *object = parsed->getAsObject()) {
        (*object)["rank_memory"] = pipedream::rankMemoryJSON(bundle, *ranks);
        renderedReport = llvm::formatv("{0:2}", *parsed);
      }
    } else {
      llvm::consumeError(parsed.takeError());
    }
    if (*target == pipedream::CompileTarget::CUDA) {
      bundle.target = "cuda";
      bundle.gpuArch = cuda.gpuArch;
    }
    llvm::json::Object optimizer{
        {"kind", f.optimizer},
        {"lr", f.o.lr ? *f.o.lr
                   : (f.optimizer == "adam" || f.optimizer == "adamw"
                          ? 0.001
                          : 0.01)},
        {"momentum", f.o.momentum ? *f.o.momentum
                         : (f.optimizer == "momentum" ? 0.9 : 0.0)},
        {"weight_decay", f.weightDecay},
        {"nesterov", f.nesterov},
        {"beta1", f.beta1},
        {"beta2", f.beta2},
        {"eps", f.eps}};
    llvm::json::Object section{
        {"schedule",
         llvm::json::Object{{"kind", f.schedule},
                            {"stages", f.stages},
                            {"microbatches", m},
                            {"chunks", f.o.virtualStages}}},
        {"loss", f.loss},
        {"inputs", std::move(dataInputs)},
        {"microbatch_size", microbatchSize},
        {"batch_size", m * microbatchSize},
        {"optimizer", std::move(optimizer)},
        {"ranks", std::move(*ranks)}};
    if (f.loss != "none")
      section["labels"] = f.labelsName;
    if (f.loss == "cross-entropy")
      section["num_classes"] = numClasses;
    llvm::raw_string_ostream os(bundle.pipelineJSON);
    os << llvm::formatv("{0:2}", llvm::json::Value(std::move(section)));
    if (!StringRef(f.o.input).ends_with(".mlir"))
      bundle.copiedFiles.push_back({"model.onnx", f.o.input});
    if (hasNNOps(*module) &&
        failed(pipedream::convertNNToLinalg(*module, error)))
      return fail(modelName + ": " + error);
    // cuda: the index checks the runtime makes on the host (docs/Bundle.md).
    if (bundle.target == "cuda" && f.o.runTimeChecks)
      bundle.dataIndexChecks =
          pipedream::collectDataIndexChecks(*module, dataInputNames);
    pipedream::stripModelAttributes(*module);
    pipedream::cpu::CPUCodegenOptions codegen;
    codegen.optLevel = f.o.optLevel;
    codegen.cpu = f.o.targetCPU;
    if (auto gemmLowering = pipedream::cpu::parseGemmLowering(f.o.gemm))
      codegen.gemm = *gemmLowering;
    codegen.runTimeChecks = f.o.runTimeChecks;
    applyCompileTimeOptions(f.o, codegen);
    if (f.o.output.empty())
      return fail("no output: pass -o OUT_DIR");
    pipedream::TimedPhase bundlePhase("write bundle");
    if (failed(pipedream::writeBundle(
            bundle, f.o.output,
            [&](StringRef libraryPath, std::string &libraryError) {
              return compileProgramLibrary(*target, *module, codegen, cuda,
                                           libraryPath, libraryError);
            },
            error)))
      return fail(modelName + ": " + error);
    // docs/CLI.md: OUT_DIR holds report.json too.
    llvm::SmallString<256> reportPath(outputDir);
    llvm::sys::path::append(reportPath, "report.json");
    std::string openError;
    auto file = openOutputFile(reportPath, &openError);
    if (!file)
      return fail(reportPath + ": " + openError);
    file->os() << renderedReport << "\n";
    file->keep();
  }
  if (!reportJSONPath.empty()) {
    std::string openError;
    auto file = openOutputFile(reportJSONPath, &openError);
    if (!file)
      return fail(reportJSONPath + ": " + openError);
    file->os() << renderedReport << "\n";
    file->keep();
  }
  result.reportJSON = renderedReport;
  if (f.o.report) {
    llvm::raw_string_ostream os(result.reportText);
    if (weightDecisions)
      pipedream::nn::printWeightDecisions(*weightDecisions, os);
    pipedream::printPartitionReport(*report, os);
    os << scheduleText;
  }
  if (pipelineBundle)
    return true;
  emitIR(result, [&](llvm::raw_ostream &os) { (*module)->print(os); });
  return true;
}

CompileResult pipedream::compile(const CompileOptions &options) {
  registerDriverPasses();
  pipedream::CompileTimingSession timing(options.timePhases, llvm::errs());
  Flags f(options);
  CompileResult result;
  auto fail = [&](const llvm::Twine &message) {
    result.error = firstLine(message);
    return result;
  };

  // Pipelines (issues 5 and 6): --emit partitioned / scheduled, --report.
  if (runPartitioning(f, result))
    return result;

  if (f.o.input.empty())
    return fail("no input model (pipedream-compile MODEL.onnx -o OUT_DIR "
                "--inference)");
  // Training configuration.
  bool training = !f.o.inference;
  pipedream::nn::TrainingOptions trainingOptions;
  if (f.o.inference) {
    const std::pair<bool, const char *> trainingFlags[] = {
        {f.o.loss.has_value(), "loss"},
        {f.o.labelsName.has_value(), "labels-name"},
        {f.o.microbatches.has_value(), "microbatches"},
        {f.o.batchSize.has_value(), "batch-size"},
        {f.o.optimizer.has_value(), "optimizer"},
        {f.o.lr.has_value(), "lr"},
        {f.o.momentum.has_value(), "momentum"},
        {f.o.nesterov.has_value(), "nesterov"},
        {f.o.weightDecay.has_value(), "weight-decay"},
        {f.o.beta1.has_value(), "beta1"},
        {f.o.beta2.has_value(), "beta2"},
        {f.o.eps.has_value(), "eps"},
        {!f.o.freeze.empty(), "freeze"},
        {!f.o.train.empty(), "train"}};
    for (auto [given, name] : trainingFlags)
      if (given)
        return fail(llvm::Twine("--") + name +
                    " is a training flag; it does not apply to --inference");
  } else {
    if (f.loss.empty())
      return fail("training needs a loss: pass --loss cross-entropy|mse|none (or "
                  "--inference for a forward-only bundle)");
    std::optional<pipedream::nn::LossKind> loss =
        pipedream::nn::parseLossKind(f.loss);
    if (!loss)
      return fail("--loss " + f.loss +
                  ": expected cross-entropy, mse or none (the model's first "
                  "output is the loss)");
    if (*loss == pipedream::nn::LossKind::None && f.o.labelsName.has_value())
      return fail("--labels-name does not apply to --loss none (the labels, "
                  "if any, are ordinary graph inputs)");
    trainingOptions.loss = *loss;
    trainingOptions.labelsName = f.labelsName;
    int64_t m = f.o.microbatches ? *f.o.microbatches : 1;
    if (m < 1)
      return fail("--microbatches " + llvm::Twine(m) + ": at least 1");
    trainingOptions.microbatches = m;
    if (f.o.batchSize.has_value() &&
        (*f.o.batchSize <= 0 || *f.o.batchSize % m != 0))
      return fail("--batch-size " + llvm::Twine(*f.o.batchSize) +
                  ": must be a positive multiple of --microbatches (" +
                  llvm::Twine(m) + ")");
    std::optional<pipedream::nn::OptimizerKind> kind =
        pipedream::nn::parseOptimizerKind(f.optimizer);
    if (!kind)
      return fail("--optimizer " + f.optimizer +
                  ": expected sgd, momentum, adam or adamw");
    pipedream::nn::OptimizerOptions &opt = trainingOptions.optimizer;
    opt.kind = *kind;
    bool adam = *kind == pipedream::nn::OptimizerKind::Adam ||
                *kind == pipedream::nn::OptimizerKind::AdamW;
    opt.lr = f.o.lr ? *f.o.lr : (adam ? 0.001 : 0.01);
    if (f.o.momentum.has_value()) {
      if (adam)
        return fail("--momentum applies to sgd and momentum; adam uses "
                    "--beta1/--beta2");
      opt.momentum = f.momentum;
      if (*kind == pipedream::nn::OptimizerKind::SGD && opt.momentum > 0)
        opt.kind = pipedream::nn::OptimizerKind::Momentum;
    }
    opt.nesterov = f.nesterov;
    if (opt.nesterov && opt.kind != pipedream::nn::OptimizerKind::Momentum)
      return fail("--nesterov needs momentum (--optimizer momentum)");
    opt.weightDecay = f.weightDecay;
    opt.beta1 = f.beta1;
    opt.beta2 = f.beta2;
    opt.eps = f.eps;
    if (!(opt.lr > 0) || opt.momentum < 0 || opt.weightDecay < 0 ||
        !(opt.beta1 >= 0 && opt.beta1 < 1) ||
        !(opt.beta2 >= 0 && opt.beta2 < 1) || !(opt.eps > 0))
      return fail("optimizer hyper-parameters out of range (lr > 0, "
                  "momentum >= 0, weight decay >= 0, 0 <= beta < 1, eps > 0)");
  }
  std::optional<CompileTarget> target = parseCompileTarget(f.o.target);
  if (!target)
    return fail(unknownTargetMessage(f.o.target));
  pipedream::cuda::CUDACodegenOptions cuda;
  {
    std::string error;
    if (failed(buildCUDACodegenOptions(f.o, *target, cuda, error)))
      return fail(error);
  }
  enum class Phase { NN, Linalg, LLVMDialect, LLVM, Bundle };
  std::optional<Phase> phase =
      llvm::StringSwitch<std::optional<Phase>>(f.o.emit)
          .Case("nn", Phase::NN)
          .Case("linalg", Phase::Linalg)
          .Case("llvm-dialect", Phase::LLVMDialect)
          .Case("llvm", Phase::LLVM)
          .Case("bundle", Phase::Bundle)
          .Default(std::nullopt);
  bool emitTrain = f.o.emit == "train";
  if (emitTrain) {
    if (!training)
      return fail("--emit train: there is no training program with "
                  "--inference");
    phase = Phase::NN;
  }
  if (!phase) {
    if (f.o.emit == "partitioned" || f.o.emit == "scheduled")
      return fail("--emit " + f.o.emit +
                  " is not implemented yet (training arrives in a later "
                  "issue)");
    return fail("--emit " + f.o.emit +
                ": expected nn, linalg, llvm-dialect, llvm or bundle");
  }
  // IR phases come back as text (the front end prints them to stdout by
  // default).
  if (f.o.output.empty()) {
    if (*phase == Phase::Bundle)
      return fail("no output: pass -o OUT_DIR");
  } else if (f.o.output == "-" && *phase == Phase::Bundle) {
    return fail("-o -: a bundle is a directory; stdout is only for --emit "
                "nn, linalg, llvm-dialect or llvm");
  }
  if (f.o.optLevel > 3)
    return fail("-O" + llvm::Twine(f.o.optLevel) +
                ": the optimization level is 0 to 3");

  pipedream::cpu::CPUCodegenOptions codegen;
  codegen.optLevel = f.o.optLevel;
  codegen.cpu = f.o.targetCPU;
  std::optional<pipedream::cpu::GemmLowering> gemmLowering =
      pipedream::cpu::parseGemmLowering(f.o.gemm);
  if (!gemmLowering)
    return fail("--gemm " + f.o.gemm +
                ": expected auto, kernel, vectorize, blas or loops");
  codegen.gemm = *gemmLowering;
  codegen.runTimeChecks = f.o.runTimeChecks;
  applyCompileTimeOptions(f.o, codegen);
  if (codegen.gemm == pipedream::cpu::GemmLowering::BLAS &&
      !pipedream::cpu::isBLASAvailable())
    return fail("--gemm blas: this pipedream was built without OpenBLAS "
                "(install libopenblas-dev and rebuild)");

  // Check the target before the (longer) import: a bad --target-cpu fails
  // fast.
  {
    std::string error;
    if (failed(pipedream::cpu::createTargetMachine(codegen, error)))
      return fail(error);
  }

  MLIRContext context(driverDialects());
  context.loadAllAvailableDialects();

  // Import.
  std::string modelName = llvm::sys::path::filename(f.o.input).str();
  OwningOpRef<ModuleOp> module;
  {
    std::string error;
    std::optional<int64_t> importBatch;
    if (training && f.o.batchSize.has_value())
      importBatch = *f.o.batchSize / trainingOptions.microbatches;
    FailureOr<OwningOpRef<ModuleOp>> loaded =
        loadModel(f.o, importBatch, context, error);
    if (failed(loaded))
      return fail(error);
    module = std::move(*loaded);
  }
  if (*phase == Phase::NN && !emitTrain)
    return emitIR(result, [&](llvm::raw_ostream &os) { (*module)->print(os); });

  std::optional<pipedream::nn::TrainingInfo> trainingInfo;
  SmallVector<pipedream::nn::WeightDecision> weightDecisions;
  if (training) {
    pipedream::TimedPhase phase("autodiff (training program)");
    std::string error;
    auto decisions = markTrainable(f.o, *module, error);
    if (failed(decisions))
      return fail(modelName + ": " + error);
    weightDecisions = std::move(*decisions);
    FirstError firstError(&context);
    auto info = pipedream::nn::buildTrainingFunctions(*module, trainingOptions);
    if (failed(info))
      return fail(modelName + ": " +
                  firstError.orElse("cannot build the training program"));
    trainingInfo = std::move(*info);
  }
  if (emitTrain)
    return emitIR(result, [&](llvm::raw_ostream &os) { (*module)->print(os); });

  // The manifest comes from the model-level signatures.
  pipedream::Bundle bundle;
  {
    std::string error;
    if (failed(pipedream::collectBundle(*module, modelName,
                                        training ? "" : "inference",
                                        codegen.symbolPrefix, bundle, error)))
      return fail(modelName + ": " + error);
    if (*target == CompileTarget::CUDA) {
      bundle.target = "cuda";
      bundle.gpuArch = cuda.gpuArch;
    }
  }
  if (trainingInfo) {
    const pipedream::nn::TrainingOptions &t = trainingOptions;
    const pipedream::nn::OptimizerOptions &o = t.optimizer;
    llvm::json::Array inputs;
    for (const std::string &name : trainingInfo->inputNames)
      inputs.push_back(name);
    llvm::json::Object optimizer{
        {"kind", pipedream::nn::stringifyOptimizerKind(o.kind)},
        {"lr", o.lr},
        {"momentum",
         o.kind == pipedream::nn::OptimizerKind::Momentum ? o.momentum : 0.0},
        {"weight_decay", o.weightDecay},
        {"nesterov", o.nesterov},
        {"beta1", o.beta1},
        {"beta2", o.beta2},
        {"eps", o.eps}};
    llvm::json::Object section{
        {"loss", pipedream::nn::stringifyLossKind(t.loss)},
        {"microbatches", t.microbatches},
        {"microbatch_size", trainingInfo->microbatchSize},
        {"batch_size", t.microbatches * trainingInfo->microbatchSize},
        {"inputs", std::move(inputs)},
        {"step_function", "train_microbatch"},
        {"update_function", "update"},
        {"optimizer", std::move(optimizer)}};
    if (t.loss != pipedream::nn::LossKind::None)
      section["labels"] = t.labelsName;
    if (t.loss == pipedream::nn::LossKind::CrossEntropy)
      section["num_classes"] = trainingInfo->numClasses;
    // Informational (the runtime reads the roles of the functions).
    section["weights"] = pipedream::nn::weightDecisionsJSON(weightDecisions);
    llvm::raw_string_ostream os(bundle.trainingJSON);
    os << llvm::json::Value(std::move(section));
    if (!StringRef(f.o.input).ends_with(".mlir"))
      bundle.copiedFiles.push_back({"model.onnx", f.o.input});
  }

  if (hasNNOps(*module)) {
    std::string error;
    if (failed(pipedream::convertNNToLinalg(*module, error)))
      return fail(modelName + ": " + error);
  }
  // cuda: the index checks the runtime makes on the host (docs/Bundle.md).
  if (bundle.target == "cuda" && f.o.runTimeChecks) {
    std::vector<std::string> dataNames;
    if (trainingInfo)
      dataNames.assign(trainingInfo->inputNames.begin(),
                       trainingInfo->inputNames.end());
    else
      for (const pipedream::BundleFunction &function : bundle.functions)
        for (const pipedream::BundleBuffer &buffer : function.buffers)
          if (buffer.role == "input")
            dataNames.push_back(buffer.name);
    bundle.dataIndexChecks =
        pipedream::collectDataIndexChecks(*module, dataNames);
  }
  // The linalg module keeps nn.name/nn.param: compiling it again gives the
  // same bundle.
  if (*phase == Phase::Linalg)
    return emitIR(result, [&](llvm::raw_ostream &os) { (*module)->print(os); });
  pipedream::stripModelAttributes(*module);

  if (*phase == Phase::LLVMDialect || *phase == Phase::LLVM) {
    std::string error;
    // --target cuda: the host module with the kernels in a gpu.binary.
    if (*target == CompileTarget::CUDA
            ? failed(pipedream::cuda::lowerToLLVMDialect(*module, cuda, error))
            : failed(pipedream::cpu::lowerToLLVMDialect(*module, codegen,
                                                        error)))
      return fail(modelName + ": " + error);
    if (*phase == Phase::LLVMDialect)
      return emitIR(result, [&](llvm::raw_ostream &os) { (*module)->print(os); });
    auto machine = pipedream::cpu::createTargetMachine(codegen, error);
    if (failed(machine))
      return fail(error);
    llvm::LLVMContext llvmContext;
    auto llvmModule = pipedream::cpu::translateToLLVMIR(*module, llvmContext,
                                                        **machine, error);
    if (failed(llvmModule))
      return fail(modelName + ": " + error);
    pipedream::cpu::optimizeLLVMModule(**llvmModule, **machine,
                                       codegen.optLevel);
    return emitIR(result, [&](llvm::raw_ostream &os) {
      (*llvmModule)->print(os, nullptr);
    });
  }

  std::string error;
  pipedream::TimedPhase bundlePhase("write bundle");
  if (failed(pipedream::writeBundle(
          bundle, f.o.output,
          [&](StringRef libraryPath, std::string &libraryError) {
            return compileProgramLibrary(*target, *module, codegen, cuda,
                                         libraryPath, libraryError);
          },
          error)))
    return fail(modelName + ": " + error);
  return result;
}
