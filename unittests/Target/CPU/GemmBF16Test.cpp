//===- GemmBF16Test.cpp - pd_cpu_gemm_bf16 against exact references -------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The bf16 GEMM (--dtype bf16 on CPU) against two independent references:
// a float64 one of the same math (bf16-rounded operands, exact products,
// the sum rounded to bf16 once), within the f32 accumulation bound plus one
// bf16 rounding step, and a scalar model of the instruction sequence
// (per pair of k: FMA of the odd pair, then of the even one, in k order)
// that every micro-kernel must match bitwise: VDPBF16PS where the CPU has
// AVX512_BF16, the emulation in the forced-kernel CTest runs. So the native
// and emulated kernels give the same bits, whatever the thread count. AMX
// (TDPBF16PS, the default where the CPU and OS allow it) sums differently:
// the float64 bound only, and the same bits for every thread count.
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int32_t kRowMajor = 101, kColMajor = 102, kNoTrans = 111,
                  kTrans = 112;

/// Round to nearest even (no NaN in these tests), denormals flushed.
float bf16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  if ((bits & 0x7f800000u) == 0)
    bits &= 0x80000000u;
  else
    bits = (bits + 0x7fffu + ((bits >> 16) & 1u)) & 0xffff0000u;
  float r;
  std::memcpy(&r, &bits, 4);
  return r;
}

/// AMX's tile products (TDPBF16PS) sum the 32 products of a tile step
/// more exactly than two FMAs per pair: not the instruction model's bits,
/// only the float64 bound holds.
bool isAmx() { return std::string(pipedream_cpu_gemm_bf16_kernel()) == "amx_bf16"; }

bool isBF16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  return (bits & 0xffffu) == 0;
}

struct Problem {
  int m, n, k;
  bool transA, transB;
  int lda, ldb, ldc;
  std::vector<float> a, b, c;
  float at(int i, int l) const {
    return transA ? a[size_t(l) * lda + i] : a[size_t(i) * lda + l];
  }
  float bt(int l, int j) const {
    return transB ? b[size_t(j) * ldb + l] : b[size_t(l) * ldb + j];
  }
};

Problem make(int m, int n, int k, bool transA, bool transB, int pad,
             uint32_t seed) {
  Problem p{m, n, k, transA, transB, 0, 0, 0, {}, {}, {}};
  p.lda = (transA ? m : k) + pad;
  p.ldb = (transB ? k : n) + pad;
  p.ldc = n + pad;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  p.a.resize(size_t(transA ? k : m) * p.lda);
  p.b.resize(size_t(transB ? n : k) * p.ldb);
  p.c.resize(size_t(m) * p.ldc);
  for (float &x : p.a)
    x = dist(rng);
  for (float &x : p.b)
    x = dist(rng);
  for (float &x : p.c)
    x = dist(rng);
  return p;
}

std::vector<float> run(const Problem &p, float alpha, float beta) {
  std::vector<float> c = p.c;
  pd_cpu_gemm_bf16(kRowMajor, p.transA ? kTrans : kNoTrans,
                   p.transB ? kTrans : kNoTrans, p.m, p.n, p.k, alpha,
                   p.a.data(), p.lda, p.b.data(), p.ldb, beta, c.data(),
                   p.ldc);
  return c;
}

/// The instruction sequence's result for C[i][j].
float model(const Problem &p, int i, int j, float alpha, float beta) {
  float acc = 0.0f;
  for (int l = 0; l < p.k; l += 2) {
    if (l + 1 < p.k)
      acc = std::fmaf(bf16(p.at(i, l + 1)), bf16(p.bt(l + 1, j)), acc);
    acc = std::fmaf(bf16(p.at(i, l)), bf16(p.bt(l, j)), acc);
  }
  float r = bf16(alpha * acc);
  float old = p.c[size_t(i) * p.ldc + j];
  return beta == 0.0f ? r : r + beta * old;
}

void check(const Problem &p, float alpha, float beta) {
  SCOPED_TRACE(std::to_string(p.m) + "x" + std::to_string(p.n) + "x" +
               std::to_string(p.k) + " transA=" + std::to_string(p.transA) +
               " transB=" + std::to_string(p.transB) + " alpha=" +
               std::to_string(alpha) + " beta=" + std::to_string(beta) +
               " kernel=" + pipedream_cpu_gemm_bf16_kernel());
  std::vector<float> c = run(p, alpha, beta);
  for (int i = 0; i < p.m; ++i)
    for (int j = 0; j < p.n; ++j) {
      float got = c[size_t(i) * p.ldc + j];
      // float64 reference of the math.
      double exact = 0, mag = 0;
      for (int l = 0; l < p.k; ++l) {
        double t = double(bf16(p.at(i, l))) * double(bf16(p.bt(l, j)));
        exact += t;
        mag += std::fabs(t);
      }
      double old = p.c[size_t(i) * p.ldc + j];
      double product = double(alpha) * exact;
      // f32 accumulation bound, then one bf16 rounding (2^-8 relative,
      // one step either way of a tie moved by the f32 error).
      double bound = std::fabs(alpha) * (p.k * 6e-8 * mag) * 1.01 +
                     std::ldexp(std::fabs(product) + std::fabs(alpha) * p.k *
                                                          6e-8 * mag,
                                -8);
      double want = beta == 0.0f ? product : product + double(beta) * old;
      ASSERT_LE(std::fabs(double(got) - want), bound + 1e-6 * std::fabs(old))
          << "C[" << i << "][" << j << "]";
      if (beta == 0.0f)
        ASSERT_TRUE(isBF16(got)) << "C[" << i << "][" << j << "] = " << got
                                 << " is not a bf16 value";
      if (isAmx())
        continue;
      float bits = model(p, i, j, alpha, beta);
      ASSERT_EQ(std::memcmp(&got, &bits, 4), 0)
          << "C[" << i << "][" << j << "] = " << got
          << " differs from the instruction model's " << bits;
    }
  // Padding untouched.
  for (size_t x = 0; x < c.size(); ++x)
    if (int(x % p.ldc) >= p.n)
      ASSERT_EQ(c[x], p.c[x]) << "wrote padding at " << x;
}

TEST(GemmBF16, KernelInEffect) {
  std::string got = pipedream_cpu_gemm_bf16_kernel();
  std::string want = std::getenv("PIPEDREAM_GEMM_KERNEL")
                         ? std::getenv("PIPEDREAM_GEMM_KERNEL")
                         : "";
  if (want == "generic" || want == "avx2" || want == "avx512")
    EXPECT_EQ(got.find("-emulated"), got.size() - 9)
        << "PIPEDREAM_GEMM_KERNEL=" << want << " must force the emulation";
  if (want == "avx512_bf16")
    EXPECT_NE(got, "amx_bf16");
  if (const char *expect = std::getenv("PIPEDREAM_EXPECT_KERNEL"))
    EXPECT_EQ(got, std::string(expect) + "-emulated");
  std::printf("bf16 kernel: %s\n", got.c_str());
}

TEST(GemmBF16, OddSizesAllLayouts) {
  uint32_t seed = 100;
  for (int m : {1, 3, 12, 13, 31})
    for (int n : {1, 7, 32, 33})
      for (int k : {1, 2, 5, 64, 67})
        for (int t = 0; t < 4; ++t) {
          check(make(m, n, k, t & 1, t & 2, (m + k) % 3, seed++), 1.0f, 0.0f);
          if (HasFatalFailure())
            return;
        }
}

TEST(GemmBF16, AlphaBeta) {
  uint32_t seed = 500;
  for (auto [alpha, beta] : {std::pair{1.0f, 1.0f}, std::pair{0.5f, 1.0f},
                             std::pair{2.0f, -0.5f}, std::pair{-1.0f, 0.0f}}) {
    check(make(29, 45, 70, false, true, 2, seed++), alpha, beta);
    check(make(50, 33, 9, true, false, 0, seed++), alpha, beta);
    if (HasFatalFailure())
      return;
  }
}

TEST(GemmBF16, LargeKAndBlocks) {
  // K past one B block's budget (narrow blocks), M past MC.
  check(make(130, 70, 4099, false, true, 1, 7), 1.0f, 0.0f);
  check(make(200, 1100, 40, false, false, 0, 8), 1.0f, 1.0f);
}

TEST(GemmBF16, PairOrder) {
  // Products 2^-10, 2^20, 2^-10, -2^20 (k = 0..3): the odd product of each
  // pair first gives 2^20 + 2^-10 -> 2^20, -2^20 -> 0, + 2^-10; k order
  // would give 0. Every kernel follows VDPBF16PS's order.
  float a[4] = {0x1p-5f, 0x1p10f, 0x1p-5f, -0x1p10f};
  float b[4] = {0x1p-5f, 0x1p10f, 0x1p-5f, 0x1p10f};
  float c = 123.0f;
  pd_cpu_gemm_bf16(kRowMajor, kNoTrans, kNoTrans, 1, 1, 4, 1.0f, a, 4, b, 1,
                   0.0f, &c, 1);
  // AMX sums a tile step's products as exactly as float64 here.
  EXPECT_EQ(c, isAmx() ? 0x1p-9f : 0x1p-10f)
      << pipedream_cpu_gemm_bf16_kernel();
}

TEST(GemmBF16, CancellationBitwise) {
  // Per group of 4 k: large products at k = 1 and 3 that cancel exactly
  // (a[i][3] = -a[i][1], b[3][j] = b[1][j]) around small ones at k = 0
  // and 2, which they partly absorb: the result is the small products'
  // rounding residue, so the f32 summation order shows through the bf16
  // rounding and the instruction model's bits are a strict check of the
  // order every kernel sums in.
  uint32_t seed = 900;
  for (int t = 0; t < 4; ++t) {
    Problem p = make(37, 45, 96, t & 1, t & 2, 1, seed++);
    std::mt19937 rng(seed++);
    std::uniform_real_distribution<float> big(6.0f, 10.0f), small(-8.0f, -2.0f);
    std::uniform_int_distribution<int> sign(0, 1);
    auto value = [&](float e) {
      return (sign(rng) ? -1.0f : 1.0f) * bf16(std::exp2(e));
    };
    auto a = [&](int i, int l) -> float & {
      return p.transA ? p.a[size_t(l) * p.lda + i] : p.a[size_t(i) * p.lda + l];
    };
    auto b = [&](int l, int j) -> float & {
      return p.transB ? p.b[size_t(j) * p.ldb + l] : p.b[size_t(l) * p.ldb + j];
    };
    for (int l = 0; l < p.k; ++l) {
      for (int i = 0; i < p.m; ++i)
        a(i, l) = l % 4 == 3 ? -a(i, l - 2)
                             : value(l % 2 ? big(rng) : small(rng));
      for (int j = 0; j < p.n; ++j)
        b(l, j) = l % 4 == 3 ? b(l - 2, j) : value(l % 2 ? big(rng) : small(rng));
    }
    check(p, 1.0f, 0.0f);
    if (HasFatalFailure())
      return;
  }
}

TEST(GemmBF16, ColumnMajorIsTheTranspose) {
  Problem p = make(21, 34, 17, false, false, 0, 9);
  std::vector<float> row = run(p, 1.0f, 0.0f);
  // The same C^T = B^T A^T asked column-major: the same bits.
  std::vector<float> col(size_t(p.m) * p.n);
  pd_cpu_gemm_bf16(kColMajor, kNoTrans, kNoTrans, p.n, p.m, p.k, 1.0f,
                   p.b.data(), p.ldb, p.a.data(), p.lda, 0.0f, col.data(),
                   p.n);
  ASSERT_EQ(std::memcmp(row.data(), col.data(), col.size() * 4), 0);
}

TEST(GemmBF16, SameBitsForEveryThreadCount) {
  Problem p = make(301, 517, 300, false, true, 0, 11);
  pipedream_cpu_set_num_threads(1);
  std::vector<float> ref = run(p, 1.0f, 1.0f);
  for (int threads = 2; threads <= 5; ++threads) {
    pipedream_cpu_set_num_threads(threads);
    std::vector<float> got = run(p, 1.0f, 1.0f);
    ASSERT_EQ(std::memcmp(ref.data(), got.data(), ref.size() * 4), 0)
        << threads << " threads differ from 1";
  }
  pipedream_cpu_set_num_threads(0);
}

} // namespace

namespace {

/// C = op(A) op(B) in bf16, plain and then with B's memory declared
/// constant: the first constant call packs B whole, the next reuse it;
/// all bitwise the plain result; forgotten, a changed B is seen.
void checkConstantB(int m, int n, int k, bool transB, int threads,
                    uint32_t seed) {
  SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(n) + "x" +
               std::to_string(k) + " transB=" + std::to_string(transB) +
               " threads=" + std::to_string(threads) +
               " kernel=" + pipedream_cpu_gemm_bf16_kernel());
  Problem p = make(m, n, k, false, transB, 3, seed);
  pipedream_cpu_set_num_threads(threads);
  std::vector<float> ref = run(p, 1.0f, 1.0f);
  const void *range = p.b.data();
  int64_t bytes = int64_t(p.b.size() * sizeof(float));
  pipedream_cpu_gemm_constants(&range, &bytes, 1);
  for (int call = 0; call < 3; ++call) {
    std::vector<float> got = run(p, 1.0f, 1.0f);
    ASSERT_EQ(std::memcmp(ref.data(), got.data(), ref.size() * 4), 0)
        << "call " << call << " with B packed once differs";
  }
  int64_t packed = 0, reused = 0;
  pipedream_cpu_gemm_packed_stats(&packed, &reused);
  EXPECT_EQ(packed, 1);
  EXPECT_EQ(reused, 2);
  pipedream_cpu_gemm_constants(nullptr, nullptr, 0);
  for (float &x : p.b)
    x = -x;
  std::vector<float> flipped = run(p, 1.0f, 0.0f);
  std::vector<float> plain = run(Problem(p), 1.0f, 0.0f);
  ASSERT_EQ(std::memcmp(flipped.data(), plain.data(), plain.size() * 4), 0);
  check(p, 1.0f, 0.0f); // against the float64 reference with the new B
  pipedream_cpu_set_num_threads(0);
}

/// A bf16 B packed by the previous step's GEMM is packed ahead under the
/// next declaration (pipedream_cpu_gemm_prepack), and the GEMM then reuses
/// it: bitwise the plain result with the new values.
void checkPrepack() {
  Problem p = make(37, 45, 530, false, true, 3, 35);
  const void *range = p.b.data();
  int64_t bytes = int64_t(p.b.size() * sizeof(float));
  pipedream_cpu_gemm_constants(&range, &bytes, 1);
  run(p, 1.0f, 0.0f);
  pipedream_cpu_gemm_constants(nullptr, nullptr, 0);
  for (float &x : p.b)
    x = -x;
  std::vector<float> ref = run(p, 1.0f, 0.0f);
  pipedream_cpu_gemm_constants(&range, &bytes, 1);
  EXPECT_EQ(pipedream_cpu_gemm_prepack(), 1);
  EXPECT_EQ(pipedream_cpu_gemm_prepack(), 0);
  std::vector<float> got = run(p, 1.0f, 0.0f);
  ASSERT_EQ(std::memcmp(ref.data(), got.data(), ref.size() * 4), 0);
  int64_t packed = -1, reused = -1;
  pipedream_cpu_gemm_packed_stats(&packed, &reused);
  EXPECT_EQ(packed, 1);
  EXPECT_EQ(reused, 1);
  pipedream_cpu_gemm_constants(nullptr, nullptr, 0);
}

TEST(GemmBF16, PrepackMakesThePreviousStepsCopy) {
  std::thread(checkPrepack).join();
}

TEST(GemmBF16, ConstantBPackedOnce) {
  checkConstantB(37, 45, 29, true, 1, 31);
  checkConstantB(37, 45, 29, false, 1, 32);
  checkConstantB(64, 1100, 530, true, 3, 33);
  checkConstantB(100, 300, 2049, false, 2, 34);
}

} // namespace
