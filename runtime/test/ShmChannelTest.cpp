//===- ShmChannelTest.cpp - one-way message channel in shared memory ------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// ShmChannel (runtime/lib/ShmChannel.h) in one process: slots are claimed
// until none is free and come back when released, a message larger than a
// slot gets none, the notice ring refuses a notice while full and takes
// them again once collected, notices arrive in order across the ring's
// wrap, and a sender thread and a receiver thread moving many messages of
// many sizes (some through slots piece by piece, some without a slot) see
// every byte and every notice in order.
//
//===----------------------------------------------------------------------===//

#include "ShmChannel.h"
#include "Transport.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

using pipedream::runtime::MessagePart;
using pipedream::runtime::ShmChannel;
using pipedream::runtime::ShmChannelShape;
using pipedream::runtime::ShmNotice;

namespace {

ShmChannelShape shapeOf(uint32_t slots, uint64_t slotBytes, uint32_t notices) {
  ShmChannelShape shape;
  shape.slots = slots;
  shape.slotBytes = slotBytes;
  shape.notices = notices;
  return shape;
}

/// A channel's memory, 64-byte aligned, initialized.
struct Memory {
  explicit Memory(const ShmChannelShape &shape)
      : bytes(ShmChannel::bytes(shape)),
        data(static_cast<unsigned char *>(std::aligned_alloc(64, bytes))) {
    std::fill(data, data + bytes, 0xAB);
    ShmChannel::initialize(data, shape);
  }
  ~Memory() { std::free(data); }
  size_t bytes;
  unsigned char *data;
};

unsigned char byteOf(uint64_t message, uint64_t i) {
  return static_cast<unsigned char>((message * 131 + i * 7) & 0xFF);
}

} // namespace

TEST(ShmChannelTest, SlotsAreClaimedUntilNoneIsFree) {
  ShmChannelShape shape = shapeOf(3, 256, 8);
  Memory memory(shape);
  ShmChannel sender(memory.data, shape), receiver(memory.data, shape);
  EXPECT_EQ(sender.claimSlot(257), -1) << "larger than a slot";
  std::vector<int32_t> claimed;
  for (int i = 0; i < 3; ++i)
    claimed.push_back(sender.claimSlot(256));
  std::vector<int32_t> sorted = claimed;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, (std::vector<int32_t>{0, 1, 2}));
  EXPECT_EQ(sender.claimSlot(1), -1) << "every slot holds a message";
  receiver.releaseSlot(claimed[1]);
  EXPECT_EQ(sender.claimSlot(0), claimed[1]);
  EXPECT_EQ(sender.claimSlot(0), -1);
  // A claimed slot starts with nothing filled.
  sender.markFilled(claimed[0], 100);
  EXPECT_EQ(receiver.filled(claimed[0]), 100u);
  receiver.releaseSlot(claimed[0]);
  EXPECT_EQ(sender.claimSlot(10), claimed[0]);
  EXPECT_EQ(receiver.filled(claimed[0]), 0u);
  // The lowest free slot comes first: the one the receiver copied out of
  // last, while it keeps up (its lines are the likeliest still cached).
  for (int32_t s = 0; s < 3; ++s)
    receiver.releaseSlot(s);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(sender.claimSlot(8), 0);
    receiver.releaseSlot(0);
  }
  EXPECT_EQ(sender.claimSlot(8), 0);
  EXPECT_EQ(sender.claimSlot(8), 1);
  receiver.releaseSlot(0);
  EXPECT_EQ(sender.claimSlot(8), 0);
  // The slots do not overlap and stay inside the channel.
  for (int32_t s = 0; s < 3; ++s) {
    EXPECT_GE(sender.slotData(s), memory.data);
    EXPECT_LE(sender.slotData(s) + 256, memory.data + memory.bytes);
    if (s > 0)
      EXPECT_GE(sender.slotData(s), sender.slotData(s - 1) + 256);
  }
}

TEST(ShmChannelTest, NoticeRingRefusesWhileFullAndKeepsOrder) {
  ShmChannelShape shape = shapeOf(1, 64, 4);
  Memory memory(shape);
  ShmChannel sender(memory.data, shape), receiver(memory.data, shape);
  std::deque<ShmNotice> pending;
  int64_t next = 0, expected = 0;
  // Ten rounds of filling the ring (wrapping it), then collecting.
  for (int round = 0; round < 10; ++round) {
    for (int i = 0; i < 4; ++i, ++next)
      ASSERT_TRUE(sender.tryPublish(ShmNotice{next, uint64_t(next) * 3, -1}));
    EXPECT_FALSE(sender.tryPublish(ShmNotice{next, 0, -1})) << "ring full";
    receiver.collect(pending);
    EXPECT_EQ(pending.size(), 4u);
    receiver.collect(pending);
    EXPECT_EQ(pending.size(), 4u) << "collected twice";
    for (const ShmNotice &n : pending) {
      EXPECT_EQ(n.tag, expected);
      EXPECT_EQ(n.bytes, uint64_t(expected) * 3);
      EXPECT_EQ(n.slot, -1);
      ++expected;
    }
    pending.clear();
  }
}

// Many messages between two threads, as two ranks of one host exchange
// them: sizes from empty to twice a slot, in up to three parts; whatever
// has no slot (too large, or all slots taken) goes "elsewhere" (here: a
// queue of its own, as MPI would carry it) with a notice of slot -1.
TEST(ShmChannelTest, ThreadsMoveManyMessagesInOrder) {
  ShmChannelShape shape = shapeOf(4, 4096, 16);
  Memory memory(shape);
  const int messages = 20000;
  const size_t piece = 1000;
  std::mt19937 rng(7);
  std::vector<size_t> sizes(messages);
  for (size_t &s : sizes)
    s = rng() % (2 * shape.slotBytes + 1);
  // Messages without a slot, handed over through a mutex-guarded queue.
  std::mutex elsewhereMutex;
  std::deque<std::vector<unsigned char>> elsewhere;
  int throughSlots = 0;
  // A bug must fail the test, not hang it: every wait gives up after a
  // minute (the test takes well under a second).
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  std::atomic<bool> gaveUp{false};
  auto late = [&] {
    if (std::chrono::steady_clock::now() > deadline)
      gaveUp = true;
    return gaveUp.load();
  };
  std::thread sender([&] {
    ShmChannel channel(memory.data, shape);
    std::vector<unsigned char> a, b;
    for (int m = 0; m < messages; ++m) {
      size_t n = sizes[m], cut = n / 3;
      a.resize(cut);
      b.resize(n - cut);
      for (size_t i = 0; i < n; ++i)
        (i < cut ? a[i] : b[i - cut]) = byteOf(m, i);
      MessagePart parts[] = {
          {a.data(), a.size()}, {nullptr, 0}, {b.data(), b.size()}};
      int32_t slot = channel.claimSlot(n);
      ShmNotice notice{m % 5, n, slot};
      while (!channel.tryPublish(notice))
        if (late())
          return;
      if (slot < 0) {
        std::vector<unsigned char> copy(n);
        pipedream::runtime::gatherParts(parts, 3, copy.data());
        std::lock_guard<std::mutex> lock(elsewhereMutex);
        elsewhere.push_back(std::move(copy));
        continue;
      }
      ++throughSlots;
      for (size_t from = 0; from < n; from += piece) {
        size_t to = std::min(n, from + piece);
        pipedream::runtime::gatherPartsRange(parts, 3, from, to,
                                             channel.slotData(slot) + from);
        channel.markFilled(slot, to);
      }
    }
  });
  ShmChannel channel(memory.data, shape);
  std::deque<ShmNotice> pending;
  std::vector<unsigned char> got;
  int bad = 0;
  for (int m = 0; m < messages && bad < 5 && !late(); ++m) {
    while (pending.empty() && !late())
      channel.collect(pending);
    if (pending.empty())
      break;
    ShmNotice notice = pending.front();
    pending.pop_front();
    if (notice.tag != m % 5 || notice.bytes != sizes[m]) {
      ADD_FAILURE() << "message " << m << ": tag " << notice.tag << ", "
                    << notice.bytes << " bytes; expected tag " << m % 5 << ", "
                    << sizes[m];
      ++bad;
      continue;
    }
    size_t n = notice.bytes;
    got.assign(n + 1, 0);
    // Received in two parts, cut elsewhere than the sender's.
    MessagePart parts[] = {{got.data(), n / 2},
                           {got.data() + n / 2, n - n / 2}};
    if (notice.slot < 0) {
      std::vector<unsigned char> copy;
      while (!late()) {
        std::lock_guard<std::mutex> lock(elsewhereMutex);
        if (!elsewhere.empty()) {
          copy = std::move(elsewhere.front());
          elsewhere.pop_front();
          break;
        }
      }
      if (copy.size() != n)
        break;
      pipedream::runtime::scatterParts(copy.data(), parts, 2);
    } else {
      size_t copied = 0;
      while (copied < n && !late()) {
        size_t filled = channel.filled(notice.slot);
        if (filled > n) {
          ADD_FAILURE() << "message " << m << ": " << filled
                        << " bytes filled of " << n;
          gaveUp = true;
          break;
        }
        if (filled > copied) {
          pipedream::runtime::scatterPartsRange(
              channel.slotData(notice.slot) + copied, parts, 2, copied, filled);
          copied = filled;
        }
      }
      channel.releaseSlot(notice.slot);
    }
    for (size_t i = 0; i < n; ++i)
      if (got[i] != byteOf(m, i)) {
        ADD_FAILURE() << "message " << m << " byte " << i;
        ++bad;
        break;
      }
    EXPECT_EQ(got[n], 0) << "wrote past the message";
  }
  gaveUp = gaveUp || late();
  if (gaveUp)
    ADD_FAILURE() << "gave up waiting (a lost notice or fill count?)";
  gaveUp = true; // the sender stops waiting, if it still is
  sender.join();
  // Both paths taken. How many small messages find a free slot depends on
  // how the threads are scheduled (4990 of 20000 on a loaded machine), so
  // only what does not is checked: the slots start free, so the first
  // small messages take them; a message larger than a slot never does.
  size_t small = 0, large = 0;
  for (size_t n : sizes)
    ++(n <= shape.slotBytes ? small : large);
  EXPECT_GE(throughSlots, int(std::min<size_t>(small, shape.slots)));
  EXPECT_LE(throughSlots, int(small));
  EXPECT_GT(large, 0u);
}

TEST(ShmChannelTest, PartsRangesCutAcrossParts) {
  std::vector<unsigned char> a{1, 2, 3}, b{4, 5}, c{6, 7, 8, 9};
  MessagePart parts[] = {
      {a.data(), 3}, {nullptr, 0}, {b.data(), 2}, {c.data(), 4}};
  unsigned char out[9] = {};
  pipedream::runtime::gatherPartsRange(parts, 4, 2, 7, out);
  EXPECT_EQ(std::vector<unsigned char>(out, out + 5),
            (std::vector<unsigned char>{3, 4, 5, 6, 7}));
  unsigned char in[] = {30, 40, 50, 60, 70};
  pipedream::runtime::scatterPartsRange(in, parts, 4, 2, 7);
  EXPECT_EQ(a, (std::vector<unsigned char>{1, 2, 30}));
  EXPECT_EQ(b, (std::vector<unsigned char>{40, 50}));
  EXPECT_EQ(c, (std::vector<unsigned char>{60, 70, 8, 9}));
  // Empty ranges touch nothing.
  pipedream::runtime::scatterPartsRange(nullptr, parts, 4, 5, 5);
  EXPECT_EQ(b, (std::vector<unsigned char>{40, 50}));
}
