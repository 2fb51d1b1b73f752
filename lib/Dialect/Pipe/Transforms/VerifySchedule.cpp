//===- VerifySchedule.cpp - pipe-verify-schedule ---------------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Dialect/Pipe/IR/PipeOps.h"
#include "pipedream/Dialect/Pipe/Transforms/Passes.h"
#include "pipedream/Dialect/Pipe/Transforms/ProjectRanks.h"
#include "pipedream/Dialect/Pipe/Transforms/Schedule.h"
#include "pipedream/Dialect/Pipe/Transforms/ScheduleAttrs.h"

#include <map>
#include <tuple>

namespace pipedream::pipe {
#define GEN_PASS_DEF_VERIFYSCHEDULEPASS
#include "pipedream/Dialect/Pipe/Transforms/Passes.h.inc"
} // namespace pipedream::pipe

using namespace mlir;
using namespace pipedream::pipe;
namespace sched = pipedream::pipe::schedule;

namespace {

struct VerifySchedulePass
    : pipedream::pipe::impl::VerifySchedulePassBase<VerifySchedulePass> {
  void runOnOperation() override;
};

} // namespace

/// Checks one global program; emits errors and returns failure.
static LogicalResult verifyProgram(ProgramOp program) {
  ScheduleAttr attr = program.getSchedule();
  int64_t k = attr.getNumStages();
  sched::Schedule schedule;
  schedule.config = {toScheduleKind(attr.getKind()), k,
                     attr.getNumMicrobatches(), attr.getNumChunks()};
  schedule.ranks.resize(k);
  std::vector<std::vector<Operation *>> ops(k);

  // Stash slots: (rank, kind, slot) -> (stage, micro-batch) while live.
  std::map<std::tuple<int64_t, int, int64_t>, std::pair<int64_t, int64_t>>
      live;
  bool ok = true;
  // Weight versions (asynchronous schedules): every F, B and W carries
  // `pipe.weight_version`, and a micro-batch's B and W use the version its F
  // recorded; synchronous schedules have none.
  bool asynchronous = !schedule.config.isSynchronous();
  std::map<std::pair<int64_t, int64_t>, int64_t> recordedVersion;
  program.getBody().walk([&](CallStageOp call) {
    if (!ok || call.getAction() == ActionKind::Update ||
        call.getAction() == ActionKind::GradNorm)
      return;
    auto version = call->getAttrOfType<IntegerAttr>("pipe.weight_version");
    int64_t v = call.getStage().getVirtualIndex(k);
    std::string where = "rank " + std::to_string(call.getStage().getRank()) +
                        ": " + stringifyActionKind(call.getAction()).str() +
                        " of stage " + std::to_string(v) + " micro-batch " +
                        std::to_string(call.getMicrobatch());
    if (!asynchronous) {
      if (version) {
        call.emitError() << where
                         << " has a weight version, but the schedule is "
                            "synchronous";
        ok = false;
      }
      return;
    }
    if (!version) {
      call.emitError() << where
                       << " has no pipe.weight_version (asynchronous "
                          "schedules stash the weights each forward used)";
      ok = false;
      return;
    }
    auto key = std::make_pair(v, (int64_t)call.getMicrobatch());
    if (call.getAction() == ActionKind::Forward) {
      recordedVersion[key] = version.getInt();
      return;
    }
    auto it = recordedVersion.find(key);
    if (it == recordedVersion.end() || it->second != version.getInt()) {
      call.emitError() << where << " uses weight version "
                       << version.getInt()
                       << ", but its forward recorded "
                       << (it == recordedVersion.end()
                               ? std::string("none")
                               : std::to_string(it->second));
      ok = false;
    }
  });
  if (!ok)
    return failure();
  program.getBody().walk([&](Operation *op) {
    if (auto call = dyn_cast<CallStageOp>(op)) {
      StageAttr stage = call.getStage();
      std::optional<sched::Op> action = toScheduleOp(call.getAction());
      if (!action)
        return;
      schedule.ranks[stage.getRank()].push_back(
          {*action, stage.getVirtualIndex(k),
           static_cast<int64_t>(call.getMicrobatch()), joinOf(call)});
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

  if (failed(verifyGradientReductions(program)))
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
