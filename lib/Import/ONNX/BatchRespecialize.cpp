//===- BatchRespecialize.cpp - static batch -> micro-batch ----------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Batch-dimension propagation through the ONNX ops the importer converts,
// and the rewriting of constants that provably bake the old batch in. See
// BatchRespecialize.h and docs/Importer.md "Static batch".
//
//===----------------------------------------------------------------------===//

#include "BatchRespecialize.h"

#include "mlir/IR/BuiltinTypeInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace mlir;
using namespace pipedream;
using namespace pipedream::onnx_import;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

static const onnx::AttributeProto *findAttr(const onnx::NodeProto &node,
                                            StringRef name) {
  for (const auto &a : node.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

static int64_t intAttr(const onnx::NodeProto &node, StringRef name,
                       int64_t defaultValue) {
  const auto *a = findAttr(node, name);
  return a && (a->type() == onnx::AttributeProto::INT || a->has_i())
             ? a->i()
             : defaultValue;
}

static std::optional<SmallVector<int64_t>>
intsAttr(const onnx::NodeProto &node, StringRef name) {
  const auto *a = findAttr(node, name);
  if (!a)
    return std::nullopt;
  return SmallVector<int64_t>(a->ints().begin(), a->ints().end());
}

static SmallVector<int64_t> toInts(const HostTensor &t) {
  SmallVector<int64_t> out;
  for (int64_t i = 0, n = t.numElements(); i < n; ++i)
    out.push_back(t.getInt(i));
  return out;
}

/// ONNX Reshape's target resolved against `in` (0 copies, -1 infers);
/// std::nullopt when it does not fit.
static std::optional<SmallVector<int64_t>>
resolveReshape(ArrayRef<int64_t> in, ArrayRef<int64_t> target,
               bool allowZero) {
  SmallVector<int64_t> shape;
  std::optional<size_t> inferred;
  for (auto [i, s] : llvm::enumerate(target)) {
    if (s == 0 && !allowZero) {
      if (i >= in.size())
        return std::nullopt;
      shape.push_back(in[i]);
    } else if (s == -1) {
      if (inferred)
        return std::nullopt;
      inferred = i;
      shape.push_back(1);
    } else if (s < 0) {
      return std::nullopt;
    } else {
      shape.push_back(s);
    }
  }
  auto known = checkedNumElements(shape), total = checkedNumElements(in);
  if (!known || !total)
    return std::nullopt;
  if (inferred) {
    if (*known == 0 || *total % *known != 0)
      return std::nullopt;
    shape[*inferred] = *total / *known;
  } else if (*known != *total) {
    return std::nullopt;
  }
  return shape;
}

/// Every slice of `t` along dimension `dim` equals the first one.
static bool sameAlong(const HostTensor &t, int64_t dim) {
  int64_t stride = ShapedType::getNumElements(
      ArrayRef<int64_t>(t.shape).drop_front(dim + 1));
  int64_t size = t.shape[dim];
  for (int64_t e = 0, n = t.numElements(); e < n; ++e) {
    int64_t c = (e / stride) % size;
    if (c && t.getDouble(e) != t.getDouble(e - c * stride))
      return false;
    if (c && t.isFloat() && std::isnan(t.floats[e]) !=
                                std::isnan(t.floats[e - c * stride]))
      return false;
  }
  return true;
}

/// `t` cut to its first slice along `dim`, then (size > 1) tiled to `size`.
static HostResult reslice(const HostTensor &t, int64_t dim, int64_t size) {
  SmallVector<int64_t> starts(t.rank(), 0), sizes(t.shape), steps(t.rank(), 1);
  sizes[dim] = 1;
  auto first = foldSlice(t, starts, sizes, steps);
  if (!first || size == 1)
    return first;
  SmallVector<int64_t> shape(t.shape);
  shape[dim] = size;
  FoldBudget budget(int64_t(1) << 25);
  return foldExpand(*first, shape, budget);
}

/// A replacement for `original` holding `t` (same element type).
static ImportedValue replaced(const ImportedValue &original, HostTensor t) {
  ImportedValue v = original;
  v.type = RankedTensorType::get(t.shape, original.type.getElementType());
  v.constant = std::make_shared<const HostTensor>(std::move(t));
  v.value = nullptr;
  return v;
}

static std::string quote(StringRef name) { return "'" + name.str() + "'"; }

/// a * b, or -1 when it overflows (sizes are non-negative).
static int64_t mulOrInvalid(int64_t a, int64_t b) {
  int64_t r;
  return a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r) ? -1 : r;
}

/// The size of dimension `d` at batch `batch` (-1 on overflow).
static int64_t sizeAt(const BatchDim &d, int64_t batch) {
  return mulOrInvalid(mulOrInvalid(d.outer, batch), d.inner);
}

//===----------------------------------------------------------------------===//
// BatchRespecializer
//===----------------------------------------------------------------------===//

std::optional<BatchDim> BatchRespecializer::batchDimOf(StringRef name) const {
  auto it = batchDims.find(name);
  if (it == batchDims.end())
    return std::nullopt;
  return it->second;
}

const ReferenceValue *BatchRespecializer::ref(StringRef name) const {
  auto it = reference.find(name);
  return it == reference.end() ? nullptr : &it->second;
}

SmallVector<int64_t>
BatchRespecializer::resized(ArrayRef<int64_t> old,
                            std::optional<BatchDim> dim) const {
  SmallVector<int64_t> shape(old);
  if (dim && dim->axis >= 0 && dim->axis < int64_t(shape.size()))
    shape[dim->axis] = sizeAt(*dim, newBatch);
  return shape;
}

std::string BatchRespecializer::batchWords() const {
  return "batch " + std::to_string(oldBatch);
}

std::string BatchRespecializer::rewrittenSummary() const {
  std::string s;
  for (const auto &[kind, count] : rewritten) {
    if (!s.empty())
      s += ", ";
    s += std::to_string(count) + " " + kind + (count == 1 ? "" : "s");
  }
  return s;
}

llvm::Expected<BatchDim>
BatchRespecializer::locateInReshape(ArrayRef<int64_t> in, const BatchDim &dim,
                                    ArrayRef<int64_t> out) const {
  if (llvm::is_contained(in, 0) || llvm::is_contained(out, 0))
    return makeError("it reshapes an empty tensor");
  // In the flattened tensor the batch is a factor with `above` elements of
  // structure outside it and `below` inside; find the output dimension that
  // holds that factor whole. For a batch of 2 or more it is unique (the
  // dimensions before it multiply to at most `above`, so a later candidate
  // would start past the batch); for a batch of 1 it is not, and a
  // dimension that is exactly the batch is preferred.
  int64_t above =
      ShapedType::getNumElements(in.take_front(dim.axis)) * dim.outer;
  int64_t below =
      dim.inner * ShapedType::getNumElements(in.drop_front(dim.axis + 1));
  SmallVector<BatchDim> candidates, pure;
  for (int64_t k = 0; k < int64_t(out.size()); ++k) {
    int64_t suffix = ShapedType::getNumElements(out.drop_front(k + 1));
    if (below % suffix != 0)
      continue;
    int64_t inner = below / suffix;
    int64_t factor = mulOrInvalid(inner, oldBatch);
    if (factor <= 0 || out[k] % factor != 0)
      continue;
    int64_t outer = out[k] / factor;
    if (ShapedType::getNumElements(out.take_front(k)) * outer != above)
      continue;
    BatchDim found{k, outer, inner};
    candidates.push_back(found);
    if (outer == 1 && inner == 1)
      pure.push_back(found);
  }
  if (candidates.size() == 1)
    return candidates.front();
  if (pure.size() == 1)
    return pure.front();
  if (candidates.empty())
    return makeError("it splits the batch dimension of " + shapeToString(in) +
                     " across dimensions of " + shapeToString(out));
  return makeError("the batch of a batch-1 export cannot be told apart from "
                   "the other size-1 dimensions of reshape " +
                   shapeToString(in) + " -> " + shapeToString(out) +
                   " (export with a batch of 2 or more)");
}

llvm::Error BatchRespecializer::checkBroadcastOperand(
    const onnx::NodeProto &node, size_t index, int64_t dim, int64_t newSize,
    bool tile, const llvm::StringMap<ImportedValue> &values,
    llvm::DenseMap<size_t, ImportedValue> &overrides) {
  if (dim < 0 || index >= size_t(node.input_size()) ||
      node.input(int(index)).empty())
    return llvm::Error::success();
  const std::string &name = node.input(int(index));
  const ReferenceValue *r = ref(name);
  auto it = values.find(name);
  if (!r || it == values.end() || dim >= int64_t(r->shape.size()))
    return llvm::Error::success();
  int64_t oldSize = r->shape[dim];
  if (oldSize == 1 && !tile)
    return llvm::Error::success(); // broadcasts along the batch
  const ImportedValue &v = it->second;
  if (v.type.getShape()[dim] == newSize)
    return llvm::Error::success(); // already follows the batch (a folded shape
                                   // computation)
  if (v.constant && v.constant->rank() == int64_t(r->shape.size()) &&
      sameAlong(*v.constant, dim)) {
    auto t = reslice(*v.constant, dim, tile ? newSize : 1);
    if (!t)
      return makeError("cannot resize constant input " + quote(name) + ": " +
                       llvm::toString(t.takeError()));
    overrides[index] = replaced(v, std::move(*t));
    ++rewritten["constant"];
    return llvm::Error::success();
  }
  return makeError("input " + quote(name) + " has size " +
                   std::to_string(oldSize) + " at the batch dimension " +
                   std::to_string(dim) +
                   " but does not follow the batch of the graph inputs: " +
                   (v.constant ? "a constant that differs between samples"
                               : "a weight, or a value computed without the "
                                 "graph inputs,") +
                   " bakes the " + batchWords() + " in");
}

llvm::Error
BatchRespecializer::prepare(const onnx::NodeProto &node, int64_t sinceVersion,
                            const llvm::StringMap<ImportedValue> &values,
                            llvm::DenseMap<size_t, ImportedValue> &overrides) {
  pending = Pending{};
  size_t numOutputs = node.output_size();
  pending.outputs.assign(numOutputs, std::nullopt);
  size_t numInputs = node.input_size();
  SmallVector<std::optional<BatchDim>> in(numInputs);
  bool any = false;
  for (size_t i = 0; i < numInputs; ++i) {
    if (node.input(int(i)).empty())
      continue;
    in[i] = batchDimOf(node.input(int(i)));
    any |= in[i].has_value();
  }
  if (!any)
    return llvm::Error::success();
  for (size_t i = 0; i < numInputs; ++i) {
    const ReferenceValue *r = in[i] ? ref(node.input(int(i))) : nullptr;
    if (in[i] && (!r || in[i]->axis >= int64_t(r->shape.size())))
      return makeError("input " + quote(node.input(int(i))) +
                       " has no batch dimension in the reference import");
  }
  pending.computed = true;
  StringRef op = node.op_type();
  auto fails = [](const Twine &why) { return makeError(why); };
  auto refShape = [&](StringRef name) -> ArrayRef<int64_t> {
    const ReferenceValue *r = ref(name);
    return r ? ArrayRef<int64_t>(r->shape) : ArrayRef<int64_t>();
  };
  auto inShape = [&](size_t i) { return refShape(node.input(int(i))); };
  auto outShape = [&](size_t o) {
    return o < numOutputs ? refShape(node.output(int(o)))
                          : ArrayRef<int64_t>();
  };
  auto inputName = [&](size_t i) { return quote(node.input(int(i))); };
  auto newShape = [&](size_t i) -> ArrayRef<int64_t> {
    auto it = values.find(node.input(int(i)));
    return it == values.end() ? ArrayRef<int64_t>()
                              : it->second.type.getShape();
  };
  auto newConstant = [&](size_t i) -> const HostTensor * {
    if (i >= numInputs || node.input(int(i)).empty())
      return nullptr;
    auto it = values.find(node.input(int(i)));
    return it == values.end() || !it->second.constant
               ? nullptr
               : it->second.constant.get();
  };
  auto refConstant = [&](size_t i) -> const HostTensor * {
    const ReferenceValue *r = ref(node.input(int(i)));
    return r && r->constant ? r->constant.get() : nullptr;
  };
  auto setAll = [&](std::optional<BatchDim> d) {
    for (auto &o : pending.outputs)
      o = d;
  };
  // Only input `keep` may carry the batch.
  auto onlyInput = [&](size_t keep) -> llvm::Error {
    for (size_t i = 0; i < numInputs; ++i)
      if (i != keep && in[i])
        return fails("input " + inputName(i) +
                     " carries the batch, which this op does not support");
    if (!in[keep])
      return fails("input " + inputName(keep) +
                   " does not carry the batch, but another input does");
    return llvm::Error::success();
  };
  auto normalize = [&](int64_t axis, int64_t rank,
                       int64_t &out) -> llvm::Error {
    if (axis < -rank || axis >= rank)
      return fails("axis " + Twine(axis) + " is out of range");
    out = axis < 0 ? axis + rank : axis;
    return llvm::Error::success();
  };

  static const llvm::StringSet<> broadcasting = {
      "Add", "Sub", "Mul", "Div", "Pow", "Equal", "Where", "Less", "Greater",
      "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "Mod", "Min",
      "Max", "Sum", "Mean", "PRelu"};
  static const llvm::StringSet<> sameShape = {
      "Identity", "Dropout", "Cast", "Clip", "Sqrt", "Neg", "Exp", "Log",
      "Tanh", "Erf", "Sigmoid", "Relu", "LeakyRelu", "Gelu", "Abs", "Floor",
      "Ceil", "Reciprocal", "Not", "Pad", "Sin", "Cos", "Tan", "Asin",
      "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Sign",
      "Round", "IsNaN", "IsInf", "Softplus", "Softsign", "Elu", "Selu",
      "Celu", "HardSigmoid", "HardSwish", "ThresholdedRelu", "Shrink"};
  // Reductions whose `axes` are an attribute before opset 18 and an input
  // from 18 (ReduceSum: from 13).
  static const llvm::StringSet<> reductions = {
      "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd",
      "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSum",
      "ReduceLogSumExp"};
  static const llvm::StringSet<> batchFirst = {
      "Conv", "MaxPool", "AveragePool", "GlobalAveragePool",
      "BatchNormalization", "InstanceNormalization", "GroupNormalization"};

  if (op == "Shape" || op == "Size" || op == "ConstantOfShape" ||
      op == "Range") {
    // Results are shape values: where they follow the batch they change
    // value, not shape; the ops that read them check them.
    pending.computed = false;
  } else if (broadcasting.contains(op)) {
    int64_t rank = outShape(0).size();
    std::optional<BatchDim> outDim;
    for (size_t i = 0; i < numInputs; ++i) {
      if (!in[i])
        continue;
      BatchDim d = *in[i];
      d.axis += rank - int64_t(inShape(i).size());
      if (outDim && !(*outDim == d))
        return fails("inputs carry the batch at different dimensions");
      outDim = d;
    }
    int64_t newSize = sizeAt(*outDim, newBatch);
    for (size_t i = 0; i < numInputs; ++i)
      if (!in[i] && !node.input(int(i)).empty())
        if (llvm::Error e = checkBroadcastOperand(
                node, i, outDim->axis - (rank - int64_t(inShape(i).size())),
                newSize, /*tile=*/false, values, overrides))
          return e;
    setAll(outDim);
  } else if (sameShape.contains(op)) {
    if (llvm::Error e = onlyInput(0))
      return e;
    setAll(in[0]);
  } else if (batchFirst.contains(op)) {
    if (llvm::Error e = onlyInput(0))
      return e;
    if (in[0]->axis != 0)
      return fails("the batch is at dimension " + Twine(in[0]->axis) +
                   ", not 0");
    setAll(in[0]);
  } else if (op == "Softmax" || op == "LogSoftmax" || op == "Hardmax" ||
             op == "LayerNormalization") {
    if (llvm::Error e = onlyInput(0))
      return e;
    int64_t rank = inShape(0).size(), axis;
    bool coerced = op != "LayerNormalization" && sinceVersion < 13;
    int64_t defaultAxis = coerced ? 1 : -1;
    if (llvm::Error e =
            normalize(intAttr(node, "axis", defaultAxis), rank, axis))
      return e;
    bool mixes = (coerced || op == "LayerNormalization")
                     ? in[0]->axis >= axis
                     : in[0]->axis == axis;
    if (mixes)
      return fails("it normalizes over the batch dimension");
    setAll(in[0]);
  } else if (reductions.contains(op)) {
    if (llvm::Error e = onlyInput(0))
      return e;
    int64_t rank = inShape(0).size();
    bool fromInput = op == "ReduceSum" ? sinceVersion >= 13 : sinceVersion >= 18;
    SmallVector<int64_t> axes;
    if (fromInput) {
      if (numInputs > 1 && !node.input(1).empty()) {
        const HostTensor *t = newConstant(1);
        if (!t)
          return fails("its axes are not a constant");
        axes = toInts(*t);
      }
    } else if (auto a = intsAttr(node, "axes")) {
      axes = *a;
    }
    if (axes.empty()) {
      if (intAttr(node, "noop_with_empty_axes", 0)) {
        setAll(in[0]);
        return llvm::Error::success();
      }
      for (int64_t i = 0; i < rank; ++i)
        axes.push_back(i);
    }
    bool keep = intAttr(node, "keepdims", 1) != 0;
    BatchDim d = *in[0];
    int64_t before = 0;
    for (int64_t a : axes) {
      int64_t n;
      if (llvm::Error e = normalize(a, rank, n))
        return e;
      if (n == d.axis) {
        // Reduced over the batch (a mean loss): the result no longer
        // carries it; the mean is then over each micro-batch.
        setAll(std::nullopt);
        return llvm::Error::success();
      }
      before += n < d.axis;
    }
    if (!keep)
      d.axis -= before;
    setAll(d);
  } else if (op == "MatMul") {
    int64_t ra = inShape(0).size(), rb = inShape(1).size();
    int64_t r = outShape(0).size();
    int64_t lo = r - ((ra >= 2 && rb >= 2) ? 2 : 1);
    std::optional<BatchDim> outDim;
    auto place = [&](BatchDim d) -> llvm::Error {
      if (outDim && !(*outDim == d))
        return fails("both operands carry the batch, at different "
                     "dimensions of the result");
      outDim = d;
      return llvm::Error::success();
    };
    if (in[0]) {
      BatchDim d = *in[0];
      if (ra == 1 || d.axis == ra - 1)
        return fails("it contracts over the batch dimension");
      d.axis = d.axis == ra - 2 ? (rb == 1 ? r - 1 : r - 2)
                                : d.axis + (lo - (ra - 2));
      if (llvm::Error e = place(d))
        return e;
    }
    if (in[1]) {
      BatchDim d = *in[1];
      if (rb == 1 || d.axis == rb - 2)
        return fails("it contracts over the batch dimension");
      d.axis = d.axis == rb - 1 ? r - 1 : d.axis + (lo - (rb - 2));
      if (llvm::Error e = place(d))
        return e;
    }
    if (!outDim)
      return fails("an operand past the second carries the batch");
    int64_t newSize = sizeAt(*outDim, newBatch);
    for (size_t i = 0; i < 2; ++i) {
      if (in[i] || outDim->axis >= lo)
        continue;
      int64_t rank = i == 0 ? ra : rb;
      int64_t leading = std::max<int64_t>(rank - 2, 0);
      if (llvm::Error e =
              checkBroadcastOperand(node, i, outDim->axis - (lo - leading),
                                    newSize, false, values, overrides))
        return e;
    }
    setAll(outDim);
  } else if (op == "Gemm") {
    bool transA = intAttr(node, "transA", 0), transB = intAttr(node, "transB", 0);
    std::optional<BatchDim> outDim;
    if (in[0]) {
      if (in[0]->axis != (transA ? 1 : 0))
        return fails("it contracts over the batch dimension");
      outDim = BatchDim{0, in[0]->outer, in[0]->inner};
    }
    if (in[1]) {
      if (outDim || in[1]->axis != (transB ? 0 : 1))
        return fails("operand B carries the batch");
      outDim = BatchDim{1, in[1]->outer, in[1]->inner};
    }
    if (numInputs > 2 && in[2]) {
      BatchDim d = *in[2];
      d.axis += 2 - int64_t(inShape(2).size());
      if (!outDim || !(d == *outDim))
        return fails("operand C carries the batch where the product does not");
    } else if (outDim && numInputs > 2) {
      if (llvm::Error e = checkBroadcastOperand(
              node, 2, outDim->axis - (2 - int64_t(inShape(2).size())),
              sizeAt(*outDim, newBatch), false, values, overrides))
        return e;
    }
    setAll(outDim);
  } else if (op == "Transpose") {
    if (llvm::Error e = onlyInput(0))
      return e;
    int64_t rank = inShape(0).size();
    SmallVector<int64_t> perm;
    if (auto p = intsAttr(node, "perm"))
      perm = *p;
    else
      for (int64_t i = rank - 1; i >= 0; --i)
        perm.push_back(i);
    BatchDim d = *in[0];
    auto it = llvm::find(perm, d.axis);
    if (it == perm.end())
      return fails("its permutation does not name the batch dimension");
    d.axis = it - perm.begin();
    setAll(d);
  } else if (op == "Reshape" || op == "Flatten" || op == "Squeeze" ||
             op == "Unsqueeze") {
    if (llvm::Error e = onlyInput(0))
      return e;
    ArrayRef<int64_t> inOld = inShape(0), outOld = outShape(0);
    llvm::Expected<BatchDim> d = locateInReshape(inOld, *in[0], outOld);
    if (!d)
      return d.takeError();
    setAll(*d);
    if (op != "Reshape")
      return llvm::Error::success();
    SmallVector<int64_t> expected = resized(outOld, *d);
    bool allowZero = sinceVersion >= 14 && intAttr(node, "allowzero", 0);
    const HostTensor *target = sinceVersion >= 5 ? newConstant(1) : nullptr;
    if (sinceVersion < 5) {
      auto attrShape = intsAttr(node, "shape");
      auto resolved = attrShape ? resolveReshape(newShape(0), *attrShape,
                                                 allowZero)
                                : std::nullopt;
      if (resolved && *resolved == expected)
        return llvm::Error::success();
      return fails("its 'shape' attribute bakes the " + batchWords() +
                   " in (opset < 5 form, not rewritten)");
    }
    if (!target)
      return llvm::Error::success(); // the converter reports the missing
                                     // constant
    SmallVector<int64_t> values0 = toInts(*target);
    auto resolved = resolveReshape(newShape(0), values0, allowZero);
    if (resolved && *resolved == expected)
      return llvm::Error::success();
    const HostTensor *old = refConstant(1);
    if (!old || toInts(*old) != values0)
      return fails("its target shape " + shapeToString(values0) +
                   " is computed from the batch but does not resize to " +
                   shapeToString(expected));
    HostTensor t = HostTensor::fromInts(
        target->dtype, {int64_t(expected.size())},
        std::vector<int64_t>(expected.begin(), expected.end()));
    auto it = values.find(node.input(1));
    overrides[1] = replaced(it->second, std::move(t));
    ++rewritten["Reshape target"];
  } else if (op == "Concat") {
    int64_t rank = outShape(0).size(), axis;
    if (llvm::Error e = normalize(intAttr(node, "axis", 1), rank, axis))
      return e;
    std::optional<BatchDim> d;
    for (size_t i = 0; i < numInputs; ++i) {
      if (!in[i])
        continue;
      if (d && !(*d == *in[i]))
        return fails("inputs carry the batch at different dimensions");
      d = in[i];
    }
    if (d->axis == axis)
      return fails("it concatenates along the batch dimension");
    int64_t newSize = sizeAt(*d, newBatch);
    for (size_t i = 0; i < numInputs; ++i) {
      if (in[i] || node.input(int(i)).empty())
        continue;
      ArrayRef<int64_t> s = inShape(i);
      if (axis < int64_t(s.size()) && s[axis] == 0)
        continue; // an empty piece, dropped
      if (llvm::Error e = checkBroadcastOperand(
              node, i, d->axis, newSize, /*tile=*/true, values, overrides))
        return e;
    }
    setAll(d);
  } else if (op == "Split") {
    if (llvm::Error e = onlyInput(0))
      return e;
    int64_t axis;
    if (llvm::Error e =
            normalize(intAttr(node, "axis", 0), inShape(0).size(), axis))
      return e;
    if (axis == in[0]->axis)
      return fails("it splits the batch dimension");
    setAll(in[0]);
  } else if (op == "Gather") {
    int64_t rank = inShape(0).size(), axis;
    if (llvm::Error e = normalize(intAttr(node, "axis", 0), rank, axis))
      return e;
    if (in[0] && in[1])
      return fails("both data and indices carry the batch");
    if (!in[0] && !in[1])
      return fails("an input past indices carries the batch");
    BatchDim d;
    if (in[0]) {
      d = *in[0];
      if (d.axis == axis)
        return fails("it gathers along the batch dimension");
      if (d.axis > axis)
        d.axis += int64_t(inShape(1).size()) - 1;
    } else {
      d = *in[1];
      d.axis += axis;
    }
    setAll(d);
  } else if (op == "Slice") {
    if (llvm::Error e = onlyInput(0))
      return e;
    BatchDim d = *in[0];
    setAll(d);
    ArrayRef<int64_t> inOld = inShape(0), outOld = outShape(0);
    if (outOld.size() == inOld.size() && outOld[d.axis] == inOld[d.axis]) {
      // The whole batch axis, or the axis is not sliced: the new slice must
      // keep it whole too.
      if (sinceVersion < 10) {
        auto starts = intsAttr(node, "starts"), axes = intsAttr(node, "axes");
        if (!starts)
          return llvm::Error::success();
        for (size_t j = 0; j < starts->size(); ++j) {
          int64_t a = axes && j < axes->size() ? (*axes)[j] : int64_t(j);
          if (a < 0)
            a += inOld.size();
          if (a == d.axis)
            return fails("its 'starts'/'ends' attributes name the batch "
                         "dimension (opset < 10 form, not rewritten)");
        }
        return llvm::Error::success();
      }
      const HostTensor *starts = newConstant(1), *ends = newConstant(2);
      if (!starts || !ends)
        return llvm::Error::success(); // the converter reports it
      SmallVector<int64_t> s = toInts(*starts), e = toInts(*ends), axes;
      if (const HostTensor *a = newConstant(3))
        axes = toInts(*a);
      else
        for (size_t j = 0; j < s.size(); ++j)
          axes.push_back(j);
      SmallVector<int64_t> steps(s.size(), 1);
      if (const HostTensor *st = newConstant(4))
        steps = toInts(*st);
      if (axes.size() != s.size() || e.size() != s.size() ||
          steps.size() != s.size())
        return llvm::Error::success();
      int64_t dimNew = newShape(0)[d.axis];
      for (size_t j = 0; j < s.size(); ++j) {
        int64_t a = axes[j] < 0 ? axes[j] + int64_t(inOld.size()) : axes[j];
        if (a != d.axis)
          continue;
        if (steps[j] != 1)
          return fails("it slices the batch dimension with step " +
                       Twine(steps[j]));
        auto clamp = [&](int64_t b) {
          if (b < 0)
            b += dimNew;
          return std::clamp<int64_t>(b, 0, dimNew);
        };
        if (clamp(s[j]) == 0 && clamp(e[j]) == dimNew)
          continue;
        // A literal bound at the old batch: keep the whole axis.
        HostTensor ns = *starts, ne = *ends;
        ns.setInt(j, 0);
        ne.setInt(j, ne.dtype == kInt32 ? std::numeric_limits<int32_t>::max()
                                        : std::numeric_limits<int64_t>::max());
        overrides[1] = replaced(values.find(node.input(1))->second, ns);
        overrides[2] = replaced(values.find(node.input(2))->second, ne);
        ++rewritten["Slice bound"];
      }
    } else {
      return fails("it takes part of the batch dimension");
    }
  } else if (op == "Expand") {
    if (llvm::Error e = onlyInput(0))
      return e;
    int64_t r = outShape(0).size();
    BatchDim d = *in[0];
    d.axis += r - int64_t(inShape(0).size());
    setAll(d);
    const HostTensor *shape = newConstant(1);
    if (!shape)
      return llvm::Error::success(); // the converter reports it
    SmallVector<int64_t> target = toInts(*shape);
    int64_t p = d.axis - (r - int64_t(target.size()));
    if (p < 0)
      return llvm::Error::success();
    int64_t newSize = newShape(0)[in[0]->axis];
    if (target[p] == 1 || target[p] == newSize)
      return llvm::Error::success();
    const HostTensor *old = refConstant(1);
    if (!old || toInts(*old) != target ||
        target[p] != inShape(0)[in[0]->axis])
      return fails("its shape " + shapeToString(target) +
                   " does not keep the batch dimension");
    HostTensor t = *shape;
    t.setInt(p, 1); // broadcasting keeps the input's batch
    overrides[1] = replaced(values.find(node.input(1))->second, t);
    ++rewritten["Expand shape"];
  } else if (op == "Trilu") {
    if (llvm::Error e = onlyInput(0))
      return e;
    if (in[0]->axis >= int64_t(inShape(0).size()) - 2)
      return fails("the batch is one of its matrix dimensions");
    setAll(in[0]);
  } else {
    return fails("op '" + op + "' is not supported by batch "
                 "re-specialization");
  }
  // The batch dimension must have the old batch's size in the reference.
  for (size_t o = 0; o < numOutputs; ++o) {
    if (!pending.outputs[o])
      continue;
    ArrayRef<int64_t> s = outShape(o);
    const BatchDim &d = *pending.outputs[o];
    if (s.empty() && !ref(node.output(int(o))))
      continue;
    if (d.axis >= int64_t(s.size()) ||
        s[d.axis] != sizeAt(d, oldBatch))
      return fails("result " + quote(node.output(int(o))) + " of shape " +
                   shapeToString(s) + " broadcasts the batch dimension");
  }
  return llvm::Error::success();
}

llvm::Error
BatchRespecializer::finish(const onnx::NodeProto &node,
                           const llvm::StringMap<ImportedValue> &values) {
  for (int o = 0; o < node.output_size(); ++o) {
    const std::string &name = node.output(o);
    if (name.empty())
      continue;
    auto it = values.find(name);
    if (it == values.end())
      continue;
    const ReferenceValue *r = ref(name);
    if (!r)
      return makeError("result " + quote(name) +
                       " is not in the reference import");
    ArrayRef<int64_t> now = it->second.type.getShape();
    ArrayRef<int64_t> old = r->shape;
    if (pending.computed) {
      std::optional<BatchDim> d = pending.outputs[o];
      SmallVector<int64_t> expected = resized(old, d);
      if (now != ArrayRef<int64_t>(expected))
        return makeError("result " + quote(name) + " has shape " +
                         shapeToString(now) + ", but the reference shape " +
                         shapeToString(old) + " with the batch resized is " +
                         shapeToString(expected));
      if (d)
        batchDims[name] = *d;
      continue;
    }
    if (now == old)
      continue;
    // Inputs without the batch, a result that changed: a shape computation
    // that reads the batch (ConstantOfShape(Shape(x))). One dimension may
    // have been resized by the batch; anything else is not explained.
    std::optional<BatchDim> found;
    bool explained = now.size() == old.size();
    for (size_t i = 0; explained && i < old.size(); ++i) {
      if (now[i] == old[i])
        continue;
      if (found || old[i] % oldBatch != 0 ||
          now[i] != mulOrInvalid(old[i] / oldBatch, newBatch)) {
        explained = false;
        break;
      }
      found = BatchDim{int64_t(i), 1, old[i] / oldBatch};
    }
    if (!explained || !found)
      return makeError("result " + quote(name) + " changed shape from " +
                       shapeToString(old) + " to " + shapeToString(now) +
                       ", which is not the batch");
    batchDims[name] = *found;
  }
  return llvm::Error::success();
}

llvm::Error BatchRespecializer::checkOutput(StringRef name) const {
  std::optional<BatchDim> d = batchDimOf(name);
  if (!d || (d->axis == 0 && d->outer == 1))
    return llvm::Error::success();
  const ReferenceValue *r = ref(name);
  return makeError(
      "graph output " + quote(name) + " of shape " +
      (r ? shapeToString(r->shape) : std::string("?")) +
      " holds the batch inside dimension " + std::to_string(d->axis) +
      (d->outer > 1
           ? " with " + std::to_string(d->outer) + " elements outside it"
           : std::string()) +
      ", not as its leading dimension: its samples are not its rows, "
      "so which of its sizes is the batch of the inputs cannot be told");
}
