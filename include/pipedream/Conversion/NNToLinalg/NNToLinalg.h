//===- NNToLinalg.h - nn to linalg conversion -------------------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Lowering of the nn dialect to upstream linalg, tensor, arith and math on
// tensors (`convert-nn-to-linalg`).
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_CONVERSION_NNTOLINALG_NNTOLINALG_H
#define PIPEDREAM_CONVERSION_NNTOLINALG_NNTOLINALG_H

#include <memory>

namespace mlir {
class Pass;
class RewritePatternSet;
} // namespace mlir

namespace pipedream {

#define GEN_PASS_DECL_CONVERTNNTOLINALGPASS
#include "pipedream/Conversion/Passes.h.inc"

/// Choices a client of the patterns can make.
struct NNToLinalgOptions {
  /// Replace `linalg.softmax` by its decomposition into `linalg.generic` ops
  /// (the CPU pipeline cannot lower `linalg.softmax` itself).
  bool decomposeSoftmax = true;
};

/// Adds the patterns lowering every nn op to linalg/tensor/arith/math. The
/// patterns are conversion patterns: apply them with a ConversionTarget that
/// marks the nn dialect illegal (as `convert-nn-to-linalg` does).
void populateNNToLinalgConversionPatterns(
    mlir::RewritePatternSet &patterns, const NNToLinalgOptions &options = {});

/// Creates the `convert-nn-to-linalg` pass with default options.
std::unique_ptr<mlir::Pass> createConvertNNToLinalgPass();

} // namespace pipedream

#endif // PIPEDREAM_CONVERSION_NNTOLINALG_NNTOLINALG_H
