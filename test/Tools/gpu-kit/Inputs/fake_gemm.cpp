//===- fake_gemm.cpp - a host stand-in for libpipedream_gpu.so's GEMMs ----===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Just enough of libpipedream_gpu.so for the GPU kit's gemm-bench to run
// without a GPU (run-without-device.test): "device" memory is host memory,
// pd_gpu_gemm_f32/bf16 are naive row-major loops (bf16: bf16 operands, f32
// accumulation, C rounded to bf16). With FAKE_GEMM_WRONG=1 one element of C
// is off by 1%, which gemm-bench must report.
//
//===----------------------------------------------------------------------===//

#include "GpuSupport.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

int deviceCount(char *, size_t) { return 1; }
int deviceName(char *name, size_t capacity) {
  std::strncpy(name, "host stand-in", capacity - 1);
  return 0;
}
int takeError(char *, size_t) { return 0; }
void *alloc(size_t bytes) { return std::malloc(bytes); }
void release(void *p) { std::free(p); }
int copy(void *dst, const void *src, size_t bytes) {
  std::memcpy(dst, src, bytes);
  return 0;
}
int zero(void *p, size_t bytes) {
  std::memset(p, 0, bytes);
  return 0;
}
int synchronize() { return 0; }

float fromBf16(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint16_t toBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1);
  return uint16_t(u >> 16);
}

template <typename LoadA, typename LoadB, typename Store>
void gemm(int64_t m, int64_t n, int64_t k, LoadA a, LoadB b, Store c) {
  bool wrong = std::getenv("FAKE_GEMM_WRONG") != nullptr;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float sum = 0;
      for (int64_t p = 0; p < k; ++p)
        sum += a(i * k + p) * b(p * n + j);
      if (wrong && i == 0 && j == 0)
        sum = sum * 1.01f + 0.5f;
      c(i * n + j, sum);
    }
}

} // namespace

FAKE_EXPORT const pd_gpu_support *pd_gpu_support_get(void) {
  static const pd_gpu_support table = {
      PD_GPU_SUPPORT_ABI, deviceCount, deviceName, takeError, alloc,
      release,            copy,        copy,       copy,      zero,
      synchronize,        nullptr,     nullptr};
  return &table;
}

// Only what gemm-bench passes: one batch item, no transposes, dense rows.
FAKE_EXPORT void pd_gpu_gemm_f32(int64_t, int64_t m, int64_t n, int64_t k,
                                 int32_t, int32_t, float, const float *A,
                                 int64_t, int64_t, const float *B, int64_t,
                                 int64_t, float, float *C, int64_t, int64_t) {
  gemm(m, n, k, [&](int64_t i) { return A[i]; },
       [&](int64_t i) { return B[i]; }, [&](int64_t i, float v) { C[i] = v; });
}

FAKE_EXPORT void pd_gpu_gemm_bf16(int64_t, int64_t m, int64_t n, int64_t k,
                                  int32_t, int32_t, float, const void *A,
                                  int64_t, int64_t, const void *B, int64_t,
                                  int64_t, float, void *C, int64_t, int64_t) {
  auto a = static_cast<const uint16_t *>(A);
  auto b = static_cast<const uint16_t *>(B);
  auto c = static_cast<uint16_t *>(C);
  gemm(m, n, k, [&](int64_t i) { return fromBf16(a[i]); },
       [&](int64_t i) { return fromBf16(b[i]); },
       [&](int64_t i, float v) { c[i] = toBf16(v); });
}
