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

#include <optional>
#include <string>
#include <utility>
#include <vector>

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

/// Non-uniform replication (PipeDream's 1F1B-RR, docs/Bundle.md "Routed
/// replicas"): stage s on stageReplicas[s] replicas. World ranks are
/// numbered replica-major, as for K x R: replica 0 of every stage, then
/// replica 1 of the stages that have one, ... `routedLayout()[w]` is
/// {stage, replica} of world rank w.
std::vector<std::pair<int64_t, int64_t>>
routedLayout(llvm::ArrayRef<int64_t> stageReplicas);

/// `rank_layout` of routedLayout: {"rank", "pipeline_rank", "replica"}.
llvm::json::Array routedRankLayoutJSON(llvm::ArrayRef<int64_t> stageReplicas);

/// The K pipeline ranks' programs `ranks` (bundle.json pipeline.ranks over
/// all M micro-batches, from pipe-project-ranks) split into one program
/// per world rank: replica j of stage s keeps the instructions of the
/// micro-batches m with m mod R_s = j (an input, call or loss names its
/// micro-batch; a send that of the value it sends, a receive that of the
/// value's first reader) and every update; a send or receive goes to the
/// peer stage's replica of the message's micro-batch. Tags stay: a world
/// pair's messages are a subsequence of its stages' pair, in order on both
/// sides. The native entries are dropped (the runtime interprets the split
/// programs); a stage's evaluation program (`eval`) stays on its replica 0
/// only. Then checks the world programs with verifyMessages (every
/// message matched, no deadlock under rendezvous sends, the replicas'
/// gradient all-reduce before each update as a collective). Fails with a
/// one-line error diagnostic on `context` for what it cannot split (weight
/// versions, a sharded call of another stage's replica, an instruction
/// without micro-batch).
mlir::FailureOr<llvm::json::Array>
splitRoutedRankPrograms(mlir::MLIRContext *context,
                        const llvm::json::Array &ranks,
                        llvm::ArrayRef<int64_t> stageReplicas);

/// `rank_memory` of the world ranks of split programs: rankMemoryJSON with
/// `pipeline_rank` and `replica` added.
llvm::json::Array routedRankMemoryJSON(const Bundle &bundle,
                                       const llvm::json::Array &worldRanks,
                                       llvm::ArrayRef<int64_t> stageReplicas);

/// The report's layout of a non-uniform plan.
void printRoutedRankLayout(llvm::ArrayRef<int64_t> stageReplicas,
                           int64_t microbatches,
                           const llvm::json::Array &memory,
                           llvm::raw_ostream &os);

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
