//===- Decompose.h - building ONNX ops from nn ops --------------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Small builders for the converters that express an ONNX op as a
// composition of existing nn ops (ConvertIndexing.cpp, ConvertLayers.cpp):
// such a decomposition gets the nn ops' verifiers, lowerings, derivative
// rules, costs and GPU mapping for free. Every builder returns null once the
// node has failed, so chains need one check at the end.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_LIB_IMPORT_ONNX_DECOMPOSE_H
#define PIPEDREAM_LIB_IMPORT_ONNX_DECOMPOSE_H

#include "Importer.h"

namespace pipedream::onnx_import::decompose {

inline mlir::RankedTensorType typeOf(mlir::Value v) {
  return llvm::cast<mlir::RankedTensorType>(v.getType());
}

/// `x` reshaped to `shape` (no op when it already has it).
inline mlir::Value reshape(NodeContext &ctx, mlir::Value x,
                           llvm::ArrayRef<int64_t> shape) {
  if (!x)
    return nullptr;
  if (typeOf(x).getShape() == shape)
    return x;
  return ctx.createValue<nn::ReshapeOp>(x, ctx.i64s(shape));
}

/// `x` permuted by `perm` (no op for the identity).
inline mlir::Value transpose(NodeContext &ctx, mlir::Value x,
                             llvm::ArrayRef<int64_t> perm) {
  if (!x)
    return nullptr;
  if (llvm::equal(perm, llvm::seq<int64_t>(0, int64_t(perm.size()))))
    return x;
  return ctx.createValue<nn::TransposeOp>(x, ctx.i64s(perm));
}

/// A constant of element type `elementType` (float or integer) and `shape`
/// holding `values` (row-major).
inline mlir::Value constant(NodeContext &ctx, mlir::Type elementType,
                            llvm::ArrayRef<int64_t> shape,
                            std::vector<double> values) {
  if (ctx.failed())
    return nullptr;
  int32_t dtype = getDType(elementType);
  if (isFloatDType(dtype))
    return ctx.constantValue(HostTensor::fromFloats(dtype, shape, values));
  std::vector<int64_t> ints(values.begin(), values.end());
  return ctx.constantValue(HostTensor::fromInts(dtype, shape, ints));
}

/// A rank-0 constant of `elementType`.
inline mlir::Value scalar(NodeContext &ctx, mlir::Type elementType,
                          double value) {
  return constant(ctx, elementType, {}, {value});
}

/// An i64 index table of `shape`.
inline mlir::Value indexTable(NodeContext &ctx, llvm::ArrayRef<int64_t> shape,
                              std::vector<int64_t> values) {
  if (ctx.failed())
    return nullptr;
  return ctx.constantValue(HostTensor::fromInts(kInt64, shape, values));
}

/// `op(lhs, rhs)` for a broadcasting binary nn op; null when either is null.
template <typename OpTy>
mlir::Value binary(NodeContext &ctx, mlir::Value lhs, mlir::Value rhs) {
  if (!lhs || !rhs)
    return nullptr;
  return ctx.createValue<OpTy>(lhs, rhs);
}

/// Mean over `axes` (sorted), keeping them as size 1.
inline mlir::Value mean(NodeContext &ctx, mlir::Value x,
                        llvm::ArrayRef<int64_t> axes) {
  if (!x)
    return nullptr;
  return ctx.createValue<nn::ReduceMeanOp>(x, ctx.i64s(axes),
                                           ctx.boolean(true));
}

/// A slice of `x` along one axis: `size` elements from `start` by `step`
/// (no op when it is all of `x`).
inline mlir::Value sliceAxis(NodeContext &ctx, mlir::Value x, int64_t axis,
                             int64_t start, int64_t size, int64_t step = 1) {
  if (!x)
    return nullptr;
  llvm::ArrayRef<int64_t> shape = typeOf(x).getShape();
  llvm::SmallVector<int64_t> starts(shape.size(), 0), sizes(shape),
      steps(shape.size(), 1);
  starts[axis] = start;
  sizes[axis] = size;
  steps[axis] = size > 1 ? step : 1;
  if (llvm::ArrayRef<int64_t>(sizes) == shape && step == 1)
    return x;
  return ctx.createValue<nn::SliceOp>(x, ctx.i64s(starts), ctx.i64s(sizes),
                                      ctx.i64s(steps));
}

/// `[from, to)` as a list.
inline llvm::SmallVector<int64_t> range(int64_t from, int64_t to) {
  return llvm::to_vector(llvm::seq<int64_t>(from, to));
}

} // namespace pipedream::onnx_import::decompose

#endif // PIPEDREAM_LIB_IMPORT_ONNX_DECOMPOSE_H
