//===- ConstantWeights.cpp - weights packed once by program.so's GEMM ----===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "ConstantWeights.h"

#include "IdleWork.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <string>

namespace pipedream {
namespace runtime {

ConstantWeights::ConstantWeights(pd_bundle &bundle,
                                 const std::vector<pd_function *> &functions) {
  // PIPEDREAM_GEMM_PACK_WEIGHTS=0: every GEMM packs its B (to measure).
  const char *enabled = std::getenv("PIPEDREAM_GEMM_PACK_WEIGHTS");
  if (!bundle.library || (enabled && std::string(enabled) == "0"))
    return;
  dlerror();
  hook = reinterpret_cast<Hook>(
      dlsym(bundle.library, "pipedream_cpu_gemm_constants"));
  dlerror();
  if (!hook)
    return;
  std::vector<const void *> pointers;
  std::vector<int64_t> bytes;
  for (pd_function *function : functions) {
    if (!function || function->cuda)
      continue;
    for (size_t k = 0; k < function->buffers.size(); ++k) {
      pd_buffer *buffer = function->buffers[k];
      if (function->spec.buffers[k].role != PD_ROLE_WEIGHT || !buffer)
        continue;
      bool updated = std::any_of(
          function->updates.begin(), function->updates.end(),
          [&](const auto &update) { return update.second == buffer; });
      if (updated)
        continue;
      const void *memory = ensureMemory(*buffer);
      if (std::find(pointers.begin(), pointers.end(), memory) !=
          pointers.end())
        continue;
      pointers.push_back(memory);
      bytes.push_back(static_cast<int64_t>(pd_buffer_num_bytes(buffer)));
    }
  }
  if (pointers.empty())
    return;
  hook(pointers.data(), bytes.data(), static_cast<int32_t>(pointers.size()));
  active = true;
  // PIPEDREAM_GEMM_PREPACK=0: the calls pack as they need (to measure).
  const char *ahead = std::getenv("PIPEDREAM_GEMM_PREPACK");
  auto prepack = reinterpret_cast<IdleWorkFn>(
      dlsym(bundle.library, "pipedream_cpu_gemm_prepack"));
  dlerror();
  if (prepack && !(ahead && std::string(ahead) == "0")) {
    setIdleWork(prepack);
    idle = true;
  }
}

void ConstantWeights::release() {
  if (idle)
    setIdleWork(nullptr);
  idle = false;
  if (!active)
    return;
  active = false;
  hook(nullptr, nullptr, 0);
}

} // namespace runtime
} // namespace pipedream
