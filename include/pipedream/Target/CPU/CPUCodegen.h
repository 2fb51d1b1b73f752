//===- CPUCodegen.h - linalg module to program.so ---------------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The CPU code generator: takes a module after nn->linalg (linalg, tensor,
// arith, math on ranked static tensors; public func.funcs are the entry
// points) and produces a shared library exporting
// `void pipedream_<fn>(void **buffers)` per entry (docs/Bundle.md), all in
// process: MLIR lowering, LLVM IR translation, an LLVM TargetMachine for the
// host CPU, and lld linked in as a library. Nothing shells out.
//
//   lowerToLLVMDialect       linalg on tensors -> LLVM dialect + wrappers
//   translateToLLVMIR        LLVM dialect -> llvm::Module (data layout, triple)
//   optimizeLLVMModule       the LLVM -O pipeline for the target
//   emitObjectFile           llvm::Module -> ELF object in memory
//   linkSharedLibrary        objects -> .so (in-process lld)
//   compileToSharedLibrary   all of the above
//
// Errors are returned as one-line messages, never printed or aborted on.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_TARGET_CPU_CPUCODEGEN_H
#define PIPEDREAM_TARGET_CPU_CPUCODEGEN_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <optional>
#include <string>

namespace llvm {
class LLVMContext;
class Module;
class TargetMachine;
} // namespace llvm

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace pipedream::cpu {

/// How f32/f64 contractions (matmul, batch_matmul, generic contractions,
/// convolutions after im2col) are compiled.
enum class GemmLowering {
  /// f32 contractions to pipedream's kernel (`pd_cpu_sgemm`, as Kernel),
  /// f64 ones to CBLAS when OpenBLAS is available, loops for the rest.
  Auto,
  /// Every f32 contraction to `pd_cpu_sgemm` (lib/Target/CPU/Kernels:
  /// packed, AVX-512/AVX2 by cpuid, threads), loops for the rest: program.so
  /// depends on libc and libm only.
  Kernel,
  /// cpu-vectorize-gemm where it applies, loops for the rest: program.so
  /// depends on libc and libm only.
  Vectorize,
  /// Every contraction BLAS can express goes to cblas_?gemm.
  BLAS,
  /// Plain loops (reference, and the slowest).
  Loops,
};

/// Parses "auto", "kernel", "vectorize", "blas" or "loops".
std::optional<GemmLowering> parseGemmLowering(llvm::StringRef text);

/// The switches of the CPU pipeline's loop-level passes, one flag each of
/// pipedream-compile (docs/CLI.md): CompileOptions holds them as parsed,
/// CPUCodegenOptions as the pipeline reads them.
struct CPULoopOptions {
  /// cpu-outline-kernels (--outline-kernels): every loop nest in a function
  /// of its own, structurally equal ones shared.
  bool outlineKernels = true;
  /// cpu-merge-equal-functions (--merge-functions): bundle functions equal
  /// but for their names and annotations (pipeline stages holding equal
  /// blocks) lowered once.
  bool mergeFunctions = true;
  /// cpu-lower-reductions-to-loops' `reassociate`
  /// (--reassociate-reductions): innermost floating-point sums and products
  /// in 16 lanes, in a fixed order (vectorized); false: in order.
  bool reassociateReductions = true;
  /// cpu-lower-reductions-to-loops' `vectorize` (--vectorize-reductions):
  /// the lanes as vector<16xT> values; false: 16 scalar chains for LLVM's
  /// SLP vectorizer (the same order).
  bool vectorizeReductions = true;
  /// cpu-fuse-row-loops (--fuse-row-loops): consecutive nests over the
  /// same rows (LayerNorm, softmax, losses) as one nest, row by row.
  bool fuseRowLoops = true;
  /// cpu-plan-temporaries (--plan-temporaries): a function's temporaries
  /// in one buffer by live range, bytes reused once a temporary is dead.
  bool planTemporaries = true;
};

/// Options of the CPU code generator.
struct CPUCodegenOptions {
  /// LLVM optimization level, 0 to 3.
  unsigned optLevel = 3;
  /// Target CPU for instruction selection; "native" is the compiling
  /// machine's CPU with all its features (AVX-512 on Zen 5). A bundle built
  /// for "native" runs only on CPUs with the same features.
  std::string cpu = "native";
  /// Extra LLVM target features, e.g. "+avx512f,-avx512bf16" (added to the
  /// CPU's own).
  std::string features;
  /// How contractions are compiled.
  GemmLowering gemm = GemmLowering::Auto;
  /// `--dtype bf16`: f32 contractions on pipedream's bf16 GEMM
  /// (`pd_cpu_gemm_bf16`: bf16 operands and product, f32 accumulation and
  /// buffers; GemmLowering Auto or Kernel only).
  bool bf16Gemm = false;
  /// Lower the index checks (nn.check_index_range) to the run-time status
  /// record; false drops them (indices are still clamped), for measuring
  /// their cost (bench/run_time_checks.py).
  bool runTimeChecks = true;
  /// Symbol prefix of the exported entry wrappers.
  std::string symbolPrefix = "pipedream_";
  /// Link the CPU kernel object (pd_cpu_sgemm, the thread count;
  /// writeKernelObject) into the library. The CUDA target's host code needs
  /// none (its program.so depends on nothing).
  bool linkKernels = true;

  // Compile time (lib/Target/CPU/ParallelCodegen.cpp, OutlineKernels.cpp).
  /// Threads for the LLVM optimization and code generation of the split
  /// module; 0: one per hardware thread; 1: the whole module on one thread.
  unsigned codegenThreads = 0;
  /// The loop-level passes' switches.
  CPULoopOptions loops;
  /// Object cache directory ("" = the default, see resolveObjectCacheDir).
  std::string cacheDir;
  /// False: neither read nor write the object cache.
  bool useCache = true;
};

/// True when this build of pipedream found OpenBLAS and can link bundles
/// against it.
bool isBLASAvailable();

/// True when `options` route some contractions to CBLAS (and program.so is
/// linked against OpenBLAS).
bool usesBLAS(const CPUCodegenOptions &options);

/// Adds to `registry` every dialect and interface the CPU lowering uses
/// (bufferization models, LLVM conversion interfaces, LLVM IR translation).
void registerCPUCodegenDialects(mlir::DialectRegistry &registry);

/// Registers the pipedream CPU passes and the `pipedream-cpu-lowering`
/// pipeline with the global pass registry (for pipedream-opt).
void registerCPUCodegenPasses();

/// Adds the lowering from linalg on tensors to the LLVM dialect, with the
/// entry wrappers, to `pm` (a module pass manager):
///
///   [cpu-merge-equal-functions], canonicalize, [cpu-lower-conv-to-gemm], cpu-fuse-elementwise-ops,
///   [cpu-vectorize-gemm], cpu-prepare-entry-points, eliminate-empty-tensors,
///   one-shot-bufferize{bufferize-function-boundaries
///                      function-boundary-type-conversion=identity-layout-map},
///   buffer-results-to-out-params{hoist-static-allocs modify-public-functions},
///   buffer-deallocation-pipeline, convert-bufferization-to-memref,
///   [cpu-lower-gemm-to-blas], cpu-lower-strided-copies,
///   cpu-generate-entry-points, [cpu-outline-kernels], convert-linalg-to-loops,
///   lower-affine,
///   convert-vector-to-scf, convert-scf-to-cf, expand-strided-metadata,
///   lower-affine, convert-vector-to-llvm, convert-math-to-llvm,
///   convert-math-to-libm, convert-to-llvm, reconcile-unrealized-casts
void buildCPULoweringPipeline(mlir::OpPassManager &pm,
                              const CPUCodegenOptions &options);

/// The bufferization part of the CPU lowering, shared with the CUDA
/// target: cpu-prepare-entry-points, eliminate-empty-tensors,
/// one-shot-bufferize{bufferize-function-boundaries
/// function-boundary-type-conversion=identity-layout-map},
/// buffer-results-to-out-params{hoist-static-allocs modify-public-functions},
/// buffer-deallocation-pipeline, convert-bufferization-to-memref,
/// canonicalize, cse. Public functions end up with one identity-layout
/// memref argument per input and per result (the bundle ABI). With
/// `inPlaceUpdates` (the CPU target), cpu-in-place-updates and
/// cpu-drop-in-place-copies leave the results marked `pipedream.in_place`
/// in their argument's buffer (their out-parameter is unused); without it
/// (cuda, whose runtime swaps buffers) the marks are ignored.
void buildBundleBufferizationPipeline(mlir::OpPassManager &pm,
                                      bool inPlaceUpdates = false);

/// Runs the pipeline `buildPipeline` adds on `module`. On failure emits one
/// error on the module's context at no location whose text is the first
/// diagnostic (one line, starting with its location), or "<what> failed".
mlir::LogicalResult runLoweringPipeline(
    mlir::ModuleOp module,
    llvm::function_ref<void(mlir::OpPassManager &)> buildPipeline,
    llvm::StringRef what);

/// Runs buildCPULoweringPipeline on `module` (errors as
/// runLoweringPipeline's).
mlir::LogicalResult lowerToLLVMDialect(mlir::ModuleOp module,
                                       const CPUCodegenOptions &options);

/// Creates the LLVM TargetMachine for `options` (PIC, the requested CPU and
/// features, optimization level). LLVM only (no MLIR context; code
/// generation threads call it): fails with a one-line error.
llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
createTargetMachine(const CPUCodegenOptions &options);

/// Translates an LLVM-dialect module to LLVM IR with `machine`'s data layout
/// and triple. Fails with one error on the module's context.
mlir::FailureOr<std::unique_ptr<llvm::Module>>
translateToLLVMIR(mlir::ModuleOp module, llvm::LLVMContext &llvmContext,
                  llvm::TargetMachine &machine);

/// Runs LLVM's default optimization pipeline at `optLevel` (0 to 3).
void optimizeLLVMModule(llvm::Module &module, llvm::TargetMachine &machine,
                        unsigned optLevel);

/// Emits `module` as an ELF relocatable object into `object`.
llvm::Error emitObjectFile(llvm::Module &module, llvm::TargetMachine &machine,
                           llvm::SmallVectorImpl<char> &object);

/// Links `objectFiles` and, when `withKernels`, the CPU kernel object
/// (writeKernelObject) into the shared library `outputPath` with lld, in
/// process, against libc, libm and (when `withBLAS`) OpenBLAS, refusing
/// undefined symbols except the names in `runtimeSymbols`, which stay
/// undefined in the library (the loader resolves them from what the process
/// already loaded: the CUDA target's mgpu* and pd_gpu_* functions, provided
/// by the pipedream runtime). Serialized: lld keeps one context per process.
llvm::Error linkSharedLibrary(llvm::ArrayRef<std::string> objectFiles,
                              llvm::StringRef outputPath, bool withBLAS,
                              llvm::ArrayRef<std::string> runtimeSymbols = {},
                              bool withKernels = true);

/// Writes the CPU kernel object (lib/Target/CPU/Kernels: pd_cpu_sgemm, the
/// thread count) to a new file next to `outputPath` and returns its name;
/// linkSharedLibrary links it into every library and removes it.
llvm::Expected<std::string> writeKernelObject(llvm::StringRef outputPath);

/// Code generation for a module already in the LLVM dialect: translation
/// with `options`' target machine, the LLVM -O pipeline, an object file
/// next to `outputPath` (removed afterwards) and the link (see
/// linkSharedLibrary for `withBLAS` and `runtimeSymbols`). Fails with one
/// error on the module's context.
mlir::LogicalResult
emitSharedLibrary(mlir::ModuleOp module, const CPUCodegenOptions &options,
                  llvm::StringRef outputPath, bool withBLAS,
                  llvm::ArrayRef<std::string> runtimeSymbols);

/// The whole code generator: lowers `module` (linalg on tensors; modified in
/// place to the LLVM dialect) and writes the shared library `outputPath`.
/// A temporary object file is written next to `outputPath` and removed.
/// Fails with one error on the module's context.
mlir::LogicalResult compileToSharedLibrary(mlir::ModuleOp module,
                                           const CPUCodegenOptions &options,
                                           llvm::StringRef outputPath);

} // namespace pipedream::cpu

#endif // PIPEDREAM_TARGET_CPU_CPUCODEGEN_H
