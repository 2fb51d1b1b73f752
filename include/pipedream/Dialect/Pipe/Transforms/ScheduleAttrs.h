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
  }
  return schedule::Kind::OneFOneB;
}

/// The program form of a kind; none for the V-shaped kinds (zb-v,
/// dualpipe-v), whose placement `#pipe.stage` cannot express yet.
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
  case schedule::Kind::DualPipeV:
    return std::nullopt;
  }
  return std::nullopt;
}

inline schedule::Op toScheduleOp(ActionKind action) {
  switch (action) {
  case ActionKind::Forward:
    return schedule::Op::F;
  case ActionKind::Backward:
    return schedule::Op::B;
  case ActionKind::WeightGrad:
    return schedule::Op::W;
  case ActionKind::Update:
    return schedule::Op::U;
  }
  return schedule::Op::F;
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

} // namespace pipedream::pipe

#endif // PIPEDREAM_DIALECT_PIPE_TRANSFORMS_SCHEDULEATTRS_H
