//===- Options.h - typed options of every compile phase ---------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The options of a compilation, in two forms:
//
// - CompileOptions: what the user gave (pipedream-compile's flags, the
//   Python module's keywords), unset std::optionals for "not given";
// - PhaseOptions: one typed struct per phase (import, training, partition,
//   schedule, codegen, target), enums instead of strings, every default
//   resolved and every value checked once, by resolvePhaseOptions.
//
// The single-rank and the pipelined flows of lib/Driver, the phase pass
// pipelines (Pipelines.h) and pipedream-profile read PhaseOptions only, so
// an option means the same thing wherever it goes (docs/CLI.md).
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_PIPELINES_OPTIONS_H
#define PIPEDREAM_PIPELINES_OPTIONS_H

#include "pipedream/Dialect/NN/Transforms/Training.h"
#include "pipedream/Dialect/Pipe/Transforms/PartitionSolver.h"
#include "pipedream/Dialect/Pipe/Transforms/Schedule.h"
#include "pipedream/Target/CPU/CPUCodegen.h"
#include "pipedream/Target/GPU/CUDACodegen.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pipedream {

//===----------------------------------------------------------------------===//
// What the user gave
//===----------------------------------------------------------------------===//

/// Everything `pipedream-compile` reads from its command line (and the
/// Python module from its keywords). An unset std::optional means "not
/// given": several defaults depend on other flags and some flags are
/// refused in some modes only when given.
struct CompileOptions {
  // Input and output.
  /// MODEL.onnx, or a `.mlir` file with an nn- or linalg-level module.
  std::string input;
  /// The bundle directory. With an IR phase (`emit` other than `bundle`) the
  /// driver does not write it: the IR comes back in CompileResult::ir.
  std::string output;
  /// A CompilePhase name (parseCompilePhase).
  std::string emit = "bundle";
  /// Forward only, one rank.
  bool inference = false;
  /// `NAME=DxD...` fixes of graph input shapes.
  std::vector<std::string> inputShapes;
  /// Runs the ONNX checker on the model.
  bool runONNXChecker = true;

  // Code generation.
  std::string target = "cpu";
  std::string targetCPU = "native";
  unsigned optLevel = 3;
  std::string gemm = "auto";
  /// --no-run-time-checks clears it (CPUCodegenOptions::runTimeChecks).
  bool runTimeChecks = true;
  /// --target cuda: GPU architecture (default sm_90) and storage type of
  /// GEMM operands (f32 or bf16). Unset when not given (refused with
  /// --target cpu).
  std::optional<std::string> gpuArch;
  std::optional<std::string> dtype;

  // Training (docs/CLI.md; docs/Bundle.md "Training bundles").
  std::optional<std::string> loss;
  std::optional<std::string> labelsName; ///< default "labels"
  std::optional<int64_t> microbatches;   ///< default: K (1 on one rank)
  std::optional<int64_t> batchSize;
  std::optional<std::string> optimizer; ///< default "sgd"
  std::optional<double> lr;             ///< default 0.01 (sgd), 0.001 (adam)
  std::optional<double> momentum;
  std::optional<bool> nesterov;
  std::optional<double> weightDecay; ///< default 0
  std::optional<double> beta1;       ///< default 0.9
  std::optional<double> beta2;       ///< default 0.999
  std::optional<double> eps;         ///< default 1e-8
  /// Learning-rate schedule (docs/Training.md, "Learning-rate schedules"):
  /// constant (default), linear or cosine after `warmupSteps` of linear
  /// warm-up; linear and cosine reach 0 at `totalSteps`.
  std::optional<std::string> lrSchedule;
  std::optional<int64_t> warmupSteps; ///< default 0
  std::optional<int64_t> totalSteps;
  /// Gradient clipping (torch.nn.utils.clip_grad_norm_): before each
  /// update, every gradient is scaled by min(1, max / (norm + 1e-6)), norm
  /// the 2-norm of all the trained weights' gradients together (over every
  /// stage of a pipeline). Unset: no clipping.
  std::optional<double> clipGradNorm;
  /// --evaluate: single-rank training bundles also get an evaluation
  /// function (eval-mode forward and loss: pipedream-run --eval-data,
  /// pd_trainer_evaluate, CompiledModel.evaluate).
  std::optional<bool> evaluate;
  /// Weights to keep fixed / to train whatever the trainable rule says
  /// (names or regular expressions, entries may be comma-separated;
  /// docs/Training.md "Trainable and frozen weights").
  std::vector<std::string> freeze, train;

  // Pipelines (docs/Pipe.md).
  std::optional<int64_t> stages; ///< K, default 1
  /// Data-parallel replicas of every stage R (replicated stages, docs/Bundle.md
  /// "Replicated stages"): K*R ranks; each replica runs M/R of the step's
  /// M micro-batches. Unset: 1.
  std::optional<int64_t> replicas;
  /// ZeRO-1: every replica keeps and updates 1/R of its stage's optimizer
  /// state (needs replicas > 1).
  bool shardOptimizer = false;
  /// Without --stages: PipeDream's planner picks K and R over this many
  /// ranks (ReplicationPlanner.h); the best K x R plan is compiled.
  std::optional<int64_t> ranks;
  int64_t virtualStages = 1;     ///< V
  std::string partition = "auto";
  std::vector<std::string> splitAfter;
  std::string costModel = "analytical";
  std::string device = "cpu";
  std::string memoryLimit;
  /// --recompute: none (default), full or auto (docs/Pipe.md, "Activation
  /// recomputation").
  std::string recompute = "none";
  std::optional<std::string> schedule; ///< default "1f1b"
  /// Renders the human-readable partition/schedule report into
  /// CompileResult::reportText.
  bool report = false;
  /// Writes the JSON report to this file.
  std::string reportJSON;
  /// With `emit` scheduled (or a pipeline bundle): Chrome trace / SVG files.
  std::string trace;
  std::string timeline;
  /// With `emit` scheduled (or a pipeline bundle): run this
  /// torch.distributed.pipelining schedule CSV instead of the generated one
  /// (kind and M read from the file unless --schedule / --microbatches are
  /// given), and write the schedule in torch's CSV format.
  std::string scheduleCsv;
  std::string exportScheduleCsv;

  // Compile time (docs/CompileTime.md).
  /// --time-phases: the wall and CPU time of every phase, with MLIR's pass
  /// timing, to stderr (include/pipedream/Support/CompileTiming.h).
  bool timePhases = false;
  /// --codegen-threads: threads for LLVM optimization and code generation
  /// (the module is split); 0 picks the hardware's, 1 compiles one module.
  unsigned codegenThreads = 0;
  /// --outline-kernels, --merge-functions, --reassociate-reductions,
  /// --vectorize-reductions, --fuse-row-loops, --plan-temporaries.
  cpu::CPULoopOptions loops;
  /// --cache-dir (empty: the default directory) and --no-cache.
  std::string cacheDir;
  bool noCache = false;
  /// --copy-weights: rank weight files are always written, never linked
  /// from the model's external data (docs/Bundle.md "Linked weight files").
  bool copyWeights = false;
};

//===----------------------------------------------------------------------===//
// Resolved, typed options of each phase
//===----------------------------------------------------------------------===//

/// The phases `--emit` stops after, in compile order. `Partitioned` and
/// `Scheduled` exist in pipelined compiles only, `Train` in training ones.
enum class CompilePhase {
  NN,
  Train,
  Partitioned,
  Scheduled,
  Linalg,
  LLVMDialect,
  LLVM,
  Bundle
};
std::optional<CompilePhase> parseCompilePhase(llvm::StringRef name);
llvm::StringRef stringifyCompilePhase(CompilePhase phase);

/// Code generators `--target` selects.
enum class CompileTarget { CPU, CUDA };

/// Parses a `--target` value; nullopt for a target that is not built.
std::optional<CompileTarget> parseCompileTarget(llvm::StringRef name);

/// Import: the model file and the shapes fixed at import.
struct ImportPhaseOptions {
  std::string input;
  /// True for a `.mlir` input (parsed, not imported).
  bool isMLIR = false;
  std::vector<std::string> inputShapes;
  bool runONNXChecker = true;
  /// Samples per micro-batch (--batch-size / M), fixed at import.
  std::optional<int64_t> microbatchSize;
};

/// Training: mark-trainable, loss and optimizer. `nn` holds the optimizer
/// as it runs: `--optimizer sgd --momentum 0.9` is OptimizerKind::Momentum.
struct TrainingPhaseOptions {
  /// False for --inference.
  bool enabled = false;
  nn::TrainingOptions nn;
  std::vector<std::string> freeze, train;
  /// Extra copies per trainable weight the optimizer keeps (0 sgd, 1
  /// momentum, 2 adam/adamw): what the partitioner and the schedule report
  /// count.
  int64_t optimizerStates() const;
};

enum class PartitionMethod { Auto, Uniform };
llvm::StringRef stringifyPartitionMethod(PartitionMethod method);

/// Partition: pipe-annotate-costs and pipe-partition.
struct PartitionPhaseOptions {
  int64_t stages = 1, virtualStages = 1;
  PartitionMethod method = PartitionMethod::Auto;
  std::vector<std::string> splitAfter;
  /// Device of the analytical cost model ("cpu" or "h200").
  std::string device = "cpu";
  /// A profile JSON (--cost-model FILE); empty: the analytical model.
  std::string profile;
  std::string memoryLimit;
  /// The schedule whose memory (in-flight micro-batches, weight versions)
  /// and all-reduces the partitioner counts.
  pipe::schedule::Kind schedule = pipe::schedule::Kind::OneFOneB;
  /// Micro-batches of each replica's schedule (M/R); with `ranks` the
  /// step's M (R is the planner's).
  int64_t microbatches = 1;
  int64_t optimizerStates = 0;
  /// --ranks N: pipe-partition ranks=N (0: `stages` x 1).
  int64_t ranks = 0;
  /// --recompute: which stages stash their inputs and recompute (the
  /// partitioner decides for Auto).
  pipe::partition::Recompute recompute = pipe::partition::Recompute::None;
};

/// Schedule: pipe-build-stage-training, pipe-unroll-schedule,
/// pipe-project-ranks and pipe-verify-schedule.
struct SchedulePhaseOptions {
  pipe::schedule::Config config;
  /// Micro-batches whose gradients one update applies (M; 1 for pipedream,
  /// K for 2bw).
  int64_t microbatchesPerUpdate = 1;
  /// With --trace / --timeline: the simulated schedule's files.
  std::string trace, timeline;
  /// --schedule-csv: the schedule read from torch's CSV (config's kind and
  /// M are the file's), used instead of the generated one.
  std::string scheduleCsv;
  std::optional<pipe::schedule::Schedule> fromCsv;
  /// --export-schedule-csv FILE.
  std::string exportScheduleCsv;
  /// --schedule auto (issue 17): `config` is a placeholder; the driver
  /// searches kind and V (and M when `searchMicrobatches`: --batch-size
  /// without --microbatches) by simulated step time under --memory-limit
  /// (include/pipedream/Compiler/ScheduleChoice.h), then resolves the
  /// options again with the winner.
  bool autoSchedule = false;
  bool searchMicrobatches = false;
  /// Replicated stages: R replicas of every pipeline rank (config's M is
  /// each replica's, M/R); with shardOptimizer, pipe-shard-optimizer splits
  /// the updates over them.
  int64_t replicas = 1;
  bool shardOptimizer = false;
  /// --ranks N chose non-uniform replication (PipeDream's 1F1B-RR): stage s
  /// runs on stageReplicas[s] replicas, micro-batch m on replica m mod
  /// R_s. `config` is then the K-stage schedule of all M micro-batches
  /// (replicas = 1), whose per-rank programs the bundle splits over the
  /// replicas (ReplicaLayout.h, splitRoutedRankPrograms). Empty otherwise.
  std::vector<int64_t> stageReplicas;
  /// --recompute full|auto: pipe-recompute rewrites the stages the
  /// partitioner listed.
  bool recompute = false;
};

/// Code generation for the CPU (also the host side of --target cuda).
struct CodegenPhaseOptions {
  cpu::CPUCodegenOptions cpu;
};

/// The target and its own options.
struct TargetPhaseOptions {
  CompileTarget target = CompileTarget::CPU;
  /// Set for CompileTarget::CUDA (toolkit checked).
  cuda::CUDACodegenOptions cuda;
};

/// Every phase's options, resolved.
struct PhaseOptions {
  CompilePhase emit = CompilePhase::Bundle;
  std::string output;
  /// True when the compile partitions (--stages, --virtual-stages,
  /// --split-after, --schedule, --emit partitioned/scheduled): the
  /// partition phase runs and, unless only `Partitioned` is asked for, the
  /// schedule phase.
  bool pipelined = false;
  ImportPhaseOptions import;
  TrainingPhaseOptions training;
  PartitionPhaseOptions partition;
  SchedulePhaseOptions schedule;
  CodegenPhaseOptions codegen;
  TargetPhaseOptions target;
  /// --report (text into CompileResult::reportText) and --report-json FILE.
  bool reportText = false;
  std::string reportJSON;
  /// --time-phases.
  bool timePhases = false;
  /// Not --copy-weights: rank weight files may be links of the model's
  /// external data.
  bool linkWeights = true;

  /// Whether the schedule phase runs.
  bool scheduled() const {
    return pipelined && emit != CompilePhase::Partitioned;
  }
};

/// --ranks N: after the partition phase, the planner's K x R plan
/// (pipe.partition `stages`, `replicas`) for the schedule phase: K stages,
/// R replicas, M/R micro-batches each. Fails with a one-line error
/// diagnostic on `context` (at an unknown location: the message names the
/// flag).
mlir::LogicalResult applyReplicationPlan(mlir::MLIRContext *context,
                                         PhaseOptions &options, int64_t stages,
                                         int64_t replicas);

/// --ranks N, a non-uniform plan (pipe-partition's `pipe.stage_replicas`):
/// K = stageReplicas.size() stages over all M micro-batches, stage s on
/// stageReplicas[s] replicas (SchedulePhaseOptions::stageReplicas). Fails
/// with a one-line error diagnostic on `context`, like
/// applyReplicationPlan (a replication that does not divide M, a schedule
/// that is not synchronous).
mlir::LogicalResult
applyRoutedReplicationPlan(mlir::MLIRContext *context, PhaseOptions &options,
                           llvm::ArrayRef<int64_t> stageReplicas);

/// Resolves the defaults of `options` and checks every value, for the
/// single-rank and the pipelined flow alike, before anything is imported.
/// Fails with a one-line error diagnostic on `context` (at an unknown
/// location: every message names its flag; FirstErrorHandler prints it).
mlir::FailureOr<PhaseOptions>
resolvePhaseOptions(mlir::MLIRContext *context, const CompileOptions &options);

/// The code generation part of resolvePhaseOptions alone (-O, --gemm,
/// --target-cpu, --no-run-time-checks), for pipedream-profile.
mlir::FailureOr<CodegenPhaseOptions>
resolveCodegenOptions(mlir::MLIRContext *context,
                      const CompileOptions &options);

/// The default learning rate of an optimizer (torch.optim's usual values:
/// 0.01 for SGD, 0.001 for Adam).
double defaultLearningRate(nn::OptimizerKind kind);

} // namespace pipedream

#endif // PIPEDREAM_PIPELINES_OPTIONS_H
