//===- PipeAttrs.cpp - pipe dialect attributes ----------------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Dialect/Pipe/IR/PipeAttrs.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace pipedream::pipe;

#include "pipedream/Dialect/Pipe/IR/PipeEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "pipedream/Dialect/Pipe/IR/PipeAttrs.cpp.inc"

void PipeDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "pipedream/Dialect/Pipe/IR/PipeAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// StageAttr
//===----------------------------------------------------------------------===//

LogicalResult StageAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                int64_t index, int64_t chunk, bool reversed) {
  if (index < 0)
    return emitError() << "stage index must be non-negative, got " << index;
  if (chunk < 0)
    return emitError() << "stage chunk must be non-negative, got " << chunk;
  // V placement: only odd chunks (the way back of the V) are reversed.
  if (reversed && chunk % 2 == 0)
    return emitError() << "only an odd chunk can be reversed (V placement: "
                          "chunk 1 runs stage 2K-1-s on rank s), got chunk "
                       << chunk;
  return success();
}

//===----------------------------------------------------------------------===//
// ScheduleAttr
//===----------------------------------------------------------------------===//

LogicalResult
ScheduleAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                     ScheduleKind kind, int64_t numStages,
                     int64_t numMicrobatches, int64_t numChunks) {
  if (numStages < 1)
    return emitError() << "schedule needs at least 1 stage, got " << numStages;
  if (numMicrobatches < 1)
    return emitError() << "schedule needs at least 1 microbatch, got "
                       << numMicrobatches;
  if (numChunks < 1)
    return emitError() << "schedule needs at least 1 chunk per stage, got "
                       << numChunks;
  if (kind == ScheduleKind::ZeroBubbleV || kind == ScheduleKind::DualPipeV) {
    if (numChunks != 2)
      return emitError() << "'" << stringifyScheduleKind(kind)
                         << "' runs exactly 2 chunks per stage (a V: stage s "
                            "and 2K-1-s on rank s), got "
                         << numChunks;
    if (kind == ScheduleKind::DualPipeV && numMicrobatches < 2 * numStages)
      return emitError() << "'dualpipe-v' needs at least 2K = "
                         << 2 * numStages << " microbatches, got "
                         << numMicrobatches;
  } else if (kind == ScheduleKind::InterleavedZeroBubble) {
    if (numChunks == 1)
      return emitError() << "'" << stringifyScheduleKind(kind)
                         << "' needs more than 1 chunk per stage";
    int64_t rounds = std::max<int64_t>(1, numMicrobatches / numStages);
    if (numMicrobatches % rounds != 0)
      return emitError() << "'" << stringifyScheduleKind(kind)
                         << "' needs microbatches to be a multiple of "
                            "max(1, microbatches / stages) = "
                         << rounds << ", got " << numMicrobatches;
  } else if (kind == ScheduleKind::Interleaved1F1B) {
    if (numChunks == 1)
      return emitError() << "'" << stringifyScheduleKind(kind)
                         << "' needs more than 1 chunk per stage";
    // Megatron's interleaved schedule runs micro-batches in groups of K
    // through each chunk; a partial group would leave its order undefined.
    if (numMicrobatches % numStages != 0)
      return emitError() << "'" << stringifyScheduleKind(kind)
                         << "' needs microbatches to be a multiple of "
                            "stages, got "
                         << numMicrobatches << " microbatches for "
                         << numStages << " stages";
  } else if (numChunks != 1) {
    return emitError() << "'" << stringifyScheduleKind(kind)
                       << "' has 1 chunk per stage, got " << numChunks
                       << " (only 'interleaved-1f1b', 'interleaved-zb', 'zb-v' "
                          "and 'dualpipe-v' have virtual chunks)";
  }
  return success();
}

bool ScheduleAttr::isSynchronous() const {
  switch (getKind()) {
  case ScheduleKind::GPipe:
  case ScheduleKind::OneFOneB:
  case ScheduleKind::Interleaved1F1B:
  case ScheduleKind::ZeroBubbleH1:
  case ScheduleKind::InterleavedZeroBubble:
  case ScheduleKind::ZeroBubbleV:
  case ScheduleKind::DualPipeV:
    return true;
  case ScheduleKind::PipeDream:
  case ScheduleKind::TwoBW:
    return false;
  }
  llvm_unreachable("unknown schedule kind");
}

bool ScheduleAttr::splitsBackward() const {
  return getKind() == ScheduleKind::ZeroBubbleH1 ||
         getKind() == ScheduleKind::InterleavedZeroBubble ||
         getKind() == ScheduleKind::ZeroBubbleV ||
         getKind() == ScheduleKind::DualPipeV;
}

bool ScheduleAttr::hasWeightVersions() const { return !isSynchronous(); }

//===----------------------------------------------------------------------===//
// PlanAttr
//===----------------------------------------------------------------------===//

LogicalResult PlanAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               int64_t stages, ArrayRef<int64_t> replicas,
                               FloatAttr slowest, bool uniform, bool chosen) {
  if (stages < 1 || static_cast<int64_t>(replicas.size()) != stages)
    return emitError() << "plan needs at least 1 stage and one replica count "
                          "per stage, got "
                       << stages << " stages and " << replicas.size()
                       << " replica counts";
  if (llvm::any_of(replicas, [](int64_t r) { return r < 1; }))
    return emitError() << "plan replicas must be at least 1";
  if (uniform && !llvm::all_equal(replicas))
    return emitError() << "a uniform plan has the same replicas on every stage";
  return success();
}

//===----------------------------------------------------------------------===//
// PartitionAttr
//===----------------------------------------------------------------------===//

LogicalResult PartitionAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, StringRef method,
    int64_t stages, int64_t chunks, ScheduleKind schedule, int64_t microbatches,
    int64_t optimizerStates, FloatAttr slowest, FloatAttr ideal,
    FloatAttr uniformSlowest, FloatAttr autoSlowest, int64_t memoryLimit,
    int64_t replicas, FloatAttr replicatedSlowest, ArrayRef<PlanAttr> plans) {
  if (method != "auto" && method != "uniform" && method != "manual")
    return emitError() << "partition method must be auto, uniform or manual, "
                          "got '"
                       << method << "'";
  if (stages < 1 || chunks < 1 || microbatches < 1)
    return emitError() << "partition needs at least 1 stage, chunk and "
                          "micro-batch, got stages = "
                       << stages << ", chunks = " << chunks
                       << ", microbatches = " << microbatches;
  if (optimizerStates < 0 || memoryLimit < 0 || replicas < 0)
    return emitError() << "partition optimizer_states, memory_limit and "
                          "replicas must be non-negative";
  if ((replicas > 0) != bool(replicatedSlowest))
    return emitError() << "partition replicas and replicated_slowest go "
                          "together (the planner's plan)";
  if (!plans.empty() && replicas == 0)
    return emitError() << "partition plans need replicas (ranks=N)";
  return success();
}
