//===- Manifest.h - bundle.json model and validation ------------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The runtime's in-memory view of bundle.json (docs/Bundle.md) and the parser
// that validates every field. Internal to the runtime library (and its unit
// tests); users see the C API of pipedream/runtime.h.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_RUNTIME_LIB_MANIFEST_H
#define PIPEDREAM_RUNTIME_LIB_MANIFEST_H

#include "pipedream/runtime.h"

#include <cstdint>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace pipedream {
namespace runtime {

/// An error inside the runtime, turned into a pd_status and pd_last_error()
/// at the C API boundary.
class Error : public std::runtime_error {
public:
  Error(pd_status status, const std::string &message)
      : std::runtime_error(message), status(status) {}
  pd_status status;
};

/// The only bundle.json `format` this runtime reads, and its versions
/// (kMinBundleVersion to kBundleVersion).
constexpr const char *kBundleFormat = "pipedream-bundle";
/// 2: program.so exports the run-time status record (docs/Bundle.md
/// "Run-time checks"); version 1 bundles' code does not check indices.
/// 3: weights may live in rank weight files (a weight's `file`, a rank's
/// `weights_file` and `weights`; docs/Bundle.md "Rank weight files").
constexpr int64_t kMinBundleVersion = 2;
constexpr int64_t kBundleVersion = 3;
/// Alignment of every buffer and of every weight's offset in weights.bin.
constexpr size_t kAlignment = 64;
/// Largest rank a shape may have.
constexpr size_t kMaxRank = 32;

/// Element type and static shape of a tensor, with its sizes precomputed.
struct TensorType {
  pd_dtype dtype = PD_DTYPE_F32;
  std::vector<int64_t> shape;
  size_t numElements = 1;
  size_t numBytes = 0;
};

/// One entry of bundle.json `weights`.
struct WeightSpec {
  std::string name;
  TensorType type;
  /// The file holding it (bundle-relative): `file`, else `weights_file`.
  std::string file;
  uint64_t offset = 0;
  uint64_t bytes = 0;
};

/// A `grad` or `state` buffer: one per name in the whole bundle.
struct PersistentSpec {
  std::string name;
  pd_role role = PD_ROLE_GRAD;
  TensorType type;
};

/// One entry of a function's `buffers`.
struct BufferSpec {
  std::string name;
  pd_role role = PD_ROLE_INPUT;
  TensorType type;
  /// Index into Manifest::weights when role is PD_ROLE_WEIGHT, into
  /// Manifest::persistent when it is PD_ROLE_GRAD or PD_ROLE_STATE.
  size_t weightIndex = 0;
  size_t persistentIndex = 0;
  /// `updates` of an output: the persistent buffer (weight, grad or state)
  /// whose memory is swapped with this output's after each run; "" if none.
  std::string updates;
  /// `"in_place": true` (CPU bundles, docs/Bundle.md): the function leaves
  /// the new value in the buffer of its argument `updates` and never
  /// touches this output's pointer, so the output has no memory of its own
  /// and nothing is swapped.
  bool inPlace = false;
};

/// One entry of bundle.json `functions`.
struct FunctionSpec {
  std::string name;
  std::string symbol;
  std::string kind;
  std::vector<BufferSpec> buffers;
};

/// The `training` section of a training bundle.
struct TrainingSpec {
  /// "cross-entropy" or "mse".
  std::string loss;
  /// The step function's label input.
  std::string labels;
  /// Cross-entropy: labels lie in [0, numClasses); 0 for mse.
  int64_t numClasses = 0;
  size_t microbatches = 1;
  /// `gradients`: "written" (true) when the step function writes each
  /// `grad` buffer instead of adding to it (one micro-batch a step), so
  /// the runtime need not zero them; "accumulated" (the default).
  bool gradientsWritten = false;
  size_t microbatchSize = 1;
  size_t batchSize = 1;
  /// The step function's data inputs besides the labels.
  std::vector<std::string> inputs;
  std::string stepFunction;
  std::string updateFunction;
  /// Indices into Manifest::functions.
  size_t stepFunctionIndex = 0;
  size_t updateFunctionIndex = 0;
  /// The step function's only output without `updates`: the micro-batch's
  /// mean loss (one f32 or f64 element).
  std::string lossOutput;
  /// `optimizer` as compact JSON ("" if absent); the runtime does not
  /// interpret it (the update function implements it).
  std::string optimizer;
  /// `grad_norm` (gradient clipping): the gradient buffer (rank 0) the
  /// update writes the squared norm of the step's gradients to; "" without
  /// clipping.
  std::string gradNorm;
  /// `eval_function` (pipedream-compile --evaluate): a function reading the
  /// step function's data inputs (same names and types) and weights and
  /// writing one loss output (`evalLossOutput`), updating nothing; "" when
  /// absent.
  std::string evalFunction;
  size_t evalFunctionIndex = 0;
  std::string evalLossOutput;
};

/// One instruction of a rank's program (bundle.json `pipeline.ranks[r].
/// program[i]`, docs/Bundle.md "Pipeline bundles").
struct RankInstruction {
  enum class Op { Input, Call, Send, Recv, Loss, AllReduce };
  Op op = Op::Input;
  /// input: the data array (a `pipeline.inputs` name or the labels).
  std::string name;
  /// input, loss, call (-1 when a call has none): the micro-batch.
  int64_t microbatch = -1;
  /// input, recv: the register written; send, loss: the register read.
  size_t dst = 0;
  size_t src = 0;
  /// call: index into Manifest::functions, with `action` and `stage` as
  /// given ("" and -1 when absent; for traces and messages only).
  size_t function = 0;
  std::string action;
  int64_t stage = -1;
  int64_t chunk = 0;
  /// call (asynchronous schedules): keep the function's weights as version
  /// slot `saveWeights` of (stage, chunk), or run with the weights of slot
  /// `useWeights` instead of the current ones; -1 when absent.
  int64_t saveWeights = -1;
  int64_t useWeights = -1;
  /// call (sharded optimizer state, docs/Bundle.md "Replicated stages"):
  /// only replica `replica` runs it; -1 (absent): every replica.
  int64_t replica = -1;
  /// call: registers of the function's value arguments and results, in
  /// the order of its non-bound input and output buffers.
  std::vector<size_t> args;
  std::vector<size_t> results;
  /// send, recv: the other rank and the message tag (>= 0).
  size_t peer = 0;
  int64_t tag = 0;
  /// all_reduce: the persistent gradient accumulator summed in place over
  /// the ranks of `group` (ascending, this rank among them), in `name`,
  /// with its type.
  std::vector<size_t> group;
  TensorType type;
};

/// Version of the native rank entry ABI this runtime implements
/// (RankEntry.h; bundle.json `pipeline.ranks[r].entry_abi`).
inline constexpr uint64_t kRankEntryABIVersion = 1;

/// One rank of a pipeline bundle.
struct RankProgram {
  /// The program.so symbol of the rank's native entry ("" when the bundle
  /// has none: the runtime interprets `program`), and its ABI version.
  std::string entry;
  uint64_t entryABI = 0;
  std::vector<TensorType> registers;
  std::vector<RankInstruction> program;
  /// `eval` (docs/Bundle.md "Evaluation in pipelines"): the rank's part of
  /// one micro-batch's eval-mode forward and loss, interpreted.
  bool hasEval = false;
  std::vector<TensorType> evalRegisters;
  std::vector<RankInstruction> evalProgram;
  /// Indices into Manifest::functions of the functions the program (and
  /// the evaluation program) calls, ascending.
  std::vector<size_t> functions;
  /// The rank's own weight file (version 3, "" when the rank has none: it
  /// reads the bundle's `weights` entries) and where each weight its
  /// functions bind lies in it: (index into Manifest::weights, offset).
  std::string weightsFile;
  std::vector<std::pair<size_t, uint64_t>> weights;
  /// `weights_file_linked` (docs/Bundle.md "Linked weight files"): the file
  /// is a link of the model's external data, which had this size and
  /// modification time (ns) when compiled; the loader refuses it otherwise.
  bool weightsFileLinked = false;
  uint64_t linkedBytes = 0;
  int64_t linkedMtimeNs = 0;
};

/// A data array a pipeline reads: one of `inputs`, or the labels.
struct PipelineData {
  std::string name;
  /// One micro-batch of it (first axis microbatch_size), as the registers
  /// of its `input` instructions have it.
  TensorType type;
  bool isLabels = false;
  /// Ranks that read it, ascending.
  std::vector<size_t> ranks;
};

/// The `pipeline` section of a pipeline bundle.
struct PipelineSpec {
  /// `schedule`: kind ("1f1b"...), stages, microbatches (M), chunks.
  std::string kind;
  size_t stages = 1;
  size_t microbatches = 1;
  size_t chunks = 1;
  std::string loss;
  std::string labels;
  int64_t numClasses = 0;
  std::vector<std::string> inputs;
  size_t microbatchSize = 1;
  size_t batchSize = 1;
  /// `optimizer` as compact JSON ("" if absent), not interpreted.
  std::string optimizer;
  /// `grad_norm` (gradient clipping, docs/Bundle.md "Pipeline bundles"):
  /// the gradient buffer of the squared norm, which the `N` calls fill from
  /// gradients already summed over the replicas; "" without clipping.
  std::string gradNorm;
  std::vector<RankProgram> ranks;
  /// Every rank has an evaluation program (`ranks[r].eval`; with
  /// stage_replicas every stage's replica 0, world rank s for stage s).
  bool evaluates = false;
  /// The rank whose evaluation program has the `loss` (a pipeline rank:
  /// with stage_replicas, the last stage).
  size_t evalLossRank = 0;
  /// Evaluation with replicas (docs/Bundle.md "Evaluation in pipelines"):
  /// true when every replica of a stage holds the same weights the
  /// evaluation reads, so micro-batch m runs on replica m mod R of each
  /// pipeline rank; false when an evaluation function reads state that
  /// forwards advance per replica (BatchNorm running statistics): then
  /// replica 0, whose weights are the ones written back and checkpointed,
  /// evaluates every micro-batch.
  bool evalSplitsOverReplicas = true;
  /// The rank whose program holds the M `loss` instructions (routed: the
  /// first of lossRanks).
  size_t lossRank = 0;
  /// The ranks with `loss` instructions, ascending: lossRank, or with
  /// stage_replicas the last stage's replicas.
  std::vector<size_t> lossRanks;
  /// `inputs` in order, then the labels.
  std::vector<PipelineData> data;
  /// `replicas` (R, docs/Bundle.md "Replicated stages"): every pipeline rank
  /// runs on R data-parallel replicas, K*R ranks in all; `rank_layout`
  /// gives world rank w = replica * K + pipeline rank (K = ranks.size()).
  size_t replicas = 1;
  /// `stage_replicas` (non-uniform replication, PipeDream's 1F1B-RR,
  /// docs/Bundle.md "Non-uniform replication"): stage s runs on
  /// stageReplicas[s] replicas; `ranks` then holds one program per world
  /// rank (replicas = 1, so programOf(w) = w and replicaOf(w) = 0: the
  /// programs name world peers and global micro-batches), and
  /// `rank_layout` gives each world rank's stage and replica
  /// (layoutStage, layoutReplica). Empty otherwise.
  std::vector<size_t> stageReplicas;
  std::vector<size_t> layoutStage, layoutReplica;
  bool routed() const { return !stageReplicas.empty(); }
  /// Routed: the world ranks of stage `stage`, in replica order.
  std::vector<size_t> stageMembers(size_t stage) const {
    std::vector<size_t> members(stage < stageReplicas.size()
                                    ? stageReplicas[stage]
                                    : 0);
    for (size_t w = 0; w < layoutStage.size(); ++w)
      if (layoutStage[w] == stage && layoutReplica[w] < members.size())
        members[layoutReplica[w]] = w;
    return members;
  }
  /// The ranks a transport must have: K*R.
  size_t worldRanks() const { return ranks.size() * replicas; }
  /// The pipeline rank (index into `ranks`) and replica of world rank w.
  size_t programOf(size_t world) const { return world % ranks.size(); }
  size_t replicaOf(size_t world) const { return world / ranks.size(); }
  /// World rank w's index among the replicas of its stage: the shard of a
  /// sharded update it runs (`replica` of its calls).
  size_t shardOf(size_t world) const {
    if (routed())
      return world < layoutReplica.size() ? layoutReplica[world] : 0;
    return replicaOf(world);
  }
  /// The world rank of pipeline rank `program` on replica `replica`.
  size_t worldRank(size_t program, size_t replica) const {
    return replica * ranks.size() + program;
  }
  /// Evaluation: the pipeline rank whose `eval` world rank w runs (with
  /// stage_replicas its stage, whose replica 0 has it), and which of that
  /// pipeline rank's replicas w is.
  size_t evalProgramOf(size_t world) const {
    return routed() ? layoutStage[world] : programOf(world);
  }
  size_t evalReplicaOf(size_t world) const {
    return routed() ? layoutReplica[world] : replicaOf(world);
  }
  /// Evaluation: the replicas of pipeline rank q, the one that evaluates
  /// micro-batch m, and the world rank of its replica j.
  size_t replicasOf(size_t q) const {
    return routed() ? stageReplicas[q] : replicas;
  }
  size_t evalReplica(size_t q, size_t m) const {
    return evalSplitsOverReplicas ? m % replicasOf(q) : 0;
  }
  size_t evalWorldRank(size_t q, size_t j) const {
    return routed() ? stageMembers(q)[j] : worldRank(q, j);
  }
  /// The functions world rank w calls: its program's, less those only other
  /// replicas run (sharded updates), ascending.
  std::vector<size_t> functionsOf(size_t world) const {
    const RankProgram &rank = ranks[programOf(world)];
    const RankProgram &eval =
        ranks[evaluates ? evalProgramOf(world) : programOf(world)];
    std::set<size_t> candidates(rank.functions.begin(), rank.functions.end());
    candidates.insert(eval.functions.begin(), eval.functions.end());
    std::vector<size_t> out;
    for (size_t f : candidates) {
      auto calls = [&](const std::vector<RankInstruction> &program) {
        for (const RankInstruction &ins : program)
          if (ins.op == RankInstruction::Op::Call && ins.function == f &&
              (ins.replica < 0 ||
               static_cast<size_t>(ins.replica) == shardOf(world)))
            return true;
        return false;
      };
      if (calls(rank.program) || calls(eval.evalProgram))
        out.push_back(f);
    }
    return out;
  }
};

/// True for a buffer the runtime binds by name (weight, grad and state
/// inputs, outputs with `updates`); the others are a call's value
/// arguments and results.
inline bool isBoundBuffer(const BufferSpec &buffer) {
  return buffer.role == PD_ROLE_WEIGHT || buffer.role == PD_ROLE_GRAD ||
         buffer.role == PD_ROLE_STATE ||
         (buffer.role == PD_ROLE_OUTPUT && !buffer.updates.empty());
}

/// One entry of bundle.json `data_index_checks` (cuda bundles, docs/Bundle.md
/// "Run-time checks"): the values of the data input `input` index an axis of
/// `upper` elements in ONNX node `node` (op `opType`), so they must lie in
/// [lower, upper). The runtime checks them on the host before the data goes
/// to the device (the device code clamps but cannot report).
struct DataIndexCheck {
  std::string input;
  int64_t lower = 0;
  int64_t upper = 0;
  std::string node;
  std::string opType;
};

/// A validated bundle.json.
struct Manifest {
  int64_t version = kBundleVersion;
  std::string model;
  std::string library;
  /// `target`: "cpu" (also when absent) or "cuda"; `gpu_arch` of a cuda
  /// bundle ("sm_90"; "" when absent).
  std::string target = "cpu";
  std::string gpuArch;
  /// Empty when the bundle has no weights and names no weights file.
  std::string weightsFile;
  std::vector<WeightSpec> weights;
  std::vector<FunctionSpec> functions;
  /// `grad` and `state` buffers, in order of first appearance.
  std::vector<PersistentSpec> persistent;
  bool hasTraining = false;
  TrainingSpec training;
  bool hasPipeline = false;
  PipelineSpec pipeline;
  /// `data_index_checks` (empty when absent).
  std::vector<DataIndexCheck> dataIndexChecks;
};

/// Parses and validates bundle.json text. Throws Error (PD_ERROR_FORMAT)
/// whose message starts with `source` and names the offending field, e.g.
/// `b/bundle.json: functions[0].buffers[1].dtype: unknown dtype 'f33'`.
/// Unknown keys are ignored so later bundle versions can add fields.
Manifest parseManifest(const std::string &text, const std::string &source);

/// `text` with control characters (a newline in a name read from a file)
/// written as \xNN, so a message that quotes a file's strings stays one line.
std::string oneLine(const std::string &text);

/// "f32[2x3]" ("f32[]" for a scalar).
std::string describeType(pd_dtype dtype, const int64_t *shape, size_t rank);

/// bundle.json spellings of dtypes and roles; false for unknown names.
bool parseDtype(const std::string &name, pd_dtype &out);
bool parseRole(const std::string &name, pd_role &out);
/// "f32 f64 f16 bf16 i64 i32 i16 i8 i1 u8 u16 u32 u64", for messages.
const char *dtypeNameList();

/// Computes numElements and numBytes of `type`; throws Error
/// (PD_ERROR_FORMAT) prefixed with `what` when they overflow size_t.
void computeSizes(TensorType &type, const std::string &what);

} // namespace runtime
} // namespace pipedream

#endif // PIPEDREAM_RUNTIME_LIB_MANIFEST_H
