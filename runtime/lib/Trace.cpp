//===- Trace.cpp - measured events of trainers and pipelines --------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// pd_trainer_set_tracing / _trace_count / _trace_event / _trace_clear and
// the pd_rank_ equivalents (docs/Runtime.md "Traces").
//
//===----------------------------------------------------------------------===//

#include "Trace.h"

#include "Bundle.h"

#include <chrono>

namespace pipedream {
namespace runtime {
double traceNow() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
} // namespace runtime
} // namespace pipedream

using pipedream::runtime::nullArgument;
using pipedream::runtime::traceLogOf;

namespace {
template <typename T>
pd_status setTracing(T *object, int enabled, const char *caller) {
  if (!object)
    return nullArgument(caller, "object");
  traceLogOf(*object).enabled = enabled != 0;
  return PD_OK;
}

template <typename T>
pd_status traceEvent(T *object, size_t index, pd_trace_event *out,
                     const char *caller) {
  if (!object)
    return nullArgument(caller, "object");
  if (!out)
    return nullArgument(caller, "out");
  const auto &events = traceLogOf(*object).events;
  if (index >= events.size())
    return pipedream::runtime::fail(
        PD_ERROR_INVALID_ARGUMENT,
        std::string(caller) + ": index " + std::to_string(index) +
            " out of range (" + std::to_string(events.size()) + " events)");
  *out = events[index];
  return PD_OK;
}

template <typename T> size_t traceCount(T *object) {
  return object ? traceLogOf(*object).events.size() : 0;
}

template <typename T> void traceClear(T *object) {
  if (object)
    traceLogOf(*object).events.clear();
}
} // namespace

pd_status pd_trainer_set_tracing(pd_trainer *trainer, int enabled) {
  return setTracing(trainer, enabled, "pd_trainer_set_tracing");
}
size_t pd_trainer_trace_count(pd_trainer *trainer) {
  return traceCount(trainer);
}
pd_status pd_trainer_trace_event(pd_trainer *trainer, size_t index,
                                 pd_trace_event *out) {
  return traceEvent(trainer, index, out, "pd_trainer_trace_event");
}
void pd_trainer_trace_clear(pd_trainer *trainer) { traceClear(trainer); }

pd_status pd_rank_set_tracing(pd_rank *pipeline, int enabled) {
  return setTracing(pipeline, enabled, "pd_rank_set_tracing");
}
size_t pd_rank_trace_count(pd_rank *pipeline) { return traceCount(pipeline); }
pd_status pd_rank_trace_event(pd_rank *pipeline, size_t index,
                              pd_trace_event *out) {
  return traceEvent(pipeline, index, out, "pd_rank_trace_event");
}
void pd_rank_trace_clear(pd_rank *pipeline) { traceClear(pipeline); }
