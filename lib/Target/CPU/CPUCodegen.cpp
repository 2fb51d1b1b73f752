//===- CPUCodegen.cpp - LLVM dialect to object code -----------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The LLVM half of the CPU code generator: translation to LLVM IR, the LLVM
// optimization pipeline for the host CPU, object emission in memory, and the
// driver that chains lowering, code generation and linking.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Target/CPU/CPUCodegen.h"
#include "pipedream/Support/CompileTiming.h"
#include "pipedream/Support/Diagnostics.h"
#include "pipedream/Target/CPU/ParallelCodegen.h"

#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Analysis/CGSCCPassManager.h"
#include "llvm/Analysis/LoopAnalysisManager.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

#include <mutex>

using namespace mlir;

namespace pipedream::cpu {

static void initializeNativeTarget() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}

llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
createTargetMachine(const CPUCodegenOptions &options) {
  initializeNativeTarget();
  llvm::Triple triple(llvm::sys::getProcessTriple());
  std::string lookupError;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, lookupError);
  if (!target)
    return llvm::createStringError("no LLVM target for " + triple.str() + ": " +
                                   lookupError);

  std::string cpu = options.cpu;
  llvm::SmallVector<std::string> features;
  if (cpu.empty() || cpu == "native") {
    cpu = llvm::sys::getHostCPUName().str();
    for (const auto &feature : llvm::sys::getHostCPUFeatures())
      features.push_back((feature.second ? "+" : "-") +
                         feature.first().str());
  }
  if (!options.features.empty())
    features.push_back(options.features);
  if (!target->hasTargetMachine())
    return llvm::createStringError("LLVM target " + triple.str() +
                                   " has no code generator");
  // An unknown CPU name would only make LLVM print a warning and fall back
  // to a generic CPU: refuse it, asking a generic subtarget.
  {
    std::unique_ptr<llvm::MCSubtargetInfo> generic(
        target->createMCSubtargetInfo(triple, "", ""));
    if (!generic || !generic->isCPUStringValid(cpu))
      return llvm::createStringError("unknown target CPU '" + cpu + "' for " +
                                     triple.str());
  }

  llvm::CodeGenOptLevel level = llvm::CodeGenOptLevel::Aggressive;
  switch (options.optLevel) {
  case 0:
    level = llvm::CodeGenOptLevel::None;
    break;
  case 1:
    level = llvm::CodeGenOptLevel::Less;
    break;
  case 2:
    level = llvm::CodeGenOptLevel::Default;
    break;
  default:
    break;
  }
  llvm::TargetOptions targetOptions;
  // Fuse a*b+c into FMAs (clang's -ffp-contract=fast): the GEMM kernel's
  // multiply-add pairs become one instruction, and one rounding.
  targetOptions.AllowFPOpFusion = llvm::FPOpFusion::Fast;
  // Constructors and destructors in .init_array / .fini_array, which glibc
  // runs (the default, .ctors / .dtors, it ignores): cpu-cache-allocations
  // frees its parked buffers from a destructor when program.so is unloaded.
  targetOptions.UseInitArray = true;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, cpu, llvm::join(features, ","), targetOptions, llvm::Reloc::PIC_,
      std::nullopt, level));
  if (!machine)
    return llvm::createStringError(
        "cannot create an LLVM target machine for CPU '" + cpu + "'");
  return std::move(machine);
}

/// `message` as the one error of `module`'s compile, at no location (a
/// message names its file, or carries the location of the diagnostic it
/// repeats).
static LogicalResult fail(ModuleOp module, const llvm::Twine &message) {
  return pipedream::emitError(module.getContext()) << firstLine(message);
}

FailureOr<std::unique_ptr<llvm::Module>>
translateToLLVMIR(ModuleOp module, llvm::LLVMContext &llvmContext,
                  llvm::TargetMachine &machine) {
  std::string firstError;
  std::unique_ptr<llvm::Module> llvmModule;
  {
    // The translation's first error, repeated below with its location in
    // the text (as runLoweringPipeline does).
    FirstErrorHandler errors(module.getContext());
    llvmModule = translateModuleToLLVMIR(module, llvmContext, "program");
    if (errors.hasError())
      firstError = ": " + errors.orElse("");
  }
  if (!llvmModule)
    return fail(module, "translation to LLVM IR failed" + firstError);
  llvmModule->setDataLayout(machine.createDataLayout());
  llvmModule->setTargetTriple(machine.getTargetTriple());
  // The vectorizers and instruction selection read the CPU per function.
  const bool avx512 = machine.getMCSubtargetInfo()->checkFeatures("+avx512f");
  for (llvm::Function &function : *llvmModule) {
    if (function.isDeclaration())
      continue;
    function.addFnAttr("target-cpu", machine.getTargetCPU());
    if (!machine.getTargetFeatureString().empty())
      function.addFnAttr("target-features", machine.getTargetFeatureString());
    if (avx512)
      function.addFnAttr("prefer-vector-width", "512");
  }
  return llvmModule;
}

/// Caps LLVM's full unrolling at 4 iterations (the taps of a 3x3 kernel).
/// The loop nests from linalg have small constant inner trip counts (16
/// pixels of an image row); fully unrolled before vectorization, they leave
/// the loop vectorizer the next loop out, whose accesses are strided, and it
/// emits gathers and scatters instead of vector loads: im2col, col2im and
/// broadcasting elementwise ops ran 2-7x slower. Without full unrolling at
/// all, loops of 2-3 iterations (pooling windows) are slower instead.
/// NOTE: `unroll-full-max-count` is a process-wide LLVM option; it is set
/// once, unless given on the command line.
static void limitFullUnrolling() {
  static std::once_flag once;
  std::call_once(once, [] {
    auto &options = llvm::cl::getRegisteredOptions();
    auto it = options.find("unroll-full-max-count");
    if (it != options.end() && it->second->getNumOccurrences() == 0)
      it->second->addOccurrence(0, "unroll-full-max-count", "4");
  });
}

void optimizeLLVMModule(llvm::Module &module, llvm::TargetMachine &machine,
                        unsigned optLevel) {
  llvm::OptimizationLevel level = llvm::OptimizationLevel::O3;
  switch (optLevel) {
  case 0:
    level = llvm::OptimizationLevel::O0;
    break;
  case 1:
    level = llvm::OptimizationLevel::O1;
    break;
  case 2:
    level = llvm::OptimizationLevel::O2;
    break;
  default:
    break;
  }
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopUnrolling = optLevel > 1;
  if (optLevel > 1)
    limitFullUnrolling();
  tuning.LoopVectorization = optLevel > 1;
  tuning.SLPVectorization = optLevel > 1;
  llvm::PassBuilder builder(&machine, tuning);
  builder.registerModuleAnalyses(mam);
  builder.registerCGSCCAnalyses(cgam);
  builder.registerFunctionAnalyses(fam);
  builder.registerLoopAnalyses(lam);
  builder.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm =
      level == llvm::OptimizationLevel::O0
          ? builder.buildO0DefaultPipeline(level)
          : builder.buildPerModuleDefaultPipeline(level);
  mpm.run(module, mam);
}

llvm::Error emitObjectFile(llvm::Module &module, llvm::TargetMachine &machine,
                           llvm::SmallVectorImpl<char> &object) {
  object.clear();
  llvm::raw_svector_ostream os(object);
  llvm::legacy::PassManager pm;
  if (machine.addPassesToEmitFile(pm, os, nullptr,
                                  llvm::CodeGenFileType::ObjectFile))
    return llvm::createStringError("the LLVM target cannot emit object files");
  pm.run(module);
  return llvm::Error::success();
}

LogicalResult compileToSharedLibrary(ModuleOp module,
                                     const CPUCodegenOptions &options,
                                     StringRef outputPath) {
  if (options.gemm == GemmLowering::BLAS && !isBLASAvailable())
    return fail(module, "this pipedream was built without OpenBLAS: choose "
                        "another GEMM lowering (--gemm=vectorize) or install "
                        "libopenblas-dev and rebuild");
  if (failed(lowerToLLVMDialect(module, options)))
    return failure();
  return emitSharedLibrary(module, options, outputPath, usesBLAS(options),
                           /*runtimeSymbols=*/{});
}

LogicalResult emitSharedLibrary(ModuleOp module,
                                const CPUCodegenOptions &options,
                                StringRef outputPath, bool withBLAS,
                                ArrayRef<std::string> runtimeSymbols) {
  // NOTE: the LLVM-only steps (target machine, the parallel code
  // generation, lld) have no MLIR context and run on worker threads: they
  // report through llvm::Error, which becomes the module's diagnostic here.
  llvm::Expected<std::unique_ptr<llvm::TargetMachine>> machine =
      createTargetMachine(options);
  if (!machine)
    return fail(module, llvm::toString(machine.takeError()));
  llvm::LLVMContext llvmContext;
  std::optional<TimedPhase> translatePhase;
  translatePhase.emplace("LLVM IR translation");
  FailureOr<std::unique_ptr<llvm::Module>> llvmModule =
      translateToLLVMIR(module, llvmContext, **machine);
  if (failed(llvmModule))
    return failure();
  translatePhase.reset();
  // LLVM -O and instruction selection, split over the cores and cached
  // (ParallelCodegen.cpp).
  std::vector<llvm::SmallVector<char, 0>> objects;
  if (llvm::Error error =
          compileToObjects(std::move(*llvmModule), options, objects))
    return fail(module, llvm::toString(std::move(error)));

  // lld reads its inputs from files: the objects go next to the output,
  // under names no other compile uses.
  std::vector<std::string> objectPaths;
  llvm::scope_exit removeObjects([&] {
    for (const std::string &path : objectPaths)
      llvm::sys::fs::remove(path);
  });
  for (const llvm::SmallVector<char, 0> &object : objects) {
    llvm::SmallString<256> objectPath;
    llvm::SmallString<256> model(outputPath);
    model += ".%%%%%%.o";
    if (std::error_code ec = llvm::sys::fs::createUniqueFile(model, objectPath))
      return fail(module, outputPath +
                              ": cannot create a temporary object file: " +
                              ec.message());
    objectPaths.push_back(std::string(objectPath));
    std::error_code ec;
    llvm::raw_fd_ostream os(objectPath, ec);
    if (!ec) {
      os.write(object.data(), object.size());
      os.close();
      ec = os.error();
    }
    if (ec)
      return fail(module, objectPath + ": " + ec.message());
  }
  TimedPhase linkPhase("link");
  if (llvm::Error error =
          linkSharedLibrary(objectPaths, outputPath, withBLAS, runtimeSymbols,
                            options.linkKernels))
    return fail(module, llvm::toString(std::move(error)));
  return success();
}

} // namespace pipedream::cpu
