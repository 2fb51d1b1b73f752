//===- RunTimeStatus.h - the run-time status record of program.so -*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The compiled side of the run-time status channel (docs/Bundle.md,
// "Run-time checks"), shared by the CPU target (cpu-lower-run-time-checks)
// and the CUDA target (cuda-define-run-time-status, which fills it from the
// device-side record its kernels write).
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_TARGET_CPU_RUNTIMESTATUS_H
#define PIPEDREAM_TARGET_CPU_RUNTIMESTATUS_H

#include "mlir/Dialect/LLVMIR/LLVMTypes.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <string>
#include <utility>

namespace pipedream::nn {
class CheckIndexRangeOp;
} // namespace pipedream::nn

namespace pipedream::cpu {

/// The comparison of an `nn.check_index_range` (its min and max widened to
/// i64, against its bounds).
struct IndexRangeTest {
  mlir::Value min, max, lower, upper;
  /// max >= upper: the offending value is `max`, else `min`.
  mlir::Value tooHigh;
  /// min < lower or max >= upper.
  mlir::Value bad;
};
/// Builds the comparison of `op` right before it and an `scf.if` on `bad`
/// (never taken on good data: the cost is the min/max pass that computed
/// the operands), and leaves `b` at the start of the if's then-block.
IndexRangeTest emitIfOutOfRange(mlir::OpBuilder &b,
                                pipedream::nn::CheckIndexRangeOp op);

/// The input name a check's status record carries: `input`, or for a
/// check of kind `size` (nn.check_size) U+0001 then the output's name, so
/// the runtime words the message as a size (docs/Bundle.md).
std::string getRunTimeCheckInputName(pipedream::nn::CheckIndexRangeOp op);

/// `struct { int64_t failed, value, lower, upper; const char *info; }`
/// (runtime/lib/Bundle.h, CheckRecord).
mlir::LLVM::LLVMStructType getRunTimeStatusType(mlir::MLIRContext *ctx);

/// Adds the zero-initialized thread-local record and its exported accessor
/// `pipedream_run_time_status()` (marked `pipedream.cpu.export`) to
/// `module`. Fails with an error on the module when either is already
/// defined.
mlir::LogicalResult defineRunTimeStatusRecord(mlir::ModuleOp module);

/// At the builder's insertion point: if the calling thread's record holds
/// no failure yet, stores 1, the offending value, `lower`, `upper` (i64)
/// and the info pointer (the op type, node and input names, each
/// NUL-terminated). `valueAndInfo` creates the value and the pointer, with
/// the builder inside that branch.
void emitRecordFirstFailure(
    mlir::OpBuilder &b, mlir::Location loc, mlir::Value lower,
    mlir::Value upper,
    llvm::function_ref<std::pair<mlir::Value, mlir::Value>(mlir::OpBuilder &)>
        valueAndInfo);

} // namespace pipedream::cpu

#endif // PIPEDREAM_TARGET_CPU_RUNTIMESTATUS_H
