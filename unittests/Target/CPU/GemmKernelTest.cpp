//===- GemmKernelTest.cpp - pd_cpu_sgemm against a float64 reference -------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The kernel linked into program.so (lib/Target/CPU/Kernels) over odd
// sizes, every layout (transposed A and/or B, padded leading dimensions,
// column-major), alpha/beta, sizes across the KC/MC/NC block edges, against
// a float64 reference with an error bound from the float32 rounding of a
// k-term dot product. CTest runs this binary once per micro-kernel
// ($PIPEDREAM_GEMM_KERNEL; unittests/Target/CPU/CMakeLists.txt).
//
//===----------------------------------------------------------------------===//

#include "GemmCheck.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace pipedream_gemm_test;

TEST(GemmKernel, KernelInEffect) {
  // The kernel asked for by CTest (PIPEDREAM_GEMM_KERNEL) when this CPU has
  // it; never "generic" on a CPU with AVX2 unless asked.
  const char *want = std::getenv("PIPEDREAM_GEMM_KERNEL");
  const char *expect = std::getenv("PIPEDREAM_EXPECT_KERNEL");
  std::string got = pipedream_cpu_gemm_kernel();
  if (expect)
    EXPECT_EQ(got, expect);
  if (!want)
    EXPECT_NE(got, "generic") << "no AVX2/AVX-512 kernel on this CPU?";
}

TEST(GemmKernel, OddSizesAllLayouts) {
  // Every remainder of M by the tile's rows (6 for AVX2, 12 for AVX-512:
  // the last rows run on a kernel of just those rows when the columns are
  // a whole tile, N = 33 and 47 here).
  const int sizes[] = {1, 2, 3, 4, 6, 7, 8, 10, 11, 13, 17, 31, 33, 65};
  uint32_t seed = 1;
  for (int m : sizes)
    for (int n : {1, 5, 16, 31, 33, 47})
      for (int k : {1, 3, 19, 64})
        for (int t = 0; t < 4; ++t) {
          Case c{m, n, k, bool(t & 1), bool(t & 2), 1.0f, 0.0f, (m + k) % 3};
          check(c, seed++);
          if (HasFatalFailure())
            return;
        }
}

TEST(GemmKernel, AlphaBeta) {
  uint32_t seed = 100;
  for (auto [alpha, beta] : {std::pair{1.0f, 1.0f}, std::pair{0.5f, -2.0f},
                             std::pair{-1.5f, 0.0f}, std::pair{2.0f, 0.25f}})
    for (int t = 0; t < 4; ++t) {
      check(Case{37, 45, 29, bool(t & 1), bool(t & 2), alpha, beta, 2},
            seed++);
      if (HasFatalFailure())
        return;
    }
}

TEST(GemmKernel, LongKWithBTransposed) {
  // A convolution's weight gradient: M and N small, K long, B stored
  // transposed (the dot-product path: row blocks of 4 and 2, column blocks
  // of 4, the edges one element at a time, K not a multiple of the lanes),
  // with alpha / beta and padded rows; the same shapes with A transposed
  // too take the blocked path.
  uint32_t seed = 300;
  for (int m : {1, 3, 4, 8, 13, 16, 32, 33})
    for (int n : {1, 5, 27, 72, 144})
      for (int k : {1024, 1037, 4100})
        for (auto [alpha, beta] :
             {std::pair{1.0f, 0.0f}, std::pair{0.5f, 1.0f}}) {
          check(Case{m, n, k, false, true, alpha, beta, (m + n) % 3}, seed++);
          if (HasFatalFailure())
            return;
        }
  check(Case{16, 144, 2048, true, true, 1.0f, 0.0f, 1}, seed++);
}

TEST(GemmKernel, LongKRowsAloneSameBits) {
  // In the dot-product path every element is the same sequence of
  // operations whatever block computes it: each row of an 8-row product
  // equals, bit for bit, that row computed alone (M = 1, the edge path),
  // for whole and partial column blocks.
  const int m = 8, n = 27, k = 2051;
  std::mt19937 rng(11);
  std::vector<float> a = randomFloats(size_t(m) * k, rng),
                     b = randomFloats(size_t(n) * k, rng);
  std::vector<float> c(size_t(m) * n), row(static_cast<size_t>(n));
  pd_cpu_sgemm(kRowMajor, kNoTrans, kTrans, m, n, k, 1.0f, a.data(), k,
               b.data(), k, 0.0f, c.data(), n);
  for (int i = 0; i < m; ++i) {
    pd_cpu_sgemm(kRowMajor, kNoTrans, kTrans, 1, n, k, 1.0f,
                 a.data() + size_t(i) * k, k, b.data(), k, 0.0f, row.data(), n);
    for (int j = 0; j < n; ++j)
      ASSERT_EQ(std::memcmp(&row[j], &c[size_t(i) * n + j], sizeof(float)), 0)
          << "row " << i << ", column " << j << ": alone " << row[j]
          << ", in the block " << c[size_t(i) * n + j];
  }
}

TEST(GemmKernel, BlockEdges) {
  // KC = 256 or 512 (K split: the first block applies beta, later ones
  // add), MC 96-128 rows, NC = 1024 columns, 8 x 8 transposes with a
  // remainder.
  uint32_t seed = 200;
  const Case cases[] = {
      {5, 9, 257, false, true, 1.0f, 0.0f, 0},
      {5, 9, 513, true, false, 1.0f, 1.0f, 1},
      {7, 21, 1100, false, true, 1.0f, 1.0f, 2},
      {200, 35, 40, false, false, 1.0f, 0.5f, 0},
      {391, 70, 300, true, true, 0.75f, 0.0f, 3},
      {3, 1030, 5, false, true, 1.0f, 1.0f, 0},
      {3, 4100, 5, false, true, 1.0f, 1.0f, 0},
      {2, 4133, 7, false, false, 1.0f, 0.0f, 1},
      {128, 256, 256, false, true, 1.0f, 0.0f, 0},
  };
  for (const Case &c : cases) {
    check(c, seed++);
    if (HasFatalFailure())
      return;
  }
}

TEST(GemmKernel, ColumnMajorIsTheTranspose) {
  // Column-major C (m x n, ldc >= m) = A B: the row-major n x m problem
  // C^T = B^T A^T, checked against the row-major call.
  const int m = 23, n = 19, k = 11;
  std::vector<float> a(m * k), b(k * n), col(m * n), row(n * m);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float &x : a)
    x = dist(rng);
  for (float &x : b)
    x = dist(rng);
  // Column-major A (m x k, lda = m) and B (k x n, ldb = k).
  pd_cpu_sgemm(kColMajor, kNoTrans, kNoTrans, m, n, k, 1.0f, a.data(), m,
               b.data(), k, 0.0f, col.data(), m);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double ref = 0;
      for (int l = 0; l < k; ++l)
        ref += double(a[l * m + i]) * b[j * k + l];
      ASSERT_NEAR(col[j * m + i], ref, 1e-5) << i << "," << j;
    }
}

TEST(GemmKernel, EmptyAndZeroK) {
  float c[6] = {1, 2, 3, 4, 5, 6};
  float a = 0, b = 0;
  pd_cpu_sgemm(kRowMajor, kNoTrans, kNoTrans, 0, 3, 4, 1.0f, &a, 4, &b, 3,
               0.0f, c, 3);
  EXPECT_EQ(c[0], 1.0f);
  // K = 0: C = beta * C; beta = 0 writes zeros without reading.
  pd_cpu_sgemm(kRowMajor, kNoTrans, kNoTrans, 2, 3, 0, 1.0f, &a, 1, &b, 3,
               2.0f, c, 3);
  EXPECT_EQ(c[5], 12.0f);
  c[1] = std::numeric_limits<float>::quiet_NaN();
  pd_cpu_sgemm(kRowMajor, kNoTrans, kNoTrans, 2, 3, 0, 1.0f, &a, 1, &b, 3,
               0.0f, c, 3);
  for (float x : c)
    EXPECT_EQ(x, 0.0f);
}

TEST(GemmKernel, SameBitsForEveryThreadCount) {
  // Threads split C, never K: the result is bitwise the same for 1..5.
  const int m = 301, n = 517, k = 300;
  std::vector<float> a(m * k), b(n * k), ref(m * n), got(m * n);
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float &x : a)
    x = dist(rng);
  for (float &x : b)
    x = dist(rng);
  pipedream_cpu_set_num_threads(1);
  EXPECT_EQ(pipedream_cpu_num_threads(), 1);
  pd_cpu_sgemm(kRowMajor, kNoTrans, kTrans, m, n, k, 1.0f, a.data(), k,
               b.data(), k, 0.0f, ref.data(), n);
  for (int threads = 2; threads <= 5; ++threads) {
    pipedream_cpu_set_num_threads(threads);
    EXPECT_EQ(pipedream_cpu_num_threads(), threads);
    pd_cpu_sgemm(kRowMajor, kNoTrans, kTrans, m, n, k, 1.0f, a.data(), k,
                 b.data(), k, 0.0f, got.data(), n);
    ASSERT_EQ(std::memcmp(ref.data(), got.data(), ref.size() * sizeof(float)),
              0)
        << threads << " threads differ from 1";
  }
  pipedream_cpu_set_num_threads(0);
  EXPECT_GE(pipedream_cpu_num_threads(), 1);
}

/// C = op(A) op(B) for random A, B (B stored n x k when transB) twice:
/// plain, then with B's memory declared constant (pipedream_cpu_gemm_
/// constants): the first constant call packs B whole, the next reuse it;
/// all results bitwise the plain one's.
void checkConstantB(int m, int n, int k, bool transB, int threads,
                    uint32_t seed) {
  SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(n) + "x" +
               std::to_string(k) + " transB=" + std::to_string(transB) +
               " threads=" + std::to_string(threads) +
               " kernel=" + pipedream_cpu_gemm_kernel());
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const int ldb = (transB ? k : n) + 3;
  std::vector<float> a(size_t(m) * k), b(size_t(transB ? n : k) * ldb);
  for (float &x : a)
    x = dist(rng);
  for (float &x : b)
    x = dist(rng);
  std::vector<float> ref(size_t(m) * n), got(size_t(m) * n);
  pipedream_cpu_set_num_threads(threads);
  auto run = [&](std::vector<float> &c) {
    pd_cpu_sgemm(kRowMajor, kNoTrans, transB ? kTrans : kNoTrans, m, n, k,
                 1.0f, a.data(), k, b.data(), ldb, 0.0f, c.data(), n);
  };
  run(ref);
  const void *range = b.data();
  int64_t bytes = int64_t(b.size() * sizeof(float));
  pipedream_cpu_gemm_constants(&range, &bytes, 1);
  for (int call = 0; call < 3; ++call) {
    std::fill(got.begin(), got.end(), 0.0f);
    run(got);
    ASSERT_EQ(std::memcmp(ref.data(), got.data(), ref.size() * sizeof(float)),
              0)
        << "call " << call << " with B packed once differs";
  }
  int64_t packed = 0, reused = 0;
  pipedream_cpu_gemm_packed_stats(&packed, &reused);
  EXPECT_EQ(packed, 1);
  EXPECT_EQ(reused, 2);
  // Forgotten: B may change, and the next GEMM sees the new values.
  pipedream_cpu_gemm_constants(nullptr, nullptr, 0);
  for (float &x : b)
    x = -x;
  run(got);
  for (size_t i = 0; i < ref.size(); ++i)
    ASSERT_EQ(got[i], -ref[i]) << "stale packed B at " << i;
  pipedream_cpu_gemm_packed_stats(&packed, &reused);
  EXPECT_EQ(packed + reused, 0);
  pipedream_cpu_set_num_threads(0);
}

TEST(GemmKernel, ConstantBPackedOnce) {
  // Edges of the tile and of the KC (512) and NC (1024) blocks, both B
  // layouts (nn.Linear's weight is transposed), several threads.
  checkConstantB(37, 45, 29, true, 1, 21);
  checkConstantB(37, 45, 29, false, 1, 22);
  checkConstantB(64, 1100, 530, true, 3, 23);
  checkConstantB(100, 1030, 1030, false, 2, 24);
  checkConstantB(5, 33, 700, true, 4, 25);
}

TEST(GemmKernel, WholeCopiesForManyRowsAfterTwoCalls) {
  // A constant B of 4 MiB. A call of 8 rows copies it on first use. For
  // 520 rows (520 x 4 MiB is past kWholeCopyRowBytes, 2 GiB) the copy pays
  // only over many calls: the first two calls of a declaration pack per
  // call, the third makes the copy, the fourth reuses it; a declaration
  // starts the count again.
  const int n = 1024, k = 1024;
  std::vector<float> a(size_t(520) * k, 0.25f), b(size_t(k) * n, 0.5f);
  std::vector<float> c(size_t(520) * n);
  const void *range = b.data();
  int64_t bytes = int64_t(b.size() * sizeof(float));
  auto call = [&](int m, int64_t wantPacked, int64_t wantReused) {
    std::fill(c.begin(), c.end(), 0.0f);
    pd_cpu_sgemm(kRowMajor, kNoTrans, kNoTrans, m, n, k, 1.0f, a.data(), k,
                 b.data(), n, 0.0f, c.data(), n);
    EXPECT_EQ(c[size_t(m) * n - 1], 0.125f * k);
    int64_t packed = -1, reused = -1;
    pipedream_cpu_gemm_packed_stats(&packed, &reused);
    EXPECT_EQ(packed, wantPacked) << m << " rows";
    EXPECT_EQ(reused, wantReused) << m << " rows";
  };
  for (int declaration = 0; declaration < 2; ++declaration) {
    pipedream_cpu_gemm_constants(&range, &bytes, 1);
    call(520, 0, 0);
    call(520, 0, 0);
    call(520, 1, 0);
    call(520, 1, 1);
  }
  pipedream_cpu_gemm_constants(&range, &bytes, 1);
  call(8, 1, 0);
  call(8, 1, 1);
  pipedream_cpu_gemm_constants(nullptr, nullptr, 0);
}

/// PrepackMakesThePreviousStepsCopies's body, on a thread of its own (the
/// declarations and recipes are per thread; the other tests' are not
/// there).
void checkPrepack() {
  const int m = 37, n = 45, k = 530;
  std::mt19937 rng(41);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> a(size_t(m) * k), b1(size_t(n) * k), b2(size_t(k) * n);
  for (auto *v : {&a, &b1, &b2})
    for (float &x : *v)
      x = dist(rng);
  auto run = [&](const std::vector<float> &b, bool trans) {
    std::vector<float> c(size_t(m) * n);
    pd_cpu_sgemm(kRowMajor, kNoTrans, trans ? kTrans : kNoTrans, m, n, k, 1.0f,
                 a.data(), k, b.data(), trans ? k : n, 0.0f, c.data(), n);
    return c;
  };
  const void *ranges[] = {b1.data(), b2.data()};
  int64_t bytes[] = {int64_t(b1.size() * 4), int64_t(b2.size() * 4)};
  EXPECT_EQ(pipedream_cpu_gemm_prepack(), 0) << "nothing declared";
  pipedream_cpu_gemm_constants(ranges, bytes, 2);
  EXPECT_EQ(pipedream_cpu_gemm_prepack(), 0) << "no previous step";
  run(b1, true);
  run(b2, false);
  pipedream_cpu_gemm_constants(nullptr, nullptr, 0);
  EXPECT_EQ(pipedream_cpu_gemm_prepack(), 0) << "released";
  for (auto *v : {&b1, &b2})
    for (float &x : *v)
      x = 0.5f * x + 0.25f;
  std::vector<float> ref1 = run(b1, true), ref2 = run(b2, false);

  pipedream_cpu_gemm_constants(ranges, bytes, 2);
  EXPECT_EQ(pipedream_cpu_gemm_prepack(), 1);
  EXPECT_EQ(pipedream_cpu_gemm_prepack(), 1);
  EXPECT_EQ(pipedream_cpu_gemm_prepack(), 0);
  int64_t packed = -1, reused = -1;
  pipedream_cpu_gemm_packed_stats(&packed, &reused);
  EXPECT_EQ(packed, 2);
  EXPECT_EQ(reused, 0);
  std::vector<float> got1 = run(b1, true), got2 = run(b2, false);
  ASSERT_EQ(std::memcmp(ref1.data(), got1.data(), ref1.size() * 4), 0);
  ASSERT_EQ(std::memcmp(ref2.data(), got2.data(), ref2.size() * 4), 0);
  pipedream_cpu_gemm_packed_stats(&packed, &reused);
  EXPECT_EQ(packed, 2) << "the GEMMs packed again";
  EXPECT_EQ(reused, 2);
  pipedream_cpu_gemm_constants(nullptr, nullptr, 0);

  // Step 3 declares only B2 (B1 moved or is no longer constant): B1's
  // recipe is passed over, B2 packed ahead.
  pipedream_cpu_gemm_constants(&ranges[1], &bytes[1], 1);
  EXPECT_EQ(pipedream_cpu_gemm_prepack(), 1);
  EXPECT_EQ(pipedream_cpu_gemm_prepack(), 0);
  pipedream_cpu_gemm_packed_stats(&packed, &reused);
  EXPECT_EQ(packed, 1);
  pipedream_cpu_gemm_constants(nullptr, nullptr, 0);
}

TEST(GemmKernel, PrepackMakesThePreviousStepsCopies) {
  // Step 1 packs B1 (transposed, nn.Linear's weight) and B2 as its GEMMs
  // need them; the update changes them; step 2's declaration lets
  // pipedream_cpu_gemm_prepack pack both ahead, one per call, and the
  // GEMMs then reuse those copies: results bitwise those of plain calls
  // with the new values.
  std::thread(checkPrepack).join();
}

TEST(GemmKernel, ConstantRangesOnlyCoverWhatTheySay) {
  // A B outside every constant range (an activation), or reaching past
  // one, is packed per call: changing it between calls is seen.
  const int m = 20, n = 40, k = 30;
  std::vector<float> a(m * k, 0.5f), b(k * n + 8, 1.0f), c(m * n);
  const void *range = b.data();
  int64_t bytes = int64_t((k * n - 1) * sizeof(float)); // one short
  pipedream_cpu_gemm_constants(&range, &bytes, 1);
  pd_cpu_sgemm(kRowMajor, kNoTrans, kNoTrans, m, n, k, 1.0f, a.data(), k,
               b.data(), n, 0.0f, c.data(), n);
  for (float &x : b)
    x = 2.0f;
  pd_cpu_sgemm(kRowMajor, kNoTrans, kNoTrans, m, n, k, 1.0f, a.data(), k,
               b.data(), n, 0.0f, c.data(), n);
  for (float x : c)
    ASSERT_EQ(x, 0.5f * 2.0f * k);
  int64_t packed = -1, reused = -1;
  pipedream_cpu_gemm_packed_stats(&packed, &reused);
  EXPECT_EQ(packed, 0);
  EXPECT_EQ(reused, 0);
  pipedream_cpu_gemm_constants(nullptr, nullptr, 0);
}

} // namespace
