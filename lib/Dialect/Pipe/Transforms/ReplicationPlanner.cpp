//===- ReplicationPlanner.cpp - stage cuts and per-stage replication ------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Dialect/Pipe/Transforms/ReplicationPlanner.h"

#include <algorithm>
#include <limits>

using namespace pipedream::pipe;
using namespace pipedream::pipe::partition;

static constexpr double kInf = std::numeric_limits<double>::infinity();

bool ReplicatedPlan::isUniform() const {
  return std::all_of(replicas.begin(), replicas.end(),
                     [&](int64_t r) { return r == replicas.front(); });
}

double partition::replicaAllReduceTime(const Options &options, int64_t bytes,
                                       int64_t r) {
  if (r <= 1 || bytes == 0 || options.linkBandwidth <= 0)
    return 0;
  double ring = 2.0 * static_cast<double>(r - 1) / static_cast<double>(r) *
                    static_cast<double>(bytes) / options.linkBandwidth +
                2.0 * static_cast<double>(r - 1) * options.linkLatency;
  return ring / static_cast<double>(std::max<int64_t>(options.numMicrobatches, 1));
}

static double stageTime(const Options &options, const Piece &piece,
                        int64_t r) {
  return piece.time / static_cast<double>(r) +
         replicaAllReduceTime(options, piece.parameterBytes, r);
}

ReplicatedPlan partition::evaluatePlan(const Graph &graph, Options options,
                                       const std::vector<int64_t> &cuts,
                                       const std::vector<int64_t> &replicas) {
  ReplicatedPlan plan;
  if (cuts.size() < 2 || replicas.size() + 1 != cuts.size()) {
    plan.error = "expected K + 1 cut points and K replications";
    return plan;
  }
  options.numStages = static_cast<int64_t>(replicas.size());
  options.numChunks = 1;
  Evaluator eval(graph, options);
  if (!eval.error.empty()) {
    plan.error = eval.error;
    return plan;
  }
  plan.cuts = cuts;
  plan.replicas = replicas;
  const int64_t limit = eval.pieceMemoryLimit();
  for (int64_t s = 0; s < options.numStages; ++s) {
    if (cuts[s] >= cuts[s + 1] || replicas[s] < 1) {
      plan.error = "empty stage or replication below 1";
      return plan;
    }
    Piece piece = eval.evaluate(s, cuts[s], cuts[s + 1]);
    if (limit > 0 && piece.memory > limit)
      plan.error = "stage " + std::to_string(s) + " exceeds the memory limit";
    plan.stageTimes.push_back(stageTime(options, piece, replicas[s]));
    plan.pieces.push_back(piece);
    plan.slowest = std::max(plan.slowest, plan.stageTimes.back());
  }
  return plan;
}

namespace {

/// The dynamic program for K stages: best[p][j][n] is the smallest
/// bottleneck of nodes [0, j) in stages [0, p) on n ranks. With `uniform`
/// > 0 every stage gets exactly that many replicas; with `divide` > 0 only
/// replications that divide it.
ReplicatedPlan solveStages(const Graph &graph, Options options, int64_t k,
                           int64_t numRanks, int64_t uniform,
                           int64_t divide = 0) {
  ReplicatedPlan plan;
  const int64_t n = static_cast<int64_t>(graph.nodes.size());
  options.numStages = k;
  options.numChunks = 1;
  Evaluator eval(graph, options);
  if (!eval.error.empty()) {
    plan.error = eval.error;
    return plan;
  }
  if (k > n || k > numRanks) {
    plan.error = "more stages than ops or ranks";
    return plan;
  }
  const int64_t limit = eval.pieceMemoryLimit();
  // Piece (p, i, j) times, -1 for one over the memory limit.
  std::vector<double> pieceTime(static_cast<size_t>(k * (n + 1) * (n + 1)),
                                -1);
  std::vector<int64_t> pieceParams(pieceTime.size(), 0);
  auto at = [&](int64_t p, int64_t i, int64_t j) {
    return static_cast<size_t>((p * (n + 1) + i) * (n + 1) + j);
  };
  for (int64_t p = 0; p < k; ++p)
    for (int64_t i = p; i < n; ++i)
      for (int64_t j = i + 1; j <= n - (k - p - 1); ++j) {
        Piece piece = eval.evaluate(p, i, j);
        if (limit > 0 && piece.memory > limit)
          continue;
        pieceTime[at(p, i, j)] = piece.time;
        pieceParams[at(p, i, j)] = piece.parameterBytes;
      }
  const int64_t ranks = numRanks;
  auto idx = [&](int64_t p, int64_t j, int64_t used) {
    return static_cast<size_t>((p * (n + 1) + j) * (ranks + 1) + used);
  };
  std::vector<double> best(static_cast<size_t>((k + 1) * (n + 1) * (ranks + 1)),
                           kInf);
  std::vector<int64_t> fromNode(best.size(), -1), fromReplicas(best.size(), 0);
  best[idx(0, 0, 0)] = 0;
  for (int64_t p = 0; p < k; ++p)
    for (int64_t i = p; i < n; ++i)
      for (int64_t used = 0; used <= ranks; ++used) {
        double sofar = best[idx(p, i, used)];
        if (sofar == kInf)
          continue;
        int64_t left = ranks - used - (k - p - 1);
        for (int64_t r = uniform > 0 ? uniform : 1;
             r <= (uniform > 0 ? std::min(uniform, left) : left); ++r) {
          if (divide > 0 && divide % r != 0)
            continue;
          for (int64_t j = i + 1; j <= n - (k - p - 1); ++j) {
            double t = pieceTime[at(p, i, j)];
            if (t < 0)
              continue;
            Piece piece;
            piece.time = t;
            piece.parameterBytes = pieceParams[at(p, i, j)];
            double value = std::max(sofar, stageTime(options, piece, r));
            size_t to = idx(p + 1, j, used + r);
            if (value < best[to]) {
              best[to] = value;
              fromNode[to] = i;
              fromReplicas[to] = r;
            }
          }
        }
      }
  if (best[idx(k, n, ranks)] == kInf) {
    plan.error = "no plan of " + std::to_string(k) + " stages on " +
                 std::to_string(ranks) + " ranks fits the memory limit";
    return plan;
  }
  std::vector<int64_t> cuts(k + 1), replicas(k);
  int64_t j = n, used = ranks;
  cuts[k] = n;
  for (int64_t p = k; p > 0; --p) {
    size_t here = idx(p, j, used);
    replicas[p - 1] = fromReplicas[here];
    j = fromNode[here];
    used -= replicas[p - 1];
    cuts[p - 1] = j;
  }
  return evaluatePlan(graph, options, cuts, replicas);
}

} // namespace

ReplicatedPlan partition::planReplicated(const Graph &graph,
                                         const Options &options,
                                         int64_t numRanks,
                                         int64_t replicasDivide) {
  ReplicatedPlan best;
  best.error = numRanks < 1 ? "the ranks must be at least 1"
                            : "no plan fits the memory limit";
  if (numRanks < 1 || graph.nodes.empty()) {
    if (graph.nodes.empty())
      best.error = "nothing to partition";
    return best;
  }
  int64_t most = std::min<int64_t>(numRanks, graph.nodes.size());
  for (int64_t k = 1; k <= most; ++k) {
    ReplicatedPlan plan =
        solveStages(graph, options, k, numRanks, 0, replicasDivide);
    if (plan.ok() && (!best.ok() || plan.slowest < best.slowest))
      best = std::move(plan);
  }
  return best;
}

ReplicatedPlan partition::planUniform(const Graph &graph,
                                      const Options &options,
                                      int64_t numStages, int64_t replicas) {
  if (numStages < 1 || replicas < 1) {
    ReplicatedPlan plan;
    plan.error = "stages and replicas must be at least 1";
    return plan;
  }
  return solveStages(graph, options, numStages, numStages * replicas,
                     replicas);
}
