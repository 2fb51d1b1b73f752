//===- ReplicaLayout.cpp - ranks of replicated stages ---------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Compiler/ReplicaLayout.h"

#include "pipedream/Dialect/Pipe/IR/PipeAttrs.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/FormatVariadic.h"

using namespace pipedream;

llvm::json::Array pipedream::rankLayoutJSON(int64_t pipelineRanks,
                                            int64_t replicas) {
  llvm::json::Array layout;
  for (int64_t j = 0; j < replicas; ++j)
    for (int64_t s = 0; s < pipelineRanks; ++s)
      layout.push_back(llvm::json::Object{{"rank", j * pipelineRanks + s},
                                          {"pipeline_rank", s},
                                          {"replica", j}});
  return layout;
}

llvm::json::Array
pipedream::replicatedRankMemoryJSON(const Bundle &bundle,
                                    const llvm::json::Array &ranks,
                                    int64_t replicas) {
  llvm::json::Array out;
  const int64_t k = static_cast<int64_t>(ranks.size());
  for (int64_t j = 0; j < replicas; ++j) {
    // Replica j's programs: a sharded update of another replica is not
    // called, so its optimizer state is not allocated.
    llvm::json::Array view;
    for (const llvm::json::Value &value : ranks) {
      llvm::json::Object rank = *value.getAsObject();
      if (llvm::json::Array *program = rank.getArray("program")) {
        llvm::json::Array kept;
        for (const llvm::json::Value &inst : *program) {
          const llvm::json::Object *o = inst.getAsObject();
          std::optional<int64_t> replica =
              o ? o->getInteger("replica") : std::nullopt;
          if (!replica || *replica == j)
            kept.push_back(inst);
        }
        rank["program"] = std::move(kept);
      }
      view.push_back(std::move(rank));
    }
    for (llvm::json::Value &value : rankMemoryJSON(bundle, view)) {
      llvm::json::Object entry = *value.getAsObject();
      int64_t s = entry.getInteger("rank").value_or(0);
      entry["rank"] = j * k + s;
      entry["pipeline_rank"] = s;
      entry["replica"] = j;
      out.push_back(std::move(entry));
    }
  }
  return out;
}

void pipedream::printRankLayout(int64_t pipelineRanks, int64_t replicas,
                                bool shardOptimizer,
                                const llvm::json::Array &memory,
                                llvm::raw_ostream &os) {
  os << llvm::formatv("replicated stages: {0} pipeline ranks x {1} replicas "
                      "= {2} ranks (rank = replica x {0} + pipeline rank); "
                      "gradients summed over each stage's replicas before "
                      "the update{3}\n",
                      pipelineRanks, replicas, pipelineRanks * replicas,
                      shardOptimizer ? ", optimizer state sharded (ZeRO-1)"
                                     : "");
  for (const llvm::json::Value &value : memory) {
    const llvm::json::Object *o = value.getAsObject();
    if (!o)
      continue;
    os << llvm::formatv(
        "  rank {0}: pipeline rank {1}, replica {2}: {3} bytes (weights {4}, "
        "gradients {5}, optimizer state {6})\n",
        o->getInteger("rank").value_or(0),
        o->getInteger("pipeline_rank").value_or(0),
        o->getInteger("replica").value_or(0),
        o->getInteger("total_bytes").value_or(0),
        o->getInteger("weight_bytes").value_or(0),
        o->getInteger("gradient_bytes").value_or(0),
        o->getInteger("optimizer_state_bytes").value_or(0));
  }
}

namespace {
/// The plans pipe-partition's planner recorded on the first partitioned
/// function.
llvm::ArrayRef<pipedream::pipe::PlanAttr> plansOf(mlir::ModuleOp module) {
  for (auto f : module.getOps<mlir::func::FuncOp>())
    if (auto summary = f->getAttrOfType<pipedream::pipe::PartitionAttr>(
            pipedream::pipe::PipeDialect::kPartitionAttrName))
      if (!summary.getPlans().empty())
        return summary.getPlans();
  return {};
}

std::string replicasText(llvm::ArrayRef<int64_t> replicas) {
  std::string text;
  for (int64_t r : replicas)
    text += (text.empty() ? "" : "-") + std::to_string(r);
  return text;
}
} // namespace

void pipedream::printReplicationPlans(mlir::ModuleOp module,
                                      llvm::raw_ostream &os) {
  llvm::ArrayRef<pipedream::pipe::PlanAttr> plans = plansOf(module);
  if (plans.empty())
    return;
  os << "replication plans (PipeDream's planner; bottleneck per "
        "micro-batch, with the replicas' all-reduce):\n";
  for (pipedream::pipe::PlanAttr v : plans)
    os << llvm::formatv(
        "  {0} stages, replicas {1}: {2:e3} s{3}\n", v.getStages(),
        replicasText(v.getReplicas()), v.getSlowest().getValueAsDouble(),
        v.getChosen()     ? "  <- chosen"
        : !v.getUniform() ? "  (optimum; non-uniform replication, PipeDream's "
                            "1F1B-RR, is not run by this runtime)"
                          : "");
}

llvm::json::Array pipedream::replicationPlansJSON(mlir::ModuleOp module) {
  llvm::json::Array out;
  for (pipedream::pipe::PlanAttr v : plansOf(module)) {
    llvm::json::Array replicas;
    for (int64_t r : v.getReplicas())
      replicas.push_back(r);
    out.push_back(
        llvm::json::Object{{"stages", v.getStages()},
                           {"replicas", std::move(replicas)},
                           {"slowest", v.getSlowest().getValueAsDouble()},
                           {"uniform", v.getUniform()},
                           {"chosen", v.getChosen()}});
  }
  return out;
}
