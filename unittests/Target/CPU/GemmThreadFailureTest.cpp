//===- GemmThreadFailureTest.cpp - pd_cpu_sgemm when threads fail to start ===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The GEMM splits C into one part per thread (runSplit) and starts its pool
// workers lazily. Where pthread_create fails (a container's process limit),
// it must compute every part anyway: it once ran only the parts of the
// workers that did start, leaving the rest of C unwritten. This binary
// interposes pthread_create (defined here, so the kernel library linked
// into it calls this one) to fail after a given number of threads, then
// checks every element of C against a float64 reference.
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <pthread.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <random>
#include <vector>

// AddressSanitizer intercepts pthread_create itself (scripts/sanitize.sh's
// build): no second definition there, and the test is skipped.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PD_NO_INTERPOSITION 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define PD_NO_INTERPOSITION 1
#endif

namespace {
/// Threads pthread_create may still start (-1: no limit).
std::atomic<int> gAllowed{-1};
} // namespace

#ifndef PD_NO_INTERPOSITION
extern "C" int pthread_create(pthread_t *thread, const pthread_attr_t *attr,
                              void *(*start)(void *), void *arg) {
  using Create =
      int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
  static Create real =
      reinterpret_cast<Create>(dlsym(RTLD_NEXT, "pthread_create"));
  int allowed = gAllowed.load();
  if (allowed == 0)
    return EAGAIN;
  if (allowed > 0)
    gAllowed.fetch_sub(1);
  return real(thread, attr, start, arg);
}
#endif

namespace {

constexpr int32_t kRowMajor = 101, kNoTrans = 111;

TEST(GemmThreadFailure, EveryPartIsComputedWhenWorkersFailToStart) {
#ifdef PD_NO_INTERPOSITION
  GTEST_SKIP() << "pthread_create cannot be interposed under AddressSanitizer";
#endif
  // 4 threads asked for, one worker can start (of the 3 needed).
  pipedream_cpu_set_num_threads(4);
  gAllowed = 1;
  const int m = 256, n = 256, k = 128;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> a(size_t(m) * k), b(size_t(k) * n),
      c(size_t(m) * n, std::nanf(""));
  for (float &x : a)
    x = dist(rng);
  for (float &x : b)
    x = dist(rng);
  pd_cpu_sgemm(kRowMajor, kNoTrans, kNoTrans, m, n, k, 1.0f, a.data(), k,
               b.data(), n, 0.0f, c.data(), n);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double ref = 0, mag = 0;
      for (int l = 0; l < k; ++l) {
        ref += double(a[size_t(i) * k + l]) * b[size_t(l) * n + j];
        mag += std::fabs(double(a[size_t(i) * k + l]) * b[size_t(l) * n + j]);
      }
      ASSERT_LE(std::fabs(c[size_t(i) * n + j] - ref), 1e-5 * mag + 1e-6)
          << "C[" << i << "][" << j << "] = " << c[size_t(i) * n + j]
          << ", float64 reference " << ref;
    }
  gAllowed = -1;
}

} // namespace
