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

#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <dlfcn.h>
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

} // namespace

std::string takeGpuError() {
  char message[2048];
  if (support && support->take_error(message, sizeof(message)))
    return message;
  return "";
}

namespace {

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
