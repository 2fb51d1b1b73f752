//===- PartitionTest.cpp - partitioner vs brute force ----------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Property tests of the partitioning dynamic program (PartitionSolver.h): on
// many random small DAGs its slowest stage equals the best over all valid
// cuts, enumerated by brute force, under random schedules, link speeds and
// memory limits.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Dialect/Pipe/Transforms/PartitionSolver.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

using namespace pipedream::pipe;
using namespace pipedream::pipe::partition;

namespace {

/// A random DAG of `n` nodes in topological order: every node produces up
/// to two values, each read by a random set of later nodes.
Graph randomGraph(std::mt19937 &rng, int n) {
  Graph g;
  std::uniform_real_distribution<double> time(0.1, 10.0);
  std::uniform_int_distribution<int> bytes(0, 1000);
  std::uniform_int_distribution<int> coin(0, 3);
  for (int i = 0; i < n; ++i) {
    Node node;
    node.forward = time(rng);
    node.backwardInput = coin(rng) ? time(rng) : 0;
    node.backwardWeight = coin(rng) == 0 ? time(rng) : 0;
    node.parameterBytes = coin(rng) == 0 ? bytes(rng) : 0;
    node.frozenBytes = coin(rng) == 0 ? bytes(rng) / 4 : 0;
    node.activationBytes = bytes(rng);
    g.nodes.push_back(node);
  }
  for (int i = 0; i + 1 < n; ++i) {
    int numValues = std::uniform_int_distribution<int>(0, 2)(rng);
    for (int v = 0; v < numValues; ++v) {
      Value value;
      value.producer = i;
      value.bytes = bytes(rng);
      value.hasGradient = coin(rng) != 0;
      // Mostly near users (a chain), sometimes long skips (residuals).
      for (int j = i + 1; j < n; ++j)
        if (j == i + 1 ? coin(rng) != 0 : coin(rng) == 0)
          value.users.push_back(j);
      if (value.users.empty())
        value.users.push_back(std::uniform_int_distribution<int>(i + 1, n - 1)(rng));
      g.values.push_back(value);
    }
  }
  return g;
}

/// Every choice of P - 1 cut points among the n - 1 gaps.
void forEachCuts(int64_t n, int64_t pieces,
                 const std::function<void(const std::vector<int64_t> &)> &fn) {
  std::vector<int64_t> cuts(pieces + 1);
  cuts[0] = 0;
  cuts[pieces] = n;
  std::function<void(int64_t)> rec = [&](int64_t p) {
    if (p == pieces) {
      fn(cuts);
      return;
    }
    // cuts[p] in (cuts[p-1], n - (pieces - p)]
    for (int64_t c = cuts[p - 1] + 1; c <= n - (pieces - p); ++c) {
      cuts[p] = c;
      rec(p + 1);
    }
  };
  if (pieces == 1)
    fn(cuts);
  else
    rec(1);
}

/// Every edge goes from a piece to the same or a later one: the cut is a
/// valid antichain.
bool isValidCut(const Graph &g, const std::vector<int64_t> &cuts) {
  auto pieceOf = [&](int64_t node) {
    return std::upper_bound(cuts.begin(), cuts.end(), node) - cuts.begin() - 1;
  };
  for (const Value &v : g.values)
    for (int64_t u : v.users)
      if (pieceOf(u) < pieceOf(v.producer))
        return false;
  return true;
}

struct BruteForce {
  bool found = false;
  double best = 0;
  int64_t count = 0;
};

BruteForce bruteForce(const Graph &g, const Options &options) {
  BruteForce out;
  forEachCuts(g.nodes.size(), options.numPieces(),
              [&](const std::vector<int64_t> &cuts) {
                ++out.count;
                EXPECT_TRUE(isValidCut(g, cuts));
                Result r = evaluateCuts(g, options, cuts);
                ASSERT_TRUE(r.ok()) << r.error;
                if (!r.fitsMemory)
                  return;
                if (!out.found || r.slowest < out.best) {
                  out.found = true;
                  out.best = r.slowest;
                }
              });
  return out;
}

} // namespace

TEST(Partition, DynamicProgramEqualsBruteForce) {
  std::mt19937 rng(1234);
  int checked = 0, infeasible = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    int n = std::uniform_int_distribution<int>(1, 10)(rng);
    Graph g = randomGraph(rng, n);
    // Tied weights on every other graph (their own generator, so the other
    // draws stay those of the graphs without them).
    std::mt19937 tiedRng(trial);
    if (n >= 2 && trial % 2) {
      int numShared = std::uniform_int_distribution<int>(1, 2)(tiedRng);
      for (int w = 0; w < numShared; ++w) {
        SharedWeight shared;
        shared.bytes = std::uniform_int_distribution<int>(1, 1000)(tiedRng);
        for (int i = 0; i < n; ++i)
          if (std::uniform_int_distribution<int>(0, 2)(tiedRng) == 0)
            shared.readers.push_back(i);
        if (shared.readers.size() < 2)
          shared.readers = {0, n - 1};
        g.nodes[shared.readers.front()].parameterBytes += shared.bytes;
        g.sharedWeights.push_back(shared);
      }
    }
    // Program inputs read on several nodes (sent from the first reader's
    // piece) on every third graph, also from their own generator.
    if (trial % 3 == 0) {
      std::mt19937 inputRng(100000 + trial);
      Value input;
      input.bytes = std::uniform_int_distribution<int>(1, 500)(inputRng);
      input.hasGradient = false;
      for (int j = 0; j < n; ++j)
        if (std::uniform_int_distribution<int>(0, 1)(inputRng) == 0)
          input.users.push_back(j);
      if (input.users.empty())
        input.users.push_back(0);
      g.inputs.push_back(input);
    }
    ASSERT_EQ(g.validate(), "");
    Options o;
    int kindPick = std::uniform_int_distribution<int>(0, 4)(rng);
    o.numStages = std::uniform_int_distribution<int>(1, std::min(4, n))(rng);
    o.numChunks = 1;
    o.kind = kindPick == 0   ? schedule::Kind::GPipe
             : kindPick == 1 ? schedule::Kind::PipeDream
             : kindPick == 2 ? schedule::Kind::ZBH1
                             : schedule::Kind::OneFOneB;
    o.numMicrobatches = std::uniform_int_distribution<int>(1, 6)(rng);
    if (kindPick == 4 && 2 * o.numStages <= n) {
      o.kind = schedule::Kind::Interleaved1F1B;
      o.numChunks = 2;
      o.numMicrobatches = o.numStages * std::uniform_int_distribution<int>(1, 2)(rng);
    }
    o.linkBandwidth = std::uniform_int_distribution<int>(0, 2)(rng) * 50.0;
    o.linkLatency = o.linkBandwidth > 0 ? 0.5 : 0;
    o.optimizerStates = std::uniform_int_distribution<int>(0, 2)(rng);
    if (std::uniform_int_distribution<int>(0, 2)(rng) == 0)
      o.memoryLimit = std::uniform_int_distribution<int>(500, 12000)(rng);

    BruteForce brute = bruteForce(g, o);
    Result dp = solve(g, o);
    if (!brute.found) {
      EXPECT_FALSE(dp.ok()) << "trial " << trial
                            << ": the DP found a partition brute force did not";
      ++infeasible;
      continue;
    }
    ASSERT_TRUE(dp.ok()) << "trial " << trial << ": " << dp.error;
    EXPECT_TRUE(dp.fitsMemory) << "trial " << trial;
    EXPECT_NEAR(dp.slowest, brute.best, 1e-9 * std::max(1.0, brute.best))
        << "trial " << trial << " n=" << n << " P=" << o.numPieces();
    EXPECT_TRUE(isValidCut(g, dp.cuts));
    // Recomputing the DP's cuts gives the DP's value.
    Result again = evaluateCuts(g, o, dp.cuts);
    EXPECT_NEAR(again.slowest, dp.slowest, 1e-12 * std::max(1.0, dp.slowest));
    ++checked;
  }
  // Both outcomes were exercised.
  EXPECT_GT(checked, 2000);
  EXPECT_GT(infeasible, 10);
}

// Activation recomputation: full and auto (the pieces over the limit
// recompute) against brute force over every cut, with data inputs.
TEST(Partition, RecomputeEqualsBruteForce) {
  std::mt19937 rng(4321);
  int checked = 0, recomputed = 0, savedByRecompute = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    int n = std::uniform_int_distribution<int>(1, 9)(rng);
    Graph g = randomGraph(rng, n);
    int numInputs = std::uniform_int_distribution<int>(0, 2)(rng);
    for (int k = 0; k < numInputs; ++k) {
      Value input;
      input.bytes = std::uniform_int_distribution<int>(0, 500)(rng);
      input.hasGradient = false;
      for (int j = 0; j < n; ++j)
        if (std::uniform_int_distribution<int>(0, 2)(rng) == 0)
          input.users.push_back(j);
      if (input.users.empty())
        input.users.push_back(0);
      g.inputs.push_back(input);
    }
    ASSERT_EQ(g.validate(), "");
    Options o;
    o.numStages = std::uniform_int_distribution<int>(1, std::min(3, n))(rng);
    o.kind = std::uniform_int_distribution<int>(0, 1)(rng)
                 ? schedule::Kind::GPipe
                 : schedule::Kind::OneFOneB;
    o.numMicrobatches = std::uniform_int_distribution<int>(1, 6)(rng);
    o.optimizerStates = std::uniform_int_distribution<int>(0, 2)(rng);
    o.recompute = std::uniform_int_distribution<int>(0, 1)(rng)
                      ? Recompute::Auto
                      : Recompute::Full;
    if (o.recompute == Recompute::Auto ||
        std::uniform_int_distribution<int>(0, 1)(rng))
      o.memoryLimit = std::uniform_int_distribution<int>(500, 12000)(rng);

    BruteForce brute = bruteForce(g, o);
    Result dp = solve(g, o);
    if (!brute.found) {
      EXPECT_FALSE(dp.ok()) << "trial " << trial;
      continue;
    }
    ASSERT_TRUE(dp.ok()) << "trial " << trial << ": " << dp.error;
    EXPECT_TRUE(dp.fitsMemory) << "trial " << trial;
    EXPECT_NEAR(dp.slowest, brute.best, 1e-9 * std::max(1.0, brute.best))
        << "trial " << trial << " n=" << n << " P=" << o.numPieces();
    for (const Piece &piece : dp.pieces) {
      recomputed += piece.recompute;
      if (o.recompute == Recompute::Full)
        EXPECT_TRUE(piece.recompute);
      EXPECT_EQ(piece.stashBytes,
                piece.recompute ? piece.inputBytes : piece.activationBytes);
    }
    // Without recomputation no partition fits: recomputing made it.
    Options without = o;
    without.recompute = Recompute::None;
    if (o.recompute == Recompute::Auto && !bruteForce(g, without).found)
      ++savedByRecompute;
    ++checked;
  }
  EXPECT_GT(checked, 1000);
  EXPECT_GT(recomputed, 100);
  EXPECT_GT(savedByRecompute, 10);
}

// A recomputing piece stashes its inputs per micro-batch in flight, keeps
// one micro-batch's activations and runs its forward twice.
TEST(Partition, RecomputePieceCosts) {
  Graph g;
  for (int i = 0; i < 2; ++i) {
    Node node;
    node.forward = 1;
    node.backwardInput = 2;
    node.activationBytes = 100;
    g.nodes.push_back(node);
  }
  Value edge;
  edge.producer = 0;
  edge.users = {1};
  edge.bytes = 10;
  g.values.push_back(edge);
  Value data;
  data.users = {0};
  data.bytes = 7;
  g.inputs.push_back(data);
  Options o;
  o.numStages = 2;
  o.numMicrobatches = 4;
  o.kind = schedule::Kind::GPipe; // 4 micro-batches in flight on each
  o.recompute = Recompute::Full;
  Result r = evaluateCuts(g, o, {0, 1, 2});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.pieces[0].inputBytes, 7);
  EXPECT_EQ(r.pieces[1].inputBytes, 10);
  EXPECT_EQ(r.pieces[0].memory, 7 * 4 + 100);
  EXPECT_EQ(r.pieces[1].memory, 10 * 4 + 100);
  EXPECT_DOUBLE_EQ(r.pieces[0].time, 1 + 2 + 1);
  // Auto: both pieces need 4 x 100 bytes without recomputation, so a
  // 300-byte limit makes both recompute; without a limit none does.
  o.recompute = Recompute::Auto;
  o.memoryLimit = 300;
  r = evaluateCuts(g, o, {0, 1, 2});
  EXPECT_TRUE(r.pieces[0].recompute && r.pieces[1].recompute);
  EXPECT_TRUE(r.fitsMemory);
  o.memoryLimit = 0;
  r = evaluateCuts(g, o, {0, 1, 2});
  EXPECT_FALSE(r.pieces[0].recompute || r.pieces[1].recompute);
  EXPECT_EQ(r.pieces[0].memory, 400);
  // zb-h1: B rebuilds the activations and hands W what it reads, held
  // until W. Rank 0 runs F0 F1 B0 W0 F2 B1 W1 ...: 2 in flight, W due
  // for 1; rank 1 runs F0 B0 F1 B1 W0 F2 ...: 2 in flight, W due for 2.
  o.kind = schedule::Kind::ZBH1;
  o.recompute = Recompute::Full;
  r = evaluateCuts(g, o, {0, 1, 2});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.pieces[0].memory, 7 * 2 + 100);
  EXPECT_EQ(r.pieces[1].memory, 10 * 2 + 100 * 2);
}

TEST(Partition, TiedWeightCostsACopyAndAnAllReduce) {
  // A chain of 4 equal nodes; node 0 and node 3 read one 1000-byte weight
  // (an embedding and its tied LM head).
  Graph g;
  for (int i = 0; i < 4; ++i) {
    Node node;
    node.forward = 1;
    g.nodes.push_back(node);
  }
  g.nodes[0].parameterBytes = 1000;
  for (int i = 0; i < 3; ++i)
    g.values.push_back(Value{i, {i + 1}, 0, true});
  g.sharedWeights.push_back(SharedWeight{{0, 3}, 1000});
  ASSERT_EQ(g.validate(), "");
  Options o;
  o.numStages = 2;
  o.numMicrobatches = 4;
  o.linkBandwidth = 100; // bytes per second: the all-reduce is 10 s
  Result r = evaluateCuts(g, o, {0, 2, 4});
  ASSERT_TRUE(r.ok()) << r.error;
  for (const Piece &p : r.pieces) {
    EXPECT_EQ(p.allReduceBytes, 1000);
    // 1000 bytes at 100 B/s once per step of 4 micro-batches.
    EXPECT_DOUBLE_EQ(p.comm, 10.0 / 4);
    EXPECT_EQ(p.parameterBytes, 1000); // each holds a copy
  }
  EXPECT_EQ(r.pieces[0].sharedCopyBytes, 0);
  EXPECT_EQ(r.pieces[1].sharedCopyBytes, 1000);
  // One stage holding both readers needs no all-reduce.
  o.numStages = 1;
  Result one = evaluateCuts(g, o, {0, 4});
  ASSERT_TRUE(one.ok()) << one.error;
  EXPECT_EQ(one.pieces[0].allReduceBytes, 0);
  EXPECT_EQ(one.pieces[0].parameterBytes, 1000);
  // PipeDream all-reduces after every micro-batch.
  o.numStages = 2;
  o.kind = schedule::Kind::PipeDream;
  Result async = evaluateCuts(g, o, {0, 2, 4});
  ASSERT_TRUE(async.ok()) << async.error;
  EXPECT_DOUBLE_EQ(async.pieces[0].comm, 10.0);
}

// A program input read on two pieces lives on the first reader's piece,
// which sends it to the other once per micro-batch (pipe-unroll-schedule's
// input transfers, e.g. a bidirectional RNN's initial state).
TEST(Partition, ProgramInputSentToLaterReaders) {
  Graph g;
  for (int i = 0; i < 4; ++i) {
    Node node;
    node.forward = 1;
    g.nodes.push_back(node);
  }
  for (int i = 0; i < 3; ++i)
    g.values.push_back(Value{i, {i + 1}, 10, true});
  Value state;
  state.users = {0, 3};
  state.bytes = 500;
  state.hasGradient = false;
  g.inputs.push_back(state);
  ASSERT_EQ(g.validate(), "");
  Options o;
  o.numStages = 2;
  o.numMicrobatches = 4;
  o.linkBandwidth = 100;
  Result r = evaluateCuts(g, o, {0, 2, 4});
  ASSERT_TRUE(r.ok()) << r.error;
  // Piece 0: the value 1 -> 2 (10 bytes) and the input (500), no gradient.
  EXPECT_EQ(r.pieces[0].sendBytes, 510);
  EXPECT_EQ(r.pieces[0].numMessages, 2);
  EXPECT_DOUBLE_EQ(r.pieces[0].comm, 5.1);
  // Piece 1 sends the value's gradient back, nothing for the input.
  EXPECT_EQ(r.pieces[1].sendBytes, 0);
  EXPECT_EQ(r.pieces[1].gradientBytes, 10);
  // Both readers on one piece: nothing crosses.
  o.numStages = 1;
  Result one = evaluateCuts(g, o, {0, 4});
  ASSERT_TRUE(one.ok()) << one.error;
  EXPECT_EQ(one.pieces[0].sendBytes, 0);
  // The dynamic program prices it the same way (the property tests above
  // check it against brute force on random graphs with inputs).
  o.numStages = 2;
  Result best = solve(g, o);
  ASSERT_TRUE(best.ok()) << best.error;
  Result again = evaluateCuts(g, o, best.cuts);
  EXPECT_DOUBLE_EQ(best.slowest, again.slowest);
}

TEST(Partition, ChainIsBalanced) {
  // Eight equal nodes in a chain, four stages: two per stage.
  Graph g;
  for (int i = 0; i < 8; ++i) {
    g.nodes.push_back(Node{1, 1, 0, 0, 0, 0});
    if (i + 1 < 8)
      g.values.push_back(Value{i, {i + 1}, 100, true});
  }
  Options o;
  o.numStages = 4;
  o.numMicrobatches = 4;
  Result r = solve(g, o);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.cuts, (std::vector<int64_t>{0, 2, 4, 6, 8}));
  EXPECT_DOUBLE_EQ(r.slowest, 4);
  EXPECT_DOUBLE_EQ(r.ideal, 4);
  // With a link, the middle stages pay for a send and a gradient each.
  o.linkBandwidth = 100;
  r = solve(g, o);
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r.slowest, 6);
}

TEST(Partition, HeavyNodeGetsItsOwnStage) {
  Graph g;
  double times[] = {1, 1, 1, 9, 1, 1, 1, 1};
  for (int i = 0; i < 8; ++i) {
    g.nodes.push_back(Node{times[i], 0, 0, 0, 0, 0});
    if (i + 1 < 8)
      g.values.push_back(Value{i, {i + 1}, 0, true});
  }
  Options o;
  o.numStages = 3;
  o.numMicrobatches = 3;
  Result dp = solve(g, o), uni = uniform(g, o);
  ASSERT_TRUE(dp.ok() && uni.ok());
  EXPECT_DOUBLE_EQ(dp.slowest, 9);
  EXPECT_GE(uni.slowest, dp.slowest);
  EXPECT_EQ(uni.cuts, (std::vector<int64_t>{0, 3, 6, 8}));
}

TEST(Partition, MemoryCountsInFlightMicrobatches) {
  // Activations of 10 bytes per node; 1F1B keeps K - r micro-batches on
  // rank r, so the first stage must be the smallest.
  Graph g;
  for (int i = 0; i < 6; ++i) {
    g.nodes.push_back(Node{1, 0, 0, 0, 0, 10});
    if (i + 1 < 6)
      g.values.push_back(Value{i, {i + 1}, 0, true});
  }
  Options o;
  o.numStages = 3;
  o.numMicrobatches = 3;
  o.memoryLimit = 40; // stage 0 holds 1 node, stage 1 two, stage 2 four
  Result r = solve(g, o);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.pieces[0].inFlight, 3);
  EXPECT_EQ(r.pieces[1].inFlight, 2);
  EXPECT_EQ(r.pieces[2].inFlight, 1);
  EXPECT_EQ(r.cuts, (std::vector<int64_t>{0, 1, 3, 6}));
  o.memoryLimit = 39; // 1 + 1 + 3 nodes < 6

  r = solve(g, o);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.error.find("no partition into 3 stages fits"), std::string::npos)
      << r.error;
}

TEST(Partition, TooManyStages) {
  Graph g;
  g.nodes.resize(3);
  Options o;
  o.numStages = 4;
  o.numMicrobatches = 4;
  Result r = solve(g, o);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.error.find("only 3 ops"), std::string::npos) << r.error;
}
