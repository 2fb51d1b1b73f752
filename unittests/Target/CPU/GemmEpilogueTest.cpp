//===- GemmEpilogueTest.cpp - bias and ReLU applied by the GEMM
//------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// pd_cpu_sgemm_epilogue and pd_cpu_gemm_bf16_epilogue (Kernels.h) against
// the loops they replace: the plain GEMM (itself checked against float64
// references in GemmKernelTest.cpp and GemmBF16Test.cpp), then `+ bias[j]`,
// `+ addend[i][j]` and the activation over C in float. The epilogue runs on
// each register tile after its last update, so the results must be bitwise
// those of the loops: over odd sizes, the tile, KC (512) and NC (1024) block
// edges, every layout, alpha/beta, with and without bias and addend (a residual
// stored as C is), threads, k = 0, and NaN and -0 through both ReLUs.
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

constexpr int32_t kRowMajor = 101, kColMajor = 102, kNoTrans = 111,
                  kTrans = 112;

using Gemm = void (*)(int32_t, int32_t, int32_t, int32_t, int32_t, int32_t,
                      float, const float *, int32_t, const float *, int32_t,
                      float, float *, int32_t);
using GemmEpilogue = void (*)(int32_t, int32_t, int32_t, int32_t, int32_t,
                              int32_t, float, const float *, int32_t,
                              const float *, int32_t, float, float *, int32_t,
                              const float *, const float *, int32_t, int32_t);

struct Case {
  int m, n, k;
  bool transA, transB, colMajor;
  float alpha, beta;
  bool bias;
  int32_t act;
  bool addend = false;
};

std::string describe(const Case &c) {
  return std::to_string(c.m) + "x" + std::to_string(c.n) + "x" +
         std::to_string(c.k) + " transA=" + std::to_string(c.transA) +
         " transB=" + std::to_string(c.transB) +
         " colMajor=" + std::to_string(c.colMajor) +
         " alpha=" + std::to_string(c.alpha) +
         " beta=" + std::to_string(c.beta) + " bias=" + std::to_string(c.bias) +
         " act=" + std::to_string(c.act) +
         " addend=" + std::to_string(c.addend) +
         " kernel=" + pipedream_cpu_gemm_kernel();
}

/// The activation as the compiler's IR states it: arith.maximumf(x, 0)
/// keeps NaN and makes -0 +0; arith.maxnumf(x, 0) makes NaN 0.
float activate(float x, int32_t act) {
  if (act == PD_CPU_ACT_RELU)
    return std::isnan(x) ? x : (x > 0.0f ? x : 0.0f);
  if (act == PD_CPU_ACT_RELU_NUM)
    return std::isnan(x) ? 0.0f : (x > 0.0f ? x : 0.0f);
  return x;
}

/// `fused` on `c` against `plain` then the epilogue's loops, bitwise; C is
/// m x n in the case's order, bias one value per column j < n.
void check(const Case &c, Gemm plain, GemmEpilogue fused, uint32_t seed) {
  SCOPED_TRACE(describe(c));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  // Storage sizes in the case's order: op(A) is m x k, op(B) k x n.
  auto rowsOf = [&](int r, int cols, bool trans) {
    // Stored rows of a (r x cols) operand, row-major or column-major.
    return c.colMajor != trans ? cols : r;
  };
  auto ldOf = [&](int r, int cols, bool trans) {
    return (c.colMajor != trans ? r : cols) + 1;
  };
  int lda = ldOf(c.m, c.k, c.transA), ldb = ldOf(c.k, c.n, c.transB);
  int ldc = (c.colMajor ? c.m : c.n) + 2;
  std::vector<float> a(size_t(rowsOf(c.m, c.k, c.transA)) * lda),
      b(size_t(rowsOf(c.k, c.n, c.transB)) * ldb),
      init(size_t(c.colMajor ? c.n : c.m) * ldc), bias(size_t(c.n));
  // The addend: stored as C is, with its own leading dimension.
  int ldr = (c.colMajor ? c.m : c.n) + 3;
  std::vector<float> addend(size_t(c.colMajor ? c.n : c.m) * ldr);
  for (float &x : a)
    x = dist(rng);
  for (float &x : b)
    x = dist(rng);
  for (float &x : init)
    x = dist(rng);
  for (float &x : bias)
    x = dist(rng);
  for (float &x : addend)
    x = dist(rng);
  int32_t order = c.colMajor ? kColMajor : kRowMajor;
  int32_t ta = c.transA ? kTrans : kNoTrans, tb = c.transB ? kTrans : kNoTrans;
  std::vector<float> want = init, got = init;
  plain(order, ta, tb, c.m, c.n, c.k, c.alpha, a.data(), lda, b.data(), ldb,
        c.beta, want.data(), ldc);
  for (int i = 0; i < c.m; ++i)
    for (int j = 0; j < c.n; ++j) {
      float &x =
          c.colMajor ? want[size_t(j) * ldc + i] : want[size_t(i) * ldc + j];
      float r = c.colMajor ? addend[size_t(j) * ldr + i]
                           : addend[size_t(i) * ldr + j];
      float y = c.bias ? x + bias[size_t(j)] : x;
      x = activate(c.addend ? y + r : y, c.act);
    }
  fused(order, ta, tb, c.m, c.n, c.k, c.alpha, a.data(), lda, b.data(), ldb,
        c.beta, got.data(), ldc, c.bias ? bias.data() : nullptr,
        c.addend ? addend.data() : nullptr, ldr, c.act);
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_EQ(std::memcmp(&want[i], &got[i], sizeof(float)), 0)
        << "element " << i << ": " << got[i] << ", the loops give " << want[i];
}

void sweep(Gemm plain, GemmEpilogue fused) {
  uint32_t seed = 1;
  for (int m : {1, 5, 13, 25})
    for (int n : {1, 17, 32, 47})
      for (int k : {1, 40})
        for (int t = 0; t < 8; ++t)
          for (int32_t act :
               {PD_CPU_ACT_NONE, PD_CPU_ACT_RELU, PD_CPU_ACT_RELU_NUM})
            check(Case{m, n, k, bool(t & 1), bool(t & 2), bool(t & 4), 1.0f,
                       0.0f, (m + n + act) % 2 == 0, act, (k + t) % 3 != 0},
                  plain, fused, seed++);
}

TEST(GemmEpilogue, OddSizesAllLayouts) {
  sweep(pd_cpu_sgemm, pd_cpu_sgemm_epilogue);
}

TEST(GemmEpilogue, AlphaBetaAndBlockEdges) {
  uint32_t seed = 100;
  // K across KC (512: the activation only after the last pass), N across
  // NC (1024) and the 32-column tile, M across MC (96).
  for (auto [m, n, k] :
       {std::array<int, 3>{97, 1025, 513}, std::array<int, 3>{12, 64, 1100},
        std::array<int, 3>{200, 33, 7}})
    for (float beta : {0.0f, 1.0f, -0.5f})
      for (int32_t act : {PD_CPU_ACT_NONE, PD_CPU_ACT_RELU})
        check(Case{m, n, k, false, true, false, 0.75f, beta, true, act,
                   beta != 1.0f},
              pd_cpu_sgemm, pd_cpu_sgemm_epilogue, seed++);
}

TEST(GemmEpilogue, SameBitsForEveryThreadCount) {
  for (int threads = 1; threads <= 3; ++threads) {
    pipedream_cpu_set_num_threads(threads);
    check(Case{301, 517, 300, false, true, false, 1.0f, 0.0f, true,
               PD_CPU_ACT_RELU, true},
          pd_cpu_sgemm, pd_cpu_sgemm_epilogue, 7);
  }
  pipedream_cpu_set_num_threads(0);
}

TEST(GemmEpilogue, ZeroKIsBiasAndActivation) {
  // K = 0: C = act(beta * C + bias + addend).
  float c[4] = {1, -2, 3, -4}, bias[2] = {0.5f, -10.0f}, a = 0, b = 0;
  float addend[6] = {1, 100, -1, 2, -200, -2}; // 2 x 2, leading dimension 3
  pd_cpu_sgemm_epilogue(kRowMajor, kNoTrans, kNoTrans, 2, 2, 0, 1.0f, &a, 1, &b,
                        2, 2.0f, c, 2, bias, addend, 3, PD_CPU_ACT_RELU);
  EXPECT_EQ(c[0], 3.5f);
  EXPECT_EQ(c[1], 86.0f);
  EXPECT_EQ(c[2], 8.5f);
  EXPECT_EQ(c[3], 0.0f);
}

TEST(GemmEpilogue, NaNAndNegativeZero) {
  // A 1 x 3 x 1 product, alpha = -1, whose results are NaN, -0 and -1:
  // maximumf keeps the NaN, maxnumf makes it 0; both make -0 and -1 +0.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  float a = 1.0f, b[3] = {nan, 0.0f, 1.0f};
  for (int32_t act : {PD_CPU_ACT_RELU, PD_CPU_ACT_RELU_NUM}) {
    float c[3];
    pd_cpu_sgemm_epilogue(kRowMajor, kNoTrans, kNoTrans, 1, 3, 1, -1.0f, &a, 1,
                          b, 3, 0.0f, c, 3, nullptr, nullptr, 0, act);
    if (act == PD_CPU_ACT_RELU)
      EXPECT_TRUE(std::isnan(c[0]));
    else
      EXPECT_EQ(c[0], 0.0f);
    EXPECT_EQ(c[1], 0.0f);
    EXPECT_FALSE(std::signbit(c[1])) << "-0 through ReLU must be +0";
    EXPECT_EQ(c[2], 0.0f);
    EXPECT_FALSE(std::signbit(c[2]));
  }
}

TEST(GemmBF16, EpilogueOddSizesAllLayouts) {
  sweep(pd_cpu_gemm_bf16, pd_cpu_gemm_bf16_epilogue);
}

} // namespace
