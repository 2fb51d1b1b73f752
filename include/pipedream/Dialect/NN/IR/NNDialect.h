//===- NNDialect.h - nn dialect ---------------------------------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_DIALECT_NN_IR_NNDIALECT_H
#define PIPEDREAM_DIALECT_NN_IR_NNDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Dialect.h"

#include "pipedream/Dialect/NN/IR/NNOpsDialect.h.inc"

#endif // PIPEDREAM_DIALECT_NN_IR_NNDIALECT_H
