//===- InitAllDialects.h - register pipedream dialects ----------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_INITALLDIALECTS_H
#define PIPEDREAM_INITALLDIALECTS_H

#include "mlir/IR/DialectRegistry.h"
#include "pipedream/Dialect/NN/IR/NNDialect.h"
#include "pipedream/Dialect/Pipe/IR/PipeDialect.h"

namespace pipedream {

/// Adds every pipedream dialect to `registry`.
inline void registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<nn::NNDialect>();
  registry.insert<pipe::PipeDialect>();
}

} // namespace pipedream

#endif // PIPEDREAM_INITALLDIALECTS_H
