//===- Pipeline.cpp - linalg on tensors to the LLVM dialect ---------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The MLIR half of the CPU code generator: the pass pipeline from linalg on
// tensors to the LLVM dialect (see buildCPULoweringPipeline in
// CPUCodegen.h) and the registrations it needs.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Target/CPU/CPUCodegen.h"
#include "pipedream/Target/CPU/Passes.h"
#include "pipedream/Support/CompileTiming.h"
#include "pipedream/Support/Diagnostics.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVM.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Affine/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/BufferViewFlowOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/ControlFlow/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/ControlFlow/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Linalg/Transforms/SubsetInsertionOpInterfaceImpl.h"
#include "mlir/Dialect/Linalg/Transforms/TilingInterfaceImpl.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/Transforms/AllocationOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/Transforms/BufferViewFlowOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/IR/TensorInferTypeOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/SubsetInsertionOpInterfaceImpl.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Vector/Transforms/SubsetOpInterfaceImpl.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;

namespace pipedream::cpu {

void registerCPUCodegenDialects(DialectRegistry &registry) {
  registry.insert<affine::AffineDialect, arith::ArithDialect,
                  bufferization::BufferizationDialect, cf::ControlFlowDialect,
                  func::FuncDialect, index::IndexDialect, LLVM::LLVMDialect,
                  linalg::LinalgDialect, math::MathDialect,
                  memref::MemRefDialect, scf::SCFDialect,
                  tensor::TensorDialect, ub::UBDialect,
                  vector::VectorDialect>();
  // Bufferization models.
  arith::registerBufferizableOpInterfaceExternalModels(registry);
  bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(
      registry);
  cf::registerBufferizableOpInterfaceExternalModels(registry);
  linalg::registerBufferizableOpInterfaceExternalModels(registry);
  memref::registerAllocationOpInterfaceExternalModels(registry);
  scf::registerBufferizableOpInterfaceExternalModels(registry);
  tensor::registerBufferizableOpInterfaceExternalModels(registry);
  vector::registerBufferizableOpInterfaceExternalModels(registry);
  // Tiling, subset hoisting and shape reasoning (cpu-vectorize-gemm,
  // eliminate-empty-tensors).
  linalg::registerTilingInterfaceExternalModels(registry);
  linalg::registerSubsetOpInterfaceExternalModels(registry);
  tensor::registerSubsetOpInterfaceExternalModels(registry);
  vector::registerSubsetOpInterfaceExternalModels(registry);
  affine::registerValueBoundsOpInterfaceExternalModels(registry);
  arith::registerValueBoundsOpInterfaceExternalModels(registry);
  linalg::registerValueBoundsOpInterfaceExternalModels(registry);
  memref::registerValueBoundsOpInterfaceExternalModels(registry);
  scf::registerValueBoundsOpInterfaceExternalModels(registry);
  tensor::registerValueBoundsOpInterfaceExternalModels(registry);
  vector::registerValueBoundsOpInterfaceExternalModels(registry);
  // The result shapes of tensor.expand_shape and collapse_shape
  // (ReifyRankedShapedTypeOpInterface): without them, upstream patterns
  // that reify a reshape's shape, such as the fold of a reshaped
  // tensor.empty into a tensor.empty, fail without a word.
  tensor::registerInferTypeOpInterfaceExternalModels(registry);
  // Ownership-based deallocation models.
  arith::registerBufferDeallocationOpInterfaceExternalModels(registry);
  arith::registerBufferViewFlowOpInterfaceExternalModels(registry);
  cf::registerBufferDeallocationOpInterfaceExternalModels(registry);
  memref::registerBufferViewFlowOpInterfaceExternalModels(registry);
  scf::registerBufferDeallocationOpInterfaceExternalModels(registry);
  // convert-to-llvm interfaces.
  arith::registerConvertArithToLLVMInterface(registry);
  cf::registerConvertControlFlowToLLVMInterface(registry);
  registerConvertFuncToLLVMInterface(registry);
  index::registerConvertIndexToLLVMInterface(registry);
  registerConvertMathToLLVMInterface(registry);
  registerConvertMemRefToLLVMInterface(registry);
  ub::registerConvertUBToLLVMInterface(registry);
  vector::registerConvertVectorToLLVMInterface(registry);
  // LLVM IR translation.
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
}

std::optional<GemmLowering> parseGemmLowering(StringRef text) {
  return llvm::StringSwitch<std::optional<GemmLowering>>(text)
      .Case("auto", GemmLowering::Auto)
      .Case("kernel", GemmLowering::Kernel)
      .Case("vectorize", GemmLowering::Vectorize)
      .Case("blas", GemmLowering::BLAS)
      .Case("loops", GemmLowering::Loops)
      .Default(std::nullopt);
}

bool usesBLAS(const CPUCodegenOptions &options) {
  return options.gemm == GemmLowering::BLAS ||
         (options.gemm == GemmLowering::Auto && isBLASAvailable());
}

/// bufferization::buildBufferDeallocationPipeline's passes, each function on
/// its own, with cpu-split-deallocs before the simplification: the one
/// dealloc of a straight-line function lists every allocation, and the
/// simplification is quadratic in that number (issue 16).
static void buildDeallocationPipeline(OpPassManager &pm) {
  OpPassManager &fpm = pm.nest<func::FuncOp>();
  memref::ExpandReallocPassOptions realloc;
  realloc.emitDeallocs = false;
  fpm.addPass(memref::createExpandReallocPass(realloc));
  fpm.addPass(createCanonicalizerPass());
  fpm.addPass(bufferization::createOwnershipBasedBufferDeallocationPass());
  fpm.addPass(createCanonicalizerPass());
  fpm.addPass(createSplitDeallocsPass());
  fpm.addPass(bufferization::createBufferDeallocationSimplificationPass());
  pm.addPass(bufferization::createLowerDeallocationsPass());
  OpPassManager &after = pm.nest<func::FuncOp>();
  after.addPass(createCSEPass());
  after.addPass(createCanonicalizerPass());
}

void buildBundleBufferizationPipeline(OpPassManager &pm, bool inPlaceUpdates) {
  // The bundle ABI at function boundaries: identity layouts, results as
  // caller-owned out-parameters (one buffer each), except the outputs
  // marked in place (docs/Bundle.md), left in their argument's buffer.
  if (inPlaceUpdates)
    pm.addPass(createInPlaceUpdatesPass());
  pm.addPass(createPrepareEntryPointsPass());
  // One tensor.empty per use: a shared one makes One-Shot Analysis
  // quadratic in the function's length (issue 16).
  pm.addNestedPass<func::FuncOp>(createSplitEmptyTensorsPass());
  pm.addPass(bufferization::createEmptyTensorEliminationPass());
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  bufferization::BufferResultsToOutParamsPassOptions outParams;
  outParams.hoistStaticAllocs = true;
  outParams.modifyPublicFunctions = true;
  pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
  if (inPlaceUpdates)
    pm.addPass(createDropInPlaceCopiesPass());
  buildDeallocationPipeline(pm);
  pm.addPass(createConvertBufferizationToMemRefPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void buildCPULoweringPipeline(OpPassManager &pm,
                              const CPUCodegenOptions &options) {
  // Equal functions (the stages of a pipeline holding equal blocks) are
  // lowered once (issue 16).
  if (options.loops.mergeFunctions) {
    MergeEqualFunctionsPassOptions merge;
    merge.symbolPrefix = options.symbolPrefix;
    pm.addPass(createMergeEqualFunctionsPass(merge));
  }
  // Tensor level: clean up, expose GEMMs, fuse elementwise chains so they
  // become one loop nest each, then the GEMM kernels.
  pm.addPass(createCanonicalizerPass());
  if (options.gemm != GemmLowering::Loops) {
    pm.addPass(createLowerConvToGemmPass());
    // GEMM operands read through a transpose rather than a transposed copy.
    pm.addNestedPass<func::FuncOp>(createFoldTransposesIntoContractionsPass());
  }
  pm.addNestedPass<func::FuncOp>(createFuseElementwiseOpsPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  if (options.gemm == GemmLowering::Vectorize) {
    pm.addNestedPass<func::FuncOp>(createVectorizeGemmPass());
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
  }

  buildBundleBufferizationPipeline(pm, /*inPlaceUpdates=*/true);

  // Buffer level: library calls, then the ABI wrappers.
  if (options.gemm == GemmLowering::Auto ||
      options.gemm == GemmLowering::Kernel) {
    LowerGemmToBLASPassOptions toKernel;
    toKernel.sgemm = options.bf16Gemm ? "pd_cpu_gemm_bf16" : "pd_cpu_sgemm";
    toKernel.lowerF64 = usesBLAS(options);
    pm.addPass(createLowerGemmToBLASPass(toKernel));
  } else if (usesBLAS(options)) {
    pm.addPass(createLowerGemmToBLASPass());
  }
  pm.addPass(createLowerStridedCopiesPass());
  LowerRunTimeChecksPassOptions checks;
  checks.dropChecks = !options.runTimeChecks;
  pm.addPass(createLowerRunTimeChecksPass(checks));
  GenerateEntryPointsPassOptions entry;
  entry.symbolPrefix = options.symbolPrefix;
  pm.addPass(createGenerateEntryPointsPass(entry));

  // Innermost reductions accumulate in a register, sums in lanes
  // (vectorizable). Before the outlining: the alias check sees the buffers
  // the ops really share, not a kernel's separate arguments.
  LowerReductionsToLoopsPassOptions reductions;
  reductions.reassociate = options.loops.reassociateReductions;
  reductions.vectorize = options.loops.vectorizeReductions;
  pm.addNestedPass<func::FuncOp>(createLowerReductionsToLoopsPass(reductions));
  // A LayerNorm's or softmax's chain of passes over the rows as one pass,
  // row by row (in L1).
  if (options.loops.fuseRowLoops)
    pm.addNestedPass<func::FuncOp>(createFuseRowLoopsPass());

  // Every loop nest in a function of its own, equal nests shared: LLVM's
  // cost grows faster than linearly with function size (issue 16).
  if (options.loops.outlineKernels)
    pm.addPass(createOutlineKernelsPass());
  // The temporaries (all live until the return, where the deallocation
  // pipeline frees them) in one buffer by live range: a GPT block's step
  // writes 20 MiB instead of 55, so fewer of its writes miss the cache.
  if (options.loops.planTemporaries)
    pm.addNestedPass<func::FuncOp>(createPlanTemporariesPass());

  // Loops and the LLVM dialect.
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  pm.addPass(createLowerAffinePass());
  // Fully unrolled: n-D transfers become 1-D ones on registers instead of
  // loops over a stack temporary (an alloca inside the GEMM kernel's loops,
  // which only LLVM's full unrolling used to clean up).
  VectorTransferToSCFOptions vectorToSCF;
  vectorToSCF.enableFullUnroll(true);
  pm.addPass(createConvertVectorToSCFPass(vectorToSCF));
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  // Vector ops (from vectorized code) lower first, with their own
  // preparatory patterns (transfers to loads, contractions to FMAs).
  ConvertVectorToLLVMPassOptions vectorToLLVM;
  vectorToLLVM.vectorContractLowering =
      vector::VectorContractLowering::OuterProduct;
  pm.addPass(createConvertVectorToLLVMPass(vectorToLLVM));
  // f32 transcendentals become arithmetic LLVM can vectorize; the rest
  // go to libm.
  pm.addPass(createApproximateMathPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createConvertToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  // Masks (i1 buffers) read a byte at a time, not element by element.
  pm.addPass(createBoolMemoryAsBytesPass());
  // Steps allocate the same temporaries every call: reuse them.
  pm.addPass(createCacheAllocationsPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // A training step's body as calls of bounded functions: LLVM is
  // superlinear in the length of a block (issue 16).
  // 250 operations a run: linear in LLVM at 125 and 250 layers of a
  // MatMul + Tanh chain (docs/CompileTime.md).
  if (options.loops.outlineKernels) {
    SplitLargeFunctionsPassOptions split;
    split.maxOps = 250;
    pm.addPass(createSplitLargeFunctionsPass(split));
  }
}

namespace {
/// Pipeline options of `pipedream-cpu-lowering` in pipedream-opt.
struct CPULoweringPipelineOptions
    : public PassPipelineOptions<CPULoweringPipelineOptions> {
  Option<std::string> gemm{
      *this, "gemm",
      llvm::cl::desc("GEMM lowering: auto, kernel, vectorize, blas or loops"),
      llvm::cl::init("auto")};
  Option<std::string> symbolPrefix{
      *this, "symbol-prefix",
      llvm::cl::desc("Prefix of the exported entry wrappers"),
      llvm::cl::init("pipedream_")};
};
} // namespace

void registerCPUCodegenPasses() {
  registerCPUPasses();
  PassPipelineRegistration<CPULoweringPipelineOptions>(
      "pipedream-cpu-lowering",
      "Lower linalg on tensors to the LLVM dialect with the bundle entry "
      "wrappers (the pipeline of pipedream-compile)",
      [](OpPassManager &pm, const CPULoweringPipelineOptions &pipeline) {
        CPUCodegenOptions options;
        // An unknown value keeps the default; pipedream-compile validates.
        options.gemm =
            parseGemmLowering(pipeline.gemm).value_or(GemmLowering::Auto);
        options.symbolPrefix = pipeline.symbolPrefix;
        buildCPULoweringPipeline(pm, options);
      });
}

LogicalResult runLoweringPipeline(
    ModuleOp module, llvm::function_ref<void(OpPassManager &)> buildPipeline,
    StringRef what) {
  MLIRContext *ctx = module.getContext();
  // Keep the first error (the root cause); later ones are usually fallout.
  // NOTE: it is reported again, after this handler, as one line with its
  // location in the text: the same line whatever the caller's handler
  // prints for locations.
  std::string firstError;
  {
    FirstErrorHandler errors(ctx);
    TimedPhase phase(what);
    PassManager pm(ctx, ModuleOp::getOperationName());
    if (failed(applyPassManagerCLOptions(pm))) {
      firstError = "invalid pass manager options";
    } else {
      attachPassTiming(pm);
      buildPipeline(pm);
      if (succeeded(pm.run(module)))
        return success();
      firstError = errors.orElse(what + " failed");
    }
  }
  return pipedream::emitError(ctx) << firstError;
}

LogicalResult lowerToLLVMDialect(ModuleOp module,
                                 const CPUCodegenOptions &options) {
  return runLoweringPipeline(
      module,
      [&](OpPassManager &pm) { buildCPULoweringPipeline(pm, options); },
      "CPU lowering");
}

} // namespace pipedream::cpu
