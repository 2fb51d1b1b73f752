//===- import-onnx-fuzzer.cpp - libFuzzer target for the ONNX importer ----===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Feeds arbitrary bytes to importONNXBuffer. The importer promises one-line
// errors and no crash, assert, hang or leak on any input; this target, built
// with -fsanitize=fuzzer,address,undefined, is how that promise is checked.
// Build and run it with scripts/fuzz.sh import-onnx.
//
//===----------------------------------------------------------------------===//

#include "FuzzCheck.h"

#include "pipedream/Import/ONNX/ImportONNX.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // One context per input: a crash must reproduce from its input alone.
  mlir::DialectRegistry registry;
  pipedream::registerONNXImportDialects(registry);
  mlir::MLIRContext context(registry, mlir::MLIRContext::Threading::DISABLED);
  context.loadAllAvailableDialects();
  // Diagnostics are expected for most inputs; keep them off stderr.
  mlir::ScopedDiagnosticHandler silence(&context,
                                        [](mlir::Diagnostic &) {
                                          return mlir::success();
                                        });
  pipedream::ImportOptions options;
  // No file system access from fuzzed input.
  options.allowExternalData = false;
  std::string error;
  auto module = pipedream::importONNXBuffer(
      llvm::StringRef(reinterpret_cast<const char *>(data), size),
      "fuzz.onnx", /*baseDir=*/"", context, options, error);
  // A failure is one line naming the model (ImportONNX.h).
  if (mlir::failed(module))
    pipedream::fuzz::checkError(error, "fuzz.onnx");
  return 0;
}
