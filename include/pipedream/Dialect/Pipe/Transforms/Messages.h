//===- Messages.h - per-rank send/recv orders and their checks --*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The per-rank view as plain data: each rank's program is a list of events
// (local work, a send to a peer, a receive from a peer, each message with a
// tag). `verifyMessages` is the proof obligation of `pipe-project-ranks`'s
// output, which `pipe-verify-schedule` checks on per-rank programs:
//
// - peers are other ranks of the pipeline;
// - for every ordered pair (s, d), the i-th send of s to d and the i-th
//   receive of d from s carry the same tag and type (messages of a pair are
//   received in the order they are sent, as NCCL and MPI deliver them), no
//   tag repeats within a pair, and no message is left unmatched;
// - collectives (a shared weight's gradient all-reduce): every rank of a
//   group runs the group's collectives in the same order, on the same
//   accumulator and type;
// - no deadlock when every send and receive blocks until its peer reaches
//   the matching one, and every collective until its whole group has (rendezvous, the strictest semantics: a program that
//   completes under it completes under buffered sends too).
//
// `projectMessages` models the projection of a schedule (the unroller's
// global order, transfers right after their producer, receives sunk past
// local work) for unit tests that mutate valid per-rank programs.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_DIALECT_PIPE_TRANSFORMS_MESSAGES_H
#define PIPEDREAM_DIALECT_PIPE_TRANSFORMS_MESSAGES_H

#include "pipedream/Dialect/Pipe/Transforms/Schedule.h"

#include <string>
#include <vector>

namespace pipedream {
namespace pipe {
namespace schedule {

/// One step of a per-rank program.
struct Event {
  enum Kind { Compute, Send, Recv, Collective };
  Kind kind = Compute;
  int64_t peer = -1;
  int64_t tag = -1;
  /// The message's type as text (compared for equality only).
  std::string type;
  /// Compute: what it is ("F of stage 1 micro-batch 2"); Recv: the
  /// action that reads the message (optional, for diagnostics).
  std::string what;
  /// Collective: the ranks taking part (ascending, this one among them).
  /// The i-th collective of a group on each of its ranks is one operation:
  /// same `what` (what it reduces) and type; it completes once every rank
  /// of the group has reached it.
  std::vector<int64_t> group;
};

/// Each rank's events in program order.
using RankEvents = std::vector<std::vector<Event>>;

/// Checks `ranks` (see the file comment). Returns an empty message, or the
/// first error with the rank and event index it is about.
Diagnostic verifyMessages(const RankEvents &ranks);

/// Per-rank events of `schedule` as `pipe-project-ranks` produces them from
/// `pipe-unroll-schedule`'s output: actions in the global order (unit-cost
/// simulated start, then rank, then position), a message after every F
/// (activation, to the next virtual stage) and every B (gradient, to the
/// previous one) that crosses ranks, tags counted per (source,
/// destination) pair, receives sunk past local work. The schedule must be
/// valid.
RankEvents projectMessages(const Schedule &schedule);

} // namespace schedule
} // namespace pipe
} // namespace pipedream

#endif // PIPEDREAM_DIALECT_PIPE_TRANSFORMS_MESSAGES_H
