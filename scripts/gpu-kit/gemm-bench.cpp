//===- gemm-bench.cpp - the runtime's GEMMs: TFLOP/s on the device --------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The GPU kit's GEMM figure (scripts/gpu-kit.sh, docs/GPU.md): times
// pd_gpu_gemm_f32 and pd_gpu_gemm_bf16, the functions every compiled cuda
// bundle calls for its contractions, from libpipedream_gpu.so itself
// (dlopen'ed, as the runtime does), on square 8192^3 and on the GPT
// block's MLP shape (4096 x 4096 x 1024). Each size is first checked: 64
// elements of C against a float64 host product of the same operands (f32:
// within 1e-4 of sum|a||b|, bf16 C rounded to bf16: 2^-7), then timed over
// 10 calls after 2 warm-up calls (wall clock around the stream
// synchronization). Prints one line per GEMM with TFLOP/s and the fraction
// of the H200's dense peak (FP32 67, BF16 989.4 TFLOP/s; TF32 494.7 with
// PIPEDREAM_ALLOW_TF32=1).
//
//   gemm-bench LIBPIPEDREAM_GPU.so [M N K]
//
// (M N K: that one size only, e.g. for the test against a host stand-in of
// the library, test/Tools/gpu-kit/Inputs/fake_gemm.cpp.)
//
// Exits 77 with `no CUDA device: ...` without a device, 1 on a wrong result
// or an error.
//
//===----------------------------------------------------------------------===//

#include "GpuSupport.h"

#include <dlfcn.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

using GemmF32 = void (*)(int64_t, int64_t, int64_t, int64_t, int32_t, int32_t,
                         float, const float *, int64_t, int64_t,
                         const float *, int64_t, int64_t, float, float *,
                         int64_t, int64_t);
using GemmBf16 = void (*)(int64_t, int64_t, int64_t, int64_t, int32_t,
                          int32_t, float, const void *, int64_t, int64_t,
                          const void *, int64_t, int64_t, float, void *,
                          int64_t, int64_t);

const pd_gpu_support *gpu = nullptr;
GemmF32 gemmF32 = nullptr;
GemmBf16 gemmBf16 = nullptr;

bool check(int status, const char *what) {
  char message[1024] = {0};
  if (status == 0 && !gpu->take_error(message, sizeof(message)))
    return true;
  if (!message[0])
    gpu->take_error(message, sizeof(message));
  std::printf("FAIL %s: %s\n", what, message[0] ? message : "error");
  return false;
}

uint16_t toBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1); // round to nearest even (finite values)
  return uint16_t(u >> 16);
}

float fromBf16(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// C = A[m][k] @ B[k][n], row-major, no transposes; true when checked and
/// timed.
bool bench(bool bf16, int64_t m, int64_t n, int64_t k, double peak) {
  size_t elem = bf16 ? 2 : 4;
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> a(size_t(m * k)), b(size_t(k * n));
  for (float &x : a)
    x = dist(rng);
  for (float &x : b)
    x = dist(rng);
  std::vector<uint16_t> a16, b16;
  if (bf16) {
    a16.resize(a.size());
    b16.resize(b.size());
    for (size_t i = 0; i < a.size(); ++i)
      a[i] = fromBf16(a16[i] = toBf16(a[i]));
    for (size_t i = 0; i < b.size(); ++i)
      b[i] = fromBf16(b16[i] = toBf16(b[i]));
  }
  void *dA = gpu->alloc(a.size() * elem);
  void *dB = gpu->alloc(b.size() * elem);
  void *dC = gpu->alloc(size_t(m * n) * elem);
  if (!dA || !dB || !dC)
    return check(1, "alloc");
  bool ok =
      check(gpu->copy_to_device(dA, bf16 ? (const void *)a16.data() : a.data(),
                                a.size() * elem),
            "copy A") &&
      check(gpu->copy_to_device(dB, bf16 ? (const void *)b16.data() : b.data(),
                                b.size() * elem),
            "copy B");
  auto call = [&] {
    if (bf16)
      gemmBf16(1, m, n, k, 0, 0, 1.0f, dA, k, 0, dB, n, 0, 0.0f, dC, n, 0);
    else
      gemmF32(1, m, n, k, 0, 0, 1.0f, static_cast<float *>(dA), k, 0,
              static_cast<float *>(dB), n, 0, 0.0f, static_cast<float *>(dC),
              n, 0);
  };
  const char *name = bf16 ? "bf16" : "f32";
  if (ok) {
    call();
    ok = check(gpu->synchronize(), name);
  }
  // 64 elements against float64.
  double worst = 0;
  if (ok) {
    std::vector<float> c32(size_t(m * n));
    std::vector<uint16_t> c16;
    if (bf16) {
      c16.resize(c32.size());
      ok = check(gpu->copy_to_host(c16.data(), dC, c16.size() * 2), "copy C");
      for (size_t i = 0; i < c16.size(); ++i)
        c32[i] = fromBf16(c16[i]);
    } else {
      ok = check(gpu->copy_to_host(c32.data(), dC, c32.size() * 4), "copy C");
    }
    for (int s = 0; ok && s < 64; ++s) {
      int64_t i = (s * 7919) % m, j = (s * 104729) % n;
      double sum = 0, mag = 0;
      for (int64_t p = 0; p < k; ++p) {
        sum += double(a[size_t(i * k + p)]) * b[size_t(p * n + j)];
        mag += std::fabs(double(a[size_t(i * k + p)]) * b[size_t(p * n + j)]);
      }
      double got = c32[size_t(i * n + j)];
      double bound = bf16 ? std::ldexp(1.0, -7) * (std::fabs(sum) + 1e-3 * mag)
                          : 1e-4 * mag;
      double err = std::fabs(got - sum);
      worst = std::fmax(worst, err / (mag > 0 ? mag : 1));
      if (!(err <= bound)) {
        std::printf("FAIL gemm %s %lldx%lldx%lld: C[%lld][%lld] = %.9g, "
                    "float64 %.9g\n",
                    name, (long long)m, (long long)n, (long long)k,
                    (long long)i, (long long)j, got, sum);
        ok = false;
      }
    }
  }
  double tflops = 0;
  if (ok) {
    call(); // second warm-up
    ok = check(gpu->synchronize(), name);
    const int iterations = 10;
    auto start = std::chrono::steady_clock::now();
    for (int r = 0; ok && r < iterations; ++r)
      call();
    ok = ok && check(gpu->synchronize(), name);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count() /
        iterations;
    tflops = 2.0 * double(m) * double(n) * double(k) / seconds / 1e12;
    if (ok)
      std::printf("OK gemm %s %lldx%lldx%lld: %.3f ms, %.1f TFLOP/s, %.1f%% "
                  "of the %.1f TFLOP/s dense peak (64 elements checked, max "
                  "error %.2g of sum|ab|)\n",
                  name, (long long)m, (long long)n, (long long)k,
                  seconds * 1e3, tflops, 100 * tflops / peak, peak, worst);
  }
  gpu->free(dA);
  gpu->free(dB);
  gpu->free(dC);
  return ok;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2 && argc != 5) {
    std::fprintf(stderr, "usage: gemm-bench LIBPIPEDREAM_GPU.so [M N K]\n");
    return 2;
  }
  void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    std::printf("FAIL dlopen: %s\n", dlerror());
    return 1;
  }
  auto get = reinterpret_cast<const pd_gpu_support *(*)()>(
      dlsym(lib, "pd_gpu_support_get"));
  gemmF32 = reinterpret_cast<GemmF32>(dlsym(lib, "pd_gpu_gemm_f32"));
  gemmBf16 = reinterpret_cast<GemmBf16>(dlsym(lib, "pd_gpu_gemm_bf16"));
  if (!get || !gemmF32 || !gemmBf16 || !(gpu = get()) ||
      gpu->abi != PD_GPU_SUPPORT_ABI) {
    std::printf("FAIL %s: not the runtime's CUDA support library (ABI %d)\n",
                argv[1], PD_GPU_SUPPORT_ABI);
    return 1;
  }
  char message[1024] = {0};
  if (gpu->device_count(message, sizeof(message)) <= 0) {
    std::printf("no CUDA device: %s\n", message);
    return 77;
  }
  char name[256] = {0};
  gpu->device_name(name, sizeof(name));
  std::printf("device: %s\n", name);
  const char *tf32 = std::getenv("PIPEDREAM_ALLOW_TF32");
  double f32Peak = tf32 && std::strcmp(tf32, "1") == 0 ? 494.7 : 67.0;
  if (argc == 5) {
    int64_t m = std::atoll(argv[2]), n = std::atoll(argv[3]),
            k = std::atoll(argv[4]);
    if (m <= 0 || n <= 0 || k <= 0) {
      std::printf("FAIL sizes must be positive\n");
      return 2;
    }
    bool ok = bench(false, m, n, k, f32Peak);
    ok = bench(true, m, n, k, 989.4) && ok;
    return ok ? 0 : 1;
  }
  bool ok = bench(false, 8192, 8192, 8192, f32Peak);
  ok = bench(false, 4096, 4096, 1024, f32Peak) && ok;
  ok = bench(true, 8192, 8192, 8192, 989.4) && ok;
  ok = bench(true, 4096, 4096, 1024, 989.4) && ok;
  return ok ? 0 : 1;
}
