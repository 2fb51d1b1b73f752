//===- ScheduleSearch.cpp - pick the schedule with the shortest step ------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Dialect/Pipe/Transforms/ScheduleSearch.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace pipedream {
namespace pipe {
namespace schedule {

/// Unit work per step: F = 1, backward 2 per stage, over V chunks and M
/// micro-batches.
static ReportOptions defaultOptions(const Config &c) {
  double share = 1.0 / double(c.numChunks * c.numMicrobatches);
  Costs costs;
  costs.forward = share;
  if (c.splitsBackward()) {
    costs.backward = share;
    costs.weightGrad = share;
  } else {
    costs.backward = 2 * share;
    costs.weightGrad = 0;
  }
  ReportOptions options;
  options.costs = costs;
  return options;
}

std::vector<SearchCandidate> searchSchedules(const SearchOptions &options) {
  std::vector<SearchCandidate> out;
  for (Kind kind : allKinds()) {
    Config probe{kind, options.numRanks, 1, 1};
    if (options.synchronousOnly && !probe.isSynchronous())
      continue;
    bool takesChunks = kind == Kind::Interleaved1F1B ||
                       kind == Kind::InterleavedZB || probe.isVShaped();
    std::vector<int64_t> chunks =
        probe.isVShaped() ? std::vector<int64_t>{2}
        : takesChunks     ? options.chunks
                          : std::vector<int64_t>{1};
    for (int64_t v : chunks)
      for (int64_t m : options.microbatches) {
        Config c{kind, options.numRanks, m, v};
        if (!validate(c).empty())
          continue;
        Schedule s = buildSchedule(c);
        Report r = buildReport(s, options.optionsOf ? options.optionsOf(c)
                                                    : defaultOptions(c));
        if (!r.verified)
          continue;
        SearchCandidate cand;
        cand.config = c;
        cand.stepTime = r.makespan;
        cand.bubbleFraction = r.bubbleFraction;
        cand.peakMemoryBytes = r.peakMemoryBytes;
        if (options.memoryLimit > 0)
          for (int64_t bytes : r.peakMemoryBytes)
            cand.fits &= bytes <= options.memoryLimit;
        out.push_back(cand);
      }
  }
  auto kindIndex = [](Kind k) {
    const auto &all = allKinds();
    return std::find(all.begin(), all.end(), k) - all.begin();
  };
  auto peak = [](const SearchCandidate &c) {
    return c.peakMemoryBytes.empty()
               ? 0
               : *std::max_element(c.peakMemoryBytes.begin(),
                                   c.peakMemoryBytes.end());
  };
  std::stable_sort(out.begin(), out.end(),
                   [&](const SearchCandidate &a, const SearchCandidate &b) {
                     if (a.fits != b.fits)
                       return a.fits;
                     // Step times equal up to rounding compare as equal.
                     double scale = std::max(a.stepTime, b.stepTime);
                     if (std::abs(a.stepTime - b.stepTime) > 1e-9 * scale)
                       return a.stepTime < b.stepTime;
                     if (peak(a) != peak(b))
                       return peak(a) < peak(b);
                     return kindIndex(a.config.kind) <
                            kindIndex(b.config.kind);
                   });
  return out;
}

std::string candidatesTable(const std::vector<SearchCandidate> &candidates) {
  std::string out =
      "  kind              V    M   step time   bubble  peak memory/rank\n";
  for (size_t i = 0; i < candidates.size(); ++i) {
    const SearchCandidate &c = candidates[i];
    char line[160];
    std::snprintf(line, sizeof(line), "%s %-16s %2lld %4lld %11.6g %8.4f ",
                  i == 0 && c.fits ? "*" : " ", kindName(c.config.kind),
                  (long long)c.config.numChunks,
                  (long long)c.config.numMicrobatches, c.stepTime,
                  c.bubbleFraction);
    out += line;
    for (size_t r = 0; r < c.peakMemoryBytes.size(); ++r)
      out += (r ? " " : "") + std::to_string(c.peakMemoryBytes[r]);
    out += c.fits ? "\n" : "  (over the memory limit)\n";
  }
  return out;
}

} // namespace schedule
} // namespace pipe
} // namespace pipedream
