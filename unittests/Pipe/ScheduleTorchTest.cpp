//===- ScheduleTorchTest.cpp - generators against torch's orders ----------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Compares the zero-bubble and V-shaped generators action by action with
// the orders torch.distributed.pipelining 2.15 builds (CSVs written by
// test/Dialect/Pipe/Inputs/torch/generate.py, committed), reads torch's
// compute_comms files, and checks the kinds against theory with unit costs
// (F = B = W = 1) and the verifier against mutated schedules.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Dialect/Pipe/Transforms/ScheduleCSV.h"
#include "pipedream/Dialect/Pipe/Transforms/ScheduleSearch.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>

using namespace pipedream::pipe::schedule;
namespace fs = std::filesystem;

namespace {

std::string readFile(const fs::path &p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

/// torch's rows without the empty (idle) cells: the order of each rank.
std::string withoutIdleCells(const std::string &csv) {
  std::string out, line;
  std::istringstream is(csv);
  while (std::getline(is, line)) {
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    std::string cell, row;
    std::istringstream ls(line);
    while (std::getline(ls, cell, ','))
      if (!cell.empty())
        row += (row.empty() ? "" : ",") + cell;
    out += row + "\n";
  }
  return out;
}

struct TorchFile {
  fs::path path;
  Config config;
  bool comms;
};

/// Every committed torch CSV, with the configuration its name says
/// (`<kind>-k<K>-m<M>[-v<V>][.comms].csv`).
std::vector<TorchFile> torchFiles() {
  std::vector<TorchFile> out;
  std::regex re(R"(([a-z0-9-]+?)-k(\d+)-m(\d+)(?:-v(\d+))?(\.comms)?\.csv)");
  for (const auto &entry : fs::directory_iterator(PIPEDREAM_TORCH_SCHEDULES)) {
    std::smatch m;
    std::string name = entry.path().filename().string();
    if (!std::regex_match(name, m, re))
      continue;
    std::optional<Kind> kind = parseKind(m[1]);
    if (!kind)
      continue;
    Config c{*kind, std::stoll(m[2]), std::stoll(m[3]), 1};
    if (m[4].matched)
      c.numChunks = std::stoll(m[4]);
    else if (c.isVShaped())
      c.numChunks = 2;
    out.push_back({entry.path(), c, m[5].matched});
  }
  std::sort(out.begin(), out.end(), [](const TorchFile &a, const TorchFile &b) {
    return a.path < b.path;
  });
  return out;
}

std::string name(const Config &c) {
  return std::string(kindName(c.kind)) + " K=" + std::to_string(c.numRanks) +
         " M=" + std::to_string(c.numMicrobatches) +
         " V=" + std::to_string(c.numChunks);
}

TEST(ScheduleTorch, FilesArePresent) {
  std::map<Kind, int> count;
  for (const TorchFile &f : torchFiles())
    ++count[f.config.kind];
  EXPECT_GE(count[Kind::ZBH1], 40);
  EXPECT_GE(count[Kind::InterleavedZB], 12);
  EXPECT_GE(count[Kind::ZBV], 12);
  EXPECT_GE(count[Kind::DualPipeV], 12);
}

// Our generator writes exactly torch's order, every rank, every action.
TEST(ScheduleTorch, OrdersEqualTorch) {
  for (const TorchFile &f : torchFiles()) {
    if (f.comms)
      continue;
    ASSERT_EQ(validate(f.config), "") << f.path;
    Schedule ours = buildSchedule(f.config);
    EXPECT_EQ(exportScheduleCSV(ours, CSVLayout::Compact),
              withoutIdleCells(readFile(f.path)))
        << f.path;
    SlotAssignment slots = assignSlots(ours);
    EXPECT_EQ(verify(ours, &slots), "") << f.path;
  }
}

// Importing torch's file (kind, K, M, V inferred) gives our schedule, and
// exporting it again gives torch's order back.
TEST(ScheduleTorch, ImportInfersAndRoundTrips) {
  for (const TorchFile &f : torchFiles()) {
    std::string text = readFile(f.path), note;
    Schedule back;
    ASSERT_EQ(parseScheduleCSV(text, {}, back, &note), "") << f.path;
    Schedule ours = buildSchedule(f.config);
    // M is inferred from the largest micro-batch, K from the rows: a file of
    // fewer micro-batches than ranks still infers right (every rank has an F
    // of every micro-batch).
    EXPECT_EQ(back.config.kind, f.config.kind) << f.path;
    EXPECT_EQ(back.config.numRanks, f.config.numRanks) << f.path;
    EXPECT_EQ(back.config.numMicrobatches, f.config.numMicrobatches)
        << f.path;
    EXPECT_EQ(back.config.numChunks, f.config.numChunks) << f.path;
    EXPECT_EQ(back.ranks, ours.ranks) << f.path;
    if (f.comms) {
      EXPECT_NE(note.find("communication actions"), std::string::npos)
          << f.path << ": " << note;
      EXPECT_NE(note.find("FSDP actions"), std::string::npos) << note;
    } else {
      EXPECT_EQ(note, "") << f.path;
      EXPECT_EQ(exportScheduleCSV(back, CSVLayout::Compact),
                withoutIdleCells(text))
          << f.path;
    }
  }
}

//===----------------------------------------------------------------------===//
// Theory (unit costs F = B = W = 1, communication 0)
//===----------------------------------------------------------------------===//

SimResult unitSim(const Schedule &s) {
  return simulate(s, Costs::unit(s.config));
}

TEST(ScheduleTheory, ZBH1BubbleAndMemory) {
  for (int64_t k = 1; k <= 8; ++k)
    for (int64_t m = 1; m <= 16; ++m) {
      Config c{Kind::ZBH1, k, m};
      Schedule s = buildSchedule(c);
      SlotAssignment slots = assignSlots(s);
      ASSERT_EQ(verify(s, &slots), "") << name(c);
      SimResult sim = unitSim(s);
      ASSERT_TRUE(sim.ok()) << name(c) << ": " << sim.error;
      if (m >= k) {
        // ZeroBubble's H1: 1F1B's K-1 idle units of its ramp, a third of
        // 1F1B's 2(K-1)... makespan 3M + K - 1 on every rank.
        EXPECT_DOUBLE_EQ(sim.makespan, 3 * m + k - 1) << name(c);
        EXPECT_NEAR(sim.bubbleFraction, double(k - 1) / (3 * m + k - 1),
                    1e-12)
            << name(c);
      } else {
        // Too few micro-batches to fill the pipeline: micro-batch 0's F down
        // and B back (2K) then rank 0's remaining 2M - 1 backward actions.
        EXPECT_DOUBLE_EQ(sim.makespan, 2 * k + 2 * m - 1) << name(c);
      }
      for (int64_t r = 0; r < k; ++r) {
        // At most K micro-batches in flight on every rank (1F1B's rank 0).
        EXPECT_LE(sim.peakActivationSlots[r], std::min(k, m)) << name(c);
        // W of micro-batch i runs right after the B of micro-batch i + r
        // (deferred by r), or in the drain.
        const auto &list = s.ranks[r];
        for (size_t j = 0; j < list.size(); ++j) {
          if (list[j].op != Op::W)
            continue;
          int64_t i = list[j].microbatch;
          int64_t lastB = -1;
          for (size_t q = 0; q < j; ++q)
            if (list[q].op == Op::B)
              lastB = list[q].microbatch;
          EXPECT_EQ(lastB, std::min(i + r, m - 1)) << name(c) << " rank " << r;
        }
      }
    }
}

TEST(ScheduleTheory, ZBH1BeatsOneFOneBByTwoThirdsOfItsBubble) {
  // 1F1B with B = 2 (F, B, W as one backward): makespan 3M + 3(K-1).
  for (int64_t k = 2; k <= 8; ++k)
    for (int64_t m = k; m <= 16; ++m) {
      SimResult one = simulate(buildSchedule({Kind::OneFOneB, k, m}),
                               Costs::unit({Kind::OneFOneB, k, m}));
      SimResult zb = unitSim(buildSchedule({Kind::ZBH1, k, m}));
      EXPECT_DOUBLE_EQ(one.makespan - 3 * m, 3 * (k - 1));
      EXPECT_DOUBLE_EQ(zb.makespan - 3 * m, k - 1);
    }
}

void forEachConfig(Kind kind, const std::function<void(const Config &)> &fn) {
  for (int64_t k = 1; k <= 8; ++k)
    for (int64_t m = 1; m <= 16; ++m)
      for (int64_t v : kind == Kind::InterleavedZB ? std::vector<int64_t>{2, 3}
                       : Config{kind}.isVShaped()  ? std::vector<int64_t>{2}
                                                   : std::vector<int64_t>{1}) {
        Config c{kind, k, m, v};
        if (validate(c).empty())
          fn(c);
      }
}

TEST(ScheduleTheory, Table) {
  for (int64_t k : {2, 4, 8})
    for (int64_t m : {2 * k, 4 * k})
      for (Config c : {Config{Kind::OneFOneB, k, m}, Config{Kind::ZBH1, k, m},
                       Config{Kind::ZBV, k, m, 2},
                       Config{Kind::InterleavedZB, k, m, 2},
                       Config{Kind::DualPipeV, k, m, 2}}) {
        SimResult r = unitSim(buildSchedule(c));
        std::string slots;
        for (int64_t v : r.peakActivationSlots)
          slots += " " + std::to_string(v);
        std::printf("%-15s K=%lld M=%2lld makespan %5.1f bubble %.4f slots%s\n",
                    kindName(c.kind), (long long)k, (long long)m, r.makespan,
                    r.bubbleFraction, slots.c_str());
      }
}

// Unit costs are per chunk (a chunk is 1/V of a rank's layers), so a rank's
// work is 3VM units.
TEST(ScheduleTheory, ZeroBubbleVAndInterleaved) {
  for (int64_t k = 1; k <= 8; ++k)
    for (int64_t m = 2 * k - 1; m <= 16; ++m) {
      // ZB-V: K-1 idle units per rank, half of H1's in stage units.
      Config zbv{Kind::ZBV, k, m, 2};
      SimResult r = unitSim(buildSchedule(zbv));
      EXPECT_DOUBLE_EQ(r.makespan, 6 * m + k - 1) << name(zbv);
      EXPECT_NEAR(r.bubbleFraction, double(k - 1) / (6 * m + k - 1), 1e-12);
      for (int64_t slots : r.peakActivationSlots)
        EXPECT_LE(slots, 2 * k) << name(zbv); // K stages' worth
      // DualPipeV: 2(K-1) idle units (the overlap hides communication,
      // which unit costs do not charge).
      if (m >= 2 * k) {
        Config dual{Kind::DualPipeV, k, m, 2};
        r = unitSim(buildSchedule(dual));
        EXPECT_DOUBLE_EQ(r.makespan, 6 * m + 2 * k - 2) << name(dual);
        for (int64_t slots : r.peakActivationSlots)
          EXPECT_LE(slots, 2 * k + 1) << name(dual);
      }
    }
  for (int64_t k = 2; k <= 8; ++k)
    for (int64_t v : {2, 3})
      for (int64_t m = k; m <= 16; m += k) {
        Config c{Kind::InterleavedZB, k, m, v};
        if (!validate(c).empty())
          continue;
        SimResult r = unitSim(buildSchedule(c));
        EXPECT_DOUBLE_EQ(r.makespan, 3 * v * m + k - 1) << name(c);
      }
}

TEST(ScheduleTheory, NewKindsVerify) {
  for (Kind kind : {Kind::ZBV, Kind::InterleavedZB, Kind::DualPipeV})
    forEachConfig(kind, [](const Config &c) {
      Schedule s = buildSchedule(c);
      SlotAssignment slots = assignSlots(s);
      EXPECT_EQ(verify(s, &slots), "") << name(c);
      EXPECT_TRUE(unitSim(s).ok()) << name(c);
    });
}

//===----------------------------------------------------------------------===//
// Joined actions and mutations
//===----------------------------------------------------------------------===//

TEST(ScheduleJoins, FullBackwardAndOverlapImport) {
  CSVImportOptions zb;
  zb.kind = Kind::ZBH1;
  Schedule s;
  ASSERT_EQ(parseScheduleCSV("0F0,0B0\n", zb, s), "");
  std::vector<Action> expected{{Op::F, 0, 0},
                               {Op::B, 0, 0},
                               {Op::W, 0, 0, Join::FullBackward},
                               {Op::U, 0, 0}};
  EXPECT_EQ(s.ranks[0], expected);
  EXPECT_EQ(verify(s), "");
  EXPECT_EQ(exportScheduleCSV(s, CSVLayout::Compact), "0F0,0B0\n");
  ASSERT_EQ(parseScheduleCSV("0F0,(0F1;0B0)OVERLAP_F_B,0B1\n", {}, s), "");
  expected = {{Op::F, 0, 0}, {Op::F, 0, 1}, {Op::B, 0, 0, Join::Overlap},
              {Op::B, 0, 1}, {Op::U, 0, 1}};
  EXPECT_EQ(s.ranks[0], expected);
  EXPECT_EQ(verify(s), "");
  EXPECT_EQ(exportScheduleCSV(s, CSVLayout::Compact),
            "0F0,(0F1;0B0)OVERLAP_F_B,0B1\n");
}

/// The first verifier error of `s` after `mutate`.
std::string mutated(Config c, const std::function<void(Schedule &)> &mutate) {
  Schedule s = buildSchedule(c);
  mutate(s);
  SlotAssignment slots = assignSlots(s);
  return verify(s, &slots);
}

TEST(ScheduleJoins, VerifierRejectsMutations) {
  const Config dual{Kind::DualPipeV, 4, 8, 2};
  const Config zbv{Kind::ZBV, 4, 8, 2};
  auto find = [](const std::vector<Action> &list, auto pred) {
    return std::find_if(list.begin(), list.end(), pred) - list.begin();
  };
  // A full-backward W moved away from its B.
  EXPECT_NE(mutated(dual,
                    [&](Schedule &s) {
                      auto &l = s.ranks[0];
                      size_t i = find(l, [](const Action &a) {
                        return a.join == Join::FullBackward;
                      });
                      std::swap(l[i], l[i + 1]);
                    })
                .find("joined as a full backward, but it is not the W right "
                      "after the B"),
            std::string::npos);
  // An overlap that follows a B, not an F.
  EXPECT_NE(mutated(zbv,
                    [&](Schedule &s) {
                      auto &l = s.ranks[1];
                      size_t i = find(l, [](const Action &a) {
                        return a.op == Op::W;
                      });
                      l[i].join = Join::Overlap;
                    })
                .find("overlapped, but it is not a B right after an F"),
            std::string::npos);
  // V placement: chunk 1 of rank 0 is stage 2K-1; moving it to rank 1.
  EXPECT_NE(mutated(zbv,
                    [&](Schedule &s) {
                      s.ranks[1].insert(s.ranks[1].begin(), s.ranks[0].back());
                      s.ranks[0].pop_back();
                    })
                .find("stage 7 runs on rank 0"),
            std::string::npos);
  // A dropped W (the U says it is missing), a B before its F, a duplicate.
  for (Config c : {dual, zbv, Config{Kind::InterleavedZB, 4, 8, 2}}) {
    EXPECT_NE(mutated(c,
                      [&](Schedule &s) {
                        auto &l = s.ranks[2];
                        l.erase(l.begin() + find(l, [](const Action &a) {
                                  return a.op == Op::W &&
                                         a.join == Join::None;
                                }));
                      })
                  .find("missing W of stage"),
              std::string::npos)
        << name(c);
    EXPECT_NE(mutated(c,
                      [&](Schedule &s) {
                        auto &l = s.ranks[3];
                        size_t b = find(l, [](const Action &a) {
                          return a.op == Op::B;
                        });
                        Action moved = l[b];
                        moved.join = Join::None;
                        l.erase(l.begin() + b);
                        l.insert(l.begin(), moved);
                      })
                  .find("B runs before its F"),
              std::string::npos)
        << name(c);
    EXPECT_NE(mutated(c,
                      [&](Schedule &s) {
                        s.ranks[1].insert(s.ranks[1].begin() + 1,
                                          s.ranks[1][0]);
                      })
                  .find("duplicate of action 0"),
              std::string::npos)
        << name(c);
  }
}

//===----------------------------------------------------------------------===//
// Search
//===----------------------------------------------------------------------===//

TEST(ScheduleSearch, PicksShortestStepUnderMemory) {
  SearchOptions o;
  o.numRanks = 4;
  o.microbatches = {8};
  // Unit work per step: zb-v (V = 2) 51 chunk units / 16 = 3.1875 beats
  // zb-h1 27 / 8 = 3.375 and 1f1b 33 / 8; zb-v ties interleaved-zb and
  // wins by kind order.
  std::vector<SearchCandidate> all = searchSchedules(o);
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(all[0].config.kind, Kind::ZBV);
  EXPECT_DOUBLE_EQ(all[0].stepTime, 51.0 / 16);
  for (const SearchCandidate &c : all)
    EXPECT_TRUE(c.config.isSynchronous()) << kindName(c.config.kind);
  for (size_t i = 1; i < all.size(); ++i)
    EXPECT_LE(all[i - 1].stepTime, all[i].stepTime + 1e-12);
  // Memory: 100 bytes of activations per stage and micro-batch (100 / V
  // per chunk); a 400-byte limit keeps K = 4 micro-batches per rank:
  // 1f1b, zb-h1 and zb-v (8 half-size chunks) fit, gpipe (8),
  // interleaved-1f1b (11 chunks) and dualpipe-v (9 chunks) do not.
  o.memoryLimit = 400;
  o.optionsOf = [](const Config &c) {
    ReportOptions r;
    Costs costs;
    double share = 1.0 / double(c.numChunks * c.numMicrobatches);
    costs.forward = share;
    costs.backward = (c.splitsBackward() ? 1 : 2) * share;
    costs.weightGrad = c.splitsBackward() ? share : 0;
    r.costs = costs;
    for (int64_t v = 0; v < c.numVirtualStages(); ++v)
      r.memory.push_back({0, 100 / c.numChunks, 0});
    return r;
  };
  all = searchSchedules(o);
  std::map<Kind, bool> fits;
  for (const SearchCandidate &c : all)
    fits[c.config.kind] = c.fits;
  EXPECT_TRUE(fits[Kind::OneFOneB]);
  EXPECT_TRUE(fits[Kind::ZBH1]);
  EXPECT_TRUE(fits[Kind::ZBV]);
  EXPECT_FALSE(fits[Kind::GPipe]);
  EXPECT_FALSE(fits[Kind::Interleaved1F1B]);
  EXPECT_FALSE(fits[Kind::DualPipeV]);
  EXPECT_EQ(all[0].config.kind, Kind::ZBV);
  EXPECT_TRUE(all[0].fits);
  EXPECT_FALSE(all.back().fits);
  std::string table = candidatesTable(all);
  EXPECT_EQ(table.find("* zb-v"), table.find('\n') + 1) << table;
  EXPECT_NE(table.find("(over the memory limit)"), std::string::npos);
}

} // namespace
