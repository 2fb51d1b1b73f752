//===- VerifySchedule.cpp - pipe-verify-schedule ---------------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Dialect/Pipe/IR/PipeOps.h"
#include "pipedream/Dialect/Pipe/Transforms/Passes.h"
#include "pipedream/Dialect/Pipe/Transforms/ProjectRanks.h"
#include "pipedream/Dialect/Pipe/Transforms/Schedule.h"

#include <map>
#include <tuple>

namespace pipedream {
namespace pipe {
#define GEN_PASS_DEF_VERIFYSCHEDULEPASS
#include "pipedream/Dialect/Pipe/Transforms/Passes.h.inc"
} // namespace pipe
} // namespace pipedream

using namespace mlir;
using namespace pipedream::pipe;
namespace sched = pipedream::pipe::schedule;

namespace {

struct VerifySchedulePass
    : public pipedream::pipe::impl::VerifySchedulePassBase<VerifySchedulePass> {
  void runOnOperation() override;
};

} // namespace

static sched::Kind fromAttrKind(ScheduleKind kind) {
  switch (kind) {
  case ScheduleKind::GPipe:
    return sched::Kind::GPipe;
  case ScheduleKind::OneFOneB:
    return sched::Kind::OneFOneB;
  case ScheduleKind::Interleaved1F1B:
    return sched::Kind::Interleaved1F1B;
  case ScheduleKind::PipeDream:
    return sched::Kind::PipeDream;
  case ScheduleKind::TwoBW:
    return sched::Kind::TwoBW;
  case ScheduleKind::ZeroBubbleH1:
    return sched::Kind::ZBH1;
  }
  return sched::Kind::OneFOneB;
}

static sched::Op fromAttrAction(ActionKind action) {
  switch (action) {
  case ActionKind::Forward:
    return sched::Op::F;
  case ActionKind::Backward:
    return sched::Op::B;
  case ActionKind::WeightGrad:
    return sched::Op::W;
  case ActionKind::Update:
    return sched::Op::U;
  }
  return sched::Op::F;
}

/// Checks one global program; emits errors and returns failure.
static LogicalResult verifyProgram(ProgramOp program) {
  ScheduleAttr attr = program.getSchedule();
  int64_t k = attr.getNumStages();
  sched::Schedule schedule;
  schedule.config = {fromAttrKind(attr.getKind()), k,
                     attr.getNumMicrobatches(), attr.getNumChunks()};
  schedule.ranks.resize(k);
  std::vector<std::vector<Operation *>> ops(k);

  // Stash slots: (rank, kind, slot) -> (stage, micro-batch) while live.
  std::map<std::tuple<int64_t, int, int64_t>, std::pair<int64_t, int64_t>>
      live;
  bool ok = true;
  program.getBody().walk([&](Operation *op) {
    if (auto call = dyn_cast<CallStageOp>(op)) {
      StageAttr stage = call.getStage();
      schedule.ranks[stage.getRank()].push_back(
          {fromAttrAction(call.getAction()), stage.getVirtualIndex(k),
           static_cast<int64_t>(call.getMicrobatch())});
      ops[stage.getRank()].push_back(op);
    } else if (auto st = dyn_cast<StashOp>(op)) {
      int64_t v = st.getStage().getVirtualIndex(k);
      auto key = std::make_tuple(st.getStage().getRank(),
                                 static_cast<int>(st.getKind()),
                                 static_cast<int64_t>(st.getSlot()));
      auto it = live.find(key);
      if (it != live.end()) {
        op->emitError() << "rank " << st.getStage().getRank() << ": stash of "
                        << "stage " << v << " micro-batch " << st.getMicrobatch()
                        << " reuses slot " << st.getSlot()
                        << " while micro-batch " << it->second.second
                        << " of stage " << it->second.first
                        << " is still live in it";
        ok = false;
        return;
      }
      live[key] = {v, st.getMicrobatch()};
    } else if (auto rs = dyn_cast<RestoreOp>(op)) {
      int64_t v = rs.getStage().getVirtualIndex(k);
      auto key = std::make_tuple(rs.getStage().getRank(),
                                 static_cast<int>(rs.getKind()),
                                 static_cast<int64_t>(rs.getSlot()));
      auto it = live.find(key);
      if (it == live.end() ||
          it->second != std::make_pair(v, (int64_t)rs.getMicrobatch())) {
        op->emitError() << "rank " << rs.getStage().getRank()
                        << ": restore of stage " << v << " micro-batch "
                        << rs.getMicrobatch() << " from slot " << rs.getSlot()
                        << " has no live matching stash before it";
        ok = false;
        return;
      }
      live.erase(it);
    }
  });
  if (!ok)
    return failure();

  sched::Diagnostic diag = sched::verifyWithLocation(schedule);
  if (diag.message.empty())
    return success();
  Operation *at = program;
  if (diag.rank >= 0 && diag.rank < k && diag.index >= 0 &&
      diag.index < (int64_t)ops[diag.rank].size())
    at = ops[diag.rank][diag.index];
  at->emitError() << diag.message;
  return failure();
}

void VerifySchedulePass::runOnOperation() {
  bool failed = false;
  getOperation().walk([&](ProgramOp program) {
    if (program.isGlobalView() && mlir::failed(verifyProgram(program)))
      failed = true;
  });
  // Per-rank programs (pipe-project-ranks' output) are checked as sets.
  if (mlir::failed(verifyRankPrograms(getOperation())))
    failed = true;
  if (failed)
    signalPassFailure();
}
