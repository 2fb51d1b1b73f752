//===- KernelObject.cpp - the kernel object linked into program.so --------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Writes the CPU kernel object (Kernels/Gemm.cpp, compiled at build time and
// embedded by Kernels/EmbedObject.cmake) next to a library being linked, for
// lld to link it in. Every CPU program.so carries it: `pd_cpu_sgemm` for the
// contractions cpu-lower-gemm-to-kernel emits, and the exported
// `pipedream_cpu_set_num_threads` / `pipedream_cpu_gemm_kernel` the runtime calls.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Target/CPU/CPUCodegen.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

namespace pipedream::cpu {

// KernelObjectData.cpp (generated).
extern const unsigned char kernelObjectBytes[];
extern const std::size_t kernelObjectSize;

llvm::Expected<std::string> writeKernelObject(llvm::StringRef outputPath) {
  llvm::SmallString<256> model(outputPath);
  model += ".kernels.%%%%%%.o";
  llvm::SmallString<256> unique;
  if (std::error_code ec = llvm::sys::fs::createUniqueFile(model, unique))
    return llvm::createStringError(
        outputPath + ": cannot create the kernel object: " + ec.message());
  std::error_code ec;
  llvm::raw_fd_ostream os(unique, ec);
  if (!ec) {
    os.write(reinterpret_cast<const char *>(kernelObjectBytes),
             kernelObjectSize);
    os.close();
    ec = os.error();
  }
  if (ec) {
    llvm::sys::fs::remove(unique);
    return llvm::createStringError(unique + ": " + ec.message());
  }
  return std::string(unique);
}

} // namespace pipedream::cpu
