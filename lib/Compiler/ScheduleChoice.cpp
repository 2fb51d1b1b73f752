//===- ScheduleChoice.cpp - --schedule auto over partitions ---------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Compiler/ScheduleChoice.h"

#include "pipedream/Support/Diagnostics.h"

#include <algorithm>
#include <limits>

using namespace mlir;
using namespace pipedream;
namespace sched = pipedream::pipe::schedule;

sched::ReportOptions
pipedream::reportOptionsFromPartition(const PartitionReport &report,
                                      const sched::Config &config,
                                      int64_t optimizerStates, double scale) {
  bool split = config.splitsBackward();
  sched::ReportOptions options;
  sched::Costs costs;
  for (const StageReport &stage : report.stageReports) {
    sched::Costs::Stage c;
    c.forward = scale * (stage.cost.forward + stage.cost.comm / 2);
    c.backward =
        scale * (split ? stage.cost.backwardInput + stage.cost.comm / 2
                       : stage.cost.backwardInput + stage.cost.backwardWeight +
                             stage.cost.comm / 2);
    c.weightGrad = split ? scale * stage.cost.backwardWeight : 0;
    // Recomputation: B runs the forward again first.
    if (stage.cost.recompute)
      c.backward += scale * stage.cost.forward;
    costs.perStage.push_back(c);
    // A recomputing stage stashes its inputs per micro-batch in flight and
    // holds one micro-batch's activations while its backward runs; with a
    // split backward, B hands W what it reads of them (at most all), held
    // from B to W.
    auto activations =
        static_cast<int64_t>(scale * double(stage.cost.activationBytes));
    sched::StageMemory memory;
    memory.parameterBytes = stage.cost.parameterBytes;
    memory.activationBytes =
        static_cast<int64_t>(scale * double(stage.cost.stashBytes));
    memory.fixedBytes = stage.cost.frozenBytes;
    if (stage.cost.recompute && split)
      memory.weightGradBytes = activations;
    else if (stage.cost.recompute)
      memory.fixedBytes += activations;
    options.memory.push_back(memory);
  }
  options.costs = costs;
  options.optimizerStates = optimizerStates;
  return options;
}

FailureOr<ScheduleChoice>
pipedream::chooseSchedule(MLIRContext *context,
                          const ScheduleChoiceOptions &o) {
  int64_t k = std::max<int64_t>(1, o.stages);
  std::vector<int64_t> ms;
  if (o.fixedBatch) {
    std::vector<int64_t> tries = o.microbatches;
    if (tries.empty())
      tries = {k, 2 * k, 4 * k};
    for (int64_t m : tries)
      if (m >= 1 && o.batchSize % m == 0 &&
          std::find(ms.begin(), ms.end(), m) == ms.end())
        ms.push_back(m);
  } else {
    ms = {o.importMicrobatches};
  }
  if (ms.empty())
    return emitError(context)
           << "--schedule auto: no micro-batch count to try divides the batch "
              "of " +
                  std::to_string(o.batchSize);
  sched::SearchOptions search;
  search.numRanks = k;
  search.microbatches = ms;
  search.chunks = o.chunks;
  search.memoryLimit = o.memoryLimitBytes;
  std::string firstError;
  ScheduleChoice choice;
  std::vector<sched::Config> unpartitioned;
  search.optionsOf = [&](const sched::Config &c) {
    std::string err;
    FailureOr<PartitionReport> report = o.partitionOf(c, err);
    if (failed(report)) {
      if (firstError.empty())
        firstError = std::string(sched::kindName(c.kind)) + " V=" +
                     std::to_string(c.numChunks) + " M=" +
                     std::to_string(c.numMicrobatches) + ": " + err;
      // No partition of it exists: dropped below.
      unpartitioned.push_back(c);
      choice.unpartitioned.push_back({c, err});
      return sched::ReportOptions();
    }
    double scale = o.fixedBatch ? double(o.importMicrobatches) /
                                      double(c.numMicrobatches)
                                : 1.0;
    return reportOptionsFromPartition(*report, c, o.optimizerStates,
                                      scale);
  };
  for (sched::SearchCandidate &c : sched::searchSchedules(search)) {
    bool dropped = std::any_of(unpartitioned.begin(), unpartitioned.end(),
                               [&](const sched::Config &f) {
                                 return f.kind == c.config.kind &&
                                        f.numChunks == c.config.numChunks &&
                                        f.numMicrobatches ==
                                            c.config.numMicrobatches;
                               });
    if (!dropped)
      choice.candidates.push_back(std::move(c));
  }
  if (choice.candidates.empty())
    return emitError(context)
           << "--schedule auto: no valid schedule for " + std::to_string(k) +
                  " stages" +
                  (firstError.empty() ? "" : " (" + firstError + ")");
  if (!choice.candidates.front().fits) {
    int64_t peak = std::numeric_limits<int64_t>::max();
    for (const sched::SearchCandidate &c : choice.candidates)
      if (!c.peakMemoryBytes.empty())
        peak = std::min(peak, *std::max_element(c.peakMemoryBytes.begin(),
                                                c.peakMemoryBytes.end()));
    return emitError(context)
           << "--schedule auto: no schedule fits --memory-limit ("
           << o.memoryLimitBytes << " bytes per rank); the smallest peak is "
           << peak << " bytes";
  }
  choice.config = choice.candidates.front().config;
  return choice;
}
