//===- Link.cpp - objects to a shared library with in-process lld ---------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Links program.so with lld used as a library (no `ld` process). The library
// records the shared objects it needs (libc, libm, OpenBLAS when GEMMs were
// routed to it), holds the CPU kernel object (KernelObject.cpp), and is linked with `-z defs`, so a missing symbol is a
// compile error, not a dlopen failure in the runtime. compiler-rt's builtins
// archive is linked statically: LLVM lowers conversions the CPU has no
// instruction for (f64 -> f16, f32 -> bf16 without AVX512-BF16...) to
// soft-float helpers such as `__truncdfhf2`, which neither libc nor libm
// provide. Its members are hidden and only the used ones are pulled in, so
// program.so exports nothing new and depends on nothing new at run time.
//
// NOTE: lld keeps its state in one global CommonLinkerContext per process
// (lld/Common/CommonLinkerContext.h); `lld::lldMain` creates and destroys it
// around each link and is re-entrant sequentially but not concurrently. All
// links therefore go through one mutex. lldMain returns `canRunAgain = false`
// only after a crash inside lld; later links are then refused.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Target/CPU/CPUCodegen.h"

#include "lld/Common/Driver.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <mutex>

LLD_HAS_DRIVER(elf)

using namespace mlir;

namespace pipedream::cpu {

// Absolute paths of the shared objects bundles link against, found by CMake
// (lib/Target/CPU/CMakeLists.txt).
static constexpr const char *kLibcPath = PIPEDREAM_LIBC_PATH;
static constexpr const char *kLibmPath = PIPEDREAM_LIBM_PATH;
// The dynamic loader, for __tls_get_addr (the run-time status record).
static constexpr const char *kLdsoPath = PIPEDREAM_LDSO_PATH;
static constexpr const char *kOpenBLASPath = PIPEDREAM_OPENBLAS_PATH;
// compiler-rt's libclang_rt.builtins archive (static, hidden symbols).
static constexpr const char *kBuiltinsPath = PIPEDREAM_BUILTINS_PATH;

bool isBLASAvailable() {
  return kOpenBLASPath[0] != '\0' && llvm::sys::fs::exists(kOpenBLASPath);
}

llvm::Error linkSharedLibrary(ArrayRef<std::string> objectFiles,
                              StringRef outputPath, bool withBLAS,
                              ArrayRef<std::string> runtimeSymbols,
                              bool withKernels) {
  static std::mutex lldMutex;
  static bool lldUsable = true;

  // The kernels (pd_cpu_sgemm, pipedream_cpu_set_num_threads): in every CPU
  // library, called or not (30 KiB), so the runtime always finds the thread
  // setting.
  std::string kernelObject;
  if (withKernels) {
    llvm::Expected<std::string> written = writeKernelObject(outputPath);
    if (!written)
      return written.takeError();
    kernelObject = std::move(*written);
  }
  llvm::scope_exit removeKernelObject([&] {
    if (!kernelObject.empty())
      llvm::sys::fs::remove(kernelObject);
  });

  std::string output = outputPath.str();
  std::vector<const char *> args = {
      "ld.lld", "-shared", "-o", output.c_str(),
      // Every symbol resolved now, against the libraries below.
      "-z", "defs", "-z", "noexecstack", "-z", "relro", "-z", "now",
      "--hash-style=gnu", "--gc-sections", "-O1"};
  for (const std::string &object : objectFiles)
    args.push_back(object.c_str());
  if (withKernels)
    args.push_back(kernelObject.c_str());
  // Soft-float and other helpers LLVM's backend may call. An archive: only
  // members that resolve an undefined symbol are linked; --exclude-libs
  // keeps them out of the dynamic symbol table even if one were not hidden.
  if (kBuiltinsPath[0] == '\0' || !llvm::sys::fs::exists(kBuiltinsPath))
    return llvm::createStringError(
        std::string("compiler-rt builtins archive not found (") +
        (kBuiltinsPath[0] ? kBuiltinsPath : "not configured") +
        "): install libclang-rt-22-dev and reconfigure pipedream");
  args.push_back("--exclude-libs=ALL");
  args.push_back(kBuiltinsPath);
  // Only libraries whose symbols are used become DT_NEEDED.
  args.push_back("--as-needed");
  for (const char *library : {kLibmPath, kLibcPath, kLdsoPath}) {
    if (library[0] == '\0') {
      return llvm::createStringError(
          "pipedream was built without the path of libc/libm/ld.so; "
          "reconfigure it with CMake");
    }
    args.push_back(library);
  }
  if (withBLAS) {
    if (!isBLASAvailable())
      return llvm::createStringError(
          std::string("OpenBLAS not found (") +
          (kOpenBLASPath[0] ? kOpenBLASPath : "not configured") +
          "): install libopenblas-dev or compile without BLAS");
    args.push_back(kOpenBLASPath);
  }
  // Symbols the runtime provides at dlopen time: -z defs still applies,
  // but unresolved symbols become warnings, each checked below against
  // `runtimeSymbols` (lld has no per-symbol exemption).
  if (!runtimeSymbols.empty()) {
    args.push_back("--warn-unresolved-symbols");
    args.push_back("--error-limit=0");
  }

  std::lock_guard<std::mutex> lock(lldMutex);
  if (!lldUsable) {
    return llvm::createStringError(
        "the in-process linker crashed earlier in this process; "
        "restart the compiler");
  }
  std::string out, err;
  llvm::raw_string_ostream outStream(out), errStream(err);
  lld::Result result =
      lld::lldMain(args, outStream, errStream, {{lld::Gnu, &lld::elf::link}});
  lldUsable = result.canRunAgain;
  if (result.retCode == 0) {
    // "ld.lld: warning: undefined symbol: NAME" for every unresolved one.
    constexpr StringRef kUndefined = "undefined symbol: ";
    SmallVector<StringRef> lines;
    StringRef(err).split(lines, '\n');
    for (StringRef line : lines) {
      size_t at = line.find(kUndefined);
      if (at == StringRef::npos)
        continue;
      StringRef name = line.substr(at + kUndefined.size()).trim();
      if (llvm::is_contained(runtimeSymbols, name))
        continue;
      llvm::sys::fs::remove(outputPath);
      return llvm::createStringError(
          outputPath + ": link failed: undefined symbol: " + name);
    }
    return llvm::Error::success();
  }
  StringRef message = StringRef(err).trim();
  if (message.empty())
    message = StringRef(out).trim();
  return llvm::createStringError(outputPath + ": link failed: " +
                                 (message.empty()
                                      ? StringRef("lld exited with an error")
                                      : message.split('\n').first));
}

} // namespace pipedream::cpu
