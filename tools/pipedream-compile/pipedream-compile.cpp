//===- pipedream-compile.cpp - ONNX model to a bundle ---------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
//   pipedream-compile MODEL.onnx -o OUT_DIR --inference
//       [--input-shape NAME=DxD ...] [--emit nn|linalg|llvm-dialect|llvm|bundle]
//       [--target cpu|cuda] [--target-cpu native|NAME] [-O0..-O3]
//       [--gpu-arch sm_NN] [--dtype f32|bf16]
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
// flags of the CLI contract (docs/CLI.md: --stages, --schedule, --optimizer...) are
// recognized and refused with a message, never silently ignored. Every
// error is one line on stderr with a non-zero exit status.
//
// This file is the command line only: it fills a pipedream::CompileOptions
// and prints what pipedream::compile (lib/Driver) returns.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Driver/Driver.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

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
                                   cl::desc("Code generator: cpu (default) "
                                            "or cuda (docs/GPU.md)"),
                                   cl::init("cpu"), cl::cat(category));
static cl::opt<std::string>
    gpuArchOption("gpu-arch",
                  cl::desc("--target cuda: GPU architecture (default sm_90)"),
                  cl::value_desc("sm_NN"), cl::cat(category));
static cl::opt<std::string>
    dtypeOption("dtype",
                cl::desc("--target cuda: GEMM precision, f32 (default) or "
                         "bf16 (bf16 GEMM operands and products, f32 "
                         "accumulation; weights, optimizer state, other "
                         "ops and the bundle's buffers stay f32)"),
                cl::value_desc("TYPE"), cl::cat(category));
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
         cl::desc("GEMM lowering: auto (default: pipedream's kernel for "
                  "f32, OpenBLAS for f64), kernel (no BLAS), vectorize, "
                  "blas, loops"),
         cl::value_desc("MODE"), cl::init("auto"), cl::cat(category));
static cl::opt<bool> noRunTimeChecks(
    "no-run-time-checks",
    cl::desc("Do not report out-of-range indices at run time (they are "
             "still clamped); for measuring the checks' cost"),
    cl::cat(category));
static cl::opt<bool> noChecker("no-onnx-checker",
                               cl::desc("Do not run the ONNX checker"),
                               cl::cat(category));

// Training (docs/CLI.md; docs/Bundle.md "Training bundles").
static cl::opt<std::string>
    lossOption("loss",
               cl::desc("Training loss: cross-entropy, mse, or none (the "
                        "model's first output is its scalar loss)"),
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
    freezeOption("freeze",
                 cl::desc("Keep these weights fixed in training (names or "
                          "regular expressions; repeatable)"),
                 cl::value_desc("NAME|REGEX,..."), cl::CommaSeparated,
                 cl::cat(category));
static cl::list<std::string>
    trainOption("train",
                cl::desc("Train these weights even where the trainable rule "
                         "freezes them (names or regular expressions; "
                         "repeatable)"),
                cl::value_desc("NAME|REGEX,..."), cl::CommaSeparated,
                cl::cat(category));
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
                            "interleaved-1f1b, pipedream, 2bw, zb-h1, "
                            "interleaved-zb, zb-v or dualpipe-v"),
                   cl::init("1f1b"), cl::cat(category));
static cl::opt<std::string>
    traceOption("trace",
                cl::desc("With --emit scheduled: write the simulated "
                         "schedule as a Chrome trace (Perfetto)"),
                cl::value_desc("FILE.json"), cl::cat(category));
// --- schedules from and to torch's CSV (issue 17) ---
static cl::opt<std::string> scheduleCsvOption(
    "schedule-csv",
    cl::desc("With --emit scheduled: run this torch.distributed.pipelining "
             "schedule CSV (kind and M inferred unless given)"),
    cl::value_desc("FILE.csv"), cl::cat(category));
static cl::opt<std::string> exportScheduleCsvOption(
    "export-schedule-csv",
    cl::desc("With --emit scheduled: write the schedule as torch's CSV"),
    cl::value_desc("FILE.csv"), cl::cat(category));
// --- end issue 17 ---
static cl::opt<std::string>
    timelineOption("timeline",
                   cl::desc("With --emit scheduled: write the simulated "
                            "schedule as an SVG picture"),
                   cl::value_desc("FILE.svg"), cl::cat(category));

//===--- Compile time (issue 16; ctime) -----------------------------------===//
static cl::opt<bool> timePhasesOption(
    "time-phases",
    cl::desc("Print the wall and CPU time of each compile phase (import, "
             "autodiff, partition, schedule, lowering, LLVM opt, codegen, "
             "link) with MLIR's pass timing, to stderr"),
    cl::cat(category));
static cl::opt<unsigned> codegenThreadsOption(
    "codegen-threads",
    cl::desc("Threads for LLVM optimization and code generation (0: one per "
             "core, default; 1: one module on one thread)"),
    cl::init(0), cl::cat(category));
static cl::opt<bool> outlineKernelsOption(
    "outline-kernels",
    cl::desc("Compile each loop nest as a function of its own, once per "
             "distinct nest (default true)"),
    cl::init(true), cl::cat(category));
static cl::opt<std::string> cacheDirOption(
    "cache-dir",
    cl::desc("Cache of compiled objects, keyed by a hash of their LLVM IR "
             "(default: $PIPEDREAM_CACHE_DIR, $XDG_CACHE_HOME/pipedream or "
             "~/.cache/pipedream)"),
    cl::value_desc("DIR"), cl::cat(category));
static cl::opt<bool> noCacheOption(
    "no-cache",
    cl::desc("Do not read or write the object cache (also "
             "PIPEDREAM_NO_CACHE=1)"),
    cl::cat(category));
//===----------------------------------------------------------------------===//

/// Parses the command line; unknown options and bad values are one-line
/// errors. Returns false when the program should exit with `exitCode`.
static bool parseCommandLine(int argc, char **argv, int &exitCode) {
  // Pass names for --mlir-print-ir-after=PASS and friends (before the
  // pass manager options, whose parser lists the registered passes).
  pipedream::registerDriverPasses();
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

/// The value of `option` when the command line gave it, else nullopt.
template <typename T, typename V = T>
static std::optional<V> given(const cl::opt<T> &option) {
  if (!option.getNumOccurrences())
    return std::nullopt;
  return V(option.getValue());
}

/// Reads every flag into the driver's options.
// NOTE: the in-process linker (lld) resets every LLVM command-line option to
// its default: read them all here, before anything is compiled.
static pipedream::CompileOptions readOptions() {
  pipedream::CompileOptions o;
  o.input = inputFilename;
  o.output = outputPath;
  o.emit = emit;
  o.inference = inference;
  o.inputShapes.assign(inputShapes.begin(), inputShapes.end());
  o.runONNXChecker = !noChecker;
  o.target = target;
  o.targetCPU = targetCPU;
  o.optLevel = optLevel;
  o.gemm = gemm;
  o.runTimeChecks = !noRunTimeChecks;
  o.gpuArch = given(gpuArchOption);
  o.dtype = given(dtypeOption);
  o.loss = given(lossOption);
  o.labelsName = given(labelsName);
  o.microbatches = given(microbatches);
  o.batchSize = given(batchSize);
  o.optimizer = given(optimizerOption);
  o.lr = given(lrOption);
  o.momentum = given(momentumOption);
  o.nesterov = given(nesterovOption);
  o.weightDecay = given(weightDecayOption);
  o.beta1 = given(beta1Option);
  o.beta2 = given(beta2Option);
  o.eps = given(epsOption);
  o.freeze.assign(freezeOption.begin(), freezeOption.end());
  o.train.assign(trainOption.begin(), trainOption.end());
  o.stages = given(stagesOption);
  o.virtualStages = virtualStagesOption;
  o.partition = partitionOption;
  o.splitAfter.assign(splitAfterOption.begin(), splitAfterOption.end());
  o.costModel = costModelOption;
  o.device = deviceOption;
  o.memoryLimit = memoryLimitOption;
  o.schedule = given(scheduleOption);
  o.report = reportOption;
  o.reportJSON = reportJSONOption;
  o.trace = traceOption;
  o.timeline = timelineOption;
  o.scheduleCsv = scheduleCsvOption;             // issue 17
  o.exportScheduleCsv = exportScheduleCsvOption; // issue 17
  // Compile time (issue 16).
  o.timePhases = timePhasesOption;
  o.codegenThreads = codegenThreadsOption;
  o.outlineKernels = outlineKernelsOption;
  o.cacheDir = cacheDirOption;
  o.noCache = noCacheOption;
  return o;
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  int exitCode = 0;
  if (!parseCommandLine(argc, argv, exitCode))
    return exitCode;

  const pipedream::CompileOptions options = readOptions();
  pipedream::CompileResult result = pipedream::compile(options);
  if (!result.succeeded())
    return fail(result.error);
  // IR phases print to stdout by default; the report goes to stderr when
  // the IR goes to stdout.
  std::string outputFile = options.output.empty() ? "-" : options.output;
  if (!result.reportText.empty()) {
    bool irToStdout = options.output.empty() || options.output == "-";
    llvm::raw_ostream &os = irToStdout ? llvm::errs() : llvm::outs();
    os << result.reportText;
  }
  if (!result.hasIR)
    return 0;
  std::string error;
  auto output = openOutputFile(outputFile, &error);
  if (!output)
    return fail(outputFile + ": " + error);
  output->os() << result.ir;
  output->keep();
  return 0;
}
