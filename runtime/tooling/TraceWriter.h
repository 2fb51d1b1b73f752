//===- TraceWriter.h - pipedream-run --trace ------------------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// --trace: Chrome traces of a run with measured durations.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_TOOLING_TRACE_WRITER_H
#define PIPEDREAM_TOOLING_TRACE_WRITER_H

#include "Options.h"

#include "pipedream/runtime.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace pipedream {
namespace tooling {

/// The Chrome-trace slices of one rank's events (absolute times; rebased
/// when written): calls, sends, receives (the time spent waiting) and
/// steps. `firstStep` is the run's step of the object's step 0 (after a
/// resume).
nlohmann::json traceSlices(size_t rank,
                           const std::vector<pd_trace_event> &events,
                           uint64_t firstStep);

/// The events recorded by a trainer or pipeline.
template <typename Count, typename At>
std::vector<pd_trace_event> traceEvents(Count count, At at) {
  std::vector<pd_trace_event> events(count());
  for (size_t i = 0; i < events.size(); ++i)
    at(i, &events[i]);
  return events;
}

/// The measured bubble fraction of the last step in `slices`: the time
/// the ranks did not spend in calls over ranks x the step's span (first
/// rank's start to last rank's end). NaN without steps.
double measuredBubble(const nlohmann::json &slices, size_t ranks);

/// Writes --trace: metadata lanes, the slices rebased to the earliest one,
/// and `otherData` with the measured (and, from OUT_DIR/report.json, the
/// simulated) bubble fraction, which pipelines also print.
bool writeTrace(const Options &options, size_t ranks, bool pipeline,
                nlohmann::json slices, std::string &message);

} // namespace tooling
} // namespace pipedream

#endif // PIPEDREAM_TOOLING_TRACE_WRITER_H
