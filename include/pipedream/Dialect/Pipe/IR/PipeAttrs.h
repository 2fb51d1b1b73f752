//===- PipeAttrs.h - pipe dialect attributes --------------------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_DIALECT_PIPE_IR_PIPEATTRS_H
#define PIPEDREAM_DIALECT_PIPE_IR_PIPEATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"

#include "pipedream/Dialect/Pipe/IR/PipeDialect.h"

#include "pipedream/Dialect/Pipe/IR/PipeEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "pipedream/Dialect/Pipe/IR/PipeAttrs.h.inc"

#endif // PIPEDREAM_DIALECT_PIPE_IR_PIPEATTRS_H
