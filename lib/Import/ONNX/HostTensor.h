//===- HostTensor.h - tensors evaluated at import time ----------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// A small host tensor and the kernels the importer uses to evaluate shape
// computations and constant subgraphs (Shape, Gather, Concat, Range,
// ConstantOfShape, arithmetic on shapes, ...) so that every tensor of the
// imported program is statically shaped.
//
// Values are kept widened: integers and booleans as int64_t (wrapped to the
// element type's width), floating-point values as double (rounded to the
// element type after every operation). Every kernel checks its arguments and
// returns an llvm::Error on bad input; none asserts.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_LIB_IMPORT_ONNX_HOSTTENSOR_H
#define PIPEDREAM_LIB_IMPORT_ONNX_HOSTTENSOR_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pipedream::onnx_import {

/// ONNX TensorProto.DataType values the importer understands.
enum DType : int32_t {
  kUndefined = 0,
  kFloat = 1,
  kUInt8 = 2,
  kInt8 = 3,
  kUInt16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kDouble = 11,
  kUInt32 = 12,
  kUInt64 = 13,
  kBFloat16 = 16,
};

/// True for the floating-point data types the importer supports.
bool isFloatDType(int32_t dtype);
/// True for the integer (signed or unsigned) and bool data types.
bool isIntegerDType(int32_t dtype);
/// True for every data type the importer can represent.
inline bool isSupportedDType(int32_t dtype) {
  return isFloatDType(dtype) || isIntegerDType(dtype);
}
/// Bytes per element in ONNX raw_data (bool: one byte).
int64_t dtypeByteWidth(int32_t dtype);
/// ONNX spelling of a data type ("float", "int64", ...).
std::string dtypeName(int32_t dtype);

/// An llvm::Error whose message is `message` (the importer's errors are one
/// line of text each, without the node's or file's name the caller adds).
llvm::Error makeError(const llvm::Twine &message);

/// Largest dimension and element count the importer accepts anywhere. Keeps
/// every size computation far from int64 overflow.
inline constexpr int64_t kMaxDim = int64_t(1) << 40;
inline constexpr int64_t kMaxElements = int64_t(1) << 48;

/// Product of `shape`, or std::nullopt when a dimension is negative or too
/// large, or the product exceeds kMaxElements.
std::optional<int64_t> checkedNumElements(llvm::ArrayRef<int64_t> shape);

/// A tensor whose value is known at import time.
struct HostTensor {
  int32_t dtype = kUndefined;
  llvm::SmallVector<int64_t> shape;
  /// Integer and bool data (bool as 0/1); empty for float types.
  std::vector<int64_t> ints;
  /// Floating-point data; empty for integer types.
  std::vector<double> floats;

  bool isFloat() const { return isFloatDType(dtype); }
  int64_t rank() const { return shape.size(); }
  int64_t numElements() const {
    return isFloat() ? int64_t(floats.size()) : int64_t(ints.size());
  }
  /// Element `i` as a double / int64 whatever the storage.
  double getDouble(int64_t i) const {
    return isFloat() ? floats[i] : double(ints[i]);
  }
  int64_t getInt(int64_t i) const;

  /// A zero-filled tensor; the caller guarantees a valid shape.
  static HostTensor zeros(int32_t dtype, llvm::ArrayRef<int64_t> shape);
  static HostTensor fromInts(int32_t dtype, llvm::ArrayRef<int64_t> shape,
                             std::vector<int64_t> values);
  static HostTensor fromFloats(int32_t dtype, llvm::ArrayRef<int64_t> shape,
                               std::vector<double> values);
  /// Sets element `i`, rounding/wrapping to the element type.
  void set(int64_t i, double value);
  void setInt(int64_t i, int64_t value);
};

/// Rounds `value` to the precision of float type `dtype`.
double roundToDType(int32_t dtype, double value);
/// Wraps `value` to the width (and signedness) of integer type `dtype`.
int64_t wrapToDType(int32_t dtype, int64_t value);

/// Limits the total number of elements folding may create in one import
/// (a hostile model can ask for ConstantOfShape([1e9, 1e9]), or copy a large
/// constant through a long chain of Reshapes). Kernels check `fits` before
/// they allocate; every folded result is charged once it exists.
class FoldBudget {
public:
  explicit FoldBudget(int64_t limit) : left(limit) {}
  /// An error when `elements` more would exceed the budget.
  llvm::Error fits(int64_t elements) const;
  /// Charges `elements`; an error (nothing charged) when over the budget.
  llvm::Error charge(int64_t elements);

private:
  int64_t left;
};

//===----------------------------------------------------------------------===//
// Kernels. Each returns its result or the error that prevents it.
//===----------------------------------------------------------------------===//

using HostResult = llvm::Expected<HostTensor>;

enum class BinaryKind {
  Add, Sub, Mul, Div, Pow, Mod, FMod, Min, Max,
  Equal, Less, Greater, LessOrEqual, GreaterOrEqual, And, Or, Xor,
};
enum class UnaryKind {
  Neg, Abs, Sqrt, Exp, Log, Tanh, Erf, Sigmoid, Relu, Floor, Ceil,
  Reciprocal, Not, Identity,
};
enum class ReduceKind { Sum, Mean, Max, Min, Prod };

HostResult foldBinary(BinaryKind kind, const HostTensor &lhs,
                      const HostTensor &rhs, FoldBudget &budget);
HostResult foldUnary(UnaryKind kind, const HostTensor &input);
HostResult foldLeakyRelu(const HostTensor &input, double alpha);
HostResult foldClip(const HostTensor &input, std::optional<double> min,
                    std::optional<double> max);
HostResult foldWhere(const HostTensor &cond, const HostTensor &lhs,
                     const HostTensor &rhs, FoldBudget &budget);
HostResult foldCast(const HostTensor &input, int32_t to);
/// `shape` must have the input's element count (checked).
HostResult foldReshape(const HostTensor &input, llvm::ArrayRef<int64_t> shape);
HostResult foldTranspose(const HostTensor &input, llvm::ArrayRef<int64_t> perm);
/// Resolved slice: one start/size/step per dimension, in range.
HostResult foldSlice(const HostTensor &input, llvm::ArrayRef<int64_t> starts,
                     llvm::ArrayRef<int64_t> sizes,
                     llvm::ArrayRef<int64_t> steps);
HostResult foldGather(const HostTensor &data, const HostTensor &indices,
                      int64_t axis, FoldBudget &budget);
HostResult foldConcat(llvm::ArrayRef<const HostTensor *> inputs, int64_t axis);
HostResult foldExpand(const HostTensor &input, llvm::ArrayRef<int64_t> shape,
                      FoldBudget &budget);
HostResult foldReduce(ReduceKind kind, const HostTensor &input,
                      llvm::ArrayRef<int64_t> axes, bool keepdims);
HostResult foldTrilu(const HostTensor &input, int64_t k, bool upper);

/// "[2, 3]" for messages.
std::string shapeToString(llvm::ArrayRef<int64_t> shape);

} // namespace pipedream::onnx_import

#endif // PIPEDREAM_LIB_IMPORT_ONNX_HOSTTENSOR_H
