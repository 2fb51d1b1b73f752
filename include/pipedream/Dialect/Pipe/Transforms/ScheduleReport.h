//===- ScheduleReport.h - schedule report, trace, timeline ------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// What a user sees of a schedule: the `report.json` fields of docs/CLI.md
// (`schedule`, `bubble_fraction`, `peak_stash`, `peak_memory_bytes`,
// `verified`), a Chrome-trace JSON (Perfetto, chrome://tracing) with one lane
// per rank and one slice per action, and an SVG timeline picture. All three
// come from `simulate` (Schedule.h) with unit costs or per-stage durations
// supplied by the caller; nothing here reads IR.
//
// Used by `pipe-schedule-report` (pipedream-opt) and by pipedream-compile
// (`--report-json`, `--trace`):
//
//   namespace sched = pipedream::pipe::schedule;
//   sched::Schedule s = sched::buildSchedule(config);
//   sched::ReportOptions opts;            // unit costs by default
//   opts.costs = myCosts;                 // per-stage seconds, optional
//   opts.microsPerUnit = 1e6;             // costs in seconds
//   opts.memory = perStageBytes;          // optional
//   sched::Report r = sched::buildReport(s, opts);
//   json["..."] = ...; for (auto &kv : sched::reportToJSON(r)) json.insert(kv);
//   sched::writeTextFile("t.json", sched::traceJSON(s, r, opts));
//   sched::writeTextFile("t.svg", sched::timelineSVG(s, r));
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_DIALECT_PIPE_TRANSFORMS_SCHEDULEREPORT_H
#define PIPEDREAM_DIALECT_PIPE_TRANSFORMS_SCHEDULEREPORT_H

#include "pipedream/Dialect/Pipe/Transforms/Schedule.h"

#include "llvm/Support/JSON.h"

#include <optional>
#include <string>
#include <vector>

namespace pipedream {
namespace pipe {
namespace schedule {

/// Bytes one virtual stage holds, for the memory estimate.
struct StageMemory {
  /// Trainable weights (one copy).
  int64_t parameterBytes = 0;
  /// What one micro-batch's forward keeps for its backward (one stash
  /// slot's worth).
  int64_t activationBytes = 0;
  /// Everything else held for the whole step: frozen weights, workspace.
  int64_t fixedBytes = 0;
  /// When the kind splits the backward: what one micro-batch holds from
  /// its B to its W (unset: `activationBytes`, the forward's stash kept
  /// until W; a recomputing stage's B rebuilds the activations and hands
  /// W what it reads).
  std::optional<int64_t> weightGradBytes;
};

/// What the report is computed from, besides the schedule.
struct ReportOptions {
  /// Durations; unset: `Costs::unit(config)` (F = 1, B = 2; split: B = W = 1).
  std::optional<Costs> costs;
  /// Microseconds per cost unit in the trace: 1e6 when costs are seconds
  /// (the cost model's unit), 1000 for unit costs (one unit shows as 1 ms).
  double microsPerUnit = 1e6;
  /// Per virtual stage; missing stages count 0 bytes.
  std::vector<StageMemory> memory;
  /// Optimizer state copies per trainable weight (sgd 0, momentum 1,
  /// adam/adamw 2).
  int64_t optimizerStates = 0;
};

/// The report of one schedule.
struct Report {
  Config config;
  /// `verify` (with static slots) and the simulation succeeded.
  bool verified = false;
  /// The verifier's (or simulator's) message when not verified.
  std::string error;
  /// "unit" (default unit costs), "uniform" (caller's costs, one per
  /// action kind) or "per-stage".
  std::string costSource;
  /// Simulated; 0 when not verified.
  double makespan = 0, bubbleFraction = 0;
  /// Per rank: micro-batches in flight at most (activation stash slots,
  /// one per micro-batch and virtual stage).
  std::vector<int64_t> activationSlots;
  /// Per rank: weight versions held at most, summed over its chunks.
  std::vector<int64_t> weightVersions;
  /// Per virtual stage: weight versions held at most.
  std::vector<int64_t> stageWeightVersions;
  /// Per rank: peak activation bytes (exact peak over the rank's order of
  /// sum over stages of activationBytes x micro-batches in flight).
  std::vector<int64_t> peakActivationBytes;
  /// Per rank: peak memory estimate (see docs/Pipe.md, "Schedule report"):
  /// sum over the rank's stages of parameterBytes x (weight versions + 1
  /// gradient + optimizerStates) + fixedBytes, plus peakActivationBytes.
  std::vector<int64_t> peakMemoryBytes;
  /// The simulation (timeline per rank and action).
  SimResult sim;
};

/// Verifies and simulates `schedule`. Never fails: an invalid schedule gives
/// `verified = false` and `error`, with the static figures still filled in
/// where they could be computed.
Report buildReport(const Schedule &schedule, const ReportOptions &options);

/// The docs/CLI.md report fields:
///   "schedule": {"kind", "K", "V", "M"},
///   "bubble_fraction": f (null when not verified), "makespan": f,
///   "cost_source": "unit" | "per-stage",
///   "peak_stash": [{"rank", "activation_slots", "weight_versions"}...],
///   "peak_memory_bytes": [per rank],
///   "verified": bool, and "error": string when not verified.
llvm::json::Object reportToJSON(const Report &report);

/// Chrome-trace JSON: one process, one thread (lane) per rank named
/// "rank r", one complete event ("ph": "X") per action named like `F3 s1`
/// (action, micro-batch, virtual stage) with args stage, chunk, rank,
/// microbatch, action; timestamps in microseconds
/// (`options.microsPerUnit`). Empty trace events when not verified.
std::string traceJSON(const Schedule &schedule, const Report &report,
                      const ReportOptions &options);

/// SVG timeline: ranks as rows, actions as boxes colored by kind (F, B, W,
/// U; later chunks darker) labeled with the micro-batch, a time axis, a
/// legend and the bubble fraction in the title.
std::string timelineSVG(const Schedule &schedule, const Report &report);

/// Writes `contents` to `path` ("-" = stdout). Returns "" or the error.
std::string writeTextFile(const std::string &path, const std::string &contents);

} // namespace schedule
} // namespace pipe
} // namespace pipedream

#endif // PIPEDREAM_DIALECT_PIPE_TRANSFORMS_SCHEDULEREPORT_H
