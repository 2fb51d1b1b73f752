//===- PipeDialect.h - pipe dialect -----------------------------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_DIALECT_PIPE_IR_PIPEDIALECT_H
#define PIPEDREAM_DIALECT_PIPE_IR_PIPEDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Dialect.h"

#include "pipedream/Dialect/Pipe/IR/PipeOpsDialect.h.inc"

#endif // PIPEDREAM_DIALECT_PIPE_IR_PIPEDIALECT_H
