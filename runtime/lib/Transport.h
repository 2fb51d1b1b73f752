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

#include <string>

struct pd_transport {
  std::string kind;
  size_t rank = 0;
  size_t size = 1;
  double timeout = 60;
  pd_transport_ops ops{};
  void *state = nullptr;
};

namespace pipedream {
namespace runtime {

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
