//===- Transport.h - pd_transport behind the C API --------------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Every transport (threads, MPI, user-defined) is a pd_transport_ops table
// plus its state; the C entry points in Transport.cpp check arguments and
// add the timeout. Internal to the runtime library.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_RUNTIME_LIB_TRANSPORT_H
#define PIPEDREAM_RUNTIME_LIB_TRANSPORT_H

#include "pipedream/runtime.h"

#include <cstring>
#include <string>

namespace pipedream {
namespace runtime {
/// One contiguous piece of a message sent or received in parts (message
/// groups, MessageGroups.h): the message is its parts' bytes in order.
struct MessagePart {
  void *data;
  size_t bytes;
};

/// The bytes of a message of `count` parts.
inline size_t partsBytes(const MessagePart *parts, size_t count) {
  size_t total = 0;
  for (size_t k = 0; k < count; ++k)
    total += parts[k].bytes;
  return total;
}

/// `fn(data, bytes)` on each piece of bytes [from, to) of the message the
/// parts make, in order (a piece: the range's part of one part).
template <typename Fn>
inline void forPartsRange(const MessagePart *parts, size_t count, size_t from,
                          size_t to, Fn fn) {
  size_t start = 0;
  for (size_t k = 0; k < count && start < to; start += parts[k++].bytes) {
    size_t lo = from > start ? from : start;
    size_t end = start + parts[k].bytes;
    size_t hi = to < end ? to : end;
    if (lo < hi)
      fn(static_cast<unsigned char *>(parts[k].data) + (lo - start), hi - lo);
  }
}

/// Bytes [from, to) of the message the parts make, into `out`.
inline void gatherPartsRange(const MessagePart *parts, size_t count,
                             size_t from, size_t to, unsigned char *out) {
  forPartsRange(parts, count, from, to, [&](unsigned char *data, size_t n) {
    std::memcpy(out, data, n);
    out += n;
  });
}

/// `in` as bytes [from, to) of the message, into the parts.
inline void scatterPartsRange(const unsigned char *in, const MessagePart *parts,
                              size_t count, size_t from, size_t to) {
  forPartsRange(parts, count, from, to, [&](unsigned char *data, size_t n) {
    std::memcpy(data, in, n);
    in += n;
  });
}

/// The parts one after the other into `out` (partsBytes long).
inline void gatherParts(const MessagePart *parts, size_t count,
                        unsigned char *out) {
  gatherPartsRange(parts, count, 0, partsBytes(parts, count), out);
}

/// `in` (partsBytes long) into the parts, in order.
inline void scatterParts(const unsigned char *in, const MessagePart *parts,
                         size_t count) {
  scatterPartsRange(in, parts, count, 0, partsBytes(parts, count));
}

/// A transport's own send and receive of a message in parts, matched as
/// pd_transport_send / pd_transport_recv of the parts' total size are:
/// the send copies each part once into its buffer (as a whole message
/// would be), the receive fills each part from its buffer.
using SendPartsFn = pd_status (*)(void *state, size_t peer, int64_t tag,
                                  const MessagePart *parts, size_t count,
                                  double timeout);
using RecvPartsFn = pd_status (*)(void *state, size_t peer, int64_t tag,
                                  const MessagePart *parts, size_t count,
                                  double timeout);
} // namespace runtime
} // namespace pipedream

struct pd_transport {
  std::string kind;
  size_t rank = 0;
  size_t size = 1;
  double timeout = 60;
  pd_transport_ops ops{};
  void *state = nullptr;
  /// Messages in parts of the transport's own (threads and MPI);
  /// where null, sendParts / recvParts gather into or scatter from a
  /// buffer around one contiguous message.
  pipedream::runtime::SendPartsFn sendParts = nullptr;
  pipedream::runtime::RecvPartsFn recvParts = nullptr;
};

namespace pipedream {
namespace runtime {

/// A message of `count` parts to (from) `peer` over `transport`, with its
/// timeout; the status and last error as pd_transport_send / _recv.
pd_status sendParts(pd_transport &transport, size_t peer, int64_t tag,
                    const MessagePart *parts, size_t count);
pd_status recvParts(pd_transport &transport, size_t peer, int64_t tag,
                    const MessagePart *parts, size_t count);

/// $PIPEDREAM_TIMEOUT when it is a positive number, else 60 seconds.
double defaultTimeout();

/// $`name` read as a whole number (strtol), or `fallback` when unset: the
/// transports' tuning knobs, each clamping it as it needs.
long envLong(const char *name, long fallback);

/// "tag 3" for program tags, "the step loss" / "weights" for the reserved
/// ones, for messages.
std::string describeTag(int64_t tag);

/// True when `transport` moves device memory itself: the threads
/// transport (ranks on streams of one GPU), whose device messages are
/// device-to-device copies, and NCCL (device buffers sent directly). Other
/// transports (MPI, user-defined) take host memory: cuda pipelines stage
/// their registers through it.
bool transportTakesDevice(const pd_transport &transport);

/// True when `transport`'s sends never wait for their receiver (they copy
/// the message and return): the threads transport, and MPI with buffered
/// sends (TransportMpi.cpp). A rank program may then send before a receive
/// that precedes the send in its order (Pipeline.cpp, sendAhead) without
/// risking a deadlock: ranks wait only in receives, and every message goes
/// no later than the order says. False for user-defined transports and
/// NCCL (untried on a GPU).
bool transportBuffersSends(const pd_transport &transport);

/// Device-memory messages over a transport for which transportTakesDevice
/// holds (NCCL: pd_transport_send/recv with the device pointer) (cuda pipelines' registers), matched with host-memory messages of
/// the same peer and tag as pd_transport_send/recv are. A send copies the
/// data into a device buffer of the transport and waits for its stream, so
/// `device` may be overwritten at once; a receive copies it into `device`
/// and waits. Throw Error with the transport's message.
void sendDevice(pd_transport &transport, size_t peer, int64_t tag,
                const void *device, size_t bytes);
void recvDevice(pd_transport &transport, size_t peer, int64_t tag,
                void *device, size_t bytes);

/// TransportMpi.cpp: fills `transport` (kind, rank, size, ops, state), or
/// throws Error (PD_ERROR_UNSUPPORTED without MPI).
void createMpiTransport(pd_transport &transport);
bool mpiAvailable();
/// Whether the MPI `transport` buffers its sends (MPI_THREAD_MULTIPLE and
/// not PIPEDREAM_MPI_BUFFERED_SENDS=0).
bool mpiBuffersSends(const pd_transport &transport);
/// How many ranks the MPI `transport` exchanges program messages with
/// through shared-memory channels (ShmChannel.h): the other ranks of its
/// host, or 0 when the channels are off.
size_t mpiSharedMemoryPeers(const pd_transport &transport);

/// TransportMpi.cpp, for the replica groups (ReplicaGroup.cpp): the MPI
/// transport's program-message communicator (points at an MPI_Comm; void
/// so this header needs no mpi.h), and the wait for a nonblocking
/// collective's request (points at an MPI_Request), which ends on the
/// peers' abort notices and the deadline as a message's does. Throw Error
/// without MPI or for another transport.
void *mpiDataCommunicator(pd_transport &transport);
void mpiWaitCollective(pd_transport &transport, void *request, double timeout,
                       const std::string &waitingFor);

} // namespace runtime
} // namespace pipedream

#endif // PIPEDREAM_RUNTIME_LIB_TRANSPORT_H
