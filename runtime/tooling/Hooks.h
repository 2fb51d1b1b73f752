//===- Hooks.h - test hooks of the training loops -------------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Where tests reach into the training loops (a rank that crashes or hangs,
// a process killed after a step). The shipped pipedream-run installs none;
// the test-only pipedream-run-test (tools/pipedream-run/TestHooks.cpp)
// installs hooks driven by $PIPEDREAM_TEST_* variables.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_TOOLING_HOOKS_H
#define PIPEDREAM_TOOLING_HOOKS_H

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace pipedream {
namespace tooling {

struct Hooks {
  /// Called by every pipeline rank at the start of step `step` (from 1);
  /// a non-empty result ends the rank with that error. `failed` is set
  /// once another rank failed (so a hanging rank can stop).
  std::function<std::string(size_t rank, uint64_t step,
                            const std::atomic<bool> &failed)>
      beforeStep;
  /// Called once step `step` and its checkpoint are done (rank 0 for a
  /// one-rank bundle).
  std::function<void(size_t rank, uint64_t step)> afterStep;
};

/// Installs the hooks (before any training starts).
void setHooks(Hooks hooks);
/// The installed hooks (none by default).
const Hooks &hooks();

} // namespace tooling
} // namespace pipedream

#endif // PIPEDREAM_TOOLING_HOOKS_H
