//===- BundleRanks.cpp - per-rank programs of a pipeline bundle -----------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Compiler/BundleRanks.h"

#include "pipedream/Compiler/Bundle.h"
#include "pipedream/Dialect/Pipe/IR/PipeOps.h"
#include "pipedream/Dialect/Pipe/Transforms/RankPrograms.h"
#include "pipedream/Support/Diagnostics.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace pipedream::pipe;

namespace pipedream {

namespace {

llvm::json::Array registerArray(ArrayRef<int64_t> registers) {
  llvm::json::Array array;
  for (int64_t reg : registers)
    array.push_back(reg);
  return array;
}

/// The `program` JSON of one instruction (docs/Bundle.md).
llvm::json::Object instructionJSON(const RankInstruction &ins) {
  switch (ins.kind) {
  case RankInstruction::Kind::Input:
    return llvm::json::Object{{"op", "input"},
                              {"name", ins.name},
                              {"microbatch", ins.microbatch},
                              {"dst", ins.dst}};
  case RankInstruction::Kind::Call: {
    CallStageOp call = ins.call;
    StageAttr stage = call.getStage();
    llvm::json::Object instruction{
        {"op", "call"},
        {"function", call.getCallee()},
        {"action", stringifyActionKind(call.getAction())},
        {"stage", stage.getIndex()},
        {"chunk", stage.getChunk()},
        {"microbatch", static_cast<int64_t>(call.getMicrobatch())},
        {"args", registerArray(ins.args)},
        {"results", registerArray(ins.results)}};
    if (ins.saveWeights >= 0)
      instruction["weights"] = llvm::json::Object{{"save", ins.saveWeights}};
    else if (ins.useWeights >= 0)
      instruction["weights"] = llvm::json::Object{{"use", ins.useWeights}};
    // A sharded update (pipe-shard-optimizer): only this replica runs it.
    if (auto replica = call->getAttrOfType<mlir::IntegerAttr>("pipe.replica"))
      instruction["replica"] = replica.getInt();
    return instruction;
  }
  case RankInstruction::Kind::Send:
    return llvm::json::Object{
        {"op", "send"}, {"src", ins.src}, {"peer", ins.peer}, {"tag", ins.tag}};
  case RankInstruction::Kind::Recv:
    return llvm::json::Object{
        {"op", "recv"}, {"dst", ins.dst}, {"peer", ins.peer}, {"tag", ins.tag}};
  case RankInstruction::Kind::Loss:
    return llvm::json::Object{
        {"op", "loss"}, {"src", ins.src}, {"microbatch", ins.microbatch}};
  case RankInstruction::Kind::AllReduce: {
    llvm::json::Array shape;
    for (int64_t d : ins.gradType.getShape())
      shape.push_back(d);
    return llvm::json::Object{
        {"op", "all_reduce"},
        {"buffer", ins.name},
        {"ranks", registerArray(ins.group)},
        {"dtype", getBundleDType(ins.gradType.getElementType())},
        {"shape", std::move(shape)},
        {"microbatch", ins.microbatch}};
  }
  }
  llvm_unreachable("unknown rank instruction");
}

} // namespace

FailureOr<llvm::json::Array> serializeRankPrograms(ModuleOp module) {
  MLIRContext *context = module.getContext();
  FailureOr<std::vector<RankProgramPlan>> plans = planRankPrograms(module);
  if (failed(plans))
    return failure();
  llvm::json::Array ranks;
  for (const RankProgramPlan &plan : *plans) {
    llvm::json::Array registers;
    for (RankedTensorType type : plan.registers) {
      std::string dtype = getBundleDType(type.getElementType());
      if (dtype.empty())
        return emitError(context)
               << "a pipeline value has type that bundles cannot hold";
      llvm::json::Array shape;
      for (int64_t d : type.getShape())
        shape.push_back(d);
      registers.push_back(
          llvm::json::Object{{"dtype", dtype}, {"shape", std::move(shape)}});
    }
    llvm::json::Array program;
    for (const RankInstruction &ins : plan.instructions)
      program.push_back(instructionJSON(ins));
    ranks.push_back(llvm::json::Object{{"rank", plan.rank},
                                       {"registers", std::move(registers)},
                                       {"program", std::move(program)}});
  }
  return ranks;
}

LogicalResult lowerRankProgramsToNative(ModuleOp module,
                                        llvm::json::Array &ranks,
                                        llvm::StringRef symbolPrefix) {
  MLIRContext *context = module.getContext();
  std::vector<std::string> entries;
  // The first error is the pass's own when it reported one.
  if (failed(lowerRankPrograms(module, symbolPrefix, entries)))
    return emitError(context) << "cannot lower the rank programs";
  if (entries.size() != ranks.size())
    return emitError(context)
           << "internal error: " << entries.size()
           << " native rank entries for " << ranks.size() << " rank programs";
  // The global view, if it was kept, runs nowhere.
  eraseProgramOps(module);
  for (auto [rank, entry] : llvm::zip(ranks, entries)) {
    llvm::json::Object *object = rank.getAsObject();
    (*object)["entry"] = entry;
    (*object)["entry_abi"] = kRankEntryABIVersion;
  }
  return success();
}

void eraseProgramOps(ModuleOp module) {
  for (auto program : llvm::make_early_inc_range(module.getOps<ProgramOp>()))
    program.erase();
}

} // namespace pipedream
