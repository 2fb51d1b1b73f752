//===- ScheduleSearch.h - pick the schedule with the shortest step -*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// A search over the schedule family: every kind and chunk count V (and
// every M given) is built, verified and simulated with the caller's costs
// and memory model; the candidates that fit a per-rank memory limit are
// ranked by simulated step time. `pipe-report-schedule kind=auto` prints the
// table; `pipedream-compile --schedule auto` runs it with each candidate's
// own partition (include/pipedream/Compiler/ScheduleChoice.h).
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_DIALECT_PIPE_TRANSFORMS_SCHEDULESEARCH_H
#define PIPEDREAM_DIALECT_PIPE_TRANSFORMS_SCHEDULESEARCH_H

#include "pipedream/Dialect/Pipe/Transforms/ScheduleReport.h"

#include <functional>
#include <string>
#include <vector>

namespace pipedream {
namespace pipe {
namespace schedule {

/// One schedule the search compared.
struct SearchCandidate {
  Config config;
  /// Simulated step time (makespan) and bubble fraction.
  double stepTime = 0, bubbleFraction = 0;
  /// Per rank, from the report's memory model.
  std::vector<int64_t> peakMemoryBytes;
  /// Within the memory limit (always true without one).
  bool fits = true;
};

/// What to search.
struct SearchOptions {
  int64_t numRanks = 1;
  /// M to try (each must be >= 1).
  std::vector<int64_t> microbatches{1};
  /// V to try for the kinds that take chunks.
  std::vector<int64_t> chunks{2};
  /// Only the synchronous kinds (the asynchronous ones train differently).
  bool synchronousOnly = true;
  /// Per-rank memory limit in bytes; 0: none.
  int64_t memoryLimit = 0;
  /// Costs and memory of a configuration. Unset: a stage's F costs 1 and
  /// its backward 2 for the whole step, split evenly over its V chunks and
  /// M micro-batches (so schedules of different V and M compare at the
  /// same work), no memory.
  std::function<ReportOptions(const Config &)> optionsOf;
};

/// Every valid, verified candidate, best first: those that fit before those
/// that do not, then by step time, then by the largest per-rank memory, then
/// by kind (`allKinds` order).
std::vector<SearchCandidate> searchSchedules(const SearchOptions &options);

/// The candidates as a text table, one per line, the chosen one (the first,
/// if it fits) marked.
std::string candidatesTable(const std::vector<SearchCandidate> &candidates);

} // namespace schedule
} // namespace pipe
} // namespace pipedream

#endif // PIPEDREAM_DIALECT_PIPE_TRANSFORMS_SCHEDULESEARCH_H
