//===- CUDACodegen.h - linalg module to a CUDA program.so -------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The CUDA code generator (`pipedream-compile --target cuda`): takes the
// same module as the CPU code generator (linalg, tensor, arith, math on
// static tensors; public func.funcs are the entry points) and produces a
// host (x86-64) shared library with the bundle's packed entry points
// `void pipedream_<fn>(void **buffers)`, where every buffer is a DEVICE
// pointer (docs/GPU.md). Elementwise, reduction and data-movement ops become
// CUDA kernels embedded in program.so (a fatbin: SASS for `gpuArch` + PTX);
// contractions become calls to `pd_gpu_gemm_f32` (cuBLAS in the runtime), or
// with DType::BF16 to `pd_gpu_gemm_bf16` on bf16-rounded copies.
// program.so leaves the mgpu* functions of MLIR's GPU lowering and the
// pd_gpu_* functions undefined: the pipedream runtime provides them, so
// program.so has no DT_NEEDED on libcuda, libcudart or libcublas.
//
//   buildCUDALoweringPipeline  linalg on tensors -> LLVM dialect + gpu.binary
//   lowerToLLVMDialect         runs it on a module
//   compileToSharedLibrary     lowering + host code generation + link
//                              (the CPU target's translation and lld link)
//
// Errors are returned as one-line messages, never printed or aborted on.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_TARGET_GPU_CUDACODEGEN_H
#define PIPEDREAM_TARGET_GPU_CUDACODEGEN_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace pipedream::cuda {

/// Precision of the generated code's GEMMs (`--dtype`).
enum class DType {
  /// f32 storage and arithmetic (pd_gpu_gemm_f32).
  F32,
  /// Mixed precision: f32 contractions call pd_gpu_gemm_bf16 with operands
  /// rounded to bf16 (round-to-nearest-even), f32 accumulation and a bf16
  /// product added to the f32 output. Everything else (buffers, weights,
  /// optimizer state, elementwise ops, reductions, the bundle's interface)
  /// stays f32.
  BF16,
};

/// Parses "f32" or "bf16".
std::optional<DType> parseDType(llvm::StringRef text);

/// Options of the CUDA code generator.
struct CUDACodegenOptions {
  /// GPU architecture, `sm_<major><minor>` (e.g. sm_80, sm_90, sm_90a). The
  /// fatbin holds SASS for it and PTX for newer GPUs (JIT-compiled by the
  /// driver).
  std::string gpuArch = "sm_90";
  /// Element type of floating-point tensors.
  DType dtype = DType::F32;
  /// LLVM optimization level (host and device), 0 to 3.
  unsigned optLevel = 3;
  /// CUDA toolkit (ptxas, fatbinary, libdevice); empty: $CUDA_HOME, else
  /// /usr/local/cuda.
  std::string toolkitPath;
  /// Threads per block of elementwise kernels.
  unsigned blockSize = 256;
  /// Symbol prefix of the exported entry wrappers.
  std::string symbolPrefix = "pipedream_";
  /// Lower `nn.check_index_range` into kernels that write a device-side
  /// status record, copied to the host record when a function returns
  /// (cuda-lower-run-time-checks, cuda-define-run-time-status); false
  /// (`--no-run-time-checks`) erases the checks.
  bool runTimeChecks = true;
};

/// Checks `arch` (`sm_NN` or `sm_NNa`, NN >= 75); a one-line error
/// otherwise.
llvm::Error verifyGPUArch(llvm::StringRef arch);

/// The PTX ISA version feature ptxas needs for `arch` (e.g. "+ptx80").
std::string ptxFeatureFor(llvm::StringRef arch);

/// The toolkit `options` use: options.toolkitPath, $CUDA_HOME or
/// /usr/local/cuda.
std::string resolveToolkitPath(const CUDACodegenOptions &options);

/// Checks that the toolkit has what gpu-module-to-binary runs (ptxas,
/// fatbinary) and libdevice.
llvm::Error verifyToolkit(const CUDACodegenOptions &options);

/// Adds every dialect, interface and translation the CUDA lowering uses
/// (the CPU target's, plus GPU, NVVM, the NVVM target attribute and the
/// GPU offloading translation).
void registerCUDACodegenDialects(mlir::DialectRegistry &registry);

/// Registers the cuda-* passes and the `pipedream-cuda-lowering` pipeline
/// with the global pass registry (for pipedream-opt).
void registerCUDACodegenPasses();

/// Adds the lowering from linalg on tensors to the LLVM dialect with the
/// kernels compiled into `gpu.binary` ops (see docs/GPU.md for the list).
void buildCUDALoweringPipeline(mlir::OpPassManager &pm,
                               const CUDACodegenOptions &options);

/// The part of buildCUDALoweringPipeline before gpu-module-to-binary: the
/// result still holds the gpu.module (NVVM dialect) for inspection.
void buildCUDALoweringPipelineToNVVM(mlir::OpPassManager &pm,
                                     const CUDACodegenOptions &options);

/// Tests only: the kernel part of the CUDA lowering with one thread per
/// block, then cuda-test-emulate-on-host and the CPU's lowering to the LLVM
/// dialect. The result runs on the CPU with host pointers and the bundle's
/// entry points, to check the CUDA lowering's numerics without a GPU
/// (`pipedream-cuda-emulation` in pipedream-opt).
void buildCUDAEmulationPipeline(mlir::OpPassManager &pm,
                                const CUDACodegenOptions &options);

/// Runs buildCUDALoweringPipeline on `module` (errors as
/// cpu::runLoweringPipeline's).
mlir::LogicalResult lowerToLLVMDialect(mlir::ModuleOp module,
                                       const CUDACodegenOptions &options);

/// The undefined functions a CUDA program.so may reference (mgpu*,
/// pd_gpu_*), which the runtime provides.
const std::vector<std::string> &runtimeSymbols();

/// The whole code generator: lowers `module` (modified in place) and writes
/// the shared library `outputPath` (host code for a generic x86-64 CPU).
/// Fails with one error on the module's context.
mlir::LogicalResult compileToSharedLibrary(mlir::ModuleOp module,
                                           const CUDACodegenOptions &options,
                                           llvm::StringRef outputPath);

} // namespace pipedream::cuda

#endif // PIPEDREAM_TARGET_GPU_CUDACODEGEN_H
