//===- RankPrograms.h - static form of per-rank programs --------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The one place that turns a per-rank `pipe.program` (`pipe-project-ranks`)
// into the static form a pipeline bundle runs: a register table and a
// straight-line list of instructions (input, call, send, recv, loss,
// all_reduce). Each
// SSA value becomes a register, registers are reused once their value is
// dead (a liveness scan over the straight-line program), a stash/restore
// pair is one value kept live in its register, and program inputs are
// loaded right before their first use.
//
// Two consumers share this plan, so they agree on every register and
// instruction index: the `pipeline.ranks[r]` JSON of bundle.json
// (lib/Compiler/BundleRanks.cpp) and the native entry `pipeline_rank<r>` of
// program.so (`pipe-lower-rank-programs`, docs/Bundle.md "Native rank
// entries"), whose runtime calls name instructions by their index here.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_DIALECT_PIPE_TRANSFORMS_RANKPROGRAMS_H
#define PIPEDREAM_DIALECT_PIPE_TRANSFORMS_RANKPROGRAMS_H

#include "pipedream/Dialect/Pipe/IR/PipeOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Support/LLVM.h"

#include <string>
#include <vector>

namespace pipedream::pipe {

/// One instruction of a rank's static program (docs/Bundle.md, "Pipeline
/// bundles").
struct RankInstruction {
  enum class Kind { Input, Call, Send, Recv, Loss, AllReduce };
  Kind kind = Kind::Input;
  /// The op it comes from (the program for inputs, pipe.return for losses).
  mlir::Operation *op = nullptr;
  /// input: the data array's name.
  std::string name;
  /// input, loss: the micro-batch.
  int64_t microbatch = -1;
  /// input, recv: the register written; send, loss: the register read.
  int64_t dst = -1;
  int64_t src = -1;
  /// call: the stage call, its value argument and result registers, and the
  /// weight version slot it saves (F) or uses (B, W), -1 when none.
  mutable CallStageOp call;
  llvm::SmallVector<int64_t> args, results;
  int64_t saveWeights = -1;
  int64_t useWeights = -1;
  /// send, recv: the other rank and the tag.
  int64_t peer = 0;
  int64_t tag = 0;
  /// all_reduce: the accumulator summed in place (`grad:<w>`, a persistent
  /// buffer of the rank; `name`), its type, and the ranks of the group.
  mlir::RankedTensorType gradType;
  llvm::SmallVector<int64_t> group;
};

/// A rank's registers and instructions.
struct RankProgramPlan {
  int64_t rank = 0;
  mutable ProgramOp program;
  /// Register types (static shapes).
  llvm::SmallVector<mlir::RankedTensorType> registers;
  std::vector<RankInstruction> instructions;
};

/// Plans every per-rank program of `module`, in rank order (global-view
/// programs are ignored). Fails with an error diagnostic at the op it is
/// about when the module has no per-rank programs, two programs of one
/// rank, ranks not numbered 0..K-1, or a program the bundle format cannot
/// express.
mlir::FailureOr<std::vector<RankProgramPlan>>
planRankPrograms(mlir::ModuleOp module);

/// The symbol of rank `rank`'s native entry: `pipeline_rank<rank>`.
std::string getRankEntryName(int64_t rank);

/// Version of the native rank entry ABI (docs/Bundle.md, "Native rank
/// entries"), written to bundle.json as `entry_abi`.
inline constexpr int64_t kRankEntryABIVersion = 1;

/// Slots of the runtime's function table (`pd_rank_runtime` in
/// runtime/include/pipedream/rank_abi.h); the generated code calls through
/// them.
enum class RankRuntimeFunction : int32_t {
  Input = 0,
  CallBegin = 1,
  CallEnd = 2,
  Send = 3,
  Recv = 4,
  Loss = 5,
  AllReduce = 6,
};

/// Replaces every per-rank `pipe.program` of `module` by its native entry
/// `func.func private @pipeline_rank<r>(!llvm.ptr, !llvm.ptr) -> i32`
/// (exported by the CPU code generator: `pipedream.cpu.export`), calling
/// the stage functions' entry wrappers `<symbolPrefix><callee>` directly
/// and the runtime through the context's function table. `entries` gets
/// the entry symbols in rank order. On failure the diagnostic is emitted
/// at the offending op and the programs are kept (no entry is left).
mlir::LogicalResult lowerRankPrograms(mlir::ModuleOp module,
                                      llvm::StringRef symbolPrefix,
                                      std::vector<std::string> &entries);

} // namespace pipedream::pipe

#endif // PIPEDREAM_DIALECT_PIPE_TRANSFORMS_RANKPROGRAMS_H
