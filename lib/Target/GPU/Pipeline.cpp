//===- Pipeline.cpp - linalg on tensors to LLVM + GPU binary --------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The MLIR half of the CUDA code generator: the pass pipeline (see
// buildCUDALoweringPipeline in CUDACodegen.h and docs/GPU.md) and the
// registrations it needs.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Target/CPU/CPUCodegen.h"
#include "pipedream/Target/CPU/Passes.h"
#include "pipedream/Target/GPU/CUDACodegen.h"
#include "pipedream/Target/GPU/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;

namespace pipedream::cuda {

void registerCUDACodegenDialects(DialectRegistry &registry) {
  cpu::registerCPUCodegenDialects(registry);
  registry.insert<gpu::GPUDialect, NVVM::NVVMDialect>();
  // #nvvm.target serialization (gpu-module-to-binary), and the LLVM IR
  // translation of gpu.binary / gpu.launch_func and of NVVM intrinsics.
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  registerGPUDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  gpu::registerOffloadingLLVMTranslationInterfaceExternalModels(registry);
}

std::optional<DType> parseDType(StringRef text) {
  return llvm::StringSwitch<std::optional<DType>>(text)
      .Case("f32", DType::F32)
      .Case("bf16", DType::BF16)
      .Default(std::nullopt);
}

/// The compute capability of `sm_NN[a]` as NN, or 0.
static unsigned smVersion(StringRef arch) {
  if (!arch.consume_front("sm_"))
    return 0;
  arch.consume_back("a");
  unsigned version = 0;
  if (arch.empty() || arch.getAsInteger(10, version))
    return 0;
  return version;
}

llvm::Error verifyGPUArch(StringRef arch) {
  unsigned version = smVersion(arch);
  if (version == 0)
    return llvm::createStringError(
        "--gpu-arch " + arch +
        ": expected sm_<compute capability>, e.g. sm_80 or sm_90");
  // CUDA 13's ptxas dropped Maxwell, Pascal and Volta.
  if (version < 75)
    return llvm::createStringError(
        "--gpu-arch " + arch +
        ": the CUDA 13 toolkit compiles for sm_75 and newer");
  return llvm::Error::success();
}

std::string ptxFeatureFor(StringRef arch) {
  unsigned version = smVersion(arch);
  // The first PTX ISA version that supports each architecture (the PTX ISA
  // manual's target table), at least 7.0.
  if (version >= 120)
    return "+ptx87";
  if (version >= 100)
    return "+ptx86";
  if (version >= 90)
    return "+ptx80";
  if (version >= 89)
    return "+ptx78";
  if (version >= 87)
    return "+ptx74";
  if (version >= 86)
    return "+ptx71";
  return "+ptx70";
}

/// Steps 1-6 of docs/GPU.md: linalg on tensors to host functions that
/// allocate device memory, call the GEMM library and launch kernels.
static void buildKernelPipeline(OpPassManager &pm,
                                const CUDACodegenOptions &options) {
  // Tensor level: as for the CPU (conv as im2col + GEMM, elementwise
  // fusion), then parallel loops outermost. Index checks stay until after
  // bufferization (cuda-lower-run-time-checks below); with
  // --no-run-time-checks they go now.
  if (!options.runTimeChecks) {
    cpu::LowerRunTimeChecksPassOptions drop;
    drop.dropChecks = true;
    pm.addPass(cpu::createLowerRunTimeChecksPass(drop));
  }
  pm.addPass(createCanonicalizerPass());
  pm.addPass(cpu::createLowerConvToGemmPass());
  pm.addNestedPass<func::FuncOp>(cpu::createFuseElementwiseOpsPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addNestedPass<func::FuncOp>(createInterchangeParallelLoopsPass());

  // Bufferization with the bundle ABI (shared with the CPU target).
  cpu::buildBundleBufferizationPipeline(pm);
  // The checks write a device-side record; cuda-map-to-kernels puts those
  // scalar accesses into single-thread kernels.
  pm.addPass(createLowerRunTimeChecksPass());

  // Buffers: GEMMs to the library, the rest to kernels, buffers on the
  // device.
  LowerGemmToLibraryPassOptions gemm;
  gemm.bf16 = options.dtype == DType::BF16;
  pm.addPass(createLowerGemmToLibraryPass(gemm));
  MapToKernelsPassOptions map;
  map.blockSize = options.blockSize;
  pm.addNestedPass<func::FuncOp>(createMapToKernelsPass(map));
  pm.addNestedPass<func::FuncOp>(createAllocateDeviceMemoryPass());
  // The host record and the copy of the device record into it.
  pm.addPass(createDefineRunTimeStatusPass());
  pm.addPass(createCanonicalizerPass());
}

/// The host ABI wrappers of the CPU target, named with the options' prefix.
static void addEntryPoints(OpPassManager &pm,
                           const CUDACodegenOptions &options) {
  cpu::GenerateEntryPointsPassOptions entry;
  entry.symbolPrefix = options.symbolPrefix;
  pm.addPass(cpu::createGenerateEntryPointsPass(entry));
}

/// Affine and SCF to control flow and strided metadata expanded: what the
/// conversions to LLVM (and NVVM) expect.
static void addLowerToControlFlow(OpPassManager &pm) {
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
}

void buildCUDALoweringPipelineToNVVM(OpPassManager &pm,
                                     const CUDACodegenOptions &options) {
  buildKernelPipeline(pm, options);
  pm.addPass(createGpuKernelOutliningPass());
  pm.addPass(createMergeKernelModulesPass());

  // Host ABI wrappers (the CPU target's pass), then one stream per call.
  addEntryPoints(pm, options);
  pm.addNestedPass<func::FuncOp>(createGpuAsyncRegionPass());
  pm.addNestedPass<func::FuncOp>(createStreamOrderLibraryCallsPass());

  // Device code to NVVM, host code to LLVM with the mgpu* runtime calls.
  GpuNVVMAttachTargetOptions target;
  target.chip = options.gpuArch;
  target.features = ptxFeatureFor(options.gpuArch);
  target.optLevel = options.optLevel;
  pm.addPass(createGpuNVVMAttachTarget(target));
  addLowerToControlFlow(pm);
  ConvertGpuOpsToNVVMOpsOptions nvvm;
  nvvm.indexBitwidth = 64;
  pm.addNestedPass<gpu::GPUModuleOp>(createConvertGpuOpsToNVVMOps(nvvm));
  pm.addNestedPass<gpu::GPUModuleOp>(createCanonicalizerPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createCSEPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createReconcileUnrealizedCastsPass());
  pm.addPass(createGpuToLLVMConversionPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

std::string resolveToolkitPath(const CUDACodegenOptions &options) {
  if (!options.toolkitPath.empty())
    return options.toolkitPath;
  if (const char *home = std::getenv("CUDA_HOME"); home && *home)
    return home;
  return "/usr/local/cuda";
}

void buildCUDALoweringPipeline(OpPassManager &pm,
                               const CUDACodegenOptions &options) {
  buildCUDALoweringPipelineToNVVM(pm, options);
  // ptxas + fatbinary: SASS for the chip and its PTX, libdevice linked
  // (math functions) from the toolkit.
  GpuModuleToBinaryPassOptions binary;
  binary.toolkitPath = resolveToolkitPath(options);
  binary.compilationTarget = "fatbin";
  pm.addPass(createGpuModuleToBinaryPass(binary));
}

void buildCUDAEmulationPipeline(OpPassManager &pm,
                                const CUDACodegenOptions &options) {
  CUDACodegenOptions oneThread = options;
  oneThread.blockSize = 1;
  buildKernelPipeline(pm, oneThread);
  pm.addPass(createEmulateOnHostPass());
  pm.addPass(createCanonicalizerPass());
  addEntryPoints(pm, options);
  addLowerToControlFlow(pm);
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createConvertToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

namespace {
/// Pipeline options of `pipedream-cuda-lowering` in pipedream-opt.
struct CUDALoweringPipelineOptions
    : public PassPipelineOptions<CUDALoweringPipelineOptions> {
  Option<std::string> gpuArch{*this, "gpu-arch",
                              llvm::cl::desc("GPU architecture (sm_NN)"),
                              llvm::cl::init("sm_90")};
  Option<std::string> toolkit{
      *this, "toolkit",
      llvm::cl::desc("CUDA toolkit (default: $CUDA_HOME or /usr/local/cuda)"),
      llvm::cl::init("")};
  Option<unsigned> blockSize{*this, "block-size",
                             llvm::cl::desc("Threads per block"),
                             llvm::cl::init(256)};
  Option<bool> toNVVM{
      *this, "to-nvvm",
      llvm::cl::desc("Stop before gpu-module-to-binary (keep the NVVM "
                     "gpu.module)"),
      llvm::cl::init(false)};
  Option<bool> runTimeChecks{
      *this, "run-time-checks",
      llvm::cl::desc("Lower nn.check_index_range to the status record "
                     "(false: erase the checks)"),
      llvm::cl::init(true)};
  Option<std::string> symbolPrefix{
      *this, "symbol-prefix",
      llvm::cl::desc("Prefix of the exported entry wrappers"),
      llvm::cl::init("pipedream_")};
  Option<DType> dtype{
      *this, "dtype",
      llvm::cl::desc("f32, or bf16: GEMMs with bf16 operands and f32 "
                     "accumulation (pd_gpu_gemm_bf16)"),
      llvm::cl::init(DType::F32),
      llvm::cl::values(clEnumValN(DType::F32, "f32", "f32 everywhere"),
                       clEnumValN(DType::BF16, "bf16",
                                  "bf16 GEMM operands and products"))};
};

/// Pipeline options of `pipedream-cuda-emulation` in pipedream-opt.
struct CUDAEmulationPipelineOptions
    : public PassPipelineOptions<CUDAEmulationPipelineOptions> {
  Option<DType> dtype{
      *this, "dtype", llvm::cl::desc("f32 or bf16 (see --dtype)"),
      llvm::cl::init(DType::F32),
      llvm::cl::values(clEnumValN(DType::F32, "f32", "f32 everywhere"),
                       clEnumValN(DType::BF16, "bf16",
                                  "bf16 GEMM operands and products"))};
};
} // namespace

void registerCUDACodegenPasses() {
  registerCUDAPasses();
  PassPipelineRegistration<CUDALoweringPipelineOptions>(
      "pipedream-cuda-lowering",
      "Lower linalg on tensors to the LLVM dialect with CUDA kernels in a "
      "gpu.binary and the bundle entry wrappers (pipedream-compile --target "
      "cuda)",
      [](OpPassManager &pm, const CUDALoweringPipelineOptions &pipeline) {
        CUDACodegenOptions options;
        // An invalid value reaches ptxas, which reports it;
        // pipedream-compile validates first.
        options.gpuArch = pipeline.gpuArch;
        options.toolkitPath = pipeline.toolkit;
        options.blockSize = pipeline.blockSize;
        options.symbolPrefix = pipeline.symbolPrefix;
        options.runTimeChecks = pipeline.runTimeChecks;
        options.dtype = pipeline.dtype;
        if (pipeline.toNVVM)
          buildCUDALoweringPipelineToNVVM(pm, options);
        else
          buildCUDALoweringPipeline(pm, options);
      });
  PassPipelineRegistration<CUDAEmulationPipelineOptions>(
      "pipedream-cuda-emulation",
      "Tests only: the CUDA lowering with its kernels and GEMM calls run on "
      "the CPU (cuda-test-emulate-on-host), down to the LLVM dialect",
      [](OpPassManager &pm, const CUDAEmulationPipelineOptions &pipeline) {
        CUDACodegenOptions options;
        options.dtype = pipeline.dtype;
        buildCUDAEmulationPipeline(pm, options);
      });
}

LogicalResult lowerToLLVMDialect(ModuleOp module,
                                 const CUDACodegenOptions &options) {
  return cpu::runLoweringPipeline(
      module,
      [&](OpPassManager &pm) { buildCUDALoweringPipeline(pm, options); },
      "CUDA lowering");
}

} // namespace pipedream::cuda
