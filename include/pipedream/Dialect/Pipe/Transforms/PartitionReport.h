//===- PartitionReport.h - the partition report -----------------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The partition report of `pipedream-compile --report` / `--report-json`
// (docs/CLI.md): describes the partition pipe-partition left in a module
// (lib/Pipelines' buildPartitionPipeline runs the passes).
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_DIALECT_PIPE_TRANSFORMS_PARTITIONREPORT_H
#define PIPEDREAM_DIALECT_PIPE_TRANSFORMS_PARTITIONREPORT_H

#include "pipedream/Dialect/Pipe/Transforms/PartitionSolver.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace pipedream {

/// One stage (piece) of the report.
struct StageReport {
  int64_t index = 0, chunk = 0; ///< `#pipe.stage<index, chunk>`
  int64_t rank = 0;
  int64_t numOps = 0;
  std::string firstOp, lastOp; ///< ONNX node names
  pipe::partition::Piece cost;
};

/// The partition of one function and how it compares.
/// A trainable weight read by ops of several stages (tied weights): one
/// parameter, a copy on each holder, its gradient all-reduced over them.
struct SharedWeightReport {
  std::string name;
  int64_t bytes = 0;
  /// Virtual stages (pieces) and distinct ranks that read it, ascending.
  std::vector<int64_t> stages, ranks;
  /// Updates per step (1 for synchronous schedules, M for PipeDream, M / K
  /// for 2BW) and the bytes each holder sends per step in the all-reduce
  /// (ring: 2 (n - 1) / n x bytes per update over n ranks).
  int64_t updatesPerStep = 1;
  int64_t bytesPerStep = 0;
};

struct PartitionReport {
  std::string function;
  std::string method;
  int64_t stages = 1, virtualStages = 1, microbatches = 1;
  std::string schedule, device, costSource;
  int64_t memoryLimit = 0;
  /// --recompute: none, full or auto (each stage's choice in its cost).
  std::string recompute = "none";
  std::vector<StageReport> stageReports;
  double slowest = 0, ideal = 0;
  int64_t slowestStage = 0;
  /// The same model under the other methods (negative when impossible).
  double uniformSlowest = -1, autoSlowest = -1;
  /// Wall-clock seconds of the partition phase (cost annotation and the
  /// partitioner with its comparisons), measured by the driver; negative:
  /// not measured (pipe-report-partition).
  double solveSeconds = -1;
  int64_t numOps = 0;
  bool fitsMemory = true;
  /// Trainable parameters of the model, each weight once (elements and
  /// bytes), and the weights several stages share.
  int64_t numParameters = 0, parameterBytes = 0;
  std::vector<SharedWeightReport> sharedWeights;
};

/// Describes the partition pipe-partition left in `module` (before
/// outlining): its `#pipe.partition` and the costs of the recorded pieces
/// (no partitioner runs). Errors are diagnostics on `module`.
mlir::FailureOr<PartitionReport> collectPartitionReport(mlir::ModuleOp module);

/// The `--report` text: a table of stages, the slowest stage against the
/// ideal (total / stages) and against uniform.
void printPartitionReport(const PartitionReport &report, llvm::raw_ostream &os);

/// The `--report-json` sections: `stages` (list: index, chunk, ranks,
/// op_count, forward/backward times, parameter, activation and cut bytes,
/// memory...), `partition` (method, slowest, ideal, ratios) and
/// `shared_weights` (name, bytes, stages, ranks, all-reduce bytes per step).
llvm::json::Object partitionReportJSON(const PartitionReport &report);

} // namespace pipedream

#endif // PIPEDREAM_DIALECT_PIPE_TRANSFORMS_PARTITIONREPORT_H
