//===- TraceWriter.cpp - pipedream-run --trace ------------------------------===
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// --trace: the measured Chrome trace of a run (one lane per rank, one slice
// per call, send, receive and step) and the measured bubble fraction.
//
//===----------------------------------------------------------------------===//

#include "TraceWriter.h"

#include "pipedream/onnx_writer.h" // writeFileAtomically

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

namespace pipedream {
namespace tooling {

namespace {

/// "F3 s1" (action, micro-batch, stage) as pipedream-compile --trace
/// names slices; "send to 1 (tag 3)", "recv from 1 (tag 3)" ("(tags 3,
/// 4)" for a message group, runtime/lib/MessageGroups.h), "all-reduce
/// NAME", "all-gather NAME", "agree on the step" (the ranks' exchange of
/// the step's status before its first update), "step 4"; an evaluation's
/// (action E): "E2 s1" and "evaluation after step 4" (`step`: the steps
/// run before it).
std::string sliceName(const pd_trace_event &e, uint64_t step) {
  std::string op = e.op;
  if (op == "call") {
    std::string name = *e.action ? e.action : e.function;
    if (e.microbatch >= 0)
      name += std::to_string(e.microbatch);
    if (e.stage >= 0)
      name += " s" + std::to_string(e.stage);
    return name;
  }
  if (op == "send" || op == "recv")
    return op + (op == "send" ? " to " : " from ") + std::to_string(e.peer) +
           " (" +
           (*e.function ? std::string(e.function)
                        : "tag " + std::to_string(e.tag)) +
           ")";
  if (op == "all_reduce")
    return std::string("all-reduce ") + e.function;
  if (op == "all_gather")
    return std::string("all-gather ") + e.function;
  if (op == "agree")
    return std::string("agree on the ") +
           (std::string(e.action) == "E" ? "evaluation" : "step");
  if (op == "evaluate")
    return "evaluation after step " + std::to_string(step);
  return "step " + std::to_string(step);
}

} // namespace

/// The Chrome-trace slices of one rank's events (absolute times; rebased
/// when written): calls, sends, receives (the time spent waiting),
/// collectives, the step agreement and steps; evaluations (action E: their
/// calls, messages and agreement, and the whole), whose args have
/// `after_step` instead of `step`. Only a step's calls count as busy in
/// the measured bubble. `firstStep` is the run's step of the object's
/// step 0 (after a resume).
nlohmann::json traceSlices(size_t rank, const std::vector<pd_trace_event> &events,
                           uint64_t firstStep) {
  nlohmann::json slices = nlohmann::json::array();
  for (const pd_trace_event &e : events) {
    std::string op = e.op;
    if (op != "call" && op != "send" && op != "recv" && op != "step" &&
        op != "all_reduce" && op != "all_gather" && op != "agree" &&
        op != "evaluate")
      continue;
    // An evaluation follows the steps run so far (e.step of them).
    const bool evaluation = std::string(e.action) == "E";
    uint64_t step = firstStep + e.step + (evaluation ? 0 : 1);
    nlohmann::json args = {{"rank", rank},
                           {evaluation ? "after_step" : "step", step}};
    if (op == "call") {
      args["function"] = e.function;
      args["action"] = e.action;
      args["stage"] = e.stage;
      args["microbatch"] = e.microbatch;
    } else if (op == "all_reduce" || op == "all_gather") {
      args["buffer"] = e.function;
    } else if (op == "send" || op == "recv") {
      args["peer"] = e.peer;
      args["tag"] = e.tag;
    }
    slices.push_back(
        {{"name", sliceName(e, step)},
         {"cat", (op == "call" || evaluation) && *e.action ? e.action : e.op},
         {"ph", "X"},
         {"pid", 0},
         {"tid", rank},
         {"ts", e.start_us},
         {"dur", e.end_us - e.start_us},
         {"args", args}});
  }
  return slices;
}

/// The measured bubble fraction of the last step in `slices`: the time
/// the ranks did not spend in calls over ranks x the step's span (first
/// rank's start to last rank's end). NaN without steps.
double measuredBubble(const nlohmann::json &slices, size_t ranks) {
  uint64_t last = 0;
  for (const auto &slice : slices)
    if (slice["args"].contains("step"))
      last = std::max(last, slice["args"]["step"].get<uint64_t>());
  double begin = INFINITY, end = -INFINITY, busy = 0;
  for (const auto &slice : slices) {
    if (!slice["args"].contains("step") ||
        slice["args"]["step"].get<uint64_t>() != last)
      continue;
    double ts = slice["ts"].get<double>(), dur = slice["dur"].get<double>();
    if (slice["name"].get<std::string>().rfind("step ", 0) == 0) {
      begin = std::min(begin, ts);
      end = std::max(end, ts + dur);
    } else if (slice["args"].contains("function")) {
      busy += dur;
    }
  }
  if (!(end > begin) || ranks == 0)
    return NAN;
  return std::max(0.0, 1.0 - busy / (static_cast<double>(ranks) * (end - begin)));
}

/// Writes --trace: metadata lanes, the slices rebased to the earliest one,
/// and `otherData` with the measured (and, from OUT_DIR/report.json, the
/// simulated) bubble fraction, which pipelines also print.
bool writeTrace(const Options &options, size_t ranks, bool pipeline,
                nlohmann::json slices, std::string &message) {
  double origin = INFINITY;
  for (const auto &slice : slices)
    origin = std::min(origin, slice["ts"].get<double>());
  for (auto &slice : slices)
    slice["ts"] = slice["ts"].get<double>() - origin;
  double measured = measuredBubble(slices, ranks);
  nlohmann::json simulated = nullptr;
  {
    std::ifstream in(options.bundleDir + "/report.json");
    if (in) {
      nlohmann::json report = nlohmann::json::parse(in, nullptr, false);
      if (!report.is_discarded() && report.is_object() &&
          report.contains("bubble_fraction") &&
          report["bubble_fraction"].is_number())
        simulated = report["bubble_fraction"];
    }
  }
  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"name", "process_name"},
                    {"ph", "M"},
                    {"pid", 0},
                    {"args", {{"name", "pipedream-run " + options.bundleDir}}}});
  for (size_t r = 0; r < ranks; ++r) {
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", 0},
                      {"tid", r},
                      {"args", {{"name", "rank " + std::to_string(r)}}}});
    events.push_back({{"name", "thread_sort_index"},
                      {"ph", "M"},
                      {"pid", 0},
                      {"tid", r},
                      {"args", {{"sort_index", r}}}});
  }
  for (auto &slice : slices)
    events.push_back(std::move(slice));
  nlohmann::json root = {
      {"traceEvents", events},
      {"displayTimeUnit", "ms"},
      {"otherData",
       {{"ranks", ranks},
        {"measured_bubble_fraction",
         std::isnan(measured) ? nlohmann::json(nullptr)
                              : nlohmann::json(measured)},
        {"simulated_bubble_fraction", simulated}}}};
  if (pipeline && !std::isnan(measured)) {
    std::printf("bubble fraction: measured %.1f%% (last step, %zu ranks)",
                100 * measured, ranks);
    if (simulated.is_number())
      std::printf(", simulated %.1f%% (report.json)",
                  100 * simulated.get<double>());
    std::printf("\n");
    std::fflush(stdout);
  }
  return writeFileAtomically(options.trace, root.dump(1) + "\n", message);
}

} // namespace tooling
} // namespace pipedream
