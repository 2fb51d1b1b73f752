//===- PeakMemory.cpp - measured peak memory of the ranks -----------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "PeakMemory.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>

#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

namespace pipedream::run {

uint64_t peakResidentBytes() {
  struct rusage usage;
  if (getrusage(RUSAGE_SELF, &usage) != 0 || usage.ru_maxrss < 0)
    return 0;
  return static_cast<uint64_t>(usage.ru_maxrss) * 1024; // Linux: KiB
}

uint64_t currentResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  if (!(statm >> size >> resident))
    return 0;
  long page = sysconf(_SC_PAGESIZE);
  return resident * static_cast<uint64_t>(page > 0 ? page : 4096);
}

uint64_t residentBytesAfterRelease() {
  malloc_trim(0);
  return currentResidentBytes();
}

namespace {
std::string mib(double bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f MiB", bytes / (1024.0 * 1024.0));
  return text;
}
} // namespace

std::string describePeakMemory(const std::string &bundleDir,
                               const std::vector<ResidentMemory> &measured,
                               bool threads, size_t ranks) {
  std::vector<double> reported;
  {
    std::ifstream in(bundleDir + "/report.json");
    if (in) {
      nlohmann::json report = nlohmann::json::parse(in, nullptr, false);
      // `rank_memory` (what the runtime allocates per rank, written with
      // pipeline bundles) when present, else the schedule's memory model.
      if (!report.is_discarded() && report.is_object() &&
          report.contains("rank_memory") && report["rank_memory"].is_array()) {
        for (const auto &v : report["rank_memory"])
          reported.push_back(v.is_object() && v.contains("total_bytes") &&
                                     v["total_bytes"].is_number()
                                 ? v["total_bytes"].get<double>()
                                 : -1);
      } else if (!report.is_discarded() && report.is_object() &&
                 report.contains("peak_memory_bytes") &&
                 report["peak_memory_bytes"].is_array()) {
        for (const auto &v : report["peak_memory_bytes"])
          reported.push_back(v.is_number() ? v.get<double>() : -1);
      }
    }
  }
  if (reported.size() != ranks)
    reported.clear();
  auto line = [&](const ResidentMemory &m, double promised) {
    double grown = m.peak > m.start ? double(m.peak - m.start) : 0.0;
    std::string text = mib(m.peak) + " peak, " + mib(grown) +
                       " above the " + mib(m.start) + " at start";
    if (promised > 0) {
      char diff[128];
      // NOTE: a difference under 1 MiB is the measurement's own noise (the
      // allocator's arenas, lazily touched library pages), not the
      // report's error: a percentage of a tiny model's bytes misleads.
      const double delta = grown - promised;
      if (std::fabs(delta) < 1024.0 * 1024.0)
        std::snprintf(diff, sizeof(diff),
                      "; report.json: %s (%+.1f MiB: under 1 MiB, within "
                      "the measurement's noise)",
                      mib(promised).c_str(), delta / (1024.0 * 1024.0));
      else
        std::snprintf(diff, sizeof(diff), "; report.json: %s (%+.1f%%)",
                      mib(promised).c_str(), 100.0 * delta / promised);
      text += diff;
    }
    return text;
  };
  if (threads) {
    double total = 0;
    for (double r : reported)
      total += r > 0 ? r : 0;
    return "peak memory (one process, " + std::to_string(ranks) +
           " rank threads): " +
           line(measured.empty() ? ResidentMemory() : measured[0], total) +
           "\n";
  }
  std::string out = "peak memory per rank (resident set size):\n";
  for (size_t r = 0; r < measured.size(); ++r)
    out += "  rank " + std::to_string(r) + ": " +
           line(measured[r], r < reported.size() ? reported[r] : 0) + "\n";
  return out;
}

} // namespace pipedream::run
