//===- NNInterfaces.cpp - gradient and cost interfaces --------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Dialect/NN/IR/NNInterfaces.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;

#include "pipedream/Dialect/NN/IR/NNInterfaces.cpp.inc"

static int64_t elementCount(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  if (!shaped)
    return 1;
  return shaped.hasStaticShape() ? shaped.getNumElements() : 0;
}

static int64_t byteSize(Type type) {
  Type element = getElementTypeOrSelf(type);
  // i1 is stored as one byte.
  int64_t bytes = (element.getIntOrFloatBitWidth() + 7) / 8;
  return elementCount(type) * bytes;
}

int64_t pipedream::nn::detail::defaultForwardFlops(Operation *op) {
  int64_t flops = 0;
  for (Type type : op->getResultTypes())
    flops += elementCount(type);
  return flops;
}

int64_t pipedream::nn::detail::defaultForwardBytes(Operation *op) {
  int64_t bytes = 0;
  for (Type type : op->getOperandTypes())
    bytes += byteSize(type);
  for (Type type : op->getResultTypes())
    bytes += byteSize(type);
  return bytes;
}
