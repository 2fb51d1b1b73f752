//===- ReplicaLayout.h - ranks of replicated stages --------------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Replicated stages (docs/Bundle.md "Replicated stages"): which world rank
// is which pipeline rank and replica, for bundle.json and the report, and
// the memory each world rank's runtime allocates (with sharded optimizer
// state a replica binds only its shard's).
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_COMPILER_REPLICALAYOUT_H
#define PIPEDREAM_COMPILER_REPLICALAYOUT_H

#include "pipedream/Compiler/Bundle.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

namespace pipedream {

/// `rank_layout`: {"rank": w, "pipeline_rank": w % K, "replica": w / K}
/// for the K*R world ranks.
llvm::json::Array rankLayoutJSON(int64_t pipelineRanks, int64_t replicas);

/// `rank_memory` of the K*R world ranks: rankMemoryJSON of each replica's
/// view of the programs `ranks` (calls of other replicas dropped), with
/// `pipeline_rank` and `replica` added.
llvm::json::Array replicatedRankMemoryJSON(const Bundle &bundle,
                                           const llvm::json::Array &ranks,
                                           int64_t replicas);

/// The report's rank layout and memory per rank (`memory`: the
/// replicatedRankMemoryJSON).
void printRankLayout(int64_t pipelineRanks, int64_t replicas,
                     bool shardOptimizer, const llvm::json::Array &memory,
                     llvm::raw_ostream &os);

/// --ranks N: the plans pipe-partition's planner compared (pipe.partition
/// `plans`), as report lines ("plan: K stages, replicas [...], slowest
/// ...") and JSON.
void printReplicationPlans(mlir::ModuleOp module, llvm::raw_ostream &os);
llvm::json::Array replicationPlansJSON(mlir::ModuleOp module);

} // namespace pipedream

#endif // PIPEDREAM_COMPILER_REPLICALAYOUT_H
