//===- ConvertUnsigned.cpp - unsigned integers and BitShift ---------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// ONNX's uint8..uint64 are MLIR's unsigned integer types (ui8..ui64) in nn.
// Their arithmetic differs from the signed one in division, remainder,
// comparisons, min/max, conversions to and from float and widening; the
// lowering picks the unsigned arith op for those (NNToLinalg), then drops
// the signedness. Only the ops listed here, whose lowering does, may read
// or produce unsigned values: any other op reports "not supported" rather
// than compute a signed result silently. BitShift (unsigned only) is here.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace pipedream;
using namespace pipedream::onnx_import;

bool onnx_import::isUnsignedAwareOp(StringRef opType,
                                    const ImportedValue &value,
                                    std::string &why) {
  // Pure data movement and the elementwise ops whose lowering has an
  // unsigned form (docs/Importer.md, "Unsigned integers").
  static const llvm::StringSet<> kOps = {
      "Identity",    "Constant", "Reshape",
      "Flatten",     "Squeeze",  "Unsqueeze",
      "Transpose",   "Concat",   "Shape",
      "Size",        "Slice",    "Expand",
      "Gather",      "Equal",    "Where",
      "Add",         "Sub",      "Mul",
      "Div",         "Mod",      "Max",
      "Min",         "Sum",      "Less",
      "LessOrEqual", "Greater",  "GreaterOrEqual",
      "Pow",         "BitShift", "Cast",
      "CastLike",    "MaxPool",  "Clip"};
  if (!kOps.contains(opType))
    return false;
  // NOTE: import-time folding keeps integers as int64: a uint64 above
  // INT64_MAX is stored as its bits, right for the wrapping ops and the
  // data movement, wrong for the order-dependent ones.
  static const llvm::StringSet<> kOrdered = {
      "Div",  "Mod",         "Max",     "Min",
      "Less", "LessOrEqual", "Greater", "GreaterOrEqual",
      "Pow",  "BitShift",    "Cast",    "CastLike",
      "Clip"};
  if (value.constant && kOrdered.contains(opType) &&
      value.type.getElementType().isUnsignedInteger(64) &&
      llvm::any_of(value.constant->ints, [](int64_t v) { return v < 0; })) {
    why = "a uint64 constant above 2^63 - 1 is not evaluated at import";
    return false;
  }
  return true;
}

/// BitShift (opset 11): `X << Y` or the logical `X >> Y`, unsigned
/// integers of one type, numpy broadcasting.
static void convertBitShift(NodeContext &ctx) {
  if (!ctx.requireInputs(2))
    return;
  std::string direction = ctx.stringAttr("direction", "");
  if (ctx.failed())
    return;
  if (direction != "LEFT" && direction != "RIGHT") {
    ctx.fail("attribute 'direction' must be \"LEFT\" or \"RIGHT\"");
    return;
  }
  RankedTensorType x = ctx.inputType(0), y = ctx.inputType(1);
  if (!x || !y)
    return;
  if (!x.getElementType().isUnsignedInteger() ||
      x.getElementType() != y.getElementType()) {
    ctx.unsupported("operands of element types " +
                    dtypeName(getDType(x.getElementType())) + " and " +
                    dtypeName(getDType(y.getElementType())) +
                    " (BitShift takes one unsigned integer type)");
    return;
  }
  Value lhs = ctx.operand(0), rhs = ctx.operand(1);
  if (lhs && rhs)
    ctx.setOutput(0, ctx.createValue<nn::BitShiftOp>(
                         lhs, rhs, ctx.boolean(direction == "LEFT")));
}

void onnx_import::registerUnsignedOps(OpTable &table) {
  table["BitShift"] = {convertBitShift, {11}};
}
