//===- Pipelines.cpp - the pass pipelines of each compile phase -----------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Pipelines/Pipelines.h"

#include "pipedream/Dialect/NN/Transforms/Passes.h"
#include "pipedream/Dialect/Pipe/Transforms/Passes.h"
#include "pipedream/Support/Diagnostics.h"

#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace pipedream;
namespace pp = pipedream::pipe;
namespace sched = pipedream::pipe::schedule;

void pipedream::buildMarkTrainablePipeline(OpPassManager &pm,
                                           const TrainingPhaseOptions &t) {
  nn::MarkTrainablePassOptions options;
  options.function = t.nn.function;
  options.freeze.assign(t.freeze.begin(), t.freeze.end());
  options.train.assign(t.train.begin(), t.train.end());
  pm.addPass(nn::createMarkTrainablePass(options));
}

void pipedream::buildPartitionPipeline(OpPassManager &pm,
                                       const PartitionPhaseOptions &p) {
  pp::AnnotateCostsPassOptions costs;
  costs.device = p.device;
  costs.profile = p.profile;
  pm.addPass(pp::createAnnotateCostsPass(costs));
  pp::PartitionPassOptions options;
  options.numStages = p.stages;
  options.numChunks = p.virtualStages;
  options.method = stringifyPartitionMethod(p.method).str();
  options.splitAfter.assign(p.splitAfter.begin(), p.splitAfter.end());
  options.memoryLimit = p.memoryLimit;
  options.scheduleKind = sched::kindName(p.schedule);
  options.numMicrobatches = p.microbatches;
  options.optimizerStates = p.optimizerStates;
  options.numRanks = p.ranks;
  options.recompute = p.recompute == pp::partition::Recompute::Full ? "full"
                      : p.recompute == pp::partition::Recompute::Auto
                          ? "auto"
                          : "none";
  pm.addPass(pp::createPartitionPass(options));
}

void pipedream::buildOutlinePipeline(OpPassManager &pm) {
  pm.addPass(pp::createOutlineStagesPass());
}

void pipedream::buildSchedulePipeline(OpPassManager &pm,
                                      const TrainingPhaseOptions &training,
                                      const SchedulePhaseOptions &schedule) {
  const nn::TrainingOptions &t = training.nn;
  const nn::OptimizerOptions &opt = t.optimizer;
  const sched::Config &config = schedule.config;
  pp::BuildStageTrainingPassOptions stages;
  stages.function = t.function;
  stages.loss = nn::stringifyLossKind(t.loss).str();
  stages.labelsName = t.labelsName;
  stages.microbatches = config.numMicrobatches;
  stages.microbatchesPerUpdate = schedule.microbatchesPerUpdate;
  stages.replicas = schedule.replicas;
  stages.splitBackward = config.splitsBackward();
  stages.optimizer = nn::stringifyOptimizerKind(opt.kind).str();
  stages.lr = opt.lr;
  stages.momentum = opt.momentum;
  stages.weightDecay = opt.weightDecay;
  stages.nesterov = opt.nesterov;
  stages.beta1 = opt.beta1;
  stages.beta2 = opt.beta2;
  stages.eps = opt.eps;
  stages.lrSchedule = nn::stringifyLRScheduleKind(opt.lrSchedule).str();
  stages.warmupSteps = opt.warmupSteps;
  stages.totalSteps = opt.totalSteps;
  stages.clipGradNorm = opt.clipGradNorm;
  stages.evaluate = t.evaluate;
  stages.stageReplicas.assign(schedule.stageReplicas.begin(),
                              schedule.stageReplicas.end());
  pm.addPass(pp::createBuildStageTrainingPass(stages));
  // The stages pipe-partition listed in pipe.recompute.
  if (schedule.recompute)
    pm.addPass(pp::createRecomputeStagesPass());
  pp::UnrollSchedulePassOptions unroll;
  unroll.kind = sched::kindName(config.kind);
  unroll.numMicrobatches = config.numMicrobatches;
  unroll.numChunks = config.numChunks;
  unroll.scheduleCsv = schedule.scheduleCsv;
  pm.addPass(pp::createUnrollSchedulePass(unroll));
  pp::ProjectRanksPassOptions project;
  project.keepGlobal = true;
  pm.addPass(pp::createProjectRanksPass(project));
  pm.addPass(pp::createVerifySchedulePass());
  // NOTE: after the verifier: a sharded update is one U per replica.
  if (schedule.shardOptimizer) {
    pp::ShardOptimizerPassOptions shard;
    shard.shards = schedule.replicas;
    // Non-uniform replication: each stage over its own replicas.
    shard.stageShards.assign(schedule.stageReplicas.begin(),
                             schedule.stageReplicas.end());
    pm.addPass(pp::createShardOptimizerPass(shard));
  }
}

void pipedream::buildTrainingPipeline(OpPassManager &pm,
                                      const PhaseOptions &options) {
  if (options.training.enabled)
    buildMarkTrainablePipeline(pm, options.training);
  buildPartitionPipeline(pm, options.partition);
  buildOutlinePipeline(pm);
  if (options.scheduled())
    buildSchedulePipeline(pm, options.training, options.schedule);
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

namespace {
/// The options of the registered pipelines: pipedream-compile's flags of
/// the same names, resolved by resolvePhaseOptions (an option left out is
/// "not given", with the same default as on the command line).
struct PhasePipelineOptions : public PassPipelineOptions<PhasePipelineOptions> {
  Option<int64_t> stages{*this, "stages",
                         llvm::cl::desc("pipeline stages K (default 1)")};
  Option<int64_t> replicas{
      *this, "replicas",
      llvm::cl::desc("data-parallel replicas of every stage R (default 1)")};
  Option<int64_t> ranks{
      *this, "ranks",
      llvm::cl::desc("plan stages and replicas over this many ranks")};
  Option<bool> shardOptimizer{
      *this, "shard-optimizer",
      llvm::cl::desc("ZeRO-1 over the replicas of each stage"),
      llvm::cl::init(false)};
  Option<int64_t> virtualStages{
      *this, "virtual-stages",
      llvm::cl::desc("virtual chunks per stage V (default 1)"),
      llvm::cl::init(1)};
  Option<std::string> schedule{
      *this, "schedule",
      llvm::cl::desc("gpipe, 1f1b (default), interleaved-1f1b, pipedream, "
                     "2bw, zb-h1, zb-v, interleaved-zb or dualpipe-v")};
  Option<int64_t> microbatches{
      *this, "microbatches",
      llvm::cl::desc("micro-batches per step M (default K)")};
  Option<std::string> partition{*this, "partition",
                                llvm::cl::desc("auto (default) or uniform"),
                                llvm::cl::init("auto")};
  ListOption<std::string> splitAfter{
      *this, "split-after",
      llvm::cl::desc("ONNX node names to end a stage after")};
  Option<std::string> costModel{
      *this, "cost-model",
      llvm::cl::desc("analytical (default) or a profile JSON file"),
      llvm::cl::init("analytical")};
  Option<std::string> device{*this, "device",
                             llvm::cl::desc("cpu (default) or h200"),
                             llvm::cl::init("cpu")};
  Option<std::string> memoryLimit{*this, "memory-limit",
                                  llvm::cl::desc("bytes per rank (suffixes)")};
  Option<std::string> recompute{
      *this, "recompute",
      llvm::cl::desc("activation recomputation: none (default), full, auto"),
      llvm::cl::init("none")};
  Option<bool> inference{*this, "inference",
                         llvm::cl::desc("partition a forward-only model "
                                        "(pipedream-partition-pipeline)")};
  Option<std::string> loss{*this, "loss",
                           llvm::cl::desc("cross-entropy or mse")};
  Option<std::string> labelsName{
      *this, "labels-name", llvm::cl::desc("labels input (default labels)")};
  Option<std::string> optimizer{
      *this, "optimizer",
      llvm::cl::desc("sgd (default), momentum, adam or adamw")};
  Option<double> lr{*this, "lr", llvm::cl::desc("learning rate")};
  Option<double> momentum{*this, "momentum", llvm::cl::desc("momentum")};
  Option<bool> nesterov{*this, "nesterov", llvm::cl::desc("Nesterov momentum")};
  Option<double> weightDecay{*this, "weight-decay",
                             llvm::cl::desc("weight decay")};
  Option<double> beta1{*this, "beta1", llvm::cl::desc("Adam beta1")};
  Option<double> beta2{*this, "beta2", llvm::cl::desc("Adam beta2")};
  Option<double> eps{*this, "eps", llvm::cl::desc("Adam epsilon")};
  Option<std::string> lrSchedule{
      *this, "lr-schedule",
      llvm::cl::desc("constant (default), linear or cosine")};
  Option<int64_t> warmupSteps{*this, "warmup-steps",
                              llvm::cl::desc("learning-rate warm-up steps")};
  Option<int64_t> totalSteps{*this, "total-steps",
                             llvm::cl::desc("the step linear/cosine reach 0")};
  Option<double> clipGradNorm{
      *this, "clip-grad-norm",
      llvm::cl::desc("largest gradient 2-norm (clip_grad_norm_)")};
  ListOption<std::string> freeze{*this, "freeze",
                                 llvm::cl::desc("weights to keep fixed")};
  ListOption<std::string> train{*this, "train",
                                llvm::cl::desc("weights to train anyway")};

  /// The compile options these pipeline options stand for.
  CompileOptions toCompileOptions(CompilePhase emit) const {
    CompileOptions o;
    // The module is already loaded; the name only makes it a `.mlir` input.
    o.input = "<pipeline>.mlir";
    o.emit = stringifyCompilePhase(emit).str();
    o.inference = inference;
    auto given = [](const auto &option) {
      using T = std::decay_t<decltype(option.getValue())>;
      return option.hasValue() ? std::optional<T>(option.getValue())
                               : std::nullopt;
    };
    o.stages = given(stages);
    o.virtualStages = virtualStages;
    o.replicas = given(replicas);
    o.shardOptimizer = shardOptimizer;
    o.ranks = given(ranks);
    o.schedule = given(schedule);
    o.microbatches = given(microbatches);
    o.partition = partition;
    o.splitAfter.assign(splitAfter.begin(), splitAfter.end());
    o.costModel = costModel;
    o.device = device;
    o.memoryLimit = memoryLimit;
    o.recompute = recompute;
    o.loss = given(loss);
    o.labelsName = given(labelsName);
    o.optimizer = given(optimizer);
    o.lr = given(lr);
    o.momentum = given(momentum);
    o.nesterov = given(nesterov);
    o.weightDecay = given(weightDecay);
    o.beta1 = given(beta1);
    o.beta2 = given(beta2);
    o.eps = given(eps);
    o.lrSchedule = given(lrSchedule);
    o.warmupSteps = given(warmupSteps);
    o.totalSteps = given(totalSteps);
    o.clipGradNorm = given(clipGradNorm);
    o.freeze.assign(freeze.begin(), freeze.end());
    o.train.assign(train.begin(), train.end());
    return o;
  }
};

/// Registers `arg` running buildTrainingPipeline up to `emit`; a bad option
/// is the resolver's one-line message.
void registerPhasePipeline(StringRef arg, StringRef description,
                           CompilePhase emit) {
  registerPassPipeline(
      arg, description,
      [emit, arg = arg.str()](
          OpPassManager &pm, StringRef text,
          function_ref<LogicalResult(const Twine &)> errorHandler) {
        PhasePipelineOptions options;
        std::string parseErrors;
        llvm::raw_string_ostream errorStream(parseErrors);
        if (failed(options.parseFromString(text, errorStream)))
          return errorHandler(arg + ": " + parseErrors);
        // The options are resolved before any IR exists: their own
        // context carries the diagnostic to the one handler.
        MLIRContext context(MLIRContext::Threading::DISABLED);
        FirstErrorHandler errors(&context);
        FailureOr<PhaseOptions> resolved =
            resolvePhaseOptions(&context, options.toCompileOptions(emit));
        if (failed(resolved))
          return errorHandler(arg + ": " +
                              errors.orElse("invalid pipeline options"));
        // The search partitions copies of the model: a driver step, not a
        // pass (pipedream-compile --schedule auto).
        if (resolved->schedule.autoSchedule)
          return errorHandler(arg + ": schedule=auto is pipedream-compile's "
                                    "search (--schedule auto); the pass "
                                    "pipeline takes a kind");
        buildTrainingPipeline(pm, *resolved);
        return success();
      },
      [](function_ref<void(const detail::PassOptions &)> optHandler) {
        optHandler(PhasePipelineOptions());
      });
}
} // namespace

void pipedream::registerPipedreamPipelines() {
  registerPhasePipeline(
      "pipedream-partition-pipeline",
      "pipedream-compile --emit partitioned: mark-trainable, annotate costs, "
      "partition and outline the stages",
      CompilePhase::Partitioned);
  registerPhasePipeline(
      "pipedream-training-pipeline",
      "pipedream-compile --emit scheduled: mark-trainable, partition, stage "
      "training functions, the unrolled schedule and the verified per-rank "
      "programs",
      CompilePhase::Scheduled);
}
