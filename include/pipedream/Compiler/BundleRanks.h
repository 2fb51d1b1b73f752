//===- BundleRanks.h - per-rank programs of a pipeline bundle ---*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Serializes the per-rank `pipe.program`s of `pipe-project-ranks` into the
// `ranks` array of a pipeline bundle's `pipeline` section (docs/Bundle.md,
// "Pipeline bundles"), and lowers them to the native entries
// `pipeline_rank<r>` of program.so ("Native rank entries"). Both read one
// plan (pipedream/Dialect/Pipe/Transforms/RankPrograms.h): registers with
// liveness reuse, stash/restore pairs as one value kept live in its
// register, program inputs loaded before first use.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_COMPILER_BUNDLERANKS_H
#define PIPEDREAM_COMPILER_BUNDLERANKS_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/Support/JSON.h"

#include <string>

namespace pipedream {

/// The `ranks` array for the per-rank programs (`pipe.program ... rank r`)
/// of `module`, one entry per rank in rank order. Fails with an error
/// diagnostic on ops it cannot serialize.
mlir::FailureOr<llvm::json::Array> serializeRankPrograms(mlir::ModuleOp module);

/// Replaces the per-rank programs of `module` by their native entries
/// (`pipe-lower-rank-programs`; calling the stage entry wrappers
/// `<symbolPrefix><stage function>`) and names each entry in `ranks` (the
/// array serializeRankPrograms returned for the same module): `entry` and
/// `entry_abi`; erases every `pipe.program` (as eraseProgramOps). Call it
/// after serializeRankPrograms, before code generation. Fails with an error
/// diagnostic.
mlir::LogicalResult lowerRankProgramsToNative(mlir::ModuleOp module,
                                              llvm::json::Array &ranks,
                                              llvm::StringRef symbolPrefix);

/// The per-rank evaluation programs (docs/Bundle.md "Evaluation in
/// pipelines") of the `@stage<v>_E` functions of `module`
/// (pipe-build-stage-training `evaluate`), as `eval` of each entry of
/// `ranks`: one micro-batch's eval-mode forward through the stages in order,
/// each message received right after it is sent in that one global order,
/// the loss on the last stage's rank. Adds nothing when the module has no
/// such function. Fails with an error diagnostic.
mlir::LogicalResult addEvalPrograms(mlir::ModuleOp module,
                                    llvm::json::Array &ranks);

/// Erases every `pipe.program` of `module` (before code generation).
void eraseProgramOps(mlir::ModuleOp module);

} // namespace pipedream

#endif // PIPEDREAM_COMPILER_BUNDLERANKS_H
