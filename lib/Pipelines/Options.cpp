//===- Options.cpp - resolving and checking the compile options -----------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Every default of a compilation and every check of a value, once, for the
// single-rank and the pipelined flow (include/pipedream/Pipelines/Options.h).
// The messages are the one-line errors of docs/CLI.md.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Pipelines/Options.h"

#include "pipedream/Dialect/Pipe/Transforms/ScheduleCSV.h"
#include "pipedream/Support/Diagnostics.h"
#include "pipedream/Support/EnumNames.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

#include <cmath>

using namespace mlir;
using namespace pipedream;
namespace sched = pipedream::pipe::schedule;

/// The names of --emit's phases, for parsing and printing alike.
static constexpr EnumName<CompilePhase> kCompilePhaseNames[] = {
    {"nn", CompilePhase::NN},
    {"train", CompilePhase::Train},
    {"partitioned", CompilePhase::Partitioned},
    {"scheduled", CompilePhase::Scheduled},
    {"linalg", CompilePhase::Linalg},
    {"llvm-dialect", CompilePhase::LLVMDialect},
    {"llvm", CompilePhase::LLVM},
    {"bundle", CompilePhase::Bundle}};

std::optional<CompilePhase> pipedream::parseCompilePhase(StringRef name) {
  return parseEnumName(kCompilePhaseNames, name);
}

StringRef pipedream::stringifyCompilePhase(CompilePhase phase) {
  return stringifyEnumName(kCompilePhaseNames, phase).value_or("bundle");
}

std::optional<CompileTarget> pipedream::parseCompileTarget(StringRef name) {
  return llvm::StringSwitch<std::optional<CompileTarget>>(name)
      .Case("cpu", CompileTarget::CPU)
      .Case("cuda", CompileTarget::CUDA)
      .Default(std::nullopt);
}

StringRef pipedream::stringifyPartitionMethod(PartitionMethod method) {
  return method == PartitionMethod::Uniform ? "uniform" : "auto";
}

double pipedream::defaultLearningRate(nn::OptimizerKind kind) {
  return kind == nn::OptimizerKind::Adam || kind == nn::OptimizerKind::AdamW
             ? 0.001
             : 0.01;
}

int64_t TrainingPhaseOptions::optimizerStates() const {
  if (!enabled)
    return 0;
  switch (nn.optimizer.kind) {
  case nn::OptimizerKind::SGD:
    return 0;
  case nn::OptimizerKind::Momentum:
    return 1;
  case nn::OptimizerKind::Adam:
  case nn::OptimizerKind::AdamW:
    return 2;
  }
  return 0;
}

/// Reports `message` (it names the flag: no location) and fails.
static LogicalResult fail(MLIRContext *context, const llvm::Twine &message) {
  return pipedream::emitError(context) << message;
}

/// --dtype with --target cpu: bf16 GEMMs on pipedream's kernel
/// (pd_cpu_gemm_bf16; AVX512_BF16 where the running CPU has it, a bitwise
/// equal f32-FMA emulation elsewhere), with --gemm auto or kernel only.
static LogicalResult resolveCPUDType(const CompileOptions &o,
                                     cpu::CPUCodegenOptions &cpu,
                                     MLIRContext *context) {
  if (!o.dtype || o.target != "cpu")
    return success();
  if (*o.dtype == "f32")
    return success();
  if (*o.dtype != "bf16")
    return fail(context, "--dtype " + *o.dtype + ": expected f32 or bf16");
  if (cpu.gemm != cpu::GemmLowering::Auto &&
      cpu.gemm != cpu::GemmLowering::Kernel)
    return fail(context, "--dtype bf16 --gemm " + o.gemm +
                             ": bf16 GEMMs run on pipedream's kernel only "
                             "(--gemm auto or kernel)");
  cpu.bf16Gemm = true;
  return success();
}

FailureOr<CodegenPhaseOptions>
pipedream::resolveCodegenOptions(MLIRContext *context,
                                 const CompileOptions &o) {
  CodegenPhaseOptions codegen;
  if (o.optLevel > 3)
    return fail(context, "-O" + llvm::Twine(o.optLevel) +
                             ": the optimization level is 0 to 3");
  codegen.cpu.optLevel = o.optLevel;
  codegen.cpu.cpu = o.targetCPU;
  std::optional<cpu::GemmLowering> gemm = cpu::parseGemmLowering(o.gemm);
  if (!gemm)
    return fail(context,
                "--gemm " + o.gemm +
                    ": expected auto, kernel, vectorize, blas or loops");
  codegen.cpu.gemm = *gemm;
  if (codegen.cpu.gemm == cpu::GemmLowering::BLAS && !cpu::isBLASAvailable())
    return fail(context, "--gemm blas: this pipedream was built without "
                         "OpenBLAS (install libopenblas-dev and rebuild)");
  if (failed(resolveCPUDType(o, codegen.cpu, context)))
    return failure();
  codegen.cpu.runTimeChecks = o.runTimeChecks;
  codegen.cpu.codegenThreads = o.codegenThreads;
  codegen.cpu.loops = o.loops;
  codegen.cpu.cacheDir = o.cacheDir;
  codegen.cpu.useCache = !o.noCache;
  // A bad --target-cpu fails here, before the (longer) import.
  if (auto machine = cpu::createTargetMachine(codegen.cpu); !machine)
    return fail(context, llvm::toString(machine.takeError()));
  return codegen;
}

/// --target and the CUDA code generator's options: a bad --gpu-arch,
/// --dtype or a missing toolkit fails before the import; --gpu-arch and
/// --dtype are refused with another target.
static LogicalResult resolveTarget(const CompileOptions &o,
                                   TargetPhaseOptions &target,
                                   MLIRContext *context) {
  std::optional<CompileTarget> kind = parseCompileTarget(o.target);
  if (!kind)
    return fail(context, "--target " + o.target + ": expected cpu or cuda");
  target.target = *kind;
  if (*kind != CompileTarget::CUDA) {
    if (o.gpuArch)
      return fail(context, "--gpu-arch applies to --target cuda");
    // --dtype on CPU: resolveCodegenOptions (the GEMM lowering).
    return success();
  }
  cuda::CUDACodegenOptions &c = target.cuda;
  c.gpuArch = o.gpuArch.value_or("sm_90");
  c.optLevel = o.optLevel;
  c.runTimeChecks = o.runTimeChecks;
  if (llvm::Error error = cuda::verifyGPUArch(c.gpuArch))
    return fail(context, llvm::toString(std::move(error)));
  std::string dtype = o.dtype.value_or("f32");
  std::optional<cuda::DType> parsed = cuda::parseDType(dtype);
  if (!parsed)
    return fail(context, "--dtype " + dtype + ": expected f32 or bf16");
  c.dtype = *parsed;
  if (llvm::Error error = cuda::verifyToolkit(c))
    return fail(context, llvm::toString(std::move(error)));
  return success();
}

/// --recompute none|full|auto (docs/Pipe.md, "Activation recomputation").
/// Every synchronous and asynchronous kind recomputes, generated, read from
/// --schedule-csv or chosen by --schedule auto (whose candidates are each
/// partitioned with it). Schedules that split the backward (zb-h1, zb-v,
/// ...) recompute too: B reruns the forward, and passes what W reads on to
/// it as carries (pipe-recompute; docs/Pipe.md "Activation
/// recomputation").
static LogicalResult resolveRecompute(const CompileOptions &o,
                                      PartitionPhaseOptions &part,
                                      MLIRContext *context) {
  namespace partition = pipedream::pipe::partition;
  if (o.recompute == "none") {
    part.recompute = partition::Recompute::None;
    return success();
  }
  if (o.recompute == "full")
    part.recompute = partition::Recompute::Full;
  else if (o.recompute == "auto")
    part.recompute = partition::Recompute::Auto;
  else
    return fail(context,
                "--recompute " + o.recompute + ": expected none, full or auto");
  if (part.recompute == partition::Recompute::Auto && o.memoryLimit.empty())
    return fail(context, "--recompute auto recomputes the stages that exceed "
                         "--memory-limit: pass --memory-limit BYTES");
  return success();
}

/// The loss, micro-batches and optimizer (`needsLoss`: the compile builds a
/// training program, so --loss is required).
static LogicalResult resolveTraining(const CompileOptions &o, bool pipelined,
                                     bool needsLoss, int64_t microbatches,
                                     TrainingPhaseOptions &t,
                                     MLIRContext *context) {
  nn::TrainingOptions &nn = t.nn;
  t.freeze = o.freeze;
  t.train = o.train;
  if (o.loss || needsLoss) {
    if (!o.loss) {
      if (pipelined)
        return fail(context, "a pipeline trains: pass --loss cross-entropy|mse "
                             "(pipelines of forward-only --inference bundles "
                             "are not supported)");
      return fail(context, "training needs a loss: pass --loss "
                           "cross-entropy|mse|none (or --inference for a "
                           "forward-only bundle)");
    }
    std::optional<nn::LossKind> loss = nn::parseLossKind(*o.loss);
    if (!loss)
      return fail(context, "--loss " + *o.loss +
                               ": expected cross-entropy, mse or none (the "
                               "model's first output is the loss)");
    if (*loss == nn::LossKind::None && o.labelsName)
      return fail(context, "--labels-name does not apply to --loss none (the "
                           "labels, if any, are ordinary graph inputs)");
    nn.loss = *loss;
  }
  nn.labelsName = o.labelsName.value_or("labels");
  nn.microbatches = microbatches;
  nn.evaluate = o.evaluate.value_or(false);
  std::string optimizer = o.optimizer.value_or("sgd");
  std::optional<nn::OptimizerKind> kind = nn::parseOptimizerKind(optimizer);
  if (!kind)
    return fail(context, "--optimizer " + optimizer +
                             ": expected sgd, momentum, adam or adamw");
  nn::OptimizerOptions &opt = nn.optimizer;
  opt.kind = *kind;
  bool adam =
      *kind == nn::OptimizerKind::Adam || *kind == nn::OptimizerKind::AdamW;
  opt.lr = o.lr.value_or(defaultLearningRate(*kind));
  if (o.momentum) {
    if (adam)
      return fail(context, "--momentum applies to sgd and momentum; adam uses "
                           "--beta1/--beta2");
    opt.momentum = *o.momentum;
    // NOTE: `--optimizer sgd --momentum 0.9` is SGD with momentum (as
    // torch.optim.SGD(momentum=0.9)), on one rank and in a pipeline alike.
    if (*kind == nn::OptimizerKind::SGD && opt.momentum > 0)
      opt.kind = nn::OptimizerKind::Momentum;
  }
  opt.nesterov = o.nesterov.value_or(false);
  if (opt.nesterov && opt.kind != nn::OptimizerKind::Momentum)
    return fail(context, "--nesterov needs momentum (--optimizer momentum)");
  opt.weightDecay = o.weightDecay.value_or(0.0);
  opt.beta1 = o.beta1.value_or(0.9);
  opt.beta2 = o.beta2.value_or(0.999);
  opt.eps = o.eps.value_or(1e-8);
  std::string schedule = o.lrSchedule.value_or("constant");
  std::optional<nn::LRScheduleKind> scheduleKind =
      nn::parseLRScheduleKind(schedule);
  if (!scheduleKind)
    return fail(context, "--lr-schedule " + schedule +
                             ": expected constant, linear or cosine");
  opt.lrSchedule = *scheduleKind;
  opt.warmupSteps = o.warmupSteps.value_or(0);
  opt.totalSteps = o.totalSteps.value_or(0);
  if (opt.warmupSteps < 0 || opt.totalSteps < 0)
    return fail(context, "--warmup-steps and --total-steps must be at least 0");
  if (opt.lrSchedule == nn::LRScheduleKind::Constant && o.totalSteps)
    return fail(context, "--total-steps applies to --lr-schedule linear or "
                         "cosine (the rate decays to 0 at that step)");
  if (opt.lrSchedule != nn::LRScheduleKind::Constant &&
      opt.totalSteps <= opt.warmupSteps)
    return fail(context, "--lr-schedule " + schedule +
                             " needs --total-steps greater than "
                             "--warmup-steps (the step the rate reaches 0)");
  if (o.clipGradNorm) {
    opt.clipGradNorm = *o.clipGradNorm;
    if (!(opt.clipGradNorm > 0) || std::isinf(opt.clipGradNorm)) {
      std::string text;
      llvm::raw_string_ostream(text) << llvm::format("%g", opt.clipGradNorm);
      return fail(context, "--clip-grad-norm " + text +
                               ": the largest gradient norm must be a "
                               "positive number");
    }
  }
  if (!(opt.lr > 0) || opt.momentum < 0 || opt.weightDecay < 0 ||
      !(opt.beta1 >= 0 && opt.beta1 < 1) ||
      !(opt.beta2 >= 0 && opt.beta2 < 1) || !(opt.eps > 0))
    return fail(context, "optimizer hyper-parameters out of range (lr > 0, "
                         "momentum >= 0, weight decay >= 0, 0 <= beta < 1, "
                         "eps > 0)");
  return success();
}

FailureOr<PhaseOptions>
pipedream::resolvePhaseOptions(MLIRContext *context, const CompileOptions &o) {
  PhaseOptions p;
  std::optional<CompilePhase> emit = parseCompilePhase(o.emit);
  if (!emit) {
    return fail(context,
                "--emit " + o.emit +
                    ": expected nn, train, partitioned, scheduled, linalg, "
                    "llvm-dialect, llvm or bundle");
  }
  p.emit = *emit;
  p.output = o.output;

  // Which flow: a pipelined compile partitions (docs/CLI.md, "Pipelines").
  bool replicaFlags =
      o.replicas.value_or(1) > 1 || o.shardOptimizer || o.ranks.has_value();
  bool pipelineFlags = o.stages.value_or(1) > 1 || o.virtualStages > 1 ||
                       !o.splitAfter.empty() || replicaFlags;
  bool reportFlags = o.report || !o.reportJSON.empty();
  p.pipelined = p.emit == CompilePhase::Partitioned ||
                p.emit == CompilePhase::Scheduled ||
                (p.emit == CompilePhase::Bundle && !o.inference &&
                 (pipelineFlags || o.schedule.has_value() ||
                  !o.scheduleCsv.empty()));
  if (!p.pipelined) {
    if (pipelineFlags || reportFlags || o.schedule || !o.trace.empty() ||
        !o.timeline.empty()) {
      return fail(context,
                  llvm::Twine(replicaFlags    ? "--replicas/--shard-optimizer/"
                                                "--ranks"
                              : pipelineFlags ? "--stages/--virtual-stages/"
                                                "--split-after"
                                              : "--report/--report-json/"
                                                "--schedule/--trace") +
                      " apply to pipelines: --emit partitioned, --emit "
                      "scheduled or a training bundle (not --emit " +
                      o.emit + (o.inference ? " --inference)" : ")"));
    }
  }
  bool scheduled = p.scheduled();
  if (p.pipelined && !scheduled && (!o.trace.empty() || !o.timeline.empty())) {
    return fail(context, "--trace/--timeline need --emit scheduled");
  }
  if (!scheduled && (!o.scheduleCsv.empty() || !o.exportScheduleCsv.empty()))
    return fail(context, "--schedule-csv/--export-schedule-csv need --emit "
                         "scheduled (or a pipeline bundle)");
  if (o.input.empty()) {
    return fail(context,
                "no input model (pipedream-compile MODEL.onnx -o OUT_DIR "
                "--inference)");
  }

  // Training flags.
  p.training.enabled = !o.inference;
  if (o.inference) {
    const std::pair<bool, const char *> trainingFlags[] = {
        {o.loss.has_value(), "loss"},
        {o.labelsName.has_value(), "labels-name"},
        {o.microbatches.has_value(), "microbatches"},
        {o.batchSize.has_value(), "batch-size"},
        {o.optimizer.has_value(), "optimizer"},
        {o.lr.has_value(), "lr"},
        {o.momentum.has_value(), "momentum"},
        {o.nesterov.has_value(), "nesterov"},
        {o.weightDecay.has_value(), "weight-decay"},
        {o.beta1.has_value(), "beta1"},
        {o.beta2.has_value(), "beta2"},
        {o.eps.has_value(), "eps"},
        {o.lrSchedule.has_value(), "lr-schedule"},
        {o.warmupSteps.has_value(), "warmup-steps"},
        {o.totalSteps.has_value(), "total-steps"},
        {o.clipGradNorm.has_value(), "clip-grad-norm"},
        {o.evaluate.has_value(), "evaluate"},
        {!o.freeze.empty(), "freeze"},
        {!o.train.empty(), "train"}};
    for (auto [given, name] : trainingFlags)
      if (given) {
        return fail(context, llvm::Twine("--") + name +
                                 " is a training flag; it does not apply to "
                                 "--inference");
      }
    if (scheduled) {
      return fail(context,
                  "a pipeline trains: pass --loss cross-entropy|mse "
                  "(pipelines of forward-only --inference bundles are not "
                  "supported)");
    }
    if (p.emit == CompilePhase::Train) {
      return fail(context, "--emit train: there is no training program with "
                           "--inference");
    }
  }

  // Stages and micro-batches: M defaults to K (1 on one rank).
  PartitionPhaseOptions &part = p.partition;
  part.virtualStages = o.virtualStages;
  if (part.virtualStages < 1) {
    return fail(context, "--virtual-stages " + llvm::Twine(part.virtualStages) +
                             ": at least 1");
  }
  part.stages = o.stages.value_or(1);
  if (!o.splitAfter.empty() && !o.stages)
    part.stages = int64_t(o.splitAfter.size() + 1) /
                  std::max<int64_t>(1, o.virtualStages);
  // The schedule kind; with --schedule-csv the file's kind and M (unless
  // --schedule / --microbatches are given, then they must match it).
  std::string kindName = o.schedule.value_or("1f1b");
  std::optional<sched::Kind> kind = sched::parseKind(kindName);
  // --schedule auto: the driver picks the kind (ScheduleChoice.h); 1f1b
  // stands in until then.
  bool autoSchedule = p.pipelined && kindName == "auto";
  if (autoSchedule) {
    if (!o.scheduleCsv.empty())
      return fail(context, "--schedule auto and --schedule-csv: the CSV fixes "
                           "the schedule; give one of them");
    kind = sched::Kind::OneFOneB;
  }
  if (p.pipelined && !kind) {
    return fail(context, "--schedule " + kindName + ": expected " +
                             sched::kindNameList());
  }
  if (!o.scheduleCsv.empty()) {
    // With --replicas R the CSV is each replica's schedule: M/R of the
    // step's micro-batches (M not a multiple of R is refused below).
    int64_t csvMicrobatches = o.microbatches.value_or(0);
    if (int64_t r = o.replicas.value_or(1); r > 1)
      csvMicrobatches = csvMicrobatches % r == 0 ? csvMicrobatches / r : 0;
    sched::Schedule fromCsv;
    std::string note;
    if (std::string err = sched::readScheduleCSVFile(
            o.scheduleCsv, o.schedule ? kind : std::nullopt, part.stages,
            csvMicrobatches, part.virtualStages, fromCsv, &note);
        !err.empty())
      return fail(context,
                  "--schedule-csv " + err +
                      (o.replicas.value_or(1) > 1 && o.microbatches
                           ? " (with --replicas the CSV is one replica's "
                             "schedule of --microbatches / R)"
                           : ""));
    if (!note.empty())
      llvm::errs() << "note: --schedule-csv " << o.scheduleCsv << ": " << note
                   << "\n";
    kind = fromCsv.config.kind;
    p.schedule.scheduleCsv = o.scheduleCsv;
    p.schedule.fromCsv = std::move(fromCsv);
  }
  // --ranks N: the planner picks K and R (docs/CLI.md).
  if (o.ranks) {
    if (*o.ranks < 1)
      return fail(context, "--ranks " + llvm::Twine(*o.ranks) + ": at least 1");
    if (o.stages || o.replicas)
      return fail(context, "--ranks " + llvm::Twine(*o.ranks) +
                               " lets the planner choose the stages and "
                               "replicas: drop --stages/--replicas");
    if (o.virtualStages != 1 || !o.splitAfter.empty() ||
        o.partition != "auto" || !o.scheduleCsv.empty())
      return fail(context, "--ranks needs --partition auto, one virtual "
                           "stage, no --split-after and no --schedule-csv");
    if (kind && (*kind == sched::Kind::PipeDream ||
                 *kind == sched::Kind::TwoBW))
      return fail(context, llvm::Twine("--ranks plans replicated stages, "
                                       "which need a synchronous schedule, "
                                       "not --schedule ") +
                               sched::kindName(*kind));
    part.ranks = *o.ranks;
  }
  // Replicated stages (docs/Bundle.md "Replicated stages").
  const int64_t replicas = o.replicas.value_or(1);
  if (replicas < 1)
    return fail(context,
                "--replicas " + llvm::Twine(replicas) + ": at least 1");
  if (o.shardOptimizer && replicas < 2 && !o.ranks)
    return fail(context, "--shard-optimizer shards the optimizer state over "
                         "the replicas of a stage: pass --replicas R (R >= 2)");
  if (replicas > 1 && p.pipelined) {
    if (kind && (*kind == sched::Kind::PipeDream ||
                 *kind == sched::Kind::TwoBW))
      return fail(context, "--replicas " + llvm::Twine(replicas) +
                               ": replicated stages need a synchronous "
                               "schedule, not --schedule " +
                               sched::kindName(*kind));
    // --target cuda: the runtime sums a stage's device gradients over its
    // replicas with ncclAllReduce (compiled, not yet run on a GPU).
    if (o.target != "cpu" && o.shardOptimizer)
      return fail(context, "--shard-optimizer runs on --target cpu only");
  }
  // One gradient norm per step: an asynchronous schedule updates its
  // stages at different times, each from its own micro-batches.
  if (o.clipGradNorm && p.pipelined && kind &&
      (*kind == sched::Kind::PipeDream || *kind == sched::Kind::TwoBW))
    return fail(context, llvm::Twine("--clip-grad-norm needs a synchronous "
                                     "schedule (one gradient norm over "
                                     "every stage per step), not "
                                     "--schedule ") +
                             sched::kindName(*kind));
  int64_t m = o.microbatches.value_or(
      p.schedule.fromCsv ? p.schedule.fromCsv->config.numMicrobatches * replicas
      : o.ranks          ? *o.ranks
                         : std::max<int64_t>(1, part.stages) * replicas);
  if (m < 1) {
    return fail(context, "--microbatches " + llvm::Twine(m) + ": at least 1");
  }
  if (m % replicas != 0)
    return fail(context, "--microbatches " + llvm::Twine(m) +
                             ": must be a multiple of --replicas " +
                             llvm::Twine(replicas) +
                             " (each replica runs M/R of the step's "
                             "micro-batches)");
  // Each replica's schedule.
  const int64_t perReplica = m / replicas;
  if (o.batchSize) {
    if (*o.batchSize <= 0 || *o.batchSize % m != 0) {
      return fail(context,
                  "--batch-size " + llvm::Twine(*o.batchSize) +
                      ": must be a positive multiple of --microbatches (" +
                      llvm::Twine(m) + ")");
    }
    p.import.microbatchSize = *o.batchSize / m;
  }
  if (p.training.enabled &&
      failed(resolveTraining(o, p.pipelined,
                             /*needsLoss=*/scheduled || !p.pipelined, m,
                             p.training, context)))
    return failure();

  // Partition and schedule.
  if (!p.pipelined && o.recompute != "none")
    return fail(context, "--recompute " + o.recompute +
                             " applies to pipelines: pass --stages K or "
                             "--ranks N");
  if (p.pipelined) {
    if (o.partition == "auto")
      part.method = PartitionMethod::Auto;
    else if (o.partition == "uniform")
      part.method = PartitionMethod::Uniform;
    else {
      return fail(context,
                  "--partition " + o.partition + ": expected auto or uniform");
    }
    if (o.device != "cpu" && o.device != "h200") {
      return fail(context, "--device " + o.device + ": expected cpu or h200");
    }
    part.device = o.device;
    if (o.costModel != "analytical")
      part.profile = o.costModel;
    part.splitAfter = o.splitAfter;
    part.memoryLimit = o.memoryLimit;
    if (failed(resolveRecompute(o, part, context)))
      return failure();
    p.schedule.recompute = part.recompute != pipedream::pipe::partition::Recompute::None;
    // NOTE: with --ranks the partitioner plans R itself and is given the
    // step's M; the driver then sets the schedule phase's K, R and M/R
    // (applyReplicationPlan).
    part.microbatches = o.ranks ? m : perReplica;
    part.optimizerStates = p.training.optimizerStates();
    part.schedule = *kind;
    if (autoSchedule) {
      SchedulePhaseOptions &s = p.schedule;
      s.autoSchedule = true;
      s.searchMicrobatches = !o.microbatches && o.batchSize.has_value();
      s.config = sched::Config{*kind, part.stages, m, 1};
      part.virtualStages = 1;
    } else if (scheduled) {
      SchedulePhaseOptions &s = p.schedule;
      s.config =
          sched::Config{*kind, part.stages, perReplica, part.virtualStages};
      s.replicas = replicas;
      s.shardOptimizer = o.shardOptimizer;
      if (std::string err = sched::validate(s.config); !err.empty())
        return fail(context, err);
      // Asynchronous schedules update several times per step: each update
      // applies the mean gradient of its micro-batches (pipedream: one,
      // 2bw: a window of K, as in the papers).
      s.microbatchesPerUpdate = perReplica;
      if (*kind == sched::Kind::PipeDream)
        s.microbatchesPerUpdate = 1;
      if (*kind == sched::Kind::TwoBW) {
        if (m % part.stages != 0) {
          return fail(context,
                      "--schedule 2bw coalesces gradients over windows of "
                      "K = " +
                          llvm::Twine(part.stages) +
                          " micro-batches: --microbatches must be a "
                          "multiple of it");
        }
        s.microbatchesPerUpdate = part.stages;
      }
      s.trace = o.trace;
      s.timeline = o.timeline;
      s.exportScheduleCsv = o.exportScheduleCsv;
    }
  }
  p.reportText = o.report;
  p.reportJSON = o.reportJSON;
  p.timePhases = o.timePhases;
  p.linkWeights = !o.copyWeights;

  // Import.
  p.import.input = o.input;
  p.import.isMLIR = StringRef(o.input).ends_with(".mlir");
  p.import.inputShapes = o.inputShapes;
  p.import.runONNXChecker = o.runONNXChecker;
  if (p.import.isMLIR && !o.inputShapes.empty()) {
    return fail(context,
                "--input-shape applies to ONNX models, not .mlir input");
  }

  // Target and code generation (checked in every flow, also for the IR
  // phases that stop before code generation).
  if (failed(resolveTarget(o, p.target, context)))
    return failure();
  if (p.output.empty()) {
    if (p.emit == CompilePhase::Bundle) {
      return fail(context, "no output: pass -o OUT_DIR");
    }
  } else if (p.output == "-" && p.emit == CompilePhase::Bundle) {
    return fail(context,
                "-o -: a bundle is a directory; stdout is only for --emit "
                "nn, linalg, llvm-dialect or llvm");
  }
  FailureOr<CodegenPhaseOptions> codegen = resolveCodegenOptions(context, o);
  if (failed(codegen))
    return failure();
  p.codegen = std::move(*codegen);
  return p;
}

LogicalResult pipedream::applyReplicationPlan(MLIRContext *context,
                                              PhaseOptions &p, int64_t stages,
                                              int64_t replicas) {
  const int64_t m = p.partition.microbatches;
  if (stages < 1 || replicas < 1 || m % replicas != 0)
    return fail(context, "--ranks: the planner's " + llvm::Twine(stages) +
                             " x " + llvm::Twine(replicas) +
                             " plan does not divide the " + llvm::Twine(m) +
                             " micro-batches");
  p.partition.stages = stages;
  if (!p.scheduled())
    return success();
  SchedulePhaseOptions &s = p.schedule;
  s.config = sched::Config{s.config.kind, stages, m / replicas, 1};
  if (std::string err = sched::validate(s.config); !err.empty())
    return fail(context, "--ranks: " + err);
  s.replicas = replicas;
  s.microbatchesPerUpdate = m / replicas;
  // One replica per stage: nothing to shard.
  s.shardOptimizer = s.shardOptimizer && replicas > 1;
  return success();
}

LogicalResult
pipedream::applyRoutedReplicationPlan(MLIRContext *context, PhaseOptions &p,
                                      llvm::ArrayRef<int64_t> stageReplicas) {
  const int64_t m = p.partition.microbatches;
  const int64_t k = static_cast<int64_t>(stageReplicas.size());
  std::string text;
  for (int64_t r : stageReplicas)
    text += (text.empty() ? "" : "-") + std::to_string(r);
  for (int64_t r : stageReplicas)
    if (r < 1 || m % r != 0)
      return fail(context, "--ranks: the planner's replication " + text +
                               " does not divide the " + std::to_string(m) +
                               " micro-batches");
  if (k < 1)
    return fail(context, "--ranks: the planner chose no stages");
  p.partition.stages = k;
  if (!p.scheduled())
    return success();
  SchedulePhaseOptions &s = p.schedule;
  if (!s.config.isSynchronous())
    return fail(context, "--ranks: non-uniform replication " + text +
                             " needs a synchronous schedule, not --schedule " +
                             sched::kindName(s.config.kind));
  s.config = sched::Config{s.config.kind, k, m, 1};
  if (std::string err = sched::validate(s.config); !err.empty())
    return fail(context, "--ranks: " + err);
  s.replicas = 1;
  s.microbatchesPerUpdate = m;
  s.stageReplicas.assign(stageReplicas.begin(), stageReplicas.end());
  // Sharded state: each stage over its own replicas (a stage of one keeps
  // its whole state); nothing to shard when every stage has one.
  s.shardOptimizer =
      s.shardOptimizer && llvm::any_of(stageReplicas,
                                       [](int64_t r) { return r > 1; });
  return success();
}
