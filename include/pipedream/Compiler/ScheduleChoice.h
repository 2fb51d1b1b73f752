//===- ScheduleChoice.h - --schedule auto over partitions -------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// `--schedule auto` (issue 17): the schedule search (ScheduleSearch.h) with
// the compiler's cost model. For every synchronous kind, chunk count V and
// micro-batch count M to try, the model is partitioned for that
// configuration (K x V pieces, the kind's placement and memory model) and
// the kind's order simulated with the partition's per-stage costs; the
// candidates within the per-rank memory limit are ranked by simulated step
// time (every candidate trains the same global batch: see below), and
// `schedule::candidatesTable` prints them.
//
// M and the batch: the module was imported with one micro-batch size (the
// driver's --batch-size / M). With a fixed global batch (`fixedBatch`),
// another M changes the micro-batch size, so each candidate's per-stage
// times and activation bytes are scaled by M_import / M (linear in the
// micro-batch size: per-op overheads are not rescaled, a documented
// approximation) and only M dividing the batch are tried; without it only
// M_import is tried (another M would train a different global batch).
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_COMPILER_SCHEDULECHOICE_H
#define PIPEDREAM_COMPILER_SCHEDULECHOICE_H

#include "pipedream/Dialect/Pipe/Transforms/PartitionReport.h"
#include "pipedream/Dialect/Pipe/Transforms/ScheduleSearch.h"

#include "mlir/Support/LLVM.h"

#include <functional>
#include <string>
#include <vector>

namespace pipedream {

struct ScheduleChoiceOptions {
  /// K.
  int64_t stages = 1;
  /// M the module was imported with.
  int64_t importMicrobatches = 1;
  /// The global batch is fixed (--batch-size): M may change (dividing
  /// `batchSize`), the micro-batch size follows.
  bool fixedBatch = false;
  int64_t batchSize = 0;
  /// M to try with a fixed batch (those not dividing it are skipped);
  /// empty: K, 2K, 4K.
  std::vector<int64_t> microbatches;
  /// V to try for the loop-placed chunked kinds (interleaved-1f1b,
  /// interleaved-zb); the V-shaped kinds always take 2.
  std::vector<int64_t> chunks{2};
  /// Per-rank memory limit in bytes (0: none).
  int64_t memoryLimitBytes = 0;
  /// Optimizer state copies per trainable weight.
  int64_t optimizerStates = 0;
  /// The partition of the model for a configuration (K x V pieces, its
  /// kind's placement and memory model), on a copy of the module; a
  /// failure (e.g. nothing fits the memory limit) drops the candidate,
  /// `reason` (the partitioner's message) is its row in the table.
  std::function<mlir::FailureOr<PartitionReport>(
      const pipe::schedule::Config &, std::string &)>
      partitionOf;
};

struct ScheduleChoice {
  /// The winner (candidates.front()).
  pipe::schedule::Config config;
  /// Every candidate compared, best first.
  std::vector<pipe::schedule::SearchCandidate> candidates;
  /// The configurations the model could not be partitioned for (the
  /// partitioner's message: e.g. no partition within the memory limit).
  std::vector<std::pair<pipe::schedule::Config, std::string>> unpartitioned;
};

/// The report options (per-stage costs with communication split over F and
/// B, memory) of a partition for `config`: what `--report` simulates.
pipe::schedule::ReportOptions
reportOptionsFromPartition(const PartitionReport &report,
                           const pipe::schedule::Config &config,
                           int64_t optimizerStates, double scale = 1.0);

/// Runs the search. Fails when no candidate is valid or none fits the
/// memory limit (the error diagnostic, in `context`, then names the
/// smallest peak).
mlir::FailureOr<ScheduleChoice>
chooseSchedule(mlir::MLIRContext *context,
               const ScheduleChoiceOptions &options);

} // namespace pipedream

#endif // PIPEDREAM_COMPILER_SCHEDULECHOICE_H
