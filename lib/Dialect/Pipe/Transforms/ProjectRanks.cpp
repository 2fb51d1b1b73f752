//===- ProjectRanks.cpp - pipe-project-ranks -------------------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Global view -> per-rank view. Both sides of every message come from one
// pipe.transfer in one global order, so they cannot disagree (Shardy MPMD's
// argument); the per-rank programs are nevertheless verified after the
// split, by the same checks pipe-verify-schedule runs on per-rank input.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Dialect/Pipe/Transforms/ProjectRanks.h"
#include "pipedream/Dialect/Pipe/Transforms/ScheduleAttrs.h"

#include "pipedream/Dialect/Pipe/IR/PipeOps.h"
#include "pipedream/Dialect/Pipe/Transforms/Messages.h"
#include "pipedream/Dialect/Pipe/Transforms/Passes.h"
#include "pipedream/Dialect/Pipe/Transforms/Schedule.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <map>
#include <set>
#include <tuple>

namespace pipedream::pipe {
#define GEN_PASS_DEF_PROJECTRANKSPASS
#include "pipedream/Dialect/Pipe/Transforms/Passes.h.inc"
} // namespace pipedream::pipe

using namespace mlir;
using namespace pipedream::pipe;
namespace sched = pipedream::pipe::schedule;

//===----------------------------------------------------------------------===//
// Verification of per-rank programs
//===----------------------------------------------------------------------===//

/// `train_rank3` -> `train`; other names are their own stem.
static std::string stemOf(StringRef name) {
  size_t pos = name.rfind("_rank");
  if (pos == StringRef::npos)
    return name.str();
  StringRef digits = name.drop_front(pos + 5);
  if (digits.empty() ||
      !llvm::all_of(digits, [](char c) { return c >= '0' && c <= '9'; }))
    return name.str();
  return name.take_front(pos).str();
}

static std::string typeString(Type type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << type;
  return s;
}

/// Stash/restore slots of one per-rank program.
static LogicalResult verifySlots(ProgramOp program, int64_t k) {
  std::map<std::pair<int, int64_t>, std::pair<int64_t, int64_t>> live;
  int64_t rank = *program.getRank();
  for (Operation &op : program.getBody().front()) {
    if (auto st = dyn_cast<StashOp>(op)) {
      int64_t v = st.getStage().getVirtualIndex(k);
      auto key = std::make_pair((int)st.getKind(), (int64_t)st.getSlot());
      auto it = live.find(key);
      if (it != live.end())
        return op.emitError()
               << "rank " << rank << ": stash of stage " << v
               << " micro-batch " << st.getMicrobatch() << " reuses slot "
               << st.getSlot() << " while micro-batch " << it->second.second
               << " of stage " << it->second.first << " is still live in it";
      live[key] = {v, (int64_t)st.getMicrobatch()};
    } else if (auto rs = dyn_cast<RestoreOp>(op)) {
      int64_t v = rs.getStage().getVirtualIndex(k);
      auto key = std::make_pair((int)rs.getKind(), (int64_t)rs.getSlot());
      auto it = live.find(key);
      if (it == live.end() ||
          it->second != std::make_pair(v, (int64_t)rs.getMicrobatch()))
        return op.emitError()
               << "rank " << rank << ": restore of stage " << v
               << " micro-batch " << rs.getMicrobatch() << " from slot "
               << rs.getSlot() << " has no live matching stash before it";
      live.erase(it);
    }
  }
  return success();
}

static LogicalResult verifySet(StringRef stem, ArrayRef<ProgramOp> programs,
                               bool checkSchedule) {
  ProgramOp first = programs.front();
  ScheduleAttr attr = first.getSchedule();
  int64_t k = attr.getNumStages();
  std::vector<ProgramOp> byRank(k);
  for (ProgramOp p : programs) {
    if (p.getSchedule() != attr)
      return p.emitError() << "per-rank program @" << p.getSymName()
                           << " has schedule " << p.getSchedule()
                           << ", but @" << first.getSymName() << " of the "
                           << "same set has " << attr;
    int64_t r = *p.getRank();
    if (byRank[r])
      return p.emitError() << "a second program for rank " << r << " (@"
                           << byRank[r].getSymName() << " is one)";
    byRank[r] = p;
  }
  for (int64_t r = 0; r < k; ++r)
    if (!byRank[r])
      return first.emitError()
             << "the per-rank programs @" << stem << "_rank* have no program "
             << "for rank " << r << " of " << k;

  // Messages.
  sched::RankEvents events(k);
  std::vector<std::vector<Operation *>> ops(k);
  for (int64_t r = 0; r < k; ++r) {
    for (Operation &op : byRank[r].getBody().front().without_terminator()) {
      sched::Event e;
      if (auto send = dyn_cast<SendOp>(op)) {
        e = {sched::Event::Send, (int64_t)send.getPeer(),
             (int64_t)send.getTag(), typeString(send.getInput().getType()),
             "", {}};
      } else if (auto recv = dyn_cast<RecvOp>(op)) {
        e = {sched::Event::Recv, (int64_t)recv.getPeer(),
             (int64_t)recv.getTag(), typeString(recv.getType()), "", {}};
      } else if (auto reduce = dyn_cast<AllReduceGradOp>(op)) {
        e.kind = sched::Event::Collective;
        SmallVector<int64_t> group = reduce.getRanks();
        e.group.assign(group.begin(), group.end());
        e.type = typeString(reduce.getGradType());
        e.what = reduce.getGradName();
      } else {
        e.what = op.getName().getStringRef().str();
      }
      events[r].push_back(e);
      ops[r].push_back(&op);
    }
  }
  sched::Diagnostic diag = sched::verifyMessages(events);
  if (!diag.message.empty()) {
    Operation *at = first;
    if (diag.rank >= 0 && diag.index >= 0)
      at = ops[diag.rank][diag.index];
    return at->emitError() << diag.message;
  }

  // Stash/restore and the schedule the stage calls form.
  sched::Schedule schedule;
  schedule.config = {toScheduleKind(attr.getKind()), k, attr.getNumMicrobatches(),
                     attr.getNumChunks()};
  schedule.ranks.resize(k);
  std::vector<std::vector<Operation *>> calls(k);
  for (int64_t r = 0; r < k; ++r) {
    if (failed(verifySlots(byRank[r], k)) ||
        failed(verifyGradientReductions(byRank[r])))
      return failure();
    for (auto call : byRank[r].getBody().getOps<CallStageOp>()) {
      std::optional<sched::Op> op = toScheduleOp(call.getAction());
      if (!op)
        continue;
      schedule.ranks[r].push_back({*op, call.getStage().getVirtualIndex(k),
                                   (int64_t)call.getMicrobatch(),
                                   joinOf(call)});
      calls[r].push_back(call);
    }
  }
  if (!checkSchedule)
    return success();
  diag = sched::verifyWithLocation(schedule);
  if (diag.message.empty())
    return success();
  Operation *at = byRank[diag.rank >= 0 && diag.rank < k ? diag.rank : 0];
  if (diag.rank >= 0 && diag.rank < k && diag.index >= 0 &&
      diag.index < (int64_t)calls[diag.rank].size())
    at = calls[diag.rank][diag.index];
  return at->emitError() << diag.message;
}

std::map<std::string, Type>
pipedream::pipe::gradientAccumulators(FunctionOpInterface fn) {
  std::map<std::string, Type> out;
  if (!fn)
    return out;
  for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i) {
    auto role = fn.getArgAttrOfType<StringAttr>(i, "nn.role");
    auto name = fn.getArgAttrOfType<StringAttr>(i, "nn.name");
    if (role && role.getValue() == "grad" && name &&
        name.getValue().starts_with("grad:"))
      out[name.getValue().drop_front(5).str()] = fn.getArgumentTypes()[i];
  }
  // A result that updates the accumulator adds into it too.
  for (unsigned j = 0, e = fn.getNumResults(); j < e; ++j)
    if (auto updates = fn.getResultAttrOfType<StringAttr>(j, "nn.updates");
        updates && updates.getValue().starts_with("grad:"))
      out.insert({updates.getValue().drop_front(5).str(),
                  fn.getResultTypes()[j]});
  return out;
}

/// gradientAccumulators of the stage function `call` calls.
static std::map<std::string, Type>
calleeAccumulators(SymbolTableCollection &symbols, CallStageOp call) {
  return gradientAccumulators(dyn_cast_or_null<FunctionOpInterface>(
      symbols.lookupNearestSymbolFrom(call, call.getCalleeAttr())));
}

/// Gradient clipping (docs/Pipe.md "Gradient clipping"): on each rank, the
/// N of each of its stages follows every B and W of that stage; the
/// all-reduce of PipeDialect::kGradNormWeight follows every N of the rank
/// (one per stage); every U that reads the norm follows that all-reduce
/// (with one rank, the rank's N).
static LogicalResult verifyGradientNorm(ProgramOp program) {
  ScheduleAttr attr = program.getSchedule();
  int64_t k = attr.getNumStages();
  bool global = program.isGlobalView();
  SymbolTableCollection symbols;
  auto readsNorm = [&](CallStageOp call) {
    return calleeAccumulators(symbols, call)
               .count(PipeDialect::kGradNormWeight.str()) != 0;
  };
  Block &body = program.getBody().front();
  // The stages of each rank (those it calls), and whether clipping is on.
  std::map<int64_t, std::set<int64_t>> stagesOf;
  bool any = false;
  for (auto call : body.getOps<CallStageOp>()) {
    stagesOf[call.getStage().getRank()].insert(
        call.getStage().getVirtualIndex(k));
    any |= call.getAction() == ActionKind::GradNorm;
  }
  for (auto reduce : body.getOps<AllReduceGradOp>())
    any |= reduce.getWeight() == PipeDialect::kGradNormWeight;
  if (!any)
    return success();
  // Per rank: the stages whose N ran, and whether the norm is complete.
  std::map<int64_t, std::set<int64_t>> normed;
  std::map<int64_t, bool> complete;
  for (Operation &op : body) {
    if (auto reduce = dyn_cast<AllReduceGradOp>(op)) {
      if (reduce.getWeight() != PipeDialect::kGradNormWeight)
        continue;
      for (int64_t r : reduce.getRanks()) {
        if (!global && r != static_cast<int64_t>(*program.getRank()))
          continue;
        for (int64_t v : stagesOf[r])
          if (!normed[r].count(v))
            return reduce.emitError() << "rank " << r << ": the all-reduce of '"
                                      << PipeDialect::kGradNormBuffer
                                      << "' before the N of stage " << v;
        if (complete[r])
          return reduce.emitError()
                 << "rank " << r << ": a second all-reduce of '"
                 << PipeDialect::kGradNormBuffer << "'";
        complete[r] = true;
      }
      continue;
    }
    auto call = dyn_cast<CallStageOp>(op);
    if (!call)
      continue;
    int64_t r = call.getStage().getRank();
    int64_t v = call.getStage().getVirtualIndex(k);
    std::string where = "rank " + std::to_string(r) + ": " +
                        stringifyActionKind(call.getAction()).str() +
                        " of stage " + std::to_string(v) + " micro-batch " +
                        std::to_string(call.getMicrobatch());
    switch (call.getAction()) {
    case ActionKind::Forward:
      break;
    case ActionKind::Backward:
    case ActionKind::WeightGrad:
      if (normed[r].count(v))
        return call.emitError()
               << where << " adds into the gradients after their norm (N)";
      break;
    case ActionKind::GradNorm:
      if (complete[r] || !normed[r].insert(v).second)
        return call.emitError()
               << where << " adds into '" << PipeDialect::kGradNormBuffer
               << "' a second time or after its all-reduce";
      // One rank: its own N's are the whole sum.
      if (k == 1 && normed[r].size() == stagesOf[r].size())
        complete[r] = true;
      break;
    case ActionKind::Update:
      if (readsNorm(call) && !complete[r])
        return call.emitError()
               << where << " clips by '" << PipeDialect::kGradNormBuffer
               << "' before it is complete (the N of every stage, then "
                  "its all-reduce over the ranks)";
      break;
    }
  }
  return success();
}

LogicalResult pipedream::pipe::verifyGradientReductions(ProgramOp program) {
  ScheduleAttr attr = program.getSchedule();
  int64_t k = attr.getNumStages();
  bool global = program.isGlobalView();
  bool splits = attr.splitsBackward();
  SymbolTableCollection symbols;
  auto accumulatorsOf = [&](CallStageOp call) {
    return calleeAccumulators(symbols, call);
  };
  // Which weights are summed: those in some all-reduce, and (global view)
  // those whose accumulator stages of two ranks add into.
  // Stages whose B/W add into or whose U applies grad:<w>, and the ranks
  // whose U applies it (the holders).
  std::map<std::string, std::set<int64_t>> stagesOf, holders;
  std::set<std::string> reduced;
  for (Operation &op : program.getBody().front()) {
    if (auto reduce = dyn_cast<AllReduceGradOp>(op)) {
      reduced.insert(reduce.getWeight().str());
      continue;
    }
    auto call = dyn_cast<CallStageOp>(op);
    if (!call)
      continue;
    bool update = call.getAction() == ActionKind::Update;
    if (!update && call.getAction() != (splits ? ActionKind::WeightGrad
                                               : ActionKind::Backward))
      continue;
    for (auto &[name, type] : accumulatorsOf(call)) {
      if (name == PipeDialect::kGradNormWeight)
        continue; // verifyGradientNorm
      stagesOf[name].insert(call.getStage().getVirtualIndex(k));
      if (update)
        holders[name].insert(call.getStage().getRank());
    }
  }
  reduced.erase(PipeDialect::kGradNormWeight.str());
  std::set<std::string> summed = reduced;
  if (global)
    for (auto &[name, ranks] : holders)
      if (ranks.size() >= 2)
        summed.insert(name);
  if (failed(verifyGradientNorm(program)))
    return failure();
  if (summed.empty())
    return success();
  // Per (rank, weight): whether an all-reduce ran since the last U.
  std::map<std::pair<int64_t, std::string>, Operation *> reducedAt;
  for (Operation &op : program.getBody().front()) {
    if (auto reduce = dyn_cast<AllReduceGradOp>(op)) {
      std::string name = reduce.getWeight().str();
      if (name == PipeDialect::kGradNormWeight)
        continue;
      if (global) {
        std::set<int64_t> stages;
        for (auto stage : reduce.getStages().getAsRange<StageAttr>())
          stages.insert(stage.getVirtualIndex(k));
        if (stages != stagesOf[name])
          return reduce.emitError()
                 << "the all-reduce of '" << reduce.getGradName()
                 << "' must list exactly the stages whose "
                 << (splits ? "W" : "B") << " adds into it or whose U "
                 << "applies it";
      }
      for (int64_t r : reduce.getRanks()) {
        if (!global && r != static_cast<int64_t>(*program.getRank()))
          continue;
        Operation *&at = reducedAt[{r, name}];
        if (at)
          return reduce.emitError()
                 << "rank " << r << ": a second all-reduce of '"
                 << reduce.getGradName() << "' before its update";
        at = reduce;
      }
      continue;
    }
    auto call = dyn_cast<CallStageOp>(op);
    if (!call)
      continue;
    int64_t r = call.getStage().getRank();
    std::string where = "rank " + std::to_string(r) + ": " +
                        stringifyActionKind(call.getAction()).str() +
                        " of stage " +
                        std::to_string(call.getStage().getVirtualIndex(k)) +
                        " micro-batch " +
                        std::to_string(call.getMicrobatch());
    bool adds = call.getAction() == ActionKind::Backward ||
                call.getAction() == ActionKind::WeightGrad;
    for (auto &[name, type] : accumulatorsOf(call)) {
      if (!summed.count(name))
        continue;
      auto it = reducedAt.find({r, name});
      bool isReduced = it != reducedAt.end() && it->second;
      // Clipping's N reads the summed gradient, which its U then applies.
      if (call.getAction() == ActionKind::GradNorm) {
        if (!isReduced)
          return call.emitError()
                 << where << " reads 'grad:" << name
                 << "' of a shared weight before the pipe.all_reduce_grad "
                    "summing it over the ranks that hold the weight";
        continue;
      }
      if (adds && isReduced)
        return call.emitError()
               << where << " adds into 'grad:" << name
               << "' after its all-reduce and before the update";
      if (call.getAction() != ActionKind::Update)
        continue;
      if (!isReduced)
        return call.emitError()
               << where << " applies 'grad:" << name
               << "' of a shared weight without a pipe.all_reduce_grad "
                  "summing it over the ranks that hold the weight";
      it->second = nullptr;
    }
  }
  for (auto &[key, at] : reducedAt)
    if (at)
      return at->emitError() << "rank " << key.first << ": no update of '"
                             << key.second << "' follows its all-reduce";
  return success();
}

sched::Schedule pipedream::pipe::scheduleOfProgram(ProgramOp program) {
  ScheduleAttr attr = program.getSchedule();
  int64_t k = attr.getNumStages();
  sched::Schedule schedule;
  schedule.config = {toScheduleKind(attr.getKind()), k, attr.getNumMicrobatches(),
                     attr.getNumChunks()};
  schedule.ranks.resize(k);
  for (auto call : program.getBody().getOps<CallStageOp>())
    if (std::optional<sched::Op> op = toScheduleOp(call.getAction()))
      schedule.ranks[call.getStage().getRank() % k].push_back(
          {*op, call.getStage().getVirtualIndex(k),
           (int64_t)call.getMicrobatch(), joinOf(call)});
  return schedule;
}

LogicalResult pipedream::pipe::verifyRankPrograms(ModuleOp module,
                                                 bool checkSchedule) {
  std::vector<std::pair<std::string, SmallVector<ProgramOp>>> sets;
  for (ProgramOp p : module.getOps<ProgramOp>()) {
    if (p.isGlobalView())
      continue;
    std::string stem = stemOf(p.getSymName());
    auto it = llvm::find_if(sets, [&](auto &s) { return s.first == stem; });
    if (it == sets.end())
      sets.push_back({stem, {p}});
    else
      it->second.push_back(p);
  }
  bool ok = true;
  for (auto &[stem, programs] : sets)
    ok &= succeeded(verifySet(stem, programs, checkSchedule));
  return success(ok);
}

//===----------------------------------------------------------------------===//
// Projection
//===----------------------------------------------------------------------===//

namespace {

struct ProjectRanksPass
    : pipedream::pipe::impl::ProjectRanksPassBase<ProjectRanksPass> {
  using Base::Base;
  void runOnOperation() override;
};

/// Owner rank of a value; kEverywhere for copies of operand-free pure ops.
constexpr int64_t kEverywhere = -1;

/// The rank an op names itself: its inherent stage, or `pipe.stage`.
std::optional<int64_t> explicitRank(Operation *op) {
  if (auto call = dyn_cast<CallStageOp>(op))
    return call.getStage().getRank();
  if (auto st = dyn_cast<StashOp>(op))
    return st.getStage().getRank();
  if (auto rs = dyn_cast<RestoreOp>(op))
    return rs.getStage().getRank();
  if (auto stage = op->getAttrOfType<StageAttr>("pipe.stage"))
    return stage.getRank();
  return std::nullopt;
}

/// Moves `recv` down past local work: not past a message, the terminator,
/// or an op that reads its result.
void sinkRecv(RecvOp recv) {
  Value result = recv.getResult();
  while (Operation *next = recv->getNextNode()) {
    if (next->hasTrait<OpTrait::IsTerminator>() ||
        isa<SendOp, RecvOp, AllReduceGradOp>(next) ||
        llvm::any_of(result.getUsers(),
                     [&](Operation *user) { return next->isAncestor(user); }))
      break;
    recv->moveAfter(next);
  }
}

} // namespace

static LogicalResult projectProgram(ModuleOp module, ProgramOp global) {
  ScheduleAttr attr = global.getSchedule();
  int64_t k = attr.getNumStages();
  Location loc = global.getLoc();

  SmallVector<int64_t> argRank, resRank;
  for (unsigned i = 0; i < global.getNumArguments(); ++i) {
    auto st = global.getArgAttrOfType<StageAttr>(i, "pipe.stage");
    if (!st)
      return global.emitError()
             << "argument " << i << " has no pipe.stage: pipe-project-ranks "
             << "cannot tell which rank owns it";
    argRank.push_back(st.getRank());
  }
  for (unsigned i = 0; i < global.getNumResults(); ++i) {
    auto st = global.getResultAttrOfType<StageAttr>(i, "pipe.stage");
    if (!st)
      return global.emitError()
             << "result " << i << " has no pipe.stage: pipe-project-ranks "
             << "cannot tell which rank returns it";
    resRank.push_back(st.getRank());
  }

  OpBuilder mb(global);
  mb.setInsertionPointAfter(global);
  SmallVector<ProgramOp> programs;
  SmallVector<OpBuilder> builders;
  SmallVector<IRMapping> maps(k);
  llvm::DenseMap<Value, int64_t> owner;
  Block &body = global.getBody().front();
  for (int64_t r = 0; r < k; ++r) {
    std::string name = (global.getSymName() + "_rank" + Twine(r)).str();
    if (SymbolTable::lookupSymbolIn(module, name))
      return global.emitError() << "cannot project: symbol @" << name
                                << " already exists";
    SmallVector<Type> argTypes, resTypes;
    SmallVector<Attribute> argAttrs, resAttrs;
    for (unsigned i = 0; i < argRank.size(); ++i)
      if (argRank[i] == r) {
        argTypes.push_back(global.getArgumentTypes()[i]);
        argAttrs.push_back(global.getArgAttrDict(i));
      }
    for (unsigned i = 0; i < resRank.size(); ++i)
      if (resRank[i] == r) {
        resTypes.push_back(global.getResultTypes()[i]);
        resAttrs.push_back(global.getResultAttrDict(i));
      }
    auto program = ProgramOp::create(
        mb, loc, name, mb.getFunctionType(argTypes, resTypes), attr, r);
    mb.setInsertionPointAfter(program);
    if (!argAttrs.empty())
      program.setArgAttrsAttr(mb.getArrayAttr(argAttrs));
    if (!resAttrs.empty())
      program.setResAttrsAttr(mb.getArrayAttr(resAttrs));
    OpBuilder b(module.getContext());
    Block *block = b.createBlock(&program.getBody(), {}, argTypes,
                                 SmallVector<Location>(argTypes.size(), loc));
    unsigned j = 0;
    for (unsigned i = 0; i < argRank.size(); ++i)
      if (argRank[i] == r)
        maps[r].map(body.getArgument(i), block->getArgument(j++));
    b.setInsertionPointToEnd(block);
    programs.push_back(program);
    builders.push_back(b);
  }
  for (unsigned i = 0; i < argRank.size(); ++i)
    owner[body.getArgument(i)] = argRank[i];

  // Drops the half-built per-rank programs (the error is already out).
  auto fail = [&](LogicalResult) -> LogicalResult {
    for (ProgramOp p : programs)
      p.erase();
    return failure();
  };
  // Checks that `op`'s operands are available on `rank`.
  auto checkOperands = [&](Operation &op, int64_t rank) -> LogicalResult {
    for (auto [i, v] : llvm::enumerate(op.getOperands())) {
      auto it = owner.find(v);
      if (it == owner.end() || it->second == kEverywhere ||
          it->second == rank)
        continue;
      return failure();
    }
    return success();
  };
  auto wrongRank = [&](Operation &op, int64_t rank) -> LogicalResult {
    for (auto [i, v] : llvm::enumerate(op.getOperands())) {
      auto it = owner.find(v);
      if (it != owner.end() && it->second != kEverywhere &&
          it->second != rank)
        return op.emitError()
               << "runs on rank " << rank << " but operand " << i
               << " is a value of rank " << it->second
               << ": values cross ranks only through pipe.transfer";
    }
    return op.emitError() << "internal error";
  };

  std::map<std::pair<int64_t, int64_t>, int64_t> nextTag;
  SmallVector<Operation *> copies; // operand-free ops copied everywhere
  for (Operation &op : body.without_terminator()) {
    if (auto t = dyn_cast<TransferOp>(op)) {
      int64_t src = t.getSrc().getRank(), dst = t.getDst().getRank();
      if (failed(checkOperands(op, src)))
        return fail(wrongRank(op, src));
      Value in = maps[src].lookup(t.getInput());
      if (src == dst) {
        maps[src].map(t.getResult(), in);
      } else {
        int64_t tag = nextTag[{src, dst}]++;
        SendOp::create(builders[src], t.getLoc(), in, dst, tag);
        auto recv = RecvOp::create(builders[dst], t.getLoc(), t.getType(),
                                   src, tag);
        maps[dst].map(t.getResult(), recv.getResult());
      }
      owner[t.getResult()] = dst;
      continue;
    }
    if (isa<SendOp, RecvOp>(op))
      return fail(op.emitError()
                  << "pipe.send / pipe.recv in a global program");
    if (auto reduce = dyn_cast<AllReduceGradOp>(op)) {
      // A collective: every rank of the group runs it, at this point of
      // the global order.
      for (int64_t r : reduce.getRanks()) {
        if (r >= k)
          return fail(op.emitError() << "runs on rank " << r
                                     << ", outside the schedule's " << k);
        builders[r].clone(op, maps[r]);
      }
      continue;
    }
    std::optional<int64_t> rank = explicitRank(&op);
    if (!rank) {
      for (Value v : op.getOperands()) {
        auto it = owner.find(v);
        if (it == owner.end() || it->second == kEverywhere)
          continue;
        if (rank && *rank != it->second)
          return fail(op.emitError()
                      << "has no pipe.stage and reads values of ranks "
                      << *rank << " and " << it->second
                      << ": pipe-project-ranks cannot place it");
        rank = it->second;
      }
    }
    if (!rank) {
      if (op.getNumRegions() != 0 || !isMemoryEffectFree(&op))
        return fail(op.emitError()
                    << "has no pipe.stage and no operand that says which "
                    << "rank runs it");
      for (int64_t r = 0; r < k; ++r)
        copies.push_back(builders[r].clone(op, maps[r]));
      for (Value v : op.getResults())
        owner[v] = kEverywhere;
      continue;
    }
    if (*rank < 0 || *rank >= k)
      return fail(op.emitError() << "runs on rank " << *rank
                                 << ", outside the schedule's " << k);
    if (failed(checkOperands(op, *rank)))
      return fail(wrongRank(op, *rank));
    builders[*rank].clone(op, maps[*rank]);
    for (Value v : op.getResults())
      owner[v] = *rank;
  }

  // Returns.
  auto ret = cast<ReturnOp>(body.getTerminator());
  SmallVector<SmallVector<Value>> results(k);
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    int64_t r = resRank[i];
    auto it = owner.find(v);
    if (it != owner.end() && it->second != kEverywhere && it->second != r)
      return fail(ret.emitError()
                  << "result " << i << " belongs to rank " << r
                  << " but is a value of rank " << it->second);
    results[r].push_back(maps[r].lookup(v));
  }
  for (int64_t r = 0; r < k; ++r)
    ReturnOp::create(builders[r], ret.getLoc(), results[r]);

  for (Operation *copy : copies)
    if (copy->use_empty())
      copy->erase();
  for (ProgramOp p : programs) {
    SmallVector<RecvOp> recvs(p.getBody().getOps<RecvOp>());
    for (RecvOp recv : llvm::reverse(recvs))
      sinkRecv(recv);
  }
  return success();
}

void ProjectRanksPass::runOnOperation() {
  ModuleOp module = getOperation();
  SmallVector<ProgramOp> globals;
  for (ProgramOp p : module.getOps<ProgramOp>())
    if (p.isGlobalView())
      globals.push_back(p);
  for (ProgramOp global : globals) {
    if (failed(projectProgram(module, global)))
      return signalPassFailure();
    if (!keepGlobal)
      global.erase();
  }
  // The messages and slots are this pass's proof obligation; the schedule
  // itself is pipe-verify-schedule's (a test may project a partial one).
  if (failed(verifyRankPrograms(module, /*checkSchedule=*/false)))
    return signalPassFailure();
}
