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
#include "llvm/Support/JSON.h"

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
  /// For an output with `updates`: the function also takes that buffer
  /// (as a weight, grad or state argument), so the CPU code generator
  /// computes the new value in its buffer (cpu-in-place-updates) and the
  /// manifest says `"in_place": true` (not for cuda bundles, which swap).
  bool inPlace = false;
  /// For a weight the function reads as the B operand of a GEMM
  /// (nn.matmul, nn.gemm; directly or through nn.transpose / nn.reshape),
  /// the orientations it is read in (bit 0: as stored, bit 1: transposed):
  /// the CPU GEMM packs such a weight once per step per orientation and
  /// keeps the copies (pipedream_cpu_gemm_constants), which report.json's
  /// `rank_memory` counts as `packed_weight_bytes`.
  unsigned gemmOrientations = 0;
  /// f32 f64 f16 bf16 i64 i32 i8 i1 u8.
  std::string dtype;
  llvm::SmallVector<int64_t> shape;
};

/// One weight stored in weights.bin (or, in a pipeline bundle with rank
/// weight files, in the file of the first rank that holds it).
struct BundleWeight {
  std::string name;
  std::string dtype;
  llvm::SmallVector<int64_t> shape;
  /// The file holding it: empty for Bundle::weightsFile.
  std::string file;
  uint64_t offset = 0;
  uint64_t bytes = 0;
  /// The value: a view of the `nn.param` resource blob (owned by the
  /// module's MLIRContext, which must outlive writeBundle: large weights are
  /// never copied), else `ownedData`.
  llvm::ArrayRef<char> view;
  std::vector<char> ownedData;
  llvm::ArrayRef<char> getData() const {
    return view.data() ? view : llvm::ArrayRef<char>(ownedData);
  }
};

/// The weights one rank of a pipeline bundle holds, in their own file
/// (docs/Bundle.md "Rank weight files"): (index into Bundle::weights,
/// offset in `file`).
struct BundleRankWeights {
  std::string file;
  std::vector<std::pair<size_t, uint64_t>> weights;
  uint64_t fileBytes = 0;
  /// A linked weight file (docs/Bundle.md "Linked weight files"): `file` is
  /// a hard link of (or, across file systems, a copy of) this file of the
  /// model, whose size was `fileBytes` and modification time `mtimeNs` when
  /// it was imported; the offsets are the model's. Empty: `file` is written.
  std::string linkedFrom;
  int64_t mtimeNs = 0;
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
  /// The size of weights.bin (the weights whose `file` is empty, each at
  /// its offset, zero padding between).
  uint64_t weightFileBytes = 0;
  /// Per-rank weight files (pipeline bundles; bundle version 3), empty if
  /// none.
  std::vector<BundleRankWeights> rankWeights;
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
/// are deduplicated by name across functions. Fails with an error
/// diagnostic on types the bundle cannot hold or unreadable weight values.
mlir::LogicalResult collectBundle(mlir::ModuleOp module, llvm::StringRef model,
                                  llvm::StringRef kind,
                                  llvm::StringRef symbolPrefix, Bundle &bundle);

/// Gives each rank of a pipeline bundle its own weight file
/// `weights.rank<r>.bin` holding the weights its program's functions bind
/// (a weight shared by several ranks is in each of their files), records
/// it in the rank objects of `ranks` (`weights_file`, `weights`: name and
/// offset, docs/Bundle.md) and points each weight's bundle entry at its
/// first holder's file. weights.bin keeps only the weights no rank holds.
/// With `linkExternal`, a rank whose weights are all unchanged views of
/// one file of the model (ONNX external data at 64-byte aligned offsets,
/// pipedream/Support/MappedFiles.h) gets that file linked into the bundle
/// instead (`external.<name>`, shared by such ranks): nothing is written,
/// and the rank reads its weights from the model's offsets.
/// Fails with an error diagnostic (in `context`) on a malformed `ranks`
/// array.
mlir::LogicalResult assignRankWeightFiles(mlir::MLIRContext *context,
                                          Bundle &bundle,
                                          llvm::json::Array &ranks,
                                          bool linkExternal = false);

/// What the runtime allocates for each rank of a pipeline bundle
/// (`ranks` as serializeRankPrograms made them): the weights, gradient
/// accumulators and optimizer state its functions bind, the output buffers
/// that replace them after each call (`updates`: one per output of each
/// function the rank calls), and its registers (values and stash slots).
/// One object per rank with those byte counts and their sum
/// (`total_bytes`), for report.json's `rank_memory`. The stage functions'
/// own temporaries (workspace) and weight versions of asynchronous
/// schedules are not included.
llvm::json::Array rankMemoryJSON(const Bundle &bundle,
                                 const llvm::json::Array &ranks);
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
/// keeps its other files. Errors are diagnostics in `context` (the ones of
/// `writeLibrary` too).
mlir::LogicalResult writeBundle(
    mlir::MLIRContext *context, const Bundle &bundle, llvm::StringRef outputDir,
    llvm::function_ref<mlir::LogicalResult(llvm::StringRef path)> writeLibrary);

} // namespace pipedream

#endif // PIPEDREAM_COMPILER_BUNDLE_H
