//===- Workspace.h - the temporaries a CPU program keeps --------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The stage functions' own temporaries, for report.json's `rank_memory`
// (docs/Bundle.md): after cpu-cache-allocations every `malloc` call site of
// program.so keeps its last freed block for its next call (Passes.td), so
// after one step a rank holds one block per allocation site its functions
// reach, up to the module's `max-cached-bytes` of parked blocks plus what
// one call has live. This reads the site sizes off the LLVM dialect module
// (constant sizes: `llvm.mlir.constant`, `add`, `sub`, `mul`, the
// `ptrtoint (getelementptr null[n])` of the memref lowering, and values
// cpu-split-large-functions passes between its parts through a frame slot,
// read from the store of the latest part before the load); sites of
// dynamic size are counted apart.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_TARGET_CPU_WORKSPACE_H
#define PIPEDREAM_TARGET_CPU_WORKSPACE_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>

namespace pipedream::cpu {

struct WorkspaceEstimate {
  /// Bytes of the constant-size allocation sites reachable from the roots
  /// (each site once), bounded by `cachedCap` + the largest root's own.
  int64_t bytes = 0;
  /// Allocation sites whose size is not a constant (not in `bytes`).
  int64_t dynamicSites = 0;
};

/// The workspace of the functions `roots` (llvm.func symbols; missing ones
/// are skipped) and everything they call directly in `module` (LLVM
/// dialect, after the CPU lowering). `cachedCap`: cpu-cache-allocations'
/// max-cached-bytes.
WorkspaceEstimate estimateWorkspace(mlir::ModuleOp module,
                                    llvm::ArrayRef<std::string> roots,
                                    int64_t cachedCap = int64_t(1) << 30);

} // namespace pipedream::cpu

#endif // PIPEDREAM_TARGET_CPU_WORKSPACE_H
