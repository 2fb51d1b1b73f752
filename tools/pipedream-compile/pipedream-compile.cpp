//===- pipedream-compile.cpp - ONNX model to a bundle ---------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
//   pipedream-compile MODEL.onnx -o OUT_DIR --inference
//       [--input-shape NAME=DxD ...] [--emit nn|linalg|llvm-dialect|llvm|bundle]
//       [--target cpu] [--target-cpu native|NAME] [-O0..-O3]
//       [--gemm auto|vectorize|blas|loops]
//
// Compiles a model into the bundle of docs/Bundle.md (bundle.json,
// program.so, weights.bin), written atomically into OUT_DIR. With
// `--emit PHASE` other than `bundle` it stops after PHASE and writes that
// phase's IR to the file `-o` names (stdout without -o, or with `-o -`):
//   nn            the imported model (nn dialect)
//   linalg        after convert-nn-to-linalg
//   llvm-dialect  after the CPU lowering (LLVM dialect, with entry wrappers)
//   llvm          optimized LLVM IR, as compiled into program.so
//
// MODEL may also be a `.mlir` file holding an nn- or linalg-level module
// (used by the tests of the code generator).
//
// Only single-rank inference is implemented. The training and pipeline
// flags of the CLI contract (CLI.md: --stages, --schedule, --optimizer...) are
// recognized and refused with a message, never silently ignored. Every
// error is one line on stderr with a non-zero exit status.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Compiler/Bundle.h"
#include "pipedream/Compiler/Pipeline.h"
#include "pipedream/Compiler/Partition.h"
#include "pipedream/Dialect/NN/IR/NNDialect.h"
#include "pipedream/Dialect/NN/Transforms/Training.h"
#include "pipedream/Dialect/Pipe/Transforms/Passes.h"
#include "pipedream/Dialect/Pipe/Transforms/Schedule.h"
#include "pipedream/Dialect/Pipe/Transforms/ScheduleReport.h"
#include "mlir/Pass/PassRegistry.h"
#include "pipedream/Import/ONNX/ImportONNX.h"
#include "pipedream/InitAllDialects.h"
#include "pipedream/Target/CPU/CPUCodegen.h"

#if PIPEDREAM_HAVE_NN_TO_LINALG
#include "pipedream/Conversion/NNToLinalg/NNToLinalg.h"
#endif

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory category("pipedream-compile options");

static cl::opt<std::string> inputFilename(cl::Positional,
                                          cl::desc("<model.onnx|model.mlir>"),
                                          cl::cat(category));
static cl::opt<std::string>
    outputPath("o",
               cl::desc("Output bundle directory (with --emit PHASE: the "
                        "output file, '-' for stdout)"),
               cl::value_desc("OUT_DIR"), cl::cat(category));
static cl::opt<bool> inference("inference",
                               cl::desc("Forward only, one rank"),
                               cl::cat(category));
static cl::list<std::string>
    inputShapes("input-shape",
                cl::desc("Fix the shape of a graph input: NAME=DxDx... "
                         "(repeatable)"),
                cl::value_desc("NAME=DxD"), cl::cat(category));
static cl::opt<std::string>
    emit("emit",
         cl::desc("Stop after a phase: nn, linalg, llvm-dialect, llvm or "
                  "bundle (default)"),
         cl::value_desc("PHASE"), cl::init("bundle"), cl::cat(category));
static cl::opt<std::string> target("target",
                                   cl::desc("Code generator: cpu (default)"),
                                   cl::init("cpu"), cl::cat(category));
static cl::opt<std::string>
    targetCPU("target-cpu",
              cl::desc("CPU to generate code for: native (default: the "
                       "compiling machine) or an LLVM CPU name"),
              cl::init("native"), cl::cat(category));
static cl::opt<unsigned> optLevel("O",
                                  cl::desc("LLVM optimization level (0-3, "
                                           "default 3)"),
                                  cl::Prefix, cl::init(3), cl::cat(category));
static cl::opt<std::string>
    gemm("gemm",
         cl::desc("GEMM lowering: auto (default: vectorized kernel, else "
                  "OpenBLAS), vectorize (no BLAS), blas, loops"),
         cl::value_desc("MODE"), cl::init("auto"), cl::cat(category));
static cl::opt<bool> noChecker("no-onnx-checker",
                               cl::desc("Do not run the ONNX checker"),
                               cl::cat(category));

// Training (CLI.md; docs/Bundle.md "Training bundles").
static cl::opt<std::string>
    lossOption("loss", cl::desc("Training loss: cross-entropy or mse"),
               cl::value_desc("KIND"), cl::cat(category));
static cl::opt<std::string>
    labelsName("labels-name",
               cl::desc("Name of the labels input (default: labels)"),
               cl::init("labels"), cl::cat(category));
static cl::opt<int64_t>
    microbatches("microbatches",
                 cl::desc("Micro-batches per optimizer step (default: the "
                          "number of stages, at least 1)"),
                 cl::init(0), cl::cat(category));
static cl::opt<int64_t>
    batchSize("batch-size",
              cl::desc("Samples per optimizer step = microbatches x "
                       "micro-batch (default: microbatches x the model's "
                       "batch dimension)"),
              cl::init(0), cl::cat(category));
static cl::opt<std::string>
    optimizerOption("optimizer",
                    cl::desc("sgd (default), momentum, adam or adamw"),
                    cl::init("sgd"), cl::cat(category));
static cl::opt<double> lrOption("lr",
                                cl::desc("Learning rate (default 0.01 for "
                                         "sgd/momentum, 0.001 for adam/adamw)"),
                                cl::cat(category));
static cl::opt<double>
    momentumOption("momentum",
                   cl::desc("Momentum (default 0.9 with --optimizer "
                            "momentum; with sgd, a positive value means "
                            "SGD with momentum)"),
                   cl::cat(category));
static cl::opt<bool> nesterovOption("nesterov",
                                    cl::desc("Nesterov momentum"),
                                    cl::cat(category));
static cl::opt<double> weightDecayOption("weight-decay",
                                         cl::desc("Weight decay (default 0)"),
                                         cl::init(0.0), cl::cat(category));
static cl::opt<double> beta1Option("beta1", cl::desc("Adam beta1 (0.9)"),
                                   cl::init(0.9), cl::cat(category));
static cl::opt<double> beta2Option("beta2", cl::desc("Adam beta2 (0.999)"),
                                   cl::init(0.999), cl::cat(category));
static cl::opt<double> epsOption("eps", cl::desc("Adam epsilon (1e-8)"),
                                 cl::init(1e-8), cl::cat(category));


static int fail(const llvm::Twine &message) {
  std::string text = message.str();
  llvm::errs() << "error: " << StringRef(text).split('\n').first << "\n";
  return 1;
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

/// Drops the nn.* argument/result attributes (weight values can be large
/// and mean nothing to the lowering) and the importer's module attributes.
static void stripModelAttributes(ModuleOp module) {
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

/// Runs convert-nn-to-linalg on `module`.
static LogicalResult convertNNToLinalg(ModuleOp module, std::string &error) {
#if PIPEDREAM_HAVE_NN_TO_LINALG
  std::string firstError;
  ScopedDiagnosticHandler handler(module.getContext(), [&](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error && firstError.empty()) {
      llvm::raw_string_ostream os(firstError);
      os << diag.getLocation() << ": " << diag.str();
    }
    return success();
  });
  PassManager pm(module.getContext(), ModuleOp::getOperationName());
  if (failed(applyPassManagerCLOptions(pm))) {
    error = "invalid pass manager options";
    return failure();
  }
  pm.addNestedPass<func::FuncOp>(pipedream::createConvertNNToLinalgPass());
  if (succeeded(pm.run(module)))
    return success();
  error = firstError.empty() ? "convert-nn-to-linalg failed" : firstError;
  return failure();
#else
  (void)module;
  error = "this pipedream-compile was built without convert-nn-to-linalg; "
          "it can only compile linalg-level .mlir input";
  return failure();
#endif
}

/// Writes `print` to the file `-o` names (or stdout).
static int writeText(llvm::function_ref<void(llvm::raw_ostream &)> print) {
  std::string error;
  auto output = openOutputFile(outputPath, &error);
  if (!output)
    return fail(outputPath + ": " + error);
  print(output->os());
  output->keep();
  return 0;
}

//===----------------------------------------------------------------------===//
// Pipeline partitioning (issue 5; lib/Compiler/Partition.cpp does the work)
//===----------------------------------------------------------------------===//

static cl::opt<int64_t> stagesOption("stages",
                                     cl::desc("Pipeline stages K (default 1)"),
                                     cl::init(1), cl::cat(category));
static cl::opt<int64_t>
    virtualStagesOption("virtual-stages",
                        cl::desc("Virtual chunks per stage V (default 1)"),
                        cl::init(1), cl::cat(category));
static cl::opt<std::string>
    partitionOption("partition",
                    cl::desc("Stage partitioning: auto (PipeDream's dynamic "
                             "program, default) or uniform (equal op counts)"),
                    cl::init("auto"), cl::cat(category));
static cl::list<std::string>
    splitAfterOption("split-after",
                     cl::desc("Manual partition: end a stage after these ONNX "
                              "nodes"),
                     cl::value_desc("NODE,..."), cl::CommaSeparated,
                     cl::cat(category));
static cl::opt<std::string>
    costModelOption("cost-model",
                    cl::desc("analytical (default) or a profile PROFILE.json"),
                    cl::init("analytical"), cl::cat(category));
static cl::opt<std::string>
    deviceOption("device",
                 cl::desc("Device of the analytical cost model: cpu "
                          "(default) or h200"),
                 cl::init("cpu"), cl::cat(category));
static cl::opt<std::string>
    memoryLimitOption("memory-limit",
                      cl::desc("Memory per rank for the partitioner (bytes; "
                               "K/M/G or KiB/MiB/GiB suffixes)"),
                      cl::cat(category));
static cl::opt<bool> reportOption("report",
                                  cl::desc("Print the partition report"),
                                  cl::cat(category));
static cl::opt<std::string>
    reportJSONOption("report-json", cl::desc("Write the report as JSON"),
                     cl::value_desc("FILE"), cl::cat(category));

static cl::opt<std::string>
    scheduleOption("schedule",
                   cl::desc("Pipeline schedule: gpipe, 1f1b (default), "
                            "interleaved-1f1b, pipedream, 2bw or zb-h1"),
                   cl::init("1f1b"), cl::cat(category));
static cl::opt<std::string>
    traceOption("trace",
                cl::desc("With --emit scheduled: write the simulated "
                         "schedule as a Chrome trace (Perfetto)"),
                cl::value_desc("FILE.json"), cl::cat(category));
static cl::opt<std::string>
    timelineOption("timeline",
                   cl::desc("With --emit scheduled: write the simulated "
                            "schedule as an SVG picture"),
                   cl::value_desc("FILE.svg"), cl::cat(category));

/// `--emit scheduled`: per-stage training functions, the unrolled global
/// program, its verification and the schedule report.
static LogicalResult
scheduleModule(ModuleOp module, const pipedream::PartitionReport &partition,
               llvm::json::Object &json, std::string &reportText,
               std::string &error) {
  namespace sched = pipedream::pipe::schedule;
  std::optional<sched::Kind> kind = sched::parseKind(scheduleOption);
  if (!kind) {
    error = "--schedule " + scheduleOption +
            ": expected gpipe, 1f1b, interleaved-1f1b, pipedream, 2bw or zb-h1";
    return failure();
  }
  if (lossOption.empty()) {
    error = "a pipeline trains: pass --loss cross-entropy|mse (pipelines of "
            "forward-only --inference bundles are not supported)";
    return failure();
  }
  int64_t m = microbatches.getNumOccurrences()
                  ? microbatches.getValue()
                  : std::max<int64_t>(1, stagesOption);
  sched::Config config{*kind, stagesOption, m, virtualStagesOption};
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
    if (m % stagesOption != 0) {
      error = "--schedule 2bw coalesces gradients over windows of K = " +
              std::to_string(stagesOption) +
              " micro-batches: --microbatches must be a multiple of it";
      return failure();
    }
    perUpdate = stagesOption;
  }
  std::string firstError;
  ScopedDiagnosticHandler handler(module.getContext(), [&](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error && firstError.empty()) {
      llvm::raw_string_ostream os(firstError);
      os << diag.getLocation() << ": " << diag.str();
    }
    return success();
  });
  // Doubles with full precision (formatv would round them).
  auto number = [](double value) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << llvm::format("%.17g", value);
    return text;
  };
  double lr = lrOption.getNumOccurrences()
                  ? lrOption.getValue()
                  : (optimizerOption == "adam" || optimizerOption == "adamw"
                         ? 0.001
                         : 0.01);
  std::string pipeline =
      "pipe-build-stage-training{loss=" + lossOption.getValue() +
      " labels-name=" + labelsName.getValue() +
      " microbatches=" + std::to_string(m) +
      " microbatches-per-update=" + std::to_string(perUpdate) +
      " split-backward=" + (split ? "true" : "false") +
      " optimizer=" + optimizerOption.getValue() + " lr=" + number(lr) +
      " momentum=" +
      number(momentumOption.getNumOccurrences() ? momentumOption.getValue()
                                                : 0.9) +
      " weight-decay=" + number(weightDecayOption) +
      " nesterov=" + (nesterovOption ? "true" : "false") +
      " beta1=" + number(beta1Option) + " beta2=" + number(beta2Option) +
      " eps=" + number(epsOption) + "},pipe-unroll-schedule{kind=" +
      scheduleOption.getValue() + " microbatches=" + std::to_string(m) +
      " virtual=" + std::to_string(virtualStagesOption) +
      "},pipe-project-ranks{keep-global=true},pipe-verify-schedule";
  PassManager pm(module.getContext(), ModuleOp::getOperationName());
  if (failed(parsePassPipeline(pipeline, pm)) || failed(pm.run(module))) {
    error = firstError.empty() ? "scheduling failed" : firstError;
    return failure();
  }

  // The report: simulated with the partition's per-stage costs.
  sched::Schedule schedule = sched::buildSchedule(config);
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
      optimizerOption == "adam" || optimizerOption == "adamw" ? 2
      : optimizerOption == "momentum" ? 1
                                      : 0;
  sched::Report report = sched::buildReport(schedule, options);
  sched::Report unitReport = sched::buildReport(schedule, {});
  llvm::json::Object scheduleJSON = sched::reportToJSON(report);
  for (auto &entry : scheduleJSON)
    json[entry.first] = std::move(entry.second);
  json["bubble_fraction_unit_costs"] = unitReport.bubbleFraction;
  llvm::raw_string_ostream os(reportText);
  os << llvm::formatv("schedule {0}: K = {1}, V = {2}, M = {3}; verified: {4}\n",
                      scheduleOption, stagesOption, virtualStagesOption, m,
                      report.verified ? "yes" : "no");
  os << llvm::formatv("bubble fraction: {0:f3} simulated with the stage "
                      "costs, {1:f3} with unit costs (theory for "
                      "synchronous schedules (K-1)/(V*M+K-1) = {2:f3})\n",
                      report.bubbleFraction, unitReport.bubbleFraction,
                      double(stagesOption - 1) /
                          double(virtualStagesOption * m + stagesOption - 1));
  for (size_t r = 0; r < report.activationSlots.size(); ++r)
    os << llvm::formatv("rank {0}: peak stash {1} micro-batches, {2} weight "
                        "versions, peak memory {3} bytes\n",
                        r, report.activationSlots[r],
                        report.weightVersions[r],
                        report.peakMemoryBytes[r]);
  if (!traceOption.empty())
    if (std::string err = sched::writeTextFile(
            traceOption, sched::traceJSON(schedule, report, options));
        !err.empty()) {
      error = err;
      return failure();
    }
  if (!timelineOption.empty())
    if (std::string err = sched::writeTextFile(
            timelineOption, sched::timelineSVG(schedule, report));
        !err.empty()) {
      error = err;
      return failure();
    }
  json["verified"] = report.verified;
  return success();
}

/// Handles `--emit partitioned` and `--emit scheduled` (and refuses
/// pipeline flags elsewhere until pipeline bundles exist). Returns true when
/// the program should exit with `code`.
static bool runPartitioning(int &code) {
  bool pipelineFlags = stagesOption > 1 || virtualStagesOption > 1 ||
                       !splitAfterOption.empty();
  bool reportFlags = reportOption || !reportJSONOption.empty();
  bool pipelineBundle = emit == "bundle" && !inference &&
                        (stagesOption > 1 || virtualStagesOption > 1 ||
                         scheduleOption.getNumOccurrences());
  bool scheduled = emit == "scheduled" || pipelineBundle;
  if (emit != "partitioned" && !scheduled) {
    if (pipelineFlags || reportFlags || scheduleOption.getNumOccurrences() ||
        !traceOption.empty()) {
      code = fail(llvm::Twine(pipelineFlags ? "--stages/--virtual-stages/"
                                              "--split-after"
                                            : "--report/--report-json/"
                                              "--schedule/--trace") +
                  " only work with --emit partitioned or scheduled so far "
                  "(pipeline bundles are not implemented yet)");
      return true;
    }
    return false;
  }
  if (!scheduled && (!traceOption.empty() || !timelineOption.empty())) {
    code = fail("--trace/--timeline need --emit scheduled");
    return true;
  }
  code = 1;
  if (inputFilename.empty())
    return code = fail("no input model"), true;
  pipedream::PartitionConfig config;
  config.stages = stagesOption;
  config.virtualStages = virtualStagesOption;
  config.method = partitionOption;
  config.splitAfter.assign(splitAfterOption.begin(), splitAfterOption.end());
  if (!splitAfterOption.empty() && !stagesOption.getNumOccurrences())
    config.stages = (splitAfterOption.size() + 1) / config.virtualStages;
  config.device = deviceOption;
  config.costModel = costModelOption;
  config.microbatches = microbatches;
  config.memoryLimit = memoryLimitOption;
  if (optimizerOption == "adam" || optimizerOption == "adamw")
    config.optimizerStates = 2;
  else if (optimizerOption == "momentum" || momentumOption > 0)
    config.optimizerStates = 1;
  if (config.method != "auto" && config.method != "uniform")
    return code = fail("--partition " + config.method +
                       ": expected auto or uniform"), true;
  if (config.device != "cpu" && config.device != "h200")
    return code = fail("--device " + config.device + ": expected cpu or h200"),
           true;

  pipedream::ImportOptions importOptions;
  importOptions.runChecker = !noChecker;
  for (const std::string &shape : inputShapes) {
    std::string error;
    if (!pipedream::parseInputShapeOption(shape, importOptions, error))
      return code = fail(error), true;
  }
  int64_t m = microbatches.getNumOccurrences()
                  ? microbatches.getValue()
                  : std::max<int64_t>(1, stagesOption);
  if (batchSize.getNumOccurrences()) {
    if (batchSize <= 0 || batchSize % m != 0)
      return code = fail("--batch-size " + llvm::Twine(batchSize.getValue()) +
                         ": must be a positive multiple of --microbatches (" +
                         llvm::Twine(m) + ")"),
             true;
    importOptions.batchSize = batchSize / m;
  }
  DialectRegistry registry;
  pipedream::registerAllDialects(registry);
  pipedream::registerONNXImportDialects(registry);
  pipedream::cpu::registerCPUCodegenDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  OwningOpRef<ModuleOp> module;
  std::string error;
  if (StringRef(inputFilename).ends_with(".mlir")) {
    module = parseSourceFile<ModuleOp>(inputFilename, &context);
    if (!module)
      return code = fail(inputFilename + ": cannot parse"), true;
  } else {
    auto imported = pipedream::importONNXFile(inputFilename, context,
                                              importOptions, error);
    if (failed(imported))
      return code = fail(error), true;
    module = std::move(*imported);
  }
  std::string modelName = llvm::sys::path::filename(inputFilename).str();
  if (failed(pipedream::partitionModule(*module, config, error)))
    return code = fail(modelName + ": " + error), true;
  auto report = pipedream::collectPartitionReport(*module, error);
  if (failed(report))
    return code = fail(modelName + ": " + error), true;
  if (failed(pipedream::outlineStages(*module, error)))
    return code = fail(modelName + ": " + error), true;
  llvm::json::Object json = pipedream::partitionReportJSON(*report);
  // What a pipeline bundle's runtime needs to feed the ranks.
  llvm::json::Array dataInputs;
  int64_t microbatchSize = 0, numClasses = 0;
  if (auto main = module->lookupSymbol<func::FuncOp>("main")) {
    for (unsigned i = 0, e = main.getNumArguments(); i < e; ++i) {
      if (main.getArgAttr(i, pipedream::nn::NNDialect::kParamAttrName))
        continue;
      auto name = main.getArgAttrOfType<StringAttr>(
          i, pipedream::nn::NNDialect::kNameAttrName);
      dataInputs.push_back(name ? name.getValue().str()
                                : "arg" + std::to_string(i));
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
      failed(scheduleModule(*module, *report, json, scheduleText, error)))
    return code = fail(modelName + ": " + error), true;
  std::string renderedReport =
      llvm::formatv("{0:2}", llvm::json::Value(std::move(json)));
  // NOTE: the in-process linker (lld) resets every LLVM command-line
  // option to its default; read the flags needed after code generation now.
  bool wantReport = reportOption;
  std::string reportJSONPath = reportJSONOption;
  std::string outputDir = outputPath;
  if (pipelineBundle) {
    auto ranks = pipedream::serializeRankPrograms(*module, error);
    if (failed(ranks))
      return code = fail(modelName + ": " + error), true;
    pipedream::eraseProgramOps(*module);
    pipedream::Bundle bundle;
    if (failed(pipedream::collectBundle(*module, modelName, "", "pipedream_",
                                        bundle, error)))
      return code = fail(modelName + ": " + error), true;
    llvm::json::Object optimizer{
        {"kind", optimizerOption.getValue()},
        {"lr", lrOption.getNumOccurrences()
                   ? lrOption.getValue()
                   : (optimizerOption == "adam" || optimizerOption == "adamw"
                          ? 0.001
                          : 0.01)},
        {"momentum", momentumOption.getNumOccurrences()
                         ? momentumOption.getValue()
                         : (optimizerOption == "momentum" ? 0.9 : 0.0)},
        {"weight_decay", weightDecayOption.getValue()},
        {"nesterov", nesterovOption.getValue()},
        {"beta1", beta1Option.getValue()},
        {"beta2", beta2Option.getValue()},
        {"eps", epsOption.getValue()}};
    llvm::json::Object section{
        {"schedule",
         llvm::json::Object{{"kind", scheduleOption.getValue()},
                            {"stages", stagesOption.getValue()},
                            {"microbatches", m},
                            {"chunks", virtualStagesOption.getValue()}}},
        {"loss", lossOption.getValue()},
        {"labels", labelsName.getValue()},
        {"inputs", std::move(dataInputs)},
        {"microbatch_size", microbatchSize},
        {"batch_size", m * microbatchSize},
        {"optimizer", std::move(optimizer)},
        {"ranks", std::move(*ranks)}};
    if (lossOption == "cross-entropy")
      section["num_classes"] = numClasses;
    llvm::raw_string_ostream os(bundle.pipelineJSON);
    os << llvm::formatv("{0:2}", llvm::json::Value(std::move(section)));
    if (!StringRef(inputFilename).ends_with(".mlir"))
      bundle.copiedFiles.push_back({"model.onnx", inputFilename});
    if (hasNNOps(*module) && failed(convertNNToLinalg(*module, error)))
      return code = fail(modelName + ": " + error), true;
    stripModelAttributes(*module);
    pipedream::cpu::CPUCodegenOptions codegen;
    codegen.optLevel = optLevel;
    codegen.cpu = targetCPU;
    if (auto gemmLowering = pipedream::cpu::parseGemmLowering(gemm))
      codegen.gemm = *gemmLowering;
    if (outputPath.empty())
      return code = fail("no output: pass -o OUT_DIR"), true;
    if (failed(pipedream::writeBundle(
            bundle, outputPath,
            [&](StringRef libraryPath, std::string &libraryError) {
              return pipedream::cpu::compileToSharedLibrary(
                  *module, codegen, libraryPath, libraryError);
            },
            error)))
      return code = fail(modelName + ": " + error), true;
    // CLI.md: OUT_DIR holds report.json too.
    llvm::SmallString<256> reportPath(outputDir);
    llvm::sys::path::append(reportPath, "report.json");
    std::string openError;
    auto file = openOutputFile(reportPath, &openError);
    if (!file)
      return code = fail(reportPath + ": " + openError), true;
    file->os() << renderedReport << "\n";
    file->keep();
  }
  if (!reportJSONPath.empty()) {
    std::string openError;
    auto file = openOutputFile(reportJSONPath, &openError);
    if (!file)
      return code = fail(reportJSONPath + ": " + openError), true;
    file->os() << renderedReport << "\n";
    file->keep();
  }
  // The report goes to stderr when the IR goes to stdout.
  if (wantReport) {
    bool irToStdout = outputDir.empty() || outputDir == "-";
    llvm::raw_ostream &os = irToStdout ? llvm::errs() : llvm::outs();
    pipedream::printPartitionReport(*report, os);
    os << scheduleText;
  }
  if (pipelineBundle)
    return code = 0, true;
  if (outputPath.empty())
    outputPath = "-";
  code = writeText([&](llvm::raw_ostream &os) { (*module)->print(os); });
  return true;
}

/// Parses the command line; unknown options and bad values are one-line
/// errors. Returns false when the program should exit with `exitCode`.
static bool parseCommandLine(int argc, char **argv, int &exitCode) {
  // Pass names for --mlir-print-ir-after=PASS and friends (before the
  // pass manager options, whose parser lists the registered passes).
  pipedream::cpu::registerCPUCodegenPasses();
  pipedream::pipe::registerPipeTransformsPasses();
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  cl::HideUnrelatedOptions(category);
  std::string errors;
  llvm::raw_string_ostream errorStream(errors);
  bool ok = cl::ParseCommandLineOptions(
      argc, argv,
      "pipedream-compile: ONNX model -> bundle (bundle.json, program.so, "
      "weights.bin)\n",
      &errorStream);
  if (!ok) {
    // cl's messages start with the program name; keep only the message.
    StringRef line = StringRef(errors).split('\n').first;
    if (line.starts_with("pipedream-compile: "))
      line = line.drop_front(strlen("pipedream-compile: "));
    exitCode = fail(line);
    return false;
  }
  return true;
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  int exitCode = 0;
  if (!parseCommandLine(argc, argv, exitCode))
    return exitCode;

  // Pipelines (issues 5 and 6): --emit partitioned / scheduled, --report.
  if (int code = 0; runPartitioning(code))
    return code;

  if (inputFilename.empty())
    return fail("no input model (pipedream-compile MODEL.onnx -o OUT_DIR "
                "--inference)");
  // Training configuration.
  bool training = !inference;
  pipedream::nn::TrainingOptions trainingOptions;
  if (inference) {
    for (cl::Option *option :
         std::initializer_list<cl::Option *>{
             &lossOption, &labelsName, &microbatches, &batchSize,
             &optimizerOption, &lrOption, &momentumOption, &nesterovOption,
             &weightDecayOption, &beta1Option, &beta2Option, &epsOption})
      if (option->getNumOccurrences())
        return fail("--" + option->ArgStr + " is a training flag; it does not "
                    "apply to --inference");
  } else {
    if (lossOption.empty())
      return fail("training needs a loss: pass --loss cross-entropy|mse (or "
                  "--inference for a forward-only bundle)");
    std::optional<pipedream::nn::LossKind> loss =
        pipedream::nn::parseLossKind(lossOption);
    if (!loss)
      return fail("--loss " + lossOption + ": expected cross-entropy or mse");
    trainingOptions.loss = *loss;
    trainingOptions.labelsName = labelsName;
    int64_t m = microbatches.getNumOccurrences() ? microbatches.getValue() : 1;
    if (m < 1)
      return fail("--microbatches " + llvm::Twine(m) + ": at least 1");
    trainingOptions.microbatches = m;
    if (batchSize.getNumOccurrences() &&
        (batchSize <= 0 || batchSize % m != 0))
      return fail("--batch-size " + llvm::Twine(batchSize.getValue()) +
                  ": must be a positive multiple of --microbatches (" +
                  llvm::Twine(m) + ")");
    std::optional<pipedream::nn::OptimizerKind> kind =
        pipedream::nn::parseOptimizerKind(optimizerOption);
    if (!kind)
      return fail("--optimizer " + optimizerOption +
                  ": expected sgd, momentum, adam or adamw");
    pipedream::nn::OptimizerOptions &opt = trainingOptions.optimizer;
    opt.kind = *kind;
    bool adam = *kind == pipedream::nn::OptimizerKind::Adam ||
                *kind == pipedream::nn::OptimizerKind::AdamW;
    opt.lr = lrOption.getNumOccurrences() ? lrOption.getValue()
                                          : (adam ? 0.001 : 0.01);
    if (momentumOption.getNumOccurrences()) {
      if (adam)
        return fail("--momentum applies to sgd and momentum; adam uses "
                    "--beta1/--beta2");
      opt.momentum = momentumOption;
      if (*kind == pipedream::nn::OptimizerKind::SGD && opt.momentum > 0)
        opt.kind = pipedream::nn::OptimizerKind::Momentum;
    }
    opt.nesterov = nesterovOption;
    if (opt.nesterov && opt.kind != pipedream::nn::OptimizerKind::Momentum)
      return fail("--nesterov needs momentum (--optimizer momentum)");
    opt.weightDecay = weightDecayOption;
    opt.beta1 = beta1Option;
    opt.beta2 = beta2Option;
    opt.eps = epsOption;
    if (!(opt.lr > 0) || opt.momentum < 0 || opt.weightDecay < 0 ||
        !(opt.beta1 >= 0 && opt.beta1 < 1) ||
        !(opt.beta2 >= 0 && opt.beta2 < 1) || !(opt.eps > 0))
      return fail("optimizer hyper-parameters out of range (lr > 0, "
                  "momentum >= 0, weight decay >= 0, 0 <= beta < 1, eps > 0)");
  }
  if (target != "cpu")
    return fail("--target " + target +
                ": only the cpu code generator is implemented");
  enum class Phase { NN, Linalg, LLVMDialect, LLVM, Bundle };
  std::optional<Phase> phase =
      llvm::StringSwitch<std::optional<Phase>>(emit)
          .Case("nn", Phase::NN)
          .Case("linalg", Phase::Linalg)
          .Case("llvm-dialect", Phase::LLVMDialect)
          .Case("llvm", Phase::LLVM)
          .Case("bundle", Phase::Bundle)
          .Default(std::nullopt);
  bool emitTrain = emit == "train";
  if (emitTrain) {
    if (!training)
      return fail("--emit train: there is no training program with "
                  "--inference");
    phase = Phase::NN;
  }
  if (!phase) {
    if (emit == "partitioned" || emit == "scheduled")
      return fail("--emit " + emit +
                  " is not implemented yet (training arrives in a later "
                  "issue)");
    return fail("--emit " + emit +
                ": expected nn, linalg, llvm-dialect, llvm or bundle");
  }
  if (outputPath.empty()) {
    if (*phase == Phase::Bundle)
      return fail("no output: pass -o OUT_DIR");
    outputPath = "-"; // IR phases print to stdout by default
  } else if (outputPath == "-" && *phase == Phase::Bundle) {
    return fail("-o -: a bundle is a directory; stdout is only for --emit "
                "nn, linalg, llvm-dialect or llvm");
  }
  if (optLevel > 3)
    return fail("-O" + llvm::Twine(optLevel.getValue()) +
                ": the optimization level is 0 to 3");

  pipedream::cpu::CPUCodegenOptions codegen;
  codegen.optLevel = optLevel;
  codegen.cpu = targetCPU;
  std::optional<pipedream::cpu::GemmLowering> gemmLowering =
      pipedream::cpu::parseGemmLowering(gemm);
  if (!gemmLowering)
    return fail("--gemm " + gemm + ": expected auto, vectorize, blas or loops");
  codegen.gemm = *gemmLowering;
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

  pipedream::ImportOptions importOptions;
  importOptions.runChecker = !noChecker;
  if (training && batchSize.getNumOccurrences())
    importOptions.batchSize = batchSize / trainingOptions.microbatches;
  for (const std::string &shape : inputShapes) {
    std::string error;
    if (!pipedream::parseInputShapeOption(shape, importOptions, error))
      return fail(error);
  }

  DialectRegistry registry;
  pipedream::registerAllDialects(registry);
  pipedream::registerONNXImportDialects(registry);
  pipedream::cpu::registerCPUCodegenDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();

  // Import.
  OwningOpRef<ModuleOp> module;
  std::string modelName = llvm::sys::path::filename(inputFilename).str();
  if (StringRef(inputFilename).ends_with(".mlir")) {
    if (!inputShapes.empty())
      return fail("--input-shape applies to ONNX models, not .mlir input");
    std::string firstError;
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
      if (diag.getSeverity() == DiagnosticSeverity::Error &&
          firstError.empty()) {
        llvm::raw_string_ostream os(firstError);
        os << diag.getLocation() << ": " << diag.str();
      }
      return success();
    });
    llvm::SourceMgr sourceMgr;
    std::string openError;
    auto file = openInputFile(inputFilename, &openError);
    if (!file)
      return fail(inputFilename + ": " + openError);
    sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
    module = parseSourceFile<ModuleOp>(sourceMgr, &context);
    if (!module)
      return fail(firstError.empty() ? inputFilename + ": cannot parse"
                                     : firstError);
  } else {
    std::string error;
    auto imported = pipedream::importONNXFile(inputFilename, context,
                                              importOptions, error);
    if (failed(imported))
      return fail(error);
    module = std::move(*imported);
  }
  if (*phase == Phase::NN && !emitTrain)
    return writeText([&](llvm::raw_ostream &os) { (*module)->print(os); });

  std::optional<pipedream::nn::TrainingInfo> trainingInfo;
  if (training) {
    std::string firstError;
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
      if (diag.getSeverity() == DiagnosticSeverity::Error &&
          firstError.empty()) {
        llvm::raw_string_ostream os(firstError);
        os << diag.getLocation() << ": " << diag.str();
      }
      return success();
    });
    auto info = pipedream::nn::buildTrainingFunctions(*module, trainingOptions);
    if (failed(info))
      return fail(modelName + ": " +
                  (firstError.empty() ? "cannot build the training program"
                                      : firstError));
    trainingInfo = std::move(*info);
  }
  if (emitTrain)
    return writeText([&](llvm::raw_ostream &os) { (*module)->print(os); });

  // The manifest comes from the model-level signatures.
  pipedream::Bundle bundle;
  {
    std::string error;
    if (failed(pipedream::collectBundle(*module, modelName,
                                        training ? "" : "inference",
                                        codegen.symbolPrefix, bundle, error)))
      return fail(modelName + ": " + error);
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
        {"labels", t.labelsName},
        {"microbatches", t.microbatches},
        {"microbatch_size", trainingInfo->microbatchSize},
        {"batch_size", t.microbatches * trainingInfo->microbatchSize},
        {"inputs", std::move(inputs)},
        {"step_function", "train_microbatch"},
        {"update_function", "update"},
        {"optimizer", std::move(optimizer)}};
    if (t.loss == pipedream::nn::LossKind::CrossEntropy)
      section["num_classes"] = trainingInfo->numClasses;
    llvm::raw_string_ostream os(bundle.trainingJSON);
    os << llvm::json::Value(std::move(section));
    if (!StringRef(inputFilename).ends_with(".mlir"))
      bundle.copiedFiles.push_back({"model.onnx", inputFilename});
  }

  if (hasNNOps(*module)) {
    std::string error;
    if (failed(convertNNToLinalg(*module, error)))
      return fail(modelName + ": " + error);
  }
  // The linalg module keeps nn.name/nn.param: compiling it again gives the
  // same bundle.
  if (*phase == Phase::Linalg)
    return writeText([&](llvm::raw_ostream &os) { (*module)->print(os); });
  stripModelAttributes(*module);

  if (*phase == Phase::LLVMDialect || *phase == Phase::LLVM) {
    std::string error;
    if (failed(pipedream::cpu::lowerToLLVMDialect(*module, codegen, error)))
      return fail(modelName + ": " + error);
    if (*phase == Phase::LLVMDialect)
      return writeText([&](llvm::raw_ostream &os) { (*module)->print(os); });
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
    return writeText([&](llvm::raw_ostream &os) { (*llvmModule)->print(os, nullptr); });
  }

  std::string error;
  if (failed(pipedream::writeBundle(
          bundle, outputPath,
          [&](StringRef libraryPath, std::string &libraryError) {
            return pipedream::cpu::compileToSharedLibrary(
                *module, codegen, libraryPath, libraryError);
          },
          error)))
    return fail(modelName + ": " + error);
  return 0;
}
