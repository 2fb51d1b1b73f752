//===- NNDialect.cpp - nn dialect -----------------------------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Dialect/NN/IR/NNDialect.h"
#include "pipedream/Dialect/NN/IR/NNOps.h"

#include "NNGradients.h"

using namespace mlir;
using namespace pipedream::nn;

#include "pipedream/Dialect/NN/IR/NNOpsDialect.cpp.inc"

void NNDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "pipedream/Dialect/NN/IR/NNOps.cpp.inc"
      >();
  // Derivative rules live in their own files (NNGradients*.cpp) and are
  // attached as external models, so the rule table can grow per op family.
  detail::attachGradientModels(getContext());
}

Operation *NNDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                          Type type, Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, elements);
}

/// Index attributes (`nn.residual`, `nn.grad_of`...) are non-negative i64.
static LogicalResult verifyIndexAttr(Operation *op, NamedAttribute attr) {
  auto index = dyn_cast<IntegerAttr>(attr.getValue());
  if (!index || index.getInt() < 0)
    return op->emitError() << "'" << attr.getName().getValue()
                           << "' must be a non-negative integer";
  return success();
}

/// String attributes (`nn.name`, `nn.role`...) are non-empty.
static LogicalResult verifyStringAttr(Operation *op, NamedAttribute attr) {
  auto text = dyn_cast<StringAttr>(attr.getValue());
  if (!text || text.getValue().empty())
    return op->emitError() << "'" << attr.getName().getValue()
                           << "' must be a non-empty string";
  return success();
}

/// Verifies `attr` on an argument or a result (`what`), past the attributes
/// only arguments take: `nn.name`, or one named in `indexAttrs` (non-negative
/// integers) or `stringAttrs` (non-empty strings); any other is unknown.
static LogicalResult verifyNamedAttr(Operation *op, NamedAttribute attr,
                                     ArrayRef<StringRef> indexAttrs,
                                     ArrayRef<StringRef> stringAttrs,
                                     StringRef what) {
  StringRef name = attr.getName().getValue();
  if (llvm::is_contained(indexAttrs, name))
    return verifyIndexAttr(op, attr);
  if (name == NNDialect::kNameAttrName || llvm::is_contained(stringAttrs, name))
    return verifyStringAttr(op, attr);
  return op->emitError() << "unknown nn " << what << " attribute '" << name
                         << "'";
}

/// `nn.origin = {kind = "...", sources = ["...", ...]}` (NNBase.td).
static LogicalResult verifyOriginAttr(Operation *op, NamedAttribute attr) {
  auto dict = dyn_cast<DictionaryAttr>(attr.getValue());
  auto kind = dict ? dict.getAs<StringAttr>("kind") : StringAttr();
  auto sources = dict ? dict.getAs<ArrayAttr>("sources") : ArrayAttr();
  if (!kind || !sources || dict.size() != 2 ||
      !llvm::is_contained(ArrayRef<StringRef>{"parameter", "folded",
                                              "derived", "buffer",
                                              "constant"},
                          kind.getValue()) ||
      !llvm::all_of(sources, [](Attribute a) { return isa<StringAttr>(a); }))
    return op->emitError()
           << "'" << attr.getName().getValue()
           << "' must be {kind = \"parameter\"|\"folded\"|\"derived\"|"
              "\"buffer\"|\"constant\", sources = [strings]}";
  return success();
}

LogicalResult NNDialect::verifyRegionArgAttribute(Operation *op,
                                                  unsigned regionIndex,
                                                  unsigned argIndex,
                                                  NamedAttribute attr) {
  if (attr.getName() == kNoGradAttrName || attr.getName() == kFrozenAttrName) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitError() << "'" << attr.getName().getValue()
                             << "' must be a unit attribute";
    return success();
  }
  if (attr.getName() == kOriginAttrName)
    return verifyOriginAttr(op, attr);
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
  return verifyNamedAttr(
      op, attr, {kResidualAttrName, kGradOfResultAttrName, kCarryAttrName},
      {kRoleAttrName}, "argument");
}

LogicalResult NNDialect::verifyRegionResultAttribute(Operation *op,
                                                     unsigned regionIndex,
                                                     unsigned resultIndex,
                                                     NamedAttribute attr) {
  return verifyNamedAttr(op, attr,
                         {kResidualAttrName, kGradOfAttrName, kCarryAttrName},
                         {kUpdatesAttrName, kRoleAttrName}, "result");
}
