//===- ProjectRanks.h - per-rank programs -----------------------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Checks on the per-rank view that `pipe-project-ranks` produces and
// `pipe-verify-schedule` re-runs (see Messages.h for the message rules),
// and the schedule a program's stage calls form.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_DIALECT_PIPE_TRANSFORMS_PROJECTRANKS_H
#define PIPEDREAM_DIALECT_PIPE_TRANSFORMS_PROJECTRANKS_H

#include "pipedream/Dialect/Pipe/IR/PipeOps.h"
#include "pipedream/Dialect/Pipe/Transforms/Schedule.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"

#include <map>
#include <string>

namespace pipedream {
namespace pipe {

/// Verifies every set of per-rank `pipe.program`s in `module` (programs
/// named `<stem>_rank<r>` with one stem form a set; a program with another
/// name is a set of its own): one program per rank with equal schedules,
/// sends and receives matched in order per pair with equal tags and types,
/// no deadlock under blocking send/recv, stash/restore slots, and, with
/// `checkSchedule`, the schedule of their `pipe.call_stage` ops
/// (`schedule::verify`). Emits an error at the offending op and fails on the
/// first problem of each set.
mlir::LogicalResult verifyRankPrograms(mlir::ModuleOp module,
                                       bool checkSchedule = true);

/// The schedule a global program's `pipe.call_stage` ops form: each rank's
/// actions in body order, the configuration from its `#pipe.schedule`.
schedule::Schedule scheduleOfProgram(ProgramOp program);

/// The gradient accumulators a stage function binds (`nn.role = "grad"`
/// arguments named `grad:<w>`, or results with `nn.updates = "grad:<w>"`),
/// by weight name `<w>`, with their types.
std::map<std::string, mlir::Type>
gradientAccumulators(mlir::FunctionOpInterface fn);

/// Checks the `pipe.all_reduce_grad` ops of `program` (global or per-rank
/// view) against its stage calls (docs/Pipe.md, "Shared weights"): per rank
/// and weight, every U that applies `grad:<w>` of a weight whose gradient
/// is summed (one in some all-reduce or, in the global view, applied by
/// the U of stages on two ranks) follows an all-reduce of it since the previous
/// U, no B or W adds to `grad:<w>` between the all-reduce and the U, and
/// in the global view the all-reduce's stages are exactly the stages whose
/// B or W add to `grad:<w>` or whose U applies it. Emits an error at the
/// offending op.
mlir::LogicalResult verifyGradientReductions(ProgramOp program);

} // namespace pipe
} // namespace pipedream

#endif // PIPEDREAM_DIALECT_PIPE_TRANSFORMS_PROJECTRANKS_H
