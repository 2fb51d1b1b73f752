//===- ModelLowering.h - steps of the driver other tools share --*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Pieces of the compiler driver (lib/Driver) that the other tools reuse
// (pipedream-profile lowers single ops the way pipedream-compile lowers
// models).
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_DRIVER_MODELLOWERING_H
#define PIPEDREAM_DRIVER_MODELLOWERING_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"

#include <string>

namespace pipedream {

/// Runs convert-nn-to-linalg on every function of `module` (with MLIR's
/// pass-manager command-line options, see registerDriverPasses). Errors
/// are diagnostics on `module`'s context.
mlir::LogicalResult convertNNToLinalg(mlir::ModuleOp module);

/// Drops the importer's nn.* / onnx.* argument, result and module
/// attributes (weight values can be large and mean nothing to the
/// lowering), before the CPU lowering.
void stripModelAttributes(mlir::ModuleOp module);

} // namespace pipedream

#endif // PIPEDREAM_DRIVER_MODELLOWERING_H
