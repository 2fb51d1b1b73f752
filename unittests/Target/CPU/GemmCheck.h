//===- GemmCheck.h - pd_cpu_sgemm against a float64 reference ---*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// What the GEMM unit tests share (GemmKernelTest.cpp,
// GemmThreadFailureTest.cpp): a case, random operands, and the check of
// every element of C against a float64 reference with an error bound from
// the float32 rounding of a k-term dot product.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_UNITTESTS_TARGET_CPU_GEMMCHECK_H
#define PIPEDREAM_UNITTESTS_TARGET_CPU_GEMMCHECK_H

#include "Kernels.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace pipedream_gemm_test {

inline constexpr int32_t kRowMajor = 101, kColMajor = 102, kNoTrans = 111,
                         kTrans = 112;

/// `count` floats uniform in [-1, 1) from `rng`.
inline std::vector<float> randomFloats(size_t count, std::mt19937 &rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(count);
  for (float &x : v)
    x = dist(rng);
  return v;
}

struct Case {
  int m, n, k;
  bool transA, transB;
  float alpha, beta;
  int pad; // extra elements per stored row (lda, ldb, ldc)
};

inline std::string describe(const Case &c) {
  return std::to_string(c.m) + "x" + std::to_string(c.n) + "x" +
         std::to_string(c.k) + " transA=" + std::to_string(c.transA) +
         " transB=" + std::to_string(c.transB) +
         " alpha=" + std::to_string(c.alpha) +
         " beta=" + std::to_string(c.beta) + " pad=" + std::to_string(c.pad) +
         " kernel=" + pipedream_cpu_gemm_kernel();
}

/// Runs `c` in row-major storage and checks every element of C against the
/// float64 reference, and that C's padding is untouched.
inline void check(const Case &c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  // Stored shapes: A is m x k (k x m when transposed), B k x n (n x k).
  int aRows = c.transA ? c.k : c.m, aCols = c.transA ? c.m : c.k;
  int bRows = c.transB ? c.n : c.k, bCols = c.transB ? c.k : c.n;
  int lda = aCols + c.pad, ldb = bCols + c.pad, ldc = c.n + c.pad;
  std::vector<float> a = randomFloats(size_t(aRows) * lda + 1, rng),
                     b = randomFloats(size_t(bRows) * ldb + 1, rng);
  std::vector<float> out(size_t(c.m) * ldc + 1);
  const float sentinel = 12345.0f;
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = (i % ldc) < size_t(c.n) && i < size_t(c.m) * ldc
                 ? (c.beta == 0.0f ? std::numeric_limits<float>::quiet_NaN()
                                   : dist(rng))
                 : sentinel;
  std::vector<float> before = out;
  pd_cpu_sgemm(kRowMajor, c.transA ? kTrans : kNoTrans,
               c.transB ? kTrans : kNoTrans, c.m, c.n, c.k, c.alpha, a.data(),
               lda, b.data(), ldb, c.beta, out.data(), ldc);
  for (int i = 0; i < c.m; ++i)
    for (int j = 0; j < c.n; ++j) {
      double ref = 0, mag = 0;
      for (int l = 0; l < c.k; ++l) {
        double x = c.transA ? a[size_t(l) * lda + i] : a[size_t(i) * lda + l];
        double y = c.transB ? b[size_t(j) * ldb + l] : b[size_t(l) * ldb + j];
        ref += x * y;
        mag += std::fabs(x * y);
      }
      double old = c.beta == 0.0f ? 0.0 : before[size_t(i) * ldc + j];
      ref = double(c.alpha) * ref + double(c.beta) * old;
      mag = std::fabs(c.alpha) * mag + std::fabs(c.beta * old);
      // float32 rounding of a k-term sum and the combine.
      double tol = (c.k + 4) * double(FLT_EPSILON) * mag + 1e-30;
      float got = out[size_t(i) * ldc + j];
      ASSERT_TRUE(std::fabs(got - ref) <= tol)
          << describe(c) << ": C[" << i << "][" << j << "] = " << got
          << ", float64 reference " << ref << " (tolerance " << tol << ")";
    }
  for (size_t i = 0; i < out.size(); ++i)
    if ((i % ldc) >= size_t(c.n) || i >= size_t(c.m) * ldc)
      ASSERT_EQ(out[i], sentinel) << describe(c) << ": wrote padding at " << i;
}

} // namespace pipedream_gemm_test

#endif // PIPEDREAM_UNITTESTS_TARGET_CPU_GEMMCHECK_H
