//===- NNInterfaces.h - gradient and cost interfaces ------------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_DIALECT_NN_IR_NNINTERFACES_H
#define PIPEDREAM_DIALECT_NN_IR_NNINTERFACES_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/TypeUtilities.h"

namespace pipedream::nn::detail {
/// One operation per result element (elementwise ops).
int64_t defaultForwardFlops(mlir::Operation *op);
/// Every operand and result byte read or written once.
int64_t defaultForwardBytes(mlir::Operation *op);
} // namespace pipedream::nn::detail

#include "pipedream/Dialect/NN/IR/NNInterfaces.h.inc"

#endif // PIPEDREAM_DIALECT_NN_IR_NNINTERFACES_H
