//===- StepSnapshot.cpp - undoing a failed training step ------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "StepSnapshot.h"

#include "Bundle.h"

#include <cstring>

namespace pipedream {
namespace runtime {

void StepSnapshot::add(pd_buffer *buffer) {
  for (const Entry &entry : entries)
    if (entry.buffer == buffer)
      return;
  entries.emplace_back();
  entries.back().buffer = buffer;
}

void StepSnapshot::save() {
  saved = true;
  for (Entry &entry : entries) {
    pd_buffer &buffer = *entry.buffer;
    size_t bytes = buffer.type.numBytes;
    // NOTE: a cuda buffer's value is where its flags say; the device copy
    // is taken only when the host one is stale (no download per step).
    entry.onDevice = buffer.cuda && buffer.deviceCurrent && !buffer.hostCurrent;
    if (entry.onDevice) {
      if (!entry.device)
        entry.device = allocateDevice(bytes, "the step's copy of " + buffer.what);
      copyDeviceToDevice(entry.device.get(), buffer.device, bytes,
                         "saving " + buffer.what + " before the step: ");
      continue;
    }
    // NOTE: not ensureMemory for a cuda buffer: it would mark the device
    // copy stale and cost an upload at the next call.
    const unsigned char *memory = buffer.cuda && buffer.memory
                                      ? buffer.memory.get()
                                      : ensureMemory(buffer);
    entry.host.assign(memory, memory + bytes);
  }
}

void StepSnapshot::restore() {
  if (!saved)
    return;
  for (Entry &entry : entries) {
    pd_buffer &buffer = *entry.buffer;
    size_t bytes = buffer.type.numBytes;
    if (entry.onDevice) {
      // deviceArgument gives the buffer device memory (and makes it
      // current) whatever the step did with it; the value is overwritten.
      void *device = deviceArgument(buffer);
      copyDeviceToDevice(device, entry.device.get(), bytes,
                         "restoring " + buffer.what + " after the failed step: ");
      buffer.deviceCurrent = true;
      buffer.hostCurrent = false;
      continue;
    }
    if (!buffer.cuda) {
      std::memcpy(ensureMemory(buffer), entry.host.data(), entry.host.size());
      continue;
    }
    // The host copy becomes the value (uploaded before the next call);
    // whatever the step left on the device is dropped, not downloaded.
    if (!buffer.memory)
      buffer.memory = allocateAligned(bytes, buffer.what);
    std::memcpy(buffer.memory.get(), entry.host.data(), entry.host.size());
    buffer.hostCurrent = true;
    buffer.deviceCurrent = false;
  }
}

size_t StepSnapshot::bytes() const {
  size_t total = 0;
  for (const Entry &entry : entries)
    total += entry.onDevice ? entry.buffer->type.numBytes : entry.host.size();
  return total;
}

} // namespace runtime
} // namespace pipedream
