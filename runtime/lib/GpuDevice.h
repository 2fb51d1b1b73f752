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

#include <functional>
#include <string>

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

/// Calls `function`'s entry point on `arguments` (host pointers: buffers'
/// memory, pipeline registers, weight-version copies) and applies its
/// `updates`. For a cuda function the pointers are translated to device
/// memory (bound buffers' device copies; other arguments through a
/// per-thread device mirror, inputs uploaded and outputs downloaded), the
/// thread's stream is waited for and any GPU error thrown as Error naming
/// the function.
void invokeFunction(pd_function &function, void **arguments);

/// torchrun's environment: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT.
struct TorchrunEnv {
  size_t rank = 0;
  size_t size = 0;
  std::string address;
  int port = 0;
};

/// Reads it through `getenv` (the real one, or a test's); false with a
/// one-line `error` naming the variable when one is missing or malformed.
/// $PIPEDREAM_NCCL_PORT overrides the port of the id exchange (default
/// MASTER_PORT + 1: torchrun's own store listens on MASTER_PORT).
bool parseTorchrunEnv(const std::function<const char *(const char *)> &getenv,
                      TorchrunEnv &env, std::string &error);

/// The torchrun bootstrap of the NCCL transport: rank 0 serves `id` over
/// TCP on env.port to the size-1 other ranks, which connect to
/// env.address:env.port (retrying until `timeout` seconds) and read it into
/// `id`. Throws Error (PD_ERROR_TIMEOUT, PD_ERROR_IO, PD_ERROR_PEER).
void exchangeNcclId(const TorchrunEnv &env, double timeout,
                    unsigned char id[PD_GPU_NCCL_ID_BYTES]);

} // namespace runtime
} // namespace pipedream

#endif // PIPEDREAM_RUNTIME_LIB_GPUDEVICE_H
