//===- ConvertDataDependent.cpp - NonZero, Unique, NonMaxSuppression ------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Ops whose output size depends on the input values. pipedream compiles
// static shapes, so such an output gets the size the model declares for it
// (its graph output type or value_info, fully static: torch.onnx and ONNX's
// own tests write it), and the compiled code counts the entries the values
// give and fails the run when they differ (nn.check_size, a run-time check:
// the step is discarded and the runtime names the node, the output and both
// sizes). Without a declared static size the op is not supported, naming the
// output. Each op is a composition of nn ops over the input's static size:
//
//   compact(keep[E], rows[E, W], N): the rows whose keep is set, in order,
//     as an [N, W] tensor: pos = exclusive cumsum(keep), a scatter of the
//     kept rows to row min(pos, N) of an [N + 1, W] zero tensor (the others
//     to row N), then rows [0, N). The count is sum(keep).
//   NonZero: compact over the flattened input of its coordinates.
//   Unique: pairwise equality of the E elements (or rows along `axis`) as
//     an E x E matrix; first occurrences are those with no equal element
//     before them; a value's rank is the number of distinct values before
//     it (sorted: smaller, lexicographically for rows; else: first seen
//     earlier). Y, indices and counts scatter by rank; inverse_indices is
//     the rank.
//   NonMaxSuppression: per batch and class the boxes sorted by score
//     (nn.top_k, ties in box order), their pairwise IoU, then the greedy
//     selection unrolled over the B boxes (a box is kept when its score is
//     above the threshold, no kept box before it overlaps it by more than
//     the IoU threshold and fewer than max_output_boxes_per_class are kept);
//     compact over (batch, class, box) rows.
// The pairwise forms cost E^2 (Unique) and B^2 (NonMaxSuppression) elements
// and the selection B steps: inputs past the limits below are refused.
//
//===----------------------------------------------------------------------===//

#include "Decompose.h"

using namespace mlir;
using namespace pipedream;
using namespace pipedream::onnx_import;
using namespace pipedream::onnx_import::decompose;

namespace {

/// Elements of the pairwise tables (Unique's E x E x R, NMS's P x B x B).
constexpr int64_t kMaxPairwiseElements = int64_t(1) << 24;
/// Boxes per batch and class NonMaxSuppression unrolls its selection over.
constexpr int64_t kMaxBoxes = 512;
/// Elements of NonZero's coordinate table (rank x E).
constexpr int64_t kMaxCoordinates = int64_t(1) << 24;

Type i64Type(NodeContext &ctx) { return IntegerType::get(ctx.getContext(), 64); }

/// The declared size of output `i` along its data-dependent `axis`, with the
/// rest of its declared shape equal to `shape` (where `shape` is known: -1
/// is the data-dependent axis itself). Reports why not and returns -1.
int64_t declaredSize(NodeContext &ctx, size_t i, ArrayRef<int64_t> shape,
                     int64_t axis) {
  std::string name = ctx.outputName(i);
  auto declared = ctx.declaredOutputShape(i);
  if (!declared) {
    ctx.unsupported("the size of output '" + name +
                    "' depends on the input values and the model declares "
                    "no static shape for it (pipedream compiles the declared "
                    "size of a data-dependent output; export the model with "
                    "its output shapes, or with this op's result computed "
                    "outside the model)");
    return -1;
  }
  bool matches = declared->size() == shape.size();
  for (size_t d = 0; matches && d < shape.size(); ++d)
    matches = int64_t(d) == axis || (*declared)[d] == shape[d];
  if (!matches) {
    SmallVector<int64_t> expected(shape);
    expected[axis] = -1;
    ctx.fail("output '" + name + "' is declared of shape " +
             shapeToString(*declared) + ", which is not " +
             shapeToString(expected) + " (-1: the data-dependent size)");
    return -1;
  }
  if ((*declared)[axis] == 0) {
    ctx.unsupported("output '" + name +
                    "' declared with 0 entries (pipedream has no zero-size "
                    "tensors)");
    return -1;
  }
  return (*declared)[axis];
}

/// The rows of `rows` ([E, W]) whose `keep` ([E], i1) is set, each at row
/// `pos` ([E], i64) of an [n, W] result (rows at n or past it are dropped;
/// rows no kept row reaches are zero); `reduction` "add" sums the rows that
/// meet (Unique's counts). Kept rows go to row min(pos, n) of an [n + 1, W]
/// scatter, the others to row n, then rows [0, n).
Value scatterRows(NodeContext &ctx, Value keep, Value pos, Value rows,
                  int64_t n, StringRef reduction = "none") {
  if (!keep || !pos || !rows)
    return nullptr;
  ArrayRef<int64_t> shape = typeOf(rows).getShape();
  int64_t e = shape[0], w = shape[1];
  Value limit = scalar(ctx, i64Type(ctx), double(n));
  Value row = ctx.failed()
                  ? Value()
                  : ctx.createValue<nn::WhereOp>(
                        keep, binary<nn::MinOp>(ctx, pos, limit), limit);
  Value index = reshape(ctx, row, {e, 1});
  index = index ? ctx.createValue<nn::ExpandOp>(index, ctx.i64s({e, w}))
                : Value();
  Type element = typeOf(rows).getElementType();
  Value zeros = constant(ctx, element, {n + 1, w},
                         std::vector<double>(size_t((n + 1) * w), 0.0));
  Value scattered =
      index && zeros ? ctx.createValue<nn::ScatterElementsOp>(
                           zeros, index, rows, ctx.i64(0),
                           StringAttr::get(ctx.getContext(), reduction))
                     : Value();
  return sliceAxis(ctx, scattered, 0, 0, n);
}

/// `x` as i64.
Value toInt(NodeContext &ctx, Value x) {
  return x ? ctx.createValue<nn::CastOp>(x, TypeAttr::get(i64Type(ctx)))
           : Value();
}

/// The sum of `x` over `axes` (dropped).
Value sum(NodeContext &ctx, Value x, ArrayRef<int64_t> axes) {
  return x ? ctx.createValue<nn::ReduceSumOp>(x, ctx.i64s(axes),
                                              ctx.boolean(false))
           : Value();
}

/// The rows of `rows` ([E, W]) whose `keep` ([E], i1) is set, in order, as
/// [n, W]; `count` gets the number of kept rows (rank-0 i64).
Value compact(NodeContext &ctx, Value keep, Value rows, int64_t n,
              Value &count) {
  Value keepInt = toInt(ctx, keep);
  Value pos = keepInt ? ctx.createValue<nn::CumSumOp>(
                            keepInt, ctx.i64(0), ctx.boolean(true),
                            ctx.boolean(false))
                      : Value();
  count = sum(ctx, keepInt, {0});
  return scatterRows(ctx, keep, pos, rows, n);
}

/// `value` checked at run time: `count` (the entries the values give) must
/// be the compiled `n` (nn.check_size, naming output `i`).
Value checked(NodeContext &ctx, Value value, Value count, int64_t n,
              size_t i) {
  if (!value || !count)
    return nullptr;
  return ctx.createValue<nn::CheckSizeOp>(
      value, count, ctx.i64(n), StringAttr::get(ctx.getContext(), ctx.opType()),
      StringAttr::get(ctx.getContext(), ctx.outputName(i)));
}

/// `x != 0` as i1 (a bool input as it is).
Value nonZeroMask(NodeContext &ctx, Value x) {
  Type element = typeOf(x).getElementType();
  if (element.isInteger(1))
    return x;
  Value eq = binary<nn::EqualOp>(ctx, x, scalar(ctx, element, 0.0));
  return eq ? ctx.createValue<nn::NotOp>(eq) : Value();
}

//===----------------------------------------------------------------------===//
// NonZero
//===----------------------------------------------------------------------===//

void convertNonZero(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0, "X");
  if (!type)
    return;
  int64_t rank = type.getRank();
  if (rank == 0) {
    ctx.unsupported("a scalar input");
    return;
  }
  ArrayRef<int64_t> shape = type.getShape();
  int64_t e = type.getNumElements();
  if (rank * e > kMaxCoordinates) {
    ctx.unsupported("an input of " + Twine(e) + " elements (its coordinate "
                    "table of rank x elements = " + Twine(rank * e) +
                    " entries is limited to " + Twine(kMaxCoordinates) + ")");
    return;
  }
  int64_t n = declaredSize(ctx, 0, {rank, -1}, 1);
  if (n < 0)
    return;
  // The coordinates of every element, [E, rank].
  std::vector<int64_t> coords(size_t(e * rank));
  SmallVector<int64_t> at(rank, 0);
  for (int64_t i = 0; i < e; ++i) {
    for (int64_t d = 0; d < rank; ++d)
      coords[size_t(i * rank + d)] = at[d];
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++at[d] < shape[d])
        break;
      at[d] = 0;
    }
  }
  Value x = ctx.operand(0, "X");
  if (!x)
    return;
  Value keep = reshape(ctx, nonZeroMask(ctx, x), {e});
  Value count;
  Value rows = compact(ctx, keep, indexTable(ctx, {e, rank}, std::move(coords)),
                       n, count);
  Value result = transpose(ctx, rows, {1, 0});
  if (Value y = checked(ctx, result, count, n, 0))
    ctx.setOutput(0, y);
}

//===----------------------------------------------------------------------===//
// Unique
//===----------------------------------------------------------------------===//

void convertUnique(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0, "X");
  if (!type)
    return;
  ArrayRef<int64_t> shape = type.getShape();
  int64_t rank = type.getRank();
  Type element = type.getElementType();
  if (element.isInteger(1) || element.isUnsignedInteger()) {
    ctx.unsupported("input 'X' of element type " +
                    std::string(element.isInteger(1) ? "bool" : "unsigned"));
    return;
  }
  bool sorted = ctx.intAttr("sorted", 1) != 0;
  std::optional<int64_t> axis;
  if (ctx.attr("axis")) {
    axis = ctx.normalizeAxis(ctx.intAttr("axis", 0), rank);
    if (!axis)
      return;
  }
  if (ctx.failed())
    return;
  // The n slices compared, each of r elements: [n, r].
  int64_t n = axis ? shape[*axis] : type.getNumElements();
  int64_t r = axis ? type.getNumElements() / std::max<int64_t>(n, 1) : 1;
  if (n == 0 || n * n * r > kMaxPairwiseElements) {
    ctx.unsupported("an input of " + Twine(n) + " slices of " + Twine(r) +
                    " elements (the pairwise comparison holds at most " +
                    Twine(kMaxPairwiseElements) + " elements)");
    return;
  }
  // The declared size N of Y (along `axis`, or 1-D), indices and counts.
  SmallVector<int64_t> yShape = axis ? SmallVector<int64_t>(shape)
                                     : SmallVector<int64_t>{-1};
  int64_t yAxis = axis ? *axis : 0;
  int64_t size = -1;
  for (size_t i : {size_t(0), size_t(1), size_t(3)}) {
    if (!ctx.outputUsed(i))
      continue;
    int64_t declared =
        i == 0 ? declaredSize(ctx, 0, yShape, yAxis)
               : declaredSize(ctx, i, {-1}, 0);
    if (declared < 0)
      return;
    if (size >= 0 && declared != size) {
      ctx.fail("output '" + ctx.outputName(i) + "' is declared with " +
               Twine(declared) + " unique entries, another output with " +
               Twine(size));
      return;
    }
    size = declared;
  }

  Value x = ctx.operand(0, "X");
  if (!x)
    return;
  // The slices as rows: [n, r] (the axis first).
  Value rows = x;
  if (axis) {
    SmallVector<int64_t> perm{*axis};
    for (int64_t d = 0; d < rank; ++d)
      if (d != *axis)
        perm.push_back(d);
    rows = transpose(ctx, x, perm);
  }
  rows = reshape(ctx, rows, {n, r});
  Value a = reshape(ctx, rows, {n, 1, r}), b = reshape(ctx, rows, {1, n, r});
  // eq[i][j]: slice j equals slice i.
  Value eq3 = binary<nn::EqualOp>(ctx, a, b);
  Value eq = r == 1 ? reshape(ctx, eq3, {n, n})
                    : binary<nn::EqualOp>(ctx, sum(ctx, toInt(ctx, eq3), {2}),
                                          scalar(ctx, i64Type(ctx), double(r)));
  Value eqInt = toInt(ctx, eq);
  // first[i]: no equal slice before i.
  std::vector<int64_t> before(size_t(n * n), 0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < i; ++j)
      before[size_t(i * n + j)] = 1;
  Value dupBefore = sum(
      ctx, binary<nn::MulOp>(ctx, eqInt, indexTable(ctx, {n, n}, before)),
      {1});
  Value first = binary<nn::EqualOp>(ctx, dupBefore, scalar(ctx, i64Type(ctx), 0));
  Value firstInt = toInt(ctx, first);
  Value firstRow = reshape(ctx, firstInt, {1, n});
  // order[i]: the distinct slices before slice i's (smaller when sorted,
  // lexicographically; else first seen earlier).
  Value order;
  if (sorted) {
    // less[i][j]: slice j < slice i.
    Value less;
    if (r == 1) {
      less = reshape(ctx, binary<nn::LessOp>(ctx, b, a), {n, n});
    } else {
      // The first differing element decides: no difference before k.
      Value differs = eq3 ? ctx.createValue<nn::NotOp>(eq3) : Value();
      Value diffBefore =
          differs ? ctx.createValue<nn::CumSumOp>(toInt(ctx, differs),
                                                  ctx.i64(2), ctx.boolean(true),
                                                  ctx.boolean(false))
                  : Value();
      Value samePrefix = binary<nn::EqualOp>(ctx, diffBefore,
                                             scalar(ctx, i64Type(ctx), 0));
      Value lessAtK = binary<nn::AndOp>(ctx, binary<nn::LessOp>(ctx, b, a),
                                        samePrefix);
      less = binary<nn::GreaterOp>(ctx, sum(ctx, toInt(ctx, lessAtK), {2}),
                                   scalar(ctx, i64Type(ctx), 0));
    }
    order = sum(ctx, binary<nn::MulOp>(ctx, toInt(ctx, less), firstRow), {1});
  } else {
    Value firstPos =
        firstInt ? ctx.createValue<nn::CumSumOp>(firstInt, ctx.i64(0),
                                                 ctx.boolean(true),
                                                 ctx.boolean(false))
                 : Value();
    Value ownFirst = binary<nn::MulOp>(ctx, eqInt, firstRow);
    order = sum(ctx,
                binary<nn::MulOp>(ctx, ownFirst, reshape(ctx, firstPos, {1, n})),
                {1});
  }
  Value count = sum(ctx, firstInt, {0});
  if (!order || !count)
    return;
  if (ctx.outputUsed(2))
    ctx.setOutput(2, order);
  if (size < 0)
    return;
  Value all = constant(ctx, IntegerType::get(ctx.getContext(), 1), {n},
                       std::vector<double>(size_t(n), 1.0));
  if (ctx.outputUsed(0)) {
    // [size, r] back to X's layout with `size` slices along the axis.
    Value y = scatterRows(ctx, first, order, rows, size);
    if (!axis) {
      y = reshape(ctx, y, {size});
    } else {
      SmallVector<int64_t> moved{size}, perm(size_t(shape.size()), 0);
      for (int64_t d = 0, k = 1; d < int64_t(shape.size()); ++d)
        if (d != *axis) {
          moved.push_back(shape[d]);
          perm[d] = k++;
        }
      y = transpose(ctx, reshape(ctx, y, moved), perm);
    }
    if (Value c = checked(ctx, y, count, size, 0))
      ctx.setOutput(0, c);
  }
  if (ctx.outputUsed(1)) {
    std::vector<int64_t> positions(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      positions[size_t(i)] = i;
    Value iota = indexTable(ctx, {n, 1}, std::move(positions));
    Value indices = reshape(ctx, scatterRows(ctx, first, order, iota, size),
                            {size});
    if (Value c = checked(ctx, indices, count, size, 1))
      ctx.setOutput(1, c);
  }
  if (ctx.outputUsed(3)) {
    Value ones = indexTable(ctx, {n, 1}, std::vector<int64_t>(size_t(n), 1));
    Value counts = reshape(
        ctx, scatterRows(ctx, all, order, ones, size, "add"), {size});
    if (Value c = checked(ctx, counts, count, size, 3))
      ctx.setOutput(3, c);
  }
}

//===----------------------------------------------------------------------===//
// NonMaxSuppression
//===----------------------------------------------------------------------===//

/// Optional input `i`, a scalar or one-element tensor of `what`, as rank 0;
/// null (not an error) when absent.
Value scalarInput(NodeContext &ctx, size_t i, StringRef what, bool &ok) {
  if (!ctx.hasInput(i))
    return nullptr;
  RankedTensorType type = ctx.inputType(i, what);
  if (!type || type.getRank() > 1 || type.getNumElements() != 1) {
    if (type)
      ctx.fail("input '" + what + "' must hold one value, got shape " +
               shapeToString(type.getShape()));
    ok = false;
    return nullptr;
  }
  Value v = reshape(ctx, ctx.operand(i, what), {});
  ok = static_cast<bool>(v);
  return v;
}

void convertNonMaxSuppression(NodeContext &ctx) {
  if (!ctx.requireInputs(2))
    return;
  RankedTensorType boxesType = ctx.inputType(0, "boxes");
  RankedTensorType scoresType = ctx.inputType(1, "scores");
  if (!boxesType || !scoresType)
    return;
  ArrayRef<int64_t> bs = boxesType.getShape(), ss = scoresType.getShape();
  if (bs.size() != 3 || bs[2] != 4 || ss.size() != 3 || ss[0] != bs[0] ||
      ss[2] != bs[1]) {
    ctx.fail("boxes " + shapeToString(bs) + " and scores " +
             shapeToString(ss) +
             " must be [batches, boxes, 4] and [batches, classes, boxes]");
    return;
  }
  Type element = boxesType.getElementType();
  if (!isa<FloatType>(element) || scoresType.getElementType() != element) {
    ctx.fail("boxes and scores must be float tensors of one element type");
    return;
  }
  int64_t batches = bs[0], boxes = bs[1], classes = ss[1];
  int64_t planes = batches * classes;
  if (boxes > kMaxBoxes || planes * boxes * boxes > kMaxPairwiseElements) {
    ctx.unsupported(Twine(boxes) + " boxes per batch and class (the "
                    "selection is unrolled over at most " + Twine(kMaxBoxes) +
                    ")");
    return;
  }
  int64_t centerBox = ctx.intAttr("center_point_box", 0);
  if (centerBox != 0 && centerBox != 1) {
    ctx.fail("center_point_box must be 0 or 1, got " + Twine(centerBox));
    return;
  }
  int64_t n = declaredSize(ctx, 0, {-1, 3}, 0);
  if (n < 0)
    return;
  bool ok = true;
  Value maxOut = scalarInput(ctx, 2, "max_output_boxes_per_class", ok);
  Value iouThreshold = ok ? scalarInput(ctx, 3, "iou_threshold", ok) : Value();
  Value scoreThreshold =
      ok ? scalarInput(ctx, 4, "score_threshold", ok) : Value();
  Value boxesValue = ctx.operand(0, "boxes");
  Value scoresValue = ctx.operand(1, "scores");
  if (!ok || !boxesValue || !scoresValue)
    return;
  Type i64 = i64Type(ctx);
  if (maxOut && !typeOf(maxOut).getElementType().isInteger(64)) {
    ctx.fail("input 'max_output_boxes_per_class' must be int64");
    return;
  }
  for (Value v : {iouThreshold, scoreThreshold})
    if (v && typeOf(v).getElementType() != element) {
      ctx.fail("the thresholds must have the boxes' element type");
      return;
    }
  // Absent: no box is kept (max 0), any overlap suppresses (IoU > 0), every
  // score is a candidate.
  if (!maxOut)
    maxOut = scalar(ctx, i64, 0.0);
  if (!iouThreshold)
    iouThreshold = scalar(ctx, element, 0.0);

  // Per (batch, class) plane, the boxes by descending score (ties: box
  // order) and their corners [P, B, 1] each.
  auto topk = ctx.create<nn::TopKOp>(scoresValue, ctx.i64(2), ctx.i64(boxes),
                                     ctx.boolean(true));
  if (!topk)
    return;
  Value sortedScores = reshape(ctx, topk.getValues(), {planes, boxes});
  Value order = topk.getIndices();
  Value boxesByClass = ctx.createValue<nn::ExpandOp>(
      reshape(ctx, boxesValue, {batches, 1, boxes, 4}),
      ctx.i64s({batches, classes, boxes, 4}));
  Value orderBy4 =
      ctx.createValue<nn::ExpandOp>(reshape(ctx, order, {batches, classes,
                                                         boxes, 1}),
                                    ctx.i64s({batches, classes, boxes, 4}));
  Value sortedBoxes =
      boxesByClass && orderBy4
          ? reshape(ctx,
                    ctx.createValue<nn::GatherElementsOp>(boxesByClass,
                                                          orderBy4, ctx.i64(2)),
                    {planes, boxes, 4})
          : Value();
  auto coord = [&](int64_t k) { return sliceAxis(ctx, sortedBoxes, 2, k, 1); };
  Value yMin, xMin, yMax, xMax;
  if (centerBox == 0) {
    // [y1, x1, y2, x2], any pair of diagonal corners.
    Value y1 = coord(0), x1 = coord(1), y2 = coord(2), x2 = coord(3);
    yMin = binary<nn::MinOp>(ctx, y1, y2);
    yMax = binary<nn::MaxOp>(ctx, y1, y2);
    xMin = binary<nn::MinOp>(ctx, x1, x2);
    xMax = binary<nn::MaxOp>(ctx, x1, x2);
  } else {
    // [x_center, y_center, width, height].
    Value half = scalar(ctx, element, 0.5);
    Value xc = coord(0), yc = coord(1);
    Value hw = binary<nn::MulOp>(ctx, coord(2), half);
    Value hh = binary<nn::MulOp>(ctx, coord(3), half);
    xMin = binary<nn::SubOp>(ctx, xc, hw);
    xMax = binary<nn::AddOp>(ctx, xc, hw);
    yMin = binary<nn::SubOp>(ctx, yc, hh);
    yMax = binary<nn::AddOp>(ctx, yc, hh);
  }
  // Pairwise: box i (rows, [P, B, 1]) against box j (columns, [P, 1, B]).
  auto cols = [&](Value v) { return reshape(ctx, v, {planes, 1, boxes}); };
  Value zero = scalar(ctx, element, 0.0);
  auto extent = [&](Value lo, Value hi) {
    return binary<nn::MaxOp>(
        ctx,
        binary<nn::SubOp>(ctx, binary<nn::MinOp>(ctx, hi, cols(hi)),
                          binary<nn::MaxOp>(ctx, lo, cols(lo))),
        zero);
  };
  Value inter = binary<nn::MulOp>(ctx, extent(yMin, yMax), extent(xMin, xMax));
  Value area = binary<nn::MulOp>(ctx, binary<nn::SubOp>(ctx, yMax, yMin),
                                 binary<nn::SubOp>(ctx, xMax, xMin));
  Value areaJ = cols(area);
  Value unionArea = binary<nn::SubOp>(
      ctx, binary<nn::AddOp>(ctx, area, areaJ), inter);
  // As onnxruntime: no overlap, an empty box or an empty union never
  // suppresses; else IoU > iou_threshold does.
  Value positive = binary<nn::AndOp>(
      ctx,
      binary<nn::AndOp>(ctx, binary<nn::GreaterOp>(ctx, inter, zero),
                        binary<nn::GreaterOp>(ctx, unionArea, zero)),
      binary<nn::AndOp>(ctx, binary<nn::GreaterOp>(ctx, area, zero),
                        binary<nn::GreaterOp>(ctx, areaJ, zero)));
  Value safeUnion = ctx.failed() ? Value()
                                 : ctx.createValue<nn::WhereOp>(
                                       positive, unionArea,
                                       scalar(ctx, element, 1.0));
  Value iou = binary<nn::DivOp>(ctx, inter, safeUnion);
  Value overlaps = toInt(ctx, binary<nn::AndOp>(
                                  ctx, positive,
                                  binary<nn::GreaterOp>(ctx, iou,
                                                        iouThreshold)));
  // Candidates: score above score_threshold.
  Value candidate = scoreThreshold
                        ? binary<nn::GreaterOp>(ctx, sortedScores,
                                                scoreThreshold)
                        : constant(ctx, IntegerType::get(ctx.getContext(), 1),
                                   {planes, boxes},
                                   std::vector<double>(
                                       size_t(planes * boxes), 1.0));
  // The greedy selection in score order, one box at a time: kept[P, B]
  // holds 1 for the boxes kept so far.
  Value kept = constant(ctx, i64, {planes, boxes},
                        std::vector<double>(size_t(planes * boxes), 0.0));
  Value zeroInt = scalar(ctx, i64, 0.0);
  for (int64_t i = 0; i < boxes && !ctx.failed(); ++i) {
    Value overlapsI = reshape(ctx, sliceAxis(ctx, overlaps, 1, i, 1),
                              {planes, boxes});
    Value suppressed = binary<nn::GreaterOp>(
        ctx, sum(ctx, binary<nn::MulOp>(ctx, overlapsI, kept), {1}), zeroInt);
    Value room = binary<nn::LessOp>(ctx, sum(ctx, kept, {1}), maxOut);
    Value candidateI = reshape(ctx, sliceAxis(ctx, candidate, 1, i, 1),
                               {planes});
    Value notSuppressed =
        suppressed ? ctx.createValue<nn::NotOp>(suppressed) : Value();
    Value keepI = binary<nn::AndOp>(
        ctx, binary<nn::AndOp>(ctx, candidateI, notSuppressed), room);
    std::vector<int64_t> hot(size_t(boxes), 0);
    hot[size_t(i)] = 1;
    kept = binary<nn::AddOp>(
        ctx, kept,
        binary<nn::MulOp>(ctx, reshape(ctx, toInt(ctx, keepI), {planes, 1}),
                          indexTable(ctx, {1, boxes}, std::move(hot))));
  }
  // (batch, class, box) of every plane's sorted boxes, [P * B, 3].
  std::vector<int64_t> planeRows(size_t(planes * boxes * 2));
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t i = 0; i < boxes; ++i) {
      planeRows[size_t((p * boxes + i) * 2)] = p / classes;
      planeRows[size_t((p * boxes + i) * 2 + 1)] = p % classes;
    }
  Value rows = ctx.failed()
                   ? Value()
                   : ctx.createValue<nn::ConcatOp>(
                         ValueRange{indexTable(ctx, {planes * boxes, 2},
                                               std::move(planeRows)),
                                    reshape(ctx, order, {planes * boxes, 1})},
                         ctx.i64(1));
  Value keep = binary<nn::GreaterOp>(
      ctx, reshape(ctx, kept, {planes * boxes}), zeroInt);
  Value count;
  Value selected = compact(ctx, keep, rows, n, count);
  if (Value y = checked(ctx, selected, count, n, 0))
    ctx.setOutput(0, y);
}

} // namespace

void onnx_import::registerDataDependentOps(OpTable &table) {
  table["NonMaxSuppression"] = {convertNonMaxSuppression, {10, 11}};
  table["NonZero"] = {convertNonZero, {9, 13}};
  table["Unique"] = {convertUnique, {11}};
}
