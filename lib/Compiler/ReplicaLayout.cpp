//===- ReplicaLayout.cpp - ranks of replicated stages ---------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Compiler/ReplicaLayout.h"

#include "pipedream/Dialect/Pipe/IR/PipeAttrs.h"
#include "pipedream/Dialect/Pipe/Transforms/Messages.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <map>

using namespace mlir;
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

//===----------------------------------------------------------------------===//
// Non-uniform replication (PipeDream's 1F1B-RR)
//===----------------------------------------------------------------------===//

std::vector<std::pair<int64_t, int64_t>>
pipedream::routedLayout(llvm::ArrayRef<int64_t> stageReplicas) {
  std::vector<std::pair<int64_t, int64_t>> layout;
  int64_t most = 0;
  for (int64_t r : stageReplicas)
    most = std::max(most, r);
  for (int64_t j = 0; j < most; ++j)
    for (int64_t s = 0; s < static_cast<int64_t>(stageReplicas.size()); ++s)
      if (j < stageReplicas[s])
        layout.push_back({s, j});
  return layout;
}

llvm::json::Array
pipedream::routedRankLayoutJSON(llvm::ArrayRef<int64_t> stageReplicas) {
  llvm::json::Array out;
  for (auto [w, entry] : llvm::enumerate(routedLayout(stageReplicas)))
    out.push_back(llvm::json::Object{{"rank", static_cast<int64_t>(w)},
                                     {"pipeline_rank", entry.first},
                                     {"replica", entry.second}});
  return out;
}

namespace {
/// The registers an instruction reads and writes.
void registersOf(const llvm::json::Object &ins, std::vector<int64_t> &reads,
                 std::vector<int64_t> &writes) {
  reads.clear();
  writes.clear();
  llvm::StringRef op = ins.getString("op").value_or("");
  auto add = [](std::vector<int64_t> &to, const llvm::json::Array *regs) {
    if (regs)
      for (const llvm::json::Value &r : *regs)
        if (auto g = r.getAsInteger())
          to.push_back(*g);
  };
  if (op == "call") {
    add(reads, ins.getArray("args"));
    add(writes, ins.getArray("results"));
  } else if (op == "send" || op == "loss") {
    if (auto g = ins.getInteger("src"))
      reads.push_back(*g);
  } else if (op == "recv" || op == "input") {
    if (auto g = ins.getInteger("dst"))
      writes.push_back(*g);
  }
}
} // namespace

FailureOr<llvm::json::Array>
pipedream::splitRoutedRankPrograms(MLIRContext *context,
                                   const llvm::json::Array &ranks,
                                   llvm::ArrayRef<int64_t> stageReplicas) {
  auto fail = [&](const std::string &message) -> FailureOr<llvm::json::Array> {
    emitError(UnknownLoc::get(context)) << message;
    return failure();
  };
  const int64_t k = static_cast<int64_t>(ranks.size());
  if (static_cast<int64_t>(stageReplicas.size()) != k) {
    return fail(
        "non-uniform replication: " + std::to_string(stageReplicas.size()) +
        " stage replications for " + std::to_string(k) + " pipeline ranks");
  }
  std::vector<std::pair<int64_t, int64_t>> layout = routedLayout(stageReplicas);
  std::map<std::pair<int64_t, int64_t>, int64_t> worldOf;
  for (auto [w, entry] : llvm::enumerate(layout))
    worldOf[entry] = static_cast<int64_t>(w);
  const int64_t n = static_cast<int64_t>(layout.size());
  std::vector<llvm::json::Array> programs(n);
  std::vector<std::vector<pipe::schedule::Event>> events(n);
  std::vector<const llvm::json::Object *> rankOf(n, nullptr);

  for (int64_t s = 0; s < k; ++s) {
    const llvm::json::Object *rank = ranks[s].getAsObject();
    const llvm::json::Array *program = rank ? rank->getArray("program") : nullptr;
    const llvm::json::Array *registers =
        rank ? rank->getArray("registers") : nullptr;
    if (!program || !registers) {
      return fail("non-uniform replication: pipeline rank " +
                  std::to_string(s) + " has no program");
    }
    std::string where = "non-uniform replication: pipeline rank " +
                        std::to_string(s) + ", instruction ";
    const size_t size = program->size();
    std::vector<const llvm::json::Object *> ins(size);
    // The micro-batch of each instruction; -1: every replica (updates).
    constexpr int64_t kUnknown = -2;
    std::vector<int64_t> mb(size, kUnknown);
    for (size_t i = 0; i < size; ++i) {
      ins[i] = (*program)[i].getAsObject();
      llvm::StringRef op = ins[i] ? ins[i]->getString("op").value_or("") : "";
      std::optional<int64_t> m =
          ins[i] ? ins[i]->getInteger("microbatch") : std::nullopt;
      if (op == "all_reduce") {
        // A shared weight's gradient: every replica of every holding stage
        // takes part (below), before its update.
        const llvm::json::Array *group = ins[i]->getArray("ranks");
        bool valid = group && group->size() >= 2;
        for (size_t g = 0; valid && g < group->size(); ++g) {
          std::optional<int64_t> q = (*group)[g].getAsInteger();
          valid = q && *q >= 0 && *q < k;
        }
        if (!valid) {
          return fail(where + std::to_string(i) +
                      ": an all_reduce whose ranks are not pipeline ranks");
        }
        mb[i] = -1;
        continue;
      }
      if (op == "call") {
        if (ins[i]->get("weights")) {
          return fail(where + std::to_string(i) +
                      ": weight versions are not split over non-uniform "
                      "replicas");
        }
        std::optional<int64_t> shard = ins[i]->getInteger("replica");
        if (shard && (*shard < 0 || *shard >= stageReplicas[s] ||
                      ins[i]->getString("action").value_or("") != "U")) {
          return fail(where + std::to_string(i) +
                      ": a sharded call of replica " + std::to_string(*shard) +
                      " on a stage of " + std::to_string(stageReplicas[s]) +
                      " replicas");
        }
        // Every replica updates, and computes clipping's gradient norm (N).
        if (ins[i]->getString("action").value_or("") == "U" ||
            ins[i]->getString("action").value_or("") == "N")
          mb[i] = -1;
        else if (m)
          mb[i] = *m;
      } else if (op == "input" || op == "loss") {
        if (m)
          mb[i] = *m;
      } else if (op != "send" && op != "recv") {
        return fail(where + std::to_string(i) + ": unknown instruction '" +
                    op.str() + "'");
      }
      if ((op == "call" || op == "input" || op == "loss") && mb[i] == kUnknown) {
        return fail(where + std::to_string(i) + ": " + op.str() +
                    " names no micro-batch");
      }
    }
    // Messages: a receive belongs to the micro-batch of its value's first
    // reader, a send to that of the instruction that wrote what it sends.
    std::vector<int64_t> reads, writes;
    for (int pass = 0; pass < 3; ++pass)
      for (size_t i = 0; i < size; ++i) {
        if (mb[i] != kUnknown)
          continue;
        llvm::StringRef op = ins[i]->getString("op").value_or("");
        if (op == "recv") {
          int64_t reg = ins[i]->getInteger("dst").value_or(-1);
          for (size_t j = i + 1; j < size; ++j) {
            registersOf(*ins[j], reads, writes);
            if (llvm::is_contained(reads, reg)) {
              mb[i] = mb[j];
              break;
            }
            if (llvm::is_contained(writes, reg))
              break;
          }
        } else if (op == "send") {
          int64_t reg = ins[i]->getInteger("src").value_or(-1);
          for (size_t j = i; j-- > 0;) {
            registersOf(*ins[j], reads, writes);
            if (llvm::is_contained(writes, reg)) {
              mb[i] = mb[j];
              break;
            }
          }
        }
      }
    for (size_t i = 0; i < size; ++i)
      if (mb[i] == kUnknown ||
          (mb[i] < 0 && ins[i]->getString("op") != "call" &&
           ins[i]->getString("op") != "all_reduce")) {
        return fail(where + std::to_string(i) +
                    ": cannot tell which micro-batch this " +
                    ins[i]->getString("op").value_or("").str() + " belongs to");
      }

    const int64_t r = stageReplicas[s];
    std::vector<int64_t> group;
    for (int64_t j = 0; j < r; ++j)
      group.push_back(worldOf.at({s, j}));
    std::sort(group.begin(), group.end());
    for (int64_t j = 0; j < r; ++j) {
      int64_t w = worldOf.at({s, j});
      rankOf[w] = rank;
      for (size_t i = 0; i < size; ++i) {
        if (mb[i] >= 0 && mb[i] % r != j)
          continue;
        llvm::json::Object copy = *ins[i];
        llvm::StringRef op = ins[i]->getString("op").value_or("");
        pipe::schedule::Event event;
        event.what = op.str() + " " + std::to_string(i) + " of pipeline rank " +
                     std::to_string(s);
        if (op == "all_reduce") {
          // Over the world ranks of every replica of every holding stage:
          // the sum of all their micro-batches' gradients, which the
          // runtime then leaves out of the stage's own replica sum (its
          // group holds all of that stage's replicas).
          std::vector<int64_t> world;
          for (const llvm::json::Value &v : *ins[i]->getArray("ranks")) {
            int64_t q = *v.getAsInteger();
            for (int64_t jj = 0; jj < stageReplicas[q]; ++jj)
              world.push_back(worldOf.at({q, jj}));
          }
          std::sort(world.begin(), world.end());
          llvm::json::Array ranksJson;
          for (int64_t x : world)
            ranksJson.push_back(x);
          copy["ranks"] = std::move(ranksJson);
          event.kind = pipe::schedule::Event::Collective;
          event.group = world;
          event.what = "shared gradient '" +
                       ins[i]->getString("buffer").value_or("").str() + "'";
        } else if (op == "send" || op == "recv") {
          int64_t q = ins[i]->getInteger("peer").value_or(-1);
          if (q < 0 || q >= k) {
            return fail(where + std::to_string(i) + ": peer " +
                        std::to_string(q) + " is not a pipeline rank");
          }
          int64_t peer = worldOf.at({q, mb[i] % stageReplicas[q]});
          copy["peer"] = peer;
          int64_t reg =
              ins[i]->getInteger(op == "send" ? "src" : "dst").value_or(-1);
          event.kind = op == "send" ? pipe::schedule::Event::Send
                                    : pipe::schedule::Event::Recv;
          event.peer = peer;
          event.tag = ins[i]->getInteger("tag").value_or(-1);
          if (reg >= 0 && reg < static_cast<int64_t>(registers->size())) {
            std::string type;
            llvm::raw_string_ostream os(type);
            os << (*registers)[reg];
            event.type = type;
          }
        }
        // Sharded optimizer state (pipe-shard-optimizer): a run of update
        // calls, one per replica, each rank running its own; the gradients
        // are summed before the first, the weights gathered after the last.
        std::optional<int64_t> shard = ins[i]->getInteger("replica");
        if (op == "call" && mb[i] < 0 && r > 1 && (!shard || *shard == 0)) {
          // The update waits for the sum of the stage's gradients over its
          // replicas (ReplicaGroup): a collective of the group.
          pipe::schedule::Event sum;
          sum.kind = pipe::schedule::Event::Collective;
          sum.group = group;
          sum.what = "gradients of stage " + std::to_string(s);
          events[w].push_back(sum);
        }
        events[w].push_back(event);
        if (op == "call" && r > 1 && shard && *shard == r - 1) {
          pipe::schedule::Event gather;
          gather.kind = pipe::schedule::Event::Collective;
          gather.group = group;
          gather.what = "updated weights of stage " + std::to_string(s);
          events[w].push_back(gather);
        }
        programs[w].push_back(std::move(copy));
      }
    }
  }
  pipe::schedule::Diagnostic d = pipe::schedule::verifyMessages(events);
  if (!d.message.empty()) {
    return fail(
        "non-uniform replication: the split rank programs are invalid: " +
        d.message);
  }
  llvm::json::Array out;
  for (int64_t w = 0; w < n; ++w) {
    llvm::json::Object rank = *rankOf[w];
    rank.erase("entry");
    rank.erase("entry_abi");
    rank["rank"] = w;
    rank["pipeline_rank"] = layout[w].first;
    rank["replica"] = layout[w].second;
    rank["program"] = std::move(programs[w]);
    // The evaluation program of a stage stays on its replica 0 (the others
    // run it from there, docs/Bundle.md "Evaluation in pipelines").
    if (layout[w].second != 0)
      rank.erase("eval");
    out.push_back(std::move(rank));
  }
  return out;
}

llvm::json::Array
pipedream::routedRankMemoryJSON(const Bundle &bundle,
                                const llvm::json::Array &worldRanks,
                                llvm::ArrayRef<int64_t> stageReplicas) {
  std::vector<std::pair<int64_t, int64_t>> layout = routedLayout(stageReplicas);
  // Each world rank's program as it runs: a sharded update of another
  // replica is not called, so its optimizer state is not allocated.
  llvm::json::Array view;
  for (auto [w, value] : llvm::enumerate(worldRanks)) {
    llvm::json::Object rank = *value.getAsObject();
    if (llvm::json::Array *program = rank.getArray("program");
        program && w < layout.size()) {
      llvm::json::Array kept;
      for (const llvm::json::Value &inst : *program) {
        const llvm::json::Object *o = inst.getAsObject();
        std::optional<int64_t> replica =
            o ? o->getInteger("replica") : std::nullopt;
        if (!replica || *replica == layout[w].second)
          kept.push_back(inst);
      }
      rank["program"] = std::move(kept);
    }
    view.push_back(std::move(rank));
  }
  llvm::json::Array out;
  for (llvm::json::Value &value : rankMemoryJSON(bundle, view)) {
    llvm::json::Object entry = *value.getAsObject();
    int64_t w = entry.getInteger("rank").value_or(0);
    if (w >= 0 && w < static_cast<int64_t>(layout.size())) {
      entry["pipeline_rank"] = layout[w].first;
      entry["replica"] = layout[w].second;
    }
    out.push_back(std::move(entry));
  }
  return out;
}

void pipedream::printRoutedRankLayout(llvm::ArrayRef<int64_t> stageReplicas,
                                      int64_t microbatches,
                                      const llvm::json::Array &memory,
                                      llvm::raw_ostream &os) {
  std::string text;
  for (int64_t r : stageReplicas)
    text += (text.empty() ? "" : "-") + std::to_string(r);
  os << llvm::formatv(
      "non-uniform replication (PipeDream's 1F1B-RR): {0} stages, replicas "
      "{1} = {2} ranks; micro-batch m of stage s runs on its replica m mod "
      "R_s ({3} micro-batches per step); gradients summed over each stage's "
      "replicas before the update\n",
      stageReplicas.size(), text, routedLayout(stageReplicas).size(),
      microbatches);
  for (const llvm::json::Value &value : memory) {
    const llvm::json::Object *o = value.getAsObject();
    if (!o)
      continue;
    int64_t s = o->getInteger("pipeline_rank").value_or(0);
    int64_t j = o->getInteger("replica").value_or(0);
    int64_t r = s < static_cast<int64_t>(stageReplicas.size())
                    ? stageReplicas[s]
                    : 1;
    std::string mbs;
    for (int64_t m = j; m < microbatches; m += r)
      mbs += (mbs.empty() ? "" : " ") + std::to_string(m);
    os << llvm::formatv("  rank {0}: stage {1}, replica {2} of {3}: "
                        "micro-batches {4}; {5} bytes (weights {6}, "
                        "gradients {7}, optimizer state {8})\n",
                        o->getInteger("rank").value_or(0), s, j, r, mbs,
                        o->getInteger("total_bytes").value_or(0),
                        o->getInteger("weight_bytes").value_or(0),
                        o->getInteger("gradient_bytes").value_or(0),
                        o->getInteger("optimizer_state_bytes").value_or(0));
  }
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
        v.getChosen() && !v.getUniform()
            ? "  <- chosen (non-uniform replication, PipeDream's 1F1B-RR)"
        : v.getChosen() ? "  <- chosen"
        : !v.getUniform()
            ? "  (optimum without the runtime's constraint: every R dividing "
              "the micro-batches, a synchronous schedule)"
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
