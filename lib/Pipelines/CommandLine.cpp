//===- CommandLine.cpp - compile options bound to flags -------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The flags of docs/CLI.md. Defaults live in resolvePhaseOptions
// (Options.cpp): a flag whose default depends on other flags is read as
// "not given" when it does not occur.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Pipelines/CommandLine.h"
#include "pipedream/Import/ONNX/ImportONNX.h"
#include "pipedream/Support/Diagnostics.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <mutex>

using namespace pipedream;
namespace cl = llvm::cl;

/// The value of `option` when the command line gave it, else nullopt.
template <typename T> static std::optional<T> given(const cl::opt<T> &option) {
  if (!option.getNumOccurrences())
    return std::nullopt;
  return T(option.getValue());
}

//===----------------------------------------------------------------------===//
// ONNX import
//===----------------------------------------------------------------------===//

struct ImportFlags::Flags {
  explicit Flags(cl::OptionCategory &category)
      : inputShapes("input-shape",
                    cl::desc("Fix the shape of a graph input: NAME=DxDx... "
                             "(repeatable)"),
                    cl::value_desc("NAME=DxD"), cl::cat(category)),
        noChecker("no-onnx-checker", cl::desc("Do not run the ONNX checker"),
                  cl::cat(category)) {}
  cl::list<std::string> inputShapes;
  cl::opt<bool> noChecker;
};

ImportFlags::ImportFlags(cl::OptionCategory &category)
    : flags(std::make_unique<Flags>(category)) {}
ImportFlags::~ImportFlags() = default;

std::vector<std::string> ImportFlags::inputShapes() const {
  return {flags->inputShapes.begin(), flags->inputShapes.end()};
}

bool ImportFlags::runChecker() const { return !flags->noChecker; }

mlir::LogicalResult ImportFlags::read(mlir::MLIRContext &context,
                                      ImportOptions &options) const {
  options.runChecker = runChecker();
  for (const std::string &shape : flags->inputShapes)
    if (mlir::failed(parseInputShapeOption(context, shape, options)))
      return mlir::failure();
  return mlir::success();
}

//===----------------------------------------------------------------------===//
// Code generation
//===----------------------------------------------------------------------===//

struct CodegenFlags::Flags {
  explicit Flags(cl::OptionCategory &category)
      : targetCPU("target-cpu",
                  cl::desc("CPU to generate code for: native (default: the "
                           "compiling machine) or an LLVM CPU name"),
                  cl::init("native"), cl::cat(category)),
        optLevel("O", cl::desc("LLVM optimization level (0-3, default 3)"),
                 cl::Prefix, cl::init(3), cl::cat(category)),
        gemm("gemm",
             cl::desc("GEMM lowering: auto (default: pipedream's kernel "
                      "for f32, OpenBLAS for f64), kernel (no BLAS), "
                      "vectorize, blas, loops"),
             cl::value_desc("MODE"), cl::init("auto"), cl::cat(category)),
        noRunTimeChecks(
            "no-run-time-checks",
            cl::desc("Do not report out-of-range indices at run time (they "
                     "are still clamped); for measuring the checks' cost"),
            cl::cat(category)),
        codegenThreads(
            "codegen-threads",
            cl::desc("Threads for LLVM optimization and code generation "
                     "(0: one per core, default; 1: one module on one "
                     "thread)"),
            cl::init(0), cl::cat(category)),
        outlineKernels(
            "outline-kernels",
            cl::desc("Compile each loop nest as a function of its own, once "
                     "per distinct nest (default true)"),
            cl::init(true), cl::cat(category)),
        mergeFunctions(
            "merge-functions",
            cl::desc("Compile bundle functions that are equal but for their "
                     "weights (pipeline stages holding equal blocks) once "
                     "(default true)"),
            cl::init(true), cl::cat(category)),
        reassociateReductions(
            "reassociate-reductions",
            cl::desc("Let innermost floating-point sums and products (row "
                     "sums, LayerNorm and softmax statistics) be computed in "
                     "any order, so they vectorize (default true; false: "
                     "in order)"),
            cl::init(true), cl::cat(category)),
        vectorizeReductions(
            "vectorize-reductions",
            cl::desc("Compute the 16 lanes of a reassociated reduction as "
                     "vector operations (default true; false: as 16 scalar "
                     "chains, the same bits)"),
            cl::init(true), cl::cat(category)),
        fuseRowLoops(
            "fuse-row-loops",
            cl::desc("Run consecutive loop nests over the same rows "
                     "(LayerNorm, softmax, losses) as one nest, row by row "
                     "(default true)"),
            cl::init(true), cl::cat(category)),
        planTemporaries(
            "plan-temporaries",
            cl::desc("Place each function's temporaries in one buffer by "
                     "live range, reusing the bytes of dead ones (default "
                     "true)"),
            cl::init(true), cl::cat(category)),
        cacheDir("cache-dir",
                 cl::desc("Cache of compiled objects, keyed by a hash of "
                          "their LLVM IR (default: $PIPEDREAM_CACHE_DIR, "
                          "$XDG_CACHE_HOME/pipedream or ~/.cache/pipedream)"),
                 cl::value_desc("DIR"), cl::cat(category)),
        noCache("no-cache",
                cl::desc("Do not read or write the object cache (also "
                         "PIPEDREAM_NO_CACHE=1)"),
                cl::cat(category)) {}
  cl::opt<std::string> targetCPU;
  cl::opt<unsigned> optLevel;
  cl::opt<std::string> gemm;
  cl::opt<bool> noRunTimeChecks;
  cl::opt<unsigned> codegenThreads;
  cl::opt<bool> outlineKernels;
  cl::opt<bool> mergeFunctions;
  cl::opt<bool> reassociateReductions;
  cl::opt<bool> vectorizeReductions;
  cl::opt<bool> fuseRowLoops;
  cl::opt<bool> planTemporaries;
  cl::opt<std::string> cacheDir;
  cl::opt<bool> noCache;
};

CodegenFlags::CodegenFlags(cl::OptionCategory &category)
    : flags(std::make_unique<Flags>(category)) {}
CodegenFlags::~CodegenFlags() = default;

void CodegenFlags::read(CompileOptions &o) const {
  o.targetCPU = flags->targetCPU;
  o.optLevel = flags->optLevel;
  o.gemm = flags->gemm;
  o.runTimeChecks = !flags->noRunTimeChecks;
  o.codegenThreads = flags->codegenThreads;
  o.loops.outlineKernels = flags->outlineKernels;
  o.loops.mergeFunctions = flags->mergeFunctions;
  o.loops.reassociateReductions = flags->reassociateReductions;
  o.loops.vectorizeReductions = flags->vectorizeReductions;
  o.loops.fuseRowLoops = flags->fuseRowLoops;
  o.loops.planTemporaries = flags->planTemporaries;
  o.cacheDir = flags->cacheDir;
  o.noCache = flags->noCache;
}

//===----------------------------------------------------------------------===//
// pipedream-compile
//===----------------------------------------------------------------------===//

struct CompileFlags::Flags {
  explicit Flags(cl::OptionCategory &c)
      : input(cl::Positional, cl::desc("<model.onnx|model.mlir>"), cl::cat(c)),
        output("o",
               cl::desc("Output bundle directory (with --emit PHASE: the "
                        "output file, '-' for stdout)"),
               cl::value_desc("OUT_DIR"), cl::cat(c)),
        inference("inference", cl::desc("Forward only, one rank"), cl::cat(c)),
        emit("emit",
             cl::desc("Stop after a phase: nn, train, partitioned, "
                      "scheduled, linalg, llvm-dialect, llvm or bundle "
                      "(default)"),
             cl::value_desc("PHASE"), cl::init("bundle"), cl::cat(c)),
        target("target",
               cl::desc("Code generator: cpu (default) or cuda "
                        "(docs/GPU.md)"),
               cl::init("cpu"), cl::cat(c)),
        gpuArch("gpu-arch",
                cl::desc("--target cuda: GPU architecture (default sm_90)"),
                cl::value_desc("sm_NN"), cl::cat(c)),
        dtype("dtype",
              cl::desc("GEMM precision, f32 (default) or bf16 (bf16 GEMM "
                       "operands and products, f32 accumulation; weights, "
                       "optimizer state, other ops and the bundle's buffers "
                       "stay f32; CPU: AMX or AVX512_BF16 where the CPU has "
                       "them, an f32-FMA emulation elsewhere)"),
              cl::value_desc("TYPE"), cl::cat(c)),
        loss("loss",
             cl::desc("Training loss: cross-entropy, mse, or none (the "
                      "model's first output is its scalar loss)"),
             cl::value_desc("KIND"), cl::cat(c)),
        labelsName("labels-name",
                   cl::desc("Name of the labels input (default: labels)"),
                   cl::init("labels"), cl::cat(c)),
        microbatches("microbatches",
                     cl::desc("Micro-batches per optimizer step (default: "
                              "the number of stages, at least 1)"),
                     cl::init(0), cl::cat(c)),
        batchSize("batch-size",
                  cl::desc("Samples per optimizer step = microbatches x "
                           "micro-batch (default: microbatches x the "
                           "model's batch dimension)"),
                  cl::init(0), cl::cat(c)),
        optimizer("optimizer",
                  cl::desc("sgd (default), momentum, adam or adamw"),
                  cl::init("sgd"), cl::cat(c)),
        lr("lr",
           cl::desc("Learning rate (default 0.01 for sgd/momentum, 0.001 "
                    "for adam/adamw)"),
           cl::cat(c)),
        momentum("momentum",
                 cl::desc("Momentum (default 0.9 with --optimizer momentum; "
                          "with sgd, a positive value means SGD with "
                          "momentum)"),
                 cl::cat(c)),
        nesterov("nesterov", cl::desc("Nesterov momentum"), cl::cat(c)),
        weightDecay("weight-decay", cl::desc("Weight decay (default 0)"),
                    cl::init(0.0), cl::cat(c)),
        beta1("beta1", cl::desc("Adam beta1 (0.9)"), cl::init(0.9), cl::cat(c)),
        beta2("beta2", cl::desc("Adam beta2 (0.999)"), cl::init(0.999),
              cl::cat(c)),
        eps("eps", cl::desc("Adam epsilon (1e-8)"), cl::init(1e-8), cl::cat(c)),
        lrSchedule("lr-schedule",
                   cl::desc("Learning rate after the warm-up: constant "
                            "(default), linear or cosine (to 0 at "
                            "--total-steps)"),
                   cl::value_desc("constant|linear|cosine"), cl::cat(c)),
        warmupSteps("warmup-steps",
                    cl::desc("Optimizer steps of linear learning-rate "
                             "warm-up from 0 (default 0)"),
                    cl::cat(c)),
        totalSteps("total-steps",
                   cl::desc("The optimizer step at which --lr-schedule "
                            "linear/cosine reaches 0"),
                   cl::cat(c)),
        clipGradNorm("clip-grad-norm",
                     cl::desc("Scale the gradients so that their 2-norm "
                              "(all weights, every stage) is at most this "
                              "(torch.nn.utils.clip_grad_norm_; default: "
                              "no clipping)"),
                     cl::value_desc("MAX"), cl::cat(c)),
        evaluate("evaluate",
                 cl::desc("Also compile an evaluation function: the loss in "
                          "eval mode (Dropout off, BatchNorm running "
                          "statistics) for pipedream-run --eval-data "
                          "(single-rank training bundles)"),
                 cl::cat(c)),
        freeze("freeze",
               cl::desc("Keep these weights fixed in training (names or "
                        "regular expressions; repeatable)"),
               cl::value_desc("NAME|REGEX,..."), cl::CommaSeparated,
               cl::cat(c)),
        train("train",
              cl::desc("Train these weights even where the trainable rule "
                       "freezes them (names or regular expressions; "
                       "repeatable)"),
              cl::value_desc("NAME|REGEX,..."), cl::CommaSeparated, cl::cat(c)),
        stages("stages", cl::desc("Pipeline stages K (default 1)"), cl::init(1),
               cl::cat(c)),
        virtualStages("virtual-stages",
                      cl::desc("Virtual chunks per stage V (default 1)"),
                      cl::init(1), cl::cat(c)),
        replicas("replicas",
                 cl::desc("Data-parallel replicas of every stage R (K*R "
                          "ranks; each runs M/R micro-batches; default 1)"),
                 cl::init(1), cl::cat(c)),
        ranks("ranks",
              cl::desc("Without --stages: plan stages K and replicas R "
                       "over this many ranks (PipeDream's planner with "
                       "the replicas' all-reduce cost)"),
              cl::cat(c)),
        shardOptimizer("shard-optimizer",
                       cl::desc("ZeRO-1: each replica keeps and updates 1/R "
                                "of its stage's optimizer state"),
                       cl::cat(c)),
        partition("partition",
                  cl::desc("Stage partitioning: auto (PipeDream's dynamic "
                           "program, default) or uniform (equal op "
                           "counts)"),
                  cl::init("auto"), cl::cat(c)),
        splitAfter("split-after",
                   cl::desc("Manual partition: end a stage after these ONNX "
                            "nodes"),
                   cl::value_desc("NODE,..."), cl::CommaSeparated, cl::cat(c)),
        costModel("cost-model",
                  cl::desc("analytical (default) or a profile PROFILE.json"),
                  cl::init("analytical"), cl::cat(c)),
        device("device",
               cl::desc("Device of the analytical cost model: cpu (default) "
                        "or h200"),
               cl::init("cpu"), cl::cat(c)),
        memoryLimit("memory-limit",
                    cl::desc("Memory per rank for the partitioner (bytes; "
                             "K/M/G or KiB/MiB/GiB suffixes)"),
                    cl::cat(c)),
        recompute("recompute",
                  cl::desc("Activation recomputation: none (default), full "
                           "(every stage stashes its inputs and runs its "
                           "forward again before its backward) or auto (the "
                           "stages that exceed --memory-limit without it)"),
                  cl::init("none"), cl::cat(c)),
        report("report", cl::desc("Print the partition report"), cl::cat(c)),
        reportJSON("report-json", cl::desc("Write the report as JSON"),
                   cl::value_desc("FILE"), cl::cat(c)),
        schedule("schedule",
                 cl::desc("Pipeline schedule: gpipe, 1f1b (default), "
                          "interleaved-1f1b, pipedream, 2bw, zb-h1, "
                          "interleaved-zb, zb-v, dualpipe-v, or auto (the "
                          "kind, V and, with --batch-size and no "
                          "--microbatches, M of the shortest simulated "
                          "step under --memory-limit)"),
                 cl::init("1f1b"), cl::cat(c)),
        trace("trace",
              cl::desc("With --emit scheduled or a pipeline bundle: write "
                       "the simulated schedule as a Chrome trace "
                       "(Perfetto)"),
              cl::value_desc("FILE.json"), cl::cat(c)),
        timeline("timeline",
                 cl::desc("With --emit scheduled or a pipeline bundle: "
                          "write the simulated schedule as an SVG picture"),
                 cl::value_desc("FILE.svg"), cl::cat(c)),
        scheduleCsv("schedule-csv",
                    cl::desc("With --emit scheduled or a pipeline bundle: "
                             "run this torch.distributed.pipelining "
                             "schedule CSV (kind and M inferred unless "
                             "given)"),
                    cl::value_desc("FILE.csv"), cl::cat(c)),
        exportScheduleCsv("export-schedule-csv",
                          cl::desc("With --emit scheduled or a pipeline "
                                   "bundle: write the schedule as torch's "
                                   "CSV"),
                          cl::value_desc("FILE.csv"), cl::cat(c)),
        timePhases("time-phases",
                   cl::desc("Print the wall and CPU time of each compile "
                            "phase (import, autodiff, partition, schedule, "
                            "lowering, LLVM opt, codegen, link) with MLIR's "
                            "pass timing, to stderr"),
                   cl::cat(c)),
        copyWeights("copy-weights",
                    cl::desc("Write every rank's weights into its own file "
                             "of the bundle, also where they are the "
                             "model's external data (default: hard-link "
                             "that file, docs/Bundle.md)"),
                    cl::cat(c)) {}

  cl::opt<std::string> input, output;
  cl::opt<bool> inference;
  cl::opt<std::string> emit, target, gpuArch, dtype;
  // Training.
  cl::opt<std::string> loss, labelsName;
  cl::opt<int64_t> microbatches, batchSize;
  cl::opt<std::string> optimizer;
  cl::opt<double> lr, momentum;
  cl::opt<bool> nesterov;
  cl::opt<double> weightDecay, beta1, beta2, eps;
  cl::opt<std::string> lrSchedule;
  cl::opt<int64_t> warmupSteps, totalSteps;
  cl::opt<double> clipGradNorm;
  cl::opt<bool> evaluate;
  cl::list<std::string> freeze, train;
  // Pipelines.
  cl::opt<int64_t> stages, virtualStages, replicas, ranks;
  cl::opt<bool> shardOptimizer;
  cl::opt<std::string> partition;
  cl::list<std::string> splitAfter;
  cl::opt<std::string> costModel, device, memoryLimit, recompute;
  cl::opt<bool> report;
  cl::opt<std::string> reportJSON, schedule, trace, timeline;
  cl::opt<std::string> scheduleCsv, exportScheduleCsv;
  cl::opt<bool> timePhases;
  cl::opt<bool> copyWeights;
};

CompileFlags::CompileFlags(cl::OptionCategory &category)
    : codegen(category), importFlags(category),
      flags(std::make_unique<Flags>(category)) {}
CompileFlags::~CompileFlags() = default;

CompileOptions CompileFlags::read() const {
  const Flags &f = *flags;
  CompileOptions o;
  o.input = f.input;
  o.output = f.output;
  o.emit = f.emit;
  o.inference = f.inference;
  o.inputShapes = importFlags.inputShapes();
  o.runONNXChecker = importFlags.runChecker();
  o.target = f.target;
  codegen.read(o);
  o.gpuArch = given(f.gpuArch);
  o.dtype = given(f.dtype);
  o.loss = given(f.loss);
  o.labelsName = given(f.labelsName);
  o.microbatches = given(f.microbatches);
  o.batchSize = given(f.batchSize);
  o.optimizer = given(f.optimizer);
  o.lr = given(f.lr);
  o.momentum = given(f.momentum);
  o.nesterov = given(f.nesterov);
  o.weightDecay = given(f.weightDecay);
  o.beta1 = given(f.beta1);
  o.beta2 = given(f.beta2);
  o.eps = given(f.eps);
  o.lrSchedule = given(f.lrSchedule);
  o.warmupSteps = given(f.warmupSteps);
  o.totalSteps = given(f.totalSteps);
  o.clipGradNorm = given(f.clipGradNorm);
  o.evaluate = given(f.evaluate);
  o.freeze.assign(f.freeze.begin(), f.freeze.end());
  o.train.assign(f.train.begin(), f.train.end());
  o.stages = given(f.stages);
  o.virtualStages = f.virtualStages;
  o.replicas = given(f.replicas);
  o.shardOptimizer = f.shardOptimizer;
  o.ranks = given(f.ranks);
  o.partition = f.partition;
  o.splitAfter.assign(f.splitAfter.begin(), f.splitAfter.end());
  o.costModel = f.costModel;
  o.device = f.device;
  o.memoryLimit = f.memoryLimit;
  o.recompute = f.recompute;
  o.schedule = given(f.schedule);
  o.report = f.report;
  o.reportJSON = f.reportJSON;
  o.trace = f.trace;
  o.timeline = f.timeline;
  o.scheduleCsv = f.scheduleCsv;
  o.exportScheduleCsv = f.exportScheduleCsv;
  o.timePhases = f.timePhases;
  o.copyWeights = f.copyWeights;
  return o;
}

//===----------------------------------------------------------------------===//
// In-process parsing (the Python module)
//===----------------------------------------------------------------------===//

namespace {
/// The flags of an in-process parse: CompileFlags in a category of their
/// own, made on first use.
struct InProcessFlags {
  InProcessFlags() : category("pipedream compile options"), flags(category) {}
  cl::OptionCategory category;
  CompileFlags flags;
};
} // namespace

static std::mutex inProcessMutex;

static InProcessFlags &inProcessFlags() {
  static InProcessFlags instance;
  return instance;
}

bool pipedream::isCompileFlag(llvm::StringRef name) {
  std::lock_guard<std::mutex> lock(inProcessMutex);
  InProcessFlags &in = inProcessFlags();
  auto &options = cl::getRegisteredOptions();
  auto it = options.find(name);
  return it != options.end() &&
         llvm::is_contained(it->second->Categories, &in.category);
}

mlir::FailureOr<CompileOptions>
pipedream::parseCompileArguments(mlir::MLIRContext *context,
                                 llvm::ArrayRef<std::string> arguments) {
  std::lock_guard<std::mutex> lock(inProcessMutex);
  InProcessFlags &in = inProcessFlags();
  static constexpr const char *kProgram = "pipedream";
  std::vector<const char *> argv{kProgram};
  for (const std::string &argument : arguments) {
    llvm::StringRef flag = llvm::StringRef(argument).ltrim('-');
    // --help and --version print and exit the process: never in-process.
    if (llvm::StringRef(argument).starts_with("-") &&
        (flag.starts_with("help") || flag.starts_with("version") ||
         flag.starts_with("print-options") ||
         flag.starts_with("print-all-options"))) {
      return pipedream::emitError(context)
             << "--" << flag.split('=').first << ": not available in-process";
    }
    argv.push_back(argument.c_str());
  }
  // cl reports unknown flags into `errors`, bad values on stderr only.
  auto parse = [](llvm::ArrayRef<const char *> args, std::string &message) {
    cl::ResetAllOptionOccurrences();
    std::string errors;
    llvm::raw_string_ostream errorStream(errors);
    if (cl::ParseCommandLineOptions(int(args.size()), args.data(), "",
                                    &errorStream))
      return true;
    llvm::StringRef line = llvm::StringRef(errors).split('\n').first;
    line.consume_front(kProgram);
    line.consume_front(": ");
    message = line.rtrim().str();
    return false;
  };
  std::string error;
  if (!parse(argv, error)) {
    // Name the argument whose value cl refused.
    for (size_t i = 1; error.empty() && i < argv.size(); ++i)
      if (!parse({kProgram, argv[i]}, error) && error.empty())
        error = std::string(argv[i]) + ": invalid value";
    if (error.empty())
      error = "invalid compile options";
    cl::ResetAllOptionOccurrences();
    return pipedream::emitError(context) << error;
  }
  return in.flags.read();
}
