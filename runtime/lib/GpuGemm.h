//===- GpuGemm.h - row-major GEMM contract of pd_gpu_gemm_* -----*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The argument checks of pd_gpu_gemm_f32/bf16 (docs/GPU.md, /tmp/team/GPU.md
// section 3) and their mapping of a ROW-MAJOR batched GEMM onto a
// column-major BLAS call (cuBLAS). No CUDA here: the unit tests run this on
// machines without a GPU and check the mapping against a CPU reference of
// the row-major contract.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_RUNTIME_LIB_GPUGEMM_H
#define PIPEDREAM_RUNTIME_LIB_GPUGEMM_H

#include <cstdint>
#include <string>

namespace pipedream {
namespace runtime {

/// The sizes, transpose flags, leading dimensions and batch strides (in
/// elements) of a batched GEMM C[b] = alpha * op(A[b]) @ op(B[b]) + beta *
/// C[b]. The row-major call and the column-major one computing it are the
/// same fields read in their own layout (toColumnMajor maps one onto the
/// other), so they share them.
struct GemmLayout {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  bool transA = false, transB = false;
  int64_t lda = 0, strideA = 0;
  int64_t ldb = 0, strideB = 0;
  int64_t ldc = 0, strideC = 0;
};

/// The arguments of pd_gpu_gemm_*: C[b] = alpha * op(A[b]) @ op(B[b]) +
/// beta * C[b] on row-major matrices (op = transpose when trans != 0);
/// ld* are row strides of the stored matrices in elements, stride* the
/// distance between batch items in elements (0 = broadcast, not for C).
struct RowMajorGemm : GemmLayout {
  bool nullA = false, nullB = false, nullC = false;
};

/// A matrix with at most one row never steps by its row stride, so any
/// value is valid there (memref layouts of size-1 dimensions can hold
/// anything); raises such a stride to what cuBLAS requires (max(1, cols)).
void normalizeLeadingDimensions(RowMajorGemm &g);

/// "" when `g` is valid, else a one-line reason starting with `function`,
/// e.g. "pd_gpu_gemm_f32: lda 3 < 4 (A is 2x4 row-major, transA 0)".
/// Also rejects sizes that do not fit cuBLAS's 32-bit int arguments.
std::string checkGemm(const RowMajorGemm &g, const char *function);

/// A column-major GEMM as cuBLAS takes it: C = alpha * op(A) op(B) + beta
/// * C with C m x n (leading dimension ldc), op(A) m x k, op(B) k x n.
/// `swapped` says A and B are the row-major call's B and A.
struct ColumnMajorGemm : GemmLayout {
  bool swapped = true;
};

/// The column-major call computing the row-major one: a row-major C (m x n,
/// ldc) is the column-major C^T (n x m, ldc), and C^T = op(B)^T op(A)^T, so
/// the call is (B, A) with m and n exchanged and the same trans flags.
ColumnMajorGemm toColumnMajor(const RowMajorGemm &g);

} // namespace runtime
} // namespace pipedream

#endif // PIPEDREAM_RUNTIME_LIB_GPUGEMM_H
