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

#include "GemmCheck.h"

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <pthread.h>

#include <atomic>
#include <cerrno>

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

using namespace pipedream_gemm_test;

TEST(GemmThreadFailure, EveryPartIsComputedWhenWorkersFailToStart) {
#ifdef PD_NO_INTERPOSITION
  GTEST_SKIP() << "pthread_create cannot be interposed under AddressSanitizer";
#endif
  // 4 threads asked for, one worker can start (of the 3 needed).
  pipedream_cpu_set_num_threads(4);
  gAllowed = 1;
  // C starts NaN (beta 0): an element no part wrote fails the check.
  check(Case{256, 256, 128, false, false, 1.0f, 0.0f, 0}, 7);
  gAllowed = -1;
}

} // namespace
