//===- pipedream-compile.cpp - ONNX model to a bundle ---------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
//   pipedream-compile MODEL.onnx -o OUT_DIR --inference
//       [--input-shape NAME=DxD ...] [--emit nn|linalg|llvm-dialect|llvm|bundle]
//       [--target cpu] [--target-cpu native|NAME] [-O0..-O3]
//       [--gemm auto|vectorize|blas|loops]
//
// Compiles a model into the bundle of docs/Bundle.md (bundle.json,
// program.so, weights.bin), written atomically into OUT_DIR. With
// `--emit PHASE` other than `bundle` it stops after PHASE and writes that
// phase's IR to the file `-o` names (stdout without -o, or with `-o -`):
//   nn            the imported model (nn dialect)
//   linalg        after convert-nn-to-linalg
//   llvm-dialect  after the CPU lowering (LLVM dialect, with entry wrappers)
//   llvm          optimized LLVM IR, as compiled into program.so
//
// MODEL may also be a `.mlir` file holding an nn- or linalg-level module
// (used by the tests of the code generator).
//
// Only single-rank inference is implemented. The training and pipeline
// flags of the CLI contract (CLI.md: --stages, --schedule, --optimizer...) are
// recognized and refused with a message, never silently ignored. Every
// error is one line on stderr with a non-zero exit status.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Compiler/Bundle.h"
#include "pipedream/Dialect/NN/IR/NNDialect.h"
#include "pipedream/Import/ONNX/ImportONNX.h"
#include "pipedream/InitAllDialects.h"
#include "pipedream/Target/CPU/CPUCodegen.h"

#if PIPEDREAM_HAVE_NN_TO_LINALG
#include "pipedream/Conversion/NNToLinalg/NNToLinalg.h"
#endif

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory category("pipedream-compile options");

static cl::opt<std::string> inputFilename(cl::Positional,
                                          cl::desc("<model.onnx|model.mlir>"),
                                          cl::cat(category));
static cl::opt<std::string>
    outputPath("o",
               cl::desc("Output bundle directory (with --emit PHASE: the "
                        "output file, '-' for stdout)"),
               cl::value_desc("OUT_DIR"), cl::cat(category));
static cl::opt<bool> inference("inference",
                               cl::desc("Forward only, one rank"),
                               cl::cat(category));
static cl::list<std::string>
    inputShapes("input-shape",
                cl::desc("Fix the shape of a graph input: NAME=DxDx... "
                         "(repeatable)"),
                cl::value_desc("NAME=DxD"), cl::cat(category));
static cl::opt<std::string>
    emit("emit",
         cl::desc("Stop after a phase: nn, linalg, llvm-dialect, llvm or "
                  "bundle (default)"),
         cl::value_desc("PHASE"), cl::init("bundle"), cl::cat(category));
static cl::opt<std::string> target("target",
                                   cl::desc("Code generator: cpu (default)"),
                                   cl::init("cpu"), cl::cat(category));
static cl::opt<std::string>
    targetCPU("target-cpu",
              cl::desc("CPU to generate code for: native (default: the "
                       "compiling machine) or an LLVM CPU name"),
              cl::init("native"), cl::cat(category));
static cl::opt<unsigned> optLevel("O",
                                  cl::desc("LLVM optimization level (0-3, "
                                           "default 3)"),
                                  cl::Prefix, cl::init(3), cl::cat(category));
static cl::opt<std::string>
    gemm("gemm",
         cl::desc("GEMM lowering: auto (default: vectorized kernel, else "
                  "OpenBLAS), vectorize (no BLAS), blas, loops"),
         cl::value_desc("MODE"), cl::init("auto"), cl::cat(category));
static cl::opt<bool> noChecker("no-onnx-checker",
                               cl::desc("Do not run the ONNX checker"),
                               cl::cat(category));

// Flags of docs (CLI.md) that later issues implement: parsed so that using
// one is a clear error rather than an unknown-option message.
namespace {
struct PendingFlag {
  const char *name;
  const char *what;
};
} // namespace
static const PendingFlag kPendingFlags[] = {
    {"stages", "pipeline stages"},
    {"virtual-stages", "interleaved pipeline stages"},
    {"schedule", "pipeline schedules"},
    {"microbatches", "micro-batching"},
    {"batch-size", "training batches"},
    {"loss", "training losses"},
    {"labels-name", "training labels"},
    {"optimizer", "optimizers"},
    {"lr", "optimizers"},
    {"momentum", "optimizers"},
    {"weight-decay", "optimizers"},
    {"partition", "stage partitioning"},
    {"split-after", "stage partitioning"},
    {"cost-model", "the stage cost model"},
    {"device", "the stage cost model"},
    {"report-json", "compile reports"},
    {"trace", "schedule traces"},
};
static std::vector<std::unique_ptr<cl::opt<std::string>>> pendingOptions;
static cl::opt<bool> report("report", cl::desc("Not implemented yet"),
                            cl::Hidden, cl::cat(category));

static int fail(const llvm::Twine &message) {
  std::string text = message.str();
  llvm::errs() << "error: " << StringRef(text).split('\n').first << "\n";
  return 1;
}

/// True when `module` still holds nn ops (needs convert-nn-to-linalg).
static bool hasNNOps(ModuleOp module) {
  bool found = false;
  module.walk([&](Operation *op) {
    if (op->getDialect() &&
        op->getDialect()->getNamespace() ==
            pipedream::nn::NNDialect::getDialectNamespace()) {
      found = true;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return found;
}

/// Drops the nn.* argument/result attributes (weight values can be large
/// and mean nothing to the lowering) and the importer's module attributes.
static void stripModelAttributes(ModuleOp module) {
  auto isModelAttr = [](NamedAttribute attr) {
    StringRef name = attr.getName().getValue();
    return name.starts_with("nn.") || name.starts_with("onnx.");
  };
  auto filter = [&](DictionaryAttr dict) {
    SmallVector<NamedAttribute> kept;
    if (dict)
      for (NamedAttribute attr : dict)
        if (!isModelAttr(attr))
          kept.push_back(attr);
    return kept;
  };
  for (auto func : module.getOps<func::FuncOp>()) {
    for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
      func.setArgAttrs(i, filter(func.getArgAttrDict(i)));
    for (unsigned i = 0, e = func.getNumResults(); i < e; ++i)
      func.setResultAttrs(i, filter(func.getResultAttrDict(i)));
  }
  SmallVector<StringAttr> moduleAttrs;
  for (NamedAttribute attr : module->getDiscardableAttrs())
    if (isModelAttr(attr))
      moduleAttrs.push_back(attr.getName());
  for (StringAttr name : moduleAttrs)
    module->removeAttr(name);
}

/// Runs convert-nn-to-linalg on `module`.
static LogicalResult convertNNToLinalg(ModuleOp module, std::string &error) {
#if PIPEDREAM_HAVE_NN_TO_LINALG
  std::string firstError;
  ScopedDiagnosticHandler handler(module.getContext(), [&](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error && firstError.empty()) {
      llvm::raw_string_ostream os(firstError);
      os << diag.getLocation() << ": " << diag.str();
    }
    return success();
  });
  PassManager pm(module.getContext(), ModuleOp::getOperationName());
  if (failed(applyPassManagerCLOptions(pm))) {
    error = "invalid pass manager options";
    return failure();
  }
  pm.addNestedPass<func::FuncOp>(pipedream::createConvertNNToLinalgPass());
  if (succeeded(pm.run(module)))
    return success();
  error = firstError.empty() ? "convert-nn-to-linalg failed" : firstError;
  return failure();
#else
  (void)module;
  error = "this pipedream-compile was built without convert-nn-to-linalg; "
          "it can only compile linalg-level .mlir input";
  return failure();
#endif
}

/// Writes `print` to the file `-o` names (or stdout).
static int writeText(llvm::function_ref<void(llvm::raw_ostream &)> print) {
  std::string error;
  auto output = openOutputFile(outputPath, &error);
  if (!output)
    return fail(outputPath + ": " + error);
  print(output->os());
  output->keep();
  return 0;
}

/// Parses the command line; unknown options and bad values are one-line
/// errors. Returns false when the program should exit with `exitCode`.
static bool parseCommandLine(int argc, char **argv, int &exitCode) {
  for (const PendingFlag &flag : kPendingFlags)
    pendingOptions.push_back(std::make_unique<cl::opt<std::string>>(
        StringRef(flag.name), cl::desc("Not implemented yet"), cl::Hidden,
        cl::cat(category)));
  // Pass names for --mlir-print-ir-after=PASS and friends (before the
  // pass manager options, whose parser lists the registered passes).
  pipedream::cpu::registerCPUCodegenPasses();
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  cl::HideUnrelatedOptions(category);
  std::string errors;
  llvm::raw_string_ostream errorStream(errors);
  bool ok = cl::ParseCommandLineOptions(
      argc, argv,
      "pipedream-compile: ONNX model -> bundle (bundle.json, program.so, "
      "weights.bin)\n",
      &errorStream);
  if (!ok) {
    // cl's messages start with the program name; keep only the message.
    StringRef line = StringRef(errors).split('\n').first;
    if (line.starts_with("pipedream-compile: "))
      line = line.drop_front(strlen("pipedream-compile: "));
    exitCode = fail(line);
    return false;
  }
  return true;
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  int exitCode = 0;
  if (!parseCommandLine(argc, argv, exitCode))
    return exitCode;

  for (auto [flag, option] : llvm::zip(kPendingFlags, pendingOptions))
    if (option->getNumOccurrences())
      return fail(llvm::Twine("--") + flag.name + " is not implemented yet (" +
                  flag.what +
                  " arrive with training); only --inference bundles can be "
                  "compiled");
  if (report.getNumOccurrences())
    return fail("--report is not implemented yet");

  if (inputFilename.empty())
    return fail("no input model (pipedream-compile MODEL.onnx -o OUT_DIR "
                "--inference)");
  if (!inference)
    return fail("training bundles are not implemented yet: pass --inference "
                "for a forward-only, single-rank bundle");
  if (target != "cpu")
    return fail("--target " + target +
                ": only the cpu code generator is implemented");
  enum class Phase { NN, Linalg, LLVMDialect, LLVM, Bundle };
  std::optional<Phase> phase =
      llvm::StringSwitch<std::optional<Phase>>(emit)
          .Case("nn", Phase::NN)
          .Case("linalg", Phase::Linalg)
          .Case("llvm-dialect", Phase::LLVMDialect)
          .Case("llvm", Phase::LLVM)
          .Case("bundle", Phase::Bundle)
          .Default(std::nullopt);
  if (!phase) {
    if (emit == "train" || emit == "partitioned" || emit == "scheduled")
      return fail("--emit " + emit +
                  " is not implemented yet (training arrives in a later "
                  "issue)");
    return fail("--emit " + emit +
                ": expected nn, linalg, llvm-dialect, llvm or bundle");
  }
  if (outputPath.empty()) {
    if (*phase == Phase::Bundle)
      return fail("no output: pass -o OUT_DIR");
    outputPath = "-"; // IR phases print to stdout by default
  } else if (outputPath == "-" && *phase == Phase::Bundle) {
    return fail("-o -: a bundle is a directory; stdout is only for --emit "
                "nn, linalg, llvm-dialect or llvm");
  }
  if (optLevel > 3)
    return fail("-O" + llvm::Twine(optLevel.getValue()) +
                ": the optimization level is 0 to 3");

  pipedream::cpu::CPUCodegenOptions codegen;
  codegen.optLevel = optLevel;
  codegen.cpu = targetCPU;
  std::optional<pipedream::cpu::GemmLowering> gemmLowering =
      pipedream::cpu::parseGemmLowering(gemm);
  if (!gemmLowering)
    return fail("--gemm " + gemm + ": expected auto, vectorize, blas or loops");
  codegen.gemm = *gemmLowering;
  if (codegen.gemm == pipedream::cpu::GemmLowering::BLAS &&
      !pipedream::cpu::isBLASAvailable())
    return fail("--gemm blas: this pipedream was built without OpenBLAS "
                "(install libopenblas-dev and rebuild)");

  // Check the target before the (longer) import: a bad --target-cpu fails
  // fast.
  {
    std::string error;
    if (failed(pipedream::cpu::createTargetMachine(codegen, error)))
      return fail(error);
  }

  pipedream::ImportOptions importOptions;
  importOptions.runChecker = !noChecker;
  for (const std::string &shape : inputShapes) {
    std::string error;
    if (!pipedream::parseInputShapeOption(shape, importOptions, error))
      return fail(error);
  }

  DialectRegistry registry;
  pipedream::registerAllDialects(registry);
  pipedream::registerONNXImportDialects(registry);
  pipedream::cpu::registerCPUCodegenDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();

  // Import.
  OwningOpRef<ModuleOp> module;
  std::string modelName = llvm::sys::path::filename(inputFilename).str();
  if (StringRef(inputFilename).ends_with(".mlir")) {
    if (!inputShapes.empty())
      return fail("--input-shape applies to ONNX models, not .mlir input");
    std::string firstError;
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
      if (diag.getSeverity() == DiagnosticSeverity::Error &&
          firstError.empty()) {
        llvm::raw_string_ostream os(firstError);
        os << diag.getLocation() << ": " << diag.str();
      }
      return success();
    });
    llvm::SourceMgr sourceMgr;
    std::string openError;
    auto file = openInputFile(inputFilename, &openError);
    if (!file)
      return fail(inputFilename + ": " + openError);
    sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
    module = parseSourceFile<ModuleOp>(sourceMgr, &context);
    if (!module)
      return fail(firstError.empty() ? inputFilename + ": cannot parse"
                                     : firstError);
  } else {
    std::string error;
    auto imported = pipedream::importONNXFile(inputFilename, context,
                                              importOptions, error);
    if (failed(imported))
      return fail(error);
    module = std::move(*imported);
  }
  if (*phase == Phase::NN)
    return writeText([&](llvm::raw_ostream &os) { (*module)->print(os); });

  // The manifest comes from the model-level signatures.
  pipedream::Bundle bundle;
  {
    std::string error;
    if (failed(pipedream::collectBundle(*module, modelName, "inference",
                                        codegen.symbolPrefix, bundle, error)))
      return fail(modelName + ": " + error);
  }

  if (hasNNOps(*module)) {
    std::string error;
    if (failed(convertNNToLinalg(*module, error)))
      return fail(modelName + ": " + error);
  }
  // The linalg module keeps nn.name/nn.param: compiling it again gives the
  // same bundle.
  if (*phase == Phase::Linalg)
    return writeText([&](llvm::raw_ostream &os) { (*module)->print(os); });
  stripModelAttributes(*module);

  if (*phase == Phase::LLVMDialect || *phase == Phase::LLVM) {
    std::string error;
    if (failed(pipedream::cpu::lowerToLLVMDialect(*module, codegen, error)))
      return fail(modelName + ": " + error);
    if (*phase == Phase::LLVMDialect)
      return writeText([&](llvm::raw_ostream &os) { (*module)->print(os); });
    auto machine = pipedream::cpu::createTargetMachine(codegen, error);
    if (failed(machine))
      return fail(error);
    llvm::LLVMContext llvmContext;
    auto llvmModule = pipedream::cpu::translateToLLVMIR(*module, llvmContext,
                                                        **machine, error);
    if (failed(llvmModule))
      return fail(modelName + ": " + error);
    pipedream::cpu::optimizeLLVMModule(**llvmModule, **machine,
                                       codegen.optLevel);
    return writeText([&](llvm::raw_ostream &os) { (*llvmModule)->print(os, nullptr); });
  }

  std::string error;
  if (failed(pipedream::writeBundle(
          bundle, outputPath,
          [&](StringRef libraryPath, std::string &libraryError) {
            return pipedream::cpu::compileToSharedLibrary(
                *module, codegen, libraryPath, libraryError);
          },
          error)))
    return fail(modelName + ": " + error);
  return 0;
}
