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
#include <cstdlib>
#include <memory>

namespace {

/// Inputs one context serves before a fresh one replaces it. Creating a
/// context and loading the nn dialect (registering its ~100 ops) cost
/// more than most imports (perf, under ASan: most of the target's time
/// went to the allocations of dialect loading); reusing one for a bounded
/// number of inputs keeps the memory that uniqued types and attributes
/// accumulate bounded. PIPEDREAM_FUZZ_CONTEXT_REUSE=1 gives every input a
/// fresh context (what a replay of one input, e.g. a crash artifact or
/// the CTest replay, gets anyway: its first input always has one).
unsigned contextReuse() {
  static unsigned reuse = [] {
    const char *text = std::getenv("PIPEDREAM_FUZZ_CONTEXT_REUSE");
    long value = text ? std::strtol(text, nullptr, 10) : 0;
    return value > 0 ? static_cast<unsigned>(value) : 256u;
  }();
  return reuse;
}

mlir::MLIRContext &context() {
  static std::unique_ptr<mlir::MLIRContext> context;
  static unsigned uses = 0;
  if (!context || uses++ >= contextReuse()) {
    context.reset();
    mlir::DialectRegistry registry;
    pipedream::registerONNXImportDialects(registry);
    context = std::make_unique<mlir::MLIRContext>(
        registry, mlir::MLIRContext::Threading::DISABLED);
    context->loadAllAvailableDialects();
    uses = 1;
  }
  return *context;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlir::MLIRContext &ctx = context();
  // Diagnostics are expected for most inputs; keep them off stderr. The
  // importer passes one error, its first, on to this handler.
  std::string error;
  mlir::ScopedDiagnosticHandler capture(&ctx, [&](mlir::Diagnostic &d) {
    if (d.getSeverity() == mlir::DiagnosticSeverity::Error)
      error = d.str();
    return mlir::success();
  });
  pipedream::ImportOptions options;
  // No file system access from fuzzed input.
  options.allowExternalData = false;
  auto module = pipedream::importONNXBuffer(
      llvm::StringRef(reinterpret_cast<const char *>(data), size), "fuzz.onnx",
      /*baseDir=*/"", ctx, options);
  // A failure is one line naming the model (ImportONNX.h).
  if (mlir::failed(module))
    pipedream::fuzz::checkError(error, "fuzz.onnx");
  return 0;
}
