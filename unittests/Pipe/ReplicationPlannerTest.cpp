//===- ReplicationPlannerTest.cpp - replicated plans vs brute force -------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// PipeDream's planner with replication (ReplicationPlanner.h) equals brute
// force over every number of stages, every cut and every replication that
// uses all ranks, on small random DAGs with random link speeds, parameter
// sizes and memory limits; the uniform K x R search equals brute force over
// cuts with R replicas each; a heavy op's stage is replicated, and a slow
// link (all-reduce cost) prevents it.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Dialect/Pipe/Transforms/ReplicationPlanner.h"

#include <gtest/gtest.h>

#include <functional>
#include <random>

using namespace pipedream::pipe;
using namespace pipedream::pipe::partition;

namespace {

/// A random DAG of `n` nodes: a chain with occasional skips.
Graph randomDag(std::mt19937 &rng, int n) {
  Graph g;
  std::uniform_real_distribution<double> time(0.1, 10.0);
  std::uniform_int_distribution<int> bytes(0, 1000);
  std::uniform_int_distribution<int> coin(0, 3);
  for (int i = 0; i < n; ++i) {
    Node node;
    node.forward = time(rng);
    node.backwardInput = coin(rng) ? time(rng) : 0;
    node.backwardWeight = coin(rng) == 0 ? time(rng) : 0;
    node.parameterBytes = coin(rng) ? bytes(rng) * 4 : 0;
    node.activationBytes = bytes(rng);
    g.nodes.push_back(node);
  }
  for (int i = 0; i + 1 < n; ++i) {
    Value value;
    value.producer = i;
    value.bytes = bytes(rng);
    value.users.push_back(i + 1);
    for (int j = i + 2; j < n; ++j)
      if (coin(rng) == 0)
        value.users.push_back(j);
    g.values.push_back(value);
  }
  return g;
}

/// Every composition of `total` into `parts` positive parts.
void forEachComposition(int64_t total, int64_t parts,
                        const std::function<void(const std::vector<int64_t> &)> &fn) {
  std::vector<int64_t> out(parts);
  std::function<void(int64_t, int64_t)> rec = [&](int64_t p, int64_t left) {
    if (p == parts - 1) {
      out[p] = left;
      fn(out);
      return;
    }
    for (int64_t r = 1; r <= left - (parts - p - 1); ++r) {
      out[p] = r;
      rec(p + 1, left - r);
    }
  };
  rec(0, total);
}

/// Every choice of K - 1 cuts among n - 1 gaps.
void forEachCuts(int64_t n, int64_t k,
                 const std::function<void(const std::vector<int64_t> &)> &fn) {
  std::vector<int64_t> cuts(k + 1);
  cuts[0] = 0;
  cuts[k] = n;
  std::function<void(int64_t)> rec = [&](int64_t p) {
    if (p == k) {
      fn(cuts);
      return;
    }
    for (int64_t c = cuts[p - 1] + 1; c <= n - (k - p); ++c) {
      cuts[p] = c;
      rec(p + 1);
    }
  };
  if (k == 1)
    fn(cuts);
  else
    rec(1);
}

/// The best plan by enumeration; `uniform` > 0 restricts to K x uniform,
/// `divide` > 0 to replications that divide it.
double bruteForce(const Graph &g, const Options &o, int64_t ranks,
                  int64_t uniform, bool &found, int64_t divide = 0) {
  found = false;
  double best = 0;
  int64_t n = g.nodes.size();
  for (int64_t k = 1; k <= std::min(n, ranks); ++k) {
    if (uniform > 0 && k * uniform != ranks)
      continue;
    forEachCuts(n, k, [&](const std::vector<int64_t> &cuts) {
      forEachComposition(ranks, k, [&](const std::vector<int64_t> &reps) {
        if (uniform > 0 &&
            std::any_of(reps.begin(), reps.end(),
                        [&](int64_t r) { return r != uniform; }))
          return;
        if (divide > 0 &&
            std::any_of(reps.begin(), reps.end(),
                        [&](int64_t r) { return divide % r != 0; }))
          return;
        ReplicatedPlan plan = evaluatePlan(g, o, cuts, reps);
        if (!plan.ok())
          return;
        if (!found || plan.slowest < best) {
          found = true;
          best = plan.slowest;
        }
      });
    });
  }
  return best;
}

} // namespace

TEST(ReplicationPlanner, DynamicProgramEqualsBruteForce) {
  std::mt19937 rng(2020);
  int checked = 0, infeasible = 0, nonUniform = 0, nonUniformDividing = 0;
  for (int trial = 0; trial < 1500; ++trial) {
    int n = std::uniform_int_distribution<int>(1, 7)(rng);
    Graph g = randomDag(rng, n);
    ASSERT_EQ(g.validate(), "");
    Options o;
    o.kind = std::uniform_int_distribution<int>(0, 1)(rng)
                 ? schedule::Kind::OneFOneB
                 : schedule::Kind::GPipe;
    o.numMicrobatches = std::uniform_int_distribution<int>(1, 8)(rng);
    o.linkBandwidth = std::uniform_int_distribution<int>(0, 2)(rng) * 100.0;
    o.linkLatency = o.linkBandwidth > 0 ? 0.2 : 0;
    o.optimizerStates = std::uniform_int_distribution<int>(0, 2)(rng);
    if (std::uniform_int_distribution<int>(0, 2)(rng) == 0)
      o.memoryLimit = std::uniform_int_distribution<int>(1000, 20000)(rng);
    int64_t ranks = std::uniform_int_distribution<int>(1, 4)(rng);
    bool found = false;
    double brute = bruteForce(g, o, ranks, 0, found);
    ReplicatedPlan plan = planReplicated(g, o, ranks);
    if (!found) {
      EXPECT_FALSE(plan.ok()) << "trial " << trial;
      ++infeasible;
      continue;
    }
    ASSERT_TRUE(plan.ok()) << "trial " << trial << ": " << plan.error;
    EXPECT_NEAR(plan.slowest, brute, 1e-9 * std::max(1.0, brute))
        << "trial " << trial << " n=" << n << " N=" << ranks;
    int64_t used = 0;
    for (int64_t r : plan.replicas)
      used += r;
    EXPECT_EQ(used, ranks);
    ReplicatedPlan again = evaluatePlan(g, o, plan.cuts, plan.replicas);
    EXPECT_NEAR(again.slowest, plan.slowest, 1e-12 * std::max(1.0, brute));
    nonUniform += !plan.isUniform();
    // Replications restricted to divisors of M (what the runtime's
    // round-robin routing runs: every replica of a stage gets M / r
    // micro-batches), non-uniform ones included.
    {
      bool dfound = false;
      double dbrute = bruteForce(g, o, ranks, 0, dfound, o.numMicrobatches);
      ReplicatedPlan dplan = planReplicated(g, o, ranks, o.numMicrobatches);
      EXPECT_EQ(dplan.ok(), dfound) << "trial " << trial << ": " << dplan.error;
      if (dfound && dplan.ok()) {
        EXPECT_NEAR(dplan.slowest, dbrute, 1e-9 * std::max(1.0, dbrute))
            << "trial " << trial << " n=" << n << " N=" << ranks
            << " M=" << o.numMicrobatches;
        for (int64_t r : dplan.replicas)
          EXPECT_EQ(o.numMicrobatches % r, 0) << "trial " << trial;
        EXPECT_GE(dplan.slowest, plan.slowest - 1e-9 * std::max(1.0, dbrute));
        nonUniformDividing += !dplan.isUniform();
      }
    }
    // The uniform K x R search against brute force over uniform plans.
    for (int64_t k = 1; k <= ranks; ++k) {
      if (ranks % k)
        continue;
      bool ufound = false;
      double ubrute = bruteForce(g, o, ranks, ranks / k, ufound);
      ReplicatedPlan uplan = planUniform(g, o, k, ranks / k);
      // bruteForce(uniform) spans every K with K x R = ranks: compare the
      // one K here by restricting it.
      bool kfound = false;
      double kbest = 0;
      if (k <= n)
        forEachCuts(n, k, [&](const std::vector<int64_t> &cuts) {
          ReplicatedPlan p = evaluatePlan(
              g, o, cuts, std::vector<int64_t>(k, ranks / k));
          if (p.ok() && (!kfound || p.slowest < kbest)) {
            kfound = true;
            kbest = p.slowest;
          }
        });
      (void)ubrute;
      (void)ufound;
      EXPECT_EQ(uplan.ok(), kfound) << "trial " << trial << " K=" << k;
      if (kfound && uplan.ok()) {
        EXPECT_NEAR(uplan.slowest, kbest, 1e-9 * std::max(1.0, kbest));
        EXPECT_TRUE(uplan.isUniform());
        EXPECT_GE(uplan.slowest, plan.slowest - 1e-9 * std::max(1.0, kbest));
      }
    }
    ++checked;
  }
  EXPECT_GT(checked, 1000);
  EXPECT_GT(infeasible, 5);
  EXPECT_GT(nonUniform, 50);
  EXPECT_GT(nonUniformDividing, 20);
}

/// A chain of three ops where the middle one is heavy.
Graph heavyMiddle(int64_t parameterBytes) {
  Graph g;
  for (double t : {1.0, 4.0, 1.0}) {
    Node node;
    node.forward = t;
    node.parameterBytes = parameterBytes;
    g.nodes.push_back(node);
  }
  for (int i = 0; i < 2; ++i) {
    Value v;
    v.producer = i;
    v.users = {i + 1};
    v.bytes = 0;
    g.values.push_back(v);
  }
  return g;
}

TEST(ReplicationPlanner, HeavyStageIsReplicated) {
  Options o;
  o.numMicrobatches = 8;
  Graph g = heavyMiddle(0);
  // Without a link cost data parallelism over the whole model is best:
  // 3 ranks give 6/3 = 2, 4 ranks 6/4 (a pipeline of single replicas is
  // bounded by the heavy op, 4).
  ReplicatedPlan plan = planReplicated(g, o, 3);
  ASSERT_TRUE(plan.ok()) << plan.error;
  EXPECT_DOUBLE_EQ(plan.slowest, 2.0);
  ReplicatedPlan four = planReplicated(g, o, 4);
  ASSERT_TRUE(four.ok());
  EXPECT_DOUBLE_EQ(four.slowest, 1.5);
  EXPECT_EQ(four.numStages(), 1);
  ReplicatedPlan uniform = planUniform(g, o, 3, 1);
  ASSERT_TRUE(uniform.ok());
  EXPECT_DOUBLE_EQ(uniform.slowest, 4.0);
}

TEST(ReplicationPlanner, NonUniformWhenTheLightStageHoldsTheParameters) {
  // op0: light (1 s) with 1000 parameter bytes, op1: heavy (4 s) without
  // parameters; 1000 B/s. On 3 ranks: data parallel 5/3 + the all-reduce
  // of 1000 B over 3 (2 * 2/3 * 1 s) = 3; the pipeline 1-1 ends at 4 (and
  // 2-1 too); 1-2 replicates only the heavy, parameter-free stage: 2.
  Graph g;
  for (auto [t, bytes] : {std::pair<double, int64_t>{1.0, 1000}, {4.0, 0}}) {
    Node node;
    node.forward = t;
    node.parameterBytes = bytes;
    g.nodes.push_back(node);
  }
  Value v;
  v.producer = 0;
  v.users = {1};
  g.values.push_back(v);
  Options o;
  o.numMicrobatches = 1;
  o.linkBandwidth = 1000.0;
  ReplicatedPlan plan = planReplicated(g, o, 3);
  ASSERT_TRUE(plan.ok()) << plan.error;
  EXPECT_EQ(plan.cuts, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(plan.replicas, (std::vector<int64_t>{1, 2}));
  EXPECT_DOUBLE_EQ(plan.slowest, 2.0);
  EXPECT_FALSE(plan.isUniform());
  ReplicatedPlan dataParallel = planUniform(g, o, 1, 3);
  ASSERT_TRUE(dataParallel.ok());
  EXPECT_NEAR(dataParallel.slowest, 5.0 / 3 + 4.0 / 3, 1e-12);
}

TEST(ReplicationPlanner, AllReduceCostLimitsReplication) {
  Options o;
  o.numMicrobatches = 1;
  o.linkBandwidth = 1.0;
  // Huge parameters: replicating any stage costs far more than it saves.
  Graph g = heavyMiddle(1000);
  ReplicatedPlan plan = planReplicated(g, o, 3);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan.replicas, (std::vector<int64_t>{1, 1, 1}));
  EXPECT_DOUBLE_EQ(plan.slowest, 4.0);
  // The all-reduce of 1000 bytes over 2 replicas: 2 * 1/2 * 1000 / 1.
  EXPECT_DOUBLE_EQ(replicaAllReduceTime(o, 1000, 2), 1000.0);
}
