//===- Pipeline.cpp - per-rank programs of a pipeline bundle --------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Compiler/Pipeline.h"

#include "pipedream/Compiler/Bundle.h"
#include "pipedream/Dialect/Pipe/IR/PipeOps.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"

#include <map>
#include <tuple>

using namespace mlir;
using namespace pipedream::pipe;

namespace pipedream {

namespace {

/// One rank's program being serialized.
struct RankWriter {
  RankWriter(ProgramOp program, std::string &error)
      : program(program), error(error) {}
  ProgramOp program;
  std::string &error;

  /// Representative value of each SSA value (restores alias their stash).
  DenseMap<Value, Value> alias;
  /// Index of the last instruction (op position) reading each value.
  DenseMap<Value, int64_t> lastUse;
  DenseMap<Value, int64_t> registerOf;
  /// Free registers by type.
  std::map<std::string, SmallVector<int64_t>> freeRegisters;
  llvm::json::Array registers, instructions;
  std::vector<std::string> registerTypes;

  Value resolve(Value v) {
    auto it = alias.find(v);
    return it == alias.end() ? v : it->second;
  }

  static std::string typeKey(Type type) {
    auto tensor = cast<RankedTensorType>(type);
    std::string key = getBundleDType(tensor.getElementType());
    for (int64_t d : tensor.getShape())
      key += "x" + std::to_string(d);
    return key;
  }

  FailureOr<int64_t> allocate(Value v) {
    auto tensor = dyn_cast<RankedTensorType>(v.getType());
    if (!tensor || !tensor.hasStaticShape() ||
        getBundleDType(tensor.getElementType()).empty()) {
      error = "a pipeline value has type that bundles cannot hold";
      return failure();
    }
    std::string key = typeKey(tensor);
    int64_t reg;
    auto &pool = freeRegisters[key];
    if (!pool.empty()) {
      reg = pool.pop_back_val();
    } else {
      reg = registers.size();
      llvm::json::Array shape;
      for (int64_t d : tensor.getShape())
        shape.push_back(d);
      registers.push_back(llvm::json::Object{
          {"dtype", getBundleDType(tensor.getElementType())},
          {"shape", std::move(shape)}});
      registerTypes.push_back(key);
    }
    registerOf[v] = reg;
    return reg;
  }

  void release(Value v, int64_t position) {
    auto it = lastUse.find(v);
    if (it == lastUse.end() || it->second != position)
      return;
    auto reg = registerOf.find(v);
    if (reg != registerOf.end())
      freeRegisters[registerTypes[reg->second]].push_back(reg->second);
  }

  LogicalResult run() {
    Block &body = program.getBody().front();
    // Aliases: a restore reads the value its matching stash stored.
    std::map<std::tuple<int, int64_t, int64_t, int64_t>, Value> stashed;
    auto keyOf = [](StashKind kind, int64_t slot, StageAttr stage,
                    int64_t microbatch) {
      return std::make_tuple(static_cast<int>(kind), slot,
                             stage.getIndex() * 1000 + stage.getChunk(),
                             microbatch);
    };
    for (Operation &op : body) {
      if (auto st = dyn_cast<StashOp>(op))
        stashed[keyOf(st.getKind(), st.getSlot(), st.getStage(),
                      st.getMicrobatch())] = resolve(st.getInput());
      else if (auto rs = dyn_cast<RestoreOp>(op)) {
        auto it = stashed.find(keyOf(rs.getKind(), rs.getSlot(), rs.getStage(),
                                     rs.getMicrobatch()));
        if (it == stashed.end()) {
          error = "a restore has no matching stash";
          return failure();
        }
        alias[rs.getResult()] = it->second;
      }
    }
    // Last uses (positions of ops in the body).
    int64_t position = 0;
    for (Operation &op : body) {
      if (!isa<StashOp, RestoreOp>(op))
        for (Value operand : op.getOperands())
          lastUse[resolve(operand)] = position;
      ++position;
    }

    // Program inputs: loaded right before first use.
    DenseMap<Value, bool> loaded;
    auto useValue = [&](Value v) -> FailureOr<int64_t> {
      v = resolve(v);
      if (auto arg = dyn_cast<BlockArgument>(v); arg && !loaded.lookup(v)) {
        unsigned index = arg.getArgNumber();
        auto name = program.getArgAttrOfType<StringAttr>(index, "pipe.input");
        auto micro =
            program.getArgAttrOfType<IntegerAttr>(index, "pipe.microbatch");
        if (!name || !micro) {
          error = "a program argument lacks pipe.input / pipe.microbatch";
          return failure();
        }
        FailureOr<int64_t> reg = allocate(v);
        if (failed(reg))
          return failure();
        instructions.push_back(llvm::json::Object{
            {"op", "input"},
            {"name", name.getValue()},
            {"microbatch", micro.getInt()},
            {"dst", *reg}});
        loaded[v] = true;
      }
      auto it = registerOf.find(v);
      if (it == registerOf.end()) {
        error = "a value is used before it is defined";
        return failure();
      }
      return it->second;
    };

    position = 0;
    for (Operation &op : body) {
      int64_t here = position++;
      if (isa<StashOp, RestoreOp>(op))
        continue;
      SmallVector<Value> operands;
      for (Value v : op.getOperands())
        operands.push_back(resolve(v));
      llvm::json::Array args;
      for (Value v : operands) {
        FailureOr<int64_t> reg = useValue(v);
        if (failed(reg))
          return failure();
        args.push_back(*reg);
      }
      if (auto call = dyn_cast<CallStageOp>(op)) {
        llvm::json::Array results;
        for (Value r : call.getResults()) {
          FailureOr<int64_t> reg = allocate(r);
          if (failed(reg))
            return failure();
          results.push_back(*reg);
        }
        StageAttr stage = call.getStage();
        llvm::json::Object weights;
        if (auto version =
                call->getAttrOfType<IntegerAttr>("pipe.weight_version"))
          weights[call.getAction() == ActionKind::Forward ? "save" : "use"] =
              version.getInt();
        llvm::json::Object instruction{
            {"op", "call"},
            {"function", call.getCallee()},
            {"action", stringifyActionKind(call.getAction())},
            {"stage", stage.getIndex()},
            {"chunk", stage.getChunk()},
            {"microbatch", static_cast<int64_t>(call.getMicrobatch())},
            {"args", std::move(args)},
            {"results", std::move(results)}};
        if (!weights.empty())
          instruction["weights"] = std::move(weights);
        instructions.push_back(std::move(instruction));
        // Results nobody reads are free right away.
        for (Value r : call.getResults())
          if (!lastUse.count(r))
            freeRegisters[registerTypes[registerOf[r]]].push_back(
                registerOf[r]);
      } else if (auto send = dyn_cast<SendOp>(op)) {
        instructions.push_back(llvm::json::Object{
            {"op", "send"},
            {"src", args[0]},
            {"peer", static_cast<int64_t>(send.getPeer())},
            {"tag", static_cast<int64_t>(send.getTag())}});
      } else if (auto recv = dyn_cast<RecvOp>(op)) {
        FailureOr<int64_t> reg = allocate(recv.getResult());
        if (failed(reg))
          return failure();
        instructions.push_back(llvm::json::Object{
            {"op", "recv"},
            {"dst", *reg},
            {"peer", static_cast<int64_t>(recv.getPeer())},
            {"tag", static_cast<int64_t>(recv.getTag())}});
      } else if (isa<ReturnOp>(op)) {
        for (auto [m, reg] : llvm::enumerate(args))
          instructions.push_back(llvm::json::Object{
              {"op", "loss"}, {"src", reg}, {"microbatch", int64_t(m)}});
      } else {
        error = "cannot serialize '" + op.getName().getStringRef().str() +
                "' in a rank program";
        return failure();
      }
      for (Value v : operands)
        release(v, here);
    }
    return success();
  }
};

} // namespace

FailureOr<llvm::json::Array> serializeRankPrograms(ModuleOp module,
                                                   std::string &error) {
  std::map<int64_t, ProgramOp> byRank;
  for (auto program : module.getOps<ProgramOp>())
    if (std::optional<uint64_t> rank = program.getRank())
      byRank[*rank] = program;
  if (byRank.empty()) {
    error = "no per-rank programs (run pipe-project-ranks)";
    return failure();
  }
  llvm::json::Array ranks;
  for (auto &[rank, program] : byRank) {
    if (rank != static_cast<int64_t>(ranks.size())) {
      error = "per-rank programs are not numbered 0..K-1";
      return failure();
    }
    RankWriter writer(program, error);
    if (failed(writer.run()))
      return failure();
    ranks.push_back(llvm::json::Object{
        {"rank", rank},
        {"registers", std::move(writer.registers)},
        {"program", std::move(writer.instructions)}});
  }
  return ranks;
}

void eraseProgramOps(ModuleOp module) {
  for (auto program : llvm::make_early_inc_range(module.getOps<ProgramOp>()))
    program.erase();
}

} // namespace pipedream
