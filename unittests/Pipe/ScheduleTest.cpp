//===- ScheduleTest.cpp - schedule generators, verifier, simulator --------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Checks the schedules against theory with unit costs (F = 1, B = 2, U = 0,
// communication 0; the zero-bubble kinds split B into B = 1 and W = 1), and that the
// verifier rejects mutated schedules with a message.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Dialect/Pipe/Transforms/Schedule.h"

#include <gtest/gtest.h>

#include <functional>

using namespace pipedream::pipe::schedule;

namespace {

const Kind kAllKinds[] = {Kind::GPipe,     Kind::OneFOneB, Kind::Interleaved1F1B,
                          Kind::PipeDream, Kind::TwoBW,    Kind::ZBH1};

/// Every valid configuration with K in 1..6, M in 1..12 (V = 2, 3 for
/// interleaved).
void forEachConfig(Kind kind, const std::function<void(const Config &)> &fn) {
  for (int64_t k = 1; k <= 6; ++k)
    for (int64_t m = 1; m <= 12; ++m)
      for (int64_t v : kind == Kind::Interleaved1F1B
                           ? std::vector<int64_t>{2, 3}
                           : std::vector<int64_t>{1}) {
        Config c{kind, k, m, v};
        if (validate(c).empty())
          fn(c);
      }
}

std::string name(const Config &c) {
  return std::string(kindName(c.kind)) + " K=" + std::to_string(c.numRanks) +
         " M=" + std::to_string(c.numMicrobatches) +
         " V=" + std::to_string(c.numChunks);
}

SimResult unitSim(const Config &c) {
  return simulate(buildSchedule(c), Costs::unit(c));
}

TEST(Schedule, ConfigValidation) {
  EXPECT_FALSE(validate({Kind::Interleaved1F1B, 4, 6, 2}).empty());
  EXPECT_TRUE(validate({Kind::Interleaved1F1B, 4, 8, 2}).empty());
  EXPECT_FALSE(validate({Kind::OneFOneB, 4, 8, 2}).empty());
  EXPECT_FALSE(validate({Kind::GPipe, 0, 8, 1}).empty());
  EXPECT_EQ(parseKind("zb-h1"), Kind::ZBH1);
  EXPECT_EQ(parseKind("nope"), std::nullopt);
}

TEST(Schedule, EveryGeneratedScheduleVerifies) {
  for (Kind kind : kAllKinds)
    forEachConfig(kind, [](const Config &c) {
      Schedule s = buildSchedule(c);
      SlotAssignment slots = assignSlots(s);
      EXPECT_EQ(verify(s, &slots), "") << name(c);
    });
}

TEST(Schedule, SynchronousBubbleMatchesTheory) {
  for (Kind kind : {Kind::GPipe, Kind::OneFOneB})
    forEachConfig(kind, [](const Config &c) {
      SimResult r = unitSim(c);
      ASSERT_TRUE(r.ok()) << r.error;
      double k = c.numRanks, m = c.numMicrobatches;
      EXPECT_NEAR(r.bubbleFraction, (k - 1) / (m + k - 1), 1e-9) << name(c);
      EXPECT_NEAR(r.makespan, 3 * (m + k - 1), 1e-9) << name(c);
    });
}

TEST(Schedule, InterleavedBubble) {
  // Per-chunk unit costs (F = 1, B = 2 per chunk, i.e. a stage of cost V/3):
  // Megatron's bound (K-1)/(V*M+K-1) is reached exactly when M > K; for
  // M == K Megatron runs all forwards first, and the bubble is GPipe's
  // (K-1)*(F+B) over V*M*(F+B) busy: the same value.
  forEachConfig(Kind::Interleaved1F1B, [](const Config &c) {
    SimResult r = unitSim(c);
    ASSERT_TRUE(r.ok()) << r.error;
    double k = c.numRanks, m = c.numMicrobatches, v = c.numChunks;
    double theory = (k - 1) / (v * m + k - 1);
    EXPECT_NEAR(r.bubbleFraction, theory, 1e-9) << name(c);
    Config flat{Kind::OneFOneB, c.numRanks, c.numMicrobatches, 1};
    if (c.numRanks > 1)
      EXPECT_LT(r.bubbleFraction, unitSim(flat).bubbleFraction) << name(c);
  });
}

TEST(Schedule, ZBH1BeatsOneFOneB) {
  forEachConfig(Kind::ZBH1, [](const Config &c) {
    SimResult zb = unitSim(c);
    SimResult ofob = unitSim({Kind::OneFOneB, c.numRanks, c.numMicrobatches});
    ASSERT_TRUE(zb.ok()) << zb.error;
    if (c.numRanks > 1)
      EXPECT_LT(zb.bubbleFraction, ofob.bubbleFraction) << name(c);
    // 1F1B's memory bound of rank 0 (K micro-batches) on every rank: H1
    // holds r more on rank r than 1F1B, the W it defers.
    for (int64_t r = 0; r < c.numRanks; ++r) {
      EXPECT_LE(zb.peakActivationSlots[r], ofob.peakActivationSlots[0])
          << name(c) << " rank " << r;
      EXPECT_LE(zb.peakActivationSlots[r], ofob.peakActivationSlots[r] + r)
          << name(c) << " rank " << r;
    }
  });
}

TEST(Schedule, PeakActivationSlots) {
  forEachConfig(Kind::OneFOneB, [](const Config &c) {
    SimResult r = unitSim(c);
    Schedule s = buildSchedule(c);
    SlotAssignment slots = assignSlots(s);
    for (int64_t rank = 0; rank < c.numRanks; ++rank) {
      EXPECT_EQ(r.peakActivationSlots[rank],
                std::min(c.numRanks - rank, c.numMicrobatches))
          << name(c) << " rank " << rank;
      int64_t used = 0;
      for (int64_t slot : slots[rank])
        used = std::max(used, slot + 1);
      EXPECT_EQ(used, r.peakActivationSlots[rank]) << name(c);
    }
  });
  forEachConfig(Kind::GPipe, [](const Config &c) {
    SimResult r = unitSim(c);
    for (int64_t rank = 0; rank < c.numRanks; ++rank)
      EXPECT_EQ(r.peakActivationSlots[rank], c.numMicrobatches) << name(c);
  });
}

TEST(Schedule, WeightGradSlots) {
  // What a split backward holds from B to W alone: nothing without a
  // split; zb-h1 defers the W of rank r by r backwards, so B and its W
  // hold r + 1 micro-batches at the most.
  for (Kind kind : {Kind::GPipe, Kind::OneFOneB})
    forEachConfig(kind, [](const Config &c) {
      SimResult r = unitSim(c);
      for (int64_t rank = 0; rank < c.numRanks; ++rank)
        EXPECT_EQ(r.peakWeightGradSlots[rank], 0) << name(c);
    });
  forEachConfig(Kind::ZBH1, [](const Config &c) {
    SimResult r = unitSim(c);
    for (int64_t rank = 0; rank < c.numRanks; ++rank)
      EXPECT_EQ(r.peakWeightGradSlots[rank],
                std::min(rank + 1, c.numMicrobatches))
          << name(c) << " rank " << rank;
  });
  int64_t checked = 0;
  for (Kind kind : {Kind::ZBV, Kind::InterleavedZB, Kind::DualPipeV})
    for (int64_t k = 1; k <= 6; ++k)
      for (int64_t m = 1; m <= 12; ++m) {
        Config c{kind, k, m, 2};
        if (!validate(c).empty())
          continue;
        ++checked;
        SimResult r = unitSim(c);
        for (int64_t rank = 0; rank < c.numRanks; ++rank) {
          EXPECT_GE(r.peakWeightGradSlots[rank], 1) << name(c);
          EXPECT_LE(r.peakWeightGradSlots[rank], r.peakActivationSlots[rank])
              << name(c);
        }
      }
  EXPECT_GT(checked, 100);
}

TEST(Schedule, WeightVersions) {
  forEachConfig(Kind::PipeDream, [](const Config &c) {
    SimResult r = unitSim(c);
    ASSERT_TRUE(r.ok()) << r.error;
    for (int64_t i = 0; i < c.numRanks; ++i) {
      // Stage i has up to K-i micro-batches in flight, each of a different
      // version once the steady state is reached (M >= 2(K-i) - 1).
      int64_t bound = c.numRanks - i;
      EXPECT_LE(r.peakWeightVersions[i], bound) << name(c);
      if (c.numMicrobatches >= 2 * bound - 1)
        EXPECT_EQ(r.peakWeightVersions[i], bound) << name(c) << " stage " << i;
    }
  });
  forEachConfig(Kind::TwoBW, [](const Config &c) {
    SimResult r = unitSim(c);
    for (int64_t v : r.peakWeightVersions)
      EXPECT_LE(v, 2) << name(c);
  });
  for (Kind kind : {Kind::GPipe, Kind::OneFOneB, Kind::ZBH1})
    forEachConfig(kind, [](const Config &c) {
      for (int64_t v : unitSim(c).peakWeightVersions)
        EXPECT_EQ(v, 1) << name(c);
    });
}

//===----------------------------------------------------------------------===//
// Mutations: every mutant is rejected with a message.
//===----------------------------------------------------------------------===//

TEST(ScheduleVerifier, BeforeItsForward) {
  for (Kind kind : kAllKinds)
    forEachConfig(kind, [](const Config &c) {
      Schedule s = buildSchedule(c);
      // Move the first B of the last rank to the front.
      auto &list = s.ranks.back();
      auto it = std::find_if(list.begin(), list.end(),
                             [](const Action &a) { return a.op == Op::B; });
      Action b = *it;
      list.erase(it);
      list.insert(list.begin(), b);
      std::string err = verify(s);
      EXPECT_NE(err.find("B runs before its F"), std::string::npos)
          << name(c) << ": " << err;
    });
}

TEST(ScheduleVerifier, WeightGradBeforeBackward) {
  forEachConfig(Kind::ZBH1, [](const Config &c) {
    Schedule s = buildSchedule(c);
    auto &list = s.ranks[0];
    auto w = std::find_if(list.begin(), list.end(),
                          [](const Action &a) { return a.op == Op::W; });
    auto b = std::find_if(list.begin(), list.end(), [&](const Action &a) {
      return a.op == Op::B && a.microbatch == w->microbatch;
    });
    std::iter_swap(w, b);
    EXPECT_NE(verify(s).find("W runs before its B"), std::string::npos)
        << name(c);
  });
}

TEST(ScheduleVerifier, DroppedAndDuplicatedActions) {
  for (Kind kind : kAllKinds)
    forEachConfig(kind, [](const Config &c) {
      for (int64_t r = 0; r < c.numRanks; ++r) {
        for (size_t i = 0; i < buildSchedule(c).ranks[r].size(); ++i) {
          Schedule s = buildSchedule(c);
          Action dropped = s.ranks[r][i];
          s.ranks[r].erase(s.ranks[r].begin() + i);
          std::string err = verify(s);
          EXPECT_FALSE(err.empty()) << name(c) << " drop " << toString(dropped);
          s = buildSchedule(c);
          s.ranks[r].push_back(s.ranks[r][i]);
          err = verify(s);
          EXPECT_FALSE(err.empty()) << name(c) << " dup " << toString(dropped);
        }
      }
    });
  Schedule s = buildSchedule({Kind::OneFOneB, 4, 8});
  s.ranks[2].pop_back();
  EXPECT_EQ(verify(s), "rank 2: missing U of stage 2 micro-batch 7");
}

TEST(ScheduleVerifier, LiveSlotReuse) {
  for (Kind kind : kAllKinds)
    forEachConfig(kind, [](const Config &c) {
      Schedule s = buildSchedule(c);
      SlotAssignment slots = assignSlots(s);
      // Give the second F of rank 0 the first F's slot while it is live
      // (every kind has 2 F's before the first backward when K, M >= 2).
      if (c.numRanks < 2 || c.numMicrobatches < 2)
        return;
      std::vector<size_t> fs;
      for (size_t i = 0; i < s.ranks[0].size(); ++i)
        if (s.ranks[0][i].op == Op::F)
          fs.push_back(i);
      slots[0][fs[1]] = slots[0][fs[0]];
      std::string err = verify(s, &slots);
      EXPECT_NE(err.find("reuses activation slot"), std::string::npos)
          << name(c) << ": " << err;
    });
}

TEST(ScheduleVerifier, SwappedSendsDeadlock) {
  // Rank 1 runs its last forward first: it posts the receives of
  // micro-batches M-1 and 0 (one action of look-ahead) and waits for M-1,
  // while rank 0 waits in the send of micro-batch 1.
  for (Kind kind : {Kind::GPipe, Kind::OneFOneB, Kind::ZBH1})
    forEachConfig(kind, [](const Config &c) {
      if (c.numRanks < 2 || c.numMicrobatches < 3)
        return;
      Schedule s = buildSchedule(c);
      auto &list = s.ranks[1];
      Action last{Op::F, 1, c.numMicrobatches - 1};
      list.erase(std::find(list.begin(), list.end(), last));
      list.insert(list.begin(), last);
      std::string err = verify(s);
      EXPECT_NE(err.find("deadlock"), std::string::npos)
          << name(c) << ": " << err;
    });
}

TEST(ScheduleVerifier, WeightVersionBound) {
  // 2bw with one update per micro-batch keeps more than two versions.
  Schedule pd = buildSchedule({Kind::PipeDream, 4, 8});
  pd.config.kind = Kind::TwoBW;
  std::string err = verify(pd);
  EXPECT_FALSE(err.empty());
  // An update before the backward it applies.
  Schedule early = buildSchedule({Kind::PipeDream, 2, 4});
  auto &list = early.ranks[1];
  auto u = std::find(list.begin(), list.end(), Action{Op::U, 1, 0});
  auto b = std::find(list.begin(), list.end(), Action{Op::B, 1, 0});
  std::iter_swap(u, b);
  EXPECT_NE(verify(early).find("U runs before the B of micro-batch 0"),
            std::string::npos)
      << verify(early);
}

TEST(Schedule, ReportK4M8) {
  for (Kind kind : kAllKinds) {
    Config c{kind, 4, 8, kind == Kind::Interleaved1F1B ? 2 : 1};
    SimResult r = unitSim(c);
    ASSERT_TRUE(r.ok()) << r.error;
    std::string slots, versions;
    for (int64_t p : r.peakActivationSlots)
      slots += std::to_string(p) + " ";
    for (int64_t p : r.peakWeightVersions)
      versions += std::to_string(p) + " ";
    std::printf("%-17s makespan %5.1f bubble %.4f slots/rank [%s] "
                "versions/stage [%s]\n",
                kindName(kind), r.makespan, r.bubbleFraction, slots.c_str(),
                versions.c_str());
  }
}

} // namespace
