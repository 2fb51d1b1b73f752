//===- GpuDevice.h - the runtime's side of cuda bundles ---------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Loads libpipedream_gpu.so (GpuSupport.h) on demand, checks for a device,
// and keeps the device copy of each buffer of a `"target": "cuda"` bundle
// coherent with its host copy (docs/Runtime.md "GPU bundles"). No CUDA
// headers: the runtime links nothing of CUDA.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_RUNTIME_LIB_GPUDEVICE_H
#define PIPEDREAM_RUNTIME_LIB_GPUDEVICE_H

#include "GpuSupport.h"

#include <memory>
#include <string>
#include <vector>

struct pd_buffer;
struct pd_function;

namespace pipedream {
namespace runtime {

/// The support library's table, loaded (RTLD_GLOBAL, so a bundle's
/// program.so resolves its mgpu*/pd_gpu_* symbols against it) on first
/// call. Throws Error (PD_ERROR_UNSUPPORTED) when the runtime was built
/// without CUDA or the library cannot be loaded.
const pd_gpu_support &gpuSupport();

/// Throws Error (PD_ERROR_UNSUPPORTED) "no CUDA device: <reason> (<why>)"
/// ("no CUDA support: ..." for a runtime built without CUDA) unless a
/// device is usable; `why` is e.g. "bundle DIR targets cuda".
void requireCudaDevice(const std::string &why);

/// Throws Error (PD_ERROR_INTERNAL) "<where>cuda: ..." when the calling
/// thread recorded a GPU error (and clears it).
void checkGpuError(const std::string &where);

/// The calling thread's recorded GPU error (cleared), "" without one.
std::string takeGpuError();

/// The buffer's device memory for a call: allocated on first use, uploaded
/// when the host copy is newer. Throws Error.
void *deviceArgument(pd_buffer &buffer);

/// Copies a device-newer value to the host copy (allocating it). Throws.
void downloadBuffer(pd_buffer &buffer);

/// Frees the device copy (~pd_buffer).
void releaseDevice(pd_buffer &buffer);

/// Zeroes the buffer (on the device for a cuda buffer, else the host
/// memory). Throws Error.
void zeroBuffer(pd_buffer &buffer);

/// A bound buffer's argument for `invokeFunction`: its host memory
/// (allocated) without downloading a device-newer value.
void *boundArgument(pd_buffer &buffer);

/// Calls `function`'s entry point on `arguments` and applies its
/// `updates`. A bound buffer's slot is its host memory (boundArgument);
/// for a cuda function it is replaced by the buffer's device copy, and
/// every other slot (pipeline registers, weight-version copies) must
/// already be device memory (DeviceMemory): it is passed as it is. Then the
/// thread's stream is waited for and any GPU error thrown as Error naming
/// the function.
void invokeFunction(pd_function &function, void **arguments);

/// invokeFunction's halves for a cuda function called by someone else (a
/// native rank entry): prepareDeviceCall writes the device pointer array
/// for `arguments` into `device` (which may be `arguments`) and returns
/// which slots are bound buffers; after the call finishDeviceCall waits
/// for the stream, throws a GPU error, marks the bound buffers and swaps
/// the `updates` in.
std::vector<bool> prepareDeviceCall(pd_function &function, void **arguments,
                                    void **device);
void finishDeviceCall(pd_function &function, const std::vector<bool> &bound);

/// Device memory of the support library, freed by its deleter.
struct DeviceFree {
  void operator()(void *device) const;
};
using DeviceMemory = std::unique_ptr<void, DeviceFree>;

/// `bytes` (> 0 allocated even for 0) of device memory; `what` names it in
/// the error. Throws Error.
DeviceMemory allocateDevice(size_t bytes, const std::string &what);

/// Copies on the calling thread's stream, then waits for it, so the host
/// side may be reused or read at once; `where` prefixes errors. Throw Error.
void copyToDevice(void *device, const void *host, size_t bytes,
                  const std::string &where);
void copyToHost(void *host, const void *device, size_t bytes,
                const std::string &where);
void copyDeviceToDevice(void *dst, const void *src, size_t bytes,
                        const std::string &where);
void zeroDevice(void *device, size_t bytes, const std::string &where);

} // namespace runtime
} // namespace pipedream

#endif // PIPEDREAM_RUNTIME_LIB_GPUDEVICE_H
