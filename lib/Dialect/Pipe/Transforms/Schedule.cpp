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

const std::vector<Kind> &allKinds() {
  static const std::vector<Kind> kinds{
      Kind::GPipe, Kind::OneFOneB, Kind::Interleaved1F1B,
      Kind::PipeDream, Kind::TwoBW, Kind::ZBH1,
      Kind::ZBV, Kind::InterleavedZB, Kind::DualPipeV};
  return kinds;
}

std::optional<Kind> parseKind(const std::string &name) {
  for (Kind k : allKinds())
    if (name == kindName(k))
      return k;
  return std::nullopt;
}

std::string kindNameList() {
  std::string out;
  for (Kind k : allKinds())
    out += (out.empty() ? "" : ", ") + std::string(kindName(k));
  return out;
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
  case Kind::ZBV:
    return "zb-v";
  case Kind::InterleavedZB:
    return "interleaved-zb";
  case Kind::DualPipeV:
    return "dualpipe-v";
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
  std::string name = kindName(c.kind);
  auto str = [](int64_t v) { return std::to_string(v); };
  switch (c.kind) {
  case Kind::Interleaved1F1B:
    if (c.numMicrobatches % c.numRanks != 0)
      return "interleaved-1f1b needs the micro-batches (" +
             str(c.numMicrobatches) + ") to be a multiple of the stages (" +
             str(c.numRanks) + ")";
    break;
  case Kind::InterleavedZB: {
    if (c.numChunks < 2)
      return "interleaved-zb needs at least 2 chunks per stage, got " +
             str(c.numChunks) + " (with 1 chunk it is zb-h1)";
    // torch's ZB1P runs rounds of M / max(1, M / K) micro-batches.
    int64_t rounds = std::max<int64_t>(1, c.numMicrobatches / c.numRanks);
    if (c.numMicrobatches % rounds != 0)
      return "interleaved-zb needs the micro-batches (" +
             str(c.numMicrobatches) + ") to be a multiple of the rounds " +
             "max(1, M / K) = " + str(rounds);
    break;
  }
  case Kind::ZBV:
  case Kind::DualPipeV:
    if (c.numChunks != 2)
      return name + " runs exactly 2 chunks per stage (a V: stage s and " +
             "2K-1-s on rank s), got " + str(c.numChunks);
    if (c.kind == Kind::DualPipeV && c.numMicrobatches < 2 * c.numRanks)
      return "dualpipe-v needs at least 2K = " + str(2 * c.numRanks) +
             " micro-batches (one per virtual stage), got " +
             str(c.numMicrobatches);
    break;
  default:
    if (c.numChunks != 1)
      return name + " runs one chunk per stage; only interleaved-1f1b, " +
             "interleaved-zb, zb-v and dualpipe-v take chunks";
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

/// The synchronous kinds' flush: one U per chunk of each rank, chunk order.
static void appendUpdates(Schedule &s) {
  const Config &c = s.config;
  for (int64_t r = 0; r < c.numRanks; ++r)
    for (int64_t chunk = 0; chunk < c.numChunks; ++chunk)
      s.ranks[r].push_back({Op::U, c.stageOf(r, chunk), c.numMicrobatches - 1});
}

/// ZB-H1 (V = 1) and ZB1P (interleaved-zb, V >= 2): torch's
/// ScheduleInterleavedZeroBubble order. Rank r runs `warmup` forwards, then
/// pairs of one forward and one input-gradient backward, then the remaining
/// backwards; the weight gradient of the i-th backward follows the
/// (i + r)-th backward, so W is deferred by r micro-batches on rank r (the
/// last r drain at the end). In flight on rank r (V = 1): warm-up K-1-r plus
/// r deferred plus the current one = K micro-batches.
static void buildZeroBubbleLoop(Schedule &s) {
  const Config &c = s.config;
  int64_t k = c.numRanks, v = c.numChunks, numMb = c.numMicrobatches;
  int64_t rounds = std::max<int64_t>(1, numMb / k);
  int64_t perRound = numMb / rounds;
  int64_t total = numMb * v;
  for (int64_t r = 0; r < k; ++r) {
    auto &list = s.ranks[r];
    int64_t warmup = std::min((v - 1) * perRound + (k - 1 - r), total);
    auto forwardStage = [&](int64_t step) {
      return c.stageOf(r, (step / perRound) % v);
    };
    auto backwardStage = [&](int64_t step) {
      return c.stageOf(r, v - 1 - ((step - warmup) / perRound) % v);
    };
    std::map<int64_t, int64_t> nextF, nextB, nextW;
    std::vector<int64_t> backwardSteps;
    size_t numW = 0;
    auto forward = [&](int64_t step) {
      int64_t stage = forwardStage(step);
      list.push_back({Op::F, stage, nextF[stage]++});
    };
    auto weight = [&] {
      int64_t stage = backwardStage(backwardSteps[numW++]);
      list.push_back({Op::W, stage, nextW[stage]++});
    };
    auto backward = [&](int64_t step) {
      int64_t stage = backwardStage(step);
      list.push_back({Op::B, stage, nextB[stage]++});
      backwardSteps.push_back(step);
      if (step - warmup >= r)
        weight();
    };
    for (int64_t step = 0; step < total + warmup; ++step) {
      if (step < total)
        forward(step);
      if (step >= warmup)
        backward(step);
    }
    while (numW < backwardSteps.size())
      weight();
  }
  appendUpdates(s);
}

/// ZB-V: torch's ScheduleZBVZeroBubble order (V placement; chunk 0 is stage
/// r, chunk 1 stage 2K-1-r). It is built for max(M, 2K-1) micro-batches and
/// the actions of the micro-batches past M are dropped, as torch does.
static void buildZBV(Schedule &s) {
  const Config &c = s.config;
  int64_t k = c.numRanks, numMb = c.numMicrobatches;
  int64_t n = std::max(2 * k - 1, numMb);
  for (int64_t r = 0; r < k; ++r) {
    auto &list = s.ranks[r];
    int64_t s0 = c.stageOf(r, 0), s1 = c.stageOf(r, 1);
    int64_t f0 = 0, f1 = 0, b0 = 0, b1 = 0;
    auto emit = [&](Op op, int64_t stage, int64_t mb) {
      if (mb < numMb)
        list.push_back({op, stage, mb});
    };
    for (int64_t i = 0; i < 2 * (k - r) - 1; ++i)
      emit(Op::F, s0, f0++);
    for (int64_t i = 0; i < r; ++i) {
      emit(Op::F, s1, f1++);
      emit(Op::F, s0, f0++);
    }
    for (int64_t i = 0; i < k - r; ++i) {
      emit(Op::F, s1, f1++);
      emit(Op::B, s1, b1);
      emit(Op::W, s1, b1++);
    }
    while (f1 < f0 || f0 < n) {
      if (f0 < n)
        emit(Op::F, s0, f0++);
      emit(Op::B, s0, b0);
      emit(Op::W, s0, b0++);
      emit(Op::F, s1, f1++);
      emit(Op::B, s1, b1);
      emit(Op::W, s1, b1++);
    }
    int64_t w0 = b0, w1 = b1;
    for (int64_t i = 0; i < r; ++i) {
      emit(Op::B, s0, b0++);
      emit(Op::B, s1, b1++);
    }
    for (int64_t i = 0; i < k - r; ++i) {
      emit(Op::B, s0, b0++);
      emit(Op::W, s0, w0++);
    }
    while (w1 < b1)
      emit(Op::W, s1, w1++);
    while (w0 < b0)
      emit(Op::W, s0, w0++);
  }
  appendUpdates(s);
}

/// DualPipeV: torch's ScheduleDualPipeV order (after DeepSeek's DualPipe).
/// A full backward is B + W joined (Join::FullBackward); an overlapped pair
/// is an F and the full backward of the other chunk (Join::Overlap on the
/// B). Input-gradient backwards queue their W, which later steps pop.
static void buildDualPipeV(Schedule &s) {
  const Config &c = s.config;
  int64_t k = c.numRanks, numMb = c.numMicrobatches;
  for (int64_t r = 0; r < k; ++r) {
    auto &list = s.ranks[r];
    int64_t s0 = c.stageOf(r, 0), s1 = c.stageOf(r, 1);
    std::map<int64_t, int64_t> nextF, nextB;
    std::vector<std::pair<int64_t, int64_t>> weights; // queued W, FIFO
    size_t nextWeight = 0;
    auto forward = [&](int64_t stage) {
      list.push_back({Op::F, stage, nextF[stage]++});
    };
    auto inputBackward = [&](int64_t stage) {
      int64_t mb = nextB[stage]++;
      list.push_back({Op::B, stage, mb});
      weights.push_back({stage, mb});
    };
    auto fullBackward = [&](int64_t stage, Join join) {
      int64_t mb = nextB[stage]++;
      list.push_back({Op::B, stage, mb, join});
      list.push_back({Op::W, stage, mb, Join::FullBackward});
    };
    auto pendingWeight = [&] {
      if (nextWeight < weights.size()) {
        auto [stage, mb] = weights[nextWeight++];
        list.push_back({Op::W, stage, mb});
      }
    };
    auto overlap = [&](int64_t forwardStage, int64_t backwardStage) {
      forward(forwardStage);
      fullBackward(backwardStage, Join::Overlap);
    };
    for (int64_t i = 0; i < (k - r - 1) * 2; ++i)
      forward(s0);
    for (int64_t i = 0; i <= r; ++i) {
      forward(s0);
      forward(s1);
    }
    for (int64_t i = 0; i < k - r - 1; ++i) {
      inputBackward(s1);
      pendingWeight();
      forward(s1);
    }
    for (int64_t i = 0; i < numMb - 2 * k + r + 1; ++i) {
      if (i == 0 && r == k - 1) {
        // torch: the last rank does not overlap its first pair.
        forward(s0);
        fullBackward(s1, Join::None);
      } else {
        overlap(s0, s1);
      }
      overlap(s1, s0);
    }
    for (int64_t i = 0; i < k - r - 1; ++i) {
      fullBackward(s1, Join::None);
      overlap(s1, s0);
    }
    // The second half of the drain splits the backward (zero bubble).
    bool split = false;
    auto drainBackward = [&](int64_t stage) {
      if (split)
        inputBackward(stage);
      else
        fullBackward(stage, Join::None);
    };
    int64_t last = r + 1;
    for (int64_t i = 0; i < last; ++i) {
      if (i == last / 2 && r % 2 == 1)
        split = true;
      drainBackward(s1);
      if (i == last / 2 && r % 2 == 0)
        split = true;
      drainBackward(s0);
    }
    for (int64_t i = 0; i < k - r - 1; ++i) {
      pendingWeight();
      drainBackward(s0);
    }
    while (nextWeight < weights.size())
      pendingWeight();
  }
  appendUpdates(s);
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
  case Kind::InterleavedZB:
    buildZeroBubbleLoop(s);
    break;
  case Kind::ZBV:
    buildZBV(s);
    break;
  case Kind::DualPipeV:
    buildDualPipeV(s);
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
    // Deferred sends: waited for at the end of the step, not where posted.
    const bool deferred = c.defersSends();
    std::vector<size_t> deferredSends;
    std::map<size_t, std::vector<size_t>> recvWaits; // action -> op ids
    for (size_t i = 0; i < list.size();) {
      // A group: an action and the ones joined to it (Action::join) run
      // back to back, with one communication step before them.
      size_t end = i + 1;
      while (end < list.size() && list[end].join != Join::None)
        ++end;
      Item step{(int64_t)i, true, pending, {}};
      for (size_t j = 0; j < pending.size(); ++j) {
        if (deferred)
          deferredSends.push_back(numOps++);
        else
          step.waits.push_back(numOps++);
      }
      pending.clear();
      // Post the receives of this group and of the next kRecvLookahead
      // actions (Megatron posts the next forward's and backward's receives
      // with the current sends); each is waited for before its group.
      for (; posted < std::min(list.size(), end + kRecvLookahead); ++posted)
        for (const CommOp &op : recvsOf(list[posted])) {
          step.ops.push_back(op);
          recvWaits[posted].push_back(numOps++);
        }
      for (size_t g = i; g < end; ++g)
        for (size_t id : recvWaits[g])
          step.waits.push_back(id);
      if (!step.ops.empty() || !step.waits.empty())
        out[r].push_back(step);
      for (; i < end; ++i) {
        const Action &a = list[i];
        out[r].push_back({(int64_t)i, false, {}, {}});
        if (a.op == Op::F && a.stage + 1 < numStages &&
            c.rankOf(a.stage + 1) != (int64_t)r)
          pending.push_back({true, c.rankOf(a.stage + 1),
                             {0, a.stage, a.microbatch}});
        if (a.op == Op::B && a.stage > 0 &&
            c.rankOf(a.stage - 1) != (int64_t)r)
          pending.push_back({true, c.rankOf(a.stage - 1),
                             {1, a.stage, a.microbatch}});
      }
    }
    if (!pending.empty() || !deferredSends.empty()) {
      Item step{-1, true, pending, deferredSends};
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
  std::set<std::tuple<int, int64_t, int64_t>> present; // anywhere
  for (const auto &list : s.ranks)
    for (const Action &a : list)
      present.insert({(int)a.op, a.stage, a.microbatch});
  result.peakActivationSlots.assign(c.numRanks, 0);
  result.peakWeightGradSlots.assign(c.numRanks, 0);
  result.peakWeightVersions.assign(numStages, 1);

  for (int64_t r = 0; r < c.numRanks; ++r) {
    const auto &list = s.ranks[r];
    std::set<std::tuple<int, int64_t, int64_t>> done;
    std::map<std::pair<int64_t, int64_t>, int64_t> version; // in flight
    std::vector<int64_t> current(numStages, 0);
    std::map<int64_t, std::pair<int64_t, int64_t>> liveSlots;
    std::map<std::pair<int64_t, int64_t>, int64_t> slotOf;
    std::set<int64_t> updated; // stages whose synchronous U ran
    int64_t inflight = 0, weightGradsDue = 0;
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
      if (a.join == Join::FullBackward &&
          (a.op != Op::W || i == 0 || list[i - 1].op != Op::B ||
           list[i - 1].stage != a.stage ||
           list[i - 1].microbatch != a.microbatch))
        return fail(r, i, where + ": joined as a full backward, but it is "
                                  "not the W right after the B of its stage "
                                  "and micro-batch");
      if (a.join == Join::Overlap &&
          (a.op != Op::B || i == 0 || list[i - 1].op != Op::F ||
           list[i - 1].join != Join::None))
        return fail(r, i, where + ": overlapped, but it is not a B right "
                                  "after an F (OVERLAP_F_B pairs a forward "
                                  "with a backward)");
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
        for (int64_t m = from; m <= to; ++m) {
          if (!present.count({(int)last, a.stage, m}))
            return fail(r, i, where + ": missing " +
                                  describe({last, a.stage, m}) +
                                  " (whose gradient this U applies)");
          if (!isDone(last, a.stage, m))
            return fail(r, i, where + ": U runs before the " +
                                  std::string(1, opLetter(last)) +
                                  " of micro-batch " + std::to_string(m) +
                                  " whose gradient it applies");
        }
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
      } else if (split && a.op == Op::B) {
        ++weightGradsDue;
      } else if (endsBackward(c, a)) {
        if (split)
          --weightGradsDue;
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
      result.peakWeightGradSlots[r] =
          std::max(result.peakWeightGradSlots[r], weightGradsDue);
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
