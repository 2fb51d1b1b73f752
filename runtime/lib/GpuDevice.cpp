//===- GpuDevice.cpp - the runtime's side of cuda bundles -----------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Coherence of a cuda bundle's buffers (docs/Runtime.md "GPU bundles"):
// every buffer has a host copy (`memory`, what the C API and checkpoints
// see) and a device copy (`device`), and `hostCurrent`/`deviceCurrent` say
// which hold the value. Host access goes through ensureMemory (downloads a
// device-newer value, then treats the host copy as written), calls through
// deviceArgument (uploads a host-newer value). Value inputs are uploaded
// and value outputs downloaded at every call, so a pointer kept from
// pd_buffer_data keeps working as on the CPU. Pipeline registers and
// weight versions of cuda pipelines live in device memory only
// (Pipeline.cpp); calls pass them through.
//
//===----------------------------------------------------------------------===//

#include "pipedream/gpu.h"

#include "Bundle.h"
#include "GpuDevice.h"
#include "Transport.h"

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include <dlfcn.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#ifndef PIPEDREAM_HAVE_CUDA
#define PIPEDREAM_HAVE_CUDA 0
#endif

namespace pipedream {
namespace runtime {

namespace {

std::mutex supportMutex;
const pd_gpu_support *support = nullptr;
std::string supportError;

/// Candidate paths of libpipedream_gpu.so, most specific first.
std::vector<std::string> supportCandidates() {
  std::vector<std::string> paths;
  if (const char *env = std::getenv("PIPEDREAM_GPU_LIBRARY"))
    if (*env)
      return {env};
#ifdef PIPEDREAM_GPU_LIBRARY_BUILD
  paths.push_back(PIPEDREAM_GPU_LIBRARY_BUILD);
#endif
  // Installed next to the executable: PREFIX/bin/x -> PREFIX/lib.
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n > 0) {
    std::string exe(self, static_cast<size_t>(n));
    std::string dir = exe.substr(0, exe.rfind('/'));
    paths.push_back(dir + "/../lib/libpipedream_gpu.so");
    paths.push_back(dir + "/libpipedream_gpu.so");
  }
#ifdef PIPEDREAM_GPU_LIBRARY_INSTALL
  paths.push_back(PIPEDREAM_GPU_LIBRARY_INSTALL);
#endif
  paths.push_back("libpipedream_gpu.so");
  return paths;
}

const pd_gpu_support *loadSupport(std::string &error) {
  std::lock_guard<std::mutex> lock(supportMutex);
  if (support || !supportError.empty()) {
    error = supportError;
    return support;
  }
  if (!PIPEDREAM_HAVE_CUDA && !std::getenv("PIPEDREAM_GPU_LIBRARY")) {
    supportError = "this pipedream runtime was built without CUDA support "
                   "(configure with -DPIPEDREAM_ENABLE_CUDA=ON and the CUDA "
                   "toolkit installed)";
    error = supportError;
    return nullptr;
  }
  std::string tried;
  for (const std::string &path : supportCandidates()) {
    if (path.find('/') != std::string::npos && access(path.c_str(), R_OK) != 0)
      continue;
    dlerror();
    // NOTE: RTLD_GLOBAL so the program.so of cuda bundles, dlopen'ed
    // later with RTLD_LOCAL, resolves mgpu* and pd_gpu_gemm_* here.
    void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!handle) {
      const char *reason = dlerror();
      tried += (tried.empty() ? "" : "; ") + path + ": " +
               (reason ? reason : "dlopen failed");
      continue;
    }
    using Get = const pd_gpu_support *(*)();
    auto get = reinterpret_cast<Get>(dlsym(handle, "pd_gpu_support_get"));
    const pd_gpu_support *table = get ? get() : nullptr;
    if (!table || table->abi != PD_GPU_SUPPORT_ABI) {
      tried += (tried.empty() ? "" : "; ") + path +
               ": not a pipedream GPU support library of ABI " +
               std::to_string(PD_GPU_SUPPORT_ABI);
      continue;
    }
    support = table;
    return support;
  }
  supportError = "cannot load the CUDA support library libpipedream_gpu.so (" +
                 (tried.empty() ? std::string("not found; set "
                                              "$PIPEDREAM_GPU_LIBRARY")
                                : tried) +
                 ")";
  error = supportError;
  return nullptr;
}

std::string takeGpuError() {
  char message[2048];
  if (support && support->take_error(message, sizeof(message)))
    return message;
  return "";
}

void gpuCall(int failed, const std::string &where) {
  if (failed) {
    std::string message = takeGpuError();
    throw Error(PD_ERROR_INTERNAL,
                where + (message.empty() ? "GPU operation failed" : message));
  }
}

} // namespace

const pd_gpu_support &gpuSupport() {
  std::string error;
  const pd_gpu_support *table = loadSupport(error);
  if (!table)
    throw Error(PD_ERROR_UNSUPPORTED, error);
  return *table;
}

void requireCudaDevice(const std::string &why) {
  std::string error;
  const pd_gpu_support *table = loadSupport(error);
  std::string suffix = " (" + why + ")";
  if (!table)
    throw Error(PD_ERROR_UNSUPPORTED, "no CUDA support: " + error + suffix);
  char message[1024] = {0};
  if (table->device_count(message, sizeof(message)) <= 0)
    throw Error(PD_ERROR_UNSUPPORTED,
                std::string("no CUDA device: ") + message + suffix);
}

void checkGpuError(const std::string &where) {
  std::string message = takeGpuError();
  if (!message.empty())
    throw Error(PD_ERROR_INTERNAL, where + message);
}

void DeviceFree::operator()(void *device) const {
  if (device && support)
    support->free(device);
}

DeviceMemory allocateDevice(size_t bytes, const std::string &what) {
  const pd_gpu_support &gpu = gpuSupport();
  DeviceMemory memory(gpu.alloc(bytes ? bytes : 1));
  gpuCall(!memory, "device memory for " + what + ": ");
  return memory;
}

void copyToDevice(void *device, const void *host, size_t bytes,
                  const std::string &where) {
  if (bytes)
    gpuCall(support->copy_to_device(device, host, bytes) ||
                support->synchronize(),
            where);
}

void copyToHost(void *host, const void *device, size_t bytes,
                const std::string &where) {
  if (bytes)
    gpuCall(support->copy_to_host(host, device, bytes) ||
                support->synchronize(),
            where);
}

void copyDeviceToDevice(void *dst, const void *src, size_t bytes,
                        const std::string &where) {
  if (bytes)
    gpuCall(support->copy_device(dst, src, bytes) || support->synchronize(),
            where);
}

void zeroDevice(void *device, size_t bytes, const std::string &where) {
  if (bytes)
    gpuCall(support->zero(device, bytes) || support->synchronize(), where);
}

void *deviceArgument(pd_buffer &buffer) {
  const pd_gpu_support &gpu = *support;
  if (!buffer.device) {
    if (!buffer.onRank)
      throw Error(PD_ERROR_INVALID_ARGUMENT,
                  buffer.what + " is not on this rank");
    buffer.device = gpu.alloc(buffer.type.numBytes);
    gpuCall(!buffer.device, "device memory for " + buffer.what + ": ");
    // A fresh host buffer is zeroed: upload it below.
    buffer.deviceCurrent = false;
  }
  if (!buffer.deviceCurrent) {
    if (!buffer.memory)
      buffer.memory = allocateAligned(buffer.type.numBytes, buffer.what);
    if (buffer.type.numBytes)
      gpuCall(gpu.copy_to_device(buffer.device, buffer.memory.get(),
                                 buffer.type.numBytes),
              "uploading " + buffer.what + ": ");
    buffer.deviceCurrent = true;
    buffer.hostCurrent = true;
  }
  return buffer.device;
}

void downloadBuffer(pd_buffer &buffer) {
  if (!buffer.cuda || buffer.hostCurrent)
    return;
  if (!buffer.memory)
    buffer.memory = allocateAligned(buffer.type.numBytes, buffer.what);
  const pd_gpu_support &gpu = *support;
  gpuCall(gpu.copy_to_host(buffer.memory.get(), buffer.device,
                           buffer.type.numBytes) ||
              gpu.synchronize(),
          "downloading " + buffer.what + ": ");
  buffer.hostCurrent = true;
}

void releaseDevice(pd_buffer &buffer) {
  if (buffer.device && support)
    support->free(buffer.device);
  buffer.device = nullptr;
}

void zeroBuffer(pd_buffer &buffer) {
  if (!buffer.cuda) {
    std::memset(ensureMemory(buffer), 0, buffer.type.numBytes);
    return;
  }
  if (!buffer.device) {
    if (!buffer.onRank)
      return (void)ensureMemory(buffer); // throws the usual message
    buffer.device = support->alloc(buffer.type.numBytes);
    gpuCall(!buffer.device, "device memory for " + buffer.what + ": ");
  }
  // NOTE: no upload first: the old value is overwritten.
  if (buffer.type.numBytes)
    gpuCall(support->zero(buffer.device, buffer.type.numBytes),
            "zeroing " + buffer.what + ": ");
  buffer.deviceCurrent = true;
  buffer.hostCurrent = false;
}

void *boundArgument(pd_buffer &buffer) {
  if (!buffer.cuda)
    return ensureMemory(buffer);
  if (!buffer.memory) {
    if (!buffer.onRank)
      return ensureMemory(buffer); // throws the usual message
    buffer.memory = allocateAligned(buffer.type.numBytes, buffer.what);
  }
  return buffer.memory.get();
}

std::vector<bool> prepareDeviceCall(pd_function &function, void **arguments,
                                    void **device) {
  size_t count = function.buffers.size();
  std::vector<bool> bound(count);
  for (size_t k = 0; k < count; ++k) {
    const BufferSpec &spec = function.spec.buffers[k];
    pd_buffer &buffer = *function.buffers[k];
    bound[k] = arguments[k] == buffer.memory.get();
    if (bound[k]) {
      // Value inputs may have been written through a kept pointer.
      if (spec.role == PD_ROLE_INPUT && !isBoundBuffer(spec))
        buffer.deviceCurrent = false;
      device[k] = deviceArgument(buffer);
      continue;
    }
    // Pipeline registers and weight versions: device memory already
    // (Pipeline.cpp). NOTE: no translation, so a host pointer left here
    // reaches the kernel (the fake device's test program rejects it).
    device[k] = arguments[k];
  }
  return bound;
}

void finishDeviceCall(pd_function &function, const std::vector<bool> &bound) {
  const pd_gpu_support &gpu = *support;
  const std::string where = "function '" + function.spec.name + "': ";
  gpuCall(gpu.synchronize(), where);
  checkGpuError(where);
  bool downloads = false;
  for (size_t k = 0; k < function.buffers.size(); ++k) {
    const BufferSpec &spec = function.spec.buffers[k];
    pd_buffer &buffer = *function.buffers[k];
    if (!bound[k])
      continue;
    if (spec.role == PD_ROLE_INPUT)
      continue;
    // Outputs, and (conservatively) weights, grads and states, which a
    // kernel may update in place: the device copy is the value now.
    buffer.deviceCurrent = true;
    buffer.hostCurrent = false;
    if (spec.role == PD_ROLE_OUTPUT && spec.updates.empty()) {
      // Value outputs: downloaded now (synchronized below), so a pointer
      // kept from pd_buffer_data shows them.
      gpuCall(gpu.copy_to_host(buffer.memory.get(), buffer.device,
                               spec.type.numBytes),
              where + "downloading '" + spec.name + "': ");
      buffer.hostCurrent = true;
      downloads = true;
    }
  }
  if (downloads)
    gpuCall(gpu.synchronize(), where);
  for (auto &[output, target] : function.updates) {
    std::swap(output->memory, target->memory);
    std::swap(output->device, target->device);
    std::swap(output->hostCurrent, target->hostCurrent);
    std::swap(output->deviceCurrent, target->deviceCurrent);
  }
}

void invokeFunction(pd_function &function, void **arguments) {
  if (!function.cuda) {
    function.entry(arguments);
    // NOTE: the new values become the persistent ones without a copy; every
    // function sees them on its next run because arguments are rebuilt from
    // `memory` for each call (never cache a buffer's memory pointer).
    for (auto &[output, target] : function.updates)
      if (!output->inPlaceOf) // in place: the value is in `target` already
        std::swap(output->memory, target->memory);
    return;
  }
  std::vector<void *> device(function.buffers.size());
  std::vector<bool> bound =
      prepareDeviceCall(function, arguments, device.data());
  function.entry(device.data());
  finishDeviceCall(function, bound);
}

bool parseTorchrunEnv(const std::function<const char *(const char *)> &getenv,
                      TorchrunEnv &env, std::string &error) {
  auto number = [&](const char *name, long long min, long long max,
                    long long &out) {
    const char *text = getenv(name);
    if (!text || !*text) {
      error = std::string("$") + name +
              " is not set (run under torchrun, or set RANK, WORLD_SIZE, "
              "MASTER_ADDR and MASTER_PORT)";
      return false;
    }
    char *end = nullptr;
    errno = 0;
    long long value = std::strtoll(text, &end, 10);
    if (errno || *end || end == text || value < min || value > max) {
      error = std::string("$") + name + " is '" + text +
              "', expected an integer in [" + std::to_string(min) + ", " +
              std::to_string(max) + "]";
      return false;
    }
    out = value;
    return true;
  };
  long long size = 0, rank = 0, port = 0;
  if (!number("WORLD_SIZE", 1, 1 << 20, size) ||
      !number("RANK", 0, size - 1, rank))
    return false;
  const char *address = getenv("MASTER_ADDR");
  if (!address || !*address) {
    error = "$MASTER_ADDR is not set (the host of rank 0)";
    return false;
  }
  const char *override = getenv("PIPEDREAM_NCCL_PORT");
  if (override && *override) {
    if (!number("PIPEDREAM_NCCL_PORT", 1, 65535, port))
      return false;
  } else {
    if (!number("MASTER_PORT", 1, 65534, port))
      return false;
    ++port;
  }
  env.rank = static_cast<size_t>(rank);
  env.size = static_cast<size_t>(size);
  env.address = address;
  env.port = static_cast<int>(port);
  return true;
}

/// The tag of the NCCL id on a bootstrap transport. NOTE: PD_TAG_TRACE, the
/// embedders' runtime-level tag: the exchange ends before any step runs.
constexpr int64_t kNcclIdTag = PD_TAG_TRACE;

void exchangeNcclId(const TorchrunEnv &env, double timeout,
                    unsigned char id[PD_GPU_NCCL_ID_BYTES]) {
  using Clock = std::chrono::steady_clock;
  auto deadline = Clock::now() + std::chrono::duration<double>(timeout);
  auto remainingMs = [&] {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - Clock::now())
                    .count();
    return left > 0 ? static_cast<int>(left) : 0;
  };
  std::string where = "NCCL bootstrap (" + env.address + ":" +
                      std::to_string(env.port) + "): ";
  auto sysError = [&](const char *call) {
    return Error(PD_ERROR_IO, where + call + ": " + std::strerror(errno));
  };
  if (env.rank == 0) {
    int server = socket(AF_INET6, SOCK_STREAM, 0);
    bool v6 = server >= 0;
    if (!v6)
      server = socket(AF_INET, SOCK_STREAM, 0);
    if (server < 0)
      throw sysError("socket");
    std::unique_ptr<int, void (*)(int *)> closer(&server,
                                                 [](int *fd) { close(*fd); });
    int one = 1, zero = 0;
    setsockopt(server, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    int bound;
    if (v6) {
      setsockopt(server, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
      sockaddr_in6 address{};
      address.sin6_family = AF_INET6;
      address.sin6_addr = in6addr_any;
      address.sin6_port = htons(static_cast<uint16_t>(env.port));
      bound = bind(server, reinterpret_cast<sockaddr *>(&address),
                   sizeof(address));
    } else {
      sockaddr_in address{};
      address.sin_family = AF_INET;
      address.sin_addr.s_addr = htonl(INADDR_ANY);
      address.sin_port = htons(static_cast<uint16_t>(env.port));
      bound = bind(server, reinterpret_cast<sockaddr *>(&address),
                   sizeof(address));
    }
    if (bound != 0)
      throw sysError("bind");
    if (listen(server, 64) != 0)
      throw sysError("listen");
    for (size_t served = 1; served < env.size; ++served) {
      pollfd wait{server, POLLIN, 0};
      int ready = poll(&wait, 1, remainingMs());
      if (ready <= 0)
        throw Error(PD_ERROR_TIMEOUT,
                    where + "only " + std::to_string(served - 1) + " of " +
                        std::to_string(env.size - 1) +
                        " ranks connected before the timeout");
      int peer = accept(server, nullptr, nullptr);
      if (peer < 0)
        throw sysError("accept");
      ssize_t sent = send(peer, id, PD_GPU_NCCL_ID_BYTES, MSG_NOSIGNAL);
      close(peer);
      if (sent != PD_GPU_NCCL_ID_BYTES)
        throw sysError("send");
    }
    return;
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  std::string port = std::to_string(env.port);
  for (;;) {
    addrinfo *list = nullptr;
    int resolved = getaddrinfo(env.address.c_str(), port.c_str(), &hints, &list);
    if (resolved != 0)
      throw Error(PD_ERROR_IO, where + "cannot resolve '" + env.address +
                                   "': " + gai_strerror(resolved));
    for (addrinfo *a = list; a; a = a->ai_next) {
      int fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
      if (fd < 0)
        continue;
      if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
        freeaddrinfo(list);
        size_t got = 0;
        while (got < PD_GPU_NCCL_ID_BYTES) {
          pollfd wait{fd, POLLIN, 0};
          if (poll(&wait, 1, remainingMs()) <= 0)
            break;
          ssize_t n = recv(fd, id + got, PD_GPU_NCCL_ID_BYTES - got, 0);
          if (n <= 0)
            break;
          got += static_cast<size_t>(n);
        }
        close(fd);
        if (got != PD_GPU_NCCL_ID_BYTES)
          throw Error(PD_ERROR_PEER,
                      where + "rank 0 closed the connection before sending "
                              "the NCCL id");
        return;
      }
      close(fd);
    }
    freeaddrinfo(list);
    if (remainingMs() == 0)
      throw Error(PD_ERROR_TIMEOUT,
                  where + "rank 0 did not accept a connection before the "
                          "timeout");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

namespace {

/// The runtime-side transport: forwards to the support library's NCCL ops
/// and turns its recorded errors into the thread's last error.
struct NcclForward {
  pd_transport_ops ops{};
  void *state = nullptr;
};

pd_status forwardStatus(pd_status status) {
  if (status != PD_OK) {
    std::string message = takeGpuError();
    fail(status, message.empty() ? "nccl transport failed" : message);
  }
  return status;
}

pd_status forwardSend(void *state, size_t peer, int64_t tag, const void *data,
                      size_t bytes, double timeout) {
  auto *f = static_cast<NcclForward *>(state);
  return forwardStatus(f->ops.send(f->state, peer, tag, data, bytes, timeout));
}
pd_status forwardRecv(void *state, size_t peer, int64_t tag, void *data,
                      size_t bytes, double timeout) {
  auto *f = static_cast<NcclForward *>(state);
  return forwardStatus(f->ops.recv(f->state, peer, tag, data, bytes, timeout));
}
pd_status forwardAllReduce(void *state, const size_t *ranks, size_t numRanks,
                           void *data, size_t count, pd_dtype dtype,
                           double timeout) {
  auto *f = static_cast<NcclForward *>(state);
  if (!f->ops.all_reduce)
    return fail(PD_ERROR_UNSUPPORTED, "nccl: this support library has no "
                                      "all-reduce");
  return forwardStatus(
      f->ops.all_reduce(f->state, ranks, numRanks, data, count, dtype, timeout));
}
void forwardAbort(void *state, const char *reason) {
  auto *f = static_cast<NcclForward *>(state);
  f->ops.abort(f->state, reason);
}
void forwardDestroy(void *state) {
  auto *f = static_cast<NcclForward *>(state);
  f->ops.destroy(f->state);
  delete f;
}

} // namespace

} // namespace runtime
} // namespace pipedream

using pipedream::runtime::Error;
using pipedream::runtime::fail;
using pipedream::runtime::guarded;

int pd_gpu_available(void) {
  std::string error;
  if (pipedream::runtime::loadSupport(error))
    return 1;
  fail(PD_ERROR_UNSUPPORTED, error);
  return 0;
}

pd_status pd_gpu_device_check(void) {
  return guarded([] {
    std::string error;
    const pd_gpu_support *table = pipedream::runtime::loadSupport(error);
    if (!table)
      return fail(PD_ERROR_UNSUPPORTED, "no CUDA support: " + error);
    char message[1024] = {0};
    if (table->device_count(message, sizeof(message)) <= 0)
      return fail(PD_ERROR_UNSUPPORTED,
                  std::string("no CUDA device: ") + message);
    return PD_OK;
  });
}

const char *pd_gpu_device_name(void) {
  thread_local std::string name;
  name.clear();
  std::string error;
  const pd_gpu_support *table = pipedream::runtime::loadSupport(error);
  char message[1024] = {0};
  if (table && table->device_count(message, sizeof(message)) > 0 &&
      table->device_name(message, sizeof(message)) == 0)
    name = message;
  return name.c_str();
}

const char *pd_bundle_target(const pd_bundle *bundle) {
  if (!bundle)
    return "";
  return bundle->manifest.target.c_str();
}

pd_status pd_transport_create_nccl(pd_transport *bootstrap,
                                   pd_transport **out) {
  if (!out)
    return pipedream::runtime::nullArgument("pd_transport_create_nccl", "out");
  *out = nullptr;
  return guarded([&] {
    using namespace pipedream::runtime;
    requireCudaDevice("the NCCL transport needs one GPU per rank");
    const pd_gpu_support &gpu = gpuSupport();
    size_t rank, size;
    unsigned char id[PD_GPU_NCCL_ID_BYTES] = {0};
    if (bootstrap) {
      rank = pd_transport_rank(bootstrap);
      size = pd_transport_size(bootstrap);
      if (rank == 0) {
        if (gpu.nccl_unique_id(id) != 0)
          checkGpuError("");
        for (size_t r = 1; r < size; ++r)
          if (pd_transport_send(bootstrap, r, kNcclIdTag, id,
                                sizeof(id)) != PD_OK)
            throw Error(PD_ERROR_PEER, std::string("NCCL bootstrap: ") +
                                           pd_last_error());
      } else if (pd_transport_recv(bootstrap, 0, kNcclIdTag, id,
                                   sizeof(id)) != PD_OK) {
        throw Error(PD_ERROR_PEER,
                    std::string("NCCL bootstrap: ") + pd_last_error());
      }
    } else {
      TorchrunEnv env;
      std::string error;
      if (!parseTorchrunEnv([](const char *name) { return std::getenv(name); },
                            env, error))
        return fail(PD_ERROR_INVALID_ARGUMENT, "NCCL bootstrap: " + error);
      rank = env.rank;
      size = env.size;
      if (rank == 0 && gpu.nccl_unique_id(id) != 0)
        checkGpuError("");
      exchangeNcclId(env, defaultTimeout(), id);
    }
    auto forward = std::make_unique<NcclForward>();
    if (gpu.nccl_create(rank, size, id, &forward->ops, &forward->state) != 0) {
      checkGpuError("");
      throw Error(PD_ERROR_INTERNAL, "NCCL communicator setup failed");
    }
    pd_transport_ops ops{forwardSend, forwardRecv, forwardAbort,
                         forwardDestroy, forwardAllReduce};
    pd_transport *transport = nullptr;
    pd_status status =
        pd_transport_create(&ops, forward.get(), rank, size, &transport);
    if (status != PD_OK) {
      forward->ops.destroy(forward->state);
      return status;
    }
    forward.release();
    transport->kind = "nccl";
    *out = transport;
    return PD_OK;
  });
}
