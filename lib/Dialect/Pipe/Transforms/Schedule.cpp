//===- Schedule.cpp - pipeline schedules, verifier, simulator -------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Dialect/Pipe/Transforms/Schedule.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

namespace pipedream {
namespace pipe {
namespace schedule {

//===----------------------------------------------------------------------===//
// Names
//===----------------------------------------------------------------------===//

std::optional<Kind> parseKind(const std::string &name) {
  for (Kind k : {Kind::GPipe, Kind::OneFOneB, Kind::Interleaved1F1B,
                 Kind::PipeDream, Kind::TwoBW, Kind::ZBH1})
    if (name == kindName(k))
      return k;
  return std::nullopt;
}

const char *kindName(Kind kind) {
  switch (kind) {
  case Kind::GPipe:
    return "gpipe";
  case Kind::OneFOneB:
    return "1f1b";
  case Kind::Interleaved1F1B:
    return "interleaved-1f1b";
  case Kind::PipeDream:
    return "pipedream";
  case Kind::TwoBW:
    return "2bw";
  case Kind::ZBH1:
    return "zb-h1";
  }
  return "?";
}

char opLetter(Op op) {
  switch (op) {
  case Op::F:
    return 'F';
  case Op::B:
    return 'B';
  case Op::W:
    return 'W';
  case Op::U:
    return 'U';
  }
  return '?';
}

std::string toString(const Action &a) {
  return std::to_string(a.stage) + opLetter(a.op) +
         std::to_string(a.microbatch);
}

/// "F of stage 2 micro-batch 5".
static std::string describe(const Action &a) {
  std::string s;
  s += opLetter(a.op);
  s += " of stage " + std::to_string(a.stage) + " micro-batch " +
       std::to_string(a.microbatch);
  return s;
}

static std::string at(int64_t rank, int64_t index, const Action &a) {
  return "rank " + std::to_string(rank) + ", action " +
         std::to_string(index) + " (" + describe(a) + ")";
}

std::string validate(const Config &c) {
  if (c.numRanks < 1)
    return "the number of stages must be at least 1";
  if (c.numMicrobatches < 1)
    return "the number of micro-batches must be at least 1";
  if (c.numChunks < 1)
    return "the number of chunks must be at least 1";
  if (c.kind == Kind::Interleaved1F1B) {
    if (c.numMicrobatches % c.numRanks != 0)
      return "interleaved-1f1b needs the micro-batches (" +
             std::to_string(c.numMicrobatches) +
             ") to be a multiple of the stages (" +
             std::to_string(c.numRanks) + ")";
  } else if (c.numChunks != 1) {
    return std::string(kindName(c.kind)) +
           " runs one chunk per stage; only interleaved-1f1b takes chunks";
  }
  return "";
}

//===----------------------------------------------------------------------===//
// Generators
//===----------------------------------------------------------------------===//

static void buildGPipe(Schedule &s) {
  const Config &c = s.config;
  for (int64_t r = 0; r < c.numRanks; ++r) {
    auto &list = s.ranks[r];
    for (int64_t m = 0; m < c.numMicrobatches; ++m)
      list.push_back({Op::F, r, m});
    for (int64_t m = 0; m < c.numMicrobatches; ++m)
      list.push_back({Op::B, r, m});
    list.push_back({Op::U, r, c.numMicrobatches - 1});
  }
}

/// 1F1B order; `updates(m)` says whether a U follows B of micro-batch m
/// (asynchronous kinds); synchronous kinds get one U at the end.
template <typename UpdateAfter>
static void build1F1B(Schedule &s, UpdateAfter updateAfter, bool flush) {
  const Config &c = s.config;
  int64_t numMb = c.numMicrobatches;
  for (int64_t r = 0; r < c.numRanks; ++r) {
    auto &list = s.ranks[r];
    auto backward = [&](int64_t m) {
      list.push_back({Op::B, r, m});
      if (updateAfter(m))
        list.push_back({Op::U, r, m});
    };
    int64_t warmup = std::min(c.numRanks - 1 - r, numMb);
    for (int64_t m = 0; m < warmup; ++m)
      list.push_back({Op::F, r, m});
    for (int64_t i = 0; i < numMb - warmup; ++i) {
      list.push_back({Op::F, r, warmup + i});
      backward(i);
    }
    for (int64_t m = numMb - warmup; m < numMb; ++m)
      backward(m);
    if (flush)
      list.push_back({Op::U, r, numMb - 1});
  }
}

static void buildInterleaved(Schedule &s) {
  const Config &c = s.config;
  int64_t k = c.numRanks, v = c.numChunks, numMb = c.numMicrobatches;
  int64_t total = numMb * v;
  for (int64_t r = 0; r < k; ++r) {
    auto &list = s.ranks[r];
    auto mbOf = [&](int64_t i) { return (i / (k * v)) * k + i % k; };
    auto fwd = [&](int64_t i) {
      int64_t chunk = (i / k) % v;
      list.push_back({Op::F, chunk * k + r, mbOf(i)});
    };
    auto bwd = [&](int64_t i) {
      int64_t chunk = v - 1 - (i / k) % v;
      list.push_back({Op::B, chunk * k + r, mbOf(i)});
    };
    // Megatron: (K-1-r)*2 + (V-1)*K warm-up forwards; all when M == K.
    int64_t warmup = numMb == k ? total
                                : std::min(total, (k - r - 1) * 2 + (v - 1) * k);
    for (int64_t i = 0; i < warmup; ++i)
      fwd(i);
    for (int64_t i = 0; i < total - warmup; ++i) {
      fwd(warmup + i);
      bwd(i);
    }
    for (int64_t i = total - warmup; i < total; ++i)
      bwd(i);
    for (int64_t chunk = 0; chunk < v; ++chunk)
      list.push_back({Op::U, chunk * k + r, numMb - 1});
  }
}

/// ZB-H1: greedy list scheduling under unit costs (F = B = W = 1), priority
/// B > F > W, at most min(K-r, M) micro-batches in flight on rank r.
static void buildZBH1(Schedule &s) {
  const Config &c = s.config;
  int64_t k = c.numRanks, numMb = c.numMicrobatches;
  const int64_t never = INT64_MAX;
  std::vector<std::vector<int64_t>> fEnd(k, std::vector<int64_t>(numMb, never));
  std::vector<std::vector<int64_t>> bEnd = fEnd;
  std::vector<int64_t> nextF(k, 0), nextB(k, 0), busyUntil(k, 0), inflight(k);
  std::vector<std::vector<int64_t>> pendingW(k);
  std::vector<size_t> nextW(k, 0);
  int64_t remaining = 3 * k * numMb;
  for (int64_t t = 0; remaining > 0; ++t) {
    for (int64_t r = 0; r < k; ++r) {
      if (busyUntil[r] > t)
        continue;
      auto &list = s.ranks[r];
      int64_t cap = std::min(k - r, numMb);
      int64_t b = nextB[r], f = nextF[r];
      if (b < f && (r == k - 1 || bEnd[r + 1][b] <= t)) {
        list.push_back({Op::B, r, b});
        bEnd[r][b] = t + 1;
        pendingW[r].push_back(b);
        ++nextB[r];
      } else if (f < numMb && (r == 0 || fEnd[r - 1][f] <= t) &&
                 inflight[r] < cap) {
        list.push_back({Op::F, r, f});
        fEnd[r][f] = t + 1;
        ++inflight[r];
        ++nextF[r];
      } else if (nextW[r] < pendingW[r].size()) {
        list.push_back({Op::W, r, pendingW[r][nextW[r]++]});
        --inflight[r];
      } else {
        continue;
      }
      busyUntil[r] = t + 1;
      --remaining;
    }
  }
  for (int64_t r = 0; r < k; ++r)
    s.ranks[r].push_back({Op::U, r, numMb - 1});
}

Schedule buildSchedule(const Config &config) {
  Schedule s;
  s.config = config;
  s.ranks.resize(config.numRanks);
  int64_t k = config.numRanks, numMb = config.numMicrobatches;
  switch (config.kind) {
  case Kind::GPipe:
    buildGPipe(s);
    break;
  case Kind::OneFOneB:
    build1F1B(s, [](int64_t) { return false; }, /*flush=*/true);
    break;
  case Kind::Interleaved1F1B:
    buildInterleaved(s);
    break;
  case Kind::ZBH1:
    buildZBH1(s);
    break;
  case Kind::PipeDream:
    build1F1B(s, [](int64_t) { return true; }, /*flush=*/false);
    break;
  case Kind::TwoBW:
    build1F1B(
        s, [&](int64_t m) { return m % k == k - 1 || m == numMb - 1; },
        /*flush=*/false);
    break;
  }
  return s;
}

//===----------------------------------------------------------------------===//
// Costs
//===----------------------------------------------------------------------===//

Costs Costs::unit(const Config &config) {
  Costs c;
  if (config.splitsBackward()) {
    c.backward = 1;
    c.weightGrad = 1;
  }
  return c;
}

double Costs::of(Op op) const {
  switch (op) {
  case Op::F:
    return forward;
  case Op::B:
    return backward;
  case Op::W:
    return weightGrad;
  case Op::U:
    return update;
  }
  return 0;
}

double Costs::of(const Action &a) const {
  if (a.stage < 0 || a.stage >= (int64_t)perStage.size())
    return of(a.op);
  const Stage &s = perStage[a.stage];
  switch (a.op) {
  case Op::F:
    return s.forward;
  case Op::B:
    return s.backward;
  case Op::W:
    return s.weightGrad;
  case Op::U:
    return s.update;
  }
  return 0;
}

//===----------------------------------------------------------------------===//
// Slot assignment
//===----------------------------------------------------------------------===//

/// True when `a` ends the backward of its (stage, micro-batch).
static bool endsBackward(const Config &c, const Action &a) {
  return a.op == (c.splitsBackward() ? Op::W : Op::B);
}

SlotAssignment assignSlots(const Schedule &s) {
  SlotAssignment out(s.ranks.size());
  for (size_t r = 0; r < s.ranks.size(); ++r) {
    std::set<int64_t> freeSlots;
    int64_t numSlots = 0;
    std::map<std::pair<int64_t, int64_t>, int64_t> live;
    for (const Action &a : s.ranks[r]) {
      int64_t slot = -1;
      if (a.op == Op::F) {
        if (freeSlots.empty()) {
          slot = numSlots++;
        } else {
          slot = *freeSlots.begin();
          freeSlots.erase(freeSlots.begin());
        }
        live[{a.stage, a.microbatch}] = slot;
      } else if (endsBackward(s.config, a)) {
        auto it = live.find({a.stage, a.microbatch});
        if (it != live.end()) {
          freeSlots.insert(it->second);
          live.erase(it);
        }
      }
      out[r].push_back(slot);
    }
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Verifier and simulator
//===----------------------------------------------------------------------===//

namespace {

/// One point-to-point operation of a communication step.
struct CommOp {
  bool isSend;
  int64_t peer;
  // Tag: direction (0 activation, 1 gradient), producing stage, micro-batch.
  std::tuple<int, int64_t, int64_t> tag;
  bool matches(int64_t self, const CommOp &o) const {
    return isSend != o.isSend && o.peer == self && tag == o.tag;
  }
};

/// A rank's program: compute (an action) or a communication step.
struct Item {
  int64_t action; ///< action index; for a step, the next action (or -1).
  bool isComm;
  std::vector<CommOp> ops;  ///< posted at this step
  std::vector<size_t> waits; ///< (ops' rank-wide ids) waited for here
};

} // namespace

/// How many actions past the next one a rank posts receives for.
static constexpr size_t kRecvLookahead = 1;

static std::vector<std::vector<Item>> lowerToItems(const Schedule &s) {
  const Config &c = s.config;
  int64_t numStages = c.numVirtualStages();
  std::vector<std::vector<Item>> out(s.ranks.size());
  for (size_t r = 0; r < s.ranks.size(); ++r) {
    std::vector<CommOp> pending;
    const auto &list = s.ranks[r];
    auto recvsOf = [&](const Action &a) {
      std::vector<CommOp> ops;
      if (a.op == Op::F && a.stage > 0 && c.rankOf(a.stage - 1) != (int64_t)r)
        ops.push_back({false, c.rankOf(a.stage - 1),
                       {0, a.stage - 1, a.microbatch}});
      if (a.op == Op::B && a.stage + 1 < numStages &&
          c.rankOf(a.stage + 1) != (int64_t)r)
        ops.push_back({false, c.rankOf(a.stage + 1),
                       {1, a.stage + 1, a.microbatch}});
      return ops;
    };
    size_t posted = 0; // actions whose receives are posted
    size_t numOps = 0;  // rank-wide op ids, in posting order
    std::map<size_t, std::vector<size_t>> recvWaits; // action -> op ids
    for (size_t i = 0; i < list.size(); ++i) {
      const Action &a = list[i];
      Item step{(int64_t)i, true, pending, {}};
      for (size_t j = 0; j < pending.size(); ++j)
        step.waits.push_back(numOps++);
      pending.clear();
      // Post the receives of this action and of the next kRecvLookahead
      // ones (Megatron posts the next forward's and backward's receives
      // with the current sends); each is waited for before its action.
      for (; posted < std::min(list.size(), i + 1 + kRecvLookahead); ++posted)
        for (const CommOp &op : recvsOf(list[posted])) {
          step.ops.push_back(op);
          recvWaits[posted].push_back(numOps++);
        }
      for (size_t id : recvWaits[i])
        step.waits.push_back(id);
      if (!step.ops.empty() || !step.waits.empty())
        out[r].push_back(step);
      out[r].push_back({(int64_t)i, false, {}, {}});
      if (a.op == Op::F && a.stage + 1 < numStages &&
          c.rankOf(a.stage + 1) != (int64_t)r)
        pending.push_back({true, c.rankOf(a.stage + 1),
                           {0, a.stage, a.microbatch}});
      if (a.op == Op::B && a.stage > 0 && c.rankOf(a.stage - 1) != (int64_t)r)
        pending.push_back({true, c.rankOf(a.stage - 1),
                           {1, a.stage, a.microbatch}});
    }
    if (!pending.empty()) {
      Item step{-1, true, pending, {}};
      for (size_t j = 0; j < pending.size(); ++j)
        step.waits.push_back(numOps++);
      out[r].push_back(step);
    }
  }
  return out;
}

static std::string describeComm(const CommOp &op) {
  std::ostringstream os;
  os << (op.isSend ? "send of the " : "receive of the ")
     << (std::get<0>(op.tag) == 0 ? "activation" : "gradient") << " of stage "
     << std::get<1>(op.tag) << " micro-batch " << std::get<2>(op.tag)
     << (op.isSend ? " to rank " : " from rank ") << op.peer;
  return os.str();
}

namespace {
struct Runner {
  const Schedule &s;
  const Config &c;
  SimResult result;
  Diagnostic diag;

  Runner(const Schedule &s) : s(s), c(s.config) {}

  bool fail(int64_t rank, int64_t index, const std::string &msg) {
    diag = {msg, rank, index};
    result.error = msg;
    return false;
  }

  /// Expected U's of stage v: (v, m) pairs.
  bool expectsUpdate(int64_t m) const {
    int64_t last = c.numMicrobatches - 1;
    switch (c.kind) {
    case Kind::PipeDream:
      return true;
    case Kind::TwoBW:
      return m % c.numRanks == c.numRanks - 1 || m == last;
    default:
      return m == last;
    }
  }

  bool staticChecks(const SlotAssignment *slots);
  bool communicate(const Costs &costs);
};
} // namespace

bool Runner::staticChecks(const SlotAssignment *slots) {
  std::string err = validate(c);
  if (!err.empty())
    return fail(-1, -1, err);
  if ((int64_t)s.ranks.size() != c.numRanks)
    return fail(-1, -1,
                "the schedule has " + std::to_string(s.ranks.size()) +
                    " ranks, its configuration " +
                    std::to_string(c.numRanks));
  int64_t numStages = c.numVirtualStages(), numMb = c.numMicrobatches;
  bool split = c.splitsBackward();
  std::map<std::tuple<int, int64_t, int64_t>, std::pair<int64_t, int64_t>> seen;
  result.peakActivationSlots.assign(c.numRanks, 0);
  result.peakWeightVersions.assign(numStages, 1);

  for (int64_t r = 0; r < c.numRanks; ++r) {
    const auto &list = s.ranks[r];
    std::set<std::tuple<int, int64_t, int64_t>> done;
    std::map<std::pair<int64_t, int64_t>, int64_t> version; // in flight
    std::vector<int64_t> current(numStages, 0);
    std::map<int64_t, std::pair<int64_t, int64_t>> liveSlots;
    std::map<std::pair<int64_t, int64_t>, int64_t> slotOf;
    std::set<int64_t> updated; // stages whose synchronous U ran
    int64_t inflight = 0;
    for (int64_t i = 0; i < (int64_t)list.size(); ++i) {
      const Action &a = list[i];
      std::string where = at(r, i, a);
      if (a.stage < 0 || a.stage >= numStages)
        return fail(r, i, where + ": stage out of range [0, " +
                              std::to_string(numStages) + ")");
      if (c.rankOf(a.stage) != r)
        return fail(r, i, where + ": stage " + std::to_string(a.stage) +
                              " runs on rank " +
                              std::to_string(c.rankOf(a.stage)));
      if (a.microbatch < 0 || a.microbatch >= numMb)
        return fail(r, i, where + ": micro-batch out of range [0, " +
                              std::to_string(numMb) + ")");
      if (a.op == Op::W && !split)
        return fail(r, i, where + ": W in a schedule that does not split "
                                  "the backward");
      if (a.op == Op::U && !expectsUpdate(a.microbatch))
        return fail(r, i, where + ": no update is due after micro-batch " +
                              std::to_string(a.microbatch) + " in " +
                              kindName(c.kind));
      auto key = std::make_tuple((int)a.op, a.stage, a.microbatch);
      auto [it, inserted] = seen.insert({key, {r, i}});
      if (!inserted)
        return fail(r, i, where + ": duplicate of action " +
                              std::to_string(it->second.second));
      if (c.isSynchronous() && a.op != Op::U && updated.count(a.stage))
        return fail(r, i, where + ": runs after the update of its stage "
                                  "(synchronous schedules update once, "
                                  "after every backward)");
      auto isDone = [&](Op op, int64_t v, int64_t m) {
        return done.count({(int)op, v, m}) != 0;
      };
      switch (a.op) {
      case Op::F:
        if (a.stage > 0 && c.rankOf(a.stage - 1) == r &&
            !isDone(Op::F, a.stage - 1, a.microbatch))
          return fail(r, i, where + ": runs before the F of stage " +
                                std::to_string(a.stage - 1) +
                                " that produces its input");
        break;
      case Op::B:
        if (!isDone(Op::F, a.stage, a.microbatch))
          return fail(r, i, where + ": B runs before its F");
        if (a.stage + 1 < numStages && c.rankOf(a.stage + 1) == r &&
            !isDone(Op::B, a.stage + 1, a.microbatch))
          return fail(r, i, where + ": runs before the B of stage " +
                                std::to_string(a.stage + 1) +
                                " that produces its gradient");
        break;
      case Op::W:
        if (!isDone(Op::B, a.stage, a.microbatch))
          return fail(r, i, where + ": W runs before its B");
        break;
      case Op::U: {
        Op last = split ? Op::W : Op::B;
        int64_t from = a.microbatch, to = a.microbatch;
        if (c.isSynchronous())
          from = 0;
        else if (c.kind == Kind::TwoBW)
          from = a.microbatch - a.microbatch % c.numRanks;
        for (int64_t m = from; m <= to; ++m)
          if (!isDone(last, a.stage, m))
            return fail(r, i, where + ": U runs before the " +
                                  std::string(1, opLetter(last)) +
                                  " of micro-batch " + std::to_string(m) +
                                  " whose gradient it applies");
        break;
      }
      }
      done.insert(key);

      // Activation slots and weight versions.
      std::pair<int64_t, int64_t> vm{a.stage, a.microbatch};
      if (a.op == Op::F) {
        ++inflight;
        version[vm] = current[a.stage];
        if (slots) {
          int64_t slot = (*slots)[r][i];
          auto live = liveSlots.find(slot);
          if (slot < 0)
            return fail(r, i, where + ": F has no activation slot");
          if (live != liveSlots.end())
            return fail(r, i,
                        where + ": reuses activation slot " +
                            std::to_string(slot) + " while micro-batch " +
                            std::to_string(live->second.second) +
                            " of stage " + std::to_string(live->second.first) +
                            " is still live in it");
          liveSlots[slot] = vm;
          slotOf[vm] = slot;
        }
      } else if (endsBackward(c, a)) {
        --inflight;
        version.erase(vm);
        if (slots) {
          liveSlots.erase(slotOf[vm]);
          slotOf.erase(vm);
        }
      } else if (a.op == Op::U) {
        ++current[a.stage];
        if (c.isSynchronous())
          updated.insert(a.stage);
      }
      result.peakActivationSlots[r] =
          std::max(result.peakActivationSlots[r], inflight);
      std::set<int64_t> versions{current[a.stage]};
      for (auto &[key2, ver] : version)
        if (key2.first == a.stage)
          versions.insert(ver);
      int64_t &peak = result.peakWeightVersions[a.stage];
      peak = std::max(peak, (int64_t)versions.size());
      int64_t bound = c.kind == Kind::PipeDream ? c.numRanks - r
                      : c.kind == Kind::TwoBW   ? 2
                                                : 1;
      if ((int64_t)versions.size() > bound)
        return fail(r, i, where + ": stage " + std::to_string(a.stage) +
                              " keeps " + std::to_string(versions.size()) +
                              " weight versions, more than the " +
                              std::to_string(bound) + " " +
                              kindName(c.kind) + " allows");
    }
  }

  // Missing actions.
  for (int64_t v = 0; v < numStages; ++v) {
    for (int64_t m = 0; m < numMb; ++m) {
      std::vector<Op> ops{Op::F, Op::B};
      if (split)
        ops.push_back(Op::W);
      if (expectsUpdate(m))
        ops.push_back(Op::U);
      for (Op op : ops)
        if (!seen.count({(int)op, v, m}))
          return fail(c.rankOf(v), -1,
                      "rank " + std::to_string(c.rankOf(v)) + ": missing " +
                          describe({op, v, m}));
    }
  }
  return true;
}

bool Runner::communicate(const Costs &costs) {
  auto items = lowerToItems(s);
  int64_t k = c.numRanks;
  std::vector<size_t> pc(k, 0);
  std::vector<double> time(k, 0);
  result.timeline.assign(k, {});
  for (int64_t r = 0; r < k; ++r)
    result.timeline[r].resize(s.ranks[r].size());
  auto head = [&](int64_t r) -> const Item * {
    return pc[r] < items[r].size() ? &items[r][pc[r]] : nullptr;
  };
  // Posted operations of each rank (rank-wide ids in posting order), and
  // whether and when each met its peer.
  struct Posted {
    CommOp op;
    bool matched = false;
    double postTime = 0, matchTime = 0;
  };
  std::vector<std::vector<Posted>> posted(k);
  std::vector<size_t> postedUpTo(k, SIZE_MAX); // item whose ops are posted
  while (true) {
    bool progress = false;
    for (int64_t r = 0; r < k; ++r) {
      while (const Item *it = head(r)) {
        if (it->isComm)
          break;
        const Action &a = s.ranks[r][it->action];
        double d = costs.of(a);
        result.timeline[r][it->action] = {time[r], time[r] + d};
        time[r] += d;
        ++pc[r];
        progress = true;
      }
      const Item *it = head(r);
      if (it && postedUpTo[r] != pc[r]) {
        postedUpTo[r] = pc[r];
        for (const CommOp &op : it->ops)
          posted[r].push_back({op, false, time[r], 0});
        progress = true;
      }
    }
    // Non-blocking semantics (isend/irecv + wait): posted ops meet their
    // peer's posted ops; a step ends when every op it waits for has met.
    for (int64_t r = 0; r < k; ++r) {
      for (Posted &p : posted[r]) {
        if (p.matched)
          continue;
        for (Posted &q : posted[p.op.peer]) {
          if (q.matched || !p.op.matches(r, q.op))
            continue;
          p.matched = q.matched = true;
          p.matchTime = q.matchTime =
              std::max(p.postTime, q.postTime) + costs.comm;
          progress = true;
          break;
        }
      }
    }
    for (int64_t r = 0; r < k; ++r) {
      const Item *it = head(r);
      if (!it || !it->isComm)
        continue;
      bool ready = true;
      double t = time[r];
      for (size_t id : it->waits) {
        ready &= posted[r][id].matched;
        t = std::max(t, posted[r][id].matchTime);
      }
      if (!ready)
        continue;
      time[r] = t;
      ++pc[r];
      progress = true;
    }
    bool finished = true;
    for (int64_t r = 0; r < k; ++r)
      finished &= head(r) == nullptr;
    if (finished)
      break;
    if (!progress) {
      std::ostringstream os;
      os << "deadlock under blocking send/recv:";
      int64_t firstRank = -1, firstIndex = -1;
      for (int64_t r = 0; r < k; ++r) {
        const Item *it = head(r);
        if (!it)
          continue;
        size_t id = it->waits.front();
        for (size_t w : it->waits)
          if (!posted[r][w].matched) {
            id = w;
            break;
          }
        os << " rank " << r << " waits in the "
           << describeComm(posted[r][id].op);
        if (it->action >= 0)
          os << " before action " << it->action << " ("
             << describe(s.ranks[r][it->action]) << ")";
        os << ";";
        if (firstRank < 0) {
          firstRank = r;
          firstIndex = it->action;
        }
      }
      return fail(firstRank, firstIndex, os.str());
    }
  }
  double makespan = 0, busy = 0;
  for (int64_t r = 0; r < k; ++r) {
    makespan = std::max(makespan, time[r]);
    for (const Slot &sl : result.timeline[r])
      busy += sl.end - sl.start;
  }
  result.makespan = makespan;
  result.bubbleFraction =
      makespan > 0 ? (k * makespan - busy) / (k * makespan) : 0;
  return true;
}

SimResult simulate(const Schedule &schedule, const Costs &costs) {
  Runner runner(schedule);
  if (runner.staticChecks(nullptr))
    runner.communicate(costs);
  return runner.result;
}

Diagnostic verifyWithLocation(const Schedule &schedule,
                              const SlotAssignment *slots) {
  Runner runner(schedule);
  if (runner.staticChecks(slots))
    runner.communicate(Costs::unit(schedule.config));
  return runner.diag;
}

std::string verify(const Schedule &schedule, const SlotAssignment *slots) {
  return verifyWithLocation(schedule, slots).message;
}

} // namespace schedule
} // namespace pipe
} // namespace pipedream
