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

#include "pipedream/Dialect/NN/IR/NNDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/raw_ostream.h"

#include <map>

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

/// A `registers` entry.
FailureOr<llvm::json::Object> registerJSON(MLIRContext *context,
                                           RankedTensorType type) {
  std::string dtype = getBundleDType(type.getElementType());
  if (dtype.empty())
    return emitError(context)
           << "a pipeline value has type that bundles cannot hold";
  llvm::json::Array shape;
  for (int64_t d : type.getShape())
    shape.push_back(d);
  return llvm::json::Object{{"dtype", dtype}, {"shape", std::move(shape)}};
}

} // namespace

LogicalResult addEvalPrograms(ModuleOp module, llvm::json::Array &ranks) {
  MLIRContext *context = module.getContext();
  // The eval stage functions by virtual stage (their names: stage<v>_E).
  std::map<int64_t, func::FuncOp> stages;
  for (auto fn : module.getOps<func::FuncOp>()) {
    StringRef name = fn.getSymName();
    int64_t v;
    if (fn->hasAttrOfType<StageAttr>(PipeDialect::kStageAttrName) &&
        name.consume_front("stage") && name.consume_back("_E") &&
        !name.getAsInteger(10, v))
      stages[v] = fn;
  }
  if (stages.empty())
    return success();
  const int64_t numRanks = static_cast<int64_t>(ranks.size());
  if (stages.rbegin()->first + 1 != static_cast<int64_t>(stages.size()))
    return emitError(context) << "the evaluation functions are not "
                                 "@stage0_E..@stage"
                              << stages.size() - 1 << "_E";
  // The consumer (virtual stage) of every edge.
  std::map<int64_t, int64_t> consumerOf;
  for (auto &[v, fn] : stages)
    for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i)
      if (auto edge = fn.getArgAttrOfType<IntegerAttr>(i, "pipe.recv"))
        consumerOf[edge.getInt()] = v;

  struct Program {
    std::vector<RankedTensorType> registers;
    llvm::json::Array instructions;
    int64_t add(RankedTensorType type) {
      registers.push_back(type);
      return static_cast<int64_t>(registers.size()) - 1;
    }
  };
  std::vector<Program> programs(numRanks);
  // The register each edge's value is in, on its consumer's rank.
  std::map<int64_t, int64_t> edgeRegister;
  for (auto &[v, fn] : stages) {
    auto stage = fn->getAttrOfType<StageAttr>(PipeDialect::kStageAttrName);
    int64_t r = stage.getIndex();
    if (r < 0 || r >= numRanks)
      return fn.emitError() << "evaluation function on rank " << r
                            << " of a pipeline of " << numRanks << " ranks";
    Program &program = programs[r];
    llvm::json::Array args, results;
    for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i) {
      auto type = dyn_cast<RankedTensorType>(fn.getArgumentTypes()[i]);
      if (!type)
        return fn.emitError() << "evaluation function argument " << i
                              << " is not a ranked tensor";
      if (auto edge = fn.getArgAttrOfType<IntegerAttr>(i, "pipe.recv")) {
        auto it = edgeRegister.find(edge.getInt());
        if (it == edgeRegister.end())
          return fn.emitError()
                 << "evaluation function reads edge " << edge.getInt()
                 << " before an earlier stage produces it";
        args.push_back(it->second);
      } else if (auto input =
                     fn.getArgAttrOfType<StringAttr>(i, "pipe.input")) {
        int64_t reg = program.add(type);
        program.instructions.push_back(
            llvm::json::Object{{"op", "input"},
                               {"name", input.getValue()},
                               {"microbatch", 0},
                               {"dst", reg}});
        args.push_back(reg);
      }
      // Anything else is a weight, bound by name.
    }
    // The instructions after the call: (rank, instruction).
    std::vector<std::pair<int64_t, llvm::json::Object>> after;
    for (unsigned j = 0, e = fn.getNumResults(); j < e; ++j) {
      auto type = dyn_cast<RankedTensorType>(fn.getResultTypes()[j]);
      if (!type)
        return fn.emitError() << "evaluation function result " << j
                              << " is not a ranked tensor";
      int64_t reg = program.add(type);
      results.push_back(reg);
      if (auto edge = fn.getResultAttrOfType<IntegerAttr>(j, "pipe.send")) {
        auto consumer = consumerOf.find(edge.getInt());
        if (consumer == consumerOf.end())
          return fn.emitError() << "evaluation function sends edge "
                                << edge.getInt() << ", which no stage reads";
        int64_t peer =
            stages[consumer->second]
                ->getAttrOfType<StageAttr>(PipeDialect::kStageAttrName)
                .getIndex();
        if (peer == r) {
          edgeRegister[edge.getInt()] = reg;
          continue;
        }
        // The receive stands right after the send in the one global order,
        // so no rank waits for a message a later instruction would send.
        after.emplace_back(r, llvm::json::Object{{"op", "send"},
                                                 {"src", reg},
                                                 {"peer", peer},
                                                 {"tag", edge.getInt()}});
        int64_t dst = programs[peer].add(type);
        edgeRegister[edge.getInt()] = dst;
        after.emplace_back(peer, llvm::json::Object{{"op", "recv"},
                                                    {"dst", dst},
                                                    {"peer", r},
                                                    {"tag", edge.getInt()}});
      } else if (auto role = fn.getResultAttrOfType<StringAttr>(
                     j, nn::NNDialect::kRoleAttrName);
                 role && role.getValue() == "loss") {
        after.emplace_back(r, llvm::json::Object{{"op", "loss"},
                                                 {"src", reg},
                                                 {"microbatch", 0}});
      }
    }
    program.instructions.push_back(
        llvm::json::Object{{"op", "call"},
                           {"function", fn.getSymName()},
                           {"action", "E"},
                           {"stage", r},
                           {"chunk", stage.getChunk()},
                           {"microbatch", 0},
                           {"args", std::move(args)},
                           {"results", std::move(results)}});
    for (auto &[on, ins] : after)
      programs[on].instructions.push_back(std::move(ins));
  }
  for (auto [r, program] : llvm::enumerate(programs)) {
    llvm::json::Array registers;
    for (RankedTensorType type : program.registers) {
      FailureOr<llvm::json::Object> reg = registerJSON(context, type);
      if (failed(reg))
        return failure();
      registers.push_back(std::move(*reg));
    }
    (*ranks[r].getAsObject())["eval"] =
        llvm::json::Object{{"registers", std::move(registers)},
                           {"program", std::move(program.instructions)}};
  }
  return success();
}

FailureOr<llvm::json::Array> serializeRankPrograms(ModuleOp module) {
  MLIRContext *context = module.getContext();
  FailureOr<std::vector<RankProgramPlan>> plans = planRankPrograms(module);
  if (failed(plans))
    return failure();
  llvm::json::Array ranks;
  for (const RankProgramPlan &plan : *plans) {
    llvm::json::Array registers;
    for (RankedTensorType type : plan.registers) {
      FailureOr<llvm::json::Object> reg = registerJSON(context, type);
      if (failed(reg))
        return failure();
      registers.push_back(std::move(*reg));
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
