//===- ManifestRankPrograms.cpp - bundle.json's `pipeline` ----------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The `pipeline` section of bundle.json: every rank's program (calls,
// sends and receives, all-reduces, the loss), its weights and the layout,
// checked so that every send has its receive and no rank waits forever.
//
//===----------------------------------------------------------------------===//

#include "ManifestParse.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <sstream>

namespace pipedream {
namespace runtime {
namespace manifest {

namespace {

size_t positiveAt(Validator &v, const json &object, const std::string &path,
                  const char *key, size_t fallback = 0) {
  std::string fpath = Validator::join(path, key);
  if (fallback && !object.contains(key))
    return fallback;
  uint64_t value = v.unsignedInt(v.member(object, path, key), fpath);
  if (value == 0)
    v.fail(fpath, "must be at least 1");
  if (value > static_cast<uint64_t>(std::numeric_limits<int32_t>::max()))
    v.fail(fpath, std::to_string(value) + " is too large");
  return static_cast<size_t>(value);
}

std::string ranksText(size_t count) {
  return std::to_string(count) + (count == 1 ? " rank" : " ranks");
}

/// One side of a message between two ranks, for matching sends and recvs.
struct MessageEnd {
  std::string path;
  int64_t tag;
  const TensorType *type;
};

/// One rank's all_reduce instruction.
struct CollectiveEnd {
  size_t instruction;
  std::string buffer;
  TensorType type;
};

std::string instructionPath(size_t rank, size_t instruction) {
  return "pipeline.ranks[" + std::to_string(rank) + "].program[" +
         std::to_string(instruction) + "]";
}

/// Validates bundle.json `pipeline` against the functions already read.
/// A rank's own weight file (docs/Bundle.md "Rank weight files"): every
/// weight the rank's functions bind, each once, at an aligned offset.
void parseRankWeights(Validator &v, const json &entry, const std::string &rpath,
                      size_t r, const Manifest &manifest, RankProgram &rank) {
  if (!entry.contains("weights_file") && !entry.contains("weights"))
    return;
  std::string fpath = Validator::join(rpath, "weights_file");
  std::string wpath = Validator::join(rpath, "weights");
  if (manifest.version < 3)
    v.fail(fpath, "rank weight files need bundle version 3 (the bundle says " +
                      std::to_string(manifest.version) + ")");
  rank.weightsFile = v.relativePath(v.member(entry, rpath, "weights_file"),
                                    fpath);
  const json &weights = v.array(v.member(entry, rpath, "weights"), wpath);
  if (entry.contains("weights_file_linked")) {
    std::string lpath = Validator::join(rpath, "weights_file_linked");
    const json &linked = v.object(entry["weights_file_linked"], lpath);
    rank.weightsFileLinked = true;
    rank.linkedBytes = v.unsignedInt(v.member(linked, lpath, "bytes"),
                                     Validator::join(lpath, "bytes"));
    rank.linkedMtimeNs = static_cast<int64_t>(
        v.unsignedInt(v.member(linked, lpath, "mtime_ns"),
                      Validator::join(lpath, "mtime_ns")));
  }
  std::map<std::string, size_t> byName;
  for (size_t i = 0; i < manifest.weights.size(); ++i)
    byName[manifest.weights[i].name] = i;
  std::set<size_t> listed;
  for (size_t k = 0; k < weights.size(); ++k) {
    std::string path = Validator::index(wpath, k);
    const json &item = v.object(weights[k], path);
    std::string name =
        v.string(v.member(item, path, "name"), Validator::join(path, "name"));
    auto it = byName.find(name);
    if (it == byName.end())
      v.fail(Validator::join(path, "name"),
             "rank " + std::to_string(r) + " lists weight '" + name +
                 "', which the bundle's 'weights' do not have");
    if (!listed.insert(it->second).second)
      v.fail(Validator::join(path, "name"),
             "rank " + std::to_string(r) + " lists weight '" + name +
                 "' twice");
    uint64_t offset = v.unsignedInt(v.member(item, path, "offset"),
                                    Validator::join(path, "offset"));
    if (offset % kAlignment != 0 ||
        offset > std::numeric_limits<uint64_t>::max() -
                     manifest.weights[it->second].bytes)
      v.fail(Validator::join(path, "offset"),
             "offset " + std::to_string(offset) + " of weight '" + name +
                 "' is not a multiple of " + std::to_string(kAlignment) +
                 " or overflows");
    rank.weights.push_back({it->second, offset});
  }
  for (size_t f : rank.functions)
    for (const BufferSpec &b : manifest.functions[f].buffers)
      if (b.role == PD_ROLE_WEIGHT && !listed.count(b.weightIndex))
        v.fail(wpath, "rank " + std::to_string(r) + "'s function '" +
                          manifest.functions[f].name + "' binds weight '" +
                          b.name + "', which the rank's weights file '" +
                          rank.weightsFile + "' does not list");
}

/// One `pipeline.rank_layout` entry: its rank, pipeline rank (the stage
/// whose program it runs) and replica, each a required unsigned field.
static std::tuple<uint64_t, uint64_t, uint64_t>
readLayoutEntry(Validator &v, const json &value, const std::string &epath) {
  const json &entry = v.object(value, epath);
  auto field = [&](const char *name) {
    return v.unsignedInt(v.member(entry, epath, name),
                         Validator::join(epath, name));
  };
  uint64_t rank = field("rank");
  uint64_t stage = field("pipeline_rank");
  uint64_t replica = field("replica");
  return {rank, stage, replica};
}

/// `rank_layout` (required with replicas > 1): one entry per world rank,
/// {"rank": w, "pipeline_rank": s, "replica": j}, listed in order, with
/// w = j * K + s (the layout the runtime implements; docs/Bundle.md
/// "Replicated stages").
/// Non-uniform replication: `stage_replicas` (one positive count per
/// stage, summing to the number of ranks) and `rank_layout` (required):
/// each world rank's stage and replica, every (stage, replica < R_s) pair
/// once.

void parseRoutedLayout(Validator &v, const json &object, PipelineSpec &p) {
  const std::string spath = "pipeline.stage_replicas";
  const json &counts = v.array(object["stage_replicas"], spath);
  if (p.replicas != 1)
    v.fail(spath, "non-uniform replication takes no pipeline.replicas");
  if (counts.size() != p.stages)
    v.fail(spath, "has " + std::to_string(counts.size()) +
                      " entries for the schedule's " +
                      std::to_string(p.stages) + " stages");
  size_t total = 0;
  for (size_t s = 0; s < counts.size(); ++s) {
    std::string at = Validator::index(spath, s);
    uint64_t r = v.unsignedInt(counts[s], at);
    if (r < 1)
      v.fail(at, "a stage has at least 1 replica");
    p.stageReplicas.push_back(static_cast<size_t>(r));
    total += static_cast<size_t>(r);
  }
  if (total != p.ranks.size())
    v.fail(spath, "the replicas sum to " + std::to_string(total) +
                      " ranks, but pipeline.ranks has " +
                      std::to_string(p.ranks.size()) + " programs");
  const std::string lpath = "pipeline.rank_layout";
  if (!object.contains("rank_layout"))
    v.fail(lpath, "missing: non-uniform replication lists the stage and "
                  "replica of each rank");
  const json &layout = v.array(object["rank_layout"], lpath);
  if (layout.size() != p.ranks.size())
    v.fail(lpath, "has " + std::to_string(layout.size()) +
                      " entries for " + std::to_string(p.ranks.size()) +
                      " ranks");
  std::set<std::pair<size_t, size_t>> seen;
  for (size_t w = 0; w < layout.size(); ++w) {
    std::string epath = Validator::index(lpath, w);
    auto [rank, stage, replica] = readLayoutEntry(v, layout[w], epath);
    if (rank != w)
      v.fail(Validator::join(epath, "rank"),
             "entry " + std::to_string(w) + " says rank " +
                 std::to_string(rank) + "; ranks must be listed in order");
    if (stage >= p.stageReplicas.size() ||
        replica >= p.stageReplicas[stage])
      v.fail(epath, "rank " + std::to_string(w) + " is stage " +
                        std::to_string(stage) + ", replica " +
                        std::to_string(replica) +
                        ", which pipeline.stage_replicas does not have");
    if (!seen.insert({stage, replica}).second)
      v.fail(epath, "stage " + std::to_string(stage) + ", replica " +
                        std::to_string(replica) + " is listed twice");
    p.layoutStage.push_back(static_cast<size_t>(stage));
    p.layoutReplica.push_back(static_cast<size_t>(replica));
  }
}

void parseRankLayout(Validator &v, const json &object, PipelineSpec &p) {
  if (object.contains("stage_replicas"))
    return parseRoutedLayout(v, object, p);
  const std::string lpath = "pipeline.rank_layout";
  if (!object.contains("rank_layout")) {
    if (p.replicas > 1)
      v.fail(lpath, "missing: a pipeline with " + std::to_string(p.replicas) +
                        " replicas lists the stage and replica of each rank");
    return;
  }
  const json &layout = v.array(object["rank_layout"], lpath);
  if (layout.size() != p.worldRanks())
    v.fail(lpath, "has " + std::to_string(layout.size()) +
                      " entries; the pipeline has " +
                      std::to_string(p.ranks.size()) + " pipeline ranks x " +
                      std::to_string(p.replicas) + " replicas = " +
                      std::to_string(p.worldRanks()) + " ranks");
  for (size_t w = 0; w < layout.size(); ++w) {
    std::string epath = Validator::index(lpath, w);
    auto [rank, program, replica] = readLayoutEntry(v, layout[w], epath);
    if (rank != w || program != p.programOf(w) || replica != p.replicaOf(w))
      v.fail(epath, "rank " + std::to_string(rank) + " is pipeline rank " +
                        std::to_string(program) + ", replica " +
                        std::to_string(replica) + ", but entry " +
                        std::to_string(w) + " must be rank " +
                        std::to_string(w) + ", pipeline rank " +
                        std::to_string(p.programOf(w)) + ", replica " +
                        std::to_string(p.replicaOf(w)) +
                        " (rank = replica x " +
                        std::to_string(p.ranks.size()) + " + pipeline rank)");
  }
}


} // namespace

void parsePipeline(Validator &v, const json &value, Manifest &manifest) {
  const std::string path = "pipeline";
  const json &object = v.object(value, path);
  PipelineSpec &p = manifest.pipeline;

  const std::string spath = "pipeline.schedule";
  const json &schedule = v.object(v.member(object, path, "schedule"), spath);
  p.kind = v.string(v.member(schedule, spath, "kind"),
                    Validator::join(spath, "kind"));
  p.stages = positiveAt(v, schedule, spath, "stages");
  p.microbatches = positiveAt(v, schedule, spath, "microbatches");
  p.chunks = positiveAt(v, schedule, spath, "chunks", 1);

  p.loss = v.string(v.member(object, path, "loss"), "pipeline.loss");
  if (p.loss != "cross-entropy" && p.loss != "mse" && p.loss != "none")
    v.fail("pipeline.loss", "unknown loss '" + p.loss +
                                "' (expected cross-entropy, mse or none)");
  // "none": the last stage's first output is the loss; what it reads are
  // ordinary inputs, and there is no `labels` member.
  const bool hasLabels = p.loss != "none";
  if (!hasLabels && object.contains("labels"))
    v.fail("pipeline.labels", "loss 'none' has no labels (they are "
                              "ordinary pipeline.inputs)");
  if (hasLabels)
    p.labels = v.string(v.member(object, path, "labels"), "pipeline.labels");
  if (p.loss == "cross-entropy") {
    p.numClasses = parseNumClasses(v, object, path);
  }
  p.inputs = parseDataInputs(v, object, path, "pipeline", p.labels);
  p.microbatchSize = positiveAt(v, object, path, "microbatch_size");
  p.batchSize = positiveAt(v, object, path, "batch_size");
  p.replicas = positiveAt(v, object, path, "replicas", 1);
  // NOTE: with replicas the step's batch is split over them: every replica
  // runs the schedule's M micro-batches on its share.
  if (p.batchSize != p.replicas * p.microbatches * p.microbatchSize)
    v.fail("pipeline.batch_size",
           std::to_string(p.batchSize) +
               (p.replicas > 1
                    ? " is not replicas x schedule.microbatches x "
                      "microbatch_size = " +
                          std::to_string(p.replicas) + " x "
                    : std::string(" is not schedule.microbatches x "
                                  "microbatch_size = ")) +
               std::to_string(p.microbatches) + " x " +
               std::to_string(p.microbatchSize));
  if (object.contains("optimizer"))
    p.optimizer = v.object(object["optimizer"], "pipeline.optimizer").dump();
  if (object.contains("grad_norm"))
    p.gradNorm = v.string(object["grad_norm"], "pipeline.grad_norm");

  for (const std::string &name : p.inputs)
    p.data.push_back({name, {}, false, {}});
  if (hasLabels)
    p.data.push_back({p.labels, {}, true, {}});
  std::vector<std::string> dataFirstUse(p.data.size());
  auto dataIndex = [&](const std::string &name) -> int {
    for (size_t i = 0; i < p.data.size(); ++i)
      if (p.data[i].name == name)
        return static_cast<int>(i);
    return -1;
  };
  std::string dataList;
  for (const PipelineData &d : p.data)
    dataList += (dataList.empty() ? "" : ", ") + d.name;

  std::map<std::string, size_t> functionIndex;
  std::string functionNames;
  for (size_t i = 0; i < manifest.functions.size(); ++i) {
    functionIndex[manifest.functions[i].name] = i;
    functionNames += (functionNames.empty() ? "" : ", ") +
                     manifest.functions[i].name;
  }

  const json &ranks =
      v.array(v.member(object, path, "ranks"), "pipeline.ranks");
  if (ranks.empty())
    v.fail("pipeline.ranks", "the pipeline has no ranks");
  size_t numRanks = ranks.size();
  // Messages per (sender, receiver), in program order.
  std::map<std::pair<size_t, size_t>, std::vector<MessageEnd>> sends, recvs;
  // all_reduce instructions by group, then rank.
  std::map<std::vector<size_t>, std::vector<std::vector<CollectiveEnd>>>
      collectives;
  // Where each micro-batch's loss is.
  // Where each micro-batch's loss is: (rank, instruction path).
  std::vector<std::pair<size_t, std::string>> lossAt(
      p.microbatches, {std::numeric_limits<size_t>::max(), ""});
  // The evaluation programs (`eval`, docs/Bundle.md "Evaluation in
  // pipelines"): their messages, and their one micro-batch's loss.
  std::map<std::pair<size_t, size_t>, std::vector<MessageEnd>> evalSends,
      evalRecvs;
  std::vector<std::pair<size_t, std::string>> evalLossAt(
      1, {std::numeric_limits<size_t>::max(), ""});
  size_t ranksWithEval = 0;

  for (size_t r = 0; r < numRanks; ++r) {
    std::string rpath = Validator::index("pipeline.ranks", r);
    const json &entry = v.object(ranks[r], rpath);
    if (entry.contains("rank")) {
      uint64_t given =
          v.unsignedInt(entry["rank"], Validator::join(rpath, "rank"));
      if (given != r)
        v.fail(Validator::join(rpath, "rank"),
               "entry " + std::to_string(r) + " of pipeline.ranks says rank " +
                   std::to_string(given) +
                   "; ranks must be listed in order 0, 1, ...");
    }
    p.ranks.emplace_back();
    RankProgram &rank = p.ranks.back();
    if (entry.contains("entry")) {
      rank.entry = v.string(entry["entry"], Validator::join(rpath, "entry"));
      rank.entryABI = v.unsignedInt(v.member(entry, rpath, "entry_abi"),
                                    Validator::join(rpath, "entry_abi"));
      if (rank.entryABI != kRankEntryABIVersion)
        v.fail(Validator::join(rpath, "entry_abi"),
               "native rank entry ABI " + std::to_string(rank.entryABI) +
                   " is not supported (this runtime implements " +
                   std::to_string(kRankEntryABIVersion) +
                   "); recompile the bundle");
    }
    std::string gpath = Validator::join(rpath, "registers");
    const json &registers = v.array(v.member(entry, rpath, "registers"), gpath);
    for (size_t g = 0; g < registers.size(); ++g) {
      std::string path = Validator::index(gpath, g);
      rank.registers.push_back(v.tensorType(v.object(registers[g], path), path));
    }
    std::set<size_t> called;
    // One program of the rank: `program` (the step, M micro-batches) or
    // `eval.program` (evaluation: one micro-batch, no all-reduce).
    auto parseProgram = [&](const json &program, const std::string &ppath,
                            bool eval, const std::vector<TensorType> &registers,
                            std::vector<RankInstruction> &out,
                            std::map<std::pair<size_t, size_t>,
                                     std::vector<MessageEnd>> &sends,
                            std::map<std::pair<size_t, size_t>,
                                     std::vector<MessageEnd>> &recvs,
                            std::vector<std::pair<size_t, std::string>>
                                &lossAt) {
      const size_t microbatches = eval ? 1 : p.microbatches;
      std::vector<bool> defined(registers.size(), false);
      for (size_t i = 0; i < program.size(); ++i) {
        std::string ipath = Validator::index(ppath, i);
        const json &ientry = v.object(program[i], ipath);
        std::string where =
            "rank " + std::to_string(r) +
            (eval ? ", evaluation instruction " : ", instruction ") +
            std::to_string(i) + ": ";
        auto reg = [&](const json &value, const std::string &at) -> size_t {
          uint64_t index = v.unsignedInt(value, at);
          if (index >= registers.size())
            v.fail(at, where + "register " + std::to_string(index) +
                           " does not exist (rank " + std::to_string(r) +
                           " has " + std::to_string(registers.size()) +
                           " registers)");
          return static_cast<size_t>(index);
        };
        auto read = [&](size_t index, const std::string &at) {
          if (!defined[index])
            v.fail(at, where + "reads register " + std::to_string(index) +
                           " before any instruction of the program writes it");
        };
        auto field = [&](const char *key) -> const json & {
          return v.member(ientry, ipath, key);
        };
        auto fieldPath = [&](const char *key) {
          return Validator::join(ipath, key);
        };
        auto microbatch = [&]() -> int64_t {
          uint64_t m =
              v.unsignedInt(field("microbatch"), fieldPath("microbatch"));
          if (m >= microbatches)
            v.fail(fieldPath("microbatch"),
                   where + "micro-batch " + std::to_string(m) +
                       (eval ? std::string(" is out of range (an evaluation "
                                           "program runs micro-batch 0)")
                             : " is out of range (the schedule has " +
                                   std::to_string(microbatches) + ")"));
          return static_cast<int64_t>(m);
        };
        auto peer = [&]() -> size_t {
          uint64_t q = v.unsignedInt(field("peer"), fieldPath("peer"));
          if (q >= numRanks)
            v.fail(fieldPath("peer"), where + "peer rank " + std::to_string(q) +
                                          " does not exist (the pipeline has " +
                                          ranksText(numRanks) + ")");
          if (q == r)
            v.fail(fieldPath("peer"),
                   where + "rank " + std::to_string(r) + " cannot " +
                       (ientry.value("op", "") == "send" ? "send to"
                                                         : "receive from") +
                       " itself");
          return static_cast<size_t>(q);
        };
        auto tag = [&]() -> int64_t {
          uint64_t t = v.unsignedInt(field("tag"), fieldPath("tag"));
          if (t > static_cast<uint64_t>(std::numeric_limits<int32_t>::max()))
            v.fail(fieldPath("tag"), where + "tag " + std::to_string(t) +
                                         " is too large (at most 2^31 - 1)");
          return static_cast<int64_t>(t);
        };

        RankInstruction ins;
        std::string op = v.string(field("op"), fieldPath("op"));
        if (op == "input") {
          ins.op = RankInstruction::Op::Input;
          ins.name = v.string(field("name"), fieldPath("name"));
          int d = dataIndex(ins.name);
          if (d < 0)
            v.fail(fieldPath("name"),
                   where + "no data array '" + ins.name +
                       "' (pipeline.inputs and labels: " + dataList + ")");
          ins.microbatch = microbatch();
          ins.dst = reg(field("dst"), fieldPath("dst"));
          const TensorType &type = registers[ins.dst];
          if (type.shape.empty() ||
              static_cast<size_t>(type.shape[0]) != p.microbatchSize)
            v.fail(fieldPath("dst"),
                   where + "register " + std::to_string(ins.dst) + " is " +
                       describe(type) + ": the first axis of data '" +
                       ins.name + "' must be microbatch_size " +
                       std::to_string(p.microbatchSize));
          PipelineData &data = p.data[d];
          if (dataFirstUse[d].empty()) {
            data.type = type;
            dataFirstUse[d] = ipath;
          } else if (data.type.dtype != type.dtype ||
                     data.type.shape != type.shape) {
            v.fail(fieldPath("dst"),
                   where + "data '" + ins.name + "' is read into " +
                       describe(type) + " here but into " +
                       describe(data.type) + " at " + dataFirstUse[d]);
          }
          // The evaluation reads what the rank's step reads (the same stages'
          // data), so the rank's data arrays are the step's.
          if (eval && (data.ranks.empty() || data.ranks.back() != r))
            v.fail(fieldPath("name"),
                   where + "rank " + std::to_string(r) + "'s step reads no '" +
                       ins.name +
                       "'; its evaluation reads what its step reads");
          if (data.ranks.empty() || data.ranks.back() != r)
            data.ranks.push_back(r);
          defined[ins.dst] = true;
        } else if (op == "call") {
          ins.op = RankInstruction::Op::Call;
          std::string name = v.string(field("function"), fieldPath("function"));
          auto it = functionIndex.find(name);
          if (it == functionIndex.end())
            v.fail(fieldPath("function"), where + "no function '" + name +
                                              "' (functions: " + functionNames +
                                              ")");
          ins.function = it->second;
          const FunctionSpec &function = manifest.functions[ins.function];
          if (ientry.contains("weights")) {
            const json &weights =
                v.object(ientry["weights"], fieldPath("weights"));
            bool save = weights.contains("save"), use = weights.contains("use");
            if (save == use || weights.size() != 1)
              v.fail(fieldPath("weights"),
                     where + "expected exactly one of \"save\" and \"use\"");
            std::string key = save ? "save" : "use";
            int64_t slot = static_cast<int64_t>(
                v.unsignedInt(weights[key], fieldPath("weights") + "." + key));
            (save ? ins.saveWeights : ins.useWeights) = slot;
          }
          if (ientry.contains("chunk"))
            ins.chunk = static_cast<int64_t>(
                v.unsignedInt(ientry["chunk"], fieldPath("chunk")));
          if (ientry.contains("replica")) {
            uint64_t replica =
                v.unsignedInt(ientry["replica"], fieldPath("replica"));
            // NOTE: non-uniform replication: checked against the rank's
            // stage once rank_layout is read (below).
            if (replica >= p.replicas && !object.contains("stage_replicas"))
              v.fail(fieldPath("replica"),
                     where + "replica " + std::to_string(replica) +
                         " is out of range (the pipeline has " +
                         std::to_string(p.replicas) + " replicas)");
            ins.replica = static_cast<int64_t>(replica);
          }
          if (ientry.contains("microbatch"))
            ins.microbatch = microbatch();
          if (ientry.contains("action"))
            ins.action = v.string(ientry["action"], fieldPath("action"));
          if (ientry.contains("stage"))
            ins.stage = static_cast<int64_t>(
                v.unsignedInt(ientry["stage"], fieldPath("stage")));
          std::vector<const BufferSpec *> valueIn, valueOut;
          for (const BufferSpec &b : function.buffers) {
            if (isBoundBuffer(b))
              continue;
            (b.role == PD_ROLE_INPUT ? valueIn : valueOut).push_back(&b);
          }
          auto registerList =
              [&](const char *key,
                  const std::vector<const BufferSpec *> &buffers,
                  std::vector<size_t> &out) {
                std::string apath = fieldPath(key);
                const json &list = v.array(field(key), apath);
                const char *what =
                    std::string(key) == "args" ? "argument" : "result";
                if (list.size() != buffers.size()) {
                  std::string names;
                  for (const BufferSpec *b : buffers)
                    names += (names.empty() ? "" : ", ") + b->name + " " +
                             describe(b->type);
                  v.fail(apath,
                         where + "function '" + function.name + "' takes " +
                             std::to_string(buffers.size()) + " value " + what +
                             (buffers.size() == 1 ? "" : "s") + " (" +
                             (names.empty() ? "none" : names) + "), got " +
                             std::to_string(list.size()) + " registers");
                }
                for (size_t k = 0; k < list.size(); ++k) {
                  std::string kpath = Validator::index(apath, k);
                  size_t index = reg(list[k], kpath);
                  const TensorType &type = registers[index];
                  if (type.dtype != buffers[k]->type.dtype ||
                      type.shape != buffers[k]->type.shape)
                    v.fail(kpath, where + "register " + std::to_string(index) +
                                      " is " + describe(type) + " but " + what +
                                      " '" + buffers[k]->name +
                                      "' of function '" + function.name +
                                      "' is " + describe(buffers[k]->type));
                  out.push_back(index);
                }
              };
          registerList("args", valueIn, ins.args);
          registerList("results", valueOut, ins.results);
          for (size_t k = 0; k < ins.args.size(); ++k)
            read(ins.args[k], Validator::index(fieldPath("args"), k));
          std::set<size_t> written;
          for (size_t k = 0; k < ins.results.size(); ++k) {
            size_t index = ins.results[k];
            std::string kpath = Validator::index(fieldPath("results"), k);
            if (std::find(ins.args.begin(), ins.args.end(), index) !=
                ins.args.end())
              v.fail(kpath, where + "register " + std::to_string(index) +
                                " is both an argument and a result of the "
                                "call; results must not alias arguments");
            if (!written.insert(index).second)
              v.fail(kpath, where + "register " + std::to_string(index) +
                                " receives two results of the call");
            defined[index] = true;
          }
          called.insert(ins.function);
        } else if (op == "send" || op == "recv") {
          bool send = op == "send";
          ins.op = send ? RankInstruction::Op::Send : RankInstruction::Op::Recv;
          ins.peer = peer();
          ins.tag = tag();
          if (send) {
            ins.src = reg(field("src"), fieldPath("src"));
            read(ins.src, fieldPath("src"));
            sends[{r, ins.peer}].push_back(
                {ipath, ins.tag, &registers[ins.src]});
          } else {
            ins.dst = reg(field("dst"), fieldPath("dst"));
            defined[ins.dst] = true;
            recvs[{ins.peer, r}].push_back(
                {ipath, ins.tag, &registers[ins.dst]});
          }
        } else if (op == "loss") {
          ins.op = RankInstruction::Op::Loss;
          ins.src = reg(field("src"), fieldPath("src"));
          read(ins.src, fieldPath("src"));
          const TensorType &type = registers[ins.src];
          if ((type.dtype != PD_DTYPE_F32 && type.dtype != PD_DTYPE_F64) ||
              type.numElements != 1)
            v.fail(fieldPath("src"), where + "the loss register " +
                                         std::to_string(ins.src) + " is " +
                                         describe(type) +
                                         "; expected one f32 or f64 element");
          ins.microbatch = microbatch();
          auto &at = lossAt[static_cast<size_t>(ins.microbatch)];
          if (at.first != std::numeric_limits<size_t>::max())
            v.fail(ipath, where + "a second loss of micro-batch " +
                              std::to_string(ins.microbatch) +
                              " (the first is " + at.second + ")");
          at = {r, ipath};
        } else if (op == "all_reduce" && !eval) {
          ins.op = RankInstruction::Op::AllReduce;
          ins.name = v.string(field("buffer"), fieldPath("buffer"));
          ins.type = v.tensorType(ientry, ipath);
          if (!isFloat(ins.type.dtype))
            v.fail(fieldPath("dtype"), where +
                                           "an all-reduce sums a gradient, "
                                           "which is a float, not " +
                                           describe(ins.type));
          ins.microbatch = microbatch();
          const json &group = v.array(field("ranks"), fieldPath("ranks"));
          for (size_t k = 0; k < group.size(); ++k) {
            std::string kpath = Validator::index(fieldPath("ranks"), k);
            uint64_t q = v.unsignedInt(group[k], kpath);
            if (q >= numRanks || (!ins.group.empty() && q <= ins.group.back()))
              v.fail(kpath, where +
                                "the ranks of an all-reduce are distinct "
                                "ranks of the pipeline (" +
                                ranksText(numRanks) + "), ascending");
            ins.group.push_back(static_cast<size_t>(q));
          }
          if (ins.group.size() < 2 ||
              !std::binary_search(ins.group.begin(), ins.group.end(), r))
            v.fail(fieldPath("ranks"),
                   where + "an all-reduce needs two or more ranks, this one "
                           "among them");
          collectives[ins.group].resize(numRanks);
          collectives[ins.group][r].push_back({i, ins.name, ins.type});
        } else {
          v.fail(fieldPath("op"),
                 where + "unknown op '" + op +
                     (eval ? "' (an evaluation program has input, call, send, "
                             "recv and loss)"
                           : "' (expected input, call, send, recv, loss or "
                             "all_reduce)"));
        }
        out.push_back(std::move(ins));
      }
    };
    std::string ppath = Validator::join(rpath, "program");
    parseProgram(v.array(v.member(entry, rpath, "program"), ppath), ppath,
                 /*eval=*/false, rank.registers, rank.program, sends, recvs,
                 lossAt);
    if (entry.contains("eval")) {
      std::string epath = Validator::join(rpath, "eval");
      const json &eval = v.object(entry["eval"], epath);
      std::string gpath = Validator::join(epath, "registers");
      const json &registers =
          v.array(v.member(eval, epath, "registers"), gpath);
      for (size_t g = 0; g < registers.size(); ++g) {
        std::string path = Validator::index(gpath, g);
        rank.evalRegisters.push_back(
            v.tensorType(v.object(registers[g], path), path));
      }
      std::string path = Validator::join(epath, "program");
      parseProgram(v.array(v.member(eval, epath, "program"), path), path,
                   /*eval=*/true, rank.evalRegisters, rank.evalProgram,
                   evalSends, evalRecvs, evalLossAt);
      rank.hasEval = true;
      ++ranksWithEval;
    }
    rank.functions.assign(called.begin(), called.end());
    parseRankWeights(v, entry, rpath, r, manifest, rank);
    // An all-reduce sums a gradient accumulator the rank's functions bind.
    for (size_t i = 0; i < rank.program.size(); ++i) {
      const RankInstruction &ins = rank.program[i];
      if (ins.op != RankInstruction::Op::AllReduce)
        continue;
      const BufferSpec *found = nullptr;
      for (size_t f : rank.functions)
        for (const BufferSpec &b : manifest.functions[f].buffers)
          if (b.role == PD_ROLE_GRAD && b.name == ins.name)
            found = &b;
      std::string ipath = Validator::join(instructionPath(r, i), "buffer");
      std::string where = "rank " + std::to_string(r) + ", instruction " +
                          std::to_string(i) + ": ";
      if (!found)
        v.fail(ipath, where + "no function of the rank has a gradient "
                              "buffer '" +
                          ins.name + "' to all-reduce");
      if (found->type.dtype != ins.type.dtype ||
          found->type.shape != ins.type.shape)
        v.fail(ipath, where + "'" + ins.name + "' is " +
                          describe(found->type) + ", but the all-reduce is " +
                          describe(ins.type));
    }
  }

  // Every rank of a group runs the group's all-reduces in the same order.
  for (const auto &[group, members] : collectives) {
    size_t first = group.front();
    for (size_t q : group) {
      const auto &a = members[first], &b = members[q];
      for (size_t k = 0; k < std::max(a.size(), b.size()); ++k) {
        if (k >= a.size() || k >= b.size()) {
          size_t more = k >= a.size() ? q : first;
          size_t less = more == q ? first : q;
          v.fail(instructionPath(more, members[more][k].instruction),
                 "all-reduce " + std::to_string(k) + " of ranks " +
                     std::to_string(first) + ".. has no match on rank " +
                     std::to_string(less) + ", which runs " +
                     std::to_string(members[less].size()) +
                     " all-reduces of this group");
        }
        if (a[k].buffer != b[k].buffer || a[k].type.shape != b[k].type.shape ||
            a[k].type.dtype != b[k].type.dtype)
          v.fail(instructionPath(q, b[k].instruction),
                 "all-reduce " + std::to_string(k) + " of this group sums '" +
                     b[k].buffer + "' " + describe(b[k].type) +
                     " here but '" + a[k].buffer + "' " + describe(a[k].type) +
                     " on rank " + std::to_string(first));
      }
    }
  }

  parseRankLayout(v, object, p);
  // Non-uniform replication: a sharded update names a replica of the
  // rank's own stage.
  if (p.routed())
    for (size_t r = 0; r < p.ranks.size() && r < p.layoutStage.size(); ++r)
      for (size_t i = 0; i < p.ranks[r].program.size(); ++i) {
        const RankInstruction &ins = p.ranks[r].program[i];
        const size_t count = p.stageReplicas[p.layoutStage[r]];
        if (ins.replica >= 0 && static_cast<size_t>(ins.replica) >= count)
          v.fail(instructionPath(r, i) + ".replica",
                 "replica " + std::to_string(ins.replica) +
                     " is out of range (rank " + std::to_string(r) +
                     "'s stage " + std::to_string(p.layoutStage[r]) +
                     " has " + std::to_string(count) + " replicas)");
      }
  // Every micro-batch's loss, all on one rank (non-uniform replication: on
  // the replicas of one stage).
  for (size_t m = 0; m < p.microbatches; ++m) {
    if (lossAt[m].first == std::numeric_limits<size_t>::max())
      v.fail("pipeline.ranks", "no rank has a loss instruction for micro-batch " +
                                   std::to_string(m) + " (the schedule has " +
                                   std::to_string(p.microbatches) + ")");
    if (p.routed()) {
      if (p.layoutStage[lossAt[m].first] != p.layoutStage[lossAt[0].first])
        v.fail(lossAt[m].second,
               "the loss of micro-batch " + std::to_string(m) +
                   " is on stage " +
                   std::to_string(p.layoutStage[lossAt[m].first]) +
                   " but that of micro-batch 0 on stage " +
                   std::to_string(p.layoutStage[lossAt[0].first]) +
                   "; all losses must be on the last stage's replicas");
      if (std::find(p.lossRanks.begin(), p.lossRanks.end(),
                    lossAt[m].first) == p.lossRanks.end())
        p.lossRanks.push_back(lossAt[m].first);
      continue;
    }
    if (lossAt[m].first != lossAt[0].first)
      v.fail(lossAt[m].second,
             "the loss of micro-batch " + std::to_string(m) + " is on rank " +
                 std::to_string(lossAt[m].first) +
                 " but that of micro-batch 0 "
                 "on rank " +
                 std::to_string(lossAt[0].first) +
                 "; all losses must be on the last stage's rank");
  }
  p.lossRank = lossAt[0].first;
  std::sort(p.lossRanks.begin(), p.lossRanks.end());
  if (p.lossRanks.empty())
    p.lossRanks.push_back(p.lossRank);
  else
    p.lossRank = p.lossRanks.front();

  // Every data array is read somewhere; labels of the right kind.
  for (size_t d = 0; d < p.data.size(); ++d) {
    const PipelineData &data = p.data[d];
    std::string dpath =
        data.isLabels ? "pipeline.labels" : Validator::index("pipeline.inputs", d);
    if (data.ranks.empty())
      v.fail(dpath, "'" + data.name +
                        "' is read by no 'input' instruction of any rank");
  }
  const TensorType &labels =
      hasLabels ? p.data.back().type : TensorType{};
  if (p.loss == "cross-entropy" && labels.dtype != PD_DTYPE_I64 &&
      labels.dtype != PD_DTYPE_I32)
    v.fail("pipeline.labels", "cross-entropy takes class indices (i64), but "
                              "labels '" +
                                  p.labels + "' are " + describe(labels));
  if (p.loss == "mse" && !isFloat(labels.dtype))
    v.fail("pipeline.labels", "mse takes a float target, but labels '" +
                                  p.labels + "' are " + describe(labels));

  // Both ends of every pair list the same messages in the same order.
  auto matchMessages = [&](std::map<std::pair<size_t, size_t>,
                                    std::vector<MessageEnd>> &sends,
                           std::map<std::pair<size_t, size_t>,
                                    std::vector<MessageEnd>> &recvs) {
    std::set<std::pair<size_t, size_t>> pairs;
    for (auto &entry : sends)
      pairs.insert(entry.first);
    for (auto &entry : recvs)
      pairs.insert(entry.first);
    for (const auto &pair : pairs) {
      const std::vector<MessageEnd> &out = sends[pair];
      const std::vector<MessageEnd> &in = recvs[pair];
      std::string from = std::to_string(pair.first),
                  to = std::to_string(pair.second);
      for (size_t k = 0; k < std::max(out.size(), in.size()); ++k) {
        std::string nth = "message " + std::to_string(k) + " from rank " +
                          from + " to rank " + to;
        if (k >= in.size())
          v.fail(out[k].path, "send to rank " + to + " with tag " +
                                  std::to_string(out[k].tag) + " (" + nth +
                                  ") has no matching recv: rank " + to +
                                  " receives " + std::to_string(in.size()) +
                                  " messages from rank " + from + " and rank " +
                                  from + " sends " +
                                  std::to_string(out.size()));
        if (k >= out.size())
          v.fail(in[k].path, "recv from rank " + from + " with tag " +
                                 std::to_string(in[k].tag) + " (" + nth +
                                 ") has no matching send: rank " + from +
                                 " sends " + std::to_string(out.size()) +
                                 " messages to rank " + to + " and rank " + to +
                                 " receives " + std::to_string(in.size()));
        const MessageEnd &s = out[k], &q = in[k];
        if (s.tag != q.tag)
          v.fail(
              s.path,
              "send to rank " + to + " with tag " + std::to_string(s.tag) +
                  " is " + nth + ", but the matching recv " + q.path +
                  " expects tag " + std::to_string(q.tag) +
                  " (both ranks must list their messages in the same order)");
        if (s.type->dtype != q.type->dtype || s.type->shape != q.type->shape)
          v.fail(s.path, "send to rank " + to + " with tag " +
                             std::to_string(s.tag) + " sends " +
                             describe(*s.type) + " but the matching recv " +
                             q.path + " receives " + describe(*q.type));
      }
    }
  };
  matchMessages(sends, recvs);

  // Evaluation: every rank has a program or none (with stage_replicas:
  // every stage's replica 0, world rank s for stage s); one loss, with the
  // step's losses' rank (stage).
  const size_t evalRanks = p.routed() ? p.stageReplicas.size() : numRanks;
  if (ranksWithEval != 0 && p.routed()) {
    for (size_t r = 0; r < numRanks; ++r) {
      if (p.ranks[r].hasEval != (p.layoutReplica[r] == 0))
        v.fail(Validator::index("pipeline.ranks", r),
               "rank " + std::to_string(r) + " is stage " +
                   std::to_string(p.layoutStage[r]) + ", replica " +
                   std::to_string(p.layoutReplica[r]) +
                   (p.ranks[r].hasEval ? " and has" : " and lacks") +
                   " an evaluation program (`eval`): with stage_replicas "
                   "each stage's replica 0 has one, and only it");
      else if (p.ranks[r].hasEval && p.layoutStage[r] != r)
        v.fail(Validator::index("pipeline.ranks", r),
               "rank " + std::to_string(r) + " is stage " +
                   std::to_string(p.layoutStage[r]) +
                   "'s replica 0: with evaluation programs, rank s must be "
                   "stage s's replica 0 (their peers are stages)");
    }
  }
  if (ranksWithEval != 0 && ranksWithEval != evalRanks)
    v.fail("pipeline.ranks",
           std::to_string(ranksWithEval) + " of " + ranksText(numRanks) +
               " have an evaluation program (`eval`); every rank needs one");
  if (ranksWithEval != 0) {
    if (evalLossAt[0].first == std::numeric_limits<size_t>::max())
      v.fail("pipeline.ranks", "no rank's evaluation program has a loss "
                               "instruction");
    const size_t stepLoss = p.routed() ? p.layoutStage[p.lossRank] : p.lossRank;
    if (evalLossAt[0].first != stepLoss)
      v.fail(evalLossAt[0].second,
             "the evaluation loss is on rank " +
                 std::to_string(evalLossAt[0].first) + " but the step's " +
                 (p.routed() ? "losses are on stage " : "losses are on rank ") +
                 std::to_string(stepLoss));
    matchMessages(evalSends, evalRecvs);
    p.evaluates = true;
    p.evalLossRank = evalLossAt[0].first;
    // State a forward advances (what a call other than an update writes
    // into a weight or state buffer: BatchNorm running statistics) may
    // differ between replicas; an evaluation that reads it runs on replica
    // 0 only.
    std::set<std::string> advanced;
    for (const RankProgram &rank : p.ranks)
      for (const RankInstruction &ins : rank.program)
        if (ins.op == RankInstruction::Op::Call && ins.action != "U")
          for (const BufferSpec &b : manifest.functions[ins.function].buffers)
            if (!b.updates.empty())
              advanced.insert(b.updates);
    for (const RankProgram &rank : p.ranks)
      for (const RankInstruction &ins : rank.evalProgram)
        if (ins.op == RankInstruction::Op::Call)
          for (const BufferSpec &b : manifest.functions[ins.function].buffers)
            if (isBoundBuffer(b) && advanced.count(b.name))
              p.evalSplitsOverReplicas = false;
  }
}

} // namespace manifest
} // namespace runtime
} // namespace pipedream
