//===- ReplicaLayout.cpp - ranks of replicated stages ---------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Compiler/ReplicaLayout.h"

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
