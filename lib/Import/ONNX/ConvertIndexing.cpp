//===- ConvertIndexing.cpp - indexing and data-movement ONNX ops ----------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// GatherElements, GatherND, ScatterElements / Scatter and ScatterND become
// the nn ops of the same names (constant indices are range-checked here;
// run-time ones by the lowering's normalizeIndex).
//
// Tile, DepthToSpace, SpaceToDepth, Compress, OneHot, Pad and Einsum, each
// a composition of existing nn ops (reshape / transpose / expand / slice /
// concat / gather / matmul / reduce_sum), so that they are verified,
// lowered, differentiated and costed like those:
// - Tile: an expand over interleaved unit dimensions, then a reshape;
// - DepthToSpace / SpaceToDepth: reshape, transpose, reshape;
// - Compress (constant condition): a gather of the selected positions;
// - OneHot: `nn.one_hot` of the index and of the index + depth (ONNX wraps
//   negative indices), scaled to the off/on values, moved to `axis`;
// - Pad: per axis, a concat of the fill (constant), copies of the border
//   (edge), reversed slices (reflect) or the far end (wrap); negative pads
//   crop with a slice;
// - Einsum: diagonals by a strided slice of the flattened pair, sums over
//   the letters no one else needs, and a batched `nn.matmul` per operand
//   pair.
// Shape arguments (repeats, pads, the condition, depth) must be constants
// at import, as everywhere in the importer.
//
//===----------------------------------------------------------------------===//

#include "Decompose.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace pipedream;
using namespace pipedream::onnx_import;
using namespace pipedream::onnx_import::decompose;

//===----------------------------------------------------------------------===//
// Tile, DepthToSpace, SpaceToDepth
//===----------------------------------------------------------------------===//

static void convertTile(NodeContext &ctx) {
  if (!ctx.requireInputs(2))
    return;
  RankedTensorType type = ctx.inputType(0);
  auto repeats = ctx.constantInts(1, "repeats");
  if (!repeats)
    return;
  int64_t rank = type.getRank();
  if (int64_t(repeats->size()) != rank) {
    ctx.fail("repeats " + shapeToString(*repeats) + " has " +
             Twine(repeats->size()) + " entries for rank " + Twine(rank));
    return;
  }
  // x[d0, d1, ...] -> [1, d0, 1, d1, ...] -> expand to [r0, d0, r1, d1, ...]
  // -> [r0 * d0, r1 * d1, ...]: the repeats are the outer (slower) index.
  SmallVector<int64_t> interleaved, expanded, result;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t r = (*repeats)[d], size = type.getDimSize(d), total;
    if (r < 0 || llvm::MulOverflow(r, size, total) || total > kMaxDim) {
      ctx.fail("repeats " + shapeToString(*repeats) + " is out of range");
      return;
    }
    if (r != 1) {
      interleaved.push_back(1);
      expanded.push_back(r);
    }
    interleaved.push_back(size);
    expanded.push_back(size);
    result.push_back(total);
  }
  if (!checkedNumElements(result).has_value() ||
      *checkedNumElements(result) >= kMaxElements) {
    ctx.fail("result shape " + shapeToString(result) + " is too large");
    return;
  }
  Value x = ctx.operand(0);
  if (!x)
    return;
  if (ArrayRef<int64_t>(result) == type.getShape()) {
    ctx.setOutputAlias(0, *ctx.input(0));
    return;
  }
  if (typeOf(x).getNumElements() == 0 ||
      *checkedNumElements(result) == 0) {
    ctx.unsupported("zero-size tile");
    return;
  }
  Value y = reshape(ctx, x, interleaved);
  if (y)
    y = ctx.createValue<nn::ExpandOp>(y, ctx.i64s(expanded));
  y = reshape(ctx, y, result);
  ctx.setOutput(0, y);
}

/// Input 0 as N x C x H x W; blocksize from the attribute.
/// The N x C x H x W input of DepthToSpace / SpaceToDepth: its sizes and
/// the block size.
struct BlockInput {
  int64_t n, c, h, w, block;
};

static std::optional<BlockInput> readBlockInput(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  if (!type)
    return std::nullopt;
  if (type.getRank() != 4) {
    ctx.fail("input must be N x C x H x W, got rank " + Twine(type.getRank()));
    return std::nullopt;
  }
  if (!ctx.attr("blocksize")) {
    ctx.fail("attribute 'blocksize' is required");
    return std::nullopt;
  }
  int64_t block = ctx.intAttr("blocksize", 1);
  if (block <= 0 || block > (int64_t(1) << 20)) {
    ctx.fail("blocksize " + Twine(block) + " must be positive");
    return std::nullopt;
  }
  return BlockInput{type.getDimSize(0), type.getDimSize(1), type.getDimSize(2),
                    type.getDimSize(3), block};
}

static void convertDepthToSpace(NodeContext &ctx) {
  std::optional<BlockInput> in = readBlockInput(ctx);
  if (!in)
    return;
  auto [n, c, h, w, b] = *in;
  if (c % (b * b) != 0) {
    ctx.fail("channels " + Twine(c) + " are not a multiple of blocksize^2 " +
             Twine(b * b));
    return;
  }
  std::string mode = ctx.stringAttr("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") {
    ctx.fail("attribute 'mode' has unknown value '" + mode + "'");
    return;
  }
  Value x = ctx.operand(0);
  if (!x)
    return;
  int64_t cOut = c / (b * b);
  Value y;
  if (mode == "DCR") {
    y = reshape(ctx, x, {n, b, b, cOut, h, w});
    y = transpose(ctx, y, {0, 3, 4, 1, 5, 2});
  } else {
    y = reshape(ctx, x, {n, cOut, b, b, h, w});
    y = transpose(ctx, y, {0, 1, 4, 2, 5, 3});
  }
  y = reshape(ctx, y, {n, cOut, h * b, w * b});
  ctx.setOutput(0, y);
}

static void convertSpaceToDepth(NodeContext &ctx) {
  std::optional<BlockInput> in = readBlockInput(ctx);
  if (!in)
    return;
  auto [n, c, h, w, b] = *in;
  if (h % b != 0 || w % b != 0) {
    ctx.fail("spatial size " + Twine(h) + "x" + Twine(w) +
             " is not a multiple of blocksize " + Twine(b));
    return;
  }
  Value x = ctx.operand(0);
  Value y = reshape(ctx, x, {n, c, h / b, b, w / b, b});
  y = transpose(ctx, y, {0, 3, 5, 1, 2, 4});
  y = reshape(ctx, y, {n, c * b * b, h / b, w / b});
  ctx.setOutput(0, y);
}

//===----------------------------------------------------------------------===//
// Compress, OneHot
//===----------------------------------------------------------------------===//

static void convertCompress(NodeContext &ctx) {
  if (!ctx.requireInputs(2))
    return;
  RankedTensorType type = ctx.inputType(0);
  const HostTensor *condition = ctx.constantInput(1);
  if (!condition) {
    ctx.unsupported("input 'condition' is not a constant (the result shape "
                    "would depend on run-time data)");
    return;
  }
  if (condition->rank() != 1) {
    ctx.fail("condition must be 1-D, got rank " + Twine(condition->rank()));
    return;
  }
  Value x = ctx.operand(0);
  if (!x)
    return;
  int64_t axis = 0, dim;
  if (ctx.attr("axis")) {
    auto a = ctx.normalizeAxis(ctx.intAttr("axis", 0), type.getRank());
    if (!a)
      return;
    axis = *a;
    dim = type.getDimSize(axis);
  } else {
    // No axis: the flattened input.
    dim = type.getNumElements();
    x = reshape(ctx, x, {dim});
  }
  if (condition->numElements() > dim) {
    ctx.fail("condition has " + Twine(condition->numElements()) +
             " entries for an axis of size " + Twine(dim));
    return;
  }
  // Entries past the condition's end are not selected.
  std::vector<int64_t> selected;
  for (int64_t i = 0; i < condition->numElements(); ++i)
    if (condition->getDouble(i) != 0.0)
      selected.push_back(i);
  if (selected.empty()) {
    ctx.unsupported("a condition that selects nothing (zero-size result)");
    return;
  }
  int64_t count = selected.size();
  Value y = ctx.createValue<nn::GatherOp>(
      x, indexTable(ctx, {count}, std::move(selected)), ctx.i64(axis));
  ctx.setOutput(0, y);
}

static void convertOneHot(NodeContext &ctx) {
  if (!ctx.requireInputs(3))
    return;
  RankedTensorType indicesType = ctx.inputType(0, "indices");
  RankedTensorType valuesType = ctx.inputType(2, "values");
  const HostTensor *depthT = ctx.requireConstant(1, "depth");
  if (!depthT)
    return;
  if (depthT->numElements() != 1) {
    ctx.fail("input 'depth' must hold one value");
    return;
  }
  // A float depth is truncated, as the reference implementation does.
  double depthValue = depthT->getDouble(0);
  if (!(depthValue >= 1 && depthValue <= double(kMaxDim))) {
    ctx.fail("depth " + std::to_string(depthValue) + " must be positive");
    return;
  }
  int64_t depth = int64_t(depthValue);
  if (valuesType.getRank() != 1 || valuesType.getDimSize(0) != 2) {
    ctx.fail("input 'values' must be [off_value, on_value]");
    return;
  }
  int64_t rank = indicesType.getRank() + 1;
  auto axis = ctx.normalizeAxis(ctx.intAttr("axis", -1), rank);
  if (!axis)
    return;
  Value indices = ctx.operand(0), values = ctx.operand(2);
  if (!indices || !values)
    return;
  // Integer indices (floats are truncated toward zero, as ONNX says).
  Type i64 = ctx.builder().getI64Type();
  if (indicesType.getElementType() != i64)
    indices = ctx.createValue<nn::CastOp>(indices, TypeAttr::get(i64));
  Type element = valuesType.getElementType();
  Type hotType = isa<FloatType>(element) ? element
                                         : Type(ctx.builder().getF32Type());
  auto oneHot = [&](Value idx) -> Value {
    if (!idx)
      return nullptr;
    return ctx.createValue<nn::OneHotOp>(idx, ctx.i64(depth),
                                         TypeAttr::get(hotType));
  };
  // nn.one_hot leaves indices outside [0, depth) all zero: indices in
  // [-depth, 0) hit through `index + depth`, the others through `index`.
  Value shifted =
      binary<nn::AddOp>(ctx, indices, scalar(ctx, i64, double(depth)));
  Value hot = binary<nn::AddOp>(ctx, oneHot(indices), oneHot(shifted));
  if (hot && hotType != element)
    hot = ctx.createValue<nn::CastOp>(hot, TypeAttr::get(element));
  Value off = sliceAxis(ctx, values, 0, 0, 1);
  Value on = sliceAxis(ctx, values, 0, 1, 1);
  Value y = binary<nn::AddOp>(
      ctx, off, binary<nn::MulOp>(ctx, hot, binary<nn::SubOp>(ctx, on, off)));
  // The new axis is last; move it to `axis`.
  SmallVector<int64_t> perm;
  for (int64_t d = 0; d < rank - 1; ++d) {
    if (d == *axis)
      perm.push_back(rank - 1);
    perm.push_back(d);
  }
  if (*axis == rank - 1)
    perm.push_back(rank - 1);
  y = transpose(ctx, y, perm);
  ctx.setOutput(0, y);
}

//===----------------------------------------------------------------------===//
// Pad
//===----------------------------------------------------------------------===//

static void convertPad(NodeContext &ctx) {
  if (!ctx.requireInputs(1))
    return;
  RankedTensorType type = ctx.inputType(0);
  int64_t rank = type.getRank();
  SmallVector<int64_t> pads;
  std::string mode = ctx.stringAttr("mode", "constant");
  Value fill;
  double fillValue = 0.0;
  bool v11 = ctx.sinceVersion() >= 11;
  if (!v11) {
    // Attributes before opset 11 (`paddings` in opset 1).
    auto given = ctx.intsAttr(ctx.sinceVersion() < 2 ? "paddings" : "pads");
    if (ctx.failed())
      return;
    if (!given) {
      ctx.fail("attribute 'pads' is required");
      return;
    }
    pads = *given;
    fillValue = ctx.floatAttr("value", 0.0);
  } else {
    if (!ctx.requireInputs(2))
      return;
    auto given = ctx.constantInts(1, "pads");
    if (!given)
      return;
    pads = *given;
  }
  // Opset 18: `axes` names the padded axes; pads has two entries per axis.
  SmallVector<int64_t> axes = range(0, rank);
  if (v11 && ctx.hasInput(3)) {
    auto given = ctx.constantInts(3, "axes");
    if (!given)
      return;
    SmallVector<int64_t> normalized;
    for (int64_t a : *given) {
      auto n = ctx.normalizeAxis(a, rank, "axes");
      if (!n)
        return;
      if (llvm::is_contained(normalized, *n)) {
        ctx.fail("axes " + shapeToString(*given) + " name an axis twice");
        return;
      }
      normalized.push_back(*n);
    }
    axes = normalized;
  }
  int64_t n = axes.size();
  if (int64_t(pads.size()) != 2 * n) {
    ctx.fail("pads " + shapeToString(pads) + " has " + Twine(pads.size()) +
             " entries for " + Twine(n) + " axes");
    return;
  }
  if (mode != "constant" && mode != "reflect" && mode != "edge" &&
      mode != "wrap") {
    ctx.fail("attribute 'mode' has unknown value '" + mode + "'");
    return;
  }
  Value x = ctx.operand(0);
  if (!x)
    return;
  Type element = type.getElementType();
  if (mode == "constant") {
    if (v11 && ctx.hasInput(2)) {
      // The fill value may be a run-time scalar.
      if (ctx.input(2)->type.getNumElements() != 1) {
        ctx.fail("input 'constant_value' must be a scalar");
        return;
      }
      fill = reshape(ctx, ctx.operand(2), {});
    } else {
      fill = scalar(ctx, element, fillValue);
    }
    if (!fill)
      return;
  }
  for (int64_t i = 0; i < n && x; ++i) {
    int64_t axis = axes[i], before = pads[i], after = pads[n + i];
    int64_t dim = typeOf(x).getDimSize(axis);
    if (before < -dim || after < -dim || before + after < -dim ||
        before > kMaxDim || after > kMaxDim) {
      ctx.fail("pads " + shapeToString(pads) + " are out of range for axis " +
               Twine(axis) + " of size " + Twine(dim));
      return;
    }
    // Negative pads crop.
    if (before < 0 || after < 0) {
      int64_t cropBefore = std::max<int64_t>(0, -before);
      int64_t cropAfter = std::max<int64_t>(0, -after);
      x = sliceAxis(ctx, x, axis, cropBefore, dim - cropBefore - cropAfter);
      dim -= cropBefore + cropAfter;
      before = std::max<int64_t>(0, before);
      after = std::max<int64_t>(0, after);
    }
    if (before == 0 && after == 0)
      continue;
    if (dim == 0 && mode != "constant") {
      ctx.fail("cannot " + mode + "-pad an empty axis " + Twine(axis));
      return;
    }
    if ((mode == "reflect" && (before >= dim || after >= dim)) ||
        (mode == "wrap" && (before > dim || after > dim))) {
      ctx.unsupported(mode + " pads " + shapeToString(pads) +
                      " larger than axis " + Twine(axis) + " of size " +
                      Twine(dim));
      return;
    }
    auto border = [&](int64_t count, bool atStart) -> Value {
      SmallVector<int64_t> shape(typeOf(x).getShape());
      shape[axis] = count;
      if (mode == "constant")
        return ctx.createValue<nn::ExpandOp>(fill, ctx.i64s(shape));
      if (mode == "edge") {
        Value edge = sliceAxis(ctx, x, axis, atStart ? 0 : dim - 1, 1);
        if (!edge || count == 1)
          return edge;
        return ctx.createValue<nn::ExpandOp>(edge, ctx.i64s(shape));
      }
      if (mode == "reflect")
        // x[count], ..., x[1] before; x[dim - 2], ..., x[dim - 1 - count]
        // after.
        return sliceAxis(ctx, x, axis, atStart ? count : dim - 2, count, -1);
      // wrap: the far end's elements.
      return sliceAxis(ctx, x, axis, atStart ? dim - count : 0, count);
    };
    SmallVector<Value> pieces;
    if (before > 0)
      pieces.push_back(border(before, true));
    pieces.push_back(x);
    if (after > 0)
      pieces.push_back(border(after, false));
    if (llvm::any_of(pieces, [](Value v) { return !v; }))
      return;
    x = ctx.createValue<nn::ConcatOp>(ValueRange(pieces), ctx.i64(axis));
  }
  if (!x)
    return;
  if (x == ctx.input(0)->value)
    ctx.setOutputAlias(0, *ctx.input(0));
  else
    ctx.setOutput(0, x);
}

//===----------------------------------------------------------------------===//
// Einsum
//===----------------------------------------------------------------------===//

namespace {
/// An operand during the contraction: its value and one letter per
/// dimension (ellipsis dimensions get letters past 'z').
struct Term {
  Value value;
  SmallVector<char> letters;
};
} // namespace

/// Takes the diagonal of every letter that repeats in `t`.
static bool takeDiagonals(NodeContext &ctx, Term &t) {
  for (;;) {
    int64_t rank = t.letters.size();
    int64_t first = -1, second = -1;
    for (int64_t i = 0; i < rank && first < 0; ++i)
      for (int64_t j = i + 1; j < rank; ++j)
        if (t.letters[i] == t.letters[j]) {
          first = i;
          second = j;
          break;
        }
    if (first < 0)
      return true;
    ArrayRef<int64_t> shape = typeOf(t.value).getShape();
    int64_t size = shape[first];
    if (shape[second] != size) {
      ctx.fail("dimensions of the repeated letter '" +
               Twine(t.letters[first]) + "' differ in size");
      return false;
    }
    // Move the pair last, flatten it, take every (size + 1)-th element.
    SmallVector<int64_t> perm;
    SmallVector<char> letters;
    SmallVector<int64_t> flat;
    for (int64_t d = 0; d < rank; ++d)
      if (d != first && d != second) {
        perm.push_back(d);
        letters.push_back(t.letters[d]);
        flat.push_back(shape[d]);
      }
    perm.append({first, second});
    letters.push_back(t.letters[first]);
    flat.push_back(size * size);
    Value v = transpose(ctx, t.value, perm);
    v = reshape(ctx, v, flat);
    v = sliceAxis(ctx, v, flat.size() - 1, 0, size, size + 1);
    if (!v)
      return false;
    t.value = v;
    t.letters = letters;
  }
}

/// Sums `t` over the letters not in `keep`.
static bool sumOut(NodeContext &ctx, Term &t, ArrayRef<char> keep) {
  SmallVector<int64_t> axes;
  SmallVector<char> letters;
  for (auto [d, c] : llvm::enumerate(t.letters)) {
    if (llvm::is_contained(keep, c))
      letters.push_back(c);
    else
      axes.push_back(d);
  }
  if (axes.empty())
    return true;
  t.value = ctx.createValue<nn::ReduceSumOp>(t.value, ctx.i64s(axes),
                                             ctx.boolean(false));
  t.letters = letters;
  return bool(t.value);
}

/// `a` and `b` contracted into one term with the letters in `keep`
/// (batched matmul: [batch, left, k] x [batch, k, right]).
static std::optional<Term> contract(NodeContext &ctx, Term a, Term b,
                                    ArrayRef<char> keep) {
  SmallVector<char> batch, left, right, inner;
  for (char c : a.letters) {
    bool inB = llvm::is_contained(b.letters, c);
    bool kept = llvm::is_contained(keep, c);
    if (inB && kept)
      batch.push_back(c);
    else if (inB)
      inner.push_back(c);
    else
      left.push_back(c);
  }
  for (char c : b.letters)
    if (!llvm::is_contained(a.letters, c))
      right.push_back(c);
  auto sizeOf = [&](const Term &t, char c) {
    auto it = llvm::find(t.letters, c);
    return typeOf(t.value).getDimSize(it - t.letters.begin());
  };
  for (char c : batch)
    if (sizeOf(a, c) != sizeOf(b, c)) {
      ctx.unsupported("broadcasting dimensions in an einsum");
      return std::nullopt;
    }
  for (char c : inner)
    if (sizeOf(a, c) != sizeOf(b, c)) {
      ctx.fail("contracted dimensions differ in size");
      return std::nullopt;
    }
  auto arrange = [&](const Term &t, ArrayRef<char> first, ArrayRef<char> mid,
                     ArrayRef<char> last) -> Value {
    SmallVector<int64_t> perm;
    int64_t sizes[3] = {1, 1, 1};
    ArrayRef<char> groups[3] = {first, mid, last};
    for (int g = 0; g < 3; ++g)
      for (char c : groups[g]) {
        auto it = llvm::find(t.letters, c);
        perm.push_back(it - t.letters.begin());
        sizes[g] *= sizeOf(t, c);
      }
    Value v = transpose(ctx, t.value, perm);
    return reshape(ctx, v, {sizes[0], sizes[1], sizes[2]});
  };
  Value lhs = arrange(a, batch, left, inner);
  Value rhs = arrange(b, batch, inner, right);
  Value product = binary<nn::MatMulOp>(ctx, lhs, rhs);
  SmallVector<int64_t> shape;
  Term result;
  for (auto [group, t] : {std::pair(ArrayRef<char>(batch), &a),
                          std::pair(ArrayRef<char>(left), &a),
                          std::pair(ArrayRef<char>(right), &b)})
    for (char c : group) {
      shape.push_back(sizeOf(*t, c));
      result.letters.push_back(c);
    }
  result.value = reshape(ctx, product, shape);
  if (!result.value)
    return std::nullopt;
  return result;
}

static void convertEinsum(NodeContext &ctx) {
  std::string equation = ctx.stringAttr("equation", "");
  if (ctx.failed())
    return;
  equation.erase(llvm::remove_if(equation, llvm::isSpace), equation.end());
  if (equation.empty()) {
    ctx.fail("attribute 'equation' is required");
    return;
  }
  size_t arrow = equation.find("->");
  std::string lhs = equation.substr(0, arrow);
  std::optional<std::string> rhs;
  if (arrow != std::string::npos)
    rhs = equation.substr(arrow + 2);
  SmallVector<StringRef> specs;
  StringRef(lhs).split(specs, ',');
  if (specs.size() != ctx.numInputs() || specs.empty()) {
    ctx.fail("equation '" + equation + "' has " + Twine(specs.size()) +
             " operands for " + Twine(ctx.numInputs()) + " inputs");
    return;
  }
  // Letters of every operand, the ellipsis expanded to letters past 'z'
  // (right-aligned, so equal ellipsis ranks share letters).
  int64_t ellipsisRank = -1;
  SmallVector<Term> terms;
  for (auto [i, spec] : llvm::enumerate(specs)) {
    Term t;
    t.value = ctx.operand(i);
    if (!t.value)
      return;
    int64_t rank = typeOf(t.value).getRank();
    size_t dots = spec.find("...");
    std::string named = spec.str();
    if (dots != StringRef::npos)
      named.erase(dots, 3);
    if (!llvm::all_of(named, llvm::isAlpha) ||
        int64_t(named.size()) > rank ||
        (dots == StringRef::npos && int64_t(named.size()) != rank)) {
      ctx.fail("operand " + Twine(i) + " term '" + spec +
               "' does not match its rank " + Twine(rank));
      return;
    }
    int64_t er = rank - named.size();
    if (dots != StringRef::npos) {
      if (ellipsisRank >= 0 && er != ellipsisRank) {
        ctx.unsupported("ellipses of different ranks (broadcasting)");
        return;
      }
      ellipsisRank = er;
    }
    for (size_t k = 0; k < spec.size(); ++k) {
      if (k == dots) {
        for (int64_t e = 0; e < er; ++e)
          t.letters.push_back(char('z' + 1 + e));
        k += 2;
        continue;
      }
      t.letters.push_back(spec[k]);
    }
    terms.push_back(std::move(t));
  }
  // The output letters: given, or (implicit mode) the ellipsis then the
  // letters that appear once, alphabetically.
  SmallVector<char> output;
  if (rhs) {
    size_t dots = rhs->find("...");
    for (size_t k = 0; k < rhs->size(); ++k) {
      if (k == dots) {
        for (int64_t e = 0; e < std::max<int64_t>(ellipsisRank, 0); ++e)
          output.push_back(char('z' + 1 + e));
        k += 2;
        continue;
      }
      char c = (*rhs)[k];
      if (!llvm::isAlpha(c) || llvm::is_contained(output, c)) {
        ctx.fail("output term '" + *rhs + "' is invalid");
        return;
      }
      output.push_back(c);
    }
  } else {
    for (int64_t e = 0; e < std::max<int64_t>(ellipsisRank, 0); ++e)
      output.push_back(char('z' + 1 + e));
    std::map<char, int> counts;
    for (const Term &t : terms)
      for (char c : t.letters)
        if (c <= 'z')
          ++counts[c];
    for (auto [c, count] : counts)
      if (count == 1)
        output.push_back(c);
  }
  for (char c : output)
    if (llvm::none_of(terms, [&](const Term &t) {
          return llvm::is_contained(t.letters, c);
        })) {
      ctx.fail("output letter '" + Twine(c) + "' names no input dimension");
      return;
    }
  // Diagonals, then sums over letters that no later step needs, then
  // pairwise contractions left to right.
  auto needed = [&](size_t from, const Term *except) {
    SmallVector<char> keep(output);
    for (size_t j = from; j < terms.size(); ++j)
      if (&terms[j] != except)
        llvm::append_range(keep, terms[j].letters);
    return keep;
  };
  for (Term &t : terms)
    if (!takeDiagonals(ctx, t))
      return;
  Term acc = terms[0];
  if (!sumOut(ctx, acc, needed(1, nullptr)))
    return;
  for (size_t i = 1; i < terms.size(); ++i) {
    Term next = terms[i];
    SmallVector<char> keepNext = needed(i + 1, nullptr);
    llvm::append_range(keepNext, acc.letters);
    if (!sumOut(ctx, next, keepNext))
      return;
    auto c = contract(ctx, acc, next, needed(i + 1, nullptr));
    if (!c)
      return;
    acc = *c;
  }
  if (!sumOut(ctx, acc, output))
    return;
  SmallVector<int64_t> perm;
  for (char c : output)
    perm.push_back(llvm::find(acc.letters, c) - acc.letters.begin());
  Value y = transpose(ctx, acc.value, perm);
  ctx.setOutput(0, y);
}

//===----------------------------------------------------------------------===//
// GatherElements, GatherND, ScatterElements, Scatter, ScatterND
//===----------------------------------------------------------------------===//

/// Constant indices must be in range at import: `sizeOf(i)` is the size of
/// the dimension element `i` of the indices addresses.
static bool checkConstantIndices(NodeContext &ctx, size_t input,
                                 llvm::function_ref<int64_t(int64_t)> sizeOf) {
  const HostTensor *indices = ctx.constantInput(input);
  if (!indices)
    return true;
  for (int64_t i = 0; i < indices->numElements(); ++i) {
    int64_t index = indices->getInt(i), size = sizeOf(i);
    if (index < -size || index >= size) {
      ctx.fail("index " + Twine(index) + " (element " + Twine(i) +
               " of the indices) is out of range for a dimension of size " +
               Twine(size));
      return false;
    }
  }
  return true;
}

/// Indices as an i32/i64 tensor (the nn ops' index types).
static bool checkIndexType(NodeContext &ctx, size_t input) {
  RankedTensorType type = ctx.inputType(input, "indices");
  if (!type)
    return false;
  auto integer = dyn_cast<IntegerType>(type.getElementType());
  if (!integer || (integer.getWidth() != 32 && integer.getWidth() != 64)) {
    ctx.fail("indices must be int32 or int64");
    return false;
  }
  return true;
}

static std::optional<std::string> scatterReduction(NodeContext &ctx) {
  // Opset 16 added reduction (none/add/mul), opset 18 max/min.
  std::string reduction = ctx.stringAttr("reduction", "none");
  if (ctx.failed())
    return std::nullopt;
  if (!llvm::is_contained({"none", "add", "mul", "max", "min"}, reduction)) {
    ctx.fail("attribute 'reduction' has unknown value '" + reduction + "'");
    return std::nullopt;
  }
  return reduction;
}

static void convertGatherElements(NodeContext &ctx) {
  if (!ctx.requireInputs(2) || !checkIndexType(ctx, 1))
    return;
  RankedTensorType type = ctx.inputType(0);
  auto axis = ctx.normalizeAxis(ctx.intAttr("axis", 0), type.getRank());
  if (!axis)
    return;
  int64_t size = type.getDimSize(*axis);
  if (!checkConstantIndices(ctx, 1, [&](int64_t) { return size; }))
    return;
  Value data = ctx.operand(0), indices = ctx.operand(1);
  if (data && indices)
    ctx.setOutput(0, ctx.createValue<nn::GatherElementsOp>(data, indices,
                                                           ctx.i64(*axis)));
}

static void convertScatterElements(NodeContext &ctx) {
  if (!ctx.requireInputs(3) || !checkIndexType(ctx, 1))
    return;
  RankedTensorType type = ctx.inputType(0);
  auto axis = ctx.normalizeAxis(ctx.intAttr("axis", 0), type.getRank());
  auto reduction = axis ? scatterReduction(ctx) : std::nullopt;
  if (!reduction)
    return;
  int64_t size = type.getDimSize(*axis);
  if (!checkConstantIndices(ctx, 1, [&](int64_t) { return size; }))
    return;
  Value data = ctx.operand(0), indices = ctx.operand(1),
        updates = ctx.operand(2);
  if (data && indices && updates)
    ctx.setOutput(0, ctx.createValue<nn::ScatterElementsOp>(
                         data, indices, updates, ctx.i64(*axis),
                         StringAttr::get(ctx.getContext(), *reduction)));
}

/// The data dimension element `i` of ND indices (last dimension q) addresses.
static int64_t ndDimension(ArrayRef<int64_t> dataShape, int64_t q,
                           int64_t batchDims, int64_t i) {
  return dataShape[batchDims + i % q];
}

static void convertGatherND(NodeContext &ctx) {
  if (!ctx.requireInputs(2) || !checkIndexType(ctx, 1))
    return;
  RankedTensorType type = ctx.inputType(0), indicesType = ctx.inputType(1);
  int64_t batchDims = ctx.intAttr("batch_dims", 0);
  if (indicesType.getRank() < 1 || batchDims < 0 ||
      batchDims >= indicesType.getRank() ||
      batchDims + indicesType.getShape().back() > type.getRank()) {
    ctx.fail("indices of shape " + shapeToString(indicesType.getShape()) +
             " with batch_dims " + Twine(batchDims) +
             " do not address data of rank " + Twine(type.getRank()));
    return;
  }
  int64_t q = indicesType.getShape().back();
  if (q > 0 && !checkConstantIndices(ctx, 1, [&](int64_t i) {
        return ndDimension(type.getShape(), q, batchDims, i);
      }))
    return;
  Value data = ctx.operand(0), indices = ctx.operand(1);
  if (data && indices)
    ctx.setOutput(0, ctx.createValue<nn::GatherNDOp>(data, indices,
                                                     ctx.i64(batchDims)));
}

static void convertScatterND(NodeContext &ctx) {
  if (!ctx.requireInputs(3) || !checkIndexType(ctx, 1))
    return;
  RankedTensorType type = ctx.inputType(0), indicesType = ctx.inputType(1);
  auto reduction = scatterReduction(ctx);
  if (!reduction)
    return;
  if (indicesType.getRank() < 1 ||
      indicesType.getShape().back() > type.getRank()) {
    ctx.fail("indices of shape " + shapeToString(indicesType.getShape()) +
             " do not address data of rank " + Twine(type.getRank()));
    return;
  }
  int64_t q = indicesType.getShape().back();
  if (q > 0 && !checkConstantIndices(ctx, 1, [&](int64_t i) {
        return ndDimension(type.getShape(), q, 0, i);
      }))
    return;
  Value data = ctx.operand(0), indices = ctx.operand(1),
        updates = ctx.operand(2);
  if (data && indices && updates)
    ctx.setOutput(0, ctx.createValue<nn::ScatterNDOp>(
                         data, indices, updates, ctx.i64(0),
                         StringAttr::get(ctx.getContext(), *reduction)));
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

void onnx_import::registerIndexingOps(OpTable &table) {
  // Schema versions from ONNX's Changelog.md.
  table["Tile"] = {convertTile, {1, 6, 13}, 6};
  table["DepthToSpace"] = {convertDepthToSpace, {1, 11, 13}};
  table["SpaceToDepth"] = {convertSpaceToDepth, {1, 13}};
  table["Compress"] = {convertCompress, {9, 11}};
  table["OneHot"] = {convertOneHot, {9, 11}};
  table["Pad"] = {convertPad, {1, 2, 11, 13, 18, 19, 21}};
  table["Einsum"] = {convertEinsum, {12}};
  table["GatherElements"] = {convertGatherElements, {11, 13}};
  table["GatherND"] = {convertGatherND, {11, 12, 13}};
  table["ScatterElements"] = {convertScatterElements, {11, 13, 16, 18}};
  // Scatter (deprecated in opset 11) is ScatterElements without reduction.
  table["Scatter"] = {convertScatterElements, {9, 11}};
  table["ScatterND"] = {convertScatterND, {11, 13, 16, 18}};
}
