//===- ScheduleAttrs.h - schedule library <-> pipe attributes ----*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Conversions between the schedule library's enums (Schedule.h) and the
// pipe dialect's attribute enums, shared by the passes that go between the
// two (unroll, verify, project).
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_DIALECT_PIPE_TRANSFORMS_SCHEDULEATTRS_H
#define PIPEDREAM_DIALECT_PIPE_TRANSFORMS_SCHEDULEATTRS_H

#include "pipedream/Dialect/Pipe/IR/PipeAttrs.h"
#include "pipedream/Dialect/Pipe/Transforms/Schedule.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"

#include <optional>

namespace pipedream::pipe {

inline schedule::Kind toScheduleKind(ScheduleKind kind) {
  switch (kind) {
  case ScheduleKind::GPipe:
    return schedule::Kind::GPipe;
  case ScheduleKind::OneFOneB:
    return schedule::Kind::OneFOneB;
  case ScheduleKind::Interleaved1F1B:
    return schedule::Kind::Interleaved1F1B;
  case ScheduleKind::PipeDream:
    return schedule::Kind::PipeDream;
  case ScheduleKind::TwoBW:
    return schedule::Kind::TwoBW;
  case ScheduleKind::ZeroBubbleH1:
    return schedule::Kind::ZBH1;
  case ScheduleKind::InterleavedZeroBubble:
    return schedule::Kind::InterleavedZB;
  case ScheduleKind::ZeroBubbleV:
    return schedule::Kind::ZBV;
  case ScheduleKind::DualPipeV:
    return schedule::Kind::DualPipeV;
  }
  return schedule::Kind::OneFOneB;
}

/// The program form of a kind (every kind has one; the V-shaped kinds'
/// second chunk is `#pipe.stage<r, chunk = 1, reversed = true>`).
inline std::optional<ScheduleKind> toScheduleKindAttr(schedule::Kind kind) {
  switch (kind) {
  case schedule::Kind::GPipe:
    return ScheduleKind::GPipe;
  case schedule::Kind::OneFOneB:
    return ScheduleKind::OneFOneB;
  case schedule::Kind::Interleaved1F1B:
    return ScheduleKind::Interleaved1F1B;
  case schedule::Kind::PipeDream:
    return ScheduleKind::PipeDream;
  case schedule::Kind::TwoBW:
    return ScheduleKind::TwoBW;
  case schedule::Kind::ZBH1:
    return ScheduleKind::ZeroBubbleH1;
  case schedule::Kind::InterleavedZB:
    return ScheduleKind::InterleavedZeroBubble;
  case schedule::Kind::ZBV:
    return ScheduleKind::ZeroBubbleV;
  case schedule::Kind::DualPipeV:
    return ScheduleKind::DualPipeV;
  }
  return std::nullopt;
}

/// The schedule's action of a stage call; none for `N` (gradient clipping's
/// norm, which the unrolled program adds before the updates: it is not a
/// cell of the schedule).
inline std::optional<schedule::Op> toScheduleOp(ActionKind action) {
  switch (action) {
  case ActionKind::Forward:
    return schedule::Op::F;
  case ActionKind::Backward:
    return schedule::Op::B;
  case ActionKind::WeightGrad:
    return schedule::Op::W;
  case ActionKind::Update:
    return schedule::Op::U;
  case ActionKind::GradNorm:
    return std::nullopt;
  }
  return std::nullopt;
}

inline ActionKind toActionKind(schedule::Op op) {
  switch (op) {
  case schedule::Op::F:
    return ActionKind::Forward;
  case schedule::Op::B:
    return ActionKind::Backward;
  case schedule::Op::W:
    return ActionKind::WeightGrad;
  case schedule::Op::U:
    return ActionKind::Update;
  }
  return ActionKind::Forward;
}

/// Name of the discardable attribute `pipe-unroll-schedule` puts on a
/// `pipe.call_stage` joined to the call before it on its rank
/// (`schedule::Join`): "full_backward" (a W completing the B right before
/// it: torch's full `B`) or "overlap" (a B overlapped with the F right
/// before it: torch's `(F;B)OVERLAP_F_B`). Both run back to back; the join
/// only records where the schedule came from, for the verifier and the
/// report.
inline constexpr const char *kJoinAttrName = "pipe.join";

inline const char *joinName(schedule::Join join) {
  switch (join) {
  case schedule::Join::FullBackward:
    return "full_backward";
  case schedule::Join::Overlap:
    return "overlap";
  case schedule::Join::None:
    break;
  }
  return "";
}

/// The join recorded on `op` (None without the attribute).
inline schedule::Join joinOf(mlir::Operation *op) {
  auto name = op->getAttrOfType<mlir::StringAttr>(kJoinAttrName);
  if (!name)
    return schedule::Join::None;
  if (name.getValue() == "full_backward")
    return schedule::Join::FullBackward;
  if (name.getValue() == "overlap")
    return schedule::Join::Overlap;
  return schedule::Join::None;
}

} // namespace pipedream::pipe

#endif // PIPEDREAM_DIALECT_PIPE_TRANSFORMS_SCHEDULEATTRS_H
