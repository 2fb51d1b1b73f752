//===- Gemm.cpp - packed, register-tiled f32 GEMM for program.so ----------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// `pd_cpu_sgemm` (Kernels.h): the GEMM of CPU bundles. The blocking is
// BLIS's (Van Zee & van de Geijn, "BLIS: A Framework for Rapidly
// Instantiating BLAS Functionality", 2015):
//
//   for jc in N step NC                      (B block in L3)
//     for pc in K step KC: pack op(B)[pc:, jc:] into KC x NR micro-panels
//       for ic in M step MC: pack op(A)[ic:, pc:] into MR x KC micro-panels
//         for jr in NC step NR               (a B micro-panel stays in L1)
//           for ir in MC step MR: micro-kernel, MR x NR accumulators
//
// Packing reads op(A)/op(B) through their transposition flags, so every
// layout (transposed A or B, strided rows) runs the same micro-kernel.
// Micro-kernels: AVX-512 12 x 32 (24 zmm accumulators), AVX2 6 x 16 (12 ymm),
// one template over the vector width (kernelVector),
// chosen by cpuid at the first call (and the OS's XSAVE state), or a portable
// C kernel on a CPU with neither; pipedream_cpu_gemm_kernel() says which.
//
// Threads split C into a grid of sub-blocks aligned to MR x NR tiles, each
// computed by the serial algorithm above with the thread's own packing
// buffers: K is never split, so every C element is the same sequence of
// operations whatever the thread count (results are bitwise identical for
// any N). The pool's workers are created on first use and block on a
// condition variable between GEMMs.
//
// NOTE: this file is linked into program.so, which depends on libc, libm
// and ld.so only: no C++ runtime (no new/delete, exceptions, RTTI,
// thread-safe statics or std::thread), POD globals only.
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"

#if defined(__x86_64__)
#define PD_X86 1
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#else
// Other architectures: the portable kernel only.
#define PD_X86 0
#endif
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

// The combine step C = alpha * acc + beta * C is two products and a sum in
// the vector and the scalar (edge-tile) code alike: no contraction into an
// FMA that only one of them would get.
#pragma clang fp contract(off)

#define PD_EXPORT __attribute__((visibility("default")))
// Called by the generated code of the same program.so only.
#define PD_HIDDEN __attribute__((visibility("hidden")))

namespace {

constexpr int32_t kColMajor = 102;
constexpr int32_t kTrans = 112;

enum class Isa { Generic = 0, Avx2 = 1, Avx512 = 2 };

/// op(X) of a stored row-major matrix: element (r, c) is
/// `trans ? p[c * ld + r] : p[r * ld + c]`.
struct Operand {
  const float *p;
  int64_t ld;
  bool trans;
};

/// Blocking of one micro-kernel.
struct Blocking {
  int mr, nr;
  int64_t kc, mc, nc;
};

//===----------------------------------------------------------------------===//
// Packing
//===----------------------------------------------------------------------===//

#if PD_X86
/// dst[t * dstStride + r] = src[r * srcStride + t] for r < R, t < 8: an
/// R x 8 block (R <= 8; rows past R are not read) transposed. 8 or R loads,
/// 24 shuffles, 8 stores of R floats (one or two for R = 4, 6, 8).
template <int R>
__attribute__((target("avx2"), always_inline)) inline void
transposeRows(const float *src, int64_t srcStride, float *dst,
              int64_t dstStride) {
  static_assert(R == 4 || R == 6 || R == 8, "stores of 4, 6 or 8 floats");
  __m256 r[8], t[8];
  for (int i = 0; i < 8; ++i)
    r[i] = i < R ? _mm256_loadu_ps(src + i * srcStride) : _mm256_setzero_ps();
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
    r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
  }
  for (int i = 0; i < 4; ++i) {
    t[i] = _mm256_permute2f128_ps(r[i], r[i + 4], 0x20);
    t[i + 4] = _mm256_permute2f128_ps(r[i], r[i + 4], 0x31);
  }
  for (int i = 0; i < 8; ++i) {
    float *d = dst + i * dstStride;
    if (R == 8) {
      _mm256_storeu_ps(d, t[i]);
      continue;
    }
    _mm_storeu_ps(d, _mm256_castps256_ps128(t[i]));
    if (R == 6)
      _mm_storel_pi(reinterpret_cast<__m64 *>(d + 4),
                    _mm256_extractf128_ps(t[i], 1));
  }
}

/// dst[t * dstStride + r] = src[r * srcStride + t] for an 8 x 8 block: the
/// transposed-B packing's inner step.
__attribute__((target("avx2"))) void transpose8x8(const float *src,
                                                  int64_t srcStride, float *dst,
                                                  int64_t dstStride) {
  transposeRows<8>(src, srcStride, dst, dstStride);
}

/// Whether transposeWidth takes a panel of `mr` rows in blocks of 8.
constexpr bool transposableRows(int mr) {
  return mr % 8 == 0 || mr % 8 == 4 || mr % 8 == 6;
}

/// The first `width` (4, 6 or 8) rows of an 8-column block transposed, as
/// transposeRows.
__attribute__((target("avx2"))) void transposeWidth(int width, const float *src,
                                                    int64_t srcStride,
                                                    float *dst,
                                                    int64_t dstStride) {
  if (width == 8)
    transposeRows<8>(src, srcStride, dst, dstStride);
  else if (width == 6)
    transposeRows<6>(src, srcStride, dst, dstStride);
  else
    transposeRows<4>(src, srcStride, dst, dstStride);
}
#endif

/// out[jr * kb + kk * W + j] = src[kk * ld + jr + j] for kk < kb, j < W
/// and jr < full, a multiple of W: `kb` stored rows spread over micro-panels
/// of kb x W, in fixed-size copies (a call to memcpy per 16 floats cost
/// more than the copy). Packs a row-major B (W = NR) and the panels of a
/// transposed A (W = MR). Blocks of 8 stored rows, each block into every
/// panel: the 8 rows' lines stay in L1 while the panels take their pieces,
/// and each panel is written 8 rows at a time. (Row by row into every
/// panel, as before, scattered each row over all the panels: 8-10 GB/s on
/// 256-512 x 768-1024 against 14-40 GB/s; panel by panel, the reads of
/// a transposed A's panel were a stored row apart, one L1 set for a
/// stride of 4 KiB.)
template <int W>
__attribute__((always_inline)) inline void
spreadRowsOf(int64_t kb, int64_t full, const float *src, int64_t ld,
             float *out) {
  constexpr int64_t kRows = 8;
  int64_t k0 = 0;
  for (; k0 + kRows <= kb; k0 += kRows)
    for (int64_t jr = 0; jr < full; jr += W) {
      const float *from = src + k0 * ld + jr;
      float *to = out + jr * kb + k0 * W;
      for (int64_t kk = 0; kk < kRows; ++kk, from += ld, to += W)
        memcpy(to, from, sizeof(float) * W);
    }
  for (; k0 < kb; ++k0)
    for (int64_t jr = 0; jr < full; jr += W)
      memcpy(out + jr * kb + k0 * W, src + k0 * ld + jr, sizeof(float) * W);
}

/// spreadRowsOf for the kernels' MR and NR (4, 6, 8, 12, 16, 32); false
/// for another width.
template <int... Widths>
__attribute__((always_inline)) inline bool
spreadRowsOfAny(int width, int64_t kb, int64_t full, const float *src,
                int64_t ld, float *out) {
  return ((width == Widths &&
           (spreadRowsOf<Widths>(kb, full, src, ld, out), true)) ||
          ...);
}

bool spreadRowsBaseline(int width, int64_t kb, int64_t full, const float *src,
                        int64_t ld, float *out) {
  return spreadRowsOfAny<4, 6, 8, 12, 16, 32>(width, kb, full, src, ld, out);
}

#if PD_X86
/// The same copies in 32-byte moves (16-byte ones in the baseline code:
/// 5% of a GPT training step was in them).
__attribute__((target("avx2"))) bool spreadRowsAvx2(int width, int64_t kb,
                                                    int64_t full,
                                                    const float *src,
                                                    int64_t ld, float *out) {
  return spreadRowsOfAny<4, 6, 8, 12, 16, 32>(width, kb, full, src, ld, out);
}
#endif

/// spreadRowsOf for `width`; `simd`: the CPU has AVX2.
bool spreadRows(int width, int64_t kb, int64_t full, const float *src,
                int64_t ld, float *out, bool simd) {
#if PD_X86
  if (simd)
    return spreadRowsAvx2(width, kb, full, src, ld, out);
#else
  (void)simd;
#endif
  return spreadRowsBaseline(width, kb, full, src, ld, out);
}

/// op(A)[i0 : i0+mb, p0 : p0+kb] into ceil(mb / MR) micro-panels of
/// kb x MR (k-major), rows past mb zero. `simd`: the CPU has AVX2, and a
/// whole panel of a row-major op(A) is transposed 8 columns at a time, in
/// blocks of up to 8 rows. A transposed A (stored K x M: a weight
/// gradient's X^T) is spread row by row into all its whole panels at once,
/// as packB does. (Panel by panel, consecutive reads of MR floats were a
/// stored row apart, with M = 1024 4 KiB: one L1 set; the packing took 16%
/// of a transposed-A 1024 x 256 x 1024 GEMM's time.)
void packA(const Operand &a, int64_t i0, int64_t mb, int64_t p0, int64_t kb,
           int mr, float *out, bool simd) {
  int64_t first = 0;
  if (a.trans) {
    int64_t full = mb / mr * mr;
    if (full > 0 &&
        spreadRows(mr, kb, full, a.p + p0 * a.ld + i0, a.ld, out, simd))
      first = full;
  }
  for (int64_t ir = first; ir < mb; ir += mr) {
    int64_t rows = mb - ir < mr ? mb - ir : mr;
    float *panel = out + ir * kb;
    if (rows < mr)
      memset(panel, 0, sizeof(float) * kb * mr);
    if (a.trans) {
      // Stored K x M: a row of the store is contiguous along i, MR floats
      // of it per k (one panel of width MR).
      const float *src = a.p + p0 * a.ld + i0 + ir;
      if (rows == mr && spreadRows(mr, kb, mr, src, a.ld, panel, simd))
        continue;
      for (int64_t kk = 0; kk < kb; ++kk)
        for (int64_t ii = 0; ii < rows; ++ii)
          panel[kk * mr + ii] = src[kk * a.ld + ii];
      continue;
    }
    const float *src = a.p + (i0 + ir) * a.ld + p0;
    int64_t k0 = 0;
#if PD_X86
    if (simd && rows == mr && transposableRows(mr))
      for (; k0 + 8 <= kb; k0 += 8)
        for (int r = 0; r < mr; r += 8)
          transposeWidth(mr - r < 8 ? mr - r : 8, src + r * a.ld + k0, a.ld,
                         panel + k0 * mr + r, mr);
#else
    (void)simd;
#endif
    for (int64_t ii = 0; ii < rows; ++ii) {
      const float *row = src + ii * a.ld;
      float *dst = panel + ii;
      for (int64_t kk = k0; kk < kb; ++kk)
        dst[kk * mr] = row[kk];
    }
  }
}

/// op(B)[p0 : p0+kb, j0 : j0+nb] into ceil(nb / NR) micro-panels of
/// kb x NR (k-major), columns past nb zero. `simd`: the CPU has AVX2.
void packB(const Operand &b, int64_t p0, int64_t kb, int64_t j0, int64_t nb,
           int nr, float *out, bool simd) {
  int64_t full = nb / nr * nr;
  if (full < nb)
    memset(out + full * kb, 0, sizeof(float) * kb * nr);
  if (!b.trans) {
    // Each stored row once, front to back, into every panel.
    const float *src = b.p + p0 * b.ld + j0;
    if (!spreadRows(nr, kb, full, src, b.ld, out, simd))
      for (int64_t kk = 0; kk < kb; ++kk)
        for (int64_t jr = 0; jr < full; jr += nr)
          memcpy(out + jr * kb + kk * nr, src + kk * b.ld + jr,
                 sizeof(float) * nr);
    if (full < nb)
      for (int64_t kk = 0; kk < kb; ++kk)
        memcpy(out + full * kb + kk * nr, src + kk * b.ld + full,
               sizeof(float) * (nb - full));
    return;
  }
  // Stored N x K (nn.Linear's weight): rows contiguous along k, transposed
  // 8 x 8 at a time.
  for (int64_t jr = 0; jr < nb; jr += nr) {
    int64_t cols = nb - jr < nr ? nb - jr : nr;
    float *panel = out + jr * kb;
    int64_t jj = 0;
#if PD_X86
    if (simd)
      for (; jj + 8 <= cols; jj += 8) {
        const float *src = b.p + (j0 + jr + jj) * b.ld + p0;
        int64_t kk = 0;
        for (; kk + 8 <= kb; kk += 8)
          transpose8x8(src + kk, b.ld, panel + kk * nr + jj, nr);
        for (; kk < kb; ++kk)
          for (int64_t t = 0; t < 8; ++t)
            panel[kk * nr + jj + t] = src[t * b.ld + kk];
      }
#else
    (void)simd;
#endif
    for (; jj < cols; ++jj) {
      const float *src = b.p + (j0 + jr + jj) * b.ld + p0;
      for (int64_t kk = 0; kk < kb; ++kk)
        panel[kk * nr + jj] = src[kk];
    }
  }
}

//===----------------------------------------------------------------------===//
// Micro-kernels: acc = Ap^T Bp over kc, then
//   first && beta == 0:  C = alpha * acc
//   first:               C = alpha * acc + beta * C
//   otherwise:           C = alpha * acc + C
//===----------------------------------------------------------------------===//

/// An epilogue (below) on one register tile, its pointers at the tile's
/// first element: `bias` at the tile's first column (at its first row when
/// biasPerRow), `addend` at the tile's element of the addend.
struct TileEpilogue {
  const float *bias;
  bool biasPerRow;
  const float *addend;
  int64_t ldAddend;
  int32_t act;
};

/// How a micro-kernel's accumulator meets C. `epilogue` (the tile's last
/// update only, else null): applied to the combined values in registers
/// before they are stored, exactly as applyEpilogue does in memory.
struct Update {
  float alpha, beta;
  bool first;
  const TileEpilogue *epilogue = nullptr;
};

inline float combine(float acc, float c, const Update &u) {
  if (!u.first)
    return u.alpha * acc + c;
  if (u.beta == 0.0f)
    return u.alpha * acc;
  return u.alpha * acc + u.beta * c;
}

/// What pd_cpu_sgemm_epilogue and pd_cpu_gemm_bf16_epilogue apply to each
/// finished element of C: `+ bias` (indexed by the element's column, or by
/// its row once a column-major call is turned row-major), `+ addend` (a
/// matrix stored as C is, leading dimension `ldAddend`: the same element
/// in either view), then the activation (Kernels.h: PD_CPU_ACT_*).
struct Epilogue {
  const float *bias = nullptr;
  bool biasPerRow = false;
  const float *addend = nullptr;
  int64_t ldAddend = 0;
  int32_t act = PD_CPU_ACT_NONE;

  bool empty() const { return !bias && !addend && act == PD_CPU_ACT_NONE; }
};

/// `e` on the register tile at row i, column j of C.
inline TileEpilogue tileEpilogue(const Epilogue &e, int64_t i, int64_t j) {
  return TileEpilogue{
      e.bias ? e.bias + (e.biasPerRow ? i : j) : nullptr, e.biasPerRow,
      e.addend ? e.addend + i * e.ldAddend + j : nullptr, e.ldAddend, e.act};
}

/// The tile epilogue `e` on the finished rows x cols block of C at `c`
/// (a partial tile, or the generic kernel's), while it is in L1; the
/// vector kernels do the same in their registers.
void applyTileEpilogue(const TileEpilogue &e, float *c, int64_t ldc,
                       int64_t rows, int64_t cols) {
  for (int64_t i = 0; i < rows; ++i) {
    float *row = c + i * ldc;
    if (e.bias && e.biasPerRow) {
      float b = e.bias[i];
      for (int64_t j = 0; j < cols; ++j)
        row[j] += b;
    } else if (e.bias) {
      for (int64_t j = 0; j < cols; ++j)
        row[j] += e.bias[j];
    }
    if (e.addend) {
      const float *r = e.addend + i * e.ldAddend;
      for (int64_t j = 0; j < cols; ++j)
        row[j] += r[j];
    }
    if (e.act == PD_CPU_ACT_RELU)
      for (int64_t j = 0; j < cols; ++j)
        row[j] = row[j] <= 0.0f ? 0.0f : row[j];
    else if (e.act == PD_CPU_ACT_RELU_NUM)
      for (int64_t j = 0; j < cols; ++j)
        row[j] = row[j] > 0.0f ? row[j] : 0.0f;
  }
}

/// The epilogue on the finished rows x cols block of C at `c` whose first
/// element is row i0, column j0 of the row-major problem.
void applyEpilogue(const Epilogue &e, float *c, int64_t ldc, int64_t i0,
                   int64_t j0, int64_t rows, int64_t cols) {
  applyTileEpilogue(tileEpilogue(e, i0, j0), c, ldc, rows, cols);
}

/// applyEpilogue on the tile at `tile` of a C that starts at `c`.
inline void applyEpilogueAt(const Epilogue &e, float *c, int64_t ldc,
                            float *tile, int64_t rows, int64_t cols) {
  int64_t offset = tile - c;
  applyEpilogue(e, tile, ldc, offset / ldc, offset % ldc, rows, cols);
}

template <int MR, int NR>
void kernelGeneric(int64_t kc, const float *ap, const float *bp, float *c,
                   int64_t ldc, const Update &u) {
  float acc[MR][NR] = {};
  for (int64_t k = 0; k < kc; ++k, ap += MR, bp += NR)
    for (int i = 0; i < MR; ++i)
      for (int j = 0; j < NR; ++j)
        acc[i][j] += ap[i] * bp[j];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j)
      c[i * ldc + j] = combine(acc[i][j], c[i * ldc + j], u);
  if (u.epilogue)
    applyTileEpilogue(*u.epilogue, c, ldc, MR, NR);
}

#if PD_X86
/// The vector micro-kernel of AVX2 and AVX-512, one body over the vector
/// width W (clang vector extensions, no intrinsics: instantiated inside the
/// target-attributed wrappers below, it compiles to their ymm / zmm code):
/// an MR x 2W tile, 2 MR accumulators, per k one B row of 2 vectors and MR
/// broadcast A elements. ROWS < MR: only the first ROWS rows of the tile
/// (the A panel keeps its MR stride; the last panel of an M that MR does
/// not divide), the same operations on each of them. HALVES = 1: only the
/// tile's first W columns (a B panel's first vector; the last columns of
/// an N that NR does not divide, such as a 10-class head), half the work.
template <int W, int MR, int ROWS = MR, int HALVES = 2>
__attribute__((always_inline)) inline void
kernelVector(int64_t kc, const float *ap, const float *bp, float *c,
             int64_t ldc, const Update &u) {
  typedef float Vec __attribute__((ext_vector_type(W)));
  // NOTE: a B panel row is aligned to its size (64-byte aligned buffers,
  // panels and rows of 2 W floats); C rows are not.
  auto loadAligned = [](const float *p) {
    return *reinterpret_cast<const Vec *>(
        __builtin_assume_aligned(p, sizeof(Vec)));
  };
  auto load = [](const float *p) {
    Vec v;
    __builtin_memcpy(&v, p, sizeof(v));
    return v;
  };
  auto store = [](float *p, Vec v) { __builtin_memcpy(p, &v, sizeof(v)); };
  Vec acc[ROWS][2];
#pragma clang loop unroll(full)
  for (int i = 0; i < ROWS; ++i) {
    acc[i][0] = acc[i][1] = Vec(0.0f);
    // The C tile's cache lines on their way while the loop runs (the tile
    // is read and written once, after it): 2-4% on 256 x 2048 x 2048 and
    // 1024 x 1024 x 256, AVX2, Zen 2.
#pragma clang loop unroll(full)
    for (int j = 0; j < HALVES * W; j += 16)
      __builtin_prefetch(c + i * ldc + j, 1, 3);
    __builtin_prefetch(c + i * ldc + HALVES * W - 1, 1, 3);
  }
  for (int64_t k = 0; k < kc; ++k, ap += MR, bp += 2 * W) {
    // The B panel 32 rows ahead (a hint: past the panel's end it is
    // dropped, never a fault): the first tile of a panel reads it from
    // memory (a weight packed once, 16 MiB for 2048 x 2048). +8-10% on
    // 256 x 2048 x 2048 with B packed whole; GPT shapes unchanged.
    __builtin_prefetch(bp + 32 * 2 * W, 0, 3);
    Vec b0 = loadAligned(bp), b1 = HALVES > 1 ? loadAligned(bp + W) : b0;
#pragma clang loop unroll(full)
    for (int i = 0; i < ROWS; ++i) {
      Vec a = Vec(ap[i]);
      acc[i][0] = __builtin_elementwise_fma(a, b0, acc[i][0]);
      if (HALVES > 1)
        acc[i][1] = __builtin_elementwise_fma(a, b1, acc[i][1]);
    }
  }
  Vec alpha = Vec(u.alpha), beta = Vec(u.beta);
#pragma clang loop unroll(full)
  for (int i = 0; i < ROWS; ++i)
#pragma clang loop unroll(full)
    for (int h = 0; h < HALVES; ++h) {
      Vec r = alpha * acc[i][h];
      if (!u.first)
        r = r + load(c + i * ldc + W * h);
      else if (u.beta != 0.0f)
        r = r + beta * load(c + i * ldc + W * h);
      acc[i][h] = r;
    }
  if (const TileEpilogue *e = u.epilogue) {
    // applyEpilogue's operations in its order, on the registers.
    const Vec zero = Vec(0.0f);
#pragma clang loop unroll(full)
    for (int i = 0; i < ROWS; ++i)
#pragma clang loop unroll(full)
      for (int h = 0; h < HALVES; ++h) {
        Vec r = acc[i][h];
        if (e->bias)
          r = r + (e->biasPerRow ? Vec(e->bias[i]) : load(e->bias + W * h));
        if (e->addend)
          r = r + load(e->addend + i * e->ldAddend + W * h);
        if (e->act == PD_CPU_ACT_RELU)
          r = r <= zero ? zero : r;
        else if (e->act == PD_CPU_ACT_RELU_NUM)
          r = r > zero ? r : zero;
        acc[i][h] = r;
      }
  }
#pragma clang loop unroll(full)
  for (int i = 0; i < ROWS; ++i)
#pragma clang loop unroll(full)
    for (int h = 0; h < HALVES; ++h)
      store(c + i * ldc + W * h, acc[i][h]);
}

__attribute__((target("avx2,fma"))) void
kernelAvx2(int64_t kc, const float *ap, const float *bp, float *c,
           int64_t ldc, const Update &u) {
  kernelVector<8, 6>(kc, ap, bp, c, ldc, u);
}

__attribute__((target("avx512f,fma"))) void
kernelAvx512(int64_t kc, const float *ap, const float *bp, float *c,
             int64_t ldc, const Update &u) {
  kernelVector<16, 12>(kc, ap, bp, c, ldc, u);
}

/// The first W columns of kernelAvx2's and kernelAvx512's tiles.
__attribute__((target("avx2,fma"))) void
kernelAvx2Half(int64_t kc, const float *ap, const float *bp, float *c,
               int64_t ldc, const Update &u) {
  kernelVector<8, 6, 6, 1>(kc, ap, bp, c, ldc, u);
}

__attribute__((target("avx512f,fma"))) void
kernelAvx512Half(int64_t kc, const float *ap, const float *bp, float *c,
                 int64_t ldc, const Update &u) {
  kernelVector<16, 12, 12, 1>(kc, ap, bp, c, ldc, u);
}

/// The first ROWS rows of kernelAvx2's and kernelAvx512's tiles.
template <int ROWS>
__attribute__((target("avx2,fma"))) void
kernelAvx2Rows(int64_t kc, const float *ap, const float *bp, float *c,
               int64_t ldc, const Update &u) {
  kernelVector<8, 6, ROWS>(kc, ap, bp, c, ldc, u);
}

template <int ROWS>
__attribute__((target("avx512f,fma"))) void
kernelAvx512Rows(int64_t kc, const float *ap, const float *bp, float *c,
                 int64_t ldc, const Update &u) {
  kernelVector<16, 12, ROWS>(kc, ap, bp, c, ldc, u);
}

#endif // PD_X86

using MicroKernel = void (*)(int64_t, const float *, const float *, float *,
                             int64_t, const Update &);

#if PD_X86
/// Per row count r < MR, the kernel on a tile's first r rows (index 0
/// unused).
const MicroKernel kAvx2RowKernels[6] = {nullptr,           kernelAvx2Rows<1>,
                                        kernelAvx2Rows<2>, kernelAvx2Rows<3>,
                                        kernelAvx2Rows<4>, kernelAvx2Rows<5>};
const MicroKernel kAvx512RowKernels[12] = {nullptr,
                                           kernelAvx512Rows<1>,
                                           kernelAvx512Rows<2>,
                                           kernelAvx512Rows<3>,
                                           kernelAvx512Rows<4>,
                                           kernelAvx512Rows<5>,
                                           kernelAvx512Rows<6>,
                                           kernelAvx512Rows<7>,
                                           kernelAvx512Rows<8>,
                                           kernelAvx512Rows<9>,
                                           kernelAvx512Rows<10>,
                                           kernelAvx512Rows<11>};
#endif

struct KernelInfo {
  const char *name;
  MicroKernel kernel;
  Blocking blocking;
  /// rowKernels[r], 0 < r < MR: the kernel on the first r rows of a tile,
  /// for the last rows of an M that MR does not divide (null: the generic
  /// kernel, whose partial tiles go through a full tile in a buffer).
  const MicroKernel *rowKernels = nullptr;
  /// The kernel on a tile's first NR / 2 columns (null: none; then a tile
  /// of fewer columns costs a whole one).
  MicroKernel halfKernel = nullptr;
};

// Measured (thread CPU time, 256 x 2048 x 2048 with B transposed, the MLP's
// GEMM, on a Xeon with AVX-512, 2 MiB L2): KC = 512 beat 256 (fewer passes
// over C: 127 vs 99-105 GFLOP/s), with a packed B block of KC x NC = 2 MiB
// or less (NC = 4096 at KC = 512: 104) and MC = 48-96. AVX2 untuned (no
// such machine at hand): the same KC, NC, half the tile.
const KernelInfo kKernels[] = {
    {"generic", kernelGeneric<4, 8>, {4, 8, 256, 128, 1024}},
#if PD_X86
    {"avx2",
     kernelAvx2,
     {6, 16, 512, 96, 1024},
     kAvx2RowKernels,
     kernelAvx2Half},
    {"avx512",
     kernelAvx512,
     {12, 32, 512, 96, 1024},
     kAvx512RowKernels,
     kernelAvx512Half},
#endif
};

//===----------------------------------------------------------------------===//
// CPU detection
//===----------------------------------------------------------------------===//

#if PD_X86
unsigned long long readXcr0() {
  unsigned eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<unsigned long long>(edx) << 32) | eax;
}

Isa detectIsa() {
  unsigned eax, ebx, ecx, edx;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx))
    return Isa::Generic;
  bool osxsave = ecx & (1u << 27), avx = ecx & (1u << 28),
       fma = ecx & (1u << 12);
  if (!osxsave || !avx || !fma)
    return Isa::Generic;
  unsigned long long xcr0 = readXcr0();
  // XMM and YMM state enabled by the OS.
  if ((xcr0 & 0x6) != 0x6)
    return Isa::Generic;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx))
    return Isa::Generic;
  bool avx2 = ebx & (1u << 5), avx512f = ebx & (1u << 16);
  // Opmask, ZMM0-15 upper halves and ZMM16-31 state.
  if (avx512f && (xcr0 & 0xe0) == 0xe0)
    return Isa::Avx512;
  return avx2 ? Isa::Avx2 : Isa::Generic;
}
#else
Isa detectIsa() { return Isa::Generic; }
#endif

int gIsa = -1;

const KernelInfo &kernelInfo() {
  int isa = __atomic_load_n(&gIsa, __ATOMIC_ACQUIRE);
  if (isa < 0) {
    isa = static_cast<int>(detectIsa());
    if (const char *want = getenv("PIPEDREAM_GEMM_KERNEL")) {
      int asked = !strcmp(want, "generic") ? 0
                  : !strcmp(want, "avx2")  ? 1
                  : !strcmp(want, "avx512") ? 2
                                            : isa;
      if (asked < isa)
        isa = asked;
    }
    __atomic_store_n(&gIsa, isa, __ATOMIC_RELEASE);
  }
  return kKernels[isa];
}

//===----------------------------------------------------------------------===//
// Dot products: op(A) row-major, B transposed, a small C and a long K
//===----------------------------------------------------------------------===//

// A convolution's weight gradient is dY [F, N*OH*OW] times the im2col
// matrix transposed ([C*KH*KW, N*OH*OW] stored): a C of 8-16 x 27-144 and a
// K of thousands, with both operands contiguous along K. The blocked path
// transposes the whole of B into panels (a copy used once, as M fits one
// or two tiles): 8% of a small CNN's training step went to transpose8x8.
// Here each element of C is a dot product of two contiguous rows, R x S
// of them at once in R x S vector accumulators over K, summed across the
// lanes at the end: no packing.

/// Whether C = alpha op(A) op(B) + beta C (then the epilogue) goes through
/// dotProducts. The shape alone decides, never the epilogue: a GEMM with
/// an epilogue must give the bits of the same GEMM without it followed by
/// the epilogue (GemmEpilogueTest).
inline bool dotProductShape(int64_t m, int64_t n, int64_t k, const Operand &a,
                            const Operand &b) {
  return !a.trans && b.trans && m <= 32 && n <= 512 && k >= 1024;
}

#if PD_X86
/// C[i][j] of an R x S block: sum over K of A row i times B row j (B
/// stored N x K), W lanes at a time, then the lanes in a fixed order and
/// the tail of K.
template <int W, int R, int S>
__attribute__((always_inline)) inline void dotBlock(int64_t k, const float *a,
                                                    int64_t lda, const float *b,
                                                    int64_t ldb, float *sums) {
  typedef float Vec __attribute__((ext_vector_type(W)));
  auto load = [](const float *p) {
    Vec v;
    __builtin_memcpy(&v, p, sizeof(v));
    return v;
  };
  Vec acc[R][S];
#pragma clang loop unroll(full)
  for (int i = 0; i < R; ++i)
#pragma clang loop unroll(full)
    for (int j = 0; j < S; ++j)
      acc[i][j] = Vec(0.0f);
  int64_t kk = 0;
  for (; kk + W <= k; kk += W) {
    Vec av[R], bv[S];
#pragma clang loop unroll(full)
    for (int i = 0; i < R; ++i)
      av[i] = load(a + i * lda + kk);
#pragma clang loop unroll(full)
    for (int j = 0; j < S; ++j)
      bv[j] = load(b + j * ldb + kk);
#pragma clang loop unroll(full)
    for (int i = 0; i < R; ++i)
#pragma clang loop unroll(full)
      for (int j = 0; j < S; ++j)
        acc[i][j] = __builtin_elementwise_fma(av[i], bv[j], acc[i][j]);
  }
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < S; ++j) {
      // The lanes in order (a fixed order: the same bits every run).
      float sum = 0.0f;
      for (int l = 0; l < W; ++l)
        sum += acc[i][j][l];
      for (int64_t t = kk; t < k; ++t)
        sum += a[i * lda + t] * b[j * ldb + t];
      sums[i * S + j] = sum;
    }
}

/// C = alpha A B^T + beta C for dotProductShape, R x S blocks (smaller at
/// the edges), B's rows outermost so that a block of them stays in cache
/// while every row of A passes.
template <int W, int R, int S>
__attribute__((always_inline)) inline void
dotProductsWith(int64_t m, int64_t n, int64_t k, float alpha, const Operand &a,
                const Operand &b, float beta, float *c, int64_t ldc,
                const Epilogue &epilogue) {
  Update u{alpha, beta, true};
  float sums[R * S];
  for (int64_t j0 = 0; j0 < n; j0 += S) {
    int64_t cols = n - j0 < S ? n - j0 : S;
    for (int64_t i0 = 0; i0 < m; i0 += R) {
      int64_t rows = m - i0 < R ? m - i0 : R;
      const float *ap = a.p + i0 * a.ld, *bp = b.p + j0 * b.ld;
      // Each element's sum is the same sequence of operations in any block
      // shape (its own accumulator, then its lanes and tail), so the edges
      // give the bits a whole block would.
      if (rows == R && cols == S)
        dotBlock<W, R, S>(k, ap, a.ld, bp, b.ld, sums);
      else if (cols == S)
        // The last rows (all of them when M < R: one row, S columns at a
        // time keeps S accumulators in flight).
        for (int64_t i = 0; i < rows; ++i)
          dotBlock<W, 1, S>(k, ap + i * a.ld, a.ld, bp, b.ld, sums + i * S);
      else
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t j = 0; j < cols; ++j)
            dotBlock<W, 1, 1>(k, ap + i * a.ld, a.ld, bp + j * b.ld, b.ld,
                              sums + i * S + j);
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) {
          float *cij = c + (i0 + i) * ldc + j0 + j;
          *cij = combine(sums[i * S + j], *cij, u);
        }
      if (!epilogue.empty())
        applyEpilogueAt(epilogue, c, ldc, c + i0 * ldc + j0, rows, cols);
    }
  }
}

__attribute__((target("avx512f,fma"))) void
dotProductsAvx512(int64_t m, int64_t n, int64_t k, float alpha,
                  const Operand &a, const Operand &b, float beta, float *c,
                  int64_t ldc, const Epilogue &epilogue) {
  dotProductsWith<16, 4, 4>(m, n, k, alpha, a, b, beta, c, ldc, epilogue);
}

__attribute__((target("avx2,fma"))) void
dotProductsAvx2(int64_t m, int64_t n, int64_t k, float alpha, const Operand &a,
                const Operand &b, float beta, float *c, int64_t ldc,
                const Epilogue &epilogue) {
  dotProductsWith<8, 2, 4>(m, n, k, alpha, a, b, beta, c, ldc, epilogue);
}
#endif

/// dotProducts for the CPU's kernel (false on the generic one, which keeps
/// the blocked path).
bool dotProducts(int64_t m, int64_t n, int64_t k, float alpha, const Operand &a,
                 const Operand &b, float beta, float *c, int64_t ldc,
                 const Epilogue &epilogue) {
#if PD_X86
  const KernelInfo &info = kernelInfo();
  if (info.kernel == kernelAvx512) {
    dotProductsAvx512(m, n, k, alpha, a, b, beta, c, ldc, epilogue);
    return true;
  }
  if (info.kernel == kernelAvx2) {
    dotProductsAvx2(m, n, k, alpha, a, b, beta, c, ldc, epilogue);
    return true;
  }
#else
  (void)m, (void)n, (void)k, (void)alpha, (void)a, (void)b, (void)beta, (void)c,
      (void)ldc, (void)epilogue;
#endif
  return false;
}

//===----------------------------------------------------------------------===//
// Per-thread packing buffers
//===----------------------------------------------------------------------===//

struct Buffers {
  float *a = nullptr, *b = nullptr;
  size_t aCap = 0, bCap = 0;
  /// Every thread's buffers are on one list: a live thread's buffers stay
  /// reachable from a global (LeakSanitizer does not see the pool workers'
  /// thread-local pointers while they wait, so an ASan run reported them
  /// leaked at exit).
  Buffers *prev = nullptr, *next = nullptr;
};

__thread Buffers *tBuffers;
pthread_key_t gBufferKey;
pthread_once_t gBufferKeyOnce = PTHREAD_ONCE_INIT;
pthread_mutex_t gBuffersLock = PTHREAD_MUTEX_INITIALIZER;
Buffers *gBuffersHead = nullptr;

void freeBuffers(void *p) {
  auto *buffers = static_cast<Buffers *>(p);
  pthread_mutex_lock(&gBuffersLock);
  if (buffers->prev)
    buffers->prev->next = buffers->next;
  else
    gBuffersHead = buffers->next;
  if (buffers->next)
    buffers->next->prev = buffers->prev;
  pthread_mutex_unlock(&gBuffersLock);
  free(buffers->a);
  free(buffers->b);
  free(buffers);
}

bool gBufferKeyMade = false;

void makeBufferKey() {
  gBufferKeyMade = pthread_key_create(&gBufferKey, freeBuffers) == 0;
}

/// 64-byte aligned, grown as needed, kept for the thread's next GEMM.
float *reserve(float *&p, size_t &cap, size_t floats) {
  if (cap >= floats)
    return p;
  free(p);
  size_t bytes = (floats * sizeof(float) + 63) & ~size_t(63);
  p = static_cast<float *>(aligned_alloc(64, bytes));
  cap = p ? floats : 0;
  return p;
}

Buffers *threadBuffers() {
  if (!tBuffers) {
    pthread_once(&gBufferKeyOnce, makeBufferKey);
    auto *buffers = static_cast<Buffers *>(calloc(1, sizeof(Buffers)));
    if (!buffers)
      return nullptr;
    pthread_mutex_lock(&gBuffersLock);
    buffers->next = gBuffersHead;
    if (gBuffersHead)
      gBuffersHead->prev = buffers;
    gBuffersHead = buffers;
    pthread_mutex_unlock(&gBuffersLock);
    tBuffers = buffers;
    pthread_setspecific(gBufferKey, buffers);
  }
  return tBuffers;
}

//===----------------------------------------------------------------------===//
// The serial algorithm on one sub-block of C
//===----------------------------------------------------------------------===//

/// One GEMM call in the row-major view: C = op(A) op(B) with alpha, beta
/// and the epilogue. `Packed`: the element of a packed B (float for the
/// f32 kernels, bf16 pairs for the bf16 ones).
template <typename Packed> struct ProblemOf {
  int64_t m, n, k;
  float alpha, beta;
  Operand a, b;
  float *c;
  int64_t ldc;
  Epilogue epilogue;
  /// op(B) packed whole, or NULL: packed per block. f32: packWholeB's
  /// layout; bf16: ceil(N / NR) panels of pairsPad(K) x NR, the panels
  /// gemmBlockBF16 packs per block.
  const Packed *packedB = nullptr;
};

using Problem = ProblemOf<float>;

/// The packed layout of a whole op(B) (K x N): for each KC block of rows
/// (pc), ceil(N / NR) micro-panels of kc x NR, the block's panels
/// contiguous, so columns [j, j + nb) of the block (j a multiple of NR)
/// are exactly what packB makes for them. Offset of block pc, column j.
inline int64_t wholeOffset(int64_t pc, int64_t j, int64_t kc, int64_t nPad) {
  return pc * nPad + j * kc;
}

/// The MR x NR tiles of C (`c`, leading dimension `ldc`) that one packed A
/// block (mc rows, micro-panels of `panel` elements) times one packed B
/// block (nc columns, the same) makes: `full(aPanel, bPanel, cTile, ir, jr)`
/// on a whole tile (at row ir, column jr of the blocks' C); on a partial one
/// (the block's last rows or columns) `partial(aPanel, bPanel, cTile, rows,
/// cols, ir, jr)`, which computes the valid part of the tile.
/// Shared by the f32 and bf16 paths.
template <typename T, typename Full, typename Partial>
__attribute__((always_inline)) inline void
forEachTile(int64_t mc, int64_t nc, int mr, int nr, int64_t panel, const T *ap,
            const T *bBlock, float *c, int64_t ldc, Full full,
            Partial partial) {
  for (int64_t jr = 0; jr < nc; jr += nr) {
    int64_t cols = nc - jr < nr ? nc - jr : nr;
    const T *bPanel = bBlock + jr * panel;
    for (int64_t ir = 0; ir < mc; ir += mr) {
      int64_t rows = mc - ir < mr ? mc - ir : mr;
      const T *aPanel = ap + ir * panel;
      float *cTile = c + ir * ldc + jr;
      if (rows == mr && cols == nr)
        full(aPanel, bPanel, cTile, ir, jr);
      else
        partial(aPanel, bPanel, cTile, rows, cols, ir, jr);
    }
  }
}

/// The most floats of packed A gemmBlock keeps for all blocks of columns
/// (1 MiB: 256 rows of a KC block of 512 in L2).
constexpr int64_t kKeepAFloats = int64_t(1) << 18;

/// C[i0 : i0+mb, j0 : j0+nb] of `p`. Returns false, before touching C, when
/// the packing buffers cannot be allocated.
bool gemmBlock(const Problem &p, const KernelInfo &info, int64_t i0,
               int64_t mb, int64_t j0, int64_t nb) {
  const Blocking &bl = info.blocking;
  const int mr = bl.mr, nr = bl.nr;
  const bool simd = info.kernel != kKernels[0].kernel;
  Buffers *buffers = threadBuffers();
  if (!buffers)
    return false;
  int64_t kcMax = p.k < bl.kc ? p.k : bl.kc;
  int64_t mcMax = mb < bl.mc ? mb : bl.mc;
  int64_t ncMax = nb < bl.nc ? nb : bl.nc;
  int64_t mcRound = (mcMax + mr - 1) / mr * mr;
  int64_t ncRound = (ncMax + nr - 1) / nr * nr;
  // More than one block of columns: A's rows packed once per KC block for
  // all of them (KC outermost) when they fit in kKeepAFloats; otherwise
  // each MC block of A is packed again for each block of columns.
  const int64_t mbRound = (mb + mr - 1) / mr * mr;
  const bool keepA = nb > bl.nc && mbRound * kcMax <= kKeepAFloats;
  float *ap = reserve(buffers->a, buffers->aCap,
                      size_t((keepA ? mbRound : mcRound) * kcMax));
  float *bp = reserve(buffers->b, buffers->bCap, size_t(ncRound * kcMax));
  if (!ap || !bp)
    return false;
  alignas(64) float edge[32 * 32]; // >= MR x NR of every kernel
  // Columns [jc, jc + nc) of KC block pc of op(B), packed.
  auto packedBBlock = [&](int64_t jc, int64_t nc, int64_t pc,
                          int64_t kc) -> const float * {
    if (p.packedB) {
      int64_t nPad = (p.n + nr - 1) / nr * nr;
      return p.packedB + wholeOffset(pc, j0 + jc, kc, nPad);
    }
    packB(p.b, pc, kc, j0 + jc, nc, nr, bp, simd);
    return bp;
  };
  // The tiles of rows [ic, ic + mc) and columns [jc, jc + nc) of the part
  // for KC block pc, from packed A panels at aBlock.
  auto tiles = [&](int64_t jc, int64_t nc, int64_t pc, int64_t kc,
                   const float *bBlock, int64_t ic, int64_t mc,
                   const float *aBlock) {
    Update update{p.alpha, p.beta, pc == 0};
    // The epilogue once a tile has its last update.
    const Epilogue *epilogue =
        pc + kc >= p.k && !p.epilogue.empty() ? &p.epilogue : nullptr;
    // The kernel's update of the tile at row ir, column jr of the block,
    // the epilogue (set up in `tile`) applied in its registers.
    auto updateAt = [&](int64_t ir, int64_t jr, TileEpilogue &tile) {
      Update u = update;
      if (epilogue) {
        tile = tileEpilogue(*epilogue, i0 + ic + ir, j0 + jc + jr);
        u.epilogue = &tile;
      }
      return u;
    };
    forEachTile(
        mc, nc, mr, nr, kc, aBlock, bBlock, p.c + (i0 + ic) * p.ldc + j0 + jc,
        p.ldc,
        [&](const float *aPanel, const float *bPanel, float *cTile, int64_t ir,
            int64_t jr) {
          TileEpilogue tile;
          info.kernel(kc, aPanel, bPanel, cTile, p.ldc,
                      updateAt(ir, jr, tile));
        },
        [&](const float *aPanel, const float *bPanel, float *cTile,
            int64_t rows, int64_t cols, int64_t ir, int64_t jr) {
          if (cols == nr && info.rowKernels) {
            // The last rows of M: the kernel on just those rows.
            TileEpilogue tile;
            info.rowKernels[rows](kc, aPanel, bPanel, cTile, p.ldc,
                                  updateAt(ir, jr, tile));
            return;
          }
          // The full tile into `edge` (its first NR / 2 columns when the
          // rest are padding), then the same combine as the kernel's on
          // the valid part.
          MicroKernel kernel =
              info.halfKernel && 2 * cols <= nr ? info.halfKernel : info.kernel;
          kernel(kc, aPanel, bPanel, edge, nr, Update{1.0f, 0.0f, true});
          for (int64_t i = 0; i < rows; ++i)
            for (int64_t j = 0; j < cols; ++j)
              cTile[i * p.ldc + j] =
                  combine(edge[i * nr + j], cTile[i * p.ldc + j], update);
          if (epilogue)
            applyEpilogueAt(*epilogue, p.c, p.ldc, cTile, rows, cols);
        });
  };
  if (keepA) {
    for (int64_t pc = 0; pc < p.k; pc += bl.kc) {
      int64_t kc = p.k - pc < bl.kc ? p.k - pc : bl.kc;
      packA(p.a, i0, mb, pc, kc, mr, ap, simd);
      for (int64_t jc = 0; jc < nb; jc += bl.nc) {
        int64_t nc = nb - jc < bl.nc ? nb - jc : bl.nc;
        const float *bBlock = packedBBlock(jc, nc, pc, kc);
        for (int64_t ic = 0; ic < mb; ic += bl.mc)
          tiles(jc, nc, pc, kc, bBlock, ic, mb - ic < bl.mc ? mb - ic : bl.mc,
                ap + ic * kc);
      }
    }
    return true;
  }
  for (int64_t jc = 0; jc < nb; jc += bl.nc) {
    int64_t nc = nb - jc < bl.nc ? nb - jc : bl.nc;
    for (int64_t pc = 0; pc < p.k; pc += bl.kc) {
      int64_t kc = p.k - pc < bl.kc ? p.k - pc : bl.kc;
      const float *bBlock = packedBBlock(jc, nc, pc, kc);
      for (int64_t ic = 0; ic < mb; ic += bl.mc) {
        int64_t mc = mb - ic < bl.mc ? mb - ic : bl.mc;
        packA(p.a, i0 + ic, mc, pc, kc, mr, ap, simd);
        tiles(jc, nc, pc, kc, bBlock, ic, mc, ap);
      }
    }
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Thread pool
//===----------------------------------------------------------------------===//

constexpr int kMaxThreads = 256;

struct Pool {
  /// Held by the one caller using the workers; a concurrent caller (ranks
  /// as threads of one process) runs on its own thread instead.
  pthread_mutex_t use = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
  pthread_cond_t done = PTHREAD_COND_INITIALIZER;
  pthread_t threads[kMaxThreads];
  int workers = 0;
  unsigned long generation = 0;
  void (*job)(void *, int) = nullptr;
  void *arg = nullptr;
  int active = 0;
  int remaining = 0;
  bool quit = false;
  /// The generation when worker i was created: it waits for a later one.
  unsigned long startGeneration[kMaxThreads];
};

Pool gPool;

void *workerMain(void *p) {
  int index = static_cast<int>(reinterpret_cast<intptr_t>(p));
  pthread_mutex_lock(&gPool.lock);
  unsigned long seen = gPool.startGeneration[index];
  for (;;) {
    while (gPool.generation == seen && !gPool.quit)
      pthread_cond_wait(&gPool.wake, &gPool.lock);
    if (gPool.quit)
      break;
    seen = gPool.generation;
    if (index >= gPool.active)
      continue;
    void (*job)(void *, int) = gPool.job;
    void *arg = gPool.arg;
    pthread_mutex_unlock(&gPool.lock);
    job(arg, index + 1);
    pthread_mutex_lock(&gPool.lock);
    if (--gPool.remaining == 0)
      pthread_cond_signal(&gPool.done);
  }
  pthread_mutex_unlock(&gPool.lock);
  return nullptr;
}

/// Runs job(arg, 0 .. threads-1), job 0 on the caller, and returns
/// `threads`; returns 1, having run nothing, when the pool is busy or not
/// all the threads can start (the caller then runs everything itself).
int runParallel(int threads, void (*job)(void *, int), void *arg) {
  if (threads <= 1 || pthread_mutex_trylock(&gPool.use) != 0)
    return 1;
  pthread_mutex_lock(&gPool.lock);
  while (gPool.workers < threads - 1) {
    pthread_t thread;
    gPool.startGeneration[gPool.workers] = gPool.generation;
    if (pthread_create(&thread, nullptr, workerMain,
                       reinterpret_cast<void *>(intptr_t(gPool.workers))) != 0)
      break;
    gPool.threads[gPool.workers++] = thread;
  }
  // All of them or none: the caller split its work into `threads` parts
  // (runSplit), and fewer workers would leave parts of C unwritten (so it
  // was, silently, where pthread_create failed: a container's process
  // limit).
  if (gPool.workers < threads - 1) {
    pthread_mutex_unlock(&gPool.lock);
    pthread_mutex_unlock(&gPool.use);
    return 1;
  }
  gPool.job = job;
  gPool.arg = arg;
  gPool.active = threads - 1;
  gPool.remaining = threads - 1;
  ++gPool.generation;
  pthread_cond_broadcast(&gPool.wake);
  pthread_mutex_unlock(&gPool.lock);
  job(arg, 0);
  pthread_mutex_lock(&gPool.lock);
  while (gPool.remaining > 0)
    pthread_cond_wait(&gPool.done, &gPool.lock);
  pthread_mutex_unlock(&gPool.lock);
  pthread_mutex_unlock(&gPool.use);
  return threads;
}

/// NOTE: runs at dlclose (and exit): workers execute this library's code,
/// so they must be gone before it is unmapped.
__attribute__((destructor)) void stopPool() {
  pthread_mutex_lock(&gPool.lock);
  gPool.quit = true;
  pthread_cond_broadcast(&gPool.wake);
  int workers = gPool.workers;
  pthread_mutex_unlock(&gPool.lock);
  for (int i = 0; i < workers; ++i)
    pthread_join(gPool.threads[i], nullptr);
  pthread_mutex_lock(&gPool.lock);
  gPool.workers = 0;
  gPool.quit = false;
  pthread_mutex_unlock(&gPool.lock);
}

int gThreads = 0;

int defaultThreads() {
  if (const char *env = getenv("PIPEDREAM_NUM_THREADS")) {
    long n = strtol(env, nullptr, 10);
    if (n > 0)
      return n > kMaxThreads ? kMaxThreads : static_cast<int>(n);
  }
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0)
      return n > kMaxThreads ? kMaxThreads : n;
  }
  return 1;
}

int threadCount() {
  int n = __atomic_load_n(&gThreads, __ATOMIC_ACQUIRE);
  if (n <= 0) {
    n = defaultThreads();
    __atomic_store_n(&gThreads, n, __ATOMIC_RELEASE);
  }
  return n;
}

//===----------------------------------------------------------------------===//
// Weights packed once (pipedream_cpu_gemm_constants)
//===----------------------------------------------------------------------===//

struct PackedB {
  const float *p;
  int64_t ld, k, n;
  bool trans;
  int isa;
  float *packed;
  /// Bytes of `packed` (at least the copy's).
  size_t bytes;
};

/// A packed copy as made: what pipedream_cpu_gemm_prepack needs to make it
/// again for the next declaration's ranges.
struct PackRecipe {
  const float *p;
  int64_t ld, k, n;
  bool trans;
  int layout;
};

inline bool sameRecipe(const PackRecipe &x, const PackRecipe &y) {
  return x.p == y.p && x.ld == y.ld && x.k == y.k && x.n == y.n &&
         x.trans == y.trans && x.layout == y.layout;
}

/// Appends `r` to the `count` recipes at `list` (capacity `cap`); false
/// when out of memory.
bool appendRecipe(PackRecipe *&list, int32_t &count, int32_t &cap,
                  const PackRecipe &r) {
  if (count == cap) {
    int32_t grown = cap ? 2 * cap : 16;
    auto *p =
        static_cast<PackRecipe *>(realloc(list, sizeof(PackRecipe) * grown));
    if (!p)
      return false;
    list = p;
    cap = grown;
  }
  list[count++] = r;
  return true;
}

/// The calling thread's constant ranges and packed copies, and the
/// buffers of dropped copies (kept for the next step's: fresh pages for
/// each step's copies cost as much as the packing saved). `made`: the
/// recipes of the copies packed since the last declaration; `pending`:
/// those of the declaration before (the previous step's), which
/// pipedream_cpu_gemm_prepack packs from `nextPending` on. `seen`: a
/// recipe per call that packed a deferred copy's B per call under this
/// declaration (constantPackedB).
struct Constants {
  const unsigned char **begin = nullptr, **end = nullptr;
  int32_t ranges = 0, rangeCap = 0;
  PackedB *packs = nullptr;
  int32_t numPacks = 0, packCap = 0;
  size_t packedBytes = 0;
  float **spare = nullptr;
  size_t *spareBytes = nullptr;
  int32_t numSpare = 0;
  int64_t packed = 0, reused = 0;
  PackRecipe *made = nullptr, *pending = nullptr;
  int32_t numMade = 0, madeCap = 0, numPending = 0, pendingCap = 0;
  int32_t nextPending = 0;
  PackRecipe *seen = nullptr;
  int32_t numSeen = 0, seenCap = 0;
};

__thread Constants *tConstants;
pthread_key_t gConstantsKey;
pthread_once_t gConstantsKeyOnce = PTHREAD_ONCE_INIT;

/// The copies' buffers become spare ones (as many as there were copies).
void dropPacks(Constants &c) {
  if (c.numPacks > 0) {
    auto *spare = static_cast<float **>(
        realloc(c.spare, sizeof(float *) * size_t(c.numSpare + c.numPacks)));
    auto *bytes = static_cast<size_t *>(realloc(
        c.spareBytes, sizeof(size_t) * size_t(c.numSpare + c.numPacks)));
    if (spare)
      c.spare = spare;
    if (bytes)
      c.spareBytes = bytes;
    for (int32_t i = 0; i < c.numPacks; ++i) {
      if (spare && bytes) {
        c.spare[c.numSpare] = c.packs[i].packed;
        c.spareBytes[c.numSpare++] = c.packs[i].bytes;
      } else {
        free(c.packs[i].packed);
      }
    }
  }
  c.numPacks = 0;
  c.packedBytes = 0;
}

/// A buffer of at least `bytes`: the smallest spare one that fits, else a
/// new one (spare ones freed first while the spare and packed bytes
/// exceed `budget`).
float *takeBuffer(Constants &c, size_t bytes, size_t budget,
                  size_t &capacity) {
  int32_t best = -1;
  for (int32_t i = 0; i < c.numSpare; ++i)
    if (c.spareBytes[i] >= bytes &&
        (best < 0 || c.spareBytes[i] < c.spareBytes[best]))
      best = i;
  if (best >= 0) {
    float *p = c.spare[best];
    capacity = c.spareBytes[best];
    c.spare[best] = c.spare[--c.numSpare];
    c.spareBytes[best] = c.spareBytes[c.numSpare];
    return p;
  }
  size_t held = c.packedBytes;
  for (int32_t i = 0; i < c.numSpare; ++i)
    held += c.spareBytes[i];
  while (c.numSpare > 0 && held + bytes > budget) {
    --c.numSpare;
    held -= c.spareBytes[c.numSpare];
    free(c.spare[c.numSpare]);
  }
  capacity = (bytes + 63) & ~size_t(63);
  return static_cast<float *>(aligned_alloc(64, capacity));
}

void freeConstants(void *p) {
  auto *c = static_cast<Constants *>(p);
  dropPacks(*c);
  for (int32_t i = 0; i < c->numSpare; ++i)
    free(c->spare[i]);
  free(c->spare);
  free(c->spareBytes);
  free(c->packs);
  free(c->made);
  free(c->pending);
  free(c->seen);
  free(c->begin);
  free(c->end);
  free(c);
}

bool gConstantsKeyMade = false;

void makeConstantsKey() {
  gConstantsKeyMade =
      pthread_key_create(&gConstantsKey, freeConstants) == 0;
}

/// NOTE: runs at dlclose: the keys' destructors are this library's code,
/// which a thread exiting later must not call (its buffers then leak; the
/// calling thread's are freed here).
__attribute__((destructor)) void deleteThreadKeys() {
  if (gConstantsKeyMade) {
    if (tConstants)
      freeConstants(tConstants);
    tConstants = nullptr;
    pthread_key_delete(gConstantsKey);
  }
  if (gBufferKeyMade) {
    if (tBuffers)
      freeBuffers(tBuffers);
    tBuffers = nullptr;
    pthread_key_delete(gBufferKey);
  }
}

size_t packBudget() {
  static long budget = -2; // NOTE: POD static, racing writers agree.
  long b = __atomic_load_n(&budget, __ATOMIC_RELAXED);
  if (b == -2) {
    b = 128;
    if (const char *env = getenv("PIPEDREAM_GEMM_PACKED_MB")) {
      char *end = nullptr;
      long v = strtol(env, &end, 10);
      if (end != env && v >= 0)
        b = v;
    }
    __atomic_store_n(&budget, b, __ATOMIC_RELAXED);
  }
  return size_t(b) << 20;
}

/// A call of M rows makes a whole packed copy of a constant op(B) on its
/// first use while M x the copy's bytes stays within this; past it, on its
/// use after kDeferredUses that packed per call under the same
/// declaration. Such a copy is written out of cache and each use streams
/// it from L3, where the per-call packing fills an L2-sized block the
/// kernel then reads from L2, and the pack it saves is 1/M of a call: it
/// pays over many calls (weights declared once for every call, as
/// bench.py does for an inference bundle), not over the few of a training
/// step. Measured (one thread, the weight written between declarations
/// and 32 MiB touched between calls, R calls per declaration; time with
/// the copy on first use / without): 256 x 2048 x 2048 (16 MiB) 1.08-1.20
/// at R = 1, 1.02-1.05 at R = 4, 0.96-1.08 at R = 8; 128 x 2048 x 2048
/// 0.93-0.98 at R = 4-8; 32 x 2048 x 2048 0.70-0.90 at R = 4-8; 256 x
/// 2048 x 512 (4 MiB) 0.89-0.97 at R = 4-8; 1024 rows of any of these
/// 0.97-1.07. mlp2048 (256 rows): a training step of M = 2 micro-batches
/// took 101-110 ms with the copies of its 16 MiB weight made on first
/// use, 103-105 on second use, 93-99 without (as on third use); its
/// forward, weights declared once, 13.1-13.6 ms with copies on third use,
/// 13.4-13.6 on first use, 14.4-14.5 without.
constexpr int64_t kWholeCopyRowBytes = int64_t(2048) << 20;
constexpr int32_t kDeferredUses = 2;

/// The calling thread's packed copy of a constant op(B) (stored at `b`,
/// K x N, `layout` telling packings apart: the f32 kernels' ISA, the bf16
/// ones' 16 + index), from the cache or packed now by pack(buffer) into
/// `bytes`; NULL when B is not in a constant range, over the budget, out
/// of memory, or `deferred` and met fewer than kDeferredUses times before
/// under this declaration (the caller packs per block).
template <typename Pack>
void *constantPacked(const Operand &b, int64_t k, int64_t n, int layout,
                     size_t bytes, Pack pack, bool prepack = false,
                     bool deferred = false) {
  Constants *c = tConstants;
  if (!c || c->ranges == 0)
    return nullptr;
  // The bytes op(B) spans in its store.
  int64_t rows = b.trans ? n : k, cols = b.trans ? k : n;
  const unsigned char *first = reinterpret_cast<const unsigned char *>(b.p);
  const unsigned char *last =
      first + ((rows - 1) * b.ld + cols) * int64_t(sizeof(float));
  bool inside = false;
  for (int32_t i = 0; i < c->ranges && !inside; ++i)
    inside = first >= c->begin[i] && last <= c->end[i];
  if (!inside)
    return nullptr;
  for (int32_t i = 0; i < c->numPacks; ++i) {
    const PackedB &e = c->packs[i];
    if (e.p == b.p && e.ld == b.ld && e.k == k && e.n == n &&
        e.trans == b.trans && e.isa == layout) {
      if (!prepack)
        ++c->reused;
      return e.packed;
    }
  }
  if (c->packedBytes + bytes > packBudget())
    return nullptr;
  if (deferred && !prepack) {
    PackRecipe key{b.p, b.ld, k, n, b.trans, layout};
    int32_t met = 0;
    for (int32_t i = 0; i < c->numSeen; ++i)
      met += sameRecipe(c->seen[i], key);
    if (met < kDeferredUses) {
      appendRecipe(c->seen, c->numSeen, c->seenCap, key);
      return nullptr;
    }
  }
  if (c->numPacks == c->packCap) {
    int32_t cap = c->packCap ? 2 * c->packCap : 16;
    auto *grown =
        static_cast<PackedB *>(realloc(c->packs, sizeof(PackedB) * cap));
    if (!grown)
      return nullptr;
    c->packs = grown;
    c->packCap = cap;
  }
  size_t capacity = 0;
  float *packed = takeBuffer(*c, bytes, packBudget(), capacity);
  if (!packed)
    return nullptr;
  pack(packed);
  c->packs[c->numPacks++] =
      PackedB{b.p, b.ld, k, n, b.trans, layout, packed, capacity};
  c->packedBytes += capacity;
  ++c->packed;
  appendRecipe(c->made, c->numMade, c->madeCap,
               PackRecipe{b.p, b.ld, k, n, b.trans, layout});
  return packed;
}

/// op(B) = `b` (K x N) packed whole for `info` (constantPacked), for a
/// call of `rows` rows (kWholeCopyRowBytes; prepack: a copy made before).
const float *constantPackedB(const Operand &b, int64_t k, int64_t n,
                             int64_t rows, const KernelInfo &info,
                             bool prepack = false) {
  const Blocking &bl = info.blocking;
  int64_t nPad = (n + bl.nr - 1) / bl.nr * bl.nr;
  size_t bytes = size_t(nPad) * size_t(k) * sizeof(float);
  const bool simd = info.kernel != kKernels[0].kernel;
  return static_cast<const float *>(constantPacked(
      b, k, n, int(&info - kKernels), bytes,
      [&](float *packed) {
        // The same packB calls, block by block, gemmBlock would make per
        // call.
        for (int64_t pc = 0; pc < k; pc += bl.kc) {
          int64_t kc = k - pc < bl.kc ? k - pc : bl.kc;
          for (int64_t j = 0; j < n; j += bl.nc) {
            int64_t nb = n - j < bl.nc ? n - j : bl.nc;
            packB(b, pc, kc, j, nb, bl.nr,
                  packed + wholeOffset(pc, j, kc, nPad), simd);
          }
        }
      },
      prepack, rows > 0 && int64_t(bytes) > kWholeCopyRowBytes / rows));
}

//===----------------------------------------------------------------------===//
// Splitting C between threads
//===----------------------------------------------------------------------===//

struct Split {
  const Problem *problem;
  const KernelInfo *info;
  int tm, tn;
  int64_t rowTiles, colTiles;
};

/// C[i0:i1, j0:j1] in plain loops: only when the packing buffers cannot be
/// allocated (out of memory), so the call still computes its result.
void gemmNaive(const Problem &p, int64_t i0, int64_t i1, int64_t j0,
               int64_t j1) {
  for (int64_t i = i0; i < i1; ++i)
    for (int64_t j = j0; j < j1; ++j) {
      float acc = 0;
      for (int64_t l = 0; l < p.k; ++l) {
        float x = p.a.trans ? p.a.p[l * p.a.ld + i] : p.a.p[i * p.a.ld + l];
        float y = p.b.trans ? p.b.p[j * p.b.ld + l] : p.b.p[l * p.b.ld + j];
        acc += x * y;
      }
      float &c = p.c[i * p.ldc + j];
      c = combine(acc, c, Update{p.alpha, p.beta, true});
    }
  if (!p.epilogue.empty())
    applyEpilogue(p.epilogue, p.c + i0 * p.ldc + j0, p.ldc, i0, j0, i1 - i0,
                  j1 - j0);
}

/// The rows [i0, i1) and columns [j0, j1) of an m x n C that part `part`
/// of a tm x tn grid over its rowTiles x colTiles tiles of mr x nr
/// computes; false when the part is empty.
bool partBounds(int part, int tm, int tn, int64_t rowTiles, int64_t colTiles,
                int64_t mr, int64_t nr, int64_t m, int64_t n, int64_t &i0,
                int64_t &i1, int64_t &j0, int64_t &j1) {
  int pi = part / tn, pj = part % tn;
  i0 = rowTiles * pi / tm * mr;
  i1 = rowTiles * (pi + 1) / tm * mr;
  j0 = colTiles * pj / tn * nr;
  j1 = colTiles * (pj + 1) / tn * nr;
  if (i1 > m)
    i1 = m;
  if (j1 > n)
    j1 = n;
  return i0 < i1 && j0 < j1;
}

/// Part `part` of a tm x tn grid over the MR x NR tiles of C.
void runPart(void *p, int part) {
  auto *s = static_cast<Split *>(p);
  const Blocking &bl = s->info->blocking;
  int64_t i0, i1, j0, j1;
  if (!partBounds(part, s->tm, s->tn, s->rowTiles, s->colTiles, bl.mr, bl.nr,
                  s->problem->m, s->problem->n, i0, i1, j0, j1))
    return;
  if (!gemmBlock(*s->problem, *s->info, i0, i1 - i0, j0, j1 - j0))
    gemmNaive(*s->problem, i0, i1, j0, j1);
}

/// Splits into threads parts so that sub-blocks are about square (in
/// elements) and no part is empty.
void chooseGrid(int threads, int64_t rowTiles, int64_t colTiles,
                const Blocking &bl, int &tm, int &tn) {
  tm = 1;
  tn = 1;
  double best = -1;
  for (int a = 1; a <= threads; ++a) {
    if (threads % a)
      continue;
    int b = threads / a;
    if (a > rowTiles || b > colTiles)
      continue;
    double rows = double(rowTiles) * bl.mr / a, cols = double(colTiles) * bl.nr / b;
    double score = rows < cols ? rows / cols : cols / rows;
    if (score > best) {
      best = score;
      tm = a;
      tn = b;
    }
  }
}

//===----------------------------------------------------------------------===//
// bf16 GEMMs (pd_cpu_gemm_bf16): --dtype bf16
//===----------------------------------------------------------------------===//
//
// C = beta * C + bf16(alpha * sum_k bf16(op(A)[i,k]) * bf16(op(B)[k,j])),
// the sum in f32: the semantics of the CUDA target's --dtype bf16 (bf16
// operands and product, f32 accumulation, C stays f32). Operands are
// rounded to bf16 (round to nearest even, denormals flushed to zero: what
// VDPBF16PS reads) while packing; a packed element is a pair of bf16 along
// K, (k even in the low half, k odd in the high one), K padded to even with
// zeros. K is never split (the product is rounded once, at the end), so a
// B block is as wide as ~1 MiB of packed pairs allows.
//
// Micro-kernels: "amx_bf16" (AMX tiles, kernelBF16Amx) where the CPU and
// OS allow it, "avx512_bf16" (12 x 32, VDPBF16PS: per pair, the odd
// product then the even one, each an f32 FMA) where cpuid has AVX512_BF16,
// else the same two f32 FMAs per pair with AVX-512F ("avx512-emulated"),
// AVX2 ("avx2-emulated") or C ("generic-emulated"): bitwise the same
// results (VDPBF16PS also flushes denormal partial sums, the emulation does
// not: results differ only where a partial sum is below 2^-126), about the
// f32 kernel's speed. pipedream_cpu_gemm_bf16_kernel() says which one runs.

/// f32 -> bf16 bits, round to nearest even, denormals to (signed) zero,
/// NaN stays a quiet NaN.
inline uint32_t toBF16(float x) {
  uint32_t bits;
  memcpy(&bits, &x, sizeof(bits));
  if ((bits & 0x7f800000u) == 0)
    return (bits >> 16) & 0x8000u;
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return ((bits >> 16) | 0x40u) & 0xffffu;
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return bits >> 16;
}

/// f32 rounded to bf16 precision (the product's rounding; no flushing: a
/// denormal product stays, like cuBLAS's bf16 output).
inline float roundBF16(float x) {
  uint32_t bits;
  memcpy(&bits, &x, sizeof(bits));
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    bits = (bits | 0x00400000u) & 0xffff0000u;
  else
    bits = (bits + 0x7fffu + ((bits >> 16) & 1u)) & 0xffff0000u;
  float r;
  memcpy(&r, &bits, sizeof(r));
  return r;
}

inline float operandAt(const Operand &x, int64_t r, int64_t c) {
  return x.trans ? x.p[c * x.ld + r] : x.p[r * x.ld + c];
}

/// toBF16 without branches (vectorizable loops below).
inline uint32_t toBF16Bits(uint32_t bits) {
  uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  uint32_t quiet = ((bits >> 16) | 0x40u) & 0xffffu;
  uint32_t zero = (bits >> 16) & 0x8000u;
  uint32_t r = (bits & 0x7fffffffu) > 0x7f800000u ? quiet : rounded;
  return (bits & 0x7f800000u) == 0 ? zero : r;
}

/// out[t] = bf16(lo[t]) | bf16(hi[t]) << 16, t < n (`hi` NULL: zeros).
void pairRows(const float *lo, const float *hi, int64_t n, uint32_t *out) {
  const uint32_t *l = reinterpret_cast<const uint32_t *>(lo);
  const uint32_t *h = reinterpret_cast<const uint32_t *>(hi);
  if (!h) {
    for (int64_t t = 0; t < n; ++t)
      out[t] = toBF16Bits(l[t]);
    return;
  }
  for (int64_t t = 0; t < n; ++t)
    out[t] = toBF16Bits(l[t]) | (toBF16Bits(h[t]) << 16);
}

/// out[q] = bf16(src[2q]) | bf16(src[2q + 1]) << 16 for the k elements of
/// a contiguous row (the last pair's high half zero when k is odd).
void pairContiguous(const float *src, int64_t k, uint32_t *out) {
  const uint32_t *u = reinterpret_cast<const uint32_t *>(src);
  int64_t full = k / 2;
  for (int64_t q = 0; q < full; ++q)
    out[q] = toBF16Bits(u[2 * q]) | (toBF16Bits(u[2 * q + 1]) << 16);
  if (k % 2)
    out[full] = toBF16Bits(u[k - 1]);
}

/// Rows of op(X) contiguous along k (A as stored, B transposed): each row's
/// pairs converted into `row` (vectorizable), then spread into the panel
/// with the panel's stride `width`.
void packRowsAlongK(const Operand &x, int64_t first, int64_t count, int64_t k,
                    int width, uint32_t *panel) {
  constexpr int64_t kChunk = 512;
  uint32_t row[kChunk];
  int64_t kp = (k + 1) / 2;
  for (int64_t r = 0; r < count; ++r) {
    const float *src = x.p + (first + r) * x.ld;
    for (int64_t q0 = 0; q0 < kp; q0 += kChunk) {
      int64_t n = kp - q0 < kChunk ? kp - q0 : kChunk;
      int64_t elements = 2 * (q0 + n) <= k ? 2 * n : k - 2 * q0;
      pairContiguous(src + 2 * q0, elements, row);
      uint32_t *dst = panel + q0 * width + r;
      for (int64_t q = 0; q < n; ++q)
        dst[q * width] = row[q];
    }
  }
}

/// Rows of op(X) strided along k (A transposed, B as stored): the stored
/// rows 2q and 2q + 1 are contiguous along the panel's width.
void packRowsAcrossK(const Operand &x, int64_t first, int64_t count,
                     int64_t k, int width, uint32_t *panel) {
  int64_t kp = (k + 1) / 2;
  for (int64_t q = 0; q < kp; ++q) {
    const float *lo = x.p + 2 * q * x.ld + first;
    const float *hi = 2 * q + 1 < k ? lo + x.ld : nullptr;
    pairRows(lo, hi, count, panel + q * width);
  }
}

/// Rows [first, first + count) of op(A) (`isB` false) or columns of op(B)
/// (`isB` true), 0 : k, into micro-panels of kpPad pairs x `width`: pairs
/// past (k + 1) / 2 and rows or columns past `count` zero. A stored row
/// runs along K for a plain A and a transposed B.
void packPairPanels(const Operand &x, bool isB, int64_t first, int64_t count,
                    int64_t k, int width, uint32_t *out, int64_t kpPad) {
  int64_t kp = (k + 1) / 2;
  for (int64_t r = 0; r < count; r += width) {
    int64_t n = count - r < width ? count - r : width;
    uint32_t *panel = out + r * kpPad;
    if (kpPad > kp)
      memset(panel + kp * width, 0, sizeof(uint32_t) * (kpPad - kp) * width);
    if (n < width)
      memset(panel, 0, sizeof(uint32_t) * kp * width);
    if (x.trans == isB)
      packRowsAlongK(x, first + r, n, k, width, panel);
    else
      packRowsAcrossK(x, first + r, n, k, width, panel);
  }
}

/// op(A)[i0 : i0+mb, 0 : k] into micro-panels of kp pairs x MR.
void packABF16(const Operand &a, int64_t i0, int64_t mb, int64_t k, int mr,
               uint32_t *out) {
  packPairPanels(a, /*isB=*/false, i0, mb, k, mr, out, (k + 1) / 2);
}

/// op(B)[0 : k, j0 : j0+nb] into micro-panels of kpPad pairs x NR.
void packBBF16(const Operand &b, int64_t k, int64_t j0, int64_t nb, int nr,
               uint32_t *out, int64_t kpPad) {
  packPairPanels(b, /*isB=*/true, j0, nb, k, nr, out, kpPad);
}

/// AMX's A layout: op(A)[i0 : i0+mb, 0 : k] into panels of MR rows, each
/// row kpPad pairs (k contiguous, zero past k), rows past mb zero.
void packABF16Rows(const Operand &a, int64_t i0, int64_t mb, int64_t k,
                   int mr, uint32_t *out, int64_t kpPad) {
  int64_t kp = (k + 1) / 2;
  for (int64_t ir = 0; ir < mb; ir += mr) {
    int64_t rows = mb - ir < mr ? mb - ir : mr;
    uint32_t *panel = out + ir * kpPad;
    for (int64_t r = 0; r < mr; ++r) {
      uint32_t *dst = panel + r * kpPad;
      if (r >= rows) {
        memset(dst, 0, sizeof(uint32_t) * kpPad);
        continue;
      }
      int64_t i = i0 + ir + r;
      if (!a.trans) {
        pairContiguous(a.p + i * a.ld, k, dst);
      } else {
        for (int64_t q = 0; q < kp; ++q) {
          uint32_t lo = toBF16(a.p[2 * q * a.ld + i]);
          uint32_t hi = 2 * q + 1 < k ? toBF16(a.p[(2 * q + 1) * a.ld + i]) : 0;
          dst[q] = lo | (hi << 16);
        }
      }
      if (kpPad > kp)
        memset(dst + kp, 0, sizeof(uint32_t) * (kpPad - kp));
    }
  }
}

inline float bf16High(uint32_t pair) {
  uint32_t bits = pair & 0xffff0000u;
  float f;
  memcpy(&f, &bits, sizeof(f));
  return f;
}

inline float bf16Low(uint32_t pair) {
  uint32_t bits = pair << 16;
  float f;
  memcpy(&f, &bits, sizeof(f));
  return f;
}

/// The tile's C update: C = bf16(alpha * acc) (+ beta * C).
inline float combineBF16(float acc, float c, float alpha, float beta) {
  float r = roundBF16(alpha * acc);
  return beta == 0.0f ? r : r + beta * c;
}

template <int MR, int NR>
void kernelBF16Generic(int64_t kp, const uint32_t *ap, const uint32_t *bp,
                       float *c, int64_t ldc, float alpha, float beta) {
  float acc[MR][NR] = {};
  for (int64_t q = 0; q < kp; ++q, ap += MR, bp += NR)
    for (int i = 0; i < MR; ++i)
      for (int j = 0; j < NR; ++j) {
        // NOTE: bf16 x bf16 is exact in f32, so the product then the sum
        // is the FMA's single rounding (no libm fmaf: program.so needs no
        // libm; contraction is off in this file).
        acc[i][j] = bf16High(ap[i]) * bf16High(bp[j]) + acc[i][j];
        acc[i][j] = bf16Low(ap[i]) * bf16Low(bp[j]) + acc[i][j];
      }
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j)
      c[i * ldc + j] = combineBF16(acc[i][j], c[i * ldc + j], alpha, beta);
}

#if PD_X86
/// The vector epilogue: C row segment = bf16(alpha * acc) (+ beta * C).
template <int W, typename Vec>
__attribute__((always_inline)) inline void
storeBF16(float *dst, const Vec &acc, float alpha, float beta) {
  typedef uint32_t UVec __attribute__((ext_vector_type(W)));
  typedef int32_t IVec __attribute__((ext_vector_type(W)));
  Vec r = Vec(alpha) * acc;
  UVec bits = __builtin_bit_cast(UVec, r);
  UVec rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) & 0xffff0000u;
  UVec quiet = (bits | 0x00400000u) & 0xffff0000u;
  UVec nan = __builtin_bit_cast(UVec, IVec(r != r));
  r = __builtin_bit_cast(Vec, (rounded & ~nan) | (quiet & nan));
  if (beta != 0.0f) {
    Vec old;
    __builtin_memcpy(&old, dst, sizeof(old));
    r = r + Vec(beta) * old;
  }
  __builtin_memcpy(dst, &r, sizeof(r));
}

/// The emulated vector micro-kernel: per pair two f32 FMAs (odd, even).
template <int W, int MR>
__attribute__((always_inline)) inline void
kernelBF16Vector(int64_t kp, const uint32_t *ap, const uint32_t *bp, float *c,
                 int64_t ldc, float alpha, float beta) {
  typedef float Vec __attribute__((ext_vector_type(W)));
  typedef uint32_t UVec __attribute__((ext_vector_type(W)));
  Vec acc[MR][2];
#pragma clang loop unroll(full)
  for (int i = 0; i < MR; ++i)
    acc[i][0] = acc[i][1] = Vec(0.0f);
  for (int64_t q = 0; q < kp; ++q, ap += MR, bp += 2 * W) {
    UVec u0, u1;
    __builtin_memcpy(&u0, bp, sizeof(u0));
    __builtin_memcpy(&u1, bp + W, sizeof(u1));
    Vec hi0 = __builtin_bit_cast(Vec, u0 & 0xffff0000u);
    Vec lo0 = __builtin_bit_cast(Vec, u0 << 16);
    Vec hi1 = __builtin_bit_cast(Vec, u1 & 0xffff0000u);
    Vec lo1 = __builtin_bit_cast(Vec, u1 << 16);
#pragma clang loop unroll(full)
    for (int i = 0; i < MR; ++i) {
      Vec ah = Vec(bf16High(ap[i])), al = Vec(bf16Low(ap[i]));
      acc[i][0] = __builtin_elementwise_fma(ah, hi0, acc[i][0]);
      acc[i][1] = __builtin_elementwise_fma(ah, hi1, acc[i][1]);
      acc[i][0] = __builtin_elementwise_fma(al, lo0, acc[i][0]);
      acc[i][1] = __builtin_elementwise_fma(al, lo1, acc[i][1]);
    }
  }
#pragma clang loop unroll(full)
  for (int i = 0; i < MR; ++i) {
    storeBF16<W>(c + i * ldc, acc[i][0], alpha, beta);
    storeBF16<W>(c + i * ldc + W, acc[i][1], alpha, beta);
  }
}

__attribute__((target("avx2,fma"))) void
kernelBF16Avx2(int64_t kp, const uint32_t *ap, const uint32_t *bp, float *c,
               int64_t ldc, float alpha, float beta) {
  kernelBF16Vector<8, 6>(kp, ap, bp, c, ldc, alpha, beta);
}

__attribute__((target("avx512f,fma"))) void
kernelBF16Avx512(int64_t kp, const uint32_t *ap, const uint32_t *bp, float *c,
                 int64_t ldc, float alpha, float beta) {
  kernelBF16Vector<16, 12>(kp, ap, bp, c, ldc, alpha, beta);
}

/// VDPBF16PS: 12 x 32, 24 zmm accumulators.
__attribute__((target("avx512f,avx512bf16"))) void
kernelBF16Native(int64_t kp, const uint32_t *ap, const uint32_t *bp, float *c,
                 int64_t ldc, float alpha, float beta) {
  constexpr int MR = 12;
  __m512 acc[MR][2];
#pragma clang loop unroll(full)
  for (int i = 0; i < MR; ++i)
    acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  for (int64_t q = 0; q < kp; ++q, ap += MR, bp += 32) {
    __m512bh b0 = (__m512bh)_mm512_load_si512(bp);
    __m512bh b1 = (__m512bh)_mm512_load_si512(bp + 16);
#pragma clang loop unroll(full)
    for (int i = 0; i < MR; ++i) {
      __m512bh a = (__m512bh)_mm512_set1_epi32(int(ap[i]));
      acc[i][0] = _mm512_dpbf16_ps(acc[i][0], a, b0);
      acc[i][1] = _mm512_dpbf16_ps(acc[i][1], a, b1);
    }
  }
  typedef float Vec __attribute__((ext_vector_type(16)));
#pragma clang loop unroll(full)
  for (int i = 0; i < MR; ++i) {
    Vec lo = __builtin_bit_cast(Vec, acc[i][0]);
    Vec hi = __builtin_bit_cast(Vec, acc[i][1]);
    storeBF16<16>(c + i * ldc, lo, alpha, beta);
    storeBF16<16>(c + i * ldc + 16, hi, alpha, beta);
  }
}

/// cpuid leaf 7 subleaf 1, EAX bit 5: AVX512_BF16.
bool hasAvx512BF16() {
  unsigned eax, ebx, ecx, edx;
  if (!__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx))
    return false;
  return eax & (1u << 5);
}
/// AMX (TDPBF16PS): a 32 x 32 C block in 4 tiles of 16 x 16 f32, A in
/// 2 tiles of 16 rows x 16 pairs (packABF16Rows, row stride kp), B in 2
/// tiles of 16 pairs x 16 columns (packBBF16 with NR = 32: row stride 128
/// bytes); kp a multiple of 16. The tile configuration is the calling
/// thread's (amxConfigure).
__attribute__((target("amx-tile,amx-bf16,avx512f"))) void
kernelBF16Amx(int64_t kp, const uint32_t *ap, const uint32_t *bp, float *c,
              int64_t ldc, float alpha, float beta) {
  alignas(64) float acc[32 * 32];
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  const int64_t aStride = kp * 4;
  for (int64_t q = 0; q < kp; q += 16) {
    _tile_loadd(4, ap + q, aStride);
    _tile_loadd(5, ap + 16 * kp + q, aStride);
    _tile_loadd(6, bp + q * 32, 128);
    _tile_loadd(7, bp + q * 32 + 16, 128);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, acc, 128);
  _tile_stored(1, acc + 16, 128);
  _tile_stored(2, acc + 16 * 32, 128);
  _tile_stored(3, acc + 16 * 32 + 16, 128);
  typedef float Vec __attribute__((ext_vector_type(16)));
  for (int i = 0; i < 32; ++i)
    for (int h = 0; h < 2; ++h) {
      Vec v;
      __builtin_memcpy(&v, acc + i * 32 + 16 * h, sizeof(v));
      storeBF16<16>(c + i * ldc + 16 * h, v, alpha, beta);
    }
}

/// The 64-byte tile configuration: palette 1, tiles 0-7 of 16 rows x 64
/// bytes.
struct alignas(64) TileConfig {
  uint8_t palette, startRow, reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};

__thread bool tAmxConfigured;

__attribute__((target("amx-tile"))) void amxConfigure() {
  if (tAmxConfigured)
    return;
  TileConfig config = {};
  config.palette = 1;
  for (int t = 0; t < 8; ++t) {
    config.colsb[t] = 64;
    config.rows[t] = 16;
  }
  _tile_loadconfig(&config);
  tAmxConfigured = true;
}

/// cpuid leaf 7: EDX bits 24 (AMX-TILE) and 22 (AMX-BF16), XCR0's tile
/// state (bits 17-18), and Linux's permission for the tile data
/// (arch_prctl ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA).
bool hasAmxBF16() {
  unsigned eax, ebx, ecx, edx;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx))
    return false;
  if (!(edx & (1u << 24)) || !(edx & (1u << 22)))
    return false;
  if ((readXcr0() & 0x60000) != 0x60000)
    return false;
#if defined(__linux__)
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}
#else
bool hasAvx512BF16() { return false; }
bool hasAmxBF16() { return false; }
#endif // PD_X86

using BF16Kernel = void (*)(int64_t, const uint32_t *, const uint32_t *,
                            float *, int64_t, float, float);

struct BF16KernelInfo {
  const char *name;
  BF16Kernel kernel;
  /// MR, NR; MC and the bytes of a packed B block.
  int mr, nr;
  int64_t mc, bBlockBytes;
  /// AMX: A packed by rows (packABF16Rows), pairs padded to 16.
  bool amx;
};

const BF16KernelInfo kBF16Kernels[] = {
    {"generic-emulated", kernelBF16Generic<4, 8>, 4, 8, 128, 1 << 20, false},
#if PD_X86
    {"avx2-emulated", kernelBF16Avx2, 6, 16, 96, 2 << 20, false},
    {"avx512-emulated", kernelBF16Avx512, 12, 32, 96, 2 << 20, false},
    {"avx512_bf16", kernelBF16Native, 12, 32, 96, 2 << 20, false},
    {"amx_bf16", kernelBF16Amx, 32, 32, 128, 2 << 20, true},
#endif
};

int gBF16Isa = -1;

/// The f32 kernel's ISA (and its PIPEDREAM_GEMM_KERNEL cap), plus
/// AVX512_BF16 on top of AVX-512 unless PIPEDREAM_GEMM_KERNEL names a
/// lower one.
const BF16KernelInfo &bf16KernelInfo() {
  // NOTE: the best the CPU has: amx_bf16, else avx512_bf16, else the
  // emulation on the f32 kernel's ISA.
  int isa = __atomic_load_n(&gBF16Isa, __ATOMIC_ACQUIRE);
  if (isa < 0) {
    isa = int(&kernelInfo() - kKernels);
    const char *want = getenv("PIPEDREAM_GEMM_KERNEL");
    bool capped = want && (!strcmp(want, "generic") || !strcmp(want, "avx2") ||
                           !strcmp(want, "avx512"));
    if (isa == 2 && !capped && hasAvx512BF16())
      isa = 3;
    // AMX unless PIPEDREAM_GEMM_KERNEL names a lower kernel (avx512_bf16:
    // VDPBF16PS).
    if (isa == 3 && !(want && !strcmp(want, "avx512_bf16")) && hasAmxBF16())
      isa = 4;
    __atomic_store_n(&gBF16Isa, isa, __ATOMIC_RELEASE);
  }
  return kBF16Kernels[isa];
}

using BF16Problem = ProblemOf<uint32_t>;

/// Pairs of K a packed panel holds (AMX: a multiple of 16).
inline int64_t pairsPad(int64_t k, const BF16KernelInfo &info) {
  int64_t kp = (k + 1) / 2;
  return info.amx ? (kp + 15) / 16 * 16 : kp;
}

/// A constant op(B) = `b` (K x N) packed whole for the bf16 kernel `info`
/// (constantPacked; results bitwise those of per-block packing).
const uint32_t *constantPackedBBF16(const Operand &b, int64_t k, int64_t n,
                                    const BF16KernelInfo &info,
                                    bool prepack = false) {
  int64_t kp = pairsPad(k, info);
  int64_t nPad = (n + info.nr - 1) / info.nr * info.nr;
  size_t bytes = size_t(nPad) * size_t(kp) * sizeof(uint32_t);
  int layout = 16 + int(&info - kBF16Kernels);
  return static_cast<const uint32_t *>(constantPacked(
      b, k, n, layout, bytes,
      [&](float *packed) {
        packBBF16(b, k, 0, n, info.nr, reinterpret_cast<uint32_t *>(packed),
                  kp);
      },
      prepack));
}

/// C[i0 : i0+mb, j0 : j0+nb]; false, before touching C, when the packing
/// buffers cannot be allocated.
bool gemmBlockBF16(const BF16Problem &p, const BF16KernelInfo &info,
                   int64_t i0, int64_t mb, int64_t j0, int64_t nb) {
  const int mr = info.mr, nr = info.nr;
  int64_t kp = pairsPad(p.k, info);
#if PD_X86
  if (info.amx)
    amxConfigure();
#endif
  // B block columns: a multiple of NR within the byte budget.
  int64_t nc = info.bBlockBytes / (4 * kp) / nr * nr;
  if (nc < nr)
    nc = nr;
  int64_t ncMax = nb < nc ? nb : nc;
  int64_t mcMax = mb < info.mc ? mb : info.mc;
  int64_t mcRound = (mcMax + mr - 1) / mr * mr;
  int64_t ncRound = (ncMax + nr - 1) / nr * nr;
  Buffers *buffers = threadBuffers();
  if (!buffers)
    return false;
  auto *ap = reinterpret_cast<uint32_t *>(
      reserve(buffers->a, buffers->aCap, size_t(mcRound * kp)));
  auto *bp = reinterpret_cast<uint32_t *>(
      reserve(buffers->b, buffers->bCap, size_t(ncRound * kp)));
  if (!ap || !bp)
    return false;
  alignas(64) float edge[32 * 32];
  for (int64_t jc = 0; jc < nb; jc += nc) {
    int64_t ncb = nb - jc < nc ? nb - jc : nc;
    const uint32_t *bBlock = bp;
    if (p.packedB)
      bBlock = p.packedB + (j0 + jc) * kp;
    else
      packBBF16(p.b, p.k, j0 + jc, ncb, nr, bp, kp);
    for (int64_t ic = 0; ic < mb; ic += info.mc) {
      int64_t mc = mb - ic < info.mc ? mb - ic : info.mc;
      if (info.amx)
        packABF16Rows(p.a, i0 + ic, mc, p.k, mr, ap, kp);
      else
        packABF16(p.a, i0 + ic, mc, p.k, mr, ap);
      forEachTile(
          mc, ncb, mr, nr, kp, ap, bBlock, p.c + (i0 + ic) * p.ldc + j0 + jc,
          p.ldc,
          [&](const uint32_t *aPanel, const uint32_t *bPanel, float *cTile,
              int64_t, int64_t) {
            info.kernel(kp, aPanel, bPanel, cTile, p.ldc, p.alpha, p.beta);
            if (!p.epilogue.empty())
              applyEpilogueAt(p.epilogue, p.c, p.ldc, cTile, mr, nr);
          },
          [&](const uint32_t *aPanel, const uint32_t *bPanel, float *cTile,
              int64_t rows, int64_t cols, int64_t, int64_t) {
            // The rounded product into `edge`, then the same update.
            info.kernel(kp, aPanel, bPanel, edge, nr, p.alpha, 0.0f);
            for (int64_t i = 0; i < rows; ++i)
              for (int64_t j = 0; j < cols; ++j) {
                float &x = cTile[i * p.ldc + j];
                x = p.beta == 0.0f ? edge[i * nr + j]
                                   : edge[i * nr + j] + p.beta * x;
              }
            if (!p.epilogue.empty())
              applyEpilogueAt(p.epilogue, p.c, p.ldc, cTile, rows, cols);
          });
    }
  }
  return true;
}

/// Plain loops with the same arithmetic (out of memory only).
void gemmNaiveBF16(const BF16Problem &p, int64_t i0, int64_t i1, int64_t j0,
                   int64_t j1) {
  auto bf = [](float x) {
    uint32_t bits = toBF16(x) << 16;
    float f;
    memcpy(&f, &bits, sizeof(f));
    return f;
  };
  for (int64_t i = i0; i < i1; ++i)
    for (int64_t j = j0; j < j1; ++j) {
      float acc = 0;
      for (int64_t l = 0; l < p.k; l += 2) {
        if (l + 1 < p.k)
          acc = bf(operandAt(p.a, i, l + 1)) * bf(operandAt(p.b, l + 1, j)) +
                acc;
        acc = bf(operandAt(p.a, i, l)) * bf(operandAt(p.b, l, j)) + acc;
      }
      float &c = p.c[i * p.ldc + j];
      c = combineBF16(acc, c, p.alpha, p.beta);
    }
  if (!p.epilogue.empty())
    applyEpilogue(p.epilogue, p.c + i0 * p.ldc + j0, p.ldc, i0, j0, i1 - i0,
                  j1 - j0);
}

struct BF16Split {
  const BF16Problem *problem;
  const BF16KernelInfo *info;
  int tm, tn;
  int64_t rowTiles, colTiles;
};

void runPartBF16(void *p, int part) {
  auto *s = static_cast<BF16Split *>(p);
  int64_t i0, i1, j0, j1;
  if (!partBounds(part, s->tm, s->tn, s->rowTiles, s->colTiles, s->info->mr,
                  s->info->nr, s->problem->m, s->problem->n, i0, i1, j0, j1))
    return;
  if (!gemmBlockBF16(*s->problem, *s->info, i0, i1 - i0, j0, j1 - j0))
    gemmNaiveBF16(*s->problem, i0, i1, j0, j1);
}

} // namespace

extern "C" {

/// C = beta * C (0 where beta is 0: C may hold NaN): a GEMM with k = 0 or
/// alpha = 0.
static void scaleC(int32_t m, int32_t n, float beta, float *c, int32_t ldc) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float &x = c[i * int64_t(ldc) + j];
      x = beta == 0.0f ? 0.0f : beta * x;
    }
}

/// How many threads an m x n x k GEMM over rowTiles x colTiles register
/// tiles runs on, and their tm x tn grid (tm * tn == the result).
static int threadGrid(int64_t m, int64_t n, int64_t k, int64_t rowTiles,
                      int64_t colTiles, const Blocking &bl, int &tm,
                      int &tn) {
  // About 4 MFLOP per thread pays for waking it.
  double flops = 2.0 * m * n * k;
  int threads = threadCount();
  if (flops / 4e6 < threads)
    threads = flops < 4e6 ? 1 : static_cast<int>(flops / 4e6);
  if (threads > rowTiles * colTiles)
    threads = static_cast<int>(rowTiles * colTiles);
  if (threads <= 1)
    return 1;
  // A prime count that does not fit the grid: one fewer thread.
  chooseGrid(threads, rowTiles, colTiles, bl, tm, tn);
  while (tm * tn != threads && threads > 1)
    chooseGrid(--threads, rowTiles, colTiles, bl, tm, tn);
  return threads;
}

} // extern "C"

/// What the f32 and bf16 entry points share: a column-major product as
/// the row-major transposed one (a bias per column of C then indexes its
/// rows), nothing for an empty C, C = beta * C (and the epilogue) for k = 0
/// or alpha = 0; else `run(m, n, opA, opB, epilogue)`, the row-major
/// product.
template <typename Run>
__attribute__((always_inline)) inline void
gemmEntry(int32_t order, int32_t transA, int32_t transB, int32_t m, int32_t n,
          int32_t k, float alpha, const float *a, int32_t lda, const float *b,
          int32_t ldb, float beta, float *c, int32_t ldc, Epilogue epilogue,
          Run run) {
  if (order == kColMajor) {
    epilogue.biasPerRow = !epilogue.biasPerRow;
    // Column-major C = op(A) op(B) is row-major C^T = op(B)^T op(A)^T.
    auto swap = [](auto &x, auto &y) {
      auto t = x;
      x = y;
      y = t;
    };
    swap(transA, transB);
    swap(m, n);
    swap(a, b);
    swap(lda, ldb);
  }
  if (m <= 0 || n <= 0)
    return;
  if (k <= 0 || alpha == 0.0f) {
    scaleC(m, n, beta, c, ldc);
    if (!epilogue.empty())
      applyEpilogue(epilogue, c, ldc, 0, 0, m, n);
    return;
  }
  run(m, n, Operand{a, lda, transA == kTrans},
      Operand{b, ldb, transB == kTrans}, epilogue);
}

/// Runs `split` (a Split or BF16Split whose problem is m x n x k over tiles
/// of mr x nr) on the threads threadGrid gives it, each part by `runPart`;
/// on this thread alone when the pool cannot start.
template <typename SplitT>
void runSplit(SplitT &split, int64_t m, int64_t n, int64_t k, int mr, int nr,
              void (*runPartFn)(void *, int)) {
  split.rowTiles = (m + mr - 1) / mr;
  split.colTiles = (n + nr - 1) / nr;
  split.tm = split.tn = 1;
  int threads = threadGrid(m, n, k, split.rowTiles, split.colTiles,
                           Blocking{mr, nr, 0, 0, 0}, split.tm, split.tn);
  if (threads > 1) {
    if (runParallel(threads, runPartFn, &split) > 1)
      return;
    split.tm = split.tn = 1;
  }
  runPartFn(&split, 0);
}

extern "C" {

PD_HIDDEN void pd_cpu_sgemm_epilogue(int32_t order, int32_t transA,
                                     int32_t transB, int32_t m, int32_t n,
                                     int32_t k, float alpha, const float *a,
                                     int32_t lda, const float *b, int32_t ldb,
                                     float beta, float *c, int32_t ldc,
                                     const float *bias, const float *addend,
                                     int32_t ldAddend, int32_t activation) {
  gemmEntry(order, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc,
            Epilogue{bias, false, addend, ldAddend, activation},
            [&](int32_t m, int32_t n, Operand opA, Operand opB,
                Epilogue epilogue) {
              if (dotProductShape(m, n, k, opA, opB) &&
                  dotProducts(m, n, k, alpha, opA, opB, beta, c, ldc, epilogue))
                return;
              Problem p{m, n, k, alpha, beta, opA, opB, c, ldc, epilogue};
              const KernelInfo &info = kernelInfo();
              p.packedB = constantPackedB(p.b, p.k, p.n, p.m, info);
              Split split{&p, &info, 1, 1, 0, 0};
              runSplit(split, p.m, p.n, p.k, info.blocking.mr, info.blocking.nr,
                       runPart);
            });
}

PD_HIDDEN void pd_cpu_sgemm(int32_t order, int32_t transA, int32_t transB,
                            int32_t m, int32_t n, int32_t k, float alpha,
                            const float *a, int32_t lda, const float *b,
                            int32_t ldb, float beta, float *c, int32_t ldc) {
  pd_cpu_sgemm_epilogue(order, transA, transB, m, n, k, alpha, a, lda, b, ldb,
                        beta, c, ldc, nullptr, nullptr, 0, PD_CPU_ACT_NONE);
}

PD_HIDDEN void pd_cpu_gemm_bf16_epilogue(
    int32_t order, int32_t transA, int32_t transB, int32_t m, int32_t n,
    int32_t k, float alpha, const float *a, int32_t lda, const float *b,
    int32_t ldb, float beta, float *c, int32_t ldc, const float *bias,
    const float *addend, int32_t ldAddend, int32_t activation) {
  gemmEntry(
      order, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc,
      Epilogue{bias, false, addend, ldAddend, activation},
      [&](int32_t m, int32_t n, Operand opA, Operand opB, Epilogue epilogue) {
        BF16Problem p{m, n, k, alpha, beta, opA, opB, c, ldc, epilogue};
        const BF16KernelInfo &info = bf16KernelInfo();
        p.packedB = constantPackedBBF16(p.b, p.k, p.n, info);
        BF16Split split{&p, &info, 1, 1, 0, 0};
        runSplit(split, p.m, p.n, p.k, info.mr, info.nr, runPartBF16);
      });
}

PD_HIDDEN void pd_cpu_gemm_bf16(int32_t order, int32_t transA, int32_t transB,
                                int32_t m, int32_t n, int32_t k, float alpha,
                                const float *a, int32_t lda, const float *b,
                                int32_t ldb, float beta, float *c,
                                int32_t ldc) {
  pd_cpu_gemm_bf16_epilogue(order, transA, transB, m, n, k, alpha, a, lda, b,
                            ldb, beta, c, ldc, nullptr, nullptr, 0,
                            PD_CPU_ACT_NONE);
}

PD_EXPORT const char *pipedream_cpu_gemm_bf16_kernel(void) {
  return bf16KernelInfo().name;
}

PD_EXPORT void pipedream_cpu_set_num_threads(int32_t n) {
  __atomic_store_n(&gThreads,
                   n <= 0 ? defaultThreads()
                          : (n > kMaxThreads ? kMaxThreads : int(n)),
                   __ATOMIC_RELEASE);
}

PD_EXPORT int32_t pipedream_cpu_num_threads(void) { return threadCount(); }

PD_EXPORT const char *pipedream_cpu_gemm_kernel(void) { return kernelInfo().name; }

PD_EXPORT void pipedream_cpu_gemm_constants(const void *const *ptrs,
                                            const int64_t *bytes,
                                            int32_t count) {
  Constants *c = tConstants;
  if (!c) {
    if (count <= 0)
      return;
    pthread_once(&gConstantsKeyOnce, makeConstantsKey);
    c = static_cast<Constants *>(calloc(1, sizeof(Constants)));
    if (!c)
      return;
    tConstants = c;
    pthread_setspecific(gConstantsKey, c);
  }
  dropPacks(*c);
  c->ranges = 0;
  c->numSeen = 0;
  c->packed = c->reused = 0;
  if (count <= 0 || packBudget() == 0)
    return;
  // The copies packed under the previous declaration are the ones to
  // prepack under this one (a declaration without GEMMs in between keeps
  // the list before it).
  if (c->numMade > 0) {
    PackRecipe *list = c->pending;
    int32_t cap = c->pendingCap;
    c->pending = c->made;
    c->pendingCap = c->madeCap;
    c->numPending = c->numMade;
    c->made = list;
    c->madeCap = cap;
    c->numMade = 0;
  }
  c->nextPending = 0;
  if (count > c->rangeCap) {
    auto *b = static_cast<const unsigned char **>(
        realloc(c->begin, sizeof(void *) * size_t(count)));
    if (!b)
      return;
    c->begin = b;
    auto *e = static_cast<const unsigned char **>(
        realloc(c->end, sizeof(void *) * size_t(count)));
    if (!e)
      return;
    c->end = e;
    c->rangeCap = count;
  }
  for (int32_t i = 0; i < count; ++i) {
    if (!ptrs[i] || bytes[i] <= 0)
      continue;
    c->begin[c->ranges] = static_cast<const unsigned char *>(ptrs[i]);
    c->end[c->ranges] = c->begin[c->ranges] + bytes[i];
    ++c->ranges;
  }
}

PD_EXPORT int32_t pipedream_cpu_gemm_prepack(void) {
  Constants *c = tConstants;
  if (!c || c->ranges == 0)
    return 0;
  // A layout of another kernel than the one in effect (never within one
  // process today) is passed over.
  const int numF32 = int(sizeof(kKernels) / sizeof(kKernels[0]));
  const int numBF16 = int(sizeof(kBF16Kernels) / sizeof(kBF16Kernels[0]));
  while (c->nextPending < c->numPending) {
    const PackRecipe &r = c->pending[c->nextPending++];
    Operand b{r.p, r.ld, r.trans};
    int64_t before = c->packed;
    if (r.layout >= 0 && r.layout < numF32 &&
        &kKernels[r.layout] == &kernelInfo())
      constantPackedB(b, r.k, r.n, /*rows=*/0, kKernels[r.layout],
                      /*prepack=*/true);
    else if (r.layout >= 16 && r.layout - 16 < numBF16 &&
             &kBF16Kernels[r.layout - 16] == &bf16KernelInfo())
      constantPackedBBF16(b, r.k, r.n, kBF16Kernels[r.layout - 16],
                          /*prepack=*/true);
    if (c->packed > before)
      return 1;
  }
  return 0;
}

PD_EXPORT void pipedream_cpu_gemm_packed_stats(int64_t *packed,
                                               int64_t *reused) {
  Constants *c = tConstants;
  if (packed)
    *packed = c ? c->packed : 0;
  if (reused)
    *reused = c ? c->reused : 0;
}

} // extern "C"
