//===- ImportONNX.h - ONNX model to nn dialect ------------------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The ONNX importer: reads an ONNX ModelProto (file or bytes) and builds one
// `func.func @main` in the `nn` dialect whose arguments are the graph inputs
// followed by the weights. Every tensor is statically shaped: shape
// computations (Shape, Gather, Concat, Range, ...) are evaluated at import.
// See docs/Importer.md for the supported ops and the folding rules.
//
// An import reports its first error as one error diagnostic (unknown
// location) whose one-line message starts with the model name, e.g.
// `model.onnx: node 'n0' (op 'Foo', opset 17): not supported`. The
// importer never aborts on malformed input: every entry point is safe to call
// on arbitrary bytes.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_IMPORT_ONNX_IMPORTONNX_H
#define PIPEDREAM_IMPORT_ONNX_IMPORTONNX_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace mlir {
class DialectRegistry;
class MLIRContext;
} // namespace mlir

namespace pipedream {

/// Options of one import.
struct ImportOptions {
  /// Full shapes for graph inputs, by ONNX name (`--input-shape x=2x16`).
  /// They fix dynamic (`dim_param` / unknown) dimensions; a static dimension
  /// of the model must agree with the given one, except the batch
  /// (dimension 0), which is re-specialized (docs/Importer.md "Static
  /// batch").
  llvm::StringMap<llvm::SmallVector<int64_t>> inputShapes;
  /// When positive, the size of the first (batch) dimension of every graph
  /// input not in `inputShapes` (pipedream-compile --batch-size / M): it
  /// fixes a dynamic first dimension; a static one is re-specialized.
  int64_t batchSize = 0;
  /// Run the ONNX checker on the model (only for the IR versions and opsets
  /// the linked ONNX library knows; see docs/Importer.md).
  bool runChecker = true;
  /// Allow reading external tensor data files (`data_location: EXTERNAL`)
  /// relative to the model's directory.
  bool allowExternalData = true;
};

/// Module attributes the importer sets on the result, for tools that report
/// on the model (`pipedream-translate --summary`, pipedream-compile).
namespace import_attrs {
/// Model file name as given to the importer (string).
inline constexpr llvm::StringLiteral kModel = "onnx.model";
/// `producer_name producer_version` of the ModelProto (string).
inline constexpr llvm::StringLiteral kProducer = "onnx.producer";
/// Opset version of the default ONNX domain (i64).
inline constexpr llvm::StringLiteral kOpset = "onnx.opset";
/// Set when the import re-specialized a static batch: what it did, in one
/// line ("static batch 2 re-specialized to micro-batch 1 (3 Reshape targets
/// rewritten)"); tools print it as a note.
inline constexpr llvm::StringLiteral kBatchRespecialized =
    "onnx.batch_respecialized";
/// Names of the integer and bool initializers, which the importer makes
/// constants (array of strings; absent when there are none).
inline constexpr llvm::StringLiteral kConstantInitializers =
    "onnx.constant_initializers";
} // namespace import_attrs

/// Adds the dialects an imported module uses (nn, func) to `registry`.
void registerONNXImportDialects(mlir::DialectRegistry &registry);

/// Imports the ONNX model at `path`. External data files are resolved
/// relative to the model's directory. On failure emits one error on
/// `context` at an unknown location, a one-line message starting with
/// `path` (FirstErrorHandler prints it), and returns failure().
mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>>
importONNXFile(llvm::StringRef path, mlir::MLIRContext &context,
               const ImportOptions &options);

/// Imports a serialized ONNX ModelProto held in `bytes`. `modelName` names the
/// model in messages and locations; `baseDir` is where external data files
/// are looked up (empty: external data is an error). Safe on arbitrary bytes:
/// never crashes, asserts or hangs, and bounds the memory folding may use.
/// Errors as importONNXFile's, starting with `modelName`.
mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>>
importONNXBuffer(llvm::StringRef bytes, llvm::StringRef modelName,
                 llvm::StringRef baseDir, mlir::MLIRContext &context,
                 const ImportOptions &options);

/// Prints the import's note (import_attrs::kBatchRespecialized) on `module`
/// to stderr as `note: PATH: ...`, where `path` is the model the tool
/// imported; nothing when the import left none.
void printImportNote(mlir::ModuleOp module, llvm::StringRef path);

/// Parses a `--input-shape` value `NAME=DxDx...` (a scalar is `NAME=`) into
/// `options`. Fails with one error on `context` (unknown location) when
/// malformed.
mlir::LogicalResult parseInputShapeOption(mlir::MLIRContext &context,
                                          llvm::StringRef text,
                                          ImportOptions &options);

} // namespace pipedream

#endif // PIPEDREAM_IMPORT_ONNX_IMPORTONNX_H
