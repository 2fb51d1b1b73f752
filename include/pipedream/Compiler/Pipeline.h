//===- Pipeline.h - per-rank programs of a pipeline bundle -------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Serializes the per-rank `pipe.program`s of `pipe-project-ranks` into the
// `ranks` array of a pipeline bundle's `pipeline` section (docs/Bundle.md,
// "Pipeline bundles"): each SSA value becomes a register, registers are
// reused once their value is dead (a liveness scan over the straight-line
// program), stash/restore pairs become one value kept live in its register,
// and program inputs become `input` instructions placed before first use.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_COMPILER_PIPELINE_H
#define PIPEDREAM_COMPILER_PIPELINE_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/Support/JSON.h"

#include <string>

namespace pipedream {

/// The `ranks` array for the per-rank programs (`pipe.program ... rank r`)
/// of `module`, one entry per rank in rank order. Fails with a one-line
/// `error` on ops it cannot serialize.
mlir::FailureOr<llvm::json::Array> serializeRankPrograms(mlir::ModuleOp module,
                                                         std::string &error);

/// Erases every `pipe.program` of `module` (before code generation).
void eraseProgramOps(mlir::ModuleOp module);

} // namespace pipedream

#endif // PIPEDREAM_COMPILER_PIPELINE_H
