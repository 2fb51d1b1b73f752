//===- HostTensor.cpp - tensors evaluated at import time ------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "HostTensor.h"

#include "pipedream/Dialect/NN/IR/NNOps.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace pipedream::onnx_import;
using llvm::ArrayRef;
using llvm::SmallVector;

llvm::Error pipedream::onnx_import::makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

//===----------------------------------------------------------------------===//
// Data types
//===----------------------------------------------------------------------===//

bool pipedream::onnx_import::isFloatDType(int32_t dtype) {
  return dtype == kFloat || dtype == kDouble || dtype == kFloat16 ||
         dtype == kBFloat16;
}

bool pipedream::onnx_import::isIntegerDType(int32_t dtype) {
  switch (dtype) {
  case kUInt8:
  case kInt8:
  case kUInt16:
  case kInt16:
  case kInt32:
  case kInt64:
  case kBool:
  case kUInt32:
  case kUInt64:
    return true;
  default:
    return false;
  }
}

int64_t pipedream::onnx_import::dtypeByteWidth(int32_t dtype) {
  switch (dtype) {
  case kUInt8:
  case kInt8:
  case kBool:
    return 1;
  case kUInt16:
  case kInt16:
  case kFloat16:
  case kBFloat16:
    return 2;
  case kFloat:
  case kInt32:
  case kUInt32:
    return 4;
  case kDouble:
  case kInt64:
  case kUInt64:
    return 8;
  default:
    return 0;
  }
}

std::string pipedream::onnx_import::dtypeName(int32_t dtype) {
  switch (dtype) {
  case kFloat: return "float";
  case kUInt8: return "uint8";
  case kInt8: return "int8";
  case kUInt16: return "uint16";
  case kInt16: return "int16";
  case kInt32: return "int32";
  case kInt64: return "int64";
  case kString: return "string";
  case kBool: return "bool";
  case kFloat16: return "float16";
  case kDouble: return "double";
  case kUInt32: return "uint32";
  case kUInt64: return "uint64";
  case 14: return "complex64";
  case 15: return "complex128";
  case kBFloat16: return "bfloat16";
  default: return "data type " + std::to_string(dtype);
  }
}

std::optional<int64_t>
pipedream::onnx_import::checkedNumElements(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || d > kMaxDim)
      return std::nullopt;
    if (llvm::MulOverflow(n, d, n) || n > kMaxElements)
      return std::nullopt;
  }
  return n;
}

std::string pipedream::onnx_import::shapeToString(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (auto [i, d] : llvm::enumerate(shape)) {
    if (i)
      s += ", ";
    s += std::to_string(d);
  }
  return s + "]";
}

//===----------------------------------------------------------------------===//
// Element conversion
//===----------------------------------------------------------------------===//

double pipedream::onnx_import::roundToDType(int32_t dtype, double value) {
  const llvm::fltSemantics *sem = nullptr;
  switch (dtype) {
  case kFloat:
    sem = &llvm::APFloat::IEEEsingle();
    break;
  case kFloat16:
    sem = &llvm::APFloat::IEEEhalf();
    break;
  case kBFloat16:
    sem = &llvm::APFloat::BFloat();
    break;
  default:
    return value;
  }
  // APFloat rather than a C++ cast: out-of-range values become infinities
  // without undefined behaviour.
  llvm::APFloat f(value);
  bool lost = false;
  f.convert(*sem, llvm::APFloat::rmNearestTiesToEven, &lost);
  f.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven,
            &lost);
  return f.convertToDouble();
}

int64_t pipedream::onnx_import::wrapToDType(int32_t dtype, int64_t value) {
  uint64_t u = uint64_t(value);
  switch (dtype) {
  case kBool:
    return value != 0;
  case kUInt8:
    return int64_t(u & 0xffu);
  case kInt8:
    return int64_t(int8_t(uint8_t(u & 0xffu)));
  case kUInt16:
    return int64_t(u & 0xffffu);
  case kInt16:
    return int64_t(int16_t(uint16_t(u & 0xffffu)));
  case kUInt32:
    return int64_t(u & 0xffffffffu);
  case kInt32:
    return int64_t(int32_t(uint32_t(u & 0xffffffffu)));
  default:
    return value;
  }
}

/// Float to integer conversion without undefined behaviour: truncates toward
/// zero, NaN becomes 0 and out-of-range values saturate.
static int64_t doubleToInt(double v) {
  if (std::isnan(v))
    return 0;
  if (v >= 9.2233720368547758e18)
    return std::numeric_limits<int64_t>::max();
  if (v <= -9.2233720368547758e18)
    return std::numeric_limits<int64_t>::min();
  return int64_t(v);
}

int64_t HostTensor::getInt(int64_t i) const {
  return isFloat() ? doubleToInt(floats[i]) : ints[i];
}

/// A tensor of `dtype` and `shape` with no elements yet: what the factories
/// below fill.
static HostTensor withShape(int32_t dtype, ArrayRef<int64_t> shape) {
  HostTensor t;
  t.dtype = dtype;
  t.shape.assign(shape.begin(), shape.end());
  return t;
}

HostTensor HostTensor::zeros(int32_t dtype, ArrayRef<int64_t> shape) {
  HostTensor t = withShape(dtype, shape);
  int64_t n = checkedNumElements(shape).value_or(0);
  if (isFloatDType(dtype))
    t.floats.assign(n, 0.0);
  else
    t.ints.assign(n, 0);
  return t;
}

HostTensor HostTensor::fromInts(int32_t dtype, ArrayRef<int64_t> shape,
                                std::vector<int64_t> values) {
  HostTensor t = withShape(dtype, shape);
  if (isFloatDType(dtype)) {
    for (int64_t v : values)
      t.floats.push_back(roundToDType(dtype, double(v)));
  } else {
    for (int64_t &v : values)
      v = wrapToDType(dtype, v);
    t.ints = std::move(values);
  }
  return t;
}

HostTensor HostTensor::fromFloats(int32_t dtype, ArrayRef<int64_t> shape,
                                  std::vector<double> values) {
  HostTensor t = withShape(dtype, shape);
  if (isFloatDType(dtype)) {
    for (double &v : values)
      v = roundToDType(dtype, v);
    t.floats = std::move(values);
  } else {
    for (double v : values)
      t.ints.push_back(wrapToDType(dtype, doubleToInt(v)));
  }
  return t;
}

void HostTensor::set(int64_t i, double value) {
  if (isFloat())
    floats[i] = roundToDType(dtype, value);
  else
    ints[i] = wrapToDType(dtype, doubleToInt(value));
}

void HostTensor::setInt(int64_t i, int64_t value) {
  if (isFloat())
    floats[i] = roundToDType(dtype, double(value));
  else
    ints[i] = wrapToDType(dtype, value);
}

llvm::Error FoldBudget::fits(int64_t elements) const {
  if (elements < 0 || elements > left)
    return makeError("folding would create " + std::to_string(elements) +
                     " elements, more than the " + std::to_string(left) +
                     " left in the import's budget");
  return llvm::Error::success();
}

llvm::Error FoldBudget::charge(int64_t elements) {
  if (llvm::Error e = fits(elements))
    return e;
  left -= elements;
  return llvm::Error::success();
}

/// Whether a result of `elements` (checkedNumElements of its shape) fits
/// in `budget`.
static llvm::Error fitsBudget(std::optional<int64_t> elements,
                              const FoldBudget &budget) {
  if (!elements)
    return makeError("folding would create more than " +
                     std::to_string(kMaxElements) + " elements");
  return budget.fits(*elements);
}

//===----------------------------------------------------------------------===//
// Indexing helpers
//===----------------------------------------------------------------------===//

static SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t i = int64_t(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

/// For every element of `out` (row-major), the flat index of the element of
/// a tensor of shape `in` that broadcasts to it.
static std::vector<int64_t> broadcastIndices(ArrayRef<int64_t> out,
                                             ArrayRef<int64_t> in) {
  size_t rank = out.size(), offset = rank - in.size();
  SmallVector<int64_t> inStrides = stridesOf(in);
  // Stride 0 along broadcast dimensions.
  SmallVector<int64_t> strides(rank, 0);
  for (size_t i = 0; i < in.size(); ++i)
    strides[i + offset] = in[i] == 1 ? 0 : inStrides[i];
  int64_t n = checkedNumElements(out).value_or(0);
  std::vector<int64_t> result;
  result.reserve(n);
  SmallVector<int64_t> counter(rank, 0);
  int64_t index = 0;
  for (int64_t e = 0; e < n; ++e) {
    result.push_back(index);
    for (int64_t d = int64_t(rank) - 1; d >= 0; --d) {
      index += strides[d];
      if (++counter[d] < out[d])
        break;
      index -= strides[d] * out[d];
      counter[d] = 0;
    }
  }
  return result;
}

static llvm::Expected<SmallVector<int64_t>>
broadcastOrError(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  auto shape = pipedream::nn::detail::broadcastShapes(a, b);
  if (!shape)
    return makeError("shapes " + shapeToString(a) + " and " + shapeToString(b) +
                     " are not broadcast-compatible");
  return std::move(*shape);
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

static bool isComparison(BinaryKind kind) {
  switch (kind) {
  case BinaryKind::Equal:
  case BinaryKind::Less:
  case BinaryKind::Greater:
  case BinaryKind::LessOrEqual:
  case BinaryKind::GreaterOrEqual:
    return true;
  default:
    return false;
  }
}

static bool isLogical(BinaryKind kind) {
  return kind == BinaryKind::And || kind == BinaryKind::Or ||
         kind == BinaryKind::Xor;
}

static int64_t wrapAdd(int64_t a, int64_t b) {
  return int64_t(uint64_t(a) + uint64_t(b));
}
static int64_t wrapSub(int64_t a, int64_t b) {
  return int64_t(uint64_t(a) - uint64_t(b));
}
static int64_t wrapMul(int64_t a, int64_t b) {
  return int64_t(uint64_t(a) * uint64_t(b));
}

/// min, max and the comparisons (1 or 0), which read the same on doubles and
/// on integers; 0 for the other kinds.
template <typename T>
static T foldOrdered(BinaryKind kind, T a, T b) {
  switch (kind) {
  case BinaryKind::Min: return std::min(a, b);
  case BinaryKind::Max: return std::max(a, b);
  case BinaryKind::Equal: return a == b;
  case BinaryKind::Less: return a < b;
  case BinaryKind::Greater: return a > b;
  case BinaryKind::LessOrEqual: return a <= b;
  case BinaryKind::GreaterOrEqual: return a >= b;
  default: return 0;
  }
}

HostResult pipedream::onnx_import::foldBinary(BinaryKind kind,
                                              const HostTensor &lhs,
                                              const HostTensor &rhs,
                                              FoldBudget &budget) {
  if (kind != BinaryKind::Pow && lhs.dtype != rhs.dtype)
    return makeError("operand element types differ: " + dtypeName(lhs.dtype) +
                     " vs " + dtypeName(rhs.dtype));
  if (isLogical(kind) && (lhs.dtype != kBool || rhs.dtype != kBool))
    return makeError("logical operators need bool operands");
  auto shape = broadcastOrError(lhs.shape, rhs.shape);
  if (!shape)
    return shape.takeError();
  auto n = checkedNumElements(*shape);
  if (llvm::Error e = fitsBudget(n, budget))
    return std::move(e);
  std::vector<int64_t> li = broadcastIndices(*shape, lhs.shape);
  std::vector<int64_t> ri = broadcastIndices(*shape, rhs.shape);
  int32_t dtype = isComparison(kind) ? int32_t(kBool) : lhs.dtype;
  HostTensor out = HostTensor::zeros(dtype, *shape);
  bool floatMath = lhs.isFloat() || rhs.isFloat();
  for (int64_t e = 0; e < *n; ++e) {
    if (floatMath || kind == BinaryKind::Pow) {
      double a = lhs.getDouble(li[e]), b = rhs.getDouble(ri[e]);
      double r = 0;
      switch (kind) {
      case BinaryKind::Add: r = a + b; break;
      case BinaryKind::Sub: r = a - b; break;
      case BinaryKind::Mul: r = a * b; break;
      case BinaryKind::Div: r = a / b; break;
      case BinaryKind::Pow: r = std::pow(a, b); break;
      case BinaryKind::Mod:
      case BinaryKind::FMod: r = std::fmod(a, b); break;
      default: r = foldOrdered(kind, a, b); break;
      }
      if (kind == BinaryKind::Pow && !lhs.isFloat())
        out.setInt(e, doubleToInt(r));
      else
        out.set(e, r);
      continue;
    }
    int64_t a = lhs.ints[li[e]], b = rhs.ints[ri[e]];
    int64_t r = 0;
    switch (kind) {
    case BinaryKind::Add: r = wrapAdd(a, b); break;
    case BinaryKind::Sub: r = wrapSub(a, b); break;
    case BinaryKind::Mul: r = wrapMul(a, b); break;
    case BinaryKind::Div:
    case BinaryKind::Mod:
    case BinaryKind::FMod:
      if (b == 0)
        return makeError("integer division by zero");
      if (b == -1) {
        // Avoid INT64_MIN / -1 overflow.
        r = kind == BinaryKind::Div ? wrapSub(0, a) : 0;
        break;
      }
      if (kind == BinaryKind::Div) {
        r = a / b;
      } else {
        r = a % b;
        // Mod (fmod = 0) takes the sign of the divisor, like Python.
        if (kind == BinaryKind::Mod && r != 0 && ((r < 0) != (b < 0)))
          r += b;
      }
      break;
    case BinaryKind::And: r = a && b; break;
    case BinaryKind::Or: r = a || b; break;
    case BinaryKind::Xor: r = (a != 0) != (b != 0); break;
    default: r = foldOrdered(kind, a, b); break;
    }
    out.setInt(e, r);
  }
  return out;
}

HostResult pipedream::onnx_import::foldUnary(UnaryKind kind,
                                             const HostTensor &input) {
  bool floatOnly = kind == UnaryKind::Sqrt || kind == UnaryKind::Exp ||
                   kind == UnaryKind::Log || kind == UnaryKind::Tanh ||
                   kind == UnaryKind::Erf || kind == UnaryKind::Sigmoid ||
                   kind == UnaryKind::Floor || kind == UnaryKind::Ceil ||
                   kind == UnaryKind::Reciprocal;
  if (floatOnly && !input.isFloat())
    return makeError("expects a floating-point input, got " +
                     dtypeName(input.dtype));
  if (kind == UnaryKind::Not && input.dtype != kBool)
    return makeError("expects a bool input, got " + dtypeName(input.dtype));
  HostTensor out = input;
  for (int64_t e = 0, n = input.numElements(); e < n; ++e) {
    if (!input.isFloat()) {
      int64_t a = input.ints[e];
      switch (kind) {
      case UnaryKind::Neg: out.setInt(e, wrapSub(0, a)); break;
      case UnaryKind::Abs: out.setInt(e, a < 0 ? wrapSub(0, a) : a); break;
      case UnaryKind::Relu: out.setInt(e, std::max<int64_t>(a, 0)); break;
      case UnaryKind::Not: out.setInt(e, !a); break;
      default: break;
      }
      continue;
    }
    double a = input.floats[e], r = a;
    switch (kind) {
    case UnaryKind::Neg: r = -a; break;
    case UnaryKind::Abs: r = std::fabs(a); break;
    case UnaryKind::Sqrt: r = std::sqrt(a); break;
    case UnaryKind::Exp: r = std::exp(a); break;
    case UnaryKind::Log: r = std::log(a); break;
    case UnaryKind::Tanh: r = std::tanh(a); break;
    case UnaryKind::Erf: r = std::erf(a); break;
    case UnaryKind::Sigmoid: r = 1.0 / (1.0 + std::exp(-a)); break;
    case UnaryKind::Relu: r = a > 0 ? a : 0.0; break;
    case UnaryKind::Floor: r = std::floor(a); break;
    case UnaryKind::Ceil: r = std::ceil(a); break;
    case UnaryKind::Reciprocal: r = 1.0 / a; break;
    default: break;
    }
    out.set(e, r);
  }
  return out;
}

HostResult pipedream::onnx_import::foldLeakyRelu(const HostTensor &input,
                                                 double alpha) {
  if (!input.isFloat())
    return makeError("expects a floating-point input");
  HostTensor out = input;
  for (int64_t e = 0, n = input.numElements(); e < n; ++e)
    out.set(e, input.floats[e] >= 0 ? input.floats[e]
                                    : alpha * input.floats[e]);
  return out;
}

HostResult pipedream::onnx_import::foldClip(const HostTensor &input,
                                            std::optional<double> min,
                                            std::optional<double> max) {
  HostTensor out = input;
  for (int64_t e = 0, n = input.numElements(); e < n; ++e) {
    double v = input.getDouble(e);
    if (min && v < *min)
      v = *min;
    if (max && v > *max)
      v = *max;
    if (input.isFloat())
      out.set(e, v);
    else
      out.setInt(e, doubleToInt(v));
  }
  return out;
}

HostResult pipedream::onnx_import::foldWhere(const HostTensor &cond,
                                             const HostTensor &lhs,
                                             const HostTensor &rhs,
                                             FoldBudget &budget) {
  if (cond.dtype != kBool)
    return makeError("condition must be bool, got " + dtypeName(cond.dtype));
  if (lhs.dtype != rhs.dtype)
    return makeError("operand element types differ: " + dtypeName(lhs.dtype) +
                     " vs " + dtypeName(rhs.dtype));
  auto condLhs = broadcastOrError(cond.shape, lhs.shape);
  if (!condLhs)
    return condLhs.takeError();
  auto shape = broadcastOrError(*condLhs, rhs.shape);
  if (!shape)
    return shape.takeError();
  auto n = checkedNumElements(*shape);
  if (llvm::Error e = fitsBudget(n, budget))
    return std::move(e);
  std::vector<int64_t> ci = broadcastIndices(*shape, cond.shape);
  std::vector<int64_t> li = broadcastIndices(*shape, lhs.shape);
  std::vector<int64_t> ri = broadcastIndices(*shape, rhs.shape);
  HostTensor out = HostTensor::zeros(lhs.dtype, *shape);
  for (int64_t e = 0; e < *n; ++e) {
    const HostTensor &src = cond.ints[ci[e]] ? lhs : rhs;
    int64_t idx = cond.ints[ci[e]] ? li[e] : ri[e];
    if (out.isFloat())
      out.floats[e] = src.floats[idx];
    else
      out.ints[e] = src.ints[idx];
  }
  return out;
}

HostResult pipedream::onnx_import::foldCast(const HostTensor &input,
                                            int32_t to) {
  if (!isSupportedDType(to))
    return makeError("cannot cast to " + dtypeName(to));
  HostTensor out = HostTensor::zeros(to, input.shape);
  for (int64_t e = 0, n = input.numElements(); e < n; ++e) {
    if (input.isFloat()) {
      double v = input.floats[e];
      if (to == kBool)
        out.setInt(e, v != 0.0);
      else
        out.set(e, v);
    } else {
      // Unsigned 64-bit values above INT64_MAX are kept as their bits.
      out.setInt(e, input.ints[e]);
    }
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

HostResult pipedream::onnx_import::foldReshape(const HostTensor &input,
                                               ArrayRef<int64_t> shape) {
  auto n = checkedNumElements(shape);
  if (!n || *n != input.numElements())
    return makeError("cannot reshape " + shapeToString(input.shape) + " to " +
                     shapeToString(shape));
  HostTensor out = input;
  out.shape.assign(shape.begin(), shape.end());
  return out;
}

/// Copies the elements of `input` at `indices` (flat) into a new tensor of
/// `shape`.
static HostTensor gatherFlat(const HostTensor &input, ArrayRef<int64_t> shape,
                             const std::vector<int64_t> &indices) {
  HostTensor out;
  out.dtype = input.dtype;
  out.shape.assign(shape.begin(), shape.end());
  if (input.isFloat()) {
    out.floats.reserve(indices.size());
    for (int64_t i : indices)
      out.floats.push_back(input.floats[i]);
  } else {
    out.ints.reserve(indices.size());
    for (int64_t i : indices)
      out.ints.push_back(input.ints[i]);
  }
  return out;
}

/// Row-major iteration over `shape`, calling `fn(counter)` for each element.
static void forEachIndex(ArrayRef<int64_t> shape,
                         llvm::function_ref<void(ArrayRef<int64_t>)> fn) {
  int64_t n = checkedNumElements(shape).value_or(0);
  SmallVector<int64_t> counter(shape.size(), 0);
  for (int64_t e = 0; e < n; ++e) {
    fn(counter);
    for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) {
      if (++counter[d] < shape[d])
        break;
      counter[d] = 0;
    }
  }
}

HostResult pipedream::onnx_import::foldTranspose(const HostTensor &input,
                                                 ArrayRef<int64_t> perm) {
  int64_t rank = input.rank();
  SmallVector<bool> seen(rank, false);
  if (int64_t(perm.size()) != rank)
    return makeError("perm " + shapeToString(perm) +
                     " is not a permutation of " + std::to_string(rank) +
                     " dimensions");
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[p])
      return makeError("perm " + shapeToString(perm) +
                       " is not a permutation of " + std::to_string(rank) +
                       " dimensions");
    seen[p] = true;
  }
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(input.shape[p]);
  SmallVector<int64_t> inStrides = stridesOf(input.shape);
  std::vector<int64_t> indices;
  indices.reserve(input.numElements());
  forEachIndex(shape, [&](ArrayRef<int64_t> idx) {
    int64_t flat = 0;
    for (int64_t d = 0; d < rank; ++d)
      flat += idx[d] * inStrides[perm[d]];
    indices.push_back(flat);
  });
  return gatherFlat(input, shape, indices);
}

HostResult pipedream::onnx_import::foldSlice(const HostTensor &input,
                                             ArrayRef<int64_t> starts,
                                             ArrayRef<int64_t> sizes,
                                             ArrayRef<int64_t> steps) {
  int64_t rank = input.rank();
  if (int64_t(starts.size()) != rank || int64_t(sizes.size()) != rank ||
      int64_t(steps.size()) != rank) {
    return makeError("slice needs one start, size and step per dimension");
  }
  for (int64_t d = 0; d < rank; ++d) {
    if (sizes[d] == 0)
      continue;
    int64_t last = starts[d] + (sizes[d] - 1) * steps[d];
    if (steps[d] == 0 || sizes[d] < 0 || starts[d] < 0 ||
        starts[d] >= input.shape[d] || last < 0 || last >= input.shape[d]) {
      return makeError("slice leaves the input");
    }
  }
  SmallVector<int64_t> inStrides = stridesOf(input.shape);
  std::vector<int64_t> indices;
  forEachIndex(sizes, [&](ArrayRef<int64_t> idx) {
    int64_t flat = 0;
    for (int64_t d = 0; d < rank; ++d)
      flat += (starts[d] + idx[d] * steps[d]) * inStrides[d];
    indices.push_back(flat);
  });
  return gatherFlat(input, sizes, indices);
}

HostResult pipedream::onnx_import::foldGather(const HostTensor &data,
                                              const HostTensor &indices,
                                              int64_t axis,
                                              FoldBudget &budget) {
  if (indices.dtype != kInt64 && indices.dtype != kInt32)
    return makeError("indices must be int32 or int64");
  if (axis < 0 || axis >= data.rank())
    return makeError("axis out of range");
  int64_t dim = data.shape[axis];
  SmallVector<int64_t> shape(data.shape.begin(), data.shape.begin() + axis);
  shape.append(indices.shape.begin(), indices.shape.end());
  shape.append(data.shape.begin() + axis + 1, data.shape.end());
  auto n = checkedNumElements(shape);
  if (llvm::Error e = fitsBudget(n, budget))
    return std::move(e);
  int64_t outer = checkedNumElements(ArrayRef(data.shape).take_front(axis))
                      .value_or(0);
  int64_t inner = checkedNumElements(ArrayRef(data.shape).drop_front(axis + 1))
                      .value_or(0);
  std::vector<int64_t> flat;
  flat.reserve(*n);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0, ni = indices.numElements(); i < ni; ++i) {
      int64_t idx = indices.ints[i];
      if (idx < 0)
        idx += dim;
      if (idx < 0 || idx >= dim)
        return makeError("index " + std::to_string(indices.ints[i]) +
                         " is out of range for a dimension of size " +
                         std::to_string(dim));
      for (int64_t k = 0; k < inner; ++k)
        flat.push_back((o * dim + idx) * inner + k);
    }
  }
  return gatherFlat(data, shape, flat);
}

HostResult
pipedream::onnx_import::foldConcat(ArrayRef<const HostTensor *> inputs,
                                   int64_t axis) {
  if (inputs.empty())
    return makeError("concat needs at least one input");
  const HostTensor &first = *inputs.front();
  if (axis < 0 || axis >= first.rank())
    return makeError("axis out of range");
  SmallVector<int64_t> shape(first.shape);
  shape[axis] = 0;
  for (const HostTensor *t : inputs) {
    if (t->dtype != first.dtype || t->rank() != first.rank())
      return makeError("inputs differ in element type or rank");
    for (int64_t d = 0; d < first.rank(); ++d) {
      if (d != axis && t->shape[d] != first.shape[d])
        return makeError("input shapes " + shapeToString(first.shape) +
                         " and " + shapeToString(t->shape) +
                         " differ outside the axis");
    }
    shape[axis] += t->shape[axis];
  }
  HostTensor out;
  out.dtype = first.dtype;
  out.shape = shape;
  int64_t outer = checkedNumElements(ArrayRef(shape).take_front(axis))
                      .value_or(0);
  for (int64_t o = 0; o < outer; ++o) {
    for (const HostTensor *t : inputs) {
      int64_t chunk =
          checkedNumElements(ArrayRef(t->shape).drop_front(axis)).value_or(0);
      if (out.isFloat())
        out.floats.insert(out.floats.end(), t->floats.begin() + o * chunk,
                          t->floats.begin() + (o + 1) * chunk);
      else
        out.ints.insert(out.ints.end(), t->ints.begin() + o * chunk,
                        t->ints.begin() + (o + 1) * chunk);
    }
  }
  return out;
}

HostResult pipedream::onnx_import::foldExpand(const HostTensor &input,
                                              ArrayRef<int64_t> shape,
                                              FoldBudget &budget) {
  auto out = broadcastOrError(input.shape, shape);
  if (!out)
    return out.takeError();
  auto n = checkedNumElements(*out);
  if (llvm::Error e = fitsBudget(n, budget))
    return std::move(e);
  return gatherFlat(input, *out, broadcastIndices(*out, input.shape));
}

HostResult pipedream::onnx_import::foldReduce(ReduceKind kind,
                                              const HostTensor &input,
                                              ArrayRef<int64_t> axes,
                                              bool keepdims) {
  int64_t rank = input.rank();
  SmallVector<bool> reduced(rank, false);
  for (int64_t a : axes) {
    if (a < 0 || a >= rank)
      return makeError("axis out of range");
    reduced[a] = true;
  }
  SmallVector<int64_t> keptShape, outShape;
  for (int64_t d = 0; d < rank; ++d) {
    keptShape.push_back(reduced[d] ? 1 : input.shape[d]);
    if (!reduced[d])
      outShape.push_back(input.shape[d]);
    else if (keepdims)
      outShape.push_back(1);
  }
  int64_t outN = checkedNumElements(keptShape).value_or(0);
  int64_t count = outN ? input.numElements() / outN : 0;
  std::vector<double> acc(outN, 0.0);
  std::vector<bool> seen(outN, false);
  SmallVector<int64_t> keptStrides = stridesOf(keptShape);
  int64_t e = 0;
  forEachIndex(input.shape, [&](ArrayRef<int64_t> idx) {
    int64_t o = 0;
    for (int64_t d = 0; d < rank; ++d)
      o += (reduced[d] ? 0 : idx[d]) * keptStrides[d];
    double v = input.getDouble(e++);
    switch (kind) {
    case ReduceKind::Sum:
    case ReduceKind::Mean: acc[o] += v; break;
    case ReduceKind::Prod: acc[o] = seen[o] ? acc[o] * v : v; break;
    case ReduceKind::Max: acc[o] = seen[o] ? std::max(acc[o], v) : v; break;
    case ReduceKind::Min: acc[o] = seen[o] ? std::min(acc[o], v) : v; break;
    }
    seen[o] = true;
  });
  if (kind == ReduceKind::Mean && count > 0)
    for (double &v : acc)
      v /= double(count);
  return HostTensor::fromFloats(input.dtype, outShape, std::move(acc));
}

HostResult pipedream::onnx_import::foldTrilu(const HostTensor &input, int64_t k,
                                             bool upper) {
  if (input.rank() < 2)
    return makeError("input must have rank >= 2");
  int64_t rows = input.shape[input.rank() - 2];
  int64_t cols = input.shape[input.rank() - 1];
  HostTensor out = input;
  int64_t e = 0;
  forEachIndex(input.shape, [&](ArrayRef<int64_t>) {
    int64_t j = e % cols, i = cols ? (e / cols) % rows : 0;
    // Upper keeps j - i >= k, lower keeps j - i <= k.
    int64_t diff = j - i;
    bool keep = upper ? diff >= k : diff <= k;
    if (!keep) {
      if (out.isFloat())
        out.floats[e] = 0.0;
      else
        out.ints[e] = 0;
    }
    ++e;
  });
  return out;
}
