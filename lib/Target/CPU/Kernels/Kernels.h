/*===- Kernels.h - the CPU kernels linked into every program.so ---*- C -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// C API of the kernel object (Gemm.cpp) that pipedream-compile links into
// the program.so of CPU bundles whose contractions go to `pd_cpu_sgemm`
// (`--gemm kernel`, and `auto`). Plain C/C++, no MLIR: the object depends
// on libc only (pthreads), like the rest of program.so.
//
// The pipedream_* functions are exported from program.so; the runtime finds
// them with dlsym (pipedream-run --threads, the kernel report).
//
//===----------------------------------------------------------------------===*/

#ifndef PIPEDREAM_TARGET_CPU_KERNELS_KERNELS_H
#define PIPEDREAM_TARGET_CPU_KERNELS_KERNELS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Row-major single-precision GEMM with CBLAS's arguments and enum values:
/// C = alpha * op(A) op(B) + beta * C, op(X) = X or X^T (`transA`/`transB`
/// 111 = no, 112 = yes), `order` 101 (row-major) or 102 (column-major).
/// With beta == 0, C is not read (it may hold NaNs). Register-tiled and
/// packed; AVX-512 or AVX2+FMA chosen by cpuid (pipedream_cpu_gemm_kernel).
/// The result does not depend on the number of threads: threads split C,
/// never K, so every element is summed in the same order.
void pd_cpu_sgemm(int32_t order, int32_t transA, int32_t transB, int32_t m,
                  int32_t n, int32_t k, float alpha, const float *a,
                  int32_t lda, const float *b, int32_t ldb, float beta,
                  float *c, int32_t ldc);

/// `--dtype bf16` (issue 21): pd_cpu_sgemm's arguments, with the CUDA
/// target's bf16 semantics: C = beta * C + bf16(alpha * sum_k bf16(a) *
/// bf16(b)), the sum in f32 (operands rounded to nearest even, denormal
/// operands flushed to zero; the product rounded once). AMX (TDPBF16PS)
/// where cpuid has AMX-BF16 and Linux grants the tile state, else
/// VDPBF16PS with AVX512_BF16, else the same two f32 FMAs per pair of k
/// as VDPBF16PS (bitwise its results save denormal partial sums; AMX sums
/// more exactly); pipedream_cpu_gemm_bf16_kernel() says which. Same
/// threads rule as pd_cpu_sgemm (bitwise the same for any N).
void pd_cpu_gemm_bf16(int32_t order, int32_t transA, int32_t transB,
                      int32_t m, int32_t n, int32_t k, float alpha,
                      const float *a, int32_t lda, const float *b,
                      int32_t ldb, float beta, float *c, int32_t ldc);

/// Activations a GEMM's epilogue applies (pd_cpu_sgemm_epilogue).
enum {
  PD_CPU_ACT_NONE = 0,
  /// max(x, 0) as arith.maximumf: NaN stays NaN, -0 becomes +0.
  PD_CPU_ACT_RELU = 1,
  /// max(x, 0) as arith.maxnumf: NaN becomes 0.
  PD_CPU_ACT_RELU_NUM = 2,
};

/// pd_cpu_sgemm, then on every element of C: + bias (when `bias` is not
/// NULL: `n` floats, bias[j] for column j of the m x n C in either order:
/// a Linear layer's bias), + addend (when not NULL: an m x n matrix stored
/// in C's order with leading dimension `ldAddend`: a residual), then
/// `activation` (PD_CPU_ACT_*). Each register tile
/// gets them right after its last update, while it is in cache: the
/// compiler's cpu-lower-gemm-to-blas calls this in place of a bias
/// broadcast into C before the GEMM (beta = 1) and a ReLU pass after it.
/// C = act(((alpha * op(A) op(B) + beta * C) + bias) + addend), in that
/// order of float additions.
void pd_cpu_sgemm_epilogue(int32_t order, int32_t transA, int32_t transB,
                           int32_t m, int32_t n, int32_t k, float alpha,
                           const float *a, int32_t lda, const float *b,
                           int32_t ldb, float beta, float *c, int32_t ldc,
                           const float *bias, const float *addend,
                           int32_t ldAddend, int32_t activation);

/// pd_cpu_gemm_bf16 with pd_cpu_sgemm_epilogue's bias, addend and
/// activation, applied in f32 to the f32 C:
/// act(((beta * C + bf16(alpha * sum)) + bias) + addend).
void pd_cpu_gemm_bf16_epilogue(int32_t order, int32_t transA, int32_t transB,
                               int32_t m, int32_t n, int32_t k, float alpha,
                               const float *a, int32_t lda, const float *b,
                               int32_t ldb, float beta, float *c, int32_t ldc,
                               const float *bias, const float *addend,
                               int32_t ldAddend, int32_t activation);

/// The bf16 micro-kernel in effect: "amx_bf16", "avx512_bf16" (VDPBF16PS),
/// or "avx512-emulated", "avx2-emulated", "generic-emulated" (f32 FMAs on
/// the bf16 operands). $PIPEDREAM_GEMM_KERNEL=avx512_bf16 stops at
/// VDPBF16PS, avx512|avx2|generic force the emulation (tests).
const char *pipedream_cpu_gemm_bf16_kernel(void);

/// Threads the kernels of this program.so use (process-wide). `n` <= 0
/// restores the default: $PIPEDREAM_NUM_THREADS when set, else the number of
/// CPUs in the process's affinity mask.
void pipedream_cpu_set_num_threads(int32_t n);

/// The thread count in effect (the default resolved).
int32_t pipedream_cpu_num_threads(void);

/// The GEMM micro-kernel in effect: "avx512" (12x32 tiles of zmm FMAs),
/// "avx2" (6x16, ymm FMAs) or "generic" (portable C, a CPU without
/// AVX2+FMA). $PIPEDREAM_GEMM_KERNEL=avx2|generic selects a lower one (for
/// tests); a kernel the CPU lacks is never selected.
const char *pipedream_cpu_gemm_kernel(void);

/// Weights packed once (issue 21): declares the `count` byte ranges
/// [ptrs[i], ptrs[i] + bytes[i]) constant for the calling thread until its
/// next call. A GEMM this thread calls whose op(B) lies wholly inside one
/// of them packs B once (the whole K x N, in the micro-kernel's panels) and
/// reuses the packed copy in later GEMMs with the same B (pointer, leading
/// dimension, transposition, K, N); each call first drops the packed copies
/// of the previous one. `count` 0 (the runtime's call before anything may
/// write the ranges: an optimizer update) forgets them all. The caller
/// guarantees that the ranges are not written in between; results are
/// bitwise those of the unpacked path (the same panels). At most
/// $PIPEDREAM_GEMM_PACKED_MB MiB (default 128, 0 disables) are kept per
/// thread; a B past that is packed per call as usual.
void pipedream_cpu_gemm_constants(const void *const *ptrs,
                                  const int64_t *bytes, int32_t count);

/// Packs ahead (issue 21: a pipeline rank does it while it waits for a
/// message): makes one of the packed copies that the calling thread's
/// GEMMs made under its previous pipedream_cpu_gemm_constants declaration
/// (the previous step's), for the same B (pointer, leading dimension,
/// transposition, K, N, kernel) when it lies inside the current
/// declaration's ranges and is not packed yet; the next GEMM with that B
/// then finds it packed (results bitwise the same). Returns 1 when it
/// packed one (call again for the next), 0 when nothing is left to pack
/// (or nothing is declared). Each copy counts as `packed` in
/// pipedream_cpu_gemm_packed_stats.
int32_t pipedream_cpu_gemm_prepack(void);

/// Packed copies made and reused by the calling thread since its last
/// pipedream_cpu_gemm_constants call (tests and benchmarks).
void pipedream_cpu_gemm_packed_stats(int64_t *packed, int64_t *reused);

#ifdef __cplusplus
} // extern "C"
#endif

#endif // PIPEDREAM_TARGET_CPU_KERNELS_KERNELS_H
