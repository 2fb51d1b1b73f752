//===- PeakMemory.h - measured peak memory of the ranks ---------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// pipedream-run's last lines for a pipeline run: each rank's measured peak
// resident set size (getrusage's ru_maxrss: the high-water mark of the
// process's resident pages, anonymous and file-backed) next to the memory
// report.json promised for the rank: `rank_memory[r].total_bytes` (the
// buffers the runtime allocates, lib/Compiler/Bundle.cpp rankMemoryJSON),
// else `peak_memory_bytes` (the schedule's memory model, docs/Pipe.md).
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_TOOLS_PIPEDREAM_RUN_PEAKMEMORY_H
#define PIPEDREAM_TOOLS_PIPEDREAM_RUN_PEAKMEMORY_H

#include <cstdint>
#include <string>
#include <vector>

namespace pipedream::run {

/// This process's peak resident set size in bytes (0 if unknown).
uint64_t peakResidentBytes();
/// This process's resident set size now, in bytes (0 if unknown).
uint64_t currentResidentBytes();
/// The resident set size after the allocator gave its free memory back to
/// the system (malloc_trim): taken after a bundle was opened and closed, it
/// counts the libraries that open loaded but none of the weights it read
/// (glibc keeps freed blocks under its mmap threshold, up to 32 MiB each,
/// in its heap, where they would still count).
uint64_t residentBytesAfterRelease();

/// One process's measurements: its peak, and its resident size before the
/// bundle was opened (libraries, MPI, the data arrays: what report.json
/// does not model).
struct ResidentMemory {
  uint64_t peak = 0;
  uint64_t start = 0;
};

/// The lines to print: `measured[r]` is rank r's, one process per rank
/// (MPI); with `threads` every rank is a thread of one process and
/// `measured` holds that process's alone. Reported values come from
/// `bundleDir`/report.json when it has them; the comparison is of the
/// growth above the start, the memory the bundle's weights, gradients,
/// optimizer state, registers, workspace and code take.
std::string describePeakMemory(const std::string &bundleDir,
                               const std::vector<ResidentMemory> &measured,
                               bool threads, size_t ranks);

} // namespace pipedream::run

#endif // PIPEDREAM_TOOLS_PIPEDREAM_RUN_PEAKMEMORY_H
