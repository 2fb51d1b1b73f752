//===- NNDialect.cpp - nn dialect -----------------------------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Dialect/NN/IR/NNDialect.h"
#include "pipedream/Dialect/NN/IR/NNOps.h"

using namespace mlir;
using namespace pipedream::nn;

#include "pipedream/Dialect/NN/IR/NNOpsDialect.cpp.inc"

void NNDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "pipedream/Dialect/NN/IR/NNOps.cpp.inc"
      >();
}

Operation *NNDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                          Type type, Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, elements);
}

/// `nn.name` must be a non-empty string.
static LogicalResult verifyNameAttr(Operation *op, NamedAttribute attr) {
  auto name = dyn_cast<StringAttr>(attr.getValue());
  if (!name || name.getValue().empty())
    return op->emitError() << "'" << NNDialect::kNameAttrName
                           << "' must be a non-empty string";
  return success();
}

LogicalResult NNDialect::verifyRegionArgAttribute(Operation *op,
                                                  unsigned regionIndex,
                                                  unsigned argIndex,
                                                  NamedAttribute attr) {
  if (attr.getName() == kNameAttrName)
    return verifyNameAttr(op, attr);
  if (attr.getName() == kParamAttrName) {
    // NOTE: passes read the initial weight value from here; its type must be
    // exactly the argument's so no pass has to reconcile the two.
    auto value = dyn_cast<ElementsAttr>(attr.getValue());
    if (!value)
      return op->emitError() << "'" << kParamAttrName << "' of argument #"
                             << argIndex << " must be an elements attribute";
    if (regionIndex >= op->getNumRegions() ||
        op->getRegion(regionIndex).empty() ||
        argIndex >= op->getRegion(regionIndex).getNumArguments())
      return op->emitError() << "'" << kParamAttrName
                             << "' on a missing argument #" << argIndex;
    Type argType =
        op->getRegion(regionIndex).getArgument(argIndex).getType();
    if (value.getType() != argType)
      return op->emitError()
             << "'" << kParamAttrName << "' of argument #" << argIndex
             << " has type " << value.getType() << " but the argument is "
             << argType;
    return success();
  }
  return op->emitError() << "unknown nn argument attribute '"
                         << attr.getName().getValue() << "'";
}

LogicalResult NNDialect::verifyRegionResultAttribute(Operation *op,
                                                     unsigned regionIndex,
                                                     unsigned resultIndex,
                                                     NamedAttribute attr) {
  if (attr.getName() == kNameAttrName)
    return verifyNameAttr(op, attr);
  return op->emitError() << "unknown nn result attribute '"
                         << attr.getName().getValue() << "'";
}
