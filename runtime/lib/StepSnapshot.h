//===- StepSnapshot.h - undoing a failed training step ----------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The values of the persistent buffers a training step may change (weights,
// optimizer state, step counters, BatchNorm running statistics, dropout
// seeds), saved at the start of the step and put back when the step fails
// a run-time check (docs/Runtime.md "Run-time checks"). CPU buffers are
// copied in host memory; a cuda buffer whose current value is on the device
// is copied device to device, so a GPU step downloads nothing. Internal to
// the runtime library.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_RUNTIME_LIB_STEPSNAPSHOT_H
#define PIPEDREAM_RUNTIME_LIB_STEPSNAPSHOT_H

#include "GpuDevice.h"

#include <cstddef>
#include <vector>

struct pd_buffer;

namespace pipedream {
namespace runtime {

class StepSnapshot {
public:
  /// Adds `buffer` (once; repeated adds are ignored).
  void add(pd_buffer *buffer);
  /// Saves every buffer's current value. Throws Error (device copies).
  void save();
  /// Forgets the saved values (a step that cannot fail a check: no
  /// checks in the bundle, check-finite off), so restore() does nothing.
  void skip() { saved = false; }
  /// Puts every saved value back. Throws Error (device copies).
  void restore();
  /// Bytes the snapshot holds (host and device), for docs and benchmarks.
  size_t bytes() const;
  bool empty() const { return entries.empty(); }

private:
  struct Entry {
    pd_buffer *buffer = nullptr;
    std::vector<unsigned char> host;
    DeviceMemory device;
    /// The saved value is `device` (else `host`).
    bool onDevice = false;
  };
  std::vector<Entry> entries;
  bool saved = false;
};

} // namespace runtime
} // namespace pipedream

#endif // PIPEDREAM_RUNTIME_LIB_STEPSNAPSHOT_H
