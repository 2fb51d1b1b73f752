//===- Passes.h - nn dialect transformations --------------------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_DIALECT_NN_TRANSFORMS_PASSES_H
#define PIPEDREAM_DIALECT_NN_TRANSFORMS_PASSES_H

#include "pipedream/Dialect/NN/IR/NNDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"

namespace pipedream {
namespace nn {

#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "pipedream/Dialect/NN/Transforms/Passes.h.inc"

/// nn-fuse-activations' patterns: GELU spelled out in elementwise ops (the
/// erf form or the tanh approximation) becomes nn.gelu.
void populateFuseActivationPatterns(mlir::RewritePatternSet &patterns);

/// Applies populateFuseActivationPatterns to `op` (the ONNX importer calls
/// it on every module it makes).
mlir::LogicalResult fuseActivations(mlir::Operation *op);

} // namespace nn
} // namespace pipedream

#endif // PIPEDREAM_DIALECT_NN_TRANSFORMS_PASSES_H
