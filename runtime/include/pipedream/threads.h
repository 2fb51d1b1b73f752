/*===- pipedream/threads.h - threads of the CPU kernels -----------------===*
 *
 * Part of the pipedream project.
 *
 * The CPU bundles' GEMMs run on pipedream's kernel linked into program.so
 * (`pd_cpu_sgemm`: packed, register-tiled, AVX-512 or AVX2 chosen by cpuid;
 * docs/Runtime.md "Threads"). Its thread pool is per program.so and
 * process-wide; results do not depend on the thread count.
 *
 *===----------------------------------------------------------------------===*/

#ifndef PIPEDREAM_THREADS_H
#define PIPEDREAM_THREADS_H

#include "pipedream/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Threads the CPU kernels of every bundle use: applied to the bundles open
 *  now and to those opened later. `n` <= 0 restores program.so's default
 *  ($PIPEDREAM_NUM_THREADS when set, else the CPUs of the process's affinity
 *  mask). */
PD_API void pd_set_num_threads(int n);

/** The count given to pd_set_num_threads, 0 when none (the default). */
PD_API int pd_get_num_threads(void);

/** The thread count in effect in `bundle`'s program.so, or 0 for a library
 *  without pipedream's CPU kernels (cuda bundles). */
PD_API int pd_bundle_num_threads(const pd_bundle *bundle);

/** The GEMM micro-kernel of `bundle`'s program.so: "avx512", "avx2" or
 *  "generic" (a CPU without AVX2+FMA), or "" for a library without
 *  pipedream's CPU kernels. */
PD_API const char *pd_bundle_gemm_kernel(const pd_bundle *bundle);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PIPEDREAM_THREADS_H */
