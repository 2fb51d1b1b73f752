//===- Bundle.h - the compiled bundle: manifest and weights -----*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Builds and writes the bundle of docs/Bundle.md: `bundle.json` (functions,
// their buffers in ABI order, weights), `weights.bin` (initial weight values
// taken from the `nn.param` argument attributes, 64-byte aligned) and the
// shared library the CPU code generator produces.
//
// The manifest is read off the entry functions *before* lowering: their
// arguments (graph inputs and weights) and results (graph outputs) with
// `nn.name` / `nn.param`. After bufferization the results become trailing
// out-parameters, which is the manifest's buffer order.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_COMPILER_BUNDLE_H
#define PIPEDREAM_COMPILER_BUNDLE_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>
#include <vector>

namespace pipedream {

/// Alignment of every weight in weights.bin, in bytes.
inline constexpr uint64_t kBundleWeightAlignment = 64;

/// One buffer of a function's ABI.
struct BundleBuffer {
  std::string name;
  /// "input", "weight", "output", "grad" or "state" (docs/Bundle.md).
  std::string role;
  /// For an output: the persistent buffer it replaces after each call.
  std::string updates;
  /// f32 f64 f16 bf16 i64 i32 i8 i1 u8.
  std::string dtype;
  llvm::SmallVector<int64_t> shape;
};

/// One weight stored in weights.bin.
struct BundleWeight {
  std::string name;
  std::string dtype;
  llvm::SmallVector<int64_t> shape;
  uint64_t offset = 0;
  uint64_t bytes = 0;
};

/// One exported function.
struct BundleFunction {
  std::string name;
  std::string symbol;
  /// "inference" (training adds forward, backward, update...).
  std::string kind;
  std::vector<BundleBuffer> buffers;
};

/// One entry of bundle.json `data_index_checks`: a data input whose values
/// an op indexes with (docs/Bundle.md "Run-time checks"; cuda bundles).
struct BundleDataIndexCheck {
  std::string input;
  int64_t lower = 0;
  int64_t upper = 0;
  std::string node;
  std::string opType;
};

/// Everything bundle.json says, plus the weight bytes.
struct Bundle {
  std::string model;
  /// Code generator of program.so: "cpu" or "cuda" (docs/GPU.md).
  std::string target = "cpu";
  /// GPU architecture of a "cuda" bundle ("sm_90"); empty for "cpu".
  std::string gpuArch;
  std::string library = "program.so";
  std::string weightsFile = "weights.bin";
  std::vector<BundleWeight> weights;
  std::vector<BundleFunction> functions;
  /// The contents of weights.bin.
  std::vector<char> weightData;
  /// The `training` object of bundle.json (rendered JSON), empty if none.
  std::string trainingJSON;
  /// The `pipeline` object of bundle.json (rendered JSON), empty if none.
  std::string pipelineJSON;
  /// `data_index_checks` (written when not empty).
  std::vector<BundleDataIndexCheck> dataIndexChecks;
  /// Files copied into the bundle: (name in the bundle, source path).
  std::vector<std::pair<std::string, std::string>> copiedFiles;
};

/// The manifest dtype of `type` ("f32", ...), or "" when the bundle format
/// cannot hold it.
std::string getBundleDType(mlir::Type type);

/// Builds the bundle description of `module` (before lowering): one
/// function of `kind` (empty: the function's own name) per public
/// `func.func`, in module order, named after it, exported as
/// `symbolPrefix + name`. Argument roles come from `nn.role` when present
/// (else `weight` for `nn.param` arguments, `input` otherwise); outputs take
/// `updates` from `nn.updates`. Weights (arguments with `nn.param`)
/// are deduplicated by name across functions. Fails with a one-line `error`
/// on types the bundle cannot hold or unreadable weight values.
mlir::LogicalResult collectBundle(mlir::ModuleOp module, llvm::StringRef model,
                                  llvm::StringRef kind,
                                  llvm::StringRef symbolPrefix, Bundle &bundle,
                                  std::string &error);

/// The `nn.check_index_range` ops of `module` (after convert-nn-to-linalg,
/// before the code generator lowers them) whose indices are one of the data
/// inputs `dataNames` itself (the check's `input`), as `data_index_checks`
/// entries, one per (input, bounds, node, op) in module order. The runtime
/// checks those inputs on the host for cuda bundles, whose device code
/// cannot report (docs/Bundle.md "Run-time checks").
std::vector<BundleDataIndexCheck>
collectDataIndexChecks(mlir::ModuleOp module,
                       llvm::ArrayRef<std::string> dataNames);

/// bundle.json for `bundle`, pretty-printed.
std::string renderBundleManifest(const Bundle &bundle);

/// Writes `bundle` into the directory `outputDir` atomically: the files are
/// assembled in a fresh temporary directory next to `outputDir` (the shared
/// library by `writeLibrary(path)`), then renamed into place. A missing
/// `outputDir` is replaced by the temporary directory in one rename; an
/// existing one receives the files one rename each, bundle.json last, and
/// keeps its other files.
mlir::LogicalResult
writeBundle(const Bundle &bundle, llvm::StringRef outputDir,
            llvm::function_ref<mlir::LogicalResult(llvm::StringRef path,
                                                   std::string &error)>
                writeLibrary,
            std::string &error);

} // namespace pipedream

#endif // PIPEDREAM_COMPILER_BUNDLE_H
