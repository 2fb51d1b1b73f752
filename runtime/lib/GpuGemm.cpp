//===- GpuGemm.cpp - row-major GEMM contract of pd_gpu_gemm_* -------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "GpuGemm.h"

#include <climits>

namespace pipedream {
namespace runtime {

namespace {
std::string dims(int64_t rows, int64_t cols) {
  return std::to_string(rows) + "x" + std::to_string(cols);
}
} // namespace

void normalizeLeadingDimensions(RowMajorGemm &g) {
  auto raise = [](int64_t &ld, int64_t rows, int64_t cols) {
    int64_t need = cols > 1 ? cols : 1;
    if (rows <= 1 && ld < need)
      ld = need;
  };
  raise(g.lda, g.transA ? g.k : g.m, g.transA ? g.m : g.k);
  raise(g.ldb, g.transB ? g.n : g.k, g.transB ? g.k : g.n);
  raise(g.ldc, g.m, g.n);
}

std::string checkGemm(const RowMajorGemm &g, const char *function) {
  std::string f = function;
  if (g.batch < 0 || g.m < 0 || g.n < 0 || g.k < 0)
    return f + ": negative size (batch " + std::to_string(g.batch) + ", m " +
           std::to_string(g.m) + ", n " + std::to_string(g.n) + ", k " +
           std::to_string(g.k) + ")";
  // Stored shapes (row-major): A is m x k, or k x m when transposed.
  int64_t aRows = g.transA ? g.k : g.m, aCols = g.transA ? g.m : g.k;
  int64_t bRows = g.transB ? g.n : g.k, bCols = g.transB ? g.k : g.n;
  // `trans` < 0: C, which has no transpose flag.
  auto ldCheck = [&](const char *name, const char *matrix, int64_t ld,
                     int64_t rows, int64_t cols, int trans) -> std::string {
    // BLAS wants ld >= max(1, cols) even when no row is stepped over.
    int64_t need = cols > 1 ? cols : 1;
    if (ld >= need)
      return "";
    std::string text = f + ": " + name + " " + std::to_string(ld) + " < " +
                       std::to_string(need) + " (" + matrix + " is " +
                       dims(rows, cols) + " row-major";
    if (trans >= 0)
      text += std::string(", trans") + matrix + " " + std::to_string(trans);
    return text + ")";
  };
  std::string error;
  if (!(error = ldCheck("lda", "A", g.lda, aRows, aCols, g.transA)).empty() ||
      !(error = ldCheck("ldb", "B", g.ldb, bRows, bCols, g.transB)).empty() ||
      !(error = ldCheck("ldc", "C", g.ldc, g.m, g.n, -1)).empty())
    return error;
  if (g.strideA < 0 || g.strideB < 0 || g.strideC < 0)
    return f + ": negative batch stride (strideA " + std::to_string(g.strideA) +
           ", strideB " + std::to_string(g.strideB) + ", strideC " +
           std::to_string(g.strideC) + ")";
  if (g.batch > 1 && g.strideC == 0 && g.m > 0 && g.n > 0)
    return f + ": strideC is 0 with batch " + std::to_string(g.batch) +
           " (batch items would write the same C)";
  if (g.batch > 1 && g.m > 0 && g.n > 0 &&
      g.strideC < (g.m - 1) * g.ldc + g.n)
    return f + ": strideC " + std::to_string(g.strideC) +
           " makes batch items of C overlap (each is " + dims(g.m, g.n) +
           " with ldc " + std::to_string(g.ldc) + ")";
  for (int64_t v : {g.batch, g.m, g.n, g.k, g.lda, g.ldb, g.ldc})
    if (v > INT_MAX)
      return f + ": size " + std::to_string(v) +
             " does not fit cuBLAS's 32-bit arguments";
  bool empty = g.batch == 0 || g.m == 0 || g.n == 0;
  if (!empty && g.nullC)
    return f + ": C is NULL";
  if (!empty && g.k > 0 && (g.nullA || g.nullB))
    return f + std::string(": ") + (g.nullA ? "A" : "B") + " is NULL";
  return "";
}

ColumnMajorGemm toColumnMajor(const RowMajorGemm &g) {
  ColumnMajorGemm c;
  c.batch = g.batch;
  c.m = g.n;
  c.n = g.m;
  c.k = g.k;
  // The row-major stored B read column-major is B_stored^T: op(B)^T is it
  // untransposed when transB is 0 and transposed otherwise (likewise A).
  c.transA = g.transB;
  c.transB = g.transA;
  c.lda = g.ldb;
  c.strideA = g.strideB;
  c.ldb = g.lda;
  c.strideB = g.strideA;
  c.ldc = g.ldc;
  c.strideC = g.strideC;
  c.swapped = true;
  return c;
}

} // namespace runtime
} // namespace pipedream
