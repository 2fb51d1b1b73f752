//===- CUDACodegen.cpp - CUDA program.so ----------------------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The driver of the CUDA code generator: checks the architecture and the
// toolkit, runs the lowering (Pipeline.cpp), then hands the host module to
// the CPU target's translation, LLVM pipeline and in-process lld link, with
// the runtime's functions left undefined.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Target/GPU/CUDACodegen.h"
#include "pipedream/Support/Diagnostics.h"
#include "pipedream/Target/CPU/CPUCodegen.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

using namespace mlir;

namespace pipedream::cuda {

const std::vector<std::string> &runtimeSymbols() {
  // What MLIR 22's gpu-to-llvm lowering and the gpu.binary translation can
  // call (mlir/lib/ExecutionEngine/CudaRuntimeWrappers.cpp), and the GEMM
  // library (docs/GPU.md).
  static const std::vector<std::string> symbols = {
      "mgpuModuleLoad",        "mgpuModuleLoadJIT",
      "mgpuModuleUnload",      "mgpuModuleGetFunction",
      "mgpuLaunchKernel",      "mgpuLaunchClusterKernel",
      "mgpuStreamCreate",      "mgpuStreamDestroy",
      "mgpuStreamSynchronize", "mgpuStreamWaitEvent",
      "mgpuEventCreate",       "mgpuEventDestroy",
      "mgpuEventSynchronize",  "mgpuEventRecord",
      "mgpuMemAlloc",          "mgpuMemFree",
      "mgpuMemcpy",            "mgpuMemset16",
      "mgpuMemset32",          "mgpuSetDefaultDevice",
      "pd_gpu_gemm_f32",       "pd_gpu_gemm_bf16"};
  return symbols;
}

llvm::Error verifyToolkit(const CUDACodegenOptions &options) {
  std::string toolkit = resolveToolkitPath(options);
  for (const char *tool : {"bin/ptxas", "bin/fatbinary",
                           "nvvm/libdevice/libdevice.10.bc"}) {
    llvm::SmallString<256> path(toolkit);
    llvm::sys::path::append(path, tool);
    if (!llvm::sys::fs::exists(path))
      return llvm::createStringError("CUDA toolkit " + toolkit + " has no " +
                                     tool +
                                     " (set CUDA_HOME to a CUDA toolkit)");
  }
  return llvm::Error::success();
}

LogicalResult compileToSharedLibrary(ModuleOp module,
                                     const CUDACodegenOptions &options,
                                     StringRef outputPath) {
  if (llvm::Error error = llvm::joinErrors(verifyGPUArch(options.gpuArch),
                                           verifyToolkit(options)))
    return pipedream::emitError(module.getContext())
           << firstLine(llvm::toString(std::move(error)));
  if (failed(lowerToLLVMDialect(module, options)))
    return failure();
  // The host code only sets up launches: a generic x86-64 CPU keeps
  // program.so portable across hosts.
  cpu::CPUCodegenOptions host;
  host.optLevel = options.optLevel;
  host.cpu = "x86-64";
  host.symbolPrefix = options.symbolPrefix;
  host.linkKernels = false;
  return cpu::emitSharedLibrary(module, host, outputPath, /*withBLAS=*/false,
                                runtimeSymbols());
}

} // namespace pipedream::cuda
