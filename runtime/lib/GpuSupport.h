//===- GpuSupport.h - ABI of the CUDA support library -----------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// libpipedream_gpu.so (GpuSupport.cpp, built with -DPIPEDREAM_ENABLE_CUDA)
// holds everything that touches CUDA, cuBLAS and NCCL: the mgpu* functions
// MLIR's gpu-to-llvm lowering calls, pd_gpu_gemm_f32/bf16, device memory
// for the runtime, and the NCCL transport. The runtime (no CUDA dependency,
// so its binaries start on machines without a driver) dlopen()s it with
// RTLD_GLOBAL when it opens a `"target": "cuda"` bundle, before the
// bundle's program.so, whose undefined mgpu*/pd_gpu_* symbols then resolve
// to it. This header is the C table the runtime reads through
// pd_gpu_support_get(). Internal to the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_RUNTIME_LIB_GPUSUPPORT_H
#define PIPEDREAM_RUNTIME_LIB_GPUSUPPORT_H

#include "pipedream/runtime.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Bumped whenever pd_gpu_support changes.
#define PD_GPU_SUPPORT_ABI 1

/// Size of the NCCL unique id (NCCL_UNIQUE_ID_BYTES).
#define PD_GPU_NCCL_ID_BYTES 128

/// Every function returning int returns 0 on success; on failure it has
/// recorded the calling thread's first error, which take_error hands out.
/// Device work runs on the calling thread's stream (one per thread, so one
/// per rank of a threads pipeline; mgpuStreamCreate returns the same one).
typedef struct pd_gpu_support {
  int abi;
  /// Number of CUDA devices (> 0), or -1 with `message` saying why none is
  /// usable ("cudaGetDeviceCount: ... (cudaErrorNoDevice)").
  int (*device_count)(char *message, size_t capacity);
  /// "NVIDIA H200 (sm_90, 139 GiB)" for device 0.
  int (*device_name)(char *name, size_t capacity);
  /// 1 and the message of the thread's first error since the last call
  /// (which clears it), or 0.
  int (*take_error)(char *message, size_t capacity);
  void *(*alloc)(size_t bytes);
  void (*free)(void *device);
  int (*copy_to_device)(void *device, const void *host, size_t bytes);
  int (*copy_to_host)(void *host, const void *device, size_t bytes);
  int (*copy_device)(void *dst, const void *src, size_t bytes);
  int (*zero)(void *device, size_t bytes);
  /// Waits for the thread's stream.
  int (*synchronize)(void);
  /// NCCL: a fresh unique id (rank 0 of a bootstrap), and a transport over
  /// the communicator of `size` ranks built from it. 0, or -1 without
  /// NCCL (message set).
  int (*nccl_unique_id)(unsigned char id[PD_GPU_NCCL_ID_BYTES]);
  int (*nccl_create)(size_t rank, size_t size,
                     const unsigned char id[PD_GPU_NCCL_ID_BYTES],
                     pd_transport_ops *ops, void **state);
} pd_gpu_support;

/// Exported by libpipedream_gpu.so.
const pd_gpu_support *pd_gpu_support_get(void);

#ifdef __cplusplus
}
#endif

#endif // PIPEDREAM_RUNTIME_LIB_GPUSUPPORT_H
