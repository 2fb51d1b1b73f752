//===- ConvertShape.cpp - shape ONNX ops ----------------------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Shape, Size, Reshape, Flatten, Transpose, Squeeze, Unsqueeze, Concat,
// Split, Slice, Gather, Expand and the shape-computation helpers Range and
// ConstantOfShape (Trilu is in ConvertMath.cpp). Their ONNX-side shape
// arguments (Reshape's shape, Slice's bounds, Squeeze's axes, ...) must be
// constants at import; they become the nn ops' attributes in canonical form.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace pipedream;
using namespace pipedream::onnx_import;

//===----------------------------------------------------------------------===//
// Shape, Size
//===----------------------------------------------------------------------===//

static void convertShape(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  if (!type)
    return;
  int64_t rank = type.getRank();
  int64_t start = ctx.intAttr("start", 0), end = ctx.intAttr("end", rank);
  // Opset 15: negative bounds count from the back, then clamp.
  auto clampBound = [&](int64_t b) {
    if (b < 0)
      b = b < -rank ? 0 : b + rank;
    return std::min(b, rank);
  };
  start = clampBound(start);
  end = std::max(start, clampBound(end));
  std::vector<int64_t> dims(type.getShape().begin() + start,
                            type.getShape().begin() + end);
  int64_t n = dims.size();
  ctx.setOutput(0, HostTensor::fromInts(kInt64, {n}, std::move(dims)));
}

static void convertSize(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  if (!type)
    return;
  ctx.setOutput(0, HostTensor::fromInts(kInt64, {}, {type.getNumElements()}));
}

//===----------------------------------------------------------------------===//
// Reshape, Flatten, Transpose, Squeeze, Unsqueeze
//===----------------------------------------------------------------------===//

/// Reshapes input 0 to the resolved `shape`: folded or nn.reshape.
static void emitReshape(NodeContext &ctx, ArrayRef<int64_t> shape) {
  if (const HostTensor *c = ctx.constantInput(0)) {
    ctx.setFolded(foldReshape(*c, shape));
    return;
  }
  ImportedValue *in = ctx.input(0);
  if (in->type.getShape() == shape) {
    ctx.setOutputAlias(0, *in);
    return;
  }
  if (Value x = ctx.operand(0))
    ctx.setOutput(0, ctx.createValue<nn::ReshapeOp>(x, ctx.i64s(shape)));
}

static void convertReshape(NodeContext &ctx) {
  // Before opset 5 the shape is an attribute.
  bool shapeAttr = ctx.sinceVersion() < 5;
  if (!ctx.requireInputs(shapeAttr ? 1 : 2))
    return;
  auto target = shapeAttr ? ctx.intsAttr("shape") : ctx.constantInts(1, "shape");
  if (!target) {
    if (!ctx.failed())
      ctx.fail("attribute 'shape' is required");
    return;
  }
  bool allowZero = ctx.opset() >= 14 && ctx.intAttr("allowzero", 0) != 0;
  ArrayRef<int64_t> in = ctx.input(0)->type.getShape();
  SmallVector<int64_t> shape;
  std::optional<size_t> inferred;
  for (auto [i, s] : llvm::enumerate(*target)) {
    if (s == 0 && !allowZero) {
      if (i >= in.size()) {
        ctx.fail("shape " + shapeToString(*target) + " copies dimension " +
                 Twine(i) + " of a rank-" + Twine(in.size()) + " input");
        return;
      }
      shape.push_back(in[i]);
    } else if (s == -1) {
      if (inferred) {
        ctx.fail("shape " + shapeToString(*target) + " has more than one -1");
        return;
      }
      inferred = i;
      shape.push_back(1);
    } else if (s < 0) {
      ctx.fail("shape " + shapeToString(*target) + " has a negative size");
      return;
    } else {
      shape.push_back(s);
    }
  }
  auto known = checkedNumElements(shape);
  auto total = checkedNumElements(in);
  if (!known || !total) {
    ctx.fail("shape " + shapeToString(*target) + " is too large");
    return;
  }
  if (inferred) {
    if (*known == 0 || *total % *known != 0) {
      ctx.fail("cannot reshape " + shapeToString(in) + " to " +
               shapeToString(*target));
      return;
    }
    shape[*inferred] = *total / *known;
  }
  emitReshape(ctx, shape);
}

static void convertFlatten(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  if (!type)
    return;
  int64_t rank = type.getRank();
  int64_t axis = ctx.intAttr("axis", 1);
  if (axis < -rank || axis > rank) {
    ctx.fail("axis " + Twine(axis) + " is out of range for rank " +
             Twine(rank));
    return;
  }
  if (axis < 0)
    axis += rank;
  if (const HostTensor *c = ctx.constantInput(0)) {
    ArrayRef<int64_t> dims = c->shape;
    int64_t outer = checkedNumElements(dims.take_front(axis)).value_or(0);
    int64_t inner = checkedNumElements(dims.drop_front(axis)).value_or(0);
    ctx.setFolded(foldReshape(*c, {outer, inner}));
    return;
  }
  if (Value x = ctx.operand(0))
    ctx.setOutput(0, ctx.createValue<nn::FlattenOp>(x, ctx.i64(axis)));
}

static void convertTranspose(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  if (!type)
    return;
  SmallVector<int64_t> perm;
  if (auto p = ctx.intsAttr("perm"))
    perm = *p;
  else
    for (int64_t d = type.getRank() - 1; d >= 0; --d)
      perm.push_back(d);
  if (ctx.failed())
    return;
  if (const HostTensor *c = ctx.constantInput(0)) {
    ctx.setFolded(foldTranspose(*c, perm));
    return;
  }
  if (llvm::equal(perm, llvm::seq<int64_t>(0, type.getRank()))) {
    ctx.setOutputAlias(0, *ctx.input(0));
    return;
  }
  if (Value x = ctx.operand(0))
    ctx.setOutput(0, ctx.createValue<nn::TransposeOp>(x, ctx.i64s(perm)));
}

/// What Squeeze and Unsqueeze read: the data's type and the axes (input 1
/// from opset 13, the `axes` attribute before; std::nullopt when absent).
/// std::nullopt after an error.
struct SqueezeOperands {
  RankedTensorType type;
  std::optional<SmallVector<int64_t>> axes;
};
static std::optional<SqueezeOperands> getSqueezeOperands(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  if (!type)
    return std::nullopt;
  bool ok;
  auto axes = ctx.axesOperand(ctx.opset() >= 13, 1, ok);
  if (!ok)
    return std::nullopt;
  return SqueezeOperands{type, std::move(axes)};
}

static void convertSqueeze(NodeContext &ctx) {
  auto operands = getSqueezeOperands(ctx);
  if (!operands)
    return;
  auto &[type, given] = *operands;
  SmallVector<int64_t> axes;
  if (given) {
    auto normalized = ctx.normalizeAxes(*given, type.getRank());
    if (!normalized)
      return;
    axes = *normalized;
  } else {
    for (auto [d, size] : llvm::enumerate(type.getShape()))
      if (size == 1)
        axes.push_back(d);
  }
  if (axes.empty()) {
    ctx.setOutputAlias(0, *ctx.input(0));
    return;
  }
  if (const HostTensor *c = ctx.constantInput(0)) {
    SmallVector<int64_t> shape;
    for (auto [d, size] : llvm::enumerate(c->shape)) {
      if (!llvm::is_contained(axes, int64_t(d)))
        shape.push_back(size);
      else if (size != 1) {
        ctx.fail("cannot squeeze axis " + Twine(d) + " of size " +
                 Twine(size));
        return;
      }
    }
    ctx.setFolded(foldReshape(*c, shape));
    return;
  }
  if (Value x = ctx.operand(0))
    ctx.setOutput(0, ctx.createValue<nn::SqueezeOp>(x, ctx.i64s(axes)));
}

static void convertUnsqueeze(NodeContext &ctx) {
  auto operands = getSqueezeOperands(ctx);
  if (!operands)
    return;
  auto &[type, given] = *operands;
  if (!given) {
    ctx.fail("missing input 'axes'");
    return;
  }
  int64_t rank = type.getRank() + int64_t(given->size());
  auto axes = ctx.normalizeAxes(*given, rank);
  if (!axes)
    return;
  if (const HostTensor *c = ctx.constantInput(0)) {
    SmallVector<int64_t> shape;
    ArrayRef<int64_t> rest = c->shape;
    for (int64_t d = 0; d < rank; ++d) {
      if (llvm::is_contained(*axes, d)) {
        shape.push_back(1);
      } else {
        shape.push_back(rest.front());
        rest = rest.drop_front();
      }
    }
    ctx.setFolded(foldReshape(*c, shape));
    return;
  }
  if (Value x = ctx.operand(0))
    ctx.setOutput(0, ctx.createValue<nn::UnsqueezeOp>(x, ctx.i64s(*axes)));
}

//===----------------------------------------------------------------------===//
// Concat, Split, Slice
//===----------------------------------------------------------------------===//

static void convertConcat(NodeContext &ctx) {
  if (!ctx.requireInputs(1))
    return;
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    if (!ctx.input(i)) {
      ctx.fail("input " + Twine(i) + " is missing");
      return;
    }
  }
  // Opset 1 defaults the axis to 1; it is required from opset 4.
  bool axisDefault = ctx.sinceVersion() < 4;
  if (!ctx.attr("axis") && !axisDefault) {
    ctx.fail("attribute 'axis' is required");
    return;
  }
  int64_t rank = ctx.input(0)->type.getRank();
  auto axis = ctx.normalizeAxis(ctx.intAttr("axis", 1), rank);
  if (!axis)
    return;
  if (ctx.allInputsConstant()) {
    SmallVector<const HostTensor *> inputs;
    for (size_t i = 0; i < ctx.numInputs(); ++i)
      inputs.push_back(ctx.constantInput(i));
    ctx.setFolded(foldConcat(inputs, *axis));
    return;
  }
  SmallVector<Value> operands;
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    // Empty pieces (a 0-sized constant) contribute nothing.
    if (ctx.input(i)->type.getNumElements() == 0 && ctx.numInputs() > 1 &&
        ctx.input(i)->type.getRank() == rank &&
        ctx.input(i)->type.getDimSize(*axis) == 0)
      continue;
    Value v = ctx.operand(i);
    if (!v)
      return;
    operands.push_back(v);
  }
  if (operands.empty()) {
    ctx.setOutputAlias(0, *ctx.input(0));
    return;
  }
  if (operands.size() == 1) {
    // Only one non-empty piece: the result is that piece.
    for (size_t i = 0; i < ctx.numInputs(); ++i)
      if (ctx.input(i)->value == operands.front()) {
        ctx.setOutputAlias(0, *ctx.input(i));
        return;
      }
  }
  ctx.setOutput(0, ctx.createValue<nn::ConcatOp>(ValueRange(operands),
                                                 ctx.i64(*axis)));
}

static void convertSplit(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  if (!type)
    return;
  int64_t numOutputs = ctx.numOutputs();
  if (numOutputs == 0) {
    ctx.fail("has no outputs");
    return;
  }
  auto axis = ctx.normalizeAxis(ctx.intAttr("axis", 0), type.getRank());
  if (!axis)
    return;
  int64_t dim = type.getDimSize(*axis);
  SmallVector<int64_t> sizes;
  if (ctx.hasInput(1)) {
    auto given = ctx.constantInts(1, "split");
    if (!given)
      return;
    sizes = *given;
  } else if (auto attr = ctx.intsAttr("split")) {
    // The pre-13 attribute form, accepted leniently.
    sizes = *attr;
  } else {
    int64_t parts = numOutputs;
    bool uneven = false;
    if (ctx.opset() >= 18 && ctx.attr("num_outputs")) {
      parts = ctx.intAttr("num_outputs", numOutputs);
      uneven = true;
      if (parts != numOutputs) {
        ctx.fail("num_outputs " + Twine(parts) + " differs from the " +
                 Twine(numOutputs) + " outputs");
        return;
      }
    }
    if (dim % parts == 0) {
      sizes.assign(parts, dim / parts);
    } else if (uneven) {
      // Opset 18: ceil-sized chunks, the last one smaller.
      int64_t chunk = llvm::divideCeil(dim, parts);
      int64_t last = dim - chunk * (parts - 1);
      if (last <= 0) {
        ctx.fail("cannot split " + Twine(dim) + " into " + Twine(parts) +
                 " chunks");
        return;
      }
      sizes.assign(parts - 1, chunk);
      sizes.push_back(last);
    } else {
      ctx.fail("dimension " + Twine(dim) + " of axis " + Twine(*axis) +
               " does not split evenly into " + Twine(parts) + " outputs");
      return;
    }
  }
  if (ctx.failed())
    return;
  int64_t total = 0;
  for (int64_t size : sizes) {
    if (size < 0 || llvm::AddOverflow(total, size, total)) {
      total = -1;
      break;
    }
  }
  if (total != dim) {
    ctx.fail("split " + shapeToString(sizes) + " does not add up to size " +
             Twine(dim) + " of axis " + Twine(*axis));
    return;
  }
  if (int64_t(sizes.size()) != numOutputs) {
    ctx.fail("split " + shapeToString(sizes) + " has " + Twine(sizes.size()) +
             " sizes for " + Twine(numOutputs) + " outputs");
    return;
  }
  if (const HostTensor *c = ctx.constantInput(0)) {
    int64_t offset = 0;
    for (auto [i, size] : llvm::enumerate(sizes)) {
      if (size < 0 || offset + size > dim) {
        ctx.fail("split " + shapeToString(sizes) + " does not match size " +
                 Twine(dim));
        return;
      }
      SmallVector<int64_t> starts(c->rank(), 0), steps(c->rank(), 1);
      SmallVector<int64_t> shape(c->shape);
      starts[*axis] = offset;
      shape[*axis] = size;
      auto piece = foldSlice(*c, starts, shape, steps);
      if (!piece) {
        ctx.check(piece.takeError());
        return;
      }
      ctx.setOutput(i, std::move(*piece));
      offset += size;
    }
    return;
  }
  Value x = ctx.operand(0);
  if (!x)
    return;
  auto op = ctx.create<nn::SplitOp>(x, ctx.i64(*axis), ctx.i64s(sizes));
  if (!op)
    return;
  for (auto [i, result] : llvm::enumerate(op->getResults()))
    ctx.setOutput(i, result);
}

static void convertSlice(NodeContext &ctx) {
  // Before opset 10 the bounds are attributes and there are no steps.
  bool boundsAttrs = ctx.sinceVersion() < 10;
  if (!ctx.requireInputs(boundsAttrs ? 1 : 3))
    return;
  ArrayRef<int64_t> shape = ctx.input(0)->type.getShape();
  int64_t rank = shape.size();
  std::optional<SmallVector<int64_t>> starts, ends;
  if (boundsAttrs) {
    starts = ctx.intsAttr("starts");
    ends = ctx.intsAttr("ends");
    if ((!starts || !ends) && !ctx.failed())
      ctx.fail("attributes 'starts' and 'ends' are required");
  } else {
    starts = ctx.constantInts(1, "starts");
    ends = starts ? ctx.constantInts(2, "ends") : std::nullopt;
  }
  if (!starts || !ends || ctx.failed())
    return;
  SmallVector<int64_t> axes, steps;
  if (boundsAttrs && ctx.attr("axes")) {
    auto given = ctx.intsAttr("axes");
    if (!given)
      return;
    axes = *given;
  } else if (!boundsAttrs && ctx.hasInput(3)) {
    auto given = ctx.constantInts(3, "axes");
    if (!given)
      return;
    axes = *given;
  } else {
    for (size_t i = 0; i < starts->size(); ++i)
      axes.push_back(i);
  }
  if (!boundsAttrs && ctx.hasInput(4)) {
    auto given = ctx.constantInts(4, "steps");
    if (!given)
      return;
    steps = *given;
  } else {
    steps.assign(starts->size(), 1);
  }
  if (ends->size() != starts->size() || axes.size() != starts->size() ||
      steps.size() != starts->size()) {
    ctx.fail("starts, ends, axes and steps differ in length");
    return;
  }
  SmallVector<int64_t> outStarts(rank, 0), sizes(shape), outSteps(rank, 1);
  SmallVector<bool> seen(rank, false);
  for (size_t i = 0; i < starts->size(); ++i) {
    auto axis = ctx.normalizeAxis(axes[i], rank);
    if (!axis)
      return;
    if (seen[*axis]) {
      ctx.fail("axes " + shapeToString(axes) + " name an axis twice");
      return;
    }
    seen[*axis] = true;
    int64_t dim = shape[*axis], step = steps[i];
    if (step == 0) {
      ctx.fail("step of axis " + Twine(*axis) + " is zero");
      return;
    }
    // ONNX clamping: negative bounds count from the back, then clamp to
    // [0, dim] (positive step) or [-1, dim - 1] (negative step).
    int64_t start = (*starts)[i], end = (*ends)[i];
    if (start < 0)
      start = start < -dim ? -1 : start + dim;
    if (end < 0)
      end = end < -dim ? -1 : end + dim;
    int64_t size;
    if (dim == 0) {
      size = 0;
    } else if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      size = end > start ? (end - start - 1) / step + 1 : 0;
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      // (start - end - 1) / (-step): step may be INT64_MIN, keep it safe.
      uint64_t stride = uint64_t(0) - uint64_t(step);
      size = start > end ? int64_t(uint64_t(start - end - 1) / stride) + 1 : 0;
    }
    outStarts[*axis] = size > 0 ? start : 0;
    sizes[*axis] = size;
    outSteps[*axis] = size > 1 ? step : 1;
  }
  if (const HostTensor *c = ctx.constantInput(0)) {
    ctx.setFolded(foldSlice(*c, outStarts, sizes, outSteps));
    return;
  }
  if (ArrayRef<int64_t>(sizes) == shape &&
      llvm::all_of(outSteps, [](int64_t s) { return s == 1; })) {
    ctx.setOutputAlias(0, *ctx.input(0));
    return;
  }
  if (Value x = ctx.operand(0))
    ctx.setOutput(0, ctx.createValue<nn::SliceOp>(x, ctx.i64s(outStarts),
                                                  ctx.i64s(sizes),
                                                  ctx.i64s(outSteps)));
}

//===----------------------------------------------------------------------===//
// Gather, Expand
//===----------------------------------------------------------------------===//

static void convertGather(NodeContext &ctx) {
  if (!ctx.requireInputs(2))
    return;
  int64_t rank = ctx.input(0)->type.getRank();
  auto axis = ctx.normalizeAxis(ctx.intAttr("axis", 0), rank);
  if (!axis)
    return;
  if (ctx.allInputsConstant()) {
    ctx.setFolded(foldGather(*ctx.constantInput(0), *ctx.constantInput(1),
                             *axis, ctx.budget()));
    return;
  }
  // Constant indices into a run-time table (an embedding read at fixed
  // positions) are checked now; run-time ones by the compiled code.
  int64_t dim = ctx.input(0)->type.getDimSize(*axis);
  if (const HostTensor *constant = ctx.constantInput(1)) {
    for (int64_t i = 0, n = constant->numElements(); i < n; ++i) {
      int64_t index = constant->ints[i];
      if (index < -dim || index >= dim) {
        ctx.fail("index " + std::to_string(index) + " (element " +
                 std::to_string(i) + " of the constant indices '" +
                 ctx.inputName(1) + "') is out of range [" +
                 std::to_string(-dim) + ", " + std::to_string(dim) +
                 ") of axis " + std::to_string(*axis) + " of '" +
                 ctx.inputName(0) + "'");
        return;
      }
    }
  }
  Value data = ctx.operand(0), indices = ctx.operand(1);
  if (!data || !indices)
    return;
  ctx.setOutput(0, ctx.createValue<nn::GatherOp>(data, indices,
                                                 ctx.i64(*axis)));
}

static void convertExpand(NodeContext &ctx) {
  if (!ctx.requireInputs(2))
    return;
  auto target = ctx.constantInts(1, "shape");
  if (!target)
    return;
  ArrayRef<int64_t> in = ctx.input(0)->type.getShape();
  auto shape = nn::detail::broadcastShapes(in, *target);
  if (!shape || !checkedNumElements(*shape)) {
    ctx.fail("input of shape " + shapeToString(in) +
             " cannot be expanded to " + shapeToString(*target));
    return;
  }
  if (const HostTensor *c = ctx.constantInput(0)) {
    ctx.setFolded(foldExpand(*c, *target, ctx.budget()));
    return;
  }
  if (ArrayRef<int64_t>(*shape) == in) {
    ctx.setOutputAlias(0, *ctx.input(0));
    return;
  }
  if (Value x = ctx.operand(0))
    ctx.setOutput(0, ctx.createValue<nn::ExpandOp>(x, ctx.i64s(*shape)));
}

//===----------------------------------------------------------------------===//
// Range, ConstantOfShape (evaluated only)
//===----------------------------------------------------------------------===//

static void convertRange(NodeContext &ctx) {
  if (!ctx.requireInputs(3))
    return;
  const HostTensor *start = ctx.requireConstant(0, "start");
  const HostTensor *limit = start ? ctx.requireConstant(1, "limit") : nullptr;
  const HostTensor *delta = limit ? ctx.requireConstant(2, "delta") : nullptr;
  if (!delta)
    return;
  if (start->numElements() != 1 || limit->numElements() != 1 ||
      delta->numElements() != 1) {
    ctx.fail("start, limit and delta must be scalars");
    return;
  }
  if (start->dtype != limit->dtype || start->dtype != delta->dtype) {
    ctx.fail("start, limit and delta differ in type");
    return;
  }
  int64_t count;
  if (start->isFloat()) {
    double s = start->floats[0], l = limit->floats[0], d = delta->floats[0];
    double n = std::ceil((l - s) / d);
    if (d == 0 || !std::isfinite(n) || n > double(kMaxElements)) {
      ctx.fail("invalid range");
      return;
    }
    count = std::max<int64_t>(int64_t(n), 0);
  } else {
    __int128 s = start->ints[0], l = limit->ints[0], d = delta->ints[0];
    if (d == 0) {
      ctx.fail("delta is zero");
      return;
    }
    __int128 diff = l - s;
    __int128 n = diff / d + ((diff % d != 0) && ((diff > 0) == (d > 0)));
    if (n > kMaxElements) {
      ctx.fail("range is too large");
      return;
    }
    count = n < 0 ? 0 : int64_t(n);
  }
  if (!ctx.check(ctx.budget().fits(count)))
    return;
  HostTensor out = HostTensor::zeros(start->dtype, {count});
  for (int64_t i = 0; i < count; ++i) {
    if (out.isFloat())
      out.set(i, start->floats[0] + double(i) * delta->floats[0]);
    else
      out.setInt(i, int64_t(__int128(start->ints[0]) +
                            __int128(i) * delta->ints[0]));
  }
  ctx.setOutput(0, std::move(out));
}

static void convertConstantOfShape(NodeContext &ctx) {
  auto shape = ctx.constantInts(0, "input");
  if (!shape)
    return;
  auto n = checkedNumElements(*shape);
  if (!n) {
    ctx.fail("invalid shape " + shapeToString(*shape));
    return;
  }
  HostTensor value = HostTensor::fromFloats(kFloat, {}, {0.0});
  if (ctx.attr("value")) {
    auto t = ctx.tensorAttr("value");
    if (!t)
      return;
    if (t->numElements() != 1) {
      ctx.fail("attribute 'value' must hold one element");
      return;
    }
    value = std::move(*t);
  }
  if (!ctx.check(ctx.budget().fits(*n)))
    return;
  HostTensor out = HostTensor::zeros(value.dtype, *shape);
  for (int64_t i = 0; i < *n; ++i) {
    if (out.isFloat())
      out.floats[i] = value.floats[0];
    else
      out.ints[i] = value.ints[0];
  }
  ctx.setOutput(0, std::move(out));
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

void onnx_import::registerShapeOps(OpTable &table) {
  // Schema versions from ONNX's Changelog.md. Squeeze/Unsqueeze/Split
  // take attributes before opset 13 (handled by the converters).
  table["Shape"] = {convertShape, {1, 13, 15, 19, 21}};
  table["Size"] = {convertSize, {1, 13, 19, 21}};
  table["Reshape"] = {convertReshape, {1, 5, 13, 14, 19, 21}};
  table["Flatten"] = {convertFlatten, {1, 9, 11, 13, 21}};
  table["Transpose"] = {convertTranspose, {1, 13, 21}};
  table["Squeeze"] = {convertSqueeze, {1, 11, 13, 21}};
  table["Unsqueeze"] = {convertUnsqueeze, {1, 11, 13, 21}};
  table["Concat"] = {convertConcat, {1, 4, 11, 13}};
  table["Split"] = {convertSplit, {1, 2, 11, 13, 18}};
  table["Slice"] = {convertSlice, {1, 10, 11, 13}};
  table["Gather"] = {convertGather, {1, 11, 13}};
  table["Expand"] = {convertExpand, {8, 13}};
  // Pad: ConvertIndexing.cpp.
  table["Range"] = {convertRange, {11}};
  table["ConstantOfShape"] = {convertConstantOfShape, {9, 20, 21}};
}

