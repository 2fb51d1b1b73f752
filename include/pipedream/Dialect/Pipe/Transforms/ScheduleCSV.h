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
// header; cell j of row r is what rank r does at its j-th step: an action
// `{stage}{type}{microbatch}` or an empty cell (idle). The whole action
// grammar of torch's `_Action.from_str` is read:
//   F  forward
//   B  full backward (input and weight gradient together); in a schedule
//      that splits the backward, a B followed by its W joined as one
//      (Join::FullBackward), as DualPipeV's full backwards
//   I  backward of the input only (torch's BACKWARD_INPUT; our B when the
//      schedule splits the backward)
//   W  backward of the weights only
//   (a;b)OVERLAP_F_B  an F and a B (or I) overlapped (DualPipe): the two
//      actions in order, the second joined to the first (Join::Overlap)
//   SEND_F RECV_F SEND_B RECV_B WAIT_SEND_F WAIT_SEND_B (with a micro-batch)
//      communication of torch's "compute_comms" format: checked (stage and
//      micro-batch in range, on the stage's rank) and ignored, since
//      pipedream derives communication from the compute order itself
//   UNSHARD RESHARD REDUCE_GRAD WAIT_REDUCE_GRAD (no micro-batch): FSDP
//      actions, checked and ignored (parameters are not sharded here)
// The importer says what it ignored in one line (`note`). Placement: loop
// (stage s on rank s % K) or V (stage s and 2K-1-s on rank s: zb-v,
// dualpipe-v), inferred from the file when the kind is. Spaces around
// cells, `\r\n` line ends and trailing empty lines are accepted.
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
  /// Schedule kind. Unset: V placement: `dualpipe-v` with overlapped
  /// actions, else `zb-v`; loop placement: `zb-h1` (`interleaved-zb` with
  /// more stages than rows) when the CSV has I or W actions,
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
/// one error naming the row and column (1-based) of the offending cell, the
/// cell and what is wrong, e.g. `row 2, column 3: '1X0' has unknown action
/// type 'X' (...)` or `row 1, column 4: '0F9': micro-batch 9 is out of
/// range: ...`. When `note` is given it receives one line saying what was
/// ignored (communication and FSDP actions), or stays empty. The result is
/// not verified: run `verify` on it.
std::string parseScheduleCSV(const std::string &text,
                             const CSVImportOptions &options, Schedule &out,
                             std::string *note = nullptr);

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
/// U actions left out, B written as I when the backward is split, a B with
/// its joined W as B, an overlapped pair as `(a;b)OVERLAP_F_B`). For
/// TimeSteps the schedule must be deadlock-free (else Compact is used).
std::string exportScheduleCSV(const Schedule &schedule,
                              CSVLayout layout = CSVLayout::TimeSteps);

/// Reads the CSV file at `path` for a pass that already knows the
/// configuration (K, M, V and kind from its options and stage functions):
/// parses it with those values, requires them to match the file, and runs
/// `verify` with static slots. Returns "" and sets `out`, or the error
/// (file, parse or verifier message) prefixed with the path.
std::string loadScheduleCSVFile(const std::string &path, const Config &config,
                                Schedule &out, std::string *note = nullptr);

/// Reads the CSV file at `path` for a driver that fixes K and V (the
/// partition is made) and infers the kind (unset) and M (0) from the file;
/// verifies it as `loadScheduleCSVFile` does. Returns "" and sets `out`, or
/// the error prefixed with the path.
std::string readScheduleCSVFile(const std::string &path,
                                std::optional<Kind> kind, int64_t numRanks,
                                int64_t numMicrobatches, int64_t numChunks,
                                Schedule &out, std::string *note = nullptr);

} // namespace schedule
} // namespace pipe
} // namespace pipedream

#endif // PIPEDREAM_DIALECT_PIPE_TRANSFORMS_SCHEDULECSV_H
