//===- TransportNccl.cpp - pd_transport over NCCL -------------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The NCCL transport of libpipedream_gpu.so: one communicator over all
// ranks (one GPU each), built from an ncclUniqueId that the runtime
// bootstraps (GpuDevice.cpp: over MPI, or a TCP exchange from torchrun-style
// RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT). Messages go through ncclSend/
// ncclRecv on the transport's communication stream, each message a 16-byte
// header (tag, size; checked by the receiver, since NCCL matches by order,
// not tag) and the payload. NCCL sends are rendezvous: a 1F1B program whose
// ranks both send before they receive would deadlock if each send waited
// for its receiver. So a send copies its data and returns; the pending
// sends are posted in ONE group with the rank's next receive (as Megatron's
// send_forward_recv_backward batches a schedule step), or when the
// transport is destroyed. Data may be host or device memory (cuda
// pipelines send and receive their device-resident registers directly; the
// runtime's own messages, the step loss and gathered weights, are host
// memory): a device send is copied device to device, a host send staged
// through device buffers, and a receive lands with cudaMemcpyDefault. A
// message to this rank itself is queued and delivered by the matching
// recv.
//
// Every wait polls the stream and ncclCommGetAsyncError against the
// deadline: a peer that dies or never posts its side ends in
// PD_ERROR_TIMEOUT/PD_ERROR_PEER after ncclCommAbort, never a hang.
//
//===----------------------------------------------------------------------===//

#include "GpuSupport.h"

#include <cuda_runtime.h>

#include <string>

namespace pipedream {
namespace runtime {
void gpuRecordError(const std::string &message);
} // namespace runtime
} // namespace pipedream

#if !PIPEDREAM_HAVE_NCCL

// Built without NCCL (not found at configure time): the transport says so.
int pdGpuNcclUniqueId(unsigned char *) {
  pipedream::runtime::gpuRecordError(
      "nccl: this pipedream was built without NCCL (install it, e.g. "
      "libnccl-dev, and reconfigure)");
  return -1;
}
int pdGpuNcclCreate(size_t, size_t, const unsigned char *, pd_transport_ops *,
                    void **) {
  return pdGpuNcclUniqueId(nullptr);
}

#else // PIPEDREAM_HAVE_NCCL

#include <nccl.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace pipedream {
namespace runtime {
cudaStream_t gpuThreadStream();
void gpuRecordError(const std::string &message);
} // namespace runtime
} // namespace pipedream

using pipedream::runtime::gpuRecordError;

extern "C" void mgpuSetDefaultDevice(int32_t device);

namespace {

struct Header {
  int64_t tag;
  uint64_t bytes;
};

struct DeviceBuffer {
  void *data = nullptr;
  size_t capacity = 0;
  bool reserve(size_t bytes) {
    if (bytes <= capacity)
      return true;
    if (data)
      cudaFree(data);
    data = nullptr;
    capacity = 0;
    if (cudaMalloc(&data, bytes) != cudaSuccess)
      return false;
    capacity = bytes;
    return true;
  }
  ~DeviceBuffer() {
    if (data)
      cudaFree(data);
  }
};

struct NcclState {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  size_t rank = 0, size = 1;
  bool aborted = false;
  std::string abortReason;
  DeviceBuffer sendBuffer, recvBuffer, headers;
  /// Messages to this rank itself, in send order.
  std::deque<std::pair<int64_t, std::vector<unsigned char>>> selfQueue;
  /// Sends not posted yet (see the file comment): copies of the data, in
  /// host memory (`bytes`) or, for device data, in `device`.
  struct Pending {
    size_t peer;
    int64_t tag;
    std::vector<unsigned char> bytes;
    std::shared_ptr<DeviceBuffer> device;
    size_t size() const { return device ? device->capacity : bytes.size(); }
    const void *data() const {
      return device ? device->data : static_cast<const void *>(bytes.data());
    }
  };
  std::vector<Pending> pending;
  double lastTimeout = 60;
  /// Communicators of all-reduce groups (shared weights), made by their
  /// ranks only: ncclCommInitRank with an id the group's first rank sends
  /// the others over this transport.
  std::map<std::vector<size_t>, ncclComm_t> groups;
  DeviceBuffer reduceBuffer;
};

std::string ncclText(ncclResult_t result) {
  return std::string(ncclGetErrorString(result)) + " (ncclResult " +
         std::to_string(static_cast<int>(result)) + ")";
}

bool ncclFailed(ncclResult_t result, const char *call) {
  if (result == ncclSuccess || result == ncclInProgress)
    return false;
  gpuRecordError(std::string("nccl: ") + call + ": " + ncclText(result));
  return true;
}

bool cudaFailed(cudaError_t error, const char *call) {
  if (error == cudaSuccess)
    return false;
  gpuRecordError(std::string("cuda: ") + call + ": " +
                 cudaGetErrorString(error) + " (" + cudaGetErrorName(error) +
                 ")");
  return true;
}

void abortComm(NcclState &s, const std::string &reason) {
  if (!s.aborted && s.comm)
    ncclCommAbort(s.comm);
  if (!s.aborted)
    s.abortReason = reason;
  s.aborted = true;
}

/// Polls `comm` (the transport's or a group's communicator) and the
/// stream until the queued work is done or `timeout` seconds pass. On an
/// NCCL or CUDA error or the timeout the communicator and the transport
/// are aborted (unusable: later calls fail instead of hanging); `errorHint`
/// and `timeoutHint` end the NCCL error's and the timeout's messages.
pd_status pollQueued(NcclState &s, ncclComm_t comm, double timeout,
                     const std::string &what, const char *errorHint,
                     const char *timeoutHint) {
  auto abortAll = [&](const char *reason) {
    if (comm != s.comm)
      ncclCommAbort(comm);
    abortComm(s, reason);
  };
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration<double>(timeout);
  for (;;) {
    // NOTE: a non-blocking communicator may still be enqueueing the group
    // (ncclInProgress); only then does the stream hold the work.
    ncclResult_t async = ncclSuccess;
    ncclCommGetAsyncError(comm, &async);
    if (async != ncclSuccess && async != ncclInProgress) {
      gpuRecordError("nccl: " + what + ": " + ncclText(async) + errorHint);
      abortAll("an NCCL error");
      return PD_ERROR_PEER;
    }
    if (async == ncclSuccess) {
      cudaError_t done = cudaStreamQuery(s.stream);
      if (done == cudaSuccess)
        return PD_OK;
      if (done != cudaErrorNotReady) {
        cudaFailed(done, "cudaStreamQuery");
        abortAll("a CUDA error");
        return PD_ERROR_INTERNAL;
      }
    }
    if (std::chrono::steady_clock::now() > deadline) {
      gpuRecordError("nccl: " + what + " timed out after " +
                     std::to_string(timeout) + " s" + timeoutHint);
      abortAll("a timeout");
      return PD_ERROR_TIMEOUT;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

/// Waits for the stream's queued point-to-point work until `timeout`
/// seconds pass.
pd_status wait(NcclState &s, double timeout, const std::string &what) {
  return pollQueued(s, s.comm, timeout, what,
                    " (a peer failed or the network broke)",
                    " (the peer never posted its side; $PIPEDREAM_TIMEOUT "
                    "sets the limit)");
}

/// True for device (or managed) memory; false for host memory.
bool isDevicePointer(const void *pointer) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, pointer) != cudaSuccess) {
    cudaGetLastError(); // unregistered host memory on old drivers
    return false;
  }
  return attributes.type == cudaMemoryTypeDevice ||
         attributes.type == cudaMemoryTypeManaged;
}

pd_status checkUsable(NcclState &s, size_t peer) {
  if (s.aborted) {
    gpuRecordError("nccl: the transport was aborted earlier (" +
                   s.abortReason + ")");
    return PD_ERROR_PEER;
  }
  if (peer >= s.size) {
    gpuRecordError("nccl: rank " + std::to_string(peer) + " is not in [0, " +
                   std::to_string(s.size) + ")");
    return PD_ERROR_INVALID_ARGUMENT;
  }
  return PD_OK;
}

pd_status ncclSendOp(void *state, size_t peer, int64_t tag, const void *data,
                     size_t bytes, double timeout) {
  NcclState &s = *static_cast<NcclState *>(state);
  if (pd_status status = checkUsable(s, peer))
    return status;
  s.lastTimeout = timeout;
  if (bytes && isDevicePointer(data)) {
    // NOTE: the copy is waited for: the caller may overwrite `data` (a
    // register) on its own stream as soon as this returns.
    if (peer == s.rank) {
      std::vector<unsigned char> copy(bytes);
      if (cudaFailed(cudaMemcpyAsync(copy.data(), data, bytes,
                                     cudaMemcpyDeviceToHost, s.stream),
                     "cudaMemcpyAsync (NCCL send to self)") ||
          cudaFailed(cudaStreamSynchronize(s.stream), "cudaStreamSynchronize"))
        return PD_ERROR_INTERNAL;
      s.selfQueue.emplace_back(tag, std::move(copy));
      return PD_OK;
    }
    auto device = std::make_shared<DeviceBuffer>();
    if (!device->reserve(bytes)) {
      gpuRecordError("cuda: cannot allocate " + std::to_string(bytes) +
                     " bytes for an NCCL send");
      return PD_ERROR_OUT_OF_MEMORY;
    }
    if (cudaFailed(cudaMemcpyAsync(device->data, data, bytes,
                                   cudaMemcpyDeviceToDevice, s.stream),
                   "cudaMemcpyAsync (NCCL device send)") ||
        cudaFailed(cudaStreamSynchronize(s.stream), "cudaStreamSynchronize"))
      return PD_ERROR_INTERNAL;
    s.pending.push_back({peer, tag, {}, std::move(device)});
    return PD_OK;
  }
  const unsigned char *p = static_cast<const unsigned char *>(data);
  std::vector<unsigned char> copy(p, p + bytes);
  if (peer == s.rank)
    s.selfQueue.emplace_back(tag, std::move(copy));
  else
    s.pending.push_back({peer, tag, std::move(copy), nullptr});
  return PD_OK;
}

/// Posts the pending sends and, when `recvPeer` is set, one receive of
/// `bytes` bytes, as one NCCL group; waits for it (deadline `timeout`) and
/// returns the received header in `header`.
pd_status postGroup(NcclState &s, const size_t *recvPeer, void *data,
                    size_t bytes, double timeout, Header &header,
                    const std::string &what) {
  // Device layout: the send headers, then each payload (256-byte aligned),
  // then the receive's header slot.
  size_t n = s.pending.size();
  auto align = [](size_t v) { return (v + 255) / 256 * 256; };
  std::vector<size_t> offsets(n);
  size_t total = align((n + 1) * sizeof(Header));
  for (size_t i = 0; i < n; ++i) {
    offsets[i] = total;
    total += align(s.pending[i].size());
  }
  std::vector<Header> headers(n + 1);
  for (size_t i = 0; i < n; ++i)
    headers[i] = {s.pending[i].tag, s.pending[i].size()};
  if (!s.sendBuffer.reserve(total) ||
      (recvPeer && !s.recvBuffer.reserve(bytes))) {
    gpuRecordError("cuda: cannot allocate " + std::to_string(total + bytes) +
                   " bytes of NCCL staging memory");
    return PD_ERROR_OUT_OF_MEMORY;
  }
  unsigned char *base = static_cast<unsigned char *>(s.sendBuffer.data);
  Header *deviceHeaders = reinterpret_cast<Header *>(base);
  if (n && cudaFailed(cudaMemcpyAsync(base, headers.data(),
                                      n * sizeof(Header),
                                      cudaMemcpyHostToDevice, s.stream),
                      "cudaMemcpyAsync (NCCL headers)"))
    return PD_ERROR_INTERNAL;
  for (size_t i = 0; i < n; ++i)
    if (s.pending[i].size() &&
        cudaFailed(cudaMemcpyAsync(base + offsets[i], s.pending[i].data(),
                                   s.pending[i].size(), cudaMemcpyDefault,
                                   s.stream),
                   "cudaMemcpyAsync (NCCL send staging)"))
      return PD_ERROR_INTERNAL;
  bool ok = !ncclFailed(ncclGroupStart(), "ncclGroupStart");
  for (size_t i = 0; ok && i < n; ++i) {
    int to = static_cast<int>(s.pending[i].peer);
    ok = !ncclFailed(ncclSend(deviceHeaders + i, sizeof(Header), ncclUint8,
                              to, s.comm, s.stream),
                     "ncclSend") &&
         (s.pending[i].size() == 0 ||
          !ncclFailed(ncclSend(base + offsets[i], s.pending[i].size(),
                               ncclUint8, to, s.comm, s.stream),
                      "ncclSend"));
  }
  if (ok && recvPeer) {
    int from = static_cast<int>(*recvPeer);
    // NOTE: the payload is received with the expected size; a sender with
    // a different size makes NCCL fail or truncate, and the header check
    // names the mismatch.
    ok = !ncclFailed(ncclRecv(deviceHeaders + n, sizeof(Header), ncclUint8,
                              from, s.comm, s.stream),
                     "ncclRecv") &&
         (bytes == 0 ||
          !ncclFailed(ncclRecv(s.recvBuffer.data, bytes, ncclUint8, from,
                               s.comm, s.stream),
                      "ncclRecv"));
  }
  if (!ncclFailed(ncclGroupEnd(), "ncclGroupEnd") && ok) {
    // Posted: the data is in the device staging buffer now.
  } else {
    abortComm(s, "an NCCL error");
    return PD_ERROR_INTERNAL;
  }
  if (recvPeer &&
      (cudaFailed(cudaMemcpyAsync(&header, deviceHeaders + n, sizeof(header),
                                  cudaMemcpyDeviceToHost, s.stream),
                  "cudaMemcpyAsync (NCCL header)") ||
       // NOTE: cudaMemcpyDefault: `data` is host memory or a device
       // register (wait() below completes it before the caller's stream
       // reads it).
       (bytes && cudaFailed(cudaMemcpyAsync(data, s.recvBuffer.data, bytes,
                                            cudaMemcpyDefault, s.stream),
                            "cudaMemcpyAsync (NCCL recv staging)"))))
    return PD_ERROR_INTERNAL;
  pd_status status = wait(s, timeout, what);
  if (status == PD_OK)
    s.pending.clear();
  return status;
}

pd_status ncclRecvOp(void *state, size_t peer, int64_t tag, void *data,
                     size_t bytes, double timeout) {
  NcclState &s = *static_cast<NcclState *>(state);
  if (pd_status status = checkUsable(s, peer))
    return status;
  s.lastTimeout = timeout;
  if (peer == s.rank) {
    if (s.selfQueue.empty()) {
      gpuRecordError("nccl: recv from this rank itself with no message sent "
                     "to it (it would wait forever)");
      return PD_ERROR_INVALID_ARGUMENT;
    }
    auto message = std::move(s.selfQueue.front());
    s.selfQueue.pop_front();
    if (message.first != tag || message.second.size() != bytes) {
      gpuRecordError("nccl: message from rank " + std::to_string(peer) +
                     " has tag " + std::to_string(message.first) + ", " +
                     std::to_string(message.second.size()) +
                     " bytes; expected tag " + std::to_string(tag) + ", " +
                     std::to_string(bytes) + " bytes");
      return PD_ERROR_MISMATCH;
    }
    if (bytes && isDevicePointer(data)) {
      if (cudaFailed(cudaMemcpyAsync(data, message.second.data(), bytes,
                                     cudaMemcpyHostToDevice, s.stream),
                     "cudaMemcpyAsync (NCCL recv from self)") ||
          cudaFailed(cudaStreamSynchronize(s.stream), "cudaStreamSynchronize"))
        return PD_ERROR_INTERNAL;
    } else if (bytes) {
      std::memcpy(data, message.second.data(), bytes);
    }
    return PD_OK;
  }
  Header header{};
  std::string what = "recv from rank " + std::to_string(peer);
  if (!s.pending.empty())
    what += " (with " + std::to_string(s.pending.size()) + " sends)";
  if (pd_status status =
          postGroup(s, &peer, data, bytes, timeout, header, what))
    return status;
  if (header.tag != tag || header.bytes != bytes) {
    gpuRecordError("nccl: message from rank " + std::to_string(peer) +
                   " has tag " + std::to_string(header.tag) + ", " +
                   std::to_string(header.bytes) + " bytes; expected tag " +
                   std::to_string(tag) + ", " + std::to_string(bytes) +
                   " bytes (NCCL delivers in send order)");
    return PD_ERROR_MISMATCH;
  }
  return PD_OK;
}

/// Tag of the group ids on the transport's own messages (below the
/// runtime's reserved tags).
constexpr int64_t kGroupIdTag = -1000;

/// Polls `comm` and the stream until the queued all-reduce is done.
pd_status waitGroup(NcclState &s, ncclComm_t comm, double timeout,
                    const std::string &what) {
  return pollQueued(s, comm, timeout, what, "", "");
}

pd_status ncclAllReduceOp(void *state, const size_t *ranks, size_t numRanks,
                          void *data, size_t count, pd_dtype dtype,
                          double timeout) {
  NcclState &s = *static_cast<NcclState *>(state);
  if (pd_status status = checkUsable(s, s.rank))
    return status;
  std::vector<size_t> group(ranks, ranks + numRanks);
  size_t me = 0;
  while (me < numRanks && group[me] != s.rank)
    ++me;
  // Pending sends first: a peer may wait for them before its all-reduce.
  if (!s.pending.empty()) {
    Header unused{};
    if (pd_status status = postGroup(s, nullptr, nullptr, 0, timeout, unused,
                                     "delivering sends before an all-reduce"))
      return status;
  }
  auto it = s.groups.find(group);
  if (it == s.groups.end()) {
    ncclUniqueId unique;
    if (me == 0) {
      if (ncclFailed(ncclGetUniqueId(&unique), "ncclGetUniqueId"))
        return PD_ERROR_INTERNAL;
      for (size_t m = 1; m < numRanks; ++m)
        if (pd_status status = ncclSendOp(state, group[m], kGroupIdTag,
                                          &unique, sizeof(unique), timeout))
          return status;
      Header unused{};
      if (pd_status status = postGroup(s, nullptr, nullptr, 0, timeout, unused,
                                       "sending an all-reduce group's id"))
        return status;
    } else if (pd_status status = ncclRecvOp(state, group[0], kGroupIdTag,
                                             &unique, sizeof(unique),
                                             timeout)) {
      return status;
    }
    ncclComm_t comm = nullptr;
    if (ncclFailed(ncclCommInitRank(&comm, static_cast<int>(numRanks), unique,
                                    static_cast<int>(me)),
                   "ncclCommInitRank (all-reduce group)"))
      return PD_ERROR_INTERNAL;
    it = s.groups.emplace(group, comm).first;
  }
  size_t bytes = count * (dtype == PD_DTYPE_F64 ? 8 : 4);
  bool device = isDevicePointer(data);
  void *target = data;
  if (!device) {
    if (!s.reduceBuffer.reserve(bytes)) {
      gpuRecordError("nccl: out of device memory for an all-reduce of " +
                     std::to_string(bytes) + " bytes");
      return PD_ERROR_OUT_OF_MEMORY;
    }
    target = s.reduceBuffer.data;
    if (cudaFailed(cudaMemcpyAsync(target, data, bytes,
                                   cudaMemcpyHostToDevice, s.stream),
                   "cudaMemcpyAsync"))
      return PD_ERROR_INTERNAL;
  } else if (cudaFailed(cudaStreamSynchronize(pipedream::runtime::gpuThreadStream()),
                        "cudaStreamSynchronize")) {
    // The stage functions wrote the gradient on the rank's own stream.
    return PD_ERROR_INTERNAL;
  }
  if (ncclFailed(ncclAllReduce(target, target, count,
                               dtype == PD_DTYPE_F64 ? ncclFloat64
                                                     : ncclFloat32,
                               ncclSum, it->second, s.stream),
                 "ncclAllReduce"))
    return PD_ERROR_INTERNAL;
  if (!device && cudaFailed(cudaMemcpyAsync(data, target, bytes,
                                            cudaMemcpyDeviceToHost, s.stream),
                            "cudaMemcpyAsync"))
    return PD_ERROR_INTERNAL;
  return waitGroup(s, it->second, timeout, "ncclAllReduce");
}

void ncclAbortOp(void *state, const char *reason) {
  NcclState &s = *static_cast<NcclState *>(state);
  abortComm(s, reason ? reason : "aborted");
}

void ncclDestroyOp(void *state) {
  NcclState *s = static_cast<NcclState *>(state);
  // Sends still pending are delivered before the communicator goes away.
  // (A failure was recorded; nobody is left to report it to.)
  if (s->comm && !s->aborted && !s->pending.empty()) {
    Header unused{};
    (void)postGroup(*s, nullptr, nullptr, 0, s->lastTimeout, unused,
                    "delivering the last sends");
  }
  // NOTE: after ncclCommAbort the communicator is gone. A non-blocking
  // communicator finalizes asynchronously: poll (bounded), else abort.
  if (s->comm && !s->aborted) {
    ncclResult_t result = ncclCommFinalize(s->comm);
    auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (result == ncclInProgress &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
      ncclCommGetAsyncError(s->comm, &result);
    }
    if (result == ncclSuccess)
      ncclCommDestroy(s->comm);
    else
      ncclCommAbort(s->comm);
  }
  for (auto &[group, comm] : s->groups)
    if (s->aborted)
      ncclCommAbort(comm);
    else
      ncclCommDestroy(comm);
  if (s->stream)
    cudaStreamDestroy(s->stream);
  delete s;
}

} // namespace

int pdGpuNcclUniqueId(unsigned char id[PD_GPU_NCCL_ID_BYTES]) {
  static_assert(sizeof(ncclUniqueId) == PD_GPU_NCCL_ID_BYTES,
                "ncclUniqueId size");
  ncclUniqueId unique;
  if (ncclFailed(ncclGetUniqueId(&unique), "ncclGetUniqueId"))
    return -1;
  std::memcpy(id, &unique, sizeof(unique));
  return 0;
}

int pdGpuNcclCreate(size_t rank, size_t size,
                    const unsigned char id[PD_GPU_NCCL_ID_BYTES],
                    pd_transport_ops *ops, void **state) {
  auto s = new NcclState();
  s->rank = rank;
  s->size = size;
  int devices = 0;
  if (cudaFailed(cudaGetDeviceCount(&devices), "cudaGetDeviceCount")) {
    delete s;
    return -1;
  }
  // One GPU per rank: the rank on this machine (torchrun's LOCAL_RANK, Open
  // MPI's OMPI_COMM_WORLD_LOCAL_RANK), else the rank, modulo the devices.
  int perMachine = devices > 0 ? devices : 1;
  int device = static_cast<int>(rank % static_cast<size_t>(perMachine));
  for (const char *name : {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK"})
    if (const char *local = std::getenv(name)) {
      device = std::abs(std::atoi(local)) % perMachine;
      break;
    }
  mgpuSetDefaultDevice(device);
  if (cudaFailed(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking),
                 "cudaStreamCreateWithFlags")) {
    delete s;
    return -1;
  }
  ncclUniqueId unique;
  std::memcpy(&unique, id, sizeof(unique));
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclResult_t result =
      ncclCommInitRankConfig(&s->comm, static_cast<int>(size), unique,
                             static_cast<int>(rank), &config);
  if (ncclFailed(result, "ncclCommInitRankConfig")) {
    cudaStreamDestroy(s->stream);
    delete s;
    return -1;
  }
  // Non-blocking init: poll (a rank that never joins ends in a timeout).
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  for (;;) {
    ncclResult_t async = ncclInProgress;
    ncclCommGetAsyncError(s->comm, &async);
    if (async == ncclSuccess)
      break;
    if (async != ncclInProgress ||
        std::chrono::steady_clock::now() > deadline) {
      gpuRecordError(async != ncclInProgress
                         ? "nccl: ncclCommInitRankConfig: " + ncclText(async)
                         : std::string("nccl: communicator setup timed out "
                                       "after 120 s (not every rank joined)"));
      ncclCommAbort(s->comm);
      cudaStreamDestroy(s->stream);
      delete s;
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ops->send = ncclSendOp;
  ops->recv = ncclRecvOp;
  ops->abort = ncclAbortOp;
  ops->destroy = ncclDestroyOp;
  ops->all_reduce = ncclAllReduceOp;
  *state = s;
  return 0;
}

#endif // PIPEDREAM_HAVE_NCCL
