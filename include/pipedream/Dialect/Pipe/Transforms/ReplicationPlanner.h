//===- ReplicationPlanner.h - stage cuts and per-stage replication -*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// PipeDream's planner over N ranks (Narayanan et al., SOSP'19, section 3.1):
// the dynamic program chooses the stage cuts *and* how many data-parallel
// replicas each stage gets, on the partition solver's model
// (PartitionSolver.h) extended by replication:
// - a stage of pieces' time t (compute + messages, Evaluator::evaluate)
//   replicated r times takes t / r per micro-batch (its replicas share the
//   micro-batches round-robin, PipeDream's 1F1B-RR) plus the ring
//   all-reduce of its trainable parameters over the r replicas once per
//   step: 2 (r - 1) / r x bytes / linkBandwidth + 2 (r - 1) x linkLatency,
//   spread over the step's `numMicrobatches` micro-batches (M counts the
//   whole batch: every replica's);
// - each replica holds its stage's whole memory (the partition's model,
//   with in-flight counts of a K-stage schedule).
// The objective is the slowest stage (the bottleneck), under the memory
// limit; every rank is used (the replications sum to N). V = 1.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_DIALECT_PIPE_TRANSFORMS_REPLICATIONPLANNER_H
#define PIPEDREAM_DIALECT_PIPE_TRANSFORMS_REPLICATIONPLANNER_H

#include "pipedream/Dialect/Pipe/Transforms/PartitionSolver.h"

#include <cstdint>
#include <string>
#include <vector>

namespace pipedream {
namespace pipe {
namespace partition {

/// Stage cuts with a replication per stage, and what they cost.
struct ReplicatedPlan {
  /// Empty on success, else why no plan exists.
  std::string error;
  /// K + 1 cut points: stage s holds nodes [cuts[s], cuts[s+1]).
  std::vector<int64_t> cuts;
  /// Replicas of each stage (sum: the ranks).
  std::vector<int64_t> replicas;
  /// Each stage's unreplicated piece, and its time with its replication
  /// (compute and messages / r, plus the replicas' all-reduce).
  std::vector<Piece> pieces;
  std::vector<double> stageTimes;
  double slowest = 0;
  int64_t numStages() const { return static_cast<int64_t>(replicas.size()); }
  /// Every stage has the same replication (a K x R plan).
  bool isUniform() const;
  bool ok() const { return error.empty(); }
};

/// Seconds per micro-batch of the ring all-reduce of `bytes` over `r`
/// replicas once per step of `options.numMicrobatches` micro-batches.
double replicaAllReduceTime(const Options &options, int64_t bytes, int64_t r);

/// Evaluates given cuts and replications (`options.numStages` is taken as
/// the number of stages, cuts.size() - 1).
ReplicatedPlan evaluatePlan(const Graph &graph, Options options,
                            const std::vector<int64_t> &cuts,
                            const std::vector<int64_t> &replicas);

/// The best plan over `numRanks` ranks: every number of stages K from 1 to
/// min(numRanks, nodes) and every replication summing to numRanks; with
/// `replicasDivide` > 0 only replications r that divide it (the step's
/// micro-batches: every replica of a stage gets as many, round-robin).
/// O(N n^2 N^2 K) piece lookups after O(N n^2) piece evaluations.
ReplicatedPlan planReplicated(const Graph &graph, const Options &options,
                              int64_t numRanks, int64_t replicasDivide = 0);

/// The best cuts for K stages of R replicas each.
ReplicatedPlan planUniform(const Graph &graph, const Options &options,
                           int64_t numStages, int64_t replicas);

} // namespace partition
} // namespace pipe
} // namespace pipedream

#endif // PIPEDREAM_DIALECT_PIPE_TRANSFORMS_REPLICATIONPLANNER_H
