//===- RankPrograms.cpp - static form of per-rank programs ----------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// planRankPrograms: registers with liveness reuse and the instruction list
// of each per-rank program (see RankPrograms.h). The register assignment is
// the one pipeline bundles have always used: one pool of free registers per
// tensor type, a value's register freed after its last reader, results
// nobody reads freed at once, a restore aliasing its stash.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Dialect/Pipe/Transforms/RankPrograms.h"

#include "llvm/ADT/DenseMap.h"

#include <map>
#include <tuple>

using namespace mlir;

namespace pipedream::pipe {

namespace {

/// One rank's program being planned.
struct RankPlanner {
  explicit RankPlanner(ProgramOp program) : program(program) {}
  ProgramOp program;
  RankProgramPlan plan;

  /// Representative value of each SSA value (restores alias their stash).
  DenseMap<Value, Value> alias;
  /// Index of the last op (position in the body) reading each value.
  DenseMap<Value, int64_t> lastUse;
  DenseMap<Value, int64_t> registerOf;
  /// Free registers by type.
  DenseMap<Type, SmallVector<int64_t>> freeRegisters;

  /// An error at the op it is about.
  LogicalResult fail(Operation *op, const Twine &message) {
    return op->emitError(message);
  }

  Value resolve(Value v) {
    auto it = alias.find(v);
    return it == alias.end() ? v : it->second;
  }

  FailureOr<int64_t> allocate(Value v, Operation *op) {
    auto tensor = dyn_cast<RankedTensorType>(v.getType());
    if (!tensor || !tensor.hasStaticShape() ||
        !tensor.getElementType().isIntOrFloat())
      return fail(op, "a pipeline value has type that bundles cannot hold");
    int64_t reg;
    auto &pool = freeRegisters[tensor];
    if (!pool.empty()) {
      reg = pool.pop_back_val();
    } else {
      reg = plan.registers.size();
      plan.registers.push_back(tensor);
    }
    registerOf[v] = reg;
    return reg;
  }

  void free(int64_t reg) {
    freeRegisters[plan.registers[reg]].push_back(reg);
  }

  void release(Value v, int64_t position) {
    auto it = lastUse.find(v);
    if (it == lastUse.end() || it->second != position)
      return;
    auto reg = registerOf.find(v);
    if (reg != registerOf.end())
      free(reg->second);
  }

  LogicalResult run() {
    plan.rank = static_cast<int64_t>(*program.getRank());
    plan.program = program;
    Block &body = program.getBody().front();
    // Aliases: a restore reads the value its matching stash stored.
    std::map<std::tuple<int, int64_t, int64_t, int64_t, int64_t>, Value>
        stashed;
    auto keyOf = [](StashKind kind, int64_t slot, StageAttr stage,
                    int64_t microbatch) {
      return std::make_tuple(static_cast<int>(kind), slot, stage.getIndex(),
                             stage.getChunk(), microbatch);
    };
    for (Operation &op : body) {
      if (auto st = dyn_cast<StashOp>(op))
        stashed[keyOf(st.getKind(), st.getSlot(), st.getStage(),
                      st.getMicrobatch())] = resolve(st.getInput());
      else if (auto rs = dyn_cast<RestoreOp>(op)) {
        auto it = stashed.find(keyOf(rs.getKind(), rs.getSlot(), rs.getStage(),
                                     rs.getMicrobatch()));
        if (it == stashed.end())
          return fail(rs, "a restore has no matching stash");
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
    auto useValue = [&](Value v, Operation *user) -> FailureOr<int64_t> {
      v = resolve(v);
      if (auto arg = dyn_cast<BlockArgument>(v); arg && !loaded.lookup(v)) {
        unsigned index = arg.getArgNumber();
        auto name = program.getArgAttrOfType<StringAttr>(index, "pipe.input");
        auto micro =
            program.getArgAttrOfType<IntegerAttr>(index, "pipe.microbatch");
        if (!name || !micro)
          return fail(program, "argument " + Twine(index) +
                                   " lacks pipe.input / pipe.microbatch");
        FailureOr<int64_t> reg = allocate(v, program);
        if (failed(reg))
          return failure();
        RankInstruction input;
        input.kind = RankInstruction::Kind::Input;
        input.op = program;
        input.name = name.getValue().str();
        input.microbatch = micro.getInt();
        input.dst = *reg;
        plan.instructions.push_back(std::move(input));
        loaded[v] = true;
      }
      auto it = registerOf.find(v);
      if (it == registerOf.end())
        return fail(user, "a value is used before it is defined");
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
      SmallVector<int64_t> args;
      for (Value v : operands) {
        FailureOr<int64_t> reg = useValue(v, &op);
        if (failed(reg))
          return failure();
        args.push_back(*reg);
      }
      RankInstruction ins;
      ins.op = &op;
      if (auto call = dyn_cast<CallStageOp>(op)) {
        ins.kind = RankInstruction::Kind::Call;
        ins.call = call;
        ins.args = args;
        for (Value r : call.getResults()) {
          FailureOr<int64_t> reg = allocate(r, call);
          if (failed(reg))
            return failure();
          ins.results.push_back(*reg);
        }
        if (auto version =
                call->getAttrOfType<IntegerAttr>("pipe.weight_version"))
          (call.getAction() == ActionKind::Forward ? ins.saveWeights
                                                   : ins.useWeights) =
              version.getInt();
        plan.instructions.push_back(std::move(ins));
        // Results nobody reads are free right away.
        for (Value r : call.getResults())
          if (!lastUse.count(r))
            free(registerOf[r]);
      } else if (auto send = dyn_cast<SendOp>(op)) {
        ins.kind = RankInstruction::Kind::Send;
        ins.src = args[0];
        ins.peer = static_cast<int64_t>(send.getPeer());
        ins.tag = static_cast<int64_t>(send.getTag());
        plan.instructions.push_back(std::move(ins));
      } else if (auto recv = dyn_cast<RecvOp>(op)) {
        FailureOr<int64_t> reg = allocate(recv.getResult(), recv);
        if (failed(reg))
          return failure();
        ins.kind = RankInstruction::Kind::Recv;
        ins.dst = *reg;
        ins.peer = static_cast<int64_t>(recv.getPeer());
        ins.tag = static_cast<int64_t>(recv.getTag());
        plan.instructions.push_back(std::move(ins));
      } else if (auto reduce = dyn_cast<AllReduceGradOp>(op)) {
        ins.kind = RankInstruction::Kind::AllReduce;
        ins.name = reduce.getGradName();
        ins.gradType = cast<RankedTensorType>(reduce.getGradType());
        ins.group = reduce.getRanks();
        ins.microbatch = static_cast<int64_t>(reduce.getMicrobatch());
        plan.instructions.push_back(std::move(ins));
      } else if (isa<ReturnOp>(op)) {
        for (auto [m, reg] : llvm::enumerate(args)) {
          RankInstruction loss;
          loss.kind = RankInstruction::Kind::Loss;
          loss.op = &op;
          loss.src = reg;
          loss.microbatch = static_cast<int64_t>(m);
          plan.instructions.push_back(std::move(loss));
        }
      } else {
        return fail(&op, "cannot lower '" + op.getName().getStringRef() +
                             "' in a rank program");
      }
      for (Value v : operands)
        release(v, here);
    }
    return success();
  }
};

} // namespace

FailureOr<std::vector<RankProgramPlan>> planRankPrograms(ModuleOp module) {
  std::map<int64_t, ProgramOp> byRank;
  for (auto program : module.getOps<ProgramOp>()) {
    // The global view (kept next to its projection) runs nowhere.
    std::optional<uint64_t> rank = program.getRank();
    if (!rank)
      continue;
    if (!byRank.emplace(static_cast<int64_t>(*rank), program).second)
      return program.emitError() << "two programs of rank " << *rank;
  }
  if (byRank.empty())
    return module.emitError()
           << "no per-rank programs (run pipe-project-ranks)";
  std::vector<RankProgramPlan> plans;
  for (auto &[rank, program] : byRank) {
    if (rank != static_cast<int64_t>(plans.size()))
      return program.emitError()
             << "per-rank programs are not numbered 0..K-1 (rank "
             << plans.size() << " is missing)";
    RankPlanner planner(program);
    if (failed(planner.run()))
      return failure();
    plans.push_back(std::move(planner.plan));
  }
  return plans;
}

std::string getRankEntryName(int64_t rank) {
  return "pipeline_rank" + std::to_string(rank);
}

} // namespace pipedream::pipe
