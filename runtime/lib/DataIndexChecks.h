//===- DataIndexChecks.h - host-side index checks of cuda data --*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The host-side run-time checks of cuda bundles (docs/Bundle.md "Run-time
// checks"): besides the status record their device code writes, the
// runtime checks, on the host and before anything is uploaded, the data
// inputs that bundle.json `data_index_checks` says are indices (a graph
// input fed directly to a Gather, ...). The message is the one the CPU
// code's status record gives. Internal to the runtime library.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_RUNTIME_LIB_DATAINDEXCHECKS_H
#define PIPEDREAM_RUNTIME_LIB_DATAINDEXCHECKS_H

#include "pipedream/runtime.h"

#include "Manifest.h"

#include <cstddef>
#include <string>

namespace pipedream {
namespace runtime {

/// A value outside `check`'s range: its row (counted from `firstRow`, so
/// row / microbatch size is the micro-batch) and the one-line message.
struct BadIndex {
  bool found = false;
  size_t row = 0;
  std::string message;
};

/// Scans `rows` sample rows of `perRow` elements from `firstRow` (modulo
/// `numSamples`, as a training step reads them) of `data` (i64 or i32;
/// other dtypes are not indices and pass). Stops at the first bad value.
BadIndex findBadIndex(const DataIndexCheck &check, pd_dtype dtype,
                      const void *data, size_t perRow, size_t numSamples,
                      size_t firstRow, size_t rows);

/// "node '/tok/Gather' (op Gather): index 500 out of range [-61, 61) in
/// input 'idx'" (the CPU status record's wording).
std::string describeBadIndex(const DataIndexCheck &check, int64_t value);

} // namespace runtime
} // namespace pipedream

#endif // PIPEDREAM_RUNTIME_LIB_DATAINDEXCHECKS_H
