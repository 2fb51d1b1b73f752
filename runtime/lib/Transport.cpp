//===- Transport.cpp - the transport interface and in-process threads -----===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The C entry points of pd_transport, user-defined transports, and the
// in-process transport: K endpoints sharing mailboxes, one per rank, for
// running every rank of a pipeline on its own thread. Sends copy into the
// receiver's mailbox (into a byte buffer an earlier message left, so a
// step's messages touch no fresh pages); receives poll the mailbox for a
// while (PIPEDREAM_THREADS_SPIN_US), then wait on a condition variable with
// a deadline, and fail at once when the sender has aborted or gone away.
// Messages of device memory (cuda pipelines, sendDevice) are device buffers of
// the world, filled by a device-to-device copy and recycled after the receive.
//
//===----------------------------------------------------------------------===//

#include "Transport.h"

#include "Bundle.h"
#include "GpuDevice.h"
#include "IdleWork.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

using pipedream::runtime::fail;
using pipedream::runtime::guarded;
using pipedream::runtime::nullArgument;

namespace pipedream {
namespace runtime {

double defaultTimeout() {
  if (const char *text = std::getenv("PIPEDREAM_TIMEOUT")) {
    char *end = nullptr;
    double value = std::strtod(text, &end);
    if (end != text && *end == '\0' && std::isfinite(value) && value > 0)
      return value;
  }
  return 60;
}

long envLong(const char *name, long fallback) {
  const char *text = std::getenv(name);
  return text ? std::strtol(text, nullptr, 10) : fallback;
}

std::string describeTag(int64_t tag) {
  if (tag == PD_TAG_STEP_LOSS)
    return "the step loss";
  if (tag == PD_TAG_WEIGHTS)
    return "weights";
  if (tag == PD_TAG_CHECKPOINT)
    return "the checkpoint report";
  if (tag == PD_TAG_TRACE)
    return "the trace";
  if (tag == PD_TAG_STEP_STATUS)
    return "the step status";
  return "tag " + std::to_string(tag);
}

} // namespace runtime
} // namespace pipedream

using pipedream::runtime::describeTag;

namespace {

std::string seconds(double value) {
  std::ostringstream text;
  text << value << " s";
  return text.str();
}

//===----------------------------------------------------------------------===//
// In-process threads
//===----------------------------------------------------------------------===//

struct ThreadWorld {
  struct Message {
    size_t from;
    int64_t tag;
    std::vector<unsigned char> bytes;
    /// A device message (sendDevice): its data, `deviceBytes` bytes.
    pipedream::runtime::DeviceMemory device;
    size_t deviceBytes = 0;
    size_t size() const { return device ? deviceBytes : bytes.size(); }
  };
  explicit ThreadWorld(size_t size)
      : mailbox(size), failed(size), closed(size, false),
        waitingOn(size, kNotWaiting) {}
  static constexpr size_t kNotWaiting = SIZE_MAX;
  std::mutex mutex;
  std::condition_variable changed;
  /// Counts the changes that `changed` announces (a message, an abort, a
  /// rank gone): a receive polls it without the mutex before it sleeps.
  std::atomic<uint64_t> version{0};
  /// Wakes every waiter: after a change made under the mutex.
  void notify() {
    version.fetch_add(1, std::memory_order_release);
    changed.notify_all();
  }
  /// Byte buffers of received host messages, for the next sends (a fresh
  /// buffer per 64 KiB activation cost a page fault per 4 KiB, 50 us a
  /// message).
  std::vector<std::vector<unsigned char>> spareBytes;
  /// Messages not received yet, per receiver, in sending order.
  std::vector<std::deque<Message>> mailbox;
  /// Why a rank aborted ("" while it has not).
  std::vector<std::string> failed;
  /// Ranks whose transport was destroyed.
  std::vector<bool> closed;
  /// The peer each rank is waiting for a message from (kNotWaiting when it
  /// is not in a receive), so that a timeout names the stuck rank rather
  /// than one waiting for it (takeMessage).
  std::vector<size_t> waitingOn;
  /// Device buffers of received device messages, by size, for reuse.
  std::multimap<size_t, pipedream::runtime::DeviceMemory> spare;
  /// All-reduces in progress, by (group, sequence number in the group):
  /// each member's contribution (by its index in the group) and how many
  /// members have taken the sum.
  struct Reduction {
    std::vector<std::vector<unsigned char>> contributions;
    size_t given = 0, taken = 0;
  };
  std::map<std::pair<std::vector<size_t>, uint64_t>, Reduction> reductions;
};

struct ThreadEndpoint {
  std::shared_ptr<ThreadWorld> world;
  size_t rank;
  /// All-reduces this rank has run, per group.
  std::map<std::vector<size_t>, uint64_t> reductionsRun;
};

pd_status threadSendParts(void *state, size_t peer, int64_t tag,
                          const pipedream::runtime::MessagePart *parts,
                          size_t count, double) {
  size_t numBytes = pipedream::runtime::partsBytes(parts, count);
  auto &self = *static_cast<ThreadEndpoint *>(state);
  ThreadWorld &world = *self.world;
  ThreadWorld::Message message{self.rank, tag, {}, nullptr, 0};
  {
    // The spare buffer that fits best (else a new one), filled outside the
    // lock.
    std::lock_guard<std::mutex> lock(world.mutex);
    std::vector<std::vector<unsigned char>> &spare = world.spareBytes;
    auto best = spare.end();
    for (auto it = spare.begin(); it != spare.end(); ++it)
      if (it->capacity() >= numBytes &&
          (best == spare.end() || it->capacity() < best->capacity()))
        best = it;
    if (best != spare.end()) {
      message.bytes = std::move(*best);
      *best = std::move(spare.back());
      spare.pop_back();
    }
  }
  message.bytes.resize(numBytes);
  pipedream::runtime::gatherParts(parts, count, message.bytes.data());
  {
    std::lock_guard<std::mutex> lock(world.mutex);
    if (!world.failed[peer].empty())
      return fail(PD_ERROR_PEER, "rank " + std::to_string(peer) +
                                     " failed: " + world.failed[peer]);
    world.mailbox[peer].push_back(std::move(message));
  }
  world.notify();
  return PD_OK;
}

pd_status threadSend(void *state, size_t peer, int64_t tag, const void *data,
                     size_t numBytes, double timeout) {
  pipedream::runtime::MessagePart part{const_cast<void *>(data), numBytes};
  return threadSendParts(state, peer, tag, &part, 1, timeout);
}

/// How long a receive polls the mailbox (yielding the CPU between looks)
/// before it sleeps on the condition variable: PIPEDREAM_THREADS_SPIN_US,
/// default 2000, as the MPI transport's PIPEDREAM_MPI_SPIN_MS. Waking a
/// sleeping thread took 30-80 us on a 2-vCPU VM (issue 21), on every
/// activation and gradient of a pipeline's steady state.
std::chrono::microseconds threadSpin() {
  static const long us = std::max(
      0L, pipedream::runtime::envLong("PIPEDREAM_THREADS_SPIN_US", 2000));
  return std::chrono::microseconds(us);
}

/// Waits for the message from `peer` with `tag` and takes it out of the
/// mailbox (into `out`); fails (last error set) on a size mismatch, a
/// failed or gone peer, or the timeout.
/// The rank's own work while it waits (IdleWork.h: packing ahead): one
/// unit, without the world's lock. True when a unit ran: the caller looks
/// again before it sleeps, also after the last unit (a message that came
/// meanwhile notified no one waiting).
bool idleWorkUnlocked(std::unique_lock<std::mutex> &lock) {
  if (!pipedream::runtime::tIdleWork)
    return false;
  lock.unlock();
  pipedream::runtime::runIdleWork();
  lock.lock();
  return true;
}

pd_status takeMessage(ThreadEndpoint &self, size_t peer, int64_t tag,
                      size_t numBytes, double timeout,
                      ThreadWorld::Message &out) {
  ThreadWorld &world = *self.world;
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double>(timeout));
  std::unique_lock<std::mutex> lock(world.mutex);
  // NOTE: declared after `lock`: reset while the mutex is still held.
  struct Waiting {
    ThreadWorld &world;
    size_t rank;
    ~Waiting() { world.waitingOn[rank] = ThreadWorld::kNotWaiting; }
  } waiting{world, self.rank};
  world.waitingOn[self.rank] = peer;
  std::deque<ThreadWorld::Message> &box = world.mailbox[self.rank];
  auto spinEnd = std::chrono::steady_clock::now() + threadSpin();
  for (;;) {
    // The world as this look at the mailbox sees it.
    uint64_t seen = world.version.load(std::memory_order_acquire);
    for (auto it = box.begin(); it != box.end(); ++it) {
      if (it->from != peer || it->tag != tag)
        continue;
      if (it->size() != numBytes)
        return fail(PD_ERROR_MISMATCH,
                    "the message from rank " + std::to_string(peer) +
                        " with " + describeTag(tag) + " has " +
                        std::to_string(it->size()) +
                        " bytes, expected " + std::to_string(numBytes));
      out = std::move(*it);
      box.erase(it);
      return PD_OK;
    }
    if (!world.failed[peer].empty())
      return fail(PD_ERROR_PEER, "rank " + std::to_string(peer) +
                                     " failed: " + world.failed[peer]);
    if (world.closed[peer])
      return fail(PD_ERROR_PEER,
                  "rank " + std::to_string(peer) +
                      " has gone away (its transport was destroyed) without "
                      "sending " +
                      describeTag(tag));
    if (idleWorkUnlocked(lock))
      continue;
    if (std::chrono::steady_clock::now() < spinEnd) {
      // Poll for the next change without the lock, then look again.
      lock.unlock();
      while (world.version.load(std::memory_order_acquire) == seen &&
             std::chrono::steady_clock::now() < spinEnd)
        std::this_thread::yield();
      lock.lock();
      continue;
    }
    if (world.changed.wait_until(lock, deadline) == std::cv_status::timeout &&
        std::chrono::steady_clock::now() >= deadline) {
      // One last look: the message may have arrived with the timeout.
      bool arrived = false;
      for (const auto &message : box)
        arrived |= message.from == peer && message.tag == tag;
      if (arrived)
        continue;
      // The peer is itself waiting, for a rank that is not (a chain of
      // ranks behind a stuck one): wait another timeout, so that the rank
      // waiting for the stuck one reports it and the others fail with
      // that report instead of naming a rank that is only waiting too.
      // A cycle of waits (programs that do not match) is reported now.
      size_t end = peer;
      for (size_t hops = 0; end != self.rank &&
                            world.waitingOn[end] != ThreadWorld::kNotWaiting &&
                            hops < world.waitingOn.size();
           ++hops)
        end = world.waitingOn[end];
      if (end != peer && end != self.rank &&
          world.waitingOn[end] == ThreadWorld::kNotWaiting) {
        deadline = std::chrono::steady_clock::now() +
                   std::chrono::duration_cast<
                       std::chrono::steady_clock::duration>(
                       std::chrono::duration<double>(timeout));
        continue;
      }
      return fail(PD_ERROR_TIMEOUT,
                    "timed out after " + seconds(timeout) +
                        " waiting for rank " + std::to_string(peer) + " (" +
                        describeTag(tag) + ", " + std::to_string(numBytes) +
                        " bytes): rank " + std::to_string(peer) +
                        " is stuck, dead or running a program that does not "
                        "match");
    }
  }
}

/// Puts a received device message's buffer back for reuse.
void recycle(ThreadWorld &world, ThreadWorld::Message &message) {
  if (!message.device)
    return;
  std::lock_guard<std::mutex> lock(world.mutex);
  world.spare.emplace(message.deviceBytes, std::move(message.device));
}

pd_status threadRecvParts(void *state, size_t peer, int64_t tag,
                          const pipedream::runtime::MessagePart *parts,
                          size_t count, double timeout) {
  size_t numBytes = pipedream::runtime::partsBytes(parts, count);
  auto &self = *static_cast<ThreadEndpoint *>(state);
  ThreadWorld::Message message{0, 0, {}, nullptr, 0};
  if (pd_status status =
          takeMessage(self, peer, tag, numBytes, timeout, message))
    return status;
  if (message.device) {
    // A device message into host memory (the peer sent a register).
    for (size_t k = 0, offset = 0; k < count; offset += parts[k++].bytes)
      pipedream::runtime::copyToHost(
          parts[k].data,
          static_cast<const unsigned char *>(message.device.get()) + offset,
          parts[k].bytes, "receiving from rank " + std::to_string(peer) + ": ");
    recycle(*self.world, message);
  } else {
    pipedream::runtime::scatterParts(message.bytes.data(), parts, count);
    std::lock_guard<std::mutex> lock(self.world->mutex);
    // Kept for the next sends: up to 8 per rank (a pipeline rank has a
    // handful of messages in flight).
    std::vector<std::vector<unsigned char>> &spare = self.world->spareBytes;
    if (spare.size() < 8 * self.world->mailbox.size())
      spare.push_back(std::move(message.bytes));
  }
  return PD_OK;
}

pd_status threadRecv(void *state, size_t peer, int64_t tag, void *data,
                     size_t numBytes, double timeout) {
  pipedream::runtime::MessagePart part{data, numBytes};
  return threadRecvParts(state, peer, tag, &part, 1, timeout);
}

void threadAbort(void *state, const char *reason) {
  auto &self = *static_cast<ThreadEndpoint *>(state);
  {
    std::lock_guard<std::mutex> lock(self.world->mutex);
    if (self.world->failed[self.rank].empty())
      self.world->failed[self.rank] =
          reason && *reason ? reason : "aborted";
  }
  self.world->notify();
}

void threadDestroy(void *state) {
  auto *self = static_cast<ThreadEndpoint *>(state);
  {
    std::lock_guard<std::mutex> lock(self->world->mutex);
    self->world->closed[self->rank] = true;
  }
  self->world->notify();
  delete self;
}

/// Sums `data` over `group` through the world: every member copies its
/// contribution in, waits for all of them, and adds them up in group order
/// itself (so every member computes the same sum, bit for bit).
template <typename T>
void addContributions(const std::vector<std::vector<unsigned char>> &parts,
                      void *data, size_t count) {
  T *out = static_cast<T *>(data);
  std::memcpy(out, parts[0].data(), count * sizeof(T));
  for (size_t m = 1; m < parts.size(); ++m) {
    const T *in = reinterpret_cast<const T *>(parts[m].data());
    for (size_t i = 0; i < count; ++i)
      out[i] += in[i];
  }
}

pd_status threadAllReduce(void *state, const size_t *ranks, size_t numRanks,
                          void *data, size_t count, pd_dtype dtype,
                          double timeout) {
  auto &self = *static_cast<ThreadEndpoint *>(state);
  ThreadWorld &world = *self.world;
  std::vector<size_t> group(ranks, ranks + numRanks);
  size_t me = static_cast<size_t>(
      std::find(group.begin(), group.end(), self.rank) - group.begin());
  size_t bytes = count * pd_dtype_size(dtype);
  auto key = std::make_pair(group, self.reductionsRun[group]++);
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double>(timeout));
  std::unique_lock<std::mutex> lock(world.mutex);
  ThreadWorld::Reduction &red = world.reductions[key];
  red.contributions.resize(numRanks);
  const unsigned char *in = static_cast<const unsigned char *>(data);
  red.contributions[me].assign(in, in + bytes);
  ++red.given;
  world.notify();
  while (red.given < numRanks) {
    for (size_t q : group) {
      if (!world.failed[q].empty())
        return fail(PD_ERROR_PEER, "rank " + std::to_string(q) +
                                       " failed: " + world.failed[q]);
      if (world.closed[q])
        return fail(PD_ERROR_PEER, "rank " + std::to_string(q) +
                                       " has gone away (its transport was "
                                       "destroyed) before the all-reduce");
    }
    if (idleWorkUnlocked(lock))
      continue;
    if (world.changed.wait_until(lock, deadline) == std::cv_status::timeout &&
        red.given < numRanks)
      return fail(PD_ERROR_TIMEOUT,
                  "timed out after " + seconds(timeout) +
                      " waiting for the all-reduce of " +
                      std::to_string(bytes) + " bytes: a rank of the group "
                      "is stuck, dead or running a program that does not "
                      "match");
  }
  for (size_t m = 0; m < numRanks; ++m)
    if (red.contributions[m].size() != bytes)
      return fail(PD_ERROR_MISMATCH,
                  "rank " + std::to_string(group[m]) + " all-reduces " +
                      std::to_string(red.contributions[m].size()) +
                      " bytes, this rank " + std::to_string(bytes));
  if (dtype == PD_DTYPE_F64)
    addContributions<double>(red.contributions, data, count);
  else
    addContributions<float>(red.contributions, data, count);
  if (++red.taken == numRanks)
    world.reductions.erase(key);
  return PD_OK;
}

const pd_transport_ops kThreadOps = {threadSend, threadRecv, threadAbort,
                                     threadDestroy, threadAllReduce};

pd_transport *checked(pd_transport *transport, const char *caller,
                      pd_status &status) {
  status = transport ? PD_OK : nullArgument(caller, "transport");
  return transport;
}

} // namespace

pd_status pd_transport_create(const pd_transport_ops *ops, void *state,
                              size_t rank, size_t size, pd_transport **out) {
  if (!out)
    return nullArgument("pd_transport_create", "out");
  *out = nullptr;
  if (!ops)
    return nullArgument("pd_transport_create", "ops");
  if (!ops->send || !ops->recv)
    return fail(PD_ERROR_INVALID_ARGUMENT,
                "pd_transport_create: ops->send and ops->recv are required");
  if (size == 0 || rank >= size)
    return fail(PD_ERROR_INVALID_ARGUMENT,
                "pd_transport_create: rank " + std::to_string(rank) +
                    " is not in [0, " + std::to_string(size) + ")");
  return guarded([&] {
    auto transport = std::make_unique<pd_transport>();
    transport->kind = "custom";
    transport->rank = rank;
    transport->size = size;
    transport->timeout = pipedream::runtime::defaultTimeout();
    transport->ops = *ops;
    transport->state = state;
    *out = transport.release();
    return PD_OK;
  });
}

pd_status pd_transport_create_threads(size_t size, pd_transport **out) {
  if (!out)
    return nullArgument("pd_transport_create_threads", "out");
  if (size == 0)
    return fail(PD_ERROR_INVALID_ARGUMENT,
                "pd_transport_create_threads: size must be at least 1");
  for (size_t r = 0; r < size; ++r)
    out[r] = nullptr;
  return guarded([&] {
    auto world = std::make_shared<ThreadWorld>(size);
    std::vector<std::unique_ptr<pd_transport>> made;
    for (size_t r = 0; r < size; ++r) {
      auto transport = std::make_unique<pd_transport>();
      transport->kind = "threads";
      transport->rank = r;
      transport->size = size;
      transport->timeout = pipedream::runtime::defaultTimeout();
      transport->ops = kThreadOps;
      transport->sendParts = threadSendParts;
      transport->recvParts = threadRecvParts;
      transport->state = new ThreadEndpoint{world, r, {}};
      made.push_back(std::move(transport));
    }
    for (size_t r = 0; r < size; ++r)
      out[r] = made[r].release();
    return PD_OK;
  });
}

int pd_transport_mpi_available(void) {
  return pipedream::runtime::mpiAvailable() ? 1 : 0;
}

pd_status pd_transport_create_mpi(pd_transport **out) {
  if (!out)
    return nullArgument("pd_transport_create_mpi", "out");
  *out = nullptr;
  return guarded([&] {
    auto transport = std::make_unique<pd_transport>();
    transport->timeout = pipedream::runtime::defaultTimeout();
    pipedream::runtime::createMpiTransport(*transport);
    *out = transport.release();
    return PD_OK;
  });
}

void pd_transport_destroy(pd_transport *transport) {
  if (!transport)
    return;
  if (transport->ops.destroy)
    transport->ops.destroy(transport->state);
  delete transport;
}

size_t pd_transport_rank(const pd_transport *transport) {
  return transport ? transport->rank : 0;
}

size_t pd_transport_size(const pd_transport *transport) {
  return transport ? transport->size : 0;
}

const char *pd_transport_kind(const pd_transport *transport) {
  return transport ? transport->kind.c_str() : "";
}

pd_status pd_transport_set_timeout(pd_transport *transport, double seconds) {
  pd_status status;
  if (!checked(transport, "pd_transport_set_timeout", status))
    return status;
  if (!std::isfinite(seconds) || seconds <= 0)
    return fail(PD_ERROR_INVALID_ARGUMENT,
                "pd_transport_set_timeout: the timeout must be a positive "
                "number of seconds");
  transport->timeout = seconds;
  return PD_OK;
}

double pd_transport_timeout(const pd_transport *transport) {
  return transport ? transport->timeout : 0;
}

namespace {
pd_status checkPeer(const pd_transport *transport, size_t peer,
                    int64_t tag, const void *data, size_t numBytes,
                    const char *caller) {
  if (peer >= transport->size || peer == transport->rank)
    return fail(PD_ERROR_INVALID_ARGUMENT,
                std::string(caller) + ": peer " + std::to_string(peer) +
                    " is not another rank of " +
                    std::to_string(transport->size));
  if (tag < 0 && tag != PD_TAG_STEP_LOSS && tag != PD_TAG_WEIGHTS &&
      tag != PD_TAG_CHECKPOINT && tag != PD_TAG_TRACE &&
      tag != PD_TAG_STEP_STATUS)
    return fail(PD_ERROR_INVALID_ARGUMENT,
                std::string(caller) + ": tag " + std::to_string(tag) +
                    " is negative and not one of the runtime's");
  if (numBytes && !data)
    return nullArgument(caller, "data");
  return PD_OK;
}
} // namespace

pd_status pd_transport_send(pd_transport *transport, size_t peer, int64_t tag,
                            const void *data, size_t num_bytes) {
  pd_status status;
  if (!checked(transport, "pd_transport_send", status))
    return status;
  status =
      checkPeer(transport, peer, tag, data, num_bytes, "pd_transport_send");
  if (status != PD_OK)
    return status;
  return guarded([&] {
    return transport->ops.send(transport->state, peer, tag, data, num_bytes,
                               transport->timeout);
  });
}

pd_status pd_transport_recv(pd_transport *transport, size_t peer, int64_t tag,
                            void *data, size_t num_bytes) {
  pd_status status;
  if (!checked(transport, "pd_transport_recv", status))
    return status;
  status =
      checkPeer(transport, peer, tag, data, num_bytes, "pd_transport_recv");
  if (status != PD_OK)
    return status;
  return guarded([&] {
    return transport->ops.recv(transport->state, peer, tag, data, num_bytes,
                               transport->timeout);
  });
}

pd_status pd_transport_all_reduce(pd_transport *transport,
                                  const size_t *ranks, size_t num_ranks,
                                  void *data, size_t count, pd_dtype dtype) {
  pd_status status;
  if (!checked(transport, "pd_transport_all_reduce", status))
    return status;
  if (!ranks)
    return nullArgument("pd_transport_all_reduce", "ranks");
  if (count && !data)
    return nullArgument("pd_transport_all_reduce", "data");
  bool valid = num_ranks >= 2;
  for (size_t i = 0; valid && i < num_ranks; ++i)
    valid = ranks[i] < transport->size && (i == 0 || ranks[i] > ranks[i - 1]);
  if (!valid || !std::binary_search(ranks, ranks + num_ranks, transport->rank))
    return fail(PD_ERROR_INVALID_ARGUMENT,
                "pd_transport_all_reduce: the ranks must be two or more "
                "distinct ranks of " +
                    std::to_string(transport->size) +
                    ", ascending, this one (" +
                    std::to_string(transport->rank) + ") among them");
  if (dtype != PD_DTYPE_F32 && dtype != PD_DTYPE_F64)
    return fail(PD_ERROR_UNSUPPORTED,
                "pd_transport_all_reduce: sums f32 or f64 only");
  if (!transport->ops.all_reduce)
    return fail(PD_ERROR_UNSUPPORTED,
                "the " + transport->kind +
                    " transport has no all-reduce (pd_transport_ops."
                    "all_reduce), which pipelines with shared weights need");
  return guarded([&] {
    return transport->ops.all_reduce(transport->state, ranks, num_ranks, data,
                                     count, dtype, transport->timeout);
  });
}

void pd_transport_abort(pd_transport *transport, const char *reason) {
  if (!transport || !transport->ops.abort)
    return;
  try {
    transport->ops.abort(transport->state, reason ? reason : "");
  } catch (...) {
    // Best effort: the caller is failing already.
  }
}

namespace pipedream {
namespace runtime {

pd_status sendParts(pd_transport &transport, size_t peer, int64_t tag,
                    const MessagePart *parts, size_t count) {
  size_t total = partsBytes(parts, count);
  if (count == 1 || !transport.sendParts) {
    // One part, or a user-defined transport: one contiguous send.
    static thread_local std::vector<unsigned char> gathered;
    const void *data = count == 1 ? parts[0].data : nullptr;
    if (count != 1) {
      gathered.resize(total);
      gatherParts(parts, count, gathered.data());
      data = gathered.data();
    }
    return pd_transport_send(&transport, peer, tag, data, total);
  }
  if (pd_status status =
          checkPeer(&transport, peer, tag, parts, total, "pd_transport_send"))
    return status;
  return guarded([&] {
    return transport.sendParts(transport.state, peer, tag, parts, count,
                               transport.timeout);
  });
}

pd_status recvParts(pd_transport &transport, size_t peer, int64_t tag,
                    const MessagePart *parts, size_t count) {
  size_t total = partsBytes(parts, count);
  if (count == 1 || !transport.recvParts) {
    static thread_local std::vector<unsigned char> gathered;
    void *data = count == 1 ? parts[0].data : nullptr;
    if (count != 1) {
      gathered.resize(total);
      data = gathered.data();
    }
    if (pd_status status =
            pd_transport_recv(&transport, peer, tag, data, total))
      return status;
    if (count != 1)
      scatterParts(gathered.data(), parts, count);
    return PD_OK;
  }
  if (pd_status status =
          checkPeer(&transport, peer, tag, parts, total, "pd_transport_recv"))
    return status;
  return guarded([&] {
    return transport.recvParts(transport.state, peer, tag, parts, count,
                               transport.timeout);
  });
}

bool transportBuffersSends(const pd_transport &transport) {
  if (transport.ops.send == threadSend)
    return true;
  return transport.kind == "mpi" && mpiBuffersSends(transport);
}

bool transportTakesDevice(const pd_transport &transport) {
  // NOTE: pd_transport_create_nccl (NcclBootstrap.cpp) names its
  // transports "nccl"; their send/recv take host and device memory
  // (TransportNccl.cpp).
  return transport.ops.send == threadSend || transport.kind == "nccl";
}

void sendDevice(pd_transport &transport, size_t peer, int64_t tag,
                const void *device, size_t bytes) {
  if (transport.ops.send != threadSend) {
    if (pd_status status =
            pd_transport_send(&transport, peer, tag, device, bytes))
      throw Error(status, pd_last_error());
    return;
  }
  if (pd_status status = checkPeer(&transport, peer, tag, device, bytes,
                                   "pd_transport_send"))
    throw Error(status, pd_last_error());
  auto &self = *static_cast<ThreadEndpoint *>(transport.state);
  ThreadWorld &world = *self.world;
  ThreadWorld::Message message{self.rank, tag, {}, nullptr, bytes};
  {
    std::lock_guard<std::mutex> lock(world.mutex);
    auto it = world.spare.find(bytes);
    if (it != world.spare.end()) {
      message.device = std::move(it->second);
      world.spare.erase(it);
    }
  }
  if (!message.device)
    message.device = allocateDevice(bytes, "a message to rank " +
                                               std::to_string(peer));
  // NOTE: waits for this rank's stream: the copy is complete before the
  // receiver, on another stream, reads the buffer.
  copyDeviceToDevice(message.device.get(), device, bytes,
                     "sending to rank " + std::to_string(peer) + ": ");
  {
    std::lock_guard<std::mutex> lock(world.mutex);
    if (!world.failed[peer].empty())
      throw Error(PD_ERROR_PEER, "rank " + std::to_string(peer) +
                                     " failed: " + world.failed[peer]);
    world.mailbox[peer].push_back(std::move(message));
  }
  world.notify();
}

void recvDevice(pd_transport &transport, size_t peer, int64_t tag,
                void *device, size_t bytes) {
  if (transport.ops.send != threadSend) {
    if (pd_status status =
            pd_transport_recv(&transport, peer, tag, device, bytes))
      throw Error(status, pd_last_error());
    return;
  }
  if (pd_status status = checkPeer(&transport, peer, tag, device, bytes,
                                   "pd_transport_recv"))
    throw Error(status, pd_last_error());
  auto &self = *static_cast<ThreadEndpoint *>(transport.state);
  ThreadWorld::Message message{0, 0, {}, nullptr, 0};
  if (pd_status status = takeMessage(self, peer, tag, bytes,
                                     transport.timeout, message))
    throw Error(status, pd_last_error());
  std::string where = "receiving from rank " + std::to_string(peer) + ": ";
  if (message.device) {
    copyDeviceToDevice(device, message.device.get(), bytes, where);
    recycle(*self.world, message);
  } else {
    // A host message (e.g. from pd_transport_send) into device memory.
    copyToDevice(device, message.bytes.data(), bytes, where);
  }
}

} // namespace runtime
} // namespace pipedream
