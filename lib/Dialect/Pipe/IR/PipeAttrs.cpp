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
