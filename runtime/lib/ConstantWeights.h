//===- ConstantWeights.h - weights packed once per step ---------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// While a trainer's micro-batches or a pipeline rank's F and B calls of a
// step run, the weights they read do not change (the optimizer update
// comes after them): the runtime declares those buffers constant to
// program.so's GEMM (pipedream_cpu_gemm_constants, Kernels.h), which then
// packs a weight B operand once per step instead of once per call (issue
// 21). While the declaration holds, the thread's idle work (IdleWork.h: a
// pipeline rank waiting for a message) packs ahead the weights the
// previous step's calls packed (pipedream_cpu_gemm_prepack), so that a
// step's first F and B calls need not. Internal to the runtime library.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_RUNTIME_LIB_CONSTANTWEIGHTS_H
#define PIPEDREAM_RUNTIME_LIB_CONSTANTWEIGHTS_H

#include "Bundle.h"

#include <vector>

namespace pipedream {
namespace runtime {

/// Declares, on the calling thread, the host memory of the weight buffers
/// (role weight, not updated by the function itself) of `functions`
/// constant until release() or destruction, which must come before
/// anything writes them. Does nothing for cuda functions, or a program.so
/// without the hook.
class ConstantWeights {
public:
  ConstantWeights(pd_bundle &bundle, const std::vector<pd_function *> &functions);
  ~ConstantWeights() { release(); }
  ConstantWeights(const ConstantWeights &) = delete;
  ConstantWeights &operator=(const ConstantWeights &) = delete;
  /// Forgets the ranges (and the packed copies); idempotent.
  void release();

private:
  using Hook = void (*)(const void *const *, const int64_t *, int32_t);
  Hook hook = nullptr;
  bool active = false;
  /// Whether this declaration set the thread's idle work (IdleWork.h).
  bool idle = false;
};

} // namespace runtime
} // namespace pipedream

#endif // PIPEDREAM_RUNTIME_LIB_CONSTANTWEIGHTS_H
