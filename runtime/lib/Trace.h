//===- Trace.h - measured events of trainers and pipelines ------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// What pd_trainer_step and pd_rank_step record when tracing is on (one
// event per instruction and one per step, steady-clock times), read back
// through pd_trainer_trace_* / pd_rank_trace_*. Internal to the
// runtime library.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_RUNTIME_LIB_TRACE_H
#define PIPEDREAM_RUNTIME_LIB_TRACE_H

#include "pipedream/runtime.h"

#include <cstdint>
#include <vector>

namespace pipedream {
namespace runtime {

/// Microseconds of the steady clock (CLOCK_MONOTONIC on Linux: comparable
/// between the processes of one machine).
double traceNow();

/// The events of one trainer or pipeline. NOTE: the strings are the
/// bundle's (manifest names) or literals, valid while the bundle is open.
struct TraceLog {
  bool enabled = false;
  /// Steps run since creation (the next step's index).
  uint64_t steps = 0;
  std::vector<pd_trace_event> events;

  void add(const char *op, const char *function, const char *action,
           int64_t stage, int64_t microbatch, int64_t peer, int64_t tag,
           double start) {
    events.push_back(pd_trace_event{op, function, action, stage, microbatch,
                                    peer, tag, steps, start, traceNow()});
  }
};

/// The trace of a trainer (Runtime.cpp) or pipeline (Pipeline.cpp).
TraceLog &traceLogOf(pd_trainer &trainer);
TraceLog &traceLogOf(pd_rank &pipeline);

} // namespace runtime
} // namespace pipedream

#endif // PIPEDREAM_RUNTIME_LIB_TRACE_H
