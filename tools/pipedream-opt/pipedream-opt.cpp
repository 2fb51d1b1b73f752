//===- pipedream-opt.cpp - pass driver for pipedream ----------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// MlirOptMain with every upstream dialect and pass plus pipedream's, and
// the phase pipelines of pipedream-compile (lib/Pipelines): the tool for
// pass development and lit tests. An ONNX model (a `.onnx` file, or any
// input that starts like a ModelProto) is imported first, so
//
//   pipedream-opt model.onnx --pipedream-training-pipeline="stages=2
//       schedule=1f1b microbatches=4 loss=cross-entropy"
//
// prints the verified per-rank programs pipedream-compile --emit scheduled
// prints. An import error is the importer's one-line message.
//
//===----------------------------------------------------------------------===//

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include "pipedream/Import/ONNX/ImportONNX.h"
#include "pipedream/InitAllDialects.h"
#include "pipedream/InitAllPasses.h"
#include "pipedream/Pipelines/Pipelines.h"
#include "pipedream/Support/Diagnostics.h"
#include "pipedream/Target/GPU/CUDACodegen.h"

using namespace mlir;

/// Whether `file` holds an ONNX model rather than MLIR: by extension, else
/// by content (a ModelProto starts with field 1, `ir_version`, a varint:
/// byte 0x08; MLIR text never does and MLIR bytecode starts with "ML\xefR").
static bool isONNXModel(StringRef filename, const llvm::MemoryBuffer &file) {
  if (filename.ends_with(".onnx"))
    return true;
  StringRef bytes = file.getBuffer();
  return !bytes.empty() && bytes[0] == '\x08';
}

/// The ONNX model in `file` imported and printed (with its locations, the
/// ONNX node names) as the text MlirOptMain parses.
static std::unique_ptr<llvm::MemoryBuffer>
importONNX(StringRef filename, const llvm::MemoryBuffer &file,
           DialectRegistry &registry) {
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  pipedream::FirstErrorHandler firstError(&context);
  pipedream::ImportOptions options;
  StringRef baseDir =
      filename == "-" ? StringRef() : llvm::sys::path::parent_path(filename);
  auto module = pipedream::importONNXBuffer(file.getBuffer(), filename,
                                            baseDir.empty() ? "." : baseDir,
                                            context, options);
  if (failed(module)) {
    pipedream::printError(firstError.orElse(filename + ": import failed"));
    return nullptr;
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  (**module)->print(os, OpPrintingFlags().enableDebugInfo());
  return llvm::MemoryBuffer::getMemBufferCopy(text, filename);
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  registerAllPasses();
  pipedream::registerAllPasses();
  pipedream::registerPipedreamPipelines();

  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  pipedream::registerAllDialects(registry);
  pipedream::registerONNXImportDialects(registry);
  // GPU dialect translations and the NVVM target (gpu-module-to-binary).
  pipedream::cuda::registerCUDACodegenDialects(registry);

  auto [inputFilename, outputFilename] = registerAndParseCLIOptions(
      argc, argv, "pipedream optimizer driver\n", registry);
  MlirOptMainConfig config = MlirOptMainConfig::createFromCLOptions();

  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> file =
      openInputFile(inputFilename, &error);
  if (!file)
    return pipedream::printError(error);
  if (isONNXModel(inputFilename, *file)) {
    file = importONNX(inputFilename, *file, registry);
    if (!file)
      return 1;
  }
  auto output = openOutputFile(outputFilename, &error);
  if (!output)
    return pipedream::printError(error);
  if (failed(MlirOptMain(output->os(), std::move(file), registry, config)))
    return 1;
  output->keep();
  return 0;
}
