//===- pipedream/rank_threads.h - every rank on a thread --------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Runs every rank of a pipeline bundle as a thread of this process over the
// threads transport (pd_transport_create_threads), as pipedream-run
// `--transport threads` and the Python package's PipelineTrainer do. A rank
// that fails aborts its transport, so the others stop waiting for it and
// fail at once naming it (or within the timeout).
//
// Part of the runtime library (libpipedream_runtime), C++17; nothing here
// throws.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_RANK_THREADS_H
#define PIPEDREAM_RANK_THREADS_H

#include "pipedream/runtime.h"

#include <functional>
#include <string>
#include <vector>

namespace pipedream {

/// What one rank's body reports.
struct RankOutcome {
  /// "" when the rank succeeded, else its error.
  std::string error;
  /// With an error: whether to abort the rank's transport (false when every
  /// rank already agreed on the failure, so nobody waits for this one).
  bool abort = true;
};

/// Runs `body(rank)` on one thread per rank, `transports[rank]` being the
/// rank's transport; a rank whose outcome is an error with `abort` aborts
/// its transport with that message. Returns once every rank has ended:
/// each rank's outcome, by rank.
std::vector<RankOutcome>
runRanksOnThreads(const std::vector<pd_transport *> &transports,
                  const std::function<RankOutcome(size_t rank)> &body);

} // namespace pipedream

#endif // PIPEDREAM_RANK_THREADS_H
