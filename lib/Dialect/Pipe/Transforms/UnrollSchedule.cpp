//===- UnrollSchedule.cpp - pipe-unroll-schedule ---------------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Dialect/Pipe/IR/PipeOps.h"
#include "pipedream/Dialect/Pipe/Transforms/Passes.h"
#include "pipedream/Dialect/Pipe/Transforms/Schedule.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <algorithm>
#include <map>

namespace pipedream {
namespace pipe {
#define GEN_PASS_DEF_UNROLLSCHEDULEPASS
#include "pipedream/Dialect/Pipe/Transforms/Passes.h.inc"
} // namespace pipe
} // namespace pipedream

using namespace mlir;
using namespace pipedream::pipe;
namespace sched = pipedream::pipe::schedule;

namespace {

struct UnrollSchedulePass
    : public pipedream::pipe::impl::UnrollSchedulePassBase<UnrollSchedulePass> {
  using UnrollSchedulePassBase::UnrollSchedulePassBase;
  void runOnOperation() override;
};

} // namespace

static ScheduleKind toAttrKind(sched::Kind kind) {
  switch (kind) {
  case sched::Kind::GPipe:
    return ScheduleKind::GPipe;
  case sched::Kind::OneFOneB:
    return ScheduleKind::OneFOneB;
  case sched::Kind::Interleaved1F1B:
    return ScheduleKind::Interleaved1F1B;
  case sched::Kind::PipeDream:
    return ScheduleKind::PipeDream;
  case sched::Kind::TwoBW:
    return ScheduleKind::TwoBW;
  case sched::Kind::ZBH1:
    return ScheduleKind::ZeroBubbleH1;
  }
  return ScheduleKind::OneFOneB;
}

static ActionKind toAttrAction(sched::Op op) {
  switch (op) {
  case sched::Op::F:
    return ActionKind::Forward;
  case sched::Op::B:
    return ActionKind::Backward;
  case sched::Op::W:
    return ActionKind::WeightGrad;
  case sched::Op::U:
    return ActionKind::Update;
  }
  return ActionKind::Forward;
}

void UnrollSchedulePass::runOnOperation() {
  ModuleOp module = getOperation();
  std::optional<sched::Kind> kindOpt = sched::parseKind(kind);
  if (!kindOpt) {
    module.emitError() << "pipe-unroll-schedule: unknown schedule kind '"
                       << kind
                       << "' (gpipe, 1f1b, interleaved-1f1b, pipedream, 2bw, "
                          "zb-h1)";
    return signalPassFailure();
  }

  // Stage functions by (stage attribute, action letter).
  std::map<std::pair<std::pair<int64_t, int64_t>, char>, func::FuncOp> fns;
  int64_t maxIndex = -1, maxChunk = -1;
  for (auto fn : module.getOps<func::FuncOp>()) {
    auto stage = fn->getAttrOfType<StageAttr>("pipe.stage");
    StringRef name = fn.getSymName();
    if (!stage || name.size() < 2 || name[name.size() - 2] != '_')
      continue;
    char letter = name.back();
    if (letter != 'F' && letter != 'B' && letter != 'W' && letter != 'U')
      continue;
    fns[{{stage.getIndex(), stage.getChunk()}, letter}] = fn;
    maxIndex = std::max(maxIndex, stage.getIndex());
    maxChunk = std::max(maxChunk, stage.getChunk());
  }
  if (maxIndex < 0) {
    module.emitError() << "pipe-unroll-schedule: no stage functions (func.func "
                          "@..._F/_B/_W/_U with a pipe.stage attribute)";
    return signalPassFailure();
  }
  sched::Config config{*kindOpt, maxIndex + 1, numMicrobatches, numChunks};
  if (std::string err = sched::validate(config); !err.empty()) {
    module.emitError() << "pipe-unroll-schedule: " << err;
    return signalPassFailure();
  }
  if (maxChunk + 1 != numChunks) {
    module.emitError() << "pipe-unroll-schedule: the stage functions have "
                       << maxChunk + 1 << " chunks, virtual=" << numChunks;
    return signalPassFailure();
  }
  int64_t k = config.numRanks, numStages = config.numVirtualStages();
  auto stageAttrOf = [&](int64_t v) {
    return StageAttr::get(&getContext(), v % k, v / k);
  };
  auto fnOf = [&](int64_t v, char letter) -> func::FuncOp {
    auto it = fns.find({{v % k, v / k}, letter});
    return it == fns.end() ? func::FuncOp() : it->second;
  };
  // Every needed function exists.
  for (int64_t v = 0; v < numStages; ++v)
    for (char letter : std::string(config.splitsBackward() ? "FBWU" : "FBU"))
      if (!fnOf(v, letter)) {
        module.emitError() << "pipe-unroll-schedule: missing stage function "
                           << letter << " of stage " << v % k << " chunk "
                           << v / k;
        return signalPassFailure();
      }

  sched::Schedule schedule = sched::buildSchedule(config);
  sched::SlotAssignment slots = sched::assignSlots(schedule);
  sched::SimResult sim =
      sched::simulate(schedule, sched::Costs::unit(config));
  if (!sim.ok()) {
    module.emitError() << "pipe-unroll-schedule: internal error: "
                       << sim.error;
    return signalPassFailure();
  }
  // Residual values per micro-batch slot, per rank.
  std::vector<int64_t> perSlot(k, 1);
  for (int64_t v = 0; v < numStages; ++v) {
    int64_t &n = perSlot[v % k];
    n = std::max<int64_t>(n, fnOf(v, 'F').getNumResults() - 1);
    if (config.splitsBackward())
      n = std::max<int64_t>(n, fnOf(v, 'B').getNumResults() - (v > 0));
  }

  // Global order: by start time, then rank, then position in the rank.
  std::vector<std::tuple<double, int64_t, int64_t>> order;
  for (int64_t r = 0; r < k; ++r)
    for (size_t i = 0; i < schedule.ranks[r].size(); ++i)
      order.push_back({sim.timeline[r][i].start, r, (int64_t)i});
  std::sort(order.begin(), order.end());

  // Program signature: micro-batch inputs of stage 0, losses of the last.
  func::FuncOp first = fnOf(0, 'F'), last = fnOf(numStages - 1, 'F');
  SmallVector<Type> argTypes, resultTypes;
  if (first.getNumArguments() > 0)
    argTypes.assign(numMicrobatches, first.getArgumentTypes()[0]);
  if (last.getNumResults() > 0)
    resultTypes.assign(numMicrobatches, last.getResultTypes()[0]);
  OpBuilder b(module.getBodyRegion());
  b.setInsertionPointToEnd(module.getBody());
  Location loc = module.getLoc();
  auto scheduleAttr = ScheduleAttr::get(&getContext(), toAttrKind(config.kind),
                                        k, numMicrobatches, numChunks);
  auto program = ProgramOp::create(
      b, loc, "train", b.getFunctionType(argTypes, resultTypes), scheduleAttr);
  SmallVector<Attribute> argAttrs(
      argTypes.size(),
      b.getDictionaryAttr(b.getNamedAttr("pipe.stage", stageAttrOf(0))));
  SmallVector<Attribute> resAttrs(
      resultTypes.size(),
      b.getDictionaryAttr(
          b.getNamedAttr("pipe.stage", stageAttrOf(numStages - 1))));
  if (!argAttrs.empty())
    program.setArgAttrsAttr(b.getArrayAttr(argAttrs));
  if (!resAttrs.empty())
    program.setResAttrsAttr(b.getArrayAttr(resAttrs));
  Block *body = b.createBlock(&program.getBody(), {}, argTypes,
                              SmallVector<Location>(argTypes.size(), loc));
  b.setInsertionPointToEnd(body);

  using Key = std::pair<int64_t, int64_t>;
  std::map<Key, Value> activation, gradient; // arrived at the consumer
  std::map<Key, SmallVector<Value>> lastGrads; // (v, -) -> weight grads
  std::map<Key, int64_t> slotBase;
  std::map<Key, int64_t> numStashed;
  SmallVector<Value> losses(resultTypes.size());

  auto stash = [&](ValueRange values, int64_t v, int64_t m) {
    int64_t base = slotBase[{v, m}] * perSlot[v % k];
    for (auto [j, value] : llvm::enumerate(values))
      StashOp::create(b, loc, value, StashKind::Activation, base + j,
                      stageAttrOf(v), m);
    numStashed[{v, m}] = values.size();
  };
  auto restore = [&](int64_t v, int64_t m, SmallVector<Value> &out,
                     TypeRange types) {
    int64_t base = slotBase[{v, m}] * perSlot[v % k];
    for (auto [j, type] : llvm::enumerate(types))
      out.push_back(RestoreOp::create(b, loc, type, StashKind::Activation,
                                      base + j, stageAttrOf(v), m));
  };

  for (auto [start, r, i] : order) {
    const sched::Action &a = schedule.ranks[r][i];
    int64_t v = a.stage, m = a.microbatch;
    char letter = sched::opLetter(a.op);
    func::FuncOp fn = fnOf(v, letter);
    SmallVector<Value> args;
    if (a.op == sched::Op::F) {
      if (v == 0) {
        if (fn.getNumArguments() > 0)
          args.push_back(body->getArgument(m));
      } else {
        args.push_back(activation[{v - 1, m}]);
      }
      slotBase[{v, m}] = slots[r][i];
    } else if (a.op == sched::Op::B) {
      auto f = fnOf(v, 'F');
      restore(v, m, args, f.getResultTypes().drop_front());
      if (v + 1 < numStages)
        args.push_back(gradient[{v + 1, m}]);
    } else if (a.op == sched::Op::W) {
      auto bw = fnOf(v, 'B');
      restore(v, m, args, bw.getResultTypes().drop_front(v > 0 ? 1 : 0));
    } else {
      args.append(lastGrads[{v, 0}]);
    }
    if (args.size() != fn.getNumArguments() ||
        llvm::any_of(llvm::zip(args, fn.getArgumentTypes()), [](auto p) {
          return !std::get<0>(p) ||
                 std::get<0>(p).getType() != std::get<1>(p);
        })) {
      fn.emitError() << "pipe-unroll-schedule: " << letter << " of stage "
                     << v % k << " chunk " << v / k
                     << " does not follow the calling convention: expected "
                     << args.size()
                     << " arguments of the types the schedule supplies "
                        "(see the pass description)";
      return signalPassFailure();
    }
    auto call = CallStageOp::create(
        b, loc, cast<FunctionOpInterface>(fn.getOperation()),
        toAttrAction(a.op), args, stageAttrOf(v), m);
    ValueRange results = call.getResults();
    switch (a.op) {
    case sched::Op::F:
      if (results.empty())
        break;
      if (v + 1 < numStages)
        activation[{v, m}] = TransferOp::create(b, loc, results[0],
                                                stageAttrOf(v),
                                                stageAttrOf(v + 1));
      else if (!losses.empty())
        losses[m] = results[0];
      stash(results.drop_front(), v, m);
      break;
    case sched::Op::B: {
      ValueRange rest = results;
      if (v > 0 && !results.empty()) {
        gradient[{v, m}] = TransferOp::create(b, loc, results[0],
                                              stageAttrOf(v),
                                              stageAttrOf(v - 1));
        rest = results.drop_front();
      }
      if (config.splitsBackward())
        stash(rest, v, m);
      else
        lastGrads[{v, 0}] = SmallVector<Value>(rest);
      break;
    }
    case sched::Op::W:
      lastGrads[{v, 0}] = SmallVector<Value>(results);
      break;
    case sched::Op::U:
      break;
    }
  }
  ReturnOp::create(b, loc, losses);
}
