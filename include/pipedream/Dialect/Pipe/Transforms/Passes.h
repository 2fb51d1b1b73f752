//===- Passes.h - pipe dialect transformations ------------------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_DIALECT_PIPE_TRANSFORMS_PASSES_H
#define PIPEDREAM_DIALECT_PIPE_TRANSFORMS_PASSES_H

#include "pipedream/Dialect/Pipe/IR/PipeDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace pipedream {
namespace pipe {

#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "pipedream/Dialect/Pipe/Transforms/Passes.h.inc"

} // namespace pipe
} // namespace pipedream

#endif // PIPEDREAM_DIALECT_PIPE_TRANSFORMS_PASSES_H
