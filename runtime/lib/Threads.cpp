//===- Threads.cpp - thread count of the CPU kernels in program.so ---------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// pipedream/threads.h. program.so exports `pipedream_cpu_set_num_threads`,
// `pipedream_cpu_num_threads` and `pipedream_cpu_gemm_kernel`
// (lib/Target/CPU/Kernels/Kernels.h); the runtime finds them with dlsym in
// every library it loads (Runtime.cpp calls configureThreads after dlopen)
// and forwards the process-wide setting.
//
//===----------------------------------------------------------------------===//

#include "pipedream/threads.h"

#include "Bundle.h"

#include <atomic>
#include <dlfcn.h>
#include <mutex>
#include <vector>

namespace {

std::atomic<int> gThreads{0};
/// The libraries loaded so far that have the setter (program.so files stay
/// loaded while a bundle uses them; pd_bundle_close unregisters).
std::mutex gLibrariesMutex;
std::vector<void *> gLibraries;

using SetThreads = void (*)(int32_t);
using GetThreads = int32_t (*)();
using KernelName = const char *(*)();

template <typename T> T lookup(void *library, const char *name) {
  if (!library)
    return nullptr;
  dlerror();
  void *symbol = dlsym(library, name);
  dlerror();
  return reinterpret_cast<T>(symbol);
}

} // namespace

namespace pipedream {
namespace runtime {

void configureThreads(void *library) {
  auto set = lookup<SetThreads>(library, "pipedream_cpu_set_num_threads");
  if (!set)
    return;
  std::lock_guard<std::mutex> lock(gLibrariesMutex);
  set(gThreads.load());
  gLibraries.push_back(library);
}

void forgetThreads(void *library) {
  std::lock_guard<std::mutex> lock(gLibrariesMutex);
  for (auto it = gLibraries.begin(); it != gLibraries.end(); ++it)
    if (*it == library) {
      gLibraries.erase(it);
      return;
    }
}

} // namespace runtime
} // namespace pipedream

void pd_set_num_threads(int n) {
  std::lock_guard<std::mutex> lock(gLibrariesMutex);
  gThreads.store(n > 0 ? n : 0);
  for (void *library : gLibraries)
    if (auto set = lookup<SetThreads>(library, "pipedream_cpu_set_num_threads"))
      set(n > 0 ? n : 0);
}

int pd_get_num_threads(void) { return gThreads.load(); }

int pd_bundle_num_threads(const pd_bundle *bundle) {
  if (!bundle)
    return 0;
  auto get = lookup<GetThreads>(bundle->library, "pipedream_cpu_num_threads");
  return get ? get() : 0;
}

const char *pd_bundle_gemm_kernel(const pd_bundle *bundle) {
  if (!bundle)
    return "";
  auto get = lookup<KernelName>(bundle->library, "pipedream_cpu_gemm_kernel");
  return get ? get() : "";
}
