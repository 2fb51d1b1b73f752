//===- PipeDialect.cpp - pipe dialect -------------------------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Dialect registration and the checks of the discardable attributes the
// dialect defines (`pipe.stage`, `pipe.schedule`) wherever they appear.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Dialect/Pipe/IR/PipeDialect.h"
#include "pipedream/Dialect/Pipe/IR/PipeAttrs.h"
#include "pipedream/Dialect/Pipe/IR/PipeOps.h"

using namespace mlir;
using namespace pipedream::pipe;

#include "pipedream/Dialect/Pipe/IR/PipeOpsDialect.cpp.inc"

void PipeDialect::initialize() {
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "pipedream/Dialect/Pipe/IR/PipeOps.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Discardable attributes
//===----------------------------------------------------------------------===//

/// Checks a discardable `pipe.*` attribute. `where` names its position
/// ("", "argument 2 ", "result 0 ") for the message.
// NOTE: names this dialect does not define are accepted, so that a pass can
// attach its own `pipe.*` annotations (costs, for instance) without first
// teaching this hook about them.
static LogicalResult verifyDiscardableAttr(Operation *op, const Twine &where,
                                           NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == PipeDialect::kStageAttrName && !isa<StageAttr>(attr.getValue()))
    return op->emitOpError()
           << where << "attribute '" << name
           << "' must be a #pipe.stage attribute, got " << attr.getValue();
  if (name == PipeDialect::kScheduleAttrName &&
      !isa<ScheduleAttr>(attr.getValue()))
    return op->emitOpError()
           << where << "attribute '" << name
           << "' must be a #pipe.schedule attribute, got " << attr.getValue();
  if (name == PipeDialect::kPartitionAttrName &&
      !isa<PartitionAttr>(attr.getValue()))
    return op->emitOpError()
           << where << "attribute '" << name
           << "' must be a #pipe.partition attribute, got " << attr.getValue();
  // pipe-annotate-costs: times (f64 seconds) and byte counts (integers).
  if (name == "pipe.cost") {
    auto dict = dyn_cast<DictionaryAttr>(attr.getValue());
    if (!dict)
      return op->emitOpError() << where << "attribute 'pipe.cost' must be a "
                                           "dictionary, got "
                               << attr.getValue();
    for (NamedAttribute entry : dict) {
      StringRef key = entry.getName().getValue();
      bool isTime = key == "forward" || key == "backward_input" ||
                    key == "backward_weight";
      bool isBytes = key.ends_with("_bytes");
      if ((isTime && (!isa<FloatAttr>(entry.getValue()) ||
                      cast<FloatAttr>(entry.getValue()).getValueAsDouble() <
                          0)) ||
          (isBytes && (!isa<IntegerAttr>(entry.getValue()) ||
                       cast<IntegerAttr>(entry.getValue()).getInt() < 0)))
        return op->emitOpError()
               << where << "pipe.cost entry '" << key << "' must be a "
               << (isTime ? "non-negative float (seconds)"
                          : "non-negative integer (bytes)")
               << ", got " << entry.getValue();
    }
  }
  return success();
}

LogicalResult PipeDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  return verifyDiscardableAttr(op, "", attr);
}

LogicalResult PipeDialect::verifyRegionArgAttribute(Operation *op,
                                                    unsigned /*regionIndex*/,
                                                    unsigned argIndex,
                                                    NamedAttribute attr) {
  return verifyDiscardableAttr(op, "argument " + Twine(argIndex) + " ", attr);
}

LogicalResult PipeDialect::verifyRegionResultAttribute(Operation *op,
                                                       unsigned /*regionIndex*/,
                                                       unsigned resultIndex,
                                                       NamedAttribute attr) {
  return verifyDiscardableAttr(op, "result " + Twine(resultIndex) + " ", attr);
}
