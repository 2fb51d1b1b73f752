//===- Pipeline.cpp - one rank of a pipeline bundle -----------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// pd_rank: runs rank r's straight-line program of a pipeline bundle
// (docs/Bundle.md "Pipeline bundles") once per optimizer step: data into
// registers, stage functions on registers and the rank's persistent
// buffers, registers to and from other ranks over a pd_transport, losses
// summed. parseManifest has checked the program (registers, function
// signatures, matching sends and recvs), so a step only checks the data.
//
// A bundle whose ranks name a native entry (`pipeline_rank<r>` in
// program.so, RankEntry.h) runs it: the compiled program calls the stage
// functions itself and the runtime only through the pd_rank_runtime table
// below. Every instruction's work is one function here, shared with the
// interpreter, which runs bundles without native entries (and any bundle
// when PIPEDREAM_PIPELINE_INTERPRET=1): both give bitwise equal results.
//
// A cuda bundle's registers and weight versions are device memory,
// allocated once per pipeline (the native entry's register table): stage
// calls get them directly, inputs are uploaded, losses downloaded, and
// messages go device to device over the threads transport and NCCL
// (sendDevice) or are staged through host memory over the others (MPI,
// user-defined).
//
//===----------------------------------------------------------------------===//

#include "Bundle.h"
#include "Checkpoint.h"
#include "ConstantWeights.h"
#include "DataIndexChecks.h"
#include "GpuDevice.h"
#include "Manifest.h"
#include "MessageGroups.h"
#include "RankEntry.h"
#include "ReplicaGroup.h"
#include "StepSnapshot.h"
#include "Trace.h"
#include "Transport.h"

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

using pipedream::runtime::AlignedMemory;
using pipedream::runtime::allocateAligned;
using pipedream::runtime::BufferSpec;
using pipedream::runtime::describeTag;
using pipedream::runtime::describeType;
using pipedream::runtime::DeviceMemory;
using pipedream::runtime::ensureMemory;
using pipedream::runtime::Error;
using pipedream::runtime::fail;
using pipedream::runtime::guarded;
using pipedream::runtime::isBoundBuffer;
using pipedream::runtime::nullArgument;
using pipedream::runtime::PipelineData;
using pipedream::runtime::PipelineSpec;
using pipedream::runtime::RankInstruction;
using pipedream::runtime::RankProgram;
using pipedream::runtime::TensorType;

struct pd_rank {
  pd_bundle *bundle = nullptr;
  size_t rank = 0;
  pd_transport *transport = nullptr;
  const PipelineSpec *spec = nullptr;
  const RankProgram *program = nullptr;
  /// Replicated stages: the pipeline rank whose program this rank runs
  /// (an index into spec->ranks), its replica, and the group of its
  /// replicas (null with one replica).
  size_t programRank = 0;
  size_t replica = 0;
  /// The rank's index among its stage's replicas (the sharded update it
  /// runs): `replica`, or with non-uniform replication its place in the
  /// stage's group (the programs there name world peers, so `replica` is 0).
  size_t shard = 0;
  std::unique_ptr<pipedream::runtime::ReplicaGroup> replicas;
  /// Sharded optimizer state: a run of update calls tagged with replicas
  /// (instructions first..last); before the first the union of their
  /// gradients is summed over the replicas, after the last the weights
  /// each replica's call updated are all-gathered.
  struct ShardGroup {
    size_t first = 0, last = 0;
    std::vector<pd_buffer *> grads;
    std::vector<std::vector<pd_buffer *>> weights;
  };
  std::vector<ShardGroup> shardGroups;
  std::map<size_t, size_t> shardGroupOf;
  /// Gradients a shared weight's all_reduce sums over a group that holds
  /// every replica of this rank's stage (non-uniform replication): already
  /// the whole batch's, so the update's replica sum leaves them out.
  std::set<std::string> summedOverReplicas;
  /// The gradients summed over the replicas so far in the running step:
  /// the first update-phase call that reads one (clipping's N, else its U,
  /// or a sharded update group) sums it, a later one finds it done.
  std::set<std::string> summedThisStep;
  /// Gradient clipping: the squared-norm accumulator (pipeline.grad_norm),
  /// and the last completed step's norm (pd_rank_grad_norm).
  pd_buffer *gradNorm = nullptr;
  double lastGradNorm = std::numeric_limits<double>::quiet_NaN();
  /// The replicas' gradient all-reduce overlapped with the drain
  /// (planGradientOverlap): after instruction i, the last that adds into
  /// the gradients of the updates gradientsReadyAfter[i], their all-reduces
  /// start; each update waits for its own (started at overlapStart[u]).
  std::map<size_t, std::vector<size_t>> gradientsReadyAfter;
  std::map<size_t, double> overlapStart;
  /// The registers' memory: host memory for CPU bundles, device memory
  /// for cuda bundles (`cuda`); registerTable points at one or the other.
  std::vector<AlignedMemory> registers;
  std::vector<DeviceMemory> deviceRegisters;
  bool cuda = false;
  /// cuda: host staging of inputs, losses and (unless the transport takes
  /// device memory) messages; as large as the largest register
  /// (stagingBytes, evaluation registers included once allocated).
  AlignedMemory staging;
  size_t stagingBytes = 0;
  bool transportTakesDevice = false;
  /// The rank's grad buffers, zeroed before each step.
  std::vector<pd_buffer *> grads;
  /// Indices into PipelineSpec::data of the arrays this rank reads.
  std::vector<size_t> reads;
  /// Scratch pointer array for calls.
  std::vector<void *> arguments;
  /// Weight versions of asynchronous schedules: (stage, chunk, slot) ->
  /// weight name -> a copy of the weights an F ran with (device memory
  /// for cuda bundles).
  struct WeightCopy {
    AlignedMemory host;
    DeviceMemory device;
    void *get() const { return host ? host.get() : device.get(); }
  };
  std::map<std::tuple<int64_t, int64_t, int64_t>,
           std::map<std::string, WeightCopy>>
      weightVersions;
  /// Measured events (pd_rank_set_tracing).
  pipedream::runtime::TraceLog trace;
  /// The rank's native entry (NULL: the program is interpreted).
  pd_rank_entry entry = nullptr;
  /// Register g's memory for every g (host or device): the entry's
  /// register table, and the interpreter's.
  std::vector<void *> registerTable;
  /// Evaluation (`eval`): the program the rank runs (its own, or with
  /// stage_replicas its stage's), its registers, allocated at the first
  /// pd_rank_evaluate, and the evaluated arrays (all of the pipeline's, in
  /// PipelineSpec::data order).
  const RankProgram *evalProgram = nullptr;
  std::vector<AlignedMemory> evalRegisters;
  std::vector<DeviceMemory> evalDeviceRegisters;
  std::vector<void *> evalRegisterTable;
  std::vector<const pd_named_array *> evalData;
  /// Sends may go before a receive that precedes them (sendAhead): the
  /// transport buffers sends, the bundle is a CPU one, and
  /// PIPEDREAM_SEND_AHEAD is not 0.
  bool sendsAhead = false;
  /// Per instruction: a send sendAhead issued this step, which the
  /// program's own send then skips.
  std::vector<bool> sentAhead;
  /// Adjacent messages to or from one peer that travel as one
  /// (MessageGroups.h): planned where sends are buffered (as for
  /// sendsAhead), unless PIPEDREAM_COALESCE_MESSAGES is 0. A group's first send
  /// sends its registers as the parts of one message (marking the later sends
  /// sentAhead); its first receive fills them (marking the later receives
  /// receivedAhead, which then do nothing).
  pipedream::runtime::MessageGroups messageGroups;
  std::vector<bool> receivedAhead;
  /// What the running step's instructions read and accumulate.
  std::vector<const pd_named_array *> stepData;
  size_t stepFirst = 0;
  size_t stepSamples = 0;
  double stepTotal = 0;
  /// Start of the native call being run (for its trace event).
  double callStart = 0;
  /// --trace: when the running call's waits before its function (the step
  /// agreement, a replica all-reduce; beforeCall) ended. Those waits are
  /// their own slices, not part of the call's.
  double callReady = 0;
  /// cuda: the bound slots of the native call being run (call_begin to
  /// call_end).
  std::vector<bool> callBound;
  /// Run-time checks (docs/Runtime.md "Run-time checks"): the running
  /// step's first failure on this rank ("" if none) and its micro-batch
  /// (-1: not one micro-batch's).
  std::string stepFailure;
  int64_t failureMicrobatch = -1;
  /// The ranks have agreed on this step's status (once per step: before
  /// the first update of synchronous schedules, else after the program).
  bool stepAgreed = false;
  bool agreeBeforeUpdate = true;
  /// (micro-batch, loss) of the step's `loss` instructions run so far.
  std::vector<std::pair<int64_t, double>> stepLosses;
  /// pd_rank_set_check_finite.
  bool checkFinite = false;
  /// The running step's weights declared constant to the GEMM (packed once
  /// for its F and B calls), released before its first update; NULL
  /// outside a step and for asynchronous schedules (weight versions).
  pipedream::runtime::ConstantWeights *constantWeights = nullptr;
  /// Persistent buffers (not grads) the step may have changed when the
  /// ranks agree on its status, saved at the start of each step and
  /// restored when it fails: what the rank's non-update calls update
  /// (BatchNorm running statistics, dropout seeds) and, for asynchronous
  /// schedules, whose updates run before the agreement, also what its
  /// updates change (weights, optimizer state, step counters).
  pipedream::runtime::StepSnapshot stepSnapshot;
  /// Asynchronous schedules: the weights the rank's updates change. Their
  /// updates clear the gradient accumulators before the agreement, so
  /// check-finite looks at the updated weights instead (a non-finite
  /// gradient makes its weight non-finite under SGD, momentum and Adam).
  std::vector<pd_buffer *> asyncUpdatedWeights;
  /// Some function of the rank has run-time checks (program.so has the
  /// status record): without them, and with check-finite off, no step can
  /// fail a check and the snapshot is not taken.
  bool hasChecks = false;
};

namespace pipedream {
namespace runtime {
void destroyPipeline(pd_rank *pipeline) { delete pipeline; }
pd_bundle *pipelineBundle(pd_rank *pipeline) { return pipeline->bundle; }
pd_transport *pipelineTransport(pd_rank *pipeline) {
  return pipeline->transport;
}
TraceLog &traceLogOf(pd_rank &pipeline) { return pipeline.trace; }
} // namespace runtime
} // namespace pipedream

namespace {

const PipelineSpec *pipelineOf(const pd_bundle *bundle) {
  return bundle && bundle->manifest.hasPipeline ? &bundle->manifest.pipeline
                                                : nullptr;
}

size_t rowBytes(const PipelineSpec &spec, const PipelineData &data) {
  return data.type.numBytes / spec.microbatchSize;
}

/// Finds and checks the arrays of `which` (indices into spec.data), as
/// pd_trainer_check_data does; sets numSamples (0 when `which` is empty).
std::vector<const pd_named_array *>
matchData(const PipelineSpec &spec, const std::vector<size_t> &which,
          const pd_named_array *arrays, size_t count, size_t &numSamples) {
  std::vector<pipedream::runtime::DataRead> reads;
  for (size_t d : which) {
    const PipelineData &data = spec.data[d];
    reads.push_back(
        {&data.name, &data.type, data.isLabels, rowBytes(spec, data)});
  }
  return pipedream::runtime::matchDataArrays(reads, "the pipeline reads",
                                             arrays, count, numSamples);
}

/// Cross-entropy: the labels of `rows` rows from `firstRow` (modulo
/// numSamples) lie in [0, num_classes).
void checkLabels(const PipelineSpec &spec, const pd_named_array &labels,
                 size_t numSamples, size_t firstRow, size_t rows) {
  if (spec.loss != "cross-entropy" || spec.data.empty() ||
      !spec.data.back().isLabels)
    return;
  const PipelineData &data = spec.data.back();
  size_t perRow = rowBytes(spec, data) / pd_dtype_size(data.type.dtype);
  pipedream::runtime::checkLabelRange(data.name, data.type.dtype, perRow,
                                      spec.numClasses, labels, numSamples,
                                      firstRow, rows);
}

/// Every array of the pipeline (matchData over all of spec.data, in its
/// order), the labels of every sample checked: what pd_rank_check_data
/// checks, so that every rank refuses a data set alike.
std::vector<const pd_named_array *> matchAllData(const PipelineSpec &spec,
                                                 const pd_named_array *arrays,
                                                 size_t count,
                                                 size_t &numSamples) {
  std::vector<size_t> all(spec.data.size());
  for (size_t d = 0; d < all.size(); ++d)
    all[d] = d;
  std::vector<const pd_named_array *> matched =
      matchData(spec, all, arrays, count, numSamples);
  if (!matched.empty())
    checkLabels(spec, *matched.back(), numSamples, 0, numSamples);
  return matched;
}

/// "recv from rank 1, tag 3" / "call stage0_F (F, stage 0, micro-batch 2)".
std::string describeInstruction(const pd_rank &p, const RankInstruction &ins) {
  switch (ins.op) {
  case RankInstruction::Op::Input:
    return "input '" + ins.name + "', micro-batch " +
           std::to_string(ins.microbatch);
  case RankInstruction::Op::Call: {
    std::string text =
        "call " + p.bundle->manifest.functions[ins.function].name;
    std::string details;
    if (!ins.action.empty())
      details += ins.action;
    if (ins.stage >= 0)
      details += (details.empty() ? "" : ", ") + std::string("stage ") +
                 std::to_string(ins.stage);
    if (ins.microbatch >= 0)
      details += (details.empty() ? "" : ", ") + std::string("micro-batch ") +
                 std::to_string(ins.microbatch);
    return details.empty() ? text : text + " (" + details + ")";
  }
  case RankInstruction::Op::Send:
    return "send to rank " + std::to_string(ins.peer) + ", " +
           describeTag(ins.tag);
  case RankInstruction::Op::Recv:
    return "recv from rank " + std::to_string(ins.peer) + ", " +
           describeTag(ins.tag);
  case RankInstruction::Op::Loss:
    return "loss of micro-batch " + std::to_string(ins.microbatch);
  case RankInstruction::Op::AllReduce: {
    std::string ranks;
    for (size_t q : ins.group)
      ranks += (ranks.empty() ? "" : ", ") + std::to_string(q);
    return "all-reduce of '" + ins.name + "' over ranks " + ranks;
  }
  }
  return "?";
}

/// The trace event of instruction `ins` (from `start` to now): a call
/// names its function, an all_reduce its accumulator, a send or receive
/// `peer` and its tag (`function`, when not null, overrides the name).
void traceInstruction(pd_rank &p, const RankInstruction &ins,
                      const char *action, int64_t microbatch, int64_t peer,
                      const char *function, double start) {
  using Op = RankInstruction::Op;
  static const char *const names[] = {"input", "call", "send", "recv",
                                      "loss",  "all_reduce"};
  if (!function)
    function = ins.op == Op::Call
                   ? p.bundle->manifest.functions[ins.function].name.c_str()
               : ins.op == Op::AllReduce ? ins.name.c_str()
                                         : "";
  bool message = ins.op == Op::Send || ins.op == Op::Recv;
  p.trace.add(names[static_cast<int>(ins.op)], function, action, ins.stage,
              microbatch, message ? peer : -1, message ? ins.tag : -1, start);
}

/// Adds the trace event of instruction `index`, begun at `start`.
void recordInstruction(pd_rank &p, size_t index, double start) {
  const RankInstruction &ins = p.program->program[index];
  // A message group's event names its tags (MessageGroups.h).
  const std::string &tags = p.messageGroups.tags[index];
  traceInstruction(p, ins, ins.action.c_str(), ins.microbatch,
                   static_cast<int64_t>(ins.peer),
                   tags.empty() ? nullptr : tags.c_str(), start);
}

/// Throws the transport's last error, with `where` in front.
void transportCall(pd_status status, const std::string &where) {
  if (status != PD_OK)
    throw Error(status, where + pd_last_error());
}

double readScalar(const unsigned char *memory, pd_dtype dtype) {
  if (dtype == PD_DTYPE_F64) {
    double value;
    std::memcpy(&value, memory, sizeof(value));
    return value;
  }
  float value;
  std::memcpy(&value, memory, sizeof(value));
  return value;
}

/// Runs `body`; on failure prefixes "rank r: ", aborts the transport with
/// the unprefixed message (so the peers name this rank once) and returns
/// the status.
template <typename Body> pd_status onRank(pd_rank &p, Body &&body) {
  pd_status status = guarded(body);
  // NOTE: every rank returns the same agreed check failure; no rank is to
  // blame and the transport stays usable.
  if (status != PD_OK && status != PD_ERROR_CHECK_FAILED) {
    std::string message = pd_last_error();
    pd_transport_abort(p.transport, message.c_str());
    fail(status, "rank " + std::to_string(p.rank) + ": " + message);
  }
  return status;
}

//===----------------------------------------------------------------------===//
// Instructions (shared by the interpreter and the native entries)
//===----------------------------------------------------------------------===//

/// Throws the transport's last error.
void transportCall(pd_status status) {
  if (status != PD_OK)
    throw Error(status, pd_last_error());
}

/// Runs `body` for instruction `index`; an Error it throws gets the
/// instruction in front ("instruction 3 (recv from rank 1, tag 0): ").
template <typename Body>
void atInstruction(const pd_rank &p, size_t index, Body &&body) {
  try {
    body();
  } catch (const Error &e) {
    // The ranks' agreed step failure is already the whole message.
    if (e.status == PD_ERROR_CHECK_FAILED)
      throw;
    throw Error(e.status, "instruction " + std::to_string(index) + " (" +
                              describeInstruction(p, p.program->program[index]) +
                              "): " + e.what());
  }
}

/// input: micro-batch rows of the data array into `target`.
/// One micro-batch of data `data` (array `array`, `samples` rows): rows
/// [start, start + microbatch_size) modulo `samples` into `target` (cuda:
/// through the staging buffer to the device).
void copyMicrobatch(pd_rank &p, const PipelineData &data,
                    const pd_named_array &array, size_t samples, size_t start,
                    unsigned char *target) {
  const size_t bytes = rowBytes(*p.spec, data), b = p.spec->microbatchSize;
  const unsigned char *source = static_cast<const unsigned char *>(array.data);
  unsigned char *device = nullptr;
  if (p.cuda) {
    device = target;
    target = static_cast<unsigned char *>(p.staging.get());
  }
  // Contiguous runs of rows, wrapping around the end of the data.
  for (size_t done = 0; done < b && bytes != 0;) {
    size_t row = (start + done) % samples;
    size_t run = std::min(b - done, samples - row);
    std::memcpy(target + done * bytes, source + row * bytes, run * bytes);
    done += run;
  }
  if (device)
    pipedream::runtime::copyToDevice(device, target, b * bytes,
                                     "uploading the input: ");
}

void runInput(pd_rank &p, const RankInstruction &ins, unsigned char *target) {
  const PipelineSpec &spec = *p.spec;
  size_t k = 0;
  while (spec.data[p.reads[k]].name != ins.name)
    ++k;
  // NOTE: replica j trains on rows [j*M*b, (j+1)*M*b) of the step's batch.
  size_t start = (p.stepFirst + (p.replica * spec.microbatches +
                                 static_cast<size_t>(ins.microbatch)) *
                                    spec.microbatchSize) %
                 p.stepSamples;
  copyMicrobatch(p, spec.data[p.reads[k]], *p.stepData[k], p.stepSamples, start,
                 target);
}

/// call, before the function runs: the bound buffers of `arguments` (the
/// function's pointer array; its value slots are the caller's).
void bindCall(pd_rank &p, const RankInstruction &ins, void **arguments) {
  pd_function &function = *p.bundle->functionByIndex[ins.function];
  // Asynchronous schedules: F keeps the weights it runs with; its B and W
  // run with that version (PipeDream's weight stashing).
  std::map<std::string, pd_rank::WeightCopy> *version = nullptr;
  if (ins.saveWeights >= 0 || ins.useWeights >= 0) {
    auto key = std::make_tuple(ins.stage, ins.chunk,
                               ins.saveWeights >= 0 ? ins.saveWeights
                                                    : ins.useWeights);
    // NOTE: F creates its version's entry even when the stage has no
    // weights (an empty map), so B and W of a weightless stage find it.
    auto found = p.weightVersions.find(key);
    if (ins.useWeights >= 0 && found == p.weightVersions.end())
      throw Error(PD_ERROR_INVALID_ARGUMENT,
                  "no weight version " + std::to_string(ins.useWeights) +
                      " was saved for this stage");
    version = found != p.weightVersions.end() ? &found->second
                                              : &p.weightVersions[key];
  }
  for (size_t k = 0; k < function.buffers.size(); ++k) {
    const BufferSpec &buffer = function.spec.buffers[k];
    if (version && buffer.role == PD_ROLE_WEIGHT) {
      pd_buffer *weight = function.buffers[k];
      size_t bytes = pd_buffer_num_bytes(weight);
      std::string what = "weight version of '" + buffer.name + "'";
      if (ins.saveWeights >= 0) {
        pd_rank::WeightCopy &copy = (*version)[buffer.name];
        if (p.cuda) {
          if (!copy.device)
            copy.device = pipedream::runtime::allocateDevice(bytes, what);
          pipedream::runtime::copyDeviceToDevice(
              copy.device.get(), pipedream::runtime::deviceArgument(*weight),
              bytes, "saving the " + what + ": ");
        } else {
          if (!copy.host)
            copy.host = allocateAligned(bytes, what);
          std::memcpy(copy.host.get(), ensureMemory(*weight), bytes);
        }
        arguments[k] = copy.get();
      } else {
        auto it = version->find(buffer.name);
        arguments[k] = it != version->end()
                           ? it->second.get()
                           : pipedream::runtime::boundArgument(*weight);
      }
      // A weight the function updates in place (BatchNorm running
      // statistics) is computed in the buffer bound for it, which must be
      // the weight itself, not the version: on F (save) its value is the
      // copy's; on B/W (use) it takes the version's first, as the version
      // was what the function read when the output was swapped in.
      bool inPlace = std::any_of(
          function.spec.buffers.begin(), function.spec.buffers.end(),
          [&](const BufferSpec &b) {
            return b.inPlace && b.updates == buffer.name;
          });
      if (inPlace && !function.cuda) {
        unsigned char *memory = ensureMemory(*weight);
        if (ins.useWeights >= 0 && arguments[k] != memory)
          std::memcpy(memory, arguments[k], bytes);
        arguments[k] = memory;
      }
    } else if (isBoundBuffer(buffer)) {
      // NOTE: ensureMemory for CPU bundles; a cuda buffer's host memory
      // without a download (invokeFunction passes its device copy).
      arguments[k] = pipedream::runtime::boundArgument(*function.buffers[k]);
    }
  }
}

/// Keeps the rank's first failure of the step (the others are consequences
/// of the first, or later).
void noteFailure(pd_rank &p, int64_t microbatch, std::string message) {
  if (!p.stepFailure.empty() || message.empty())
    return;
  p.stepFailure = std::move(message);
  p.failureMicrobatch = microbatch;
}

/// After any stage function call: its run-time checks.
void noteCheckFailure(pd_rank &p, const RankInstruction &ins) {
  pd_function &function = *p.bundle->functionByIndex[ins.function];
  noteFailure(p, ins.microbatch,
              pipedream::runtime::takeCheckFailure(function));
}

/// call, after the function ran.
void finishCall(pd_rank &p, const RankInstruction &ins) {
  pd_function &function = *p.bundle->functionByIndex[ins.function];
  // NOTE: as in runFunction, new persistent values are swapped in.
  for (auto &[output, target] : function.updates)
    if (!output->inPlaceOf)
      std::swap(output->memory, target->memory);
}

/// What one rank tells the others about its step (PD_TAG_STEP_STATUS).
struct StepStatus {
  int64_t failed = 0;
  int64_t microbatch = -1;
  int64_t rank = 0;
  char message[1000] = {};
};

/// The ranks agree on whether the step failed, before any update of it
/// (synchronous schedules: at the first U, after every F and B of the
/// rank; the agreement is the last message of each rank's step): every
/// rank sends its status to rank 0, which picks the failure of the lowest
/// micro-batch (then rank) and sends it back. On failure the step's
/// persistent changes are undone and every rank throws the same Error.
StepStatus agreeOnStatus(pd_rank &p, const char *where);

void agreeOnStep(pd_rank &p) {
  p.stepAgreed = true;
  const double start = p.trace.enabled ? pipedream::runtime::traceNow() : 0;
  if (p.checkFinite) {
    // The loss rank's losses: their `loss` instructions may come after the
    // update, but F/B computed them before it (their registers are live).
    auto checkLoss = [&](int64_t microbatch, double loss) {
      if (!std::isfinite(loss))
        noteFailure(p, microbatch,
                    std::string("the loss is ") +
                        (std::isnan(loss) ? "nan" : loss > 0 ? "inf" : "-inf") +
                        " (check-finite)");
    };
    std::set<int64_t> seen;
    for (auto &[microbatch, loss] : p.stepLosses) {
      checkLoss(microbatch, loss);
      seen.insert(microbatch);
    }
    const auto &program = p.program->program;
    for (size_t i = 0; i < program.size(); ++i) {
      const RankInstruction &ins = program[i];
      if (ins.op != RankInstruction::Op::Loss || seen.count(ins.microbatch))
        continue;
      const TensorType &type = p.program->registers[ins.src];
      double value[1] = {0};
      const void *memory = p.registerTable[ins.src];
      if (p.cuda) {
        pipedream::runtime::copyToHost(value, memory,
                                       pd_dtype_size(type.dtype),
                                       "downloading the loss: ");
        memory = value;
      }
      checkLoss(ins.microbatch,
                readScalar(static_cast<const unsigned char *>(memory),
                           type.dtype));
    }
    for (pd_buffer *grad : p.grads) {
      // Clipping's squared norm is not finite only when a gradient is not,
      // which this names instead.
      if (grad == p.gradNorm)
        continue;
      if (grad->cuda)
        pipedream::runtime::downloadBuffer(*grad);
      std::string bad = pipedream::runtime::describeNonFinite(*grad);
      if (!bad.empty())
        noteFailure(p, -1, "gradient '" + grad->name + "' is not finite (" +
                               bad + ", check-finite)");
    }
    for (pd_buffer *weight : p.asyncUpdatedWeights) {
      if (weight->cuda)
        pipedream::runtime::downloadBuffer(*weight);
      std::string bad = pipedream::runtime::describeNonFinite(*weight);
      if (!bad.empty())
        noteFailure(p, -1, "weight '" + weight->name +
                               "' is not finite after the step's updates (" +
                               bad + ", check-finite)");
    }
  }
  StepStatus agreed = agreeOnStatus(p, "agreeing on the step's status: ");
  // Its own slice: rank 0 waits here for every rank's last F and B.
  if (p.trace.enabled)
    p.trace.add("agree", "step status", "", -1, -1, -1, -1, start);
  if (!agreed.failed)
    return;
  p.stepSnapshot.restore();
  std::string where =
      (agreed.microbatch >= 0
           ? "micro-batch " + std::to_string(agreed.microbatch) + ", "
           : std::string()) +
      "rank " + std::to_string(agreed.rank) + ": ";
  throw Error(PD_ERROR_CHECK_FAILED, where + agreed.message);
}

/// The ranks' agreement on the rank's first failure (p.stepFailure) of a
/// step or an evaluation: every rank sends its status to rank 0, which
/// picks the failure of the lowest micro-batch (then rank) and sends it
/// back.
StepStatus agreeOnStatus(pd_rank &p, const char *where) {
  StepStatus mine;
  mine.rank = static_cast<int64_t>(p.rank);
  if (!p.stepFailure.empty()) {
    mine.failed = 1;
    mine.microbatch = p.failureMicrobatch;
    std::snprintf(mine.message, sizeof(mine.message), "%s",
                  p.stepFailure.c_str());
  }
  StepStatus agreed = mine;
  size_t ranks = p.spec->worldRanks();
  auto earlier = [](const StepStatus &a, const StepStatus &b) {
    if (!a.failed)
      return false;
    if (!b.failed)
      return true;
    uint64_t ma = static_cast<uint64_t>(a.microbatch),
             mb = static_cast<uint64_t>(b.microbatch); // -1 sorts last
    return std::tie(ma, a.rank) < std::tie(mb, b.rank);
  };
  if (ranks > 1) {
    if (p.rank == 0) {
      for (size_t r = 1; r < ranks; ++r) {
        StepStatus theirs;
        transportCall(pd_transport_recv(p.transport, r, PD_TAG_STEP_STATUS,
                                        &theirs, sizeof(theirs)),
                      where);
        theirs.message[sizeof(theirs.message) - 1] = '\0';
        if (earlier(theirs, agreed))
          agreed = theirs;
      }
      for (size_t r = 1; r < ranks; ++r)
        transportCall(pd_transport_send(p.transport, r, PD_TAG_STEP_STATUS,
                                        &agreed, sizeof(agreed)),
                      where);
    } else {
      transportCall(pd_transport_send(p.transport, 0, PD_TAG_STEP_STATUS,
                                      &mine, sizeof(mine)),
                    where);
      transportCall(pd_transport_recv(p.transport, 0, PD_TAG_STEP_STATUS,
                                      &agreed, sizeof(agreed)),
                    where);
      agreed.message[sizeof(agreed.message) - 1] = '\0';
    }
  }
  return agreed;
}

/// cuda bundles (their device code cannot report): the step's rows of
/// every data input that bundle.json `data_index_checks` names, on the host
/// and before the step runs. Every rank given the array checks it, so all
/// fail alike with the same message (the rank named is the first that
/// reads it), before any message or update: nothing to agree or undo.
void checkDataIndices(pd_rank &p, const pd_named_array *arrays, size_t count,
                      size_t samples, size_t first, size_t rows,
                      const std::string &what) {
  const PipelineSpec &spec = *p.spec;
  for (const auto &check : p.bundle->manifest.dataIndexChecks) {
    const PipelineData *data = nullptr;
    for (const PipelineData &d : spec.data)
      if (d.name == check.input)
        data = &d;
    if (!data || data->ranks.empty())
      continue;
    for (size_t a = 0; a < count; ++a) {
      if (!arrays[a].name || check.input != arrays[a].name)
        continue;
      // matchData checked the arrays the rank reads; another rank's array
      // is scanned only when it has the micro-batch's element type.
      if (arrays[a].dtype != data->type.dtype ||
          arrays[a].num_bytes <
              samples * (data->type.numBytes / spec.microbatchSize))
        continue;
      size_t perRow = data->type.numElements / spec.microbatchSize;
      pipedream::runtime::BadIndex bad = pipedream::runtime::findBadIndex(
          check, arrays[a].dtype, arrays[a].data, perRow, samples, first, rows);
      if (bad.found)
        throw Error(PD_ERROR_CHECK_FAILED,
                    what + std::to_string(bad.row / spec.microbatchSize) +
                        ", rank " + std::to_string(data->ranks.front()) + ": " +
                        bad.message);
    }
  }
}

//===----------------------------------------------------------------------===//
// Replicated stages: the gradient all-reduce overlapped with the drain
//===----------------------------------------------------------------------===//

/// The gradient accumulators update `ins` applies (a sharded update's
/// group: all the group's), whose sum over the replicas it needs.
std::vector<pipedream::runtime::ReduceSpan>
updateGradientSpans(pd_rank &p, const RankInstruction &ins) {
  std::vector<pipedream::runtime::ReduceSpan> spans;
  auto add = [&](pd_buffer *buffer) {
    // cuda bundles: the accumulator's device copy, which the B calls wrote
    // (summed by the NCCL transport's ncclAllReduce in place).
    if (p.cuda) {
      spans.push_back({pipedream::runtime::deviceArgument(*buffer),
                       buffer->type.numElements, buffer->type.dtype,
                       buffer->name, true});
      return;
    }
    spans.push_back({ensureMemory(*buffer), buffer->type.numElements,
                     buffer->type.dtype, buffer->name});
  };
  size_t index = static_cast<size_t>(&ins - p.program->program.data());
  // Each gradient once a step: the spans returned are summed (now, or by
  // an all-reduce started now).
  auto needsSum = [&](pd_buffer *grad) {
    return !p.summedOverReplicas.count(grad->name) &&
           p.summedThisStep.insert(grad->name).second;
  };
  if (ins.replica >= 0) {
    for (pd_buffer *grad : p.shardGroups[p.shardGroupOf.at(index)].grads)
      if (needsSum(grad))
        add(grad);
    return spans;
  }
  pd_function &function = *p.bundle->functionByIndex[ins.function];
  for (size_t k = 0; k < function.buffers.size(); ++k)
    if (function.spec.buffers[k].role == PD_ROLE_GRAD &&
        needsSum(function.buffers[k]))
      add(function.buffers[k]);
  return spans;
}

/// Whether `ins` is the call of an update or of clipping's gradient norm
/// (N), which needs its gradients summed over the replicas first.
bool readsSummedGradients(const RankInstruction &ins) {
  return ins.op == RankInstruction::Op::Call &&
         (ins.action == "U" || ins.action == "N");
}

/// Where each update's all-reduce can start: right after the last
/// instruction before it that adds into one of its gradients (a B or W
/// call binding it, a shared weight's all_reduce of it; clipping's N,
/// which sums them first, for the U after it). In a synchronous
/// schedule that is the stage's last backward, so the sum runs while the
/// rank drains (sends the last gradients, runs other chunks' backwards)
/// instead of after. $PIPEDREAM_ALLREDUCE_OVERLAP=0 turns it off (the sum
/// then runs right before the update; the results are the same bits).
void planGradientOverlap(pd_rank &p) {
  if (!p.replicas || p.replicas->members().size() < 2)
    return;
  if (const char *env = std::getenv("PIPEDREAM_ALLREDUCE_OVERLAP"))
    if (std::string(env) == "0")
      return;
  const auto &program = p.program->program;
  const auto &functions = p.bundle->manifest.functions;
  auto gradNames = [&](const RankInstruction &ins) {
    std::set<std::string> names;
    for (const auto &b : functions[ins.function].buffers)
      if (b.role == PD_ROLE_GRAD && !p.summedOverReplicas.count(b.name))
        names.insert(b.name);
    return names;
  };
  for (size_t u = 0; u < program.size(); ++u) {
    const RankInstruction &update = program[u];
    if (!readsSummedGradients(update))
      continue;
    std::set<std::string> names;
    if (update.replica >= 0) {
      const pd_rank::ShardGroup &group = p.shardGroups[p.shardGroupOf.at(u)];
      if (group.first != u)
        continue;
      for (size_t i = group.first; i <= group.last; ++i)
        for (const std::string &name : gradNames(program[i]))
          names.insert(name);
    } else {
      names = gradNames(update);
    }
    if (names.empty())
      continue;
    for (size_t j = u; j-- > 0;) {
      const RankInstruction &ins = program[j];
      bool writes = false;
      if (ins.op == RankInstruction::Op::AllReduce)
        writes = names.count(ins.name) != 0;
      else if (ins.op == RankInstruction::Op::Call)
        for (const std::string &name : gradNames(ins))
          writes |= names.count(name) != 0;
      if (!writes)
        continue;
      // An earlier update of the same gradients: nothing of this step's
      // adds into them before u (they start from zero); sum right before u.
      if (ins.op == RankInstruction::Op::Call && ins.action == "U")
        break;
      if (j + 1 < u)
        p.gradientsReadyAfter[j].push_back(u);
      break;
    }
  }
}

/// After instruction `index`: start the all-reduces whose gradients it
/// completed.
void startOverlappedAllReduces(pd_rank &p, size_t index) {
  auto it = p.gradientsReadyAfter.find(index);
  if (it == p.gradientsReadyAfter.end())
    return;
  for (size_t u : it->second) {
    p.overlapStart[u] = p.trace.enabled ? pipedream::runtime::traceNow() : 0;
    p.replicas->startAllReduce(
        u, updateGradientSpans(p, p.program->program[u]));
  }
}

/// Before update `ins`: waits for its started all-reduce; false when none
/// was started (the caller sums now).
bool finishOverlappedAllReduce(pd_rank &p, const RankInstruction &ins) {
  size_t index = static_cast<size_t>(&ins - p.program->program.data());
  if (!p.replicas || !p.replicas->inFlight(index))
    return false;
  p.replicas->finishAllReduce(index);
  // One event per update, from the start of the sum to the end of the wait.
  if (p.trace.enabled)
    p.trace.add("all_reduce",
                ins.replica >= 0
                    ? "gradients"
                    : p.bundle->functionByIndex[ins.function]->spec.name.c_str(),
                "replicas", ins.stage, -1, -1, -1, p.overlapStart[index]);
  return true;
}

/// Before a call: the agreement comes before the step's first update (or
/// all-reduce, runAllReduce).
void beforeCall(pd_rank &p, const RankInstruction &ins) {
  if (!p.stepAgreed && p.agreeBeforeUpdate && ins.action == "U")
    agreeOnStep(p);
  if (ins.action == "U" && p.constantWeights)
    p.constantWeights->release();
  // Replicated stages: the update's gradients summed over the replicas
  // (each replica's B seeded 1/(R*M), so the sum is the whole batch's).
  if (p.replicas && p.replicas->members().size() > 1 &&
      readsSummedGradients(ins) && ins.replica < 0) {
    pd_function &function = *p.bundle->functionByIndex[ins.function];
    if (finishOverlappedAllReduce(p, ins)) {
      if (p.trace.enabled)
        p.callReady = pipedream::runtime::traceNow();
      return;
    }
    std::vector<pipedream::runtime::ReduceSpan> spans =
        updateGradientSpans(p, ins);
    const double start = p.trace.enabled ? pipedream::runtime::traceNow() : 0;
    p.replicas->allReduce(spans);
    // One event per update: the sum over the replicas of what it applies.
    if (p.trace.enabled)
      p.trace.add("all_reduce", function.spec.name.c_str(), "replicas",
                  ins.stage, -1, -1, -1, start);
  }
  if (p.trace.enabled)
    p.callReady = pipedream::runtime::traceNow();
}

/// The functions of the rank's F and B calls (for ConstantWeights), none
/// when the program keeps weight versions or has a call that is neither.
std::vector<pd_function *> constantWeightCalls(const pd_rank &p) {
  std::vector<pd_function *> functions;
  for (const RankInstruction &ins : p.program->program) {
    if (ins.op != RankInstruction::Op::Call)
      continue;
    if (ins.saveWeights >= 0 || ins.useWeights >= 0)
      return {};
    if (ins.action == "U" || ins.action == "N")
      continue;
    pd_function *function = p.bundle->functionByIndex[ins.function];
    if (std::find(functions.begin(), functions.end(), function) ==
        functions.end())
      functions.push_back(function);
  }
  return functions;
}

/// Sends register memory `data` (device memory on cuda bundles) of
/// `bytes` to world rank `peer`: from the device over a transport that
/// takes device memory (NCCL, threads), else staged through the host.
void sendRegister(pd_rank &p, size_t peer, int64_t tag, const void *data,
                  size_t bytes) {
  if (p.cuda && p.transportTakesDevice)
    return pipedream::runtime::sendDevice(*p.transport, peer, tag, data, bytes);
  if (p.cuda) {
    // NOTE: the transport copies or sends before it returns (its contract),
    // so one staging buffer serves every message.
    pipedream::runtime::copyToHost(p.staging.get(), data, bytes,
                                   "downloading the register to send: ");
    data = p.staging.get();
  }
  transportCall(pd_transport_send(p.transport, peer, tag, data, bytes));
}

/// Receives `bytes` from world rank `peer` into register memory `data`.
void recvRegister(pd_rank &p, size_t peer, int64_t tag, void *data,
                  size_t bytes) {
  if (p.cuda && p.transportTakesDevice)
    return pipedream::runtime::recvDevice(*p.transport, peer, tag, data, bytes);
  void *target = p.cuda ? p.staging.get() : data;
  transportCall(pd_transport_recv(p.transport, peer, tag, target, bytes));
  if (p.cuda)
    pipedream::runtime::copyToDevice(data, target, bytes,
                                     "uploading the received register: ");
}

void runSend(pd_rank &p, const RankInstruction &ins, const void *data) {
  sendRegister(p, p.spec->worldRank(ins.peer, p.replica), ins.tag, data,
               p.program->registers[ins.src].numBytes);
}

void runRecv(pd_rank &p, const RankInstruction &ins, void *data) {
  recvRegister(p, p.spec->worldRank(ins.peer, p.replica), ins.tag, data,
               p.program->registers[ins.dst].numBytes);
}

/// The parts of message group `members` (sends or receives): each
/// member's register, the one at `index` at `data`.
std::vector<pipedream::runtime::MessagePart>
groupParts(const pd_rank &p, const std::vector<size_t> &members, size_t index,
           const void *data) {
  std::vector<pipedream::runtime::MessagePart> parts;
  for (size_t m : members) {
    const RankInstruction &ins = p.program->program[m];
    size_t reg = ins.op == RankInstruction::Op::Send ? ins.src : ins.dst;
    parts.push_back(
        {m == index ? const_cast<void *>(data) : p.registerTable[reg],
         p.program->registers[reg].numBytes});
  }
  return parts;
}

/// The send at `index`, reading `data`: alone, or with the rest of its
/// message group (pd_rank::messageGroups) as one message when it is the
/// group's first.
void sendMessage(pd_rank &p, size_t index, const void *data) {
  const RankInstruction &ins = p.program->program[index];
  if (p.messageGroups.members[index].empty())
    return runSend(p, ins, data);
  const std::vector<size_t> &members = p.messageGroups.members[index];
  std::vector<pipedream::runtime::MessagePart> parts =
      groupParts(p, members, index, data);
  transportCall(pipedream::runtime::sendParts(
      *p.transport, p.spec->worldRank(ins.peer, p.replica), ins.tag,
      parts.data(), parts.size()));
  for (size_t m : members)
    if (m != index)
      p.sentAhead[m] = true;
}

/// The receive at `index`, into `data`: alone, or the message of its whole
/// group, each part into its register, when it is the group's first.
void recvMessage(pd_rank &p, size_t index, void *data) {
  const RankInstruction &ins = p.program->program[index];
  if (p.messageGroups.members[index].empty())
    return runRecv(p, ins, data);
  const std::vector<size_t> &members = p.messageGroups.members[index];
  std::vector<pipedream::runtime::MessagePart> parts =
      groupParts(p, members, index, data);
  transportCall(pipedream::runtime::recvParts(
      *p.transport, p.spec->worldRank(ins.peer, p.replica), ins.tag,
      parts.data(), parts.size()));
  for (size_t m : members)
    if (m != index)
      p.receivedAhead[m] = true;
}

/// Before the receive at `index` (issue 21): the sends that follow it up to
/// the next call or all-reduce, and read a register that neither it nor an
/// instruction in between writes, go now (each with its trace event), when
/// the transport buffers sends (pd_rank::sendsAhead); the program's own
/// sends then do nothing (sentAhead). pipe-project-ranks orders a rank's
/// sends and receives for rendezvous sends, under which a 1F1B rank must
/// receive the next gradient before it sends the activations it has
/// already computed (rank 0: F 2, receive B 1's gradient, send F 2's
/// output, B 1); its peer then waits for both messages in turn. With
/// buffered sends nothing can wait on a send, so sending first cannot add
/// a deadlock, and every message still goes in the program's order of
/// sends.
void sendAhead(pd_rank &p, size_t index) {
  if (!p.sendsAhead)
    return;
  const auto &program = p.program->program;
  // Whether an instruction in [index, j) writes register `reg`: only
  // receives and inputs do before the next call.
  auto writtenBefore = [&](size_t j, size_t reg) {
    for (size_t w = index; w < j; ++w)
      if ((program[w].op == RankInstruction::Op::Recv ||
           program[w].op == RankInstruction::Op::Input) &&
          program[w].dst == reg)
        return true;
    return false;
  };
  for (size_t j = index + 1; j < program.size(); ++j) {
    const RankInstruction &ins = program[j];
    if (ins.op == RankInstruction::Op::Recv ||
        ins.op == RankInstruction::Op::Input ||
        ins.op == RankInstruction::Op::Loss)
      continue;
    if (ins.op != RankInstruction::Op::Send)
      break;
    // A group's later sends go with its first (sendMessage), never alone.
    if (p.sentAhead[j] || p.messageGroups.follower[j])
      continue;
    // The group's registers (or the send's own) as they are now.
    const std::vector<size_t> &group = p.messageGroups.members[j];
    if (group.empty() ? writtenBefore(j, ins.src)
                      : std::any_of(group.begin(), group.end(), [&](size_t m) {
                          return writtenBefore(j, program[m].src);
                        }))
      continue;
    const double start = p.trace.enabled ? pipedream::runtime::traceNow() : 0;
    atInstruction(p, j, [&] { sendMessage(p, j, p.registerTable[ins.src]); });
    p.sentAhead[j] = true;
    if (p.trace.enabled)
      recordInstruction(p, j, start);
  }
}

/// The scalar in register memory `value` (device memory on cuda bundles).
double readLoss(pd_rank &p, const void *value, pd_dtype dtype) {
  if (p.cuda) {
    pipedream::runtime::copyToHost(p.staging.get(), value, pd_dtype_size(dtype),
                                   "downloading the loss: ");
    value = p.staging.get();
  }
  return readScalar(static_cast<const unsigned char *>(value), dtype);
}

void runLoss(pd_rank &p, const RankInstruction &ins, const void *value) {
  double loss = readLoss(p, value, p.program->registers[ins.src].dtype);
  p.stepLosses.emplace_back(ins.microbatch, loss);
  p.stepTotal += loss;
}

/// The world ranks of a shared weight's all_reduce: its group's pipeline
/// ranks on this rank's replica (with non-uniform replication the program
/// names world ranks and `replica` is 0).
std::vector<size_t> allReduceGroup(const pd_rank &p,
                                   const RankInstruction &ins) {
  std::vector<size_t> group;
  for (size_t q : ins.group)
    group.push_back(p.spec->worldRank(q, p.replica));
  return group;
}

/// pd_rank::summedOverReplicas (pd_rank_create, after the replica group).
void findGradientsSummedOverReplicas(pd_rank &p) {
  if (!p.replicas || p.replicas->members().size() < 2)
    return;
  // Clipping's squared norm: its terms are gradients the replicas have
  // already summed, so every replica's is the whole batch's.
  if (!p.spec->gradNorm.empty())
    p.summedOverReplicas.insert(p.spec->gradNorm);
  for (const RankInstruction &ins : p.program->program) {
    if (ins.op != RankInstruction::Op::AllReduce)
      continue;
    std::vector<size_t> group = allReduceGroup(p, ins);
    bool all = true;
    for (size_t member : p.replicas->members())
      all &= std::find(group.begin(), group.end(), member) != group.end();
    if (all)
      p.summedOverReplicas.insert(ins.name);
  }
}

/// all_reduce: the rank's accumulator `ins.name` summed in place over the
/// group by the transport's collective (docs/Pipe.md, "Shared weights").
void runAllReduce(pd_rank &p, const RankInstruction &ins) {
  // NOTE: the agreement comes before the step's first all-reduce too: the
  // all-reduce is a rendezvous of its group, and a holder may update other
  // weights (another chunk) before its all-reduce; agreeing only at the
  // first update would leave a rank in the agreement while another waits
  // for it in the all-reduce (sync schedules: no message follows either).
  if (!p.stepAgreed && p.agreeBeforeUpdate)
    agreeOnStep(p);
  pd_buffer *grad = nullptr;
  for (pd_buffer *buffer : p.grads)
    if (buffer->name == ins.name)
      grad = buffer;
  if (!grad)
    throw Error(PD_ERROR_INTERNAL, "internal error: rank " +
                                       std::to_string(p.rank) +
                                       " holds no gradient '" + ins.name + "'");
  size_t bytes = ins.type.numBytes;
  size_t count = ins.type.numElements;
  std::vector<size_t> group = allReduceGroup(p, ins);
  if (!p.cuda) {
    transportCall(pd_transport_all_reduce(p.transport, group.data(),
                                          group.size(), ensureMemory(*grad),
                                          count, ins.type.dtype));
    return;
  }
  // NOTE: world ranks on every transport: with replicas the group's
  // pipeline ranks are those of this rank's replica.
  void *device = pipedream::runtime::deviceArgument(*grad);
  if (p.transport->kind == "nccl") {
    transportCall(pd_transport_all_reduce(p.transport, group.data(),
                                          group.size(), device, count,
                                          ins.type.dtype));
    return;
  }
  AlignedMemory host = allocateAligned(bytes, "all-reduce staging memory");
  pipedream::runtime::copyToHost(host.get(), device, bytes,
                                 "downloading the gradient: ");
  transportCall(pd_transport_all_reduce(p.transport, group.data(),
                                        group.size(), host.get(), count,
                                        ins.type.dtype));
  pipedream::runtime::copyToDevice(device, host.get(), bytes,
                                   "uploading the summed gradient: ");
}

/// call, interpreted.
/// call: p.arguments for `ins`, its value slots the registers of `table`
/// (the bound ones are bindCall's).
pd_function &valueArguments(pd_rank &p, const RankInstruction &ins,
                            const std::vector<void *> &table) {
  pd_function &function = *p.bundle->functionByIndex[ins.function];
  p.arguments.assign(function.buffers.size(), nullptr);
  size_t a = 0, r = 0;
  for (size_t k = 0; k < function.buffers.size(); ++k) {
    const BufferSpec &buffer = function.spec.buffers[k];
    if (isBoundBuffer(buffer))
      continue;
    p.arguments[k] = buffer.role == PD_ROLE_INPUT ? table[ins.args[a++]]
                                                  : table[ins.results[r++]];
  }
  return function;
}

void interpretCall(pd_rank &p, const RankInstruction &ins) {
  pd_function &function = valueArguments(p, ins, p.registerTable);
  beforeCall(p, ins);
  bindCall(p, ins, p.arguments.data());
  if (function.cuda) {
    // Device pointers, stream wait, GPU errors, updates (GpuDevice.h).
    pipedream::runtime::invokeFunction(function, p.arguments.data());
  } else {
    function.entry(p.arguments.data());
    finishCall(p, ins);
  }
  noteCheckFailure(p, ins);
}

/// A call of a sharded update (docs/Bundle.md "Replicated stages"): the
/// group's gradients summed over the replicas before its first call, this
/// replica's call only, the updated weights all-gathered after its last.
void runShardCall(pd_rank &p, size_t index, const RankInstruction &ins) {
  const pd_rank::ShardGroup &group = p.shardGroups[p.shardGroupOf.at(index)];
  auto span = [](pd_buffer *buffer) {
    return pipedream::runtime::ReduceSpan{ensureMemory(*buffer),
                                          buffer->type.numElements,
                                          buffer->type.dtype, buffer->name};
  };
  if (index == group.first) {
    if (!p.stepAgreed && p.agreeBeforeUpdate)
      agreeOnStep(p);
    if (p.replicas && !finishOverlappedAllReduce(p, ins)) {
      std::vector<pipedream::runtime::ReduceSpan> spans =
          updateGradientSpans(p, ins);
      const double start =
          p.trace.enabled ? pipedream::runtime::traceNow() : 0;
      p.replicas->allReduce(spans);
      if (p.trace.enabled)
        p.trace.add("all_reduce", "gradients", "replicas", ins.stage, -1, -1,
                    -1, start);
    }
  }
  if (static_cast<size_t>(ins.replica) == p.shard)
    interpretCall(p, ins);
  if (index == group.last && p.replicas) {
    std::vector<std::vector<pipedream::runtime::ReduceSpan>> parts;
    for (const auto &weights : group.weights) {
      parts.emplace_back();
      for (pd_buffer *weight : weights)
        parts.back().push_back(span(weight));
    }
    const double start = p.trace.enabled ? pipedream::runtime::traceNow() : 0;
    p.replicas->allGather(p.shard, parts);
    if (p.trace.enabled)
      p.trace.add("all_gather", "weights", "replicas", ins.stage, -1, -1, -1,
                  start);
  }
}

/// Finds the sharded update groups of the rank's program and the buffers
/// they sum and gather (pd_rank_create).
void findShardGroups(pd_rank &p) {
  const auto &program = p.program->program;
  const pd_bundle &bundle = *p.bundle;
  auto find = [&](const std::vector<std::unique_ptr<pd_buffer>> &list,
                  const std::string &name) -> pd_buffer * {
    for (const auto &buffer : list)
      if (buffer->name == name)
        return buffer.get();
    throw Error(PD_ERROR_INTERNAL, "internal error: rank " +
                                       std::to_string(p.rank) +
                                       " holds no buffer '" + name +
                                       "' of its sharded update");
  };
  for (size_t i = 0; i < program.size(); ++i) {
    const RankInstruction &ins = program[i];
    if (ins.op != RankInstruction::Op::Call || ins.replica < 0)
      continue;
    bool extends = !p.shardGroups.empty() && p.shardGroups.back().last + 1 == i &&
                   program[i - 1].stage == ins.stage &&
                   program[i - 1].microbatch == ins.microbatch &&
                   program[i - 1].replica < ins.replica;
    if (!extends) {
      p.shardGroups.emplace_back();
      p.shardGroups.back().first = i;
      p.shardGroups.back().weights.resize(
          p.replicas ? p.replicas->members().size() : p.spec->replicas);
    }
    pd_rank::ShardGroup &group = p.shardGroups.back();
    group.last = i;
    p.shardGroupOf[i] = p.shardGroups.size() - 1;
    std::set<std::string> weightNames;
    for (const auto &w : bundle.manifest.weights)
      weightNames.insert(w.name);
    for (const BufferSpec &b :
         bundle.manifest.functions[ins.function].buffers) {
      if (b.role == PD_ROLE_GRAD) {
        pd_buffer *grad = find(bundle.persistent, b.name);
        if (std::find(group.grads.begin(), group.grads.end(), grad) ==
            group.grads.end())
          group.grads.push_back(grad);
      }
      if (b.role == PD_ROLE_OUTPUT && weightNames.count(b.updates))
        group.weights[static_cast<size_t>(ins.replica)].push_back(
            find(bundle.weights, b.updates));
    }
  }
}

/// The interpreter: runs the rank's program instruction by instruction.
void interpretProgram(pd_rank &p) {
  pipedream::runtime::TraceLog &trace = p.trace;
  const auto &program = p.program->program;
  for (size_t i = 0; i < program.size(); ++i) {
    const RankInstruction &ins = program[i];
    if (ins.op == RankInstruction::Op::Send && p.sentAhead[i]) {
      p.sentAhead[i] = false;
      continue;
    }
    if (ins.op == RankInstruction::Op::Recv) {
      sendAhead(p, i);
      if (p.receivedAhead[i]) {
        p.receivedAhead[i] = false;
        continue;
      }
    }
    const double start = trace.enabled ? pipedream::runtime::traceNow() : 0;
    atInstruction(p, i, [&] {
      switch (ins.op) {
      case RankInstruction::Op::Input:
        runInput(p, ins, static_cast<unsigned char *>(p.registerTable[ins.dst]));
        break;
      case RankInstruction::Op::Call:
        if (ins.replica >= 0)
          runShardCall(p, i, ins);
        else
          interpretCall(p, ins);
        break;
      case RankInstruction::Op::Send:
        sendMessage(p, i, p.registerTable[ins.src]);
        break;
      case RankInstruction::Op::Recv:
        recvMessage(p, i, p.registerTable[ins.dst]);
        break;
      case RankInstruction::Op::Loss:
        runLoss(p, ins, p.registerTable[ins.src]);
        break;
      case RankInstruction::Op::AllReduce:
        runAllReduce(p, ins);
        break;
      }
      startOverlappedAllReduces(p, i);
    });
    if (trace.enabled)
      recordInstruction(p, i,
                        ins.op == RankInstruction::Op::Call
                            ? std::max(start, p.callReady)
                            : start);
  }
}

/// Evaluation (pd_rank_evaluate): the rank's `eval` program once, on
/// evaluation micro-batch `microbatch` (rows from p.stepFirst of
/// p.evalData), its loss added to p.stepTotal. Its peers are pipeline
/// ranks; the message goes to the peer's replica that evaluates the
/// micro-batch. Interpreted: it runs between steps, forward only
/// (docs/Bundle.md "Evaluation in pipelines").
void interpretEvalProgram(pd_rank &p, int64_t microbatch) {
  const PipelineSpec &spec = *p.spec;
  const RankProgram &rank = *p.evalProgram;
  const std::vector<void *> &table = p.evalRegisterTable;
  for (size_t i = 0; i < rank.evalProgram.size(); ++i) {
    const RankInstruction &ins = rank.evalProgram[i];
    const double start = p.trace.enabled ? pipedream::runtime::traceNow() : 0;
    // A message's world rank: the peer's replica that evaluates the
    // micro-batch.
    const bool message = ins.op == RankInstruction::Op::Send ||
                         ins.op == RankInstruction::Op::Recv;
    const size_t peer =
        message
            ? spec.evalWorldRank(
                  ins.peer,
                  spec.evalReplica(ins.peer, static_cast<size_t>(microbatch)))
            : 0;
    try {
      switch (ins.op) {
      case RankInstruction::Op::Input: {
        size_t d = 0;
        while (spec.data[d].name != ins.name)
          ++d;
        copyMicrobatch(p, spec.data[d], *p.evalData[d], p.stepSamples,
                       p.stepFirst,
                       static_cast<unsigned char *>(table[ins.dst]));
        break;
      }
      case RankInstruction::Op::Call: {
        pd_function &function = valueArguments(p, ins, table);
        bindCall(p, ins, p.arguments.data());
        if (function.cuda) {
          // Device pointers, stream wait, GPU errors (GpuDevice.h).
          pipedream::runtime::invokeFunction(function, p.arguments.data());
        } else {
          function.entry(p.arguments.data());
          finishCall(p, ins);
        }
        noteFailure(p, microbatch,
                    pipedream::runtime::takeCheckFailure(function));
        break;
      }
      case RankInstruction::Op::Send:
        sendRegister(p, peer, ins.tag, table[ins.src],
                     rank.evalRegisters[ins.src].numBytes);
        break;
      case RankInstruction::Op::Recv:
        recvRegister(p, peer, ins.tag, table[ins.dst],
                     rank.evalRegisters[ins.dst].numBytes);
        break;
      case RankInstruction::Op::Loss:
        p.stepTotal +=
            readLoss(p, table[ins.src], rank.evalRegisters[ins.src].dtype);
        break;
      case RankInstruction::Op::AllReduce:
        throw Error(PD_ERROR_INTERNAL,
                    "internal error: an evaluation program has no all-reduce");
      }
      // Every event of an evaluation has the action E (docs/Runtime.md
      // "Traces"); a message's peer is the world rank.
      if (p.trace.enabled)
        traceInstruction(p, ins, "E", microbatch,
                         message ? static_cast<int64_t>(peer) : -1, nullptr,
                         start);
    } catch (const Error &e) {
      RankInstruction described = ins;
      if (message)
        described.peer = peer;
      throw Error(e.status,
                  "evaluation micro-batch " + std::to_string(microbatch) +
                      ", instruction " + std::to_string(i) + " (" +
                      describeInstruction(p, described) + "): " + e.what());
    }
  }
}

//===----------------------------------------------------------------------===//
// The runtime side of native rank entries (RankEntry.h)
//===----------------------------------------------------------------------===//

/// The context a native entry runs with.
struct NativeContext {
  pd_rank_context base;
  pd_rank *pipeline;
};

/// How a runtime call takes part in its instruction's trace event: the
/// whole event, or the start / the end of a call (call_begin, call_end).
enum class TracePart { Whole, Begin, End };

/// Runs `body(p, ins)` for instruction `index`, which the native code says
/// is an `op`, with the instruction's errors and trace event. Returns the
/// status for the generated code (the message is the last error).
template <typename Body>
int32_t nativeInstruction(pd_rank_context *ctx, int64_t index,
                          RankInstruction::Op op, TracePart part, Body &&body) {
  pd_rank &p = *reinterpret_cast<NativeContext *>(ctx)->pipeline;
  return guarded([&] {
    const auto &program = p.program->program;
    if (index < 0 || static_cast<size_t>(index) >= program.size() ||
        program[index].op != op)
      throw Error(PD_ERROR_INTERNAL,
                  "internal error: the native entry '" + p.program->entry +
                      "' and bundle.json pipeline.ranks[" +
                      std::to_string(p.rank) + "] disagree at instruction " +
                      std::to_string(index) + " (recompile the bundle)");
    const RankInstruction &ins = program[index];
    const double start =
        p.trace.enabled ? pipedream::runtime::traceNow() : 0;
    atInstruction(p, static_cast<size_t>(index), [&] {
      body(p, ins);
      if (part != TracePart::Begin)
        startOverlappedAllReduces(p, static_cast<size_t>(index));
    });
    if (p.trace.enabled) {
      if (part == TracePart::Begin)
        p.callStart = std::max(start, p.callReady);
      else
        recordInstruction(p, static_cast<size_t>(index),
                          part == TracePart::End ? p.callStart : start);
    }
    return PD_OK;
  });
}

/// The message peer, tag and size the native code uses are the program's.
void checkMessage(const pd_rank &p, const RankInstruction &ins, int64_t peer,
                  int64_t tag, int64_t bytes, size_t reg) {
  if (peer < 0 || static_cast<size_t>(peer) != ins.peer || tag != ins.tag ||
      bytes < 0 ||
      static_cast<size_t>(bytes) != p.program->registers[reg].numBytes)
    throw Error(PD_ERROR_INTERNAL,
                "internal error: the native entry '" + p.program->entry +
                    "' sends or receives " + std::to_string(bytes) +
                    " bytes with rank " + std::to_string(peer) + ", tag " +
                    std::to_string(tag) +
                    ", which bundle.json does not say (recompile the bundle)");
}

int32_t nativeInput(pd_rank_context *ctx, int64_t index, void *dst) {
  return nativeInstruction(
      ctx, index, RankInstruction::Op::Input, TracePart::Whole,
      [&](pd_rank &p, const RankInstruction &ins) {
        runInput(p, ins, static_cast<unsigned char *>(dst));
      });
}

int32_t nativeCallBegin(pd_rank_context *ctx, int64_t index,
                        void **buffers) {
  return nativeInstruction(
      ctx, index, RankInstruction::Op::Call, TracePart::Begin,
      [&](pd_rank &p, const RankInstruction &ins) {
        beforeCall(p, ins);
        bindCall(p, ins, buffers);
        pd_function &function = *p.bundle->functionByIndex[ins.function];
        // cuda: the entry calls the stage function with `buffers`: bound
        // buffers' device copies in place of their host memory.
        if (function.cuda)
          p.callBound =
              pipedream::runtime::prepareDeviceCall(function, buffers, buffers);
      });
}

int32_t nativeCallEnd(pd_rank_context *ctx, int64_t index) {
  return nativeInstruction(
      ctx, index, RankInstruction::Op::Call, TracePart::End,
      [&](pd_rank &p, const RankInstruction &ins) {
        pd_function &function = *p.bundle->functionByIndex[ins.function];
        if (function.cuda)
          pipedream::runtime::finishDeviceCall(function, p.callBound);
        else
          finishCall(p, ins);
        noteCheckFailure(p, ins);
      });
}

int32_t nativeSend(pd_rank_context *ctx, int64_t index, int64_t peer,
                   int64_t tag, const void *data, int64_t bytes) {
  pd_rank &p = *reinterpret_cast<NativeContext *>(ctx)->pipeline;
  if (index >= 0 && static_cast<size_t>(index) < p.sentAhead.size() &&
      p.sentAhead[index]) {
    // Sent at an earlier receive (sendAhead): the same register, peer and
    // tag, which the native code's must still be.
    p.sentAhead[index] = false;
    return guarded([&] {
      const RankInstruction &ins = p.program->program[index];
      checkMessage(p, ins, peer, tag, bytes, ins.src);
      return PD_OK;
    });
  }
  return nativeInstruction(ctx, index, RankInstruction::Op::Send,
                           TracePart::Whole,
                           [&](pd_rank &p, const RankInstruction &ins) {
                             checkMessage(p, ins, peer, tag, bytes, ins.src);
                             sendMessage(p, static_cast<size_t>(index), data);
                           });
}

int32_t nativeRecv(pd_rank_context *ctx, int64_t index, int64_t peer,
                   int64_t tag, void *data, int64_t bytes) {
  pd_rank &p = *reinterpret_cast<NativeContext *>(ctx)->pipeline;
  if (index >= 0 && static_cast<size_t>(index) < p.sentAhead.size())
    if (int32_t status = guarded([&] {
          sendAhead(p, static_cast<size_t>(index));
          return PD_OK;
        }))
      return status;
  if (index >= 0 && static_cast<size_t>(index) < p.receivedAhead.size() &&
      p.receivedAhead[index]) {
    // Filled by the first receive of its message group (recvMessage), into
    // the register the native code's must still be.
    p.receivedAhead[index] = false;
    return guarded([&] {
      const RankInstruction &ins = p.program->program[index];
      checkMessage(p, ins, peer, tag, bytes, ins.dst);
      if (data != p.registerTable[ins.dst])
        throw Error(PD_ERROR_INTERNAL,
                    "internal error: the native entry '" + p.program->entry +
                        "' receives into other memory than register " +
                        std::to_string(ins.dst) + " (recompile the bundle)");
      return PD_OK;
    });
  }
  return nativeInstruction(ctx, index, RankInstruction::Op::Recv,
                           TracePart::Whole,
                           [&](pd_rank &p, const RankInstruction &ins) {
                             checkMessage(p, ins, peer, tag, bytes, ins.dst);
                             recvMessage(p, static_cast<size_t>(index), data);
                           });
}

int32_t nativeLoss(pd_rank_context *ctx, int64_t index, int64_t microbatch,
                   const void *value) {
  return nativeInstruction(
      ctx, index, RankInstruction::Op::Loss, TracePart::Whole,
      [&](pd_rank &p, const RankInstruction &ins) {
        if (microbatch != ins.microbatch)
          throw Error(PD_ERROR_INTERNAL,
                      "internal error: the native entry's loss is micro-batch " +
                          std::to_string(microbatch) +
                          " (recompile the bundle)");
        runLoss(p, ins, value);
      });
}

int32_t nativeAllReduce(pd_rank_context *ctx, int64_t index) {
  return nativeInstruction(
      ctx, index, RankInstruction::Op::AllReduce, TracePart::Whole,
      [&](pd_rank &p, const RankInstruction &ins) { runAllReduce(p, ins); });
}

const pd_rank_runtime kNativeRuntime = {nativeInput, nativeCallBegin,
                                        nativeCallEnd, nativeSend,
                                        nativeRecv,  nativeLoss,
                                        nativeAllReduce};

/// Runs the rank's native entry once.
void runNativeEntry(pd_rank &p) {
  NativeContext context{{&kNativeRuntime}, &p};
  int32_t status = p.entry(&context.base, p.registerTable.data());
  if (status != PD_OK)
    throw Error(static_cast<pd_status>(status), pd_last_error());
}

/// True when PIPEDREAM_PIPELINE_INTERPRET asks to interpret programs even
/// when the bundle has native entries (debugging, comparisons).
bool interpretRequested() {
  const char *value = std::getenv("PIPEDREAM_PIPELINE_INTERPRET");
  return value && *value && std::strcmp(value, "0") != 0;
}

/// The lowest rank whose program uses weight `name`, or -1.
int64_t weightOwner(const pd_bundle &bundle, const std::string &name) {
  const PipelineSpec &spec = bundle.manifest.pipeline;
  for (size_t r = 0; r < spec.ranks.size(); ++r)
    for (size_t f : spec.ranks[r].functions)
      for (const BufferSpec &b : bundle.manifest.functions[f].buffers)
        if ((b.role == PD_ROLE_WEIGHT && b.name == name) || b.updates == name)
          return static_cast<int64_t>(r);
  return -1;
}

} // namespace

//===----------------------------------------------------------------------===//
// Pipeline information
//===----------------------------------------------------------------------===//

int pd_bundle_is_pipeline(const pd_bundle *bundle) {
  return pipelineOf(bundle) ? 1 : 0;
}
size_t pd_bundle_pipeline_ranks(const pd_bundle *bundle) {
  return pipelineOf(bundle) ? pipelineOf(bundle)->worldRanks() : 0;
}
size_t pd_bundle_pipeline_replicas(const pd_bundle *bundle) {
  return pipelineOf(bundle) ? pipelineOf(bundle)->replicas : 0;
}
const char *pd_bundle_pipeline_schedule(const pd_bundle *bundle) {
  return pipelineOf(bundle) ? pipelineOf(bundle)->kind.c_str() : "";
}
size_t pd_bundle_pipeline_stages(const pd_bundle *bundle) {
  return pipelineOf(bundle) ? pipelineOf(bundle)->stages : 0;
}
size_t pd_bundle_pipeline_chunks(const pd_bundle *bundle) {
  return pipelineOf(bundle) ? pipelineOf(bundle)->chunks : 0;
}
size_t pd_bundle_pipeline_microbatches(const pd_bundle *bundle) {
  return pipelineOf(bundle) ? pipelineOf(bundle)->microbatches : 0;
}
size_t pd_bundle_pipeline_microbatch_size(const pd_bundle *bundle) {
  return pipelineOf(bundle) ? pipelineOf(bundle)->microbatchSize : 0;
}
size_t pd_bundle_pipeline_batch_size(const pd_bundle *bundle) {
  return pipelineOf(bundle) ? pipelineOf(bundle)->batchSize : 0;
}
const char *pd_bundle_pipeline_loss(const pd_bundle *bundle) {
  return pipelineOf(bundle) ? pipelineOf(bundle)->loss.c_str() : "";
}
const char *pd_bundle_pipeline_labels(const pd_bundle *bundle) {
  return pipelineOf(bundle) ? pipelineOf(bundle)->labels.c_str() : "";
}
int64_t pd_bundle_pipeline_num_classes(const pd_bundle *bundle) {
  return pipelineOf(bundle) ? pipelineOf(bundle)->numClasses : 0;
}
size_t pd_bundle_pipeline_input_count(const pd_bundle *bundle) {
  return pipelineOf(bundle) ? pipelineOf(bundle)->inputs.size() : 0;
}
const char *pd_bundle_pipeline_input_at(const pd_bundle *bundle,
                                        size_t index) {
  const PipelineSpec *spec = pipelineOf(bundle);
  if (!spec || index >= spec->inputs.size())
    return nullptr;
  return spec->inputs[index].c_str();
}
const char *pd_bundle_pipeline_optimizer(const pd_bundle *bundle) {
  return pipelineOf(bundle) ? pipelineOf(bundle)->optimizer.c_str() : "";
}
size_t pd_bundle_pipeline_loss_rank(const pd_bundle *bundle) {
  return pipelineOf(bundle) ? pipelineOf(bundle)->lossRank : 0;
}

//===----------------------------------------------------------------------===//
// Pipelines
//===----------------------------------------------------------------------===//

pd_status pd_rank_create(pd_bundle *bundle, size_t rank,
                         pd_transport *transport, pd_rank **out) {
  if (!out)
    return nullArgument("pd_rank_create", "out");
  *out = nullptr;
  if (!bundle)
    return nullArgument("pd_rank_create", "bundle");
  if (!transport)
    return nullArgument("pd_rank_create", "transport");
  return guarded([&] {
    const PipelineSpec *spec = pipelineOf(bundle);
    if (!spec)
      return fail(PD_ERROR_UNSUPPORTED,
                  bundle->dir +
                      ": not a pipeline bundle (bundle.json has no "
                      "'pipeline' section; pipedream-compile writes one with "
                      "--stages K)");
    size_t ranks = spec->worldRanks();
    if (rank >= ranks)
      return fail(PD_ERROR_INVALID_ARGUMENT,
                  bundle->dir + ": rank " + std::to_string(rank) +
                      " does not exist: the pipeline has " +
                      std::to_string(ranks) + " ranks");
    if (bundle->rank >= 0 && static_cast<size_t>(bundle->rank) != rank)
      return fail(PD_ERROR_INVALID_ARGUMENT,
                  bundle->dir + ": the bundle was opened for rank " +
                      std::to_string(bundle->rank) + ", not rank " +
                      std::to_string(rank));
    if (pd_transport_size(transport) != ranks)
      return fail(PD_ERROR_MISMATCH,
                  bundle->dir + ": the pipeline has " + std::to_string(ranks) +
                      " ranks but the transport " +
                      std::to_string(pd_transport_size(transport)) +
                      " (run it with " + std::to_string(ranks) + " ranks)");
    if (pd_transport_rank(transport) != rank)
      return fail(PD_ERROR_INVALID_ARGUMENT,
                  "pd_rank_create: the transport is rank " +
                      std::to_string(pd_transport_rank(transport)) +
                      ", not rank " + std::to_string(rank));
    auto p = std::make_unique<pd_rank>();
    p->bundle = bundle;
    p->rank = rank;
    p->transport = transport;
    p->spec = spec;
    p->programRank = spec->programOf(rank);
    p->replica = spec->replicaOf(rank);
    p->shard = spec->shardOf(rank);
    p->program = &spec->ranks[p->programRank];
    p->evalProgram = &spec->ranks[spec->evaluates ? spec->evalProgramOf(rank)
                                                  : p->programRank];
    const std::vector<size_t> functions = spec->functionsOf(rank);
    for (size_t f : functions)
      if (!bundle->functionByIndex[f])
        throw Error(PD_ERROR_INTERNAL,
                    "internal error: function '" +
                        bundle->manifest.functions[f].name +
                        "' of rank " + std::to_string(rank) +
                        " is not loaded");
    p->cuda = bundle->manifest.target == "cuda";
    // cuda bundles: the replicas sum device gradients over a transport
    // that takes device memory (NCCL). Compiled, not yet run on a GPU.
    auto checkCudaReplicas = [&](const std::string &what) {
      if (!p->cuda)
        return;
      if (!pipedream::runtime::transportTakesDevice(*transport) ||
          transport->kind == "mpi")
        throw Error(PD_ERROR_UNSUPPORTED,
                    bundle->dir + ": " + what +
                        " of a cuda bundle sum their gradients with "
                        "ncclAllReduce: run it over the NCCL transport "
                        "(--transport nccl), not '" +
                        transport->kind + "'");
      for (const RankInstruction &ins : p->program->program)
        if (ins.op == RankInstruction::Op::Call && ins.replica >= 0)
          throw Error(PD_ERROR_UNSUPPORTED,
                      bundle->dir + ": sharded optimizer state runs on CPU "
                                    "bundles only; this bundle targets cuda");
    };
    if (spec->replicas > 1) {
      checkCudaReplicas("replicated stages (pipeline.replicas " +
                        std::to_string(spec->replicas) + ")");
      std::vector<size_t> members;
      for (size_t j = 0; j < spec->replicas; ++j)
        members.push_back(spec->worldRank(p->programRank, j));
      p->replicas = std::make_unique<pipedream::runtime::ReplicaGroup>(
          *transport, p->programRank, p->replica, std::move(members));
    } else if (spec->routed()) {
      // Non-uniform replication: the group of this rank's stage (every rank
      // makes one: over MPI the split is a collective of all ranks; a
      // stage with one replica gets a group of one, which sums nothing).
      checkCudaReplicas("non-uniform replicas (pipeline.stage_replicas)");
      size_t stage = spec->layoutStage[rank];
      p->replicas = std::make_unique<pipedream::runtime::ReplicaGroup>(
          *transport, stage, spec->layoutReplica[rank],
          spec->stageMembers(stage));
    }
    p->transportTakesDevice =
        pipedream::runtime::transportTakesDevice(*transport);
    // Sends ahead and message groups both need sends that never wait for
    // their receiver (and host registers); each has its own switch.
    const bool buffered =
        !p->cuda && pipedream::runtime::transportBuffersSends(*transport);
    auto off = [](const char *name) {
      const char *value = std::getenv(name);
      return value && std::strcmp(value, "0") == 0;
    };
    p->sendsAhead = buffered && !off("PIPEDREAM_SEND_AHEAD");
    p->sentAhead.assign(p->program->program.size(), false);
    p->receivedAhead.assign(p->program->program.size(), false);
    p->messageGroups =
        buffered && !off("PIPEDREAM_COALESCE_MESSAGES")
            ? pipedream::runtime::planMessageGroups(*spec, p->programRank)
            : pipedream::runtime::MessageGroups(p->program->program.size());
    size_t largest = sizeof(double);
    for (size_t g = 0; g < p->program->registers.size(); ++g) {
      size_t bytes = p->program->registers[g].numBytes;
      std::string what = "register " + std::to_string(g) + " of rank " +
                         std::to_string(rank);
      largest = std::max(largest, bytes);
      if (p->cuda) {
        // Device-resident, allocated once: calls, sends and receives use
        // it directly. Zeroed, as the CPU's registers are.
        p->deviceRegisters.push_back(
            pipedream::runtime::allocateDevice(bytes, what));
        p->registerTable.push_back(p->deviceRegisters.back().get());
        pipedream::runtime::zeroDevice(p->registerTable.back(), bytes,
                                       "zeroing " + what + ": ");
      } else {
        p->registers.push_back(allocateAligned(bytes, what));
        p->registerTable.push_back(p->registers.back().get());
      }
    }
    if (p->cuda) {
      p->staging = allocateAligned(largest, "register staging memory");
      p->stagingBytes = largest;
    }
    const std::string &entry = p->program->entry;
    // NOTE: cuda bundles too: the register table is device memory, and
    // call_begin/call_end translate bound buffers (GpuDevice.h).
    // NOTE: sharded updates run on one replica each: their programs are
    // interpreted (the native entry calls every stage function).
    bool sharded = false;
    for (const RankInstruction &ins : p->program->program)
      if (ins.op == RankInstruction::Op::Call && ins.replica >= 0)
        sharded = true;
    if (!entry.empty() && !interpretRequested() && !sharded) {
      dlerror();
      void *symbol = bundle->library ? dlsym(bundle->library, entry.c_str())
                                     : nullptr;
      const char *reason = dlerror();
      if (reason || !symbol)
        throw Error(PD_ERROR_LOAD,
                    bundle->dir + ": the bundle's library has no symbol '" +
                        entry + "' (the native entry of rank " +
                        std::to_string(rank) + ", pipeline.ranks[" +
                        std::to_string(rank) + "].entry)");
      // NOTE: converting an object pointer to a function pointer is what
      // dlsym is specified for (POSIX).
      p->entry = reinterpret_cast<pd_rank_entry>(symbol);
    }
    for (size_t f : functions)
      if (bundle->functionByIndex[f]->checkRecord)
        p->hasChecks = true;
    std::set<pd_buffer *> grads;
    for (size_t f : functions)
      for (pd_buffer *buffer : bundle->functionByIndex[f]->buffers)
        if (buffer->role == PD_ROLE_GRAD)
          grads.insert(buffer);
    // Manifest order, for determinism.
    for (auto &buffer : bundle->persistent)
      if (grads.count(buffer.get())) {
        p->grads.push_back(buffer.get());
        if (buffer->name == spec->gradNorm)
          p->gradNorm = buffer.get();
      }
    // Asynchronous schedules interleave updates with other micro-batches'
    // messages: an agreement before the first one could wait on a rank
    // that waits on this one.
    p->agreeBeforeUpdate = spec->kind != "pipedream" && spec->kind != "2bw";
    // NOTE: an asynchronous schedule's updates run before the ranks agree
    // on the step (agreeBeforeUpdate): the snapshot then holds everything
    // they change too, so that a failed step is applied on no rank.
    std::set<pd_buffer *> updated;
    for (const RankInstruction &ins : p->program->program)
      if (ins.op == RankInstruction::Op::Call &&
          (ins.replica < 0 || static_cast<size_t>(ins.replica) == p->replica) &&
          (ins.action != "U" || !p->agreeBeforeUpdate))
        for (auto &[output, target] :
             bundle->functionByIndex[ins.function]->updates)
          if (target->role != PD_ROLE_GRAD)
            updated.insert(target);
    for (auto &buffer : bundle->weights)
      if (updated.count(buffer.get())) {
        p->stepSnapshot.add(buffer.get());
        if (!p->agreeBeforeUpdate)
          p->asyncUpdatedWeights.push_back(buffer.get());
      }
    for (auto &buffer : bundle->persistent)
      if (updated.count(buffer.get()))
        p->stepSnapshot.add(buffer.get());
    for (size_t d = 0; d < spec->data.size(); ++d)
      if (std::binary_search(spec->data[d].ranks.begin(),
                             spec->data[d].ranks.end(), p->programRank))
        p->reads.push_back(d);
    findShardGroups(*p);
    findGradientsSummedOverReplicas(*p);
    planGradientOverlap(*p);
    bundle->pipelines.push_back(p.get());
    *out = p.release();
    return PD_OK;
  });
}

void pd_rank_destroy(pd_rank *pipeline) {
  if (!pipeline)
    return;
  auto &list = pipeline->bundle->pipelines;
  list.erase(std::remove(list.begin(), list.end(), pipeline), list.end());
  delete pipeline;
}

size_t pd_rank_index(const pd_rank *pipeline) {
  return pipeline ? pipeline->rank : 0;
}

size_t pd_rank_batch_size(const pd_rank *pipeline) {
  return pipeline ? pipeline->spec->batchSize : 0;
}

pd_status pd_rank_check_data(pd_rank *pipeline, const pd_named_array *arrays,
                             size_t count, size_t *num_samples) {
  if (num_samples)
    *num_samples = 0;
  if (!pipeline)
    return nullArgument("pd_rank_check_data", "pipeline");
  return guarded([&] {
    size_t samples = 0;
    matchAllData(*pipeline->spec, arrays, count, samples);
    if (num_samples)
      *num_samples = samples;
    return PD_OK;
  });
}

double pd_rank_grad_norm(const pd_rank *pipeline) {
  return pipeline ? pipeline->lastGradNorm
                  : std::numeric_limits<double>::quiet_NaN();
}

pd_status pd_rank_step(pd_rank *pipeline, const pd_named_array *arrays,
                       size_t count, uint64_t first_sample, double *loss) {
  if (loss)
    *loss = std::numeric_limits<double>::quiet_NaN();
  if (!pipeline)
    return nullArgument("pd_rank_step", "pipeline");
  pd_rank &p = *pipeline;
  return onRank(p, [&] {
    const PipelineSpec &spec = *p.spec;
    size_t samples = 0;
    std::vector<const pd_named_array *> matched =
        matchData(spec, p.reads, arrays, count, samples);
    size_t first = samples ? static_cast<size_t>(first_sample % samples) : 0;
    for (size_t k = 0; k < p.reads.size(); ++k)
      if (spec.data[p.reads[k]].isLabels)
        checkLabels(spec, *matched[k], samples, first, spec.batchSize);
    if (p.cuda)
      checkDataIndices(p, arrays, count, samples, first, spec.batchSize,
                       "micro-batch ");

    pipedream::runtime::TraceLog &trace = p.trace;
    const double stepStart =
        trace.enabled ? pipedream::runtime::traceNow() : 0;
    for (pd_buffer *grad : p.grads)
      pipedream::runtime::zeroBuffer(*grad);
    p.stepData = std::move(matched);
    p.stepFirst = first;
    // A failed step may have left sends marked as sent ahead.
    std::fill(p.sentAhead.begin(), p.sentAhead.end(), false);
    std::fill(p.receivedAhead.begin(), p.receivedAhead.end(), false);
    p.stepSamples = samples;
    p.stepTotal = 0;
    p.stepFailure.clear();
    p.failureMicrobatch = -1;
    p.stepLosses.clear();
    p.summedThisStep.clear();
    p.stepAgreed = false;
    if (p.hasChecks || p.checkFinite)
      p.stepSnapshot.save();
    else
      p.stepSnapshot.skip();
    {
      pipedream::runtime::ConstantWeights constants(*p.bundle,
                                                    constantWeightCalls(p));
      p.constantWeights = &constants;
      struct Reset {
        pd_rank &p;
        ~Reset() { p.constantWeights = nullptr; }
      } reset{p};
      if (p.entry)
        runNativeEntry(p);
      else
        interpretProgram(p);
    }
    // A program without updates (or an asynchronous schedule): agree now.
    if (!p.stepAgreed)
      agreeOnStep(p);
    // After the norm's all-reduce (or, with one rank, the rank's N calls)
    // every rank holds the whole model's squared norm.
    if (p.gradNorm)
      p.lastGradNorm = std::sqrt(readScalar(
          pipedream::runtime::readMemory(*p.gradNorm), p.gradNorm->type.dtype));
    double total = p.stepTotal;

    double stepLoss = total / static_cast<double>(spec.microbatches);
    if (spec.routed()) {
      // Non-uniform replication: the last stage's replicas each hold the
      // losses of their micro-batches; each sends its sum / M to rank 0,
      // which adds them up in rank order: the mean of the M losses.
      bool holds = std::find(spec.lossRanks.begin(), spec.lossRanks.end(),
                             p.rank) != spec.lossRanks.end();
      if (holds && p.rank != 0)
        transportCall(pd_transport_send(p.transport, 0, PD_TAG_STEP_LOSS,
                                        &stepLoss, sizeof(stepLoss)),
                      "sending the step loss to rank 0: ");
      if (p.rank == 0) {
        double sum = 0;
        for (size_t from : spec.lossRanks) {
          double part = stepLoss;
          if (from != 0)
            transportCall(pd_transport_recv(p.transport, from,
                                            PD_TAG_STEP_LOSS, &part,
                                            sizeof(part)),
                          "receiving the step loss: ");
          sum += part;
        }
        stepLoss = sum;
      }
      if (loss)
        *loss = p.rank == 0 ? stepLoss : std::nan("");
      if (trace.enabled)
        trace.add("step", "", "", -1, -1, -1, -1, stepStart);
      ++trace.steps;
      return PD_OK;
    }
    // Every replica's loss rank sends its mean to rank 0, which averages
    // them in replica order (one replica: just the loss rank's).
    if (p.programRank == spec.lossRank && p.rank != 0)
      transportCall(pd_transport_send(p.transport, 0, PD_TAG_STEP_LOSS,
                                      &stepLoss, sizeof(stepLoss)),
                    "sending the step loss to rank 0: ");
    if (p.rank == 0) {
      double sum = 0;
      for (size_t j = 0; j < spec.replicas; ++j) {
        size_t from = spec.worldRank(spec.lossRank, j);
        double replicaLoss = stepLoss;
        if (from != 0)
          transportCall(pd_transport_recv(p.transport, from, PD_TAG_STEP_LOSS,
                                          &replicaLoss, sizeof(replicaLoss)),
                        "receiving the step loss: ");
        sum += replicaLoss;
      }
      stepLoss = spec.replicas == 1
                     ? sum
                     : sum / static_cast<double>(spec.replicas);
    }
    if (loss && (p.rank == 0 || p.rank == spec.lossRank))
      *loss = stepLoss;
    if (trace.enabled)
      trace.add("step", "", "", -1, -1, -1, -1, stepStart);
    ++trace.steps;
    return PD_OK;
  });
}

int pd_rank_can_evaluate(const pd_rank *pipeline) {
  return pipeline && pipeline->spec->evaluates ? 1 : 0;
}

pd_status pd_rank_evaluate(pd_rank *pipeline, const pd_named_array *arrays,
                           size_t count, double *loss) {
  if (loss)
    *loss = std::numeric_limits<double>::quiet_NaN();
  if (!pipeline)
    return nullArgument("pd_rank_evaluate", "pipeline");
  pd_rank &p = *pipeline;
  if (!p.spec->evaluates)
    return fail(PD_ERROR_UNSUPPORTED,
                p.bundle->dir + ": the pipeline has no evaluation program: "
                                "compile it with pipedream-compile --evaluate");
  return onRank(p, [&] {
    const PipelineSpec &spec = *p.spec;
    const size_t b = spec.microbatchSize;
    // Every array on every rank: a rank that reads none still runs one
    // evaluation program per micro-batch.
    size_t samples = 0;
    std::vector<const pd_named_array *> matched =
        matchAllData(spec, arrays, count, samples);
    if (samples == 0 || samples % b != 0)
      throw Error(PD_ERROR_INVALID_ARGUMENT,
                  std::to_string(samples) +
                      " samples, not a multiple of the micro-batch size " +
                      std::to_string(b) + " (every sample counts once)");
    // cuda: the device code clamps indices it cannot report; the host
    // checks them first, as for a step.
    if (p.cuda)
      checkDataIndices(p, arrays, count, samples, 0, samples,
                       "evaluation micro-batch ");
    const RankProgram &rank = *p.evalProgram;
    if (p.evalRegisterTable.size() != rank.evalRegisters.size()) {
      size_t largest = p.stagingBytes;
      for (size_t g = 0; g < rank.evalRegisters.size(); ++g) {
        const size_t bytes = rank.evalRegisters[g].numBytes;
        std::string what = "evaluation register " + std::to_string(g);
        largest = std::max(largest, bytes);
        if (p.cuda) {
          p.evalDeviceRegisters.push_back(
              pipedream::runtime::allocateDevice(bytes, what));
          p.evalRegisterTable.push_back(p.evalDeviceRegisters.back().get());
        } else {
          p.evalRegisters.push_back(allocateAligned(bytes, what));
          p.evalRegisterTable.push_back(p.evalRegisters.back().get());
        }
      }
      if (p.cuda && largest > p.stagingBytes) {
        p.staging = allocateAligned(largest, "register staging memory");
        p.stagingBytes = largest;
      }
    }
    pipedream::runtime::TraceLog &trace = p.trace;
    const double evalStart = trace.enabled ? pipedream::runtime::traceNow() : 0;
    p.evalData = std::move(matched);
    p.stepSamples = samples;
    p.stepTotal = 0;
    p.stepFailure.clear();
    p.failureMicrobatch = -1;
    // Micro-batch m on the replica of this rank's pipeline rank that
    // evaluates it (docs/Bundle.md "Evaluation in pipelines").
    const size_t runs = samples / b;
    const size_t program = spec.evalProgramOf(p.rank),
                 replica = spec.evalReplicaOf(p.rank);
    for (size_t m = 0; m < runs; ++m) {
      if (spec.evalReplica(program, m) != replica)
        continue;
      p.stepFirst = m * b;
      interpretEvalProgram(p, static_cast<int64_t>(m));
    }
    const double agreeStart =
        trace.enabled ? pipedream::runtime::traceNow() : 0;
    StepStatus agreed =
        agreeOnStatus(p, "agreeing on the evaluation's status: ");
    if (trace.enabled)
      trace.add("agree", "evaluation status", "E", -1, -1, -1, -1, agreeStart);
    if (agreed.failed)
      throw Error(
          PD_ERROR_CHECK_FAILED,
          (agreed.microbatch >= 0 ? "evaluation micro-batch " +
                                        std::to_string(agreed.microbatch) + ", "
                                  : std::string()) +
              "rank " + std::to_string(agreed.rank) + ": " + agreed.message);
    // The loss rank's replicas send the sums of their micro-batches'
    // losses (each a mean over its samples) to rank 0, which adds them up
    // in replica order: the mean over the micro-batches.
    const size_t lossRank = spec.evalLossRank;
    const size_t holders = spec.replicasOf(lossRank);
    if (program == lossRank && p.rank != 0)
      transportCall(pd_transport_send(p.transport, 0, PD_TAG_STEP_LOSS,
                                      &p.stepTotal, sizeof(p.stepTotal)),
                    "sending the evaluation loss to rank 0: ");
    double mean = std::numeric_limits<double>::quiet_NaN();
    if (p.rank == 0) {
      double total = 0;
      for (size_t j = 0; j < holders; ++j) {
        size_t from = spec.evalWorldRank(lossRank, j);
        double part = p.stepTotal;
        if (from != 0)
          transportCall(pd_transport_recv(p.transport, from, PD_TAG_STEP_LOSS,
                                          &part, sizeof(part)),
                        "receiving the evaluation loss: ");
        total += part;
      }
      mean = total / static_cast<double>(runs);
    } else if (program == lossRank && holders == 1) {
      mean = p.stepTotal / static_cast<double>(runs);
    }
    if (loss)
      *loss = mean;
    if (trace.enabled)
      trace.add("evaluate", "", "E", -1, -1, -1, -1, evalStart);
    return PD_OK;
  });
}

pd_status pd_rank_set_check_finite(pd_rank *pipeline, int enabled) {
  if (!pipeline)
    return nullArgument("pd_rank_set_check_finite", "pipeline");
  pipeline->checkFinite = enabled != 0;
  return PD_OK;
}

pd_status pd_rank_gather_weights(pd_rank *pipeline) {
  if (!pipeline)
    return nullArgument("pd_rank_gather_weights", "pipeline");
  pd_rank &p = *pipeline;
  return onRank(p, [&] {
    pd_bundle &bundle = *p.bundle;
    for (size_t w = 0; w < bundle.weights.size(); ++w) {
      pd_buffer &weight = *bundle.weights[w];
      int64_t owner = weightOwner(bundle, weight.name);
      std::string where = "gathering weight '" + weight.name + "': ";
      if (p.rank == 0) {
        if (owner == 0)
          continue;
        weight.onRank = true;
        if (owner < 0) {
          // No rank trains it: weights.bin's value (loaded unless this is
          // a rank bundle).
          if (!weight.memory)
            pipedream::runtime::loadWeightFromFile(bundle, w);
          continue;
        }
        transportCall(pd_transport_recv(p.transport,
                                        static_cast<size_t>(owner),
                                        PD_TAG_WEIGHTS, ensureMemory(weight),
                                        weight.type.numBytes),
                      where);
      } else if (owner == static_cast<int64_t>(p.rank)) {
        transportCall(pd_transport_send(p.transport, 0, PD_TAG_WEIGHTS,
                                        ensureMemory(weight),
                                        weight.type.numBytes),
                      where);
      }
    }
    return PD_OK;
  });
}
