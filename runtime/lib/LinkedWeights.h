//===- LinkedWeights.h - a rank's weights file linked from the model -*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// A rank weights file marked `weights_file_linked` in bundle.json is a hard
// link of the model's ONNX external data (docs/Bundle.md "Linked weight
// files"): the compiler wrote no copy. Rewriting the model's file in place
// would change the bundle's weights too, so the loader compares the file's
// size and modification time with the compiler's and refuses a changed
// file with a one-line error (PD_ERROR_FORMAT). Internal to the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_RUNTIME_LIB_LINKEDWEIGHTS_H
#define PIPEDREAM_RUNTIME_LIB_LINKEDWEIGHTS_H

#include <cstdint>
#include <string>

namespace pipedream {
namespace runtime {

/// Throws Error unless `path` has `bytes` bytes and was last modified at
/// `mtimeNs` (nanoseconds since the epoch).
void checkLinkedWeightsFile(const std::string &path, uint64_t bytes,
                            int64_t mtimeNs);

} // namespace runtime
} // namespace pipedream

#endif // PIPEDREAM_RUNTIME_LIB_LINKEDWEIGHTS_H
