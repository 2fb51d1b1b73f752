//===- ShmChannel.h - one-way message channel in shared memory --*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The MPI transport's path between two ranks of one host (TransportMpi.cpp,
// docs/Runtime.md "MPI on one host"): a channel from one sender to one
// receiver in memory both processes map (MPI_Win_allocate_shared). The
// sender claims a free slot, publishes a notice (tag, bytes, slot) and
// copies the message into the slot piece by piece, counting the bytes
// filled; the receiver takes the notices in order, copies each piece out
// of the slot into the receive's buffer as soon as it is filled (the two
// copies overlap) and frees the slot: one copy on each side, and no MPI
// call between them. A message larger than a slot, or
// sent while every slot is taken, travels over MPI; its notice (slot -1)
// still goes through the channel, so the receiver knows, message by
// message, where to take each from, and MPI's in-order delivery of one tag
// keeps the fallback messages in their order.
//
// One thread sends on a channel and one receives on it; the two sides
// share nothing but the channel's memory (lock-free atomics, which are
// address-free and so work between processes).
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_RUNTIME_LIB_SHMCHANNEL_H
#define PIPEDREAM_RUNTIME_LIB_SHMCHANNEL_H

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>

namespace pipedream {
namespace runtime {

/// The shape of a channel: `slots` message slots of `slotBytes` bytes each
/// (a multiple of 64), and a ring of `notices` notices.
struct ShmChannelShape {
  uint32_t slots = 4;
  uint64_t slotBytes = uint64_t(1) << 20;
  uint32_t notices = 1024;
};

/// One message sent on a channel: in slot `slot` (its `bytes` first bytes),
/// or over MPI when `slot` is -1.
struct ShmNotice {
  int64_t tag = 0;
  uint64_t bytes = 0;
  int32_t slot = -1;
};

/// A view of one channel's memory (shmChannelBytes(shape) bytes, 64-byte
/// aligned). The receiver's process calls initialize once, before either
/// side makes its view.
class ShmChannel {
public:
  static size_t bytes(const ShmChannelShape &shape);
  /// An empty channel in `memory`: every slot free, no notice.
  static void initialize(void *memory, const ShmChannelShape &shape);

  ShmChannel(void *memory, const ShmChannelShape &shape);

  const ShmChannelShape &shape() const { return shape_; }

  // --- The sender's side.
  /// The lowest free slot for a message of `bytes`, now the sender's with
  /// nothing filled, or -1: the message is larger than a slot, or every slot
  /// holds a message that the receiver has not taken yet.
  int32_t claimSlot(uint64_t bytes);
  unsigned char *slotData(int32_t slot) const;
  /// Publishes `notice` (its slot claimed); false, and nothing published,
  /// while the notice ring is full.
  bool tryPublish(const ShmNotice &notice);
  /// The slot's first `bytes` bytes are written (a count that only grows
  /// while the slot holds one message).
  void markFilled(int32_t slot, uint64_t bytes);

  // --- The receiver's side.
  /// Appends the notices published since the last call to `pending`, in
  /// publication order, and frees their places in the ring.
  void collect(std::deque<ShmNotice> &pending);
  /// How many of the slot's first bytes the sender has written: they may
  /// be read.
  uint64_t filled(int32_t slot) const;
  /// Gives a slot back to the sender once its message is copied out.
  void releaseSlot(int32_t slot);

private:
  struct alignas(64) Counter {
    std::atomic<uint64_t> value;
  };
  ShmChannelShape shape_;
  /// Notices published (written by the sender) and collected (by the
  /// receiver), each on its own cache line.
  Counter *published_;
  Counter *collected_;
  /// Per slot, 1 while it holds a message (set by the sender, cleared by
  /// the receiver), and the bytes of it written so far.
  std::atomic<uint32_t> *full_;
  Counter *filled_;
  ShmNotice *notices_;
  unsigned char *slots_;
};

} // namespace runtime
} // namespace pipedream

#endif // PIPEDREAM_RUNTIME_LIB_SHMCHANNEL_H
