//===- ScheduleCSV.h - PyTorch pipelining schedule CSV ----------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Import and export of the schedule CSV of `torch.distributed.pipelining`
// (`PipelineScheduleMulti._dump_csv` / `_load_csv`, "compute_only" format),
// so that a user can bring a custom schedule and have it verified and
// compiled.
//
// Format (what torch >= 2.4 writes with `csv.writer`): one row per rank, no
// header; cell j of row r is what rank r does at time step j: an action
// `{stage}{type}{microbatch}` or an empty cell (idle). Types:
//   F  forward
//   B  full backward (input and weight gradient together)
//   I  backward of the input only (torch's BACKWARD_INPUT; our B when the
//      schedule splits the backward)
//   W  backward of the weights only
// Stage `s` runs on rank `s % K` (torch's loop-style placement); V-shaped
// placements (ZBV, DualPipeV) are rejected. Communication and sharding
// actions of torch's "compute_comms" format (`SEND_F`, `RECV_F`, `SEND_B`,
// `RECV_B`, `UNSHARD`, `RESHARD`, `REDUCE_GRAD`) are skipped: pipedream
// derives communication from the compute order itself. Overlapped actions
// (`(...)OVERLAP_F_B`) are rejected. Spaces around cells, `\r\n` line ends
// and trailing empty lines are accepted.
//
// torch's CSV has no optimizer step; the importer appends pipedream's U
// actions following the schedule kind's policy (Schedule.h), and the
// exporter leaves them out.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_DIALECT_PIPE_TRANSFORMS_SCHEDULECSV_H
#define PIPEDREAM_DIALECT_PIPE_TRANSFORMS_SCHEDULECSV_H

#include "pipedream/Dialect/Pipe/Transforms/Schedule.h"

#include <optional>
#include <string>

namespace pipedream {
namespace pipe {
namespace schedule {

/// How to read a CSV schedule. Zero / unset fields are inferred.
struct CSVImportOptions {
  /// Schedule kind. Unset: `zb-h1` when the CSV has I or W actions,
  /// `interleaved-1f1b` when it has more stages than rows, else `1f1b`.
  std::optional<Kind> kind;
  /// K; 0 = the number of rows. Rows past K are an error; missing rows are
  /// idle ranks (and fail verification when they own a stage).
  int64_t numRanks = 0;
  /// M; 0 = the largest micro-batch + 1.
  int64_t numMicrobatches = 0;
  /// V; 0 = inferred from the largest stage (`stage / K + 1`).
  int64_t numChunks = 0;
};

/// Parses `text` into `out` (configuration and per-rank action lists, with
/// U actions appended per the kind's policy). Returns "" on success, else
/// one error naming the row and column (1-based) of the offending cell, e.g.
/// `row 2, column 3: '1X0' is not an action ({stage}{F|B|I|W}{microbatch})`.
/// The result is not verified: run `verify` on it.
std::string parseScheduleCSV(const std::string &text,
                             const CSVImportOptions &options, Schedule &out);

/// Cell layout of an exported CSV.
enum class CSVLayout {
  /// Every action at its time step when F, B (I) and W all take one step
  /// and communication is free (simulated), idle steps as empty cells:
  /// the grid torch's own schedules produce.
  TimeSteps,
  /// Actions only, in order, no empty cells.
  Compact,
};

/// Writes `schedule` in torch's format (one row per rank, `\n` line ends,
/// U actions left out, B written as I when the backward is split). For
/// TimeSteps the schedule must be deadlock-free (else Compact is used).
std::string exportScheduleCSV(const Schedule &schedule,
                              CSVLayout layout = CSVLayout::TimeSteps);

/// Reads the CSV file at `path` for a pass that already knows the
/// configuration (K, M, V and kind from its options and stage functions):
/// parses it with those values, requires them to match the file, and runs
/// `verify` with static slots. Returns "" and sets `out`, or the error
/// (file, parse or verifier message) prefixed with the path.
std::string loadScheduleCSVFile(const std::string &path, const Config &config,
                                Schedule &out);

} // namespace schedule
} // namespace pipe
} // namespace pipedream

#endif // PIPEDREAM_DIALECT_PIPE_TRANSFORMS_SCHEDULECSV_H
