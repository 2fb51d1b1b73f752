//===- GpuFakeSupport.cpp - a CUDA support library without CUDA ----------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Stands in for libpipedream_gpu.so ($PIPEDREAM_GPU_LIBRARY) so the
// runtime's cuda-bundle paths run on machines without a GPU: "device"
// memory is separate host memory, filled with garbage when allocated and
// tracked, so a call that gets a host pointer (pd_gpu_pointer_is_device),
// reads a buffer that was never uploaded, or returns a value that was never
// downloaded gives wrong results in GpuRuntimeTest.cpp. Implements the
// pd_gpu_support table and the few mgpu*/pd_gpu_* functions
// GpuTestProgram.c calls. Copies are synchronous; there are no streams.
// Its "NCCL" connects the ranks of one process (in-memory FIFOs), so the
// runtime's NCCL bootstrap and forwarding are tested too.
// pd_gpu_fake_copies reports the calling thread's copies (of the table;
// the test program's mgpuMemcpy is not counted), so tests can check that
// pipeline registers never cross to the host.
//
//===----------------------------------------------------------------------===//

#include "GpuSupport.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

std::mutex mutex;
std::set<const void *> allocations;
thread_local std::string firstError;
thread_local int streamToken;
/// This thread's copies: {calls, bytes} to the device, to the host, and
/// device to device.
thread_local uint64_t copies[6];

bool isDevice(const void *pointer) {
  std::lock_guard<std::mutex> lock(mutex);
  return allocations.count(pointer) != 0;
}

void record(const std::string &message) {
  if (firstError.empty())
    firstError = message;
}

void copyOut(const std::string &text, char *out, size_t capacity) {
  size_t n = text.size() < capacity - 1 ? text.size() : capacity - 1;
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
}

int deviceCount(char *, size_t) { return 1; }

int deviceName(char *name, size_t capacity) {
  copyOut("fake device (host memory)", name, capacity);
  return 0;
}

int takeError(char *message, size_t capacity) {
  if (firstError.empty())
    return 0;
  copyOut(firstError, message, capacity);
  firstError.clear();
  return 1;
}

void *alloc(size_t bytes) {
  void *pointer = std::malloc(bytes ? bytes : 1);
  if (!pointer) {
    record("fake: out of memory");
    return nullptr;
  }
  std::memset(pointer, 0xA5, bytes); // never uploaded = garbage
  std::lock_guard<std::mutex> lock(mutex);
  allocations.insert(pointer);
  return pointer;
}

void release(void *pointer) {
  if (!pointer)
    return;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!allocations.erase(pointer)) {
      record("fake: free of memory that is not device memory");
      return;
    }
  }
  std::free(pointer);
}

/// Checks the direction of a copy.
int copy(void *dst, const void *src, size_t bytes, bool dstDevice,
         bool srcDevice, const char *what) {
  if (isDevice(dst) != dstDevice || isDevice(src) != srcDevice) {
    record(std::string("fake: ") + what + " with the wrong kind of memory");
    return 1;
  }
  std::memcpy(dst, src, bytes);
  return 0;
}

int counted(int kind, size_t bytes, int failed) {
  if (!failed) {
    copies[2 * kind] += 1;
    copies[2 * kind + 1] += bytes;
  }
  return failed;
}
int copyToDevice(void *device, const void *host, size_t bytes) {
  return counted(0, bytes,
                 copy(device, host, bytes, true, false, "copy_to_device"));
}
int copyToHost(void *host, const void *device, size_t bytes) {
  return counted(1, bytes,
                 copy(host, device, bytes, false, true, "copy_to_host"));
}
int copyDevice(void *dst, const void *src, size_t bytes) {
  return counted(2, bytes, copy(dst, src, bytes, true, true, "copy_device"));
}
int zero(void *device, size_t bytes) {
  if (!isDevice(device)) {
    record("fake: zero of host memory");
    return 1;
  }
  std::memset(device, 0, bytes);
  return 0;
}
int synchronize() { return 0; }
// A fake NCCL: ranks of one process, one FIFO per (communicator id, from,
// to), as NCCL delivers in order; the id is a counter.
struct Message {
  int64_t tag;
  std::vector<unsigned char> bytes;
};
std::mutex mailMutex;
std::condition_variable mailArrived;
std::map<std::tuple<uint64_t, size_t, size_t>, std::deque<Message>> mail;
std::atomic<uint64_t> nextId{1};

struct FakeComm {
  uint64_t id;
  size_t rank, size;
};

int ncclUniqueId(unsigned char *id) {
  std::memset(id, 0, PD_GPU_NCCL_ID_BYTES);
  uint64_t value = nextId++;
  std::memcpy(id, &value, sizeof(value));
  return 0;
}

pd_status fakeSend(void *state, size_t peer, int64_t tag, const void *data,
                   size_t bytes, double) {
  auto *c = static_cast<FakeComm *>(state);
  const unsigned char *p = static_cast<const unsigned char *>(data);
  {
    std::lock_guard<std::mutex> lock(mailMutex);
    mail[{c->id, c->rank, peer}].push_back(
        {tag, std::vector<unsigned char>(p, p + bytes)});
  }
  mailArrived.notify_all();
  return PD_OK;
}

pd_status fakeRecv(void *state, size_t peer, int64_t tag, void *data,
                   size_t bytes, double timeout) {
  auto *c = static_cast<FakeComm *>(state);
  std::unique_lock<std::mutex> lock(mailMutex);
  auto &queue = mail[{c->id, peer, c->rank}];
  if (!mailArrived.wait_for(lock, std::chrono::duration<double>(timeout),
                            [&] { return !queue.empty(); })) {
    record("fake nccl: recv from rank " + std::to_string(peer) +
           " timed out");
    return PD_ERROR_TIMEOUT;
  }
  Message message = std::move(queue.front());
  queue.pop_front();
  if (message.tag != tag || message.bytes.size() != bytes) {
    record("fake nccl: message from rank " + std::to_string(peer) +
           " has tag " + std::to_string(message.tag) + ", expected " +
           std::to_string(tag));
    return PD_ERROR_MISMATCH;
  }
  std::memcpy(data, message.bytes.data(), bytes);
  return PD_OK;
}

void fakeAbort(void *, const char *) {}
void fakeDestroy(void *state) { delete static_cast<FakeComm *>(state); }

int ncclCreate(size_t rank, size_t size, const unsigned char *id,
               pd_transport_ops *ops, void **state) {
  auto *c = new FakeComm{0, rank, size};
  std::memcpy(&c->id, id, sizeof(c->id));
  ops->send = fakeSend;
  ops->recv = fakeRecv;
  ops->abort = fakeAbort;
  ops->destroy = fakeDestroy;
  *state = c;
  return 0;
}

} // namespace

FAKE_EXPORT const pd_gpu_support *pd_gpu_support_get(void) {
  static const pd_gpu_support table = {
      PD_GPU_SUPPORT_ABI, deviceCount, deviceName,   takeError,
      alloc,              release,     copyToDevice, copyToHost,
      copyDevice,         zero,        synchronize,  ncclUniqueId,
      ncclCreate,
  };
  return &table;
}

FAKE_EXPORT void *mgpuStreamCreate() { return &streamToken; }
FAKE_EXPORT void mgpuStreamSynchronize(void *) {}
/// cudaMemcpyDefault: any direction.
FAKE_EXPORT void mgpuMemcpy(void *dst, void *src, size_t bytes, void *) {
  std::memcpy(dst, src, bytes);
}
/// Device memory for program code (GpuTestProgram.c's status record), as
/// libpipedream_gpu.so's mgpuMemAlloc gives compiled code for gpu.alloc.
FAKE_EXPORT void *mgpuMemAlloc(uint64_t bytes, void *, bool) {
  return alloc(bytes);
}
FAKE_EXPORT void mgpuMemFree(void *pointer, void *) { release(pointer); }
FAKE_EXPORT int pd_gpu_pointer_is_device(const void *pointer) {
  return isDevice(pointer) ? 1 : 0;
}
/// The calling thread's copies so far: {calls, bytes} to the device, to
/// the host, device to device.
FAKE_EXPORT void pd_gpu_fake_copies(uint64_t out[6]) {
  std::memcpy(out, copies, sizeof(copies));
}
FAKE_EXPORT void pd_gpu_record_error(const char *message) {
  record(message ? message : "error");
}
