//===- pipedream-compile.cpp - ONNX model to a bundle ---------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
//   pipedream-compile MODEL.onnx -o OUT_DIR
//       (--inference | --loss KIND [training flags])
//       [--stages K --schedule KIND ... (a pipeline bundle)]
//       [--emit nn|train|partitioned|scheduled|linalg|llvm-dialect|llvm|bundle]
//       [--target cpu|cuda] [--target-cpu native|NAME] [-O0..-O3] ...
//
// Compiles a model into the bundle of docs/Bundle.md (bundle.json,
// program.so, weights.bin), written atomically into OUT_DIR: an inference
// bundle, a single-rank training bundle or a pipeline bundle. With
// `--emit PHASE` other than `bundle` it stops after PHASE and writes that
// phase's IR to the file `-o` names (stdout without -o, or with `-o -`).
// docs/CLI.md is the contract of every flag. MODEL may also be a `.mlir`
// file holding an nn- or linalg-level module.
//
// This file is the command line only: the flags are
// pipedream/Pipelines/CommandLine.h's, the compiler is pipedream::compile
// (lib/Driver). Every error is one line on stderr with a non-zero exit
// status.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Driver/Driver.h"
#include "pipedream/Pipelines/CommandLine.h"
#include "pipedream/Support/Diagnostics.h"

#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
namespace cl = llvm::cl;

static int fail(const llvm::Twine &message) {
  return pipedream::printError(message);
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  cl::OptionCategory category("pipedream-compile options");
  pipedream::CompileFlags flags(category);
  if (!pipedream::parseCompilerCommandLine(
          argc, argv, category,
          "pipedream-compile: ONNX model -> bundle (bundle.json, "
          "program.so, weights.bin)\n"))
    return 1;

  const pipedream::CompileOptions options = flags.read();
  pipedream::CompileResult result = pipedream::compile(options);
  if (!result.succeeded())
    return fail(result.error);
  // IR phases print to stdout by default; the report goes to stderr when
  // the IR goes to stdout.
  std::string outputFile = options.output.empty() ? "-" : options.output;
  if (!result.reportText.empty()) {
    bool irToStdout = options.output.empty() || options.output == "-";
    llvm::raw_ostream &os = irToStdout ? llvm::errs() : llvm::outs();
    os << result.reportText;
  }
  if (!result.hasIR)
    return 0;
  std::string error;
  auto output = openOutputFile(outputFile, &error);
  if (!output)
    return fail(outputFile + ": " + error);
  output->os() << result.ir;
  output->keep();
  return 0;
}
