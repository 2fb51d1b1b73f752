/*===- pipedream/gpu.h - CUDA bundles and the NCCL transport -------------===*
 *
 * Part of the pipedream project.
 *
 * Optional GPU part of the runtime's C API (docs/Runtime.md "GPU bundles").
 * The runtime itself links nothing of CUDA: built with
 * -DPIPEDREAM_ENABLE_CUDA it loads its support library, libpipedream_gpu.so
 * ($PIPEDREAM_GPU_LIBRARY overrides where), when a `"target": "cuda"`
 * bundle is opened or one of these functions needs it, so every binary
 * starts on machines without a GPU or driver.
 *
 *===----------------------------------------------------------------------===*/

#ifndef PIPEDREAM_GPU_H
#define PIPEDREAM_GPU_H

#include "pipedream/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/** 1 when the runtime was built with CUDA support and its support library
 *  loads; else 0 (pd_last_error() says why). */
PD_API int pd_gpu_available(void);

/** PD_OK when a CUDA device is usable; else PD_ERROR_UNSUPPORTED and
 *  pd_last_error() "no CUDA device: cudaGetDeviceCount: ... (...)". */
PD_API pd_status pd_gpu_device_check(void);

/** "NVIDIA H200 (sm_90, 139 GiB)": device 0, or "" without one. */
PD_API const char *pd_gpu_device_name(void);

/** bundle.json `target`: "cpu" or "cuda" ("" for NULL). */
PD_API const char *pd_bundle_target(const pd_bundle *bundle);

/** The NCCL transport of this process (one GPU per rank). Its communicator
 *  is bootstrapped over `bootstrap` (e.g. pd_transport_create_mpi: rank 0
 *  sends the NCCL id to the others; rank and size are the bootstrap's), or,
 *  when `bootstrap` is NULL, from torchrun-style RANK, WORLD_SIZE,
 *  MASTER_ADDR and MASTER_PORT (rank 0 serves the id over TCP on
 *  $PIPEDREAM_NCCL_PORT, default MASTER_PORT + 1). `bootstrap` stays the
 *  caller's. */
PD_API pd_status pd_transport_create_nccl(pd_transport *bootstrap,
                                          pd_transport **out);

#ifdef __cplusplus
}
#endif

#endif /* PIPEDREAM_GPU_H */
