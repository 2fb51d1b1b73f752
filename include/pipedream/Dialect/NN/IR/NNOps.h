//===- NNOps.h - nn dialect operations --------------------------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_DIALECT_NN_IR_NNOPS_H
#define PIPEDREAM_DIALECT_NN_IR_NNOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "pipedream/Dialect/NN/IR/NNDialect.h"
#include "pipedream/Dialect/NN/IR/NNInterfaces.h"

namespace pipedream::nn::detail {
/// Result type of a broadcasting binary op (ONNX multidirectional
/// broadcasting); element type of `lhs`, or `i1` when `boolResult`.
/// Emits an error at `loc` (when given) and fails on incompatible shapes.
llvm::LogicalResult
inferBroadcastBinaryOp(llvm::StringRef opName,
                       std::optional<mlir::Location> loc, mlir::Type lhs,
                       mlir::Type rhs, bool boolResult,
                       llvm::SmallVectorImpl<mlir::Type> &inferred);

/// ONNX multidirectional broadcast of static shapes; std::nullopt when the
/// shapes are incompatible.
std::optional<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<int64_t> lhs, llvm::ArrayRef<int64_t> rhs);
} // namespace pipedream::nn::detail

#define GET_OP_CLASSES
#include "pipedream/Dialect/NN/IR/NNOps.h.inc"

#endif // PIPEDREAM_DIALECT_NN_IR_NNOPS_H
