//===- TransportMpi.cpp - the MPI transport (Open MPI) --------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// One process per rank under mpirun. Program messages travel on a
// duplicate of MPI_COMM_WORLD with their own tags; the runtime's reserved
// messages (step loss, weights) and abort notices on a second duplicate, so
// they can never be confused with a program message.
//
// NOTE: never a blocking MPI call that waits for a peer: a receive is
// MPI_Irecv polled with MPI_Test (and MPI_Iprobe for abort notices) until
// the deadline. A rank that stops answering thus ends the others with
// PD_ERROR_TIMEOUT naming it; one that fails sends abort notices first so
// the others stop at once with PD_ERROR_PEER. Built only when CMake finds
// MPI (PIPEDREAM_HAVE_MPI); otherwise the entry points say so.
//
// Sends do not wait for their receiver (issue 21: a pipeline rank that
// waited in a rendezvous send while its receiver computed lost a quarter
// of the step): a send copies the message into a buffer of the transport,
// posts MPI_Isend and returns; a progress thread (MPI_THREAD_MULTIPLE)
// tests the sends in flight, so that a large message's later fragments
// (Open MPI's copy-in/copy-out protocol needs the sender's progress) leave
// while the rank computes. A send that no receiver takes within the
// timeout fails the rank's next transport call; destroy waits for the
// sends in flight. Without MPI_THREAD_MULTIPLE, sends are MPI_Isend polled
// until complete, as receives are.
//
// Program messages between ranks of one machine go through shared-memory
// channels instead (ShmChannel.h, setupSharedMemory below): one copy into a
// slot, one out, no MPI call; MPI carries what finds no free slot.
//
//===----------------------------------------------------------------------===//

#include "Transport.h"

#include "Bundle.h"
#include "IdleWork.h"
#include "ShmChannel.h"

#if PIPEDREAM_HAVE_MPI

#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <pthread.h>
#include <sstream>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace pipedream {
namespace runtime {

namespace {

/// Tag of abort notices on the control communicator (reserved tags map to
/// -tag there).
constexpr int kAbortTag = 99;

struct MpiState {
  MPI_Comm data = MPI_COMM_NULL;
  MPI_Comm control = MPI_COMM_NULL;
  int tagUpperBound = 32767;
  bool initializedHere = false;
  bool aborted = false;
  size_t rank = 0;
  /// Abort notices in flight (their buffers must outlive the sends).
  std::list<std::string> notices;
  /// Communicators of all-reduce groups (MPI_Comm_create_group of `data`).
  std::map<std::vector<size_t>, MPI_Comm> groups;

  /// Buffered sends (MPI_THREAD_MULTIPLE): the messages posted and not yet
  /// taken by the progress thread (which keeps those in flight), spare
  /// buffers, the bytes in flight. `mutex` guards posted, spare,
  /// pendingBytes, failure and stop.
  struct Buffer {
    std::unique_ptr<unsigned char[]> data;
    size_t capacity = 0;
  };
  struct PendingSend {
    MPI_Request request = MPI_REQUEST_NULL;
    Buffer buffer;
    size_t bytes = 0;
    std::chrono::steady_clock::time_point deadline;
    double timeout = 0;
    std::string waitingFor;
  };
  bool threaded = false;
  /// The progress thread runs (else the rank's own transport calls test
  /// the sends in flight: PIPEDREAM_MPI_PROGRESS_THREAD=0).
  bool progressThread = false;
  std::list<PendingSend> inlineInFlight;
  std::mutex mutex;
  std::condition_variable wake, drained;
  std::list<PendingSend> posted;
  std::vector<Buffer> spare;
  size_t pendingBytes = 0;
  /// The first failed or timed-out buffered send (its status and message).
  pd_status failureStatus = PD_OK;
  std::string failure;
  bool stop = false;
  std::thread progress;

  /// Program messages between the ranks of one machine (ShmChannel.h):
  /// the shared memory mapped (address, bytes; empty when the channels are
  /// off); per rank of `data`, the channel to it and the one from it
  /// (null: another machine, or this rank), and the notices collected from
  /// it and not yet received.
  struct SharedMemory {
    std::vector<std::pair<void *, size_t>> mappings;
    std::vector<std::unique_ptr<ShmChannel>> to, from;
    std::vector<std::deque<ShmNotice>> pending;
  } shm;
};

std::string mpiError(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<size_t>(length));
}

void check(int code, const std::string &what) {
  if (code != MPI_SUCCESS)
    throw Error(PD_ERROR_IO, what + ": " + mpiError(code));
}

/// An abort notice from any rank, if one has arrived: throws PD_ERROR_PEER.
void checkAbortNotices(MpiState &state) {
  int flag = 0;
  MPI_Status status;
  if (MPI_Iprobe(MPI_ANY_SOURCE, kAbortTag, state.control, &flag, &status) !=
          MPI_SUCCESS ||
      !flag)
    return;
  int count = 0;
  MPI_Get_count(&status, MPI_CHAR, &count);
  std::string reason(static_cast<size_t>(count > 0 ? count : 0), '\0');
  MPI_Recv(&reason[0], count, MPI_CHAR, status.MPI_SOURCE, kAbortTag,
           state.control, MPI_STATUS_IGNORE);
  throw Error(PD_ERROR_PEER, "rank " + std::to_string(status.MPI_SOURCE) +
                                 " failed: " + reason);
}

std::string seconds(double value) {
  std::ostringstream text;
  text << value << " s";
  return text.str();
}

void testSendsInline(MpiState &state);

/// How long a receive polls (yielding the CPU between polls) before it
/// sleeps between them: PIPEDREAM_MPI_SPIN_MS, default 2.
long spinMilliseconds() {
  static long value = [] {
    long v = envLong("PIPEDREAM_MPI_SPIN_MS", 2);
    return v >= 0 ? v : 2;
  }();
  return value;
}

/// Every notice that has arrived on this rank's channels (ShmChannel.h),
/// into their ranks' pending lists: while a rank waits for one peer, the
/// others' notice rings drain, so that no sender waits on a full ring for
/// a rank that waits for something else.
void collectNotices(MpiState &state) {
  for (size_t peer = 0; peer < state.shm.from.size(); ++peer)
    if (ShmChannel *channel = state.shm.from[peer].get())
      channel->collect(state.shm.pending[peer]);
}

/// Polls `ready()` until it returns true, an abort notice arrives or the
/// deadline passes; then `giveUp()` runs and an error is thrown.
template <typename Ready, typename GiveUp>
void waitUntil(MpiState &state, Ready ready, GiveUp giveUp, double timeout,
               const std::string &waitingFor) {
  auto start = std::chrono::steady_clock::now();
  auto deadline =
      start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                  std::chrono::duration<double>(timeout));
  // Spin (yielding) for a short while, then sleep in growing steps up to
  // 100 us: cheap on oversubscribed cores, fast for back-to-back messages.
  // (Up to 1 ms, a pipeline rank's every wait for an activation ended up
  // to 1 ms late; issue 21.)
  auto sleep = std::chrono::microseconds(10);
  // Abort notices are probed for every 50 us of the wait (an MPI_Iprobe
  // takes ~7 us: probing between every poll made a message that arrived
  // meanwhile wait for it).
  auto nextProbe = start;
  for (;;) {
    if (ready())
      return;
    collectNotices(state);
    testSendsInline(state);
    auto now = std::chrono::steady_clock::now();
    if (now >= nextProbe) {
      try {
        checkAbortNotices(state);
      } catch (...) {
        giveUp();
        throw;
      }
      nextProbe = now + std::chrono::microseconds(50);
    }
    if (now >= deadline) {
      giveUp();
      throw Error(PD_ERROR_TIMEOUT,
                  "timed out after " + seconds(timeout) + " waiting for " +
                      waitingFor);
    }
    // The rank's own work while it waits (IdleWork.h: packing ahead), a
    // unit at a time between tests.
    if (runIdleWork())
      continue;
    if (now - start < std::chrono::milliseconds(spinMilliseconds())) {
      std::this_thread::yield();
      continue;
    }
    std::this_thread::sleep_for(sleep);
    if (sleep < std::chrono::microseconds(100))
      sleep *= 2;
  }
}

/// Polls `request` until it completes, an abort notice arrives or the
/// deadline passes (then the request is cancelled and an error thrown).
void waitFor(MpiState &state, MPI_Request &request, MPI_Status &status,
             double timeout, const std::string &waitingFor,
             bool cancellable = true) {
  waitUntil(
      state,
      [&] {
        int done = 0;
        check(MPI_Test(&request, &done, &status), "MPI_Test " + waitingFor);
        return done != 0;
      },
      [&] {
        // NOTE: a collective's request cannot be cancelled (MPI 4.0,
        // 3.8.4); the rank is failing and exits.
        if (cancellable) {
          MPI_Cancel(&request);
          MPI_Request_free(&request);
        }
      },
      timeout, waitingFor);
}

/// One round over the buffered sends: takes those posted since the last
/// round into `inFlight` (the caller's), tests each without holding the
/// mutex, recycles the buffers of completed ones and records the first
/// failure (an MPI error, or a send past its deadline). Returns whether
/// sends remain in flight. `lock` holds state.mutex on entry and exit.
bool testSends(MpiState &state, std::list<MpiState::PendingSend> &inFlight,
               std::unique_lock<std::mutex> &lock) {
  inFlight.splice(inFlight.end(), state.posted);
  if (inFlight.empty())
    return false;
  lock.unlock();
  auto now = std::chrono::steady_clock::now();
  std::list<MpiState::PendingSend> done;
  pd_status failureStatus = PD_OK;
  std::string failure;
  for (auto it = inFlight.begin(); it != inFlight.end();) {
    int complete = 0;
    int code = MPI_Test(&it->request, &complete, MPI_STATUS_IGNORE);
    if (code != MPI_SUCCESS || (!complete && now >= it->deadline)) {
      if (failure.empty()) {
        failureStatus = code != MPI_SUCCESS ? PD_ERROR_IO : PD_ERROR_TIMEOUT;
        failure = code != MPI_SUCCESS
                      ? "MPI_Isend " + it->waitingFor + ": " + mpiError(code)
                      : "timed out after " + seconds(it->timeout) +
                            " waiting for " + it->waitingFor;
      }
      // NOTE: a timed-out request stays; the rank fails at its next call.
      complete = code != MPI_SUCCESS;
    }
    auto next = std::next(it);
    if (complete)
      done.splice(done.end(), inFlight, it);
    it = next;
  }
  lock.lock();
  for (MpiState::PendingSend &send : done) {
    state.pendingBytes -= send.bytes;
    state.spare.push_back(std::move(send.buffer));
  }
  if (!failure.empty() && state.failure.empty()) {
    state.failureStatus = failureStatus;
    state.failure = failure;
  }
  if (!done.empty() || !state.failure.empty() || inFlight.empty())
    state.drained.notify_all();
  return !inFlight.empty();
}

/// Without the progress thread: a round on the calling thread.
void testSendsInline(MpiState &state) {
  if (!state.threaded || state.progressThread)
    return;
  std::unique_lock<std::mutex> lock(state.mutex);
  testSends(state, state.inlineInFlight, lock);
}

/// Whether Open MPI's shared-memory transport was told to copy messages in
/// and out (single-copy mechanism "none": pipedream-run --ranks sets it
/// where cross-memory attach is refused, runtime/tooling/PipelineLaunch.cpp).
bool copiesInAndOut() {
  for (const char *name : {"OMPI_MCA_btl_vader_single_copy_mechanism",
                           "OMPI_MCA_btl_sm_single_copy_mechanism"}) {
    const char *value = std::getenv(name);
    if (value && std::string(value) == "none")
      return true;
  }
  return false;
}

/// Whether buffered sends get a progress thread: PIPEDREAM_MPI_PROGRESS_THREAD
/// =1 or =0 if set, else only where messages are copied in and out. There a
/// large message's later fragments leave only while the sender is in MPI,
/// so the thread sends them while the rank computes. With a single-copy
/// mechanism (cross-memory attach) the receiver reads the message itself
/// and the sender's own transport calls complete the request; a thread
/// waking every 50 us on the rank's core then only costs: bench/pipeline.py's
/// K=2 GPT, 5 alternating pairs of runs, median bubble over steps
/// 16.6-18.4% with it, 15.9-17.3% without (issue 21).
bool wantProgressThread() {
  if (const char *env = std::getenv("PIPEDREAM_MPI_PROGRESS_THREAD"))
    return std::string(env) != "0";
  return copiesInAndOut();
}

/// The progress thread: a round every ~50 us while sends are in flight (a
/// sleep, not a spin: it shares the rank's cores with its compute), asleep
/// on `wake` while none is.
void progressLoop(MpiState &state) {
#ifdef __linux__
  // Named, so that its CPU time can be told from the rank's compute
  // (/proc/PID/task/TID/comm; bench/pipeline.py reports it per step).
  pthread_setname_np(pthread_self(), "pd-mpi-progress");
#endif
  std::list<MpiState::PendingSend> inFlight;
  std::unique_lock<std::mutex> lock(state.mutex);
  while (!state.stop) {
    if (!testSends(state, inFlight, lock)) {
      // NOTE: a predicate, not a bare wait: a send posted while testSends
      // had the mutex released notified no one waiting; without it, that
      // send would stay in `posted` and drainSends would wait forever.
      state.wake.wait(lock, [&] { return state.stop || !state.posted.empty(); });
      continue;
    }
    lock.unlock();
    std::this_thread::sleep_for(std::chrono::microseconds(50));
    lock.lock();
  }
}

/// Throws the first buffered send's failure (a timeout names its peer).
void checkSendFailure(MpiState &state) {
  if (!state.threaded)
    return;
  std::lock_guard<std::mutex> lock(state.mutex);
  if (!state.failure.empty())
    throw Error(state.failureStatus, state.failure);
}

/// Waits until the buffered sends in flight are under `limit` bytes (all
/// sent for 0), a send fails or an abort notice arrives.
void drainSends(MpiState &state, size_t limit) {
  std::unique_lock<std::mutex> lock(state.mutex);
  while (state.failure.empty() && state.pendingBytes > limit) {
    if (state.progressThread) {
      state.drained.wait_for(lock, std::chrono::milliseconds(1));
    } else {
      testSends(state, state.inlineInFlight, lock);
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::microseconds(20));
      lock.lock();
    }
    if (state.failure.empty()) {
      lock.unlock();
      checkAbortNotices(state);
      lock.lock();
    }
  }
  if (!state.failure.empty())
    throw Error(state.failureStatus, state.failure);
}

/// How long a send drives its message itself before it returns, and
/// whether it yields between its tests. Default: 20 us, not yielding
/// (issue 21: a yielding 200 us spin took 8-9 ms per send on a loaded
/// machine, where sched_yield hands the core to every other runnable task
/// first: 137-152 ms of a 570 ms step in sends). PIPEDREAM_MPI_SEND_SPIN_US
/// and PIPEDREAM_MPI_SEND_YIELD=1 set them (measurements).
std::chrono::microseconds sendSpin() {
  static const long us =
      std::max(0L, envLong("PIPEDREAM_MPI_SEND_SPIN_US", 20));
  return std::chrono::microseconds(us);
}

bool sendYields() {
  static const bool yields = [] {
    const char *env = std::getenv("PIPEDREAM_MPI_SEND_YIELD");
    return env && std::string(env) == "1";
  }();
  return yields;
}

/// Most bytes of buffered sends in flight before a send waits.
constexpr size_t kMaxPendingBytes = size_t(1) << 30;

/// The communicator and MPI tag of a pipedream tag.
void route(MpiState &state, int64_t tag, MPI_Comm &comm, int &mpiTag) {
  if (tag < 0) {
    comm = state.control;
    mpiTag = static_cast<int>(-tag);
    return;
  }
  if (tag > state.tagUpperBound)
    throw Error(PD_ERROR_UNSUPPORTED,
                "tag " + std::to_string(tag) +
                    " exceeds this MPI's largest tag (MPI_TAG_UB = " +
                    std::to_string(state.tagUpperBound) + ")");
  comm = state.data;
  mpiTag = static_cast<int>(tag);
}

/// MPI counts are ints: the error for a longer message.
pd_status overCountLimit(size_t numBytes) {
  return fail(PD_ERROR_UNSUPPORTED,
              "a message of " + std::to_string(numBytes) +
                  " bytes is over the 2 GiB MPI count limit");
}

/// What a wait for `peer` ends with when it times out.
std::string peerStuck(size_t peer) {
  return "rank " + std::to_string(peer) +
         " is stuck, dead or running a program that does not match";
}

/// The pieces a message is copied in through a channel's slot.
constexpr size_t kShmPiece = 16 * 1024;

/// Whether a message of `tag` may go through the channels: program
/// messages (tag >= 0), and the pipeline's step status and step loss,
/// which the rank's thread exchanges at the end of each step, on the
/// critical path (over MPI rank 0's agreement took ~26 us a step). The other
/// runtime messages (weights, checkpoints, an embedder's traces) stay on
/// MPI: a channel has one sending and one receiving thread.
bool throughChannels(int64_t tag) {
  return tag >= 0 || tag == PD_TAG_STEP_STATUS || tag == PD_TAG_STEP_LOSS;
}

/// The channel of a message of `tag` to (from) `peer`, or null: it goes
/// over MPI.
ShmChannel *channelTo(MpiState &state, size_t peer, int64_t tag) {
  return throughChannels(tag) && peer < state.shm.to.size()
             ? state.shm.to[peer].get()
             : nullptr;
}

ShmChannel *channelFrom(MpiState &state, size_t peer, int64_t tag) {
  return throughChannels(tag) && peer < state.shm.from.size()
             ? state.shm.from[peer].get()
             : nullptr;
}

/// The first notice of `tag` collected from `peer`, taken off its pending
/// list; false if none has arrived.
bool takeNotice(MpiState &state, size_t peer, int64_t tag, ShmNotice &notice) {
  std::deque<ShmNotice> &pending = state.shm.pending[peer];
  state.shm.from[peer]->collect(pending);
  for (auto it = pending.begin(); it != pending.end(); ++it)
    if (it->tag == tag) {
      notice = *it;
      pending.erase(it);
      return true;
    }
  return false;
}

std::string sendWaitingFor(size_t peer, int64_t tag, size_t numBytes) {
  return "rank " + std::to_string(peer) + " to receive " + describeTag(tag) +
         " (" + std::to_string(numBytes) + " bytes): " + peerStuck(peer);
}

/// What a receive from `peer` waits for, for its timeout message.
std::string recvWaitingFor(size_t peer, int64_t tag, size_t numBytes) {
  return "rank " + std::to_string(peer) + " (" + describeTag(tag) + ", " +
         std::to_string(numBytes) + " bytes): " + peerStuck(peer);
}

/// The message in parts over MPI (tag routed to its communicator).
void sendOverMpi(MpiState &state, size_t peer, int64_t tag,
                 const MessagePart *parts, size_t count, size_t numBytes,
                 double timeout) {
  MPI_Comm comm;
  int mpiTag;
  route(state, tag, comm, mpiTag);
  std::string waitingFor = sendWaitingFor(peer, tag, numBytes);
  if (!state.threaded) {
    // Sent from the caller's memory (gathered first when in parts).
    std::vector<unsigned char> gathered;
    void *data = count == 1 ? parts[0].data : nullptr;
    if (count != 1) {
      gathered.resize(numBytes);
      gatherParts(parts, count, gathered.data());
      data = gathered.data();
    }
    MPI_Request request;
    check(MPI_Isend(data, static_cast<int>(numBytes), MPI_BYTE,
                    static_cast<int>(peer), mpiTag, comm, &request),
          "MPI_Isend to rank " + std::to_string(peer));
    MPI_Status status;
    waitFor(state, request, status, timeout, waitingFor);
    return;
  }
  drainSends(state, kMaxPendingBytes - std::min(numBytes, kMaxPendingBytes));
  MpiState::PendingSend send;
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    for (size_t i = 0; i < state.spare.size(); ++i)
      if (state.spare[i].capacity >= numBytes) {
        send.buffer = std::move(state.spare[i]);
        state.spare.erase(state.spare.begin() + static_cast<long>(i));
        break;
      }
  }
  if (send.buffer.capacity < numBytes) {
    send.buffer.data.reset(new unsigned char[numBytes ? numBytes : 1]);
    send.buffer.capacity = numBytes;
  }
  gatherParts(parts, count, send.buffer.data.get());
  send.bytes = numBytes;
  send.timeout = timeout;
  send.deadline =
      std::chrono::steady_clock::now() +
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(timeout));
  send.waitingFor = std::move(waitingFor);
  check(MPI_Isend(send.buffer.data.get(), static_cast<int>(numBytes), MPI_BYTE,
                  static_cast<int>(peer), mpiTag, comm, &send.request),
        "MPI_Isend to rank " + std::to_string(peer));
  // A receiver that is waiting already answers a large message's first
  // fragment within microseconds: drive the protocol here for a moment
  // (a progress thread woken from a sleep can take milliseconds on a
  // loaded machine), then leave the send to the progress thread.
  auto spinEnd = std::chrono::steady_clock::now() + sendSpin();
  const bool yields = sendYields();
  for (;;) {
    int complete = 0;
    check(MPI_Test(&send.request, &complete, MPI_STATUS_IGNORE),
          "MPI_Test " + send.waitingFor);
    std::lock_guard<std::mutex> lock(state.mutex);
    if (complete) {
      state.spare.push_back(std::move(send.buffer));
      return;
    }
    if (std::chrono::steady_clock::now() >= spinEnd) {
      state.pendingBytes += numBytes;
      state.posted.push_back(std::move(send));
      state.wake.notify_one();
      return;
    }
    // Not yielding by default: on a loaded machine a yield can hold the
    // sender for a whole scheduling round (see sendSpin).
    if (yields)
      std::this_thread::yield();
  }
}

/// `body(state, numBytes)` for a message of `parts` (its errors as the
/// status, guarded); one over MPI's int count is refused before.
template <typename Body>
pd_status onMessage(void *opaque, const MessagePart *parts, size_t count,
                    Body body) {
  auto &state = *static_cast<MpiState *>(opaque);
  size_t numBytes = partsBytes(parts, count);
  if (numBytes > static_cast<size_t>(INT32_MAX))
    return overCountLimit(numBytes);
  return guarded([&] { return body(state, numBytes); });
}

pd_status mpiSendParts(void *opaque, size_t peer, int64_t tag,
                       const MessagePart *parts, size_t count, double timeout) {
  return onMessage(opaque, parts, count, [&](MpiState &state, size_t numBytes) {
    ShmChannel *channel = channelTo(state, peer, tag);
    if (state.threaded || channel)
      checkSendFailure(state);
    // NOTE: a send through a channel does not probe for abort notices (an
    // MPI_Iprobe, ~7 us of Open MPI's progress engine: a third of the send
    // of a 128 KiB activation); the rank's next wait does.
    if (state.threaded && !channel)
      checkAbortNotices(state);
    if (channel) {
      // Into a slot of the channel when one is free, else over MPI; the
      // notice first either way (without buffered sends, an MPI send
      // waits for its receiver, which looks for the notice first). The
      // slot is filled piece by piece after the notice, so that a waiting
      // receiver copies each piece out while the next goes in.
      int32_t slot = channel->claimSlot(numBytes);
      ShmNotice notice{tag, numBytes, slot};
      if (!channel->tryPublish(notice))
        waitUntil(
            state, [&] { return channel->tryPublish(notice); }, [] {}, timeout,
            sendWaitingFor(peer, tag, numBytes));
      if (slot >= 0) {
        unsigned char *data = channel->slotData(slot);
        for (size_t from = 0; from < numBytes; from += kShmPiece) {
          size_t to = std::min(numBytes, from + kShmPiece);
          gatherPartsRange(parts, count, from, to, data + from);
          channel->markFilled(slot, to);
        }
        return PD_OK;
      }
    }
    sendOverMpi(state, peer, tag, parts, count, numBytes, timeout);
    return PD_OK;
  });
}

pd_status mpiSend(void *opaque, size_t peer, int64_t tag, const void *data,
                  size_t numBytes, double timeout) {
  MessagePart part{const_cast<void *>(data), numBytes};
  return mpiSendParts(opaque, peer, tag, &part, 1, timeout);
}

/// A message of `numBytes` over MPI into `data`.
void recvOverMpi(MpiState &state, size_t peer, int64_t tag, void *data,
                 size_t numBytes, double timeout) {
  MPI_Comm comm;
  int mpiTag;
  route(state, tag, comm, mpiTag);
  MPI_Request request;
  check(MPI_Irecv(data, static_cast<int>(numBytes), MPI_BYTE,
                  static_cast<int>(peer), mpiTag, comm, &request),
        "MPI_Irecv from rank " + std::to_string(peer));
  MPI_Status status;
  try {
    waitFor(state, request, status, timeout,
            recvWaitingFor(peer, tag, numBytes));
  } catch (const Error &e) {
    if (e.status == PD_ERROR_IO &&
        std::string(e.what()).find("TRUNCATE") != std::string::npos)
      throw Error(PD_ERROR_MISMATCH, "the message from rank " +
                                         std::to_string(peer) + " with " +
                                         describeTag(tag) + " is longer than " +
                                         std::to_string(numBytes) + " bytes");
    throw;
  }
  int count = 0;
  MPI_Get_count(&status, MPI_BYTE, &count);
  if (static_cast<size_t>(count) != numBytes)
    throw Error(PD_ERROR_MISMATCH,
                "the message from rank " + std::to_string(peer) + " with " +
                    describeTag(tag) + " has " + std::to_string(count) +
                    " bytes, expected " + std::to_string(numBytes));
}

/// A message into `parts`: out of its slot when it came through the
/// channel from `peer`, else over MPI (in parts: whole into a buffer, then
/// scattered; receiving in place through an hindexed datatype made the
/// K=2 GPT of bench/pipeline.py spend 16 ms a step in receives instead of
/// 4).
pd_status mpiRecvParts(void *opaque, size_t peer, int64_t tag,
                       const MessagePart *parts, size_t count, double timeout) {
  return onMessage(opaque, parts, count, [&](MpiState &state, size_t numBytes) {
    checkSendFailure(state);
    if (ShmChannel *channel = channelFrom(state, peer, tag)) {
      ShmNotice notice;
      if (!takeNotice(state, peer, tag, notice))
        waitUntil(
            state, [&] { return takeNotice(state, peer, tag, notice); }, [] {},
            timeout,
            recvWaitingFor(peer, tag, numBytes));
      if (notice.bytes != numBytes) {
        if (notice.slot >= 0)
          channel->releaseSlot(notice.slot);
        throw Error(PD_ERROR_MISMATCH,
                    "the message from rank " + std::to_string(peer) + " with " +
                        describeTag(tag) + " has " +
                        std::to_string(notice.bytes) + " bytes, expected " +
                        std::to_string(numBytes));
      }
      if (notice.slot >= 0) {
        // Each piece as soon as the sender has filled it.
        const unsigned char *data = channel->slotData(notice.slot);
        size_t copied = 0;
        auto copyFilled = [&] {
          size_t filled = channel->filled(notice.slot);
          if (filled > copied) {
            scatterPartsRange(data + copied, parts, count, copied, filled);
            copied = filled;
          }
          return copied == numBytes;
        };
        if (!copyFilled())
          waitUntil(
              state, copyFilled, [] {}, timeout,
              "rank " + std::to_string(peer) + " to fill its message (" +
                  describeTag(tag) + "): " + peerStuck(peer));
        channel->releaseSlot(notice.slot);
        return PD_OK;
      }
    }
    if (count == 1) {
      recvOverMpi(state, peer, tag, parts[0].data, numBytes, timeout);
      return PD_OK;
    }
    static thread_local std::vector<unsigned char> whole;
    whole.resize(numBytes);
    recvOverMpi(state, peer, tag, whole.data(), numBytes, timeout);
    scatterParts(whole.data(), parts, count);
    return PD_OK;
  });
}

pd_status mpiRecv(void *opaque, size_t peer, int64_t tag, void *data,
                  size_t numBytes, double timeout) {
  MessagePart part{data, numBytes};
  return mpiRecvParts(opaque, peer, tag, &part, 1, timeout);
}

void mpiAbort(void *opaque, const char *reason) {
  auto &state = *static_cast<MpiState *>(opaque);
  if (state.aborted)
    return;
  state.aborted = true;
  int size = 0;
  MPI_Comm_size(state.control, &size);
  std::vector<MPI_Request> requests;
  for (int peer = 0; peer < size; ++peer) {
    if (static_cast<size_t>(peer) == state.rank)
      continue;
    state.notices.emplace_back(reason);
    std::string &text = state.notices.back();
    MPI_Request request;
    if (MPI_Isend(&text[0], static_cast<int>(text.size()), MPI_CHAR, peer,
                  kAbortTag, state.control, &request) == MPI_SUCCESS)
      requests.push_back(request);
  }
  // Give the notices a moment to leave (eager sends complete at once);
  // never wait for a peer that may be gone.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (!requests.empty() && std::chrono::steady_clock::now() < deadline) {
    int done = 0;
    MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done,
                MPI_STATUSES_IGNORE);
    if (done)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

/// MPI_Allreduce (MPI_Iallreduce polled like a message) on a communicator
/// of the group, created once by the group's ranks only.
pd_status mpiAllReduce(void *opaque, const size_t *ranks, size_t numRanks,
                       void *data, size_t count, pd_dtype dtype,
                       double timeout) {
  auto &state = *static_cast<MpiState *>(opaque);
  if (count > static_cast<size_t>(INT32_MAX))
    return fail(PD_ERROR_UNSUPPORTED,
                "an all-reduce of " + std::to_string(count) +
                    " elements is over the MPI count limit");
  return guarded([&] {
    checkSendFailure(state);
    std::vector<size_t> group(ranks, ranks + numRanks);
    std::string members;
    for (size_t q : group)
      members += (members.empty() ? "" : ", ") + std::to_string(q);
    auto it = state.groups.find(group);
    if (it == state.groups.end()) {
      MPI_Group world, sub;
      check(MPI_Comm_group(state.data, &world), "MPI_Comm_group");
      std::vector<int> list(group.begin(), group.end());
      check(MPI_Group_incl(world, static_cast<int>(list.size()), list.data(),
                           &sub),
            "MPI_Group_incl");
      MPI_Comm comm = MPI_COMM_NULL;
      int code = MPI_Comm_create_group(state.data, sub, 0, &comm);
      MPI_Group_free(&sub);
      MPI_Group_free(&world);
      check(code, "MPI_Comm_create_group of ranks " + members);
      MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
      it = state.groups.emplace(group, comm).first;
    }
    MPI_Request request;
    check(MPI_Iallreduce(MPI_IN_PLACE, data, static_cast<int>(count),
                         dtype == PD_DTYPE_F64 ? MPI_DOUBLE : MPI_FLOAT,
                         MPI_SUM, it->second, &request),
          "MPI_Iallreduce over ranks " + members);
    MPI_Status status;
    waitFor(state, request, status, timeout,
            "the all-reduce over ranks " + members +
                ": a rank of the group is stuck, dead or running a program "
                "that does not match",
            /*cancellable=*/false);
    return PD_OK;
  });
}

/// Stops the progress thread; first, unless the rank aborted, waits for
/// the buffered sends in flight (they fail with a timeout or a peer's
/// abort like a send; MPI_Finalize needs them complete).
void stopProgress(MpiState &state) {
  if (!state.threaded)
    return;
  if (!state.aborted) {
    try {
      drainSends(state, 0);
    } catch (const Error &e) {
      std::fprintf(stderr, "error: rank %zu: %s\n", state.rank, e.what());
      state.aborted = true;
    }
  }
  if (state.progressThread) {
    {
      std::lock_guard<std::mutex> lock(state.mutex);
      state.stop = true;
      state.wake.notify_all();
    }
    state.progress.join();
  }
  state.threaded = false;
}

void mpiDestroy(void *opaque) {
  auto *state = static_cast<MpiState *>(opaque);
  stopProgress(*state);
  // The peers keep their own mappings of this rank's inbox and their
  // channels' messages in theirs.
  state->shm.to.clear();
  state->shm.from.clear();
  for (auto &[p, bytes] : state->shm.mappings)
    munmap(p, bytes);
  // NOTE: after an abort the peers may be gone or stuck; MPI_Finalize could
  // wait for them, so the process just exits (mpirun ends the others).
  if (!state->aborted) {
    for (auto &[group, comm] : state->groups)
      MPI_Comm_free(&comm);
    MPI_Comm_free(&state->data);
    MPI_Comm_free(&state->control);
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (state->initializedHere && !finalized)
      MPI_Finalize();
  }
  delete state;
}

const pd_transport_ops kMpiOps = {mpiSend, mpiRecv, mpiAbort, mpiDestroy,
                                  mpiAllReduce};

} // namespace

bool mpiAvailable() { return true; }

bool mpiBuffersSends(const pd_transport &transport) {
  return transport.kind == "mpi" &&
         static_cast<const MpiState *>(transport.state)->threaded;
}

size_t mpiSharedMemoryPeers(const pd_transport &transport) {
  if (transport.kind != "mpi")
    return 0;
  const auto &to = static_cast<const MpiState *>(transport.state)->shm.to;
  return static_cast<size_t>(
      std::count_if(to.begin(), to.end(), [](const auto &c) { return !!c; }));
}

void *mpiDataCommunicator(pd_transport &transport) {
  if (transport.kind != "mpi")
    throw Error(PD_ERROR_INTERNAL, "internal error: the " + transport.kind +
                                       " transport has no MPI communicator");
  return &static_cast<MpiState *>(transport.state)->data;
}

void mpiWaitCollective(pd_transport &transport, void *request, double timeout,
                       const std::string &waitingFor) {
  auto &state = *static_cast<MpiState *>(transport.state);
  MPI_Status status;
  waitFor(state, *static_cast<MPI_Request *>(request), status, timeout,
          waitingFor, /*cancellable=*/false);
}

/// Whether `bytes` of shared memory fit in /dev/shm with room to spare;
/// true where it cannot be asked.
bool sharedMemoryFits(size_t bytes) {
  struct statvfs fs;
  if (statvfs("/dev/shm", &fs) != 0)
    return true;
  return static_cast<double>(fs.f_bavail) * static_cast<double>(fs.f_frsize) >=
         2.0 * static_cast<double>(bytes);
}

/// This machine, as the ranks compare it: its host name and boot id.
std::string hostKey() {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  std::string key = name;
  if (FILE *f = std::fopen("/proc/sys/kernel/random/boot_id", "r")) {
    char boot[64] = {};
    if (std::fgets(boot, sizeof(boot), f))
      key += std::string(" ") + boot;
    std::fclose(f);
  }
  return key;
}

/// The ranks agree (MPI_Allreduce over `data`, MPI_MIN) on `ok`.
bool allAgree(MpiState &state, bool ok) {
  int value = ok ? 1 : 0;
  return MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_INT, MPI_MIN, state.data) ==
             MPI_SUCCESS &&
         value == 1;
}

/// `bytes` of the shared-memory object `name` from `offset` (page-aligned)
/// mapped read-write, or null. With O_CREAT the object is made `size`
/// bytes long and its memory reserved (posix_fallocate): a full /dev/shm
/// refuses it here rather than with SIGBUS at a later write.
void *mapShared(const std::string &name, int flags, size_t size, size_t offset,
                size_t bytes) {
  int fd = shm_open(name.c_str(), flags, 0600);
  if (fd < 0)
    return nullptr;
  void *p = MAP_FAILED;
  if (!(flags & O_CREAT) ||
      (ftruncate(fd, static_cast<off_t>(size)) == 0 &&
       posix_fallocate(fd, 0, static_cast<off_t>(size)) == 0))
    p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
             static_cast<off_t>(offset));
  close(fd);
  return p == MAP_FAILED ? nullptr : p;
}

/// The channels between the ranks of this machine (ShmChannel.h). Each
/// rank makes a POSIX shared-memory object, its inbox, holding one channel
/// from every other rank of the machine; each maps its channel in every
/// peer's inbox, and the names are unlinked once all are mapped (nothing
/// is left in /dev/shm, whatever happens later). Ranks are on one machine
/// when their host names and boot ids match. Off with PIPEDREAM_MPI_SHM=0,
/// for a rank alone on its machine, or when any rank cannot make or map
/// its part; every rank takes part in the collectives and all agree.
/// PIPEDREAM_MPI_SHM_SLOTS (default 4) and PIPEDREAM_MPI_SHM_SLOT_BYTES
/// (default 1 MiB, less on machines of more than 8 ranks: 256 MiB for
/// the machine's inboxes together, 64 KiB slots at least) shape the
/// channels. Collective over `state.data`.
void setupSharedMemory(MpiState &state, int rank, int size) {
  // Which ranks share this machine.
  constexpr int kKeyBytes = 320;
  std::string key = hostKey();
  key.resize(kKeyBytes, '\0');
  std::vector<char> keys(static_cast<size_t>(kKeyBytes) * size);
  if (MPI_Allgather(key.data(), kKeyBytes, MPI_CHAR, keys.data(), kKeyBytes,
                    MPI_CHAR, state.data) != MPI_SUCCESS)
    return;
  std::vector<int> local; // ranks of this machine, ascending
  for (int q = 0; q < size; ++q)
    if (std::memcmp(&keys[static_cast<size_t>(q) * kKeyBytes], key.data(),
                    kKeyBytes) == 0)
      local.push_back(q);
  const int localSize = static_cast<int>(local.size());
  const int localRank = static_cast<int>(
      std::find(local.begin(), local.end(), rank) - local.begin());
  ShmChannelShape shape;
  shape.slots = static_cast<uint32_t>(
      std::clamp(envLong("PIPEDREAM_MPI_SHM_SLOTS", 4), 1L, 64L));
  long slotDefault = std::clamp(
      (256L << 20) / (static_cast<long>(shape.slots) * localSize * localSize) /
          4096 * 4096,
      64L << 10, 1L << 20);
  shape.slotBytes = static_cast<uint64_t>(std::clamp(
      envLong("PIPEDREAM_MPI_SHM_SLOT_BYTES", slotDefault), 64L, 1L << 30));
  shape.slotBytes = (shape.slotBytes + 63) / 64 * 64;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t channelBytes =
      (ShmChannel::bytes(shape) + page - 1) / page * page;
  const size_t inbox = channelBytes * static_cast<size_t>(localSize);
  const char *env = std::getenv("PIPEDREAM_MPI_SHM");
  bool wanted = !(env && std::string(env) == "0") && localSize > 1 &&
                sharedMemoryFits(inbox * static_cast<size_t>(localSize));
  // One name per job: rank 0's random number.
  unsigned long long job = 0;
  if (rank == 0)
    job = (static_cast<unsigned long long>(getpid()) << 32) ^
          static_cast<unsigned long long>(
              std::chrono::steady_clock::now().time_since_epoch().count());
  if (!allAgree(state, wanted) ||
      MPI_Bcast(&job, 1, MPI_UNSIGNED_LONG_LONG, 0, state.data) != MPI_SUCCESS)
    return;
  auto nameOf = [&](int q) {
    return "/pipedream-" + std::to_string(job) + "-" + std::to_string(q);
  };
  // This rank's inbox, its channels empty.
  void *mine =
      mapShared(nameOf(rank), O_CREAT | O_EXCL | O_RDWR, inbox, 0, inbox);
  if (mine)
    for (int q = 0; q < localSize; ++q)
      if (q != localRank)
        ShmChannel::initialize(static_cast<unsigned char *>(mine) +
                                   size_t(q) * channelBytes,
                               shape);
  // Every inbox made before any is opened.
  bool made = allAgree(state, mine != nullptr);
  std::vector<std::pair<void *, size_t>> mapped;
  if (mine)
    mapped.emplace_back(mine, inbox);
  bool opened = made;
  if (made)
    for (int q = 0; q < localSize && opened; ++q) {
      if (q == localRank)
        continue;
      void *p = mapShared(nameOf(local[static_cast<size_t>(q)]), O_RDWR, inbox,
                          size_t(localRank) * channelBytes, channelBytes);
      opened = p != nullptr;
      if (p)
        mapped.emplace_back(p, channelBytes);
    }
  // Every channel mapped (or given up) before the names go.
  bool ok = allAgree(state, opened);
  if (mine)
    shm_unlink(nameOf(rank).c_str());
  if (!ok) {
    for (auto &[p, bytes] : mapped)
      munmap(p, bytes);
    return;
  }
  auto &shm = state.shm;
  shm.to.resize(static_cast<size_t>(size));
  shm.from.resize(static_cast<size_t>(size));
  shm.pending.resize(static_cast<size_t>(size));
  for (int q = 0, k = 1; q < localSize; ++q) {
    if (q == localRank)
      continue;
    auto peer = static_cast<size_t>(local[static_cast<size_t>(q)]);
    shm.to[peer] = std::make_unique<ShmChannel>(mapped[k++].first, shape);
    shm.from[peer] = std::make_unique<ShmChannel>(
        static_cast<unsigned char *>(mine) + size_t(q) * channelBytes, shape);
  }
  shm.mappings = std::move(mapped);
}

void createMpiTransport(pd_transport &transport) {
  auto state = std::make_unique<MpiState>();
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized)
      throw Error(PD_ERROR_UNSUPPORTED,
                  "MPI was finalized already; it cannot be initialized again");
    int provided = MPI_THREAD_SINGLE;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided) !=
        MPI_SUCCESS)
      throw Error(PD_ERROR_IO, "MPI_Init_thread failed");
    state->initializedHere = true;
  }
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  // PIPEDREAM_MPI_BUFFERED_SENDS=0: sends wait for their receiver (to
  // measure what buffering gains).
  const char *buffered = std::getenv("PIPEDREAM_MPI_BUFFERED_SENDS");
  state->threaded = provided >= MPI_THREAD_MULTIPLE &&
                    !(buffered && std::string(buffered) == "0");
  check(MPI_Comm_dup(MPI_COMM_WORLD, &state->data), "MPI_Comm_dup");
  check(MPI_Comm_dup(MPI_COMM_WORLD, &state->control), "MPI_Comm_dup");
  MPI_Comm_set_errhandler(state->data, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(state->control, MPI_ERRORS_RETURN);
  int rank = 0, size = 1, flag = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int *upperBound = nullptr;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &upperBound, &flag);
  if (flag && upperBound)
    state->tagUpperBound = *upperBound;
  state->rank = static_cast<size_t>(rank);
  transport.kind = "mpi";
  transport.rank = static_cast<size_t>(rank);
  transport.size = static_cast<size_t>(size);
  transport.ops = kMpiOps;
  setupSharedMemory(*state, rank, size);
  transport.sendParts = mpiSendParts;
  transport.recvParts = mpiRecvParts;
  state->progressThread = state->threaded && wantProgressThread();
  if (state->progressThread) {
    MpiState *raw = state.get();
    state->progress = std::thread([raw] { progressLoop(*raw); });
  }
  transport.state = state.release();
}

} // namespace runtime
} // namespace pipedream

#else // !PIPEDREAM_HAVE_MPI

namespace pipedream {
namespace runtime {

bool mpiAvailable() { return false; }

bool mpiBuffersSends(const pd_transport &) { return false; }

size_t mpiSharedMemoryPeers(const pd_transport &) { return 0; }

void *mpiDataCommunicator(pd_transport &) {
  throw Error(PD_ERROR_UNSUPPORTED, "this runtime was built without MPI");
}

void mpiWaitCollective(pd_transport &, void *, double, const std::string &) {
  throw Error(PD_ERROR_UNSUPPORTED, "this runtime was built without MPI");
}

void createMpiTransport(pd_transport &) {
  throw Error(PD_ERROR_UNSUPPORTED,
              "this runtime was built without MPI (install Open MPI, e.g. "
              "Debian's openmpi-bin libopenmpi-dev, and reconfigure); use the "
              "in-process threads transport instead");
}

} // namespace runtime
} // namespace pipedream

#endif // PIPEDREAM_HAVE_MPI
