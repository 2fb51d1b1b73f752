//===- ShmChannel.cpp - one-way message channel in shared memory ----------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "ShmChannel.h"

#include <cstring>
#include <new>

namespace pipedream {
namespace runtime {

static_assert(std::atomic<uint64_t>::is_always_lock_free &&
                  std::atomic<uint32_t>::is_always_lock_free,
              "the channel's atomics must be lock-free to work between "
              "processes");

namespace {

constexpr size_t roundUp64(size_t n) { return (n + 63) / 64 * 64; }

/// Offsets of the parts of a channel of `shape`.
struct Layout {
  size_t published = 0, collected = 64, full = 128, filled, notices, slots,
         total;
  explicit Layout(const ShmChannelShape &shape) {
    filled = full + roundUp64(sizeof(std::atomic<uint32_t>) * shape.slots);
    notices = filled + 64 * size_t(shape.slots);
    slots = notices + roundUp64(sizeof(ShmNotice) * shape.notices);
    total = slots + size_t(shape.slots) * roundUp64(shape.slotBytes);
  }
};

} // namespace

size_t ShmChannel::bytes(const ShmChannelShape &shape) {
  return Layout(shape).total;
}

void ShmChannel::initialize(void *memory, const ShmChannelShape &shape) {
  Layout layout(shape);
  auto *base = static_cast<unsigned char *>(memory);
  new (base + layout.published) Counter{{0}};
  new (base + layout.collected) Counter{{0}};
  auto *full = reinterpret_cast<std::atomic<uint32_t> *>(base + layout.full);
  for (uint32_t s = 0; s < shape.slots; ++s) {
    new (full + s) std::atomic<uint32_t>(0);
    new (base + layout.filled + 64 * size_t(s)) Counter{{0}};
  }
  std::atomic_thread_fence(std::memory_order_release);
}

ShmChannel::ShmChannel(void *memory, const ShmChannelShape &shape)
    : shape_(shape) {
  Layout layout(shape);
  auto *base = static_cast<unsigned char *>(memory);
  published_ = reinterpret_cast<Counter *>(base + layout.published);
  collected_ = reinterpret_cast<Counter *>(base + layout.collected);
  full_ = reinterpret_cast<std::atomic<uint32_t> *>(base + layout.full);
  filled_ = reinterpret_cast<Counter *>(base + layout.filled);
  notices_ = reinterpret_cast<ShmNotice *>(base + layout.notices);
  slots_ = base + layout.slots;
}

int32_t ShmChannel::claimSlot(uint64_t bytes) {
  if (bytes > shape_.slotBytes)
    return -1;
  // The lowest free slot: while the receiver keeps up that is the slot it
  // copied out of last, whose lines are the likeliest still cached (issue
  // 21: round robin over 4 slots wrote lines gone cold over 3 other
  // messages; a 128 KiB send of bench/pipeline.py's K=2 GPT took 18 -> 14
  // us).
  for (uint32_t slot = 0; slot < shape_.slots; ++slot) {
    // Acquire: the receiver's copy out of the slot is complete before the
    // slot is written again.
    if (full_[slot].load(std::memory_order_acquire) == 0) {
      // Only the sender sets a slot full; the notice that names it is
      // published with release, after these stores.
      full_[slot].store(1, std::memory_order_relaxed);
      filled_[slot].value.store(0, std::memory_order_relaxed);
      return static_cast<int32_t>(slot);
    }
  }
  return -1;
}

unsigned char *ShmChannel::slotData(int32_t slot) const {
  return slots_ + size_t(slot) * roundUp64(shape_.slotBytes);
}

bool ShmChannel::tryPublish(const ShmNotice &notice) {
  uint64_t published = published_->value.load(std::memory_order_relaxed);
  // Acquire: the receiver has read the notices it collected before their
  // places are written again.
  uint64_t collected = collected_->value.load(std::memory_order_acquire);
  if (published - collected >= shape_.notices)
    return false;
  notices_[published % shape_.notices] = notice;
  // Release: the notice (and its slot's empty fill count) are visible to
  // the receiver once it sees the count.
  published_->value.store(published + 1, std::memory_order_release);
  return true;
}

void ShmChannel::collect(std::deque<ShmNotice> &pending) {
  uint64_t collected = collected_->value.load(std::memory_order_relaxed);
  uint64_t published = published_->value.load(std::memory_order_acquire);
  if (published == collected)
    return;
  for (uint64_t n = collected; n < published; ++n)
    pending.push_back(notices_[n % shape_.notices]);
  collected_->value.store(published, std::memory_order_release);
}

void ShmChannel::markFilled(int32_t slot, uint64_t bytes) {
  // Release: the bytes are visible to the receiver once it sees the count.
  filled_[slot].value.store(bytes, std::memory_order_release);
}

uint64_t ShmChannel::filled(int32_t slot) const {
  return filled_[slot].value.load(std::memory_order_acquire);
}

void ShmChannel::releaseSlot(int32_t slot) {
  full_[slot].store(0, std::memory_order_release);
}

} // namespace runtime
} // namespace pipedream
