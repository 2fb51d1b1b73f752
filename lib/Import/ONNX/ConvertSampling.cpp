//===- ConvertSampling.cpp - GridSample, RoiAlign, Det from nn ops -------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// GridSample (4-D: N x C x H x W sampled at an N x Ho x Wo x 2 grid of
// normalized (x, y) points) composed of nn ops, following ONNX's reference
// (onnx/reference/ops/op_grid_sample.py):
// - the grid is denormalized (align_corners or not) per axis;
// - a point outside [x_min, x_max] (-0.5 .. size - 0.5, or 0 .. size - 1
//   with align_corners) is clamped (border) or reflected (reflection)
//   first; except that bicubic with border padding clamps only the taps,
//   as PyTorch and onnxruntime do (ONNX's Python reference clamps the
//   point too, and so differs from both; models come from PyTorch);
// - each tap (1 for nearest, 2 x 2 for linear, 4 x 4 for cubic with
//   A = -0.75) reads the input through the padding mode: zero outside
//   (zeros), the clamped index (border) or the reflected index
//   (reflection); the tap's weight is a product of per-axis coefficients;
// - a tap is one `nn.gather_elements` of the input flattened to
//   N x C x (H * W) at the run-time flat index, times its weight.
// The grid is a run-time tensor; the derivative reaches the input (through
// the gathers) and the grid (through the coefficients; floor and round
// have zero derivative, as in PyTorch).
//
// RoiAlign (avg, fixed sampling ratio) samples the same way at points
// computed from the run-time rois. Det (small matrices) is a Laplace
// expansion with memoized minors.
//
//===----------------------------------------------------------------------===//

#include "Decompose.h"

using namespace mlir;
using namespace pipedream;
using namespace pipedream::onnx_import;
using namespace pipedream::onnx_import::decompose;

namespace {
enum class Mode { Nearest, Linear, Cubic };
enum class Padding { Zeros, Border, Reflection };

struct Sampler {
  NodeContext &ctx;
  Type element;
  Padding padding;
  bool alignCorners;

  Value s(double v) { return scalar(ctx, element, v); }
  Value add(Value a, Value b) { return binary<nn::AddOp>(ctx, a, b); }
  Value sub(Value a, Value b) { return binary<nn::SubOp>(ctx, a, b); }
  Value mul(Value a, Value b) { return binary<nn::MulOp>(ctx, a, b); }
  Value floor(Value a) {
    return a ? ctx.createValue<nn::FloorOp>(a) : Value();
  }
  Value clamp(Value a, double lo, double hi) {
    return a ? ctx.createValue<nn::ClipOp>(a, ctx.f64(lo), ctx.f64(hi))
             : Value();
  }

  /// ONNX's `_gs_reflect` of `x` into [lo, hi]: `x` folded with period
  /// 2 (hi - lo), as `lo + L - |t - L|` with `t = (x - lo) mod 2L`.
  Value reflect(Value x, double lo, double hi) {
    double range = hi - lo;
    if (range <= 0)
      return clamp(x, lo, lo);
    Value u = sub(x, s(lo));
    Value periods = floor(mul(u, s(1.0 / (2 * range))));
    Value t = sub(u, mul(periods, s(2 * range)));
    Value folded = sub(s(range), ctx.createValue<nn::AbsOp>(sub(t, s(range))));
    return add(folded, s(lo));
  }

  /// The denormalized coordinate along an axis of `size` points, clamped or
  /// reflected into the axis when outside it (not clamped for cubic, whose
  /// taps are clamped one by one: PyTorch's and onnxruntime's bicubic
  /// border, where ONNX's Python reference clamps the point first).
  Value coordinate(Value g, int64_t size, bool round, bool cubic) {
    Value x = alignCorners
                  ? mul(add(g, s(1.0)), s((size - 1) / 2.0))
                  : mul(sub(mul(add(g, s(1.0)), s(double(size))), s(1.0)),
                        s(0.5));
    if (round && x)
      x = ctx.createValue<nn::RoundOp>(x);
    double lo = alignCorners ? 0.0 : -0.5;
    double hi = alignCorners ? size - 1.0 : size - 0.5;
    if (padding == Padding::Border && !cubic) {
      // Inside [lo, hi] the point is kept; outside it is clamped to the
      // pixel range (ONNX: `clamp(v, 0, size - 1)`).
      Value inside = clamp(x, lo, hi);
      Value outside = clamp(x, 0.0, size - 1.0);
      // lo <= 0 and hi >= size - 1: clamping to [0, size - 1] only moves
      // points in [lo, 0) and (size - 1, hi] when not align_corners; those
      // are inside, kept as they are.
      if (alignCorners)
        return outside;
      Value isInside = ctx.createValue<nn::CastOp>(
          binary<nn::AndOp>(ctx,
                            binary<nn::GreaterEqualOp>(ctx, x, s(lo)),
                            binary<nn::LessEqualOp>(ctx, x, s(hi))),
          TypeAttr::get(element));
      return add(mul(isInside, inside),
                 mul(sub(s(1.0), isInside), outside));
    }
    if (padding == Padding::Reflection)
      return reflect(x, lo, hi);
    return x;
  }

  /// The index read for integer-valued tap position `i` along an axis of
  /// `size` (as i64, in range) and, for zero padding, its 0/1 mask.
  std::pair<Value, Value> tap(Value i, int64_t size) {
    Value mask;
    Value at = i;
    if (padding == Padding::Zeros) {
      mask = ctx.createValue<nn::CastOp>(
          binary<nn::AndOp>(ctx, binary<nn::GreaterEqualOp>(ctx, i, s(0.0)),
                            binary<nn::LessOp>(ctx, i, s(double(size)))),
          TypeAttr::get(element));
    } else if (padding == Padding::Reflection) {
      at = reflect(i, alignCorners ? 0.0 : -0.5,
                   alignCorners ? size - 1.0 : size - 0.5);
      // Integer in, integer out; rounding guards the float arithmetic.
      at = at ? ctx.createValue<nn::RoundOp>(at) : Value();
    }
    at = clamp(at, 0.0, size - 1.0);
    Value index =
        at ? ctx.createValue<nn::CastOp>(
                 at, TypeAttr::get(IntegerType::get(ctx.getContext(), 64)))
           : Value();
    return {index, mask};
  }
};
} // namespace

/// Cubic convolution coefficients (A = -0.75) of the 4 taps at offsets
/// -1, 0, 1, 2 from floor(x), for `t = x - floor(x)` (ONNX's reference).
static SmallVector<Value, 4> cubicCoefficients(Sampler &sp, Value t) {
  const double a = -0.75;
  auto far = [&](Value d) { // ((a d - 5a) d + 8a) d - 4a, d in [1, 2]
    Value p = sp.sub(sp.mul(d, sp.s(a)), sp.s(5 * a));
    p = sp.add(sp.mul(p, d), sp.s(8 * a));
    return sp.sub(sp.mul(p, d), sp.s(4 * a));
  };
  auto near = [&](Value d) { // ((a + 2) d - (a + 3)) d d + 1, d in [0, 1]
    Value p = sp.sub(sp.mul(d, sp.s(a + 2)), sp.s(a + 3));
    return sp.add(sp.mul(sp.mul(p, d), d), sp.s(1.0));
  };
  Value one = sp.s(1.0);
  return {far(sp.add(t, one)), near(t), near(sp.sub(one, t)),
          far(sp.sub(sp.s(2.0), t))};
}

static void convertGridSample(NodeContext &ctx) {
  if (!ctx.requireInputs(2))
    return;
  RankedTensorType xType = ctx.inputType(0, "X"),
                   gType = ctx.inputType(1, "grid");
  if (!xType || !gType)
    return;
  if (xType.getRank() != 4) {
    ctx.unsupported("a rank " + Twine(xType.getRank()) +
                    " input (only 4-D, N x C x H x W)");
    return;
  }
  if (!isa<FloatType>(xType.getElementType()) ||
      gType.getElementType() != xType.getElementType()) {
    ctx.fail("X and grid must be float tensors of the same element type");
    return;
  }
  int64_t n = xType.getDimSize(0), c = xType.getDimSize(1),
          h = xType.getDimSize(2), w = xType.getDimSize(3);
  if (gType.getRank() != 4 || gType.getDimSize(0) != n ||
      gType.getDimSize(3) != 2) {
    ctx.fail("grid has shape " + shapeToString(gType.getShape()) +
             ", expected [" + Twine(n) + ", H_out, W_out, 2]");
    return;
  }
  if (h < 1 || w < 1) {
    ctx.fail("empty input " + shapeToString(xType.getShape()));
    return;
  }
  bool newNames = ctx.sinceVersion() >= 20;
  std::string modeName =
      ctx.stringAttr("mode", newNames ? "linear" : "bilinear");
  std::string paddingName = ctx.stringAttr("padding_mode", "zeros");
  bool alignCorners = ctx.intAttr("align_corners", 0) != 0;
  if (ctx.failed())
    return;
  Mode mode;
  if (modeName == (newNames ? "linear" : "bilinear"))
    mode = Mode::Linear;
  else if (modeName == "nearest")
    mode = Mode::Nearest;
  else if (modeName == (newNames ? "cubic" : "bicubic"))
    mode = Mode::Cubic;
  else {
    ctx.fail("mode '" + modeName.substr(0, 32) + "' is not " +
             (newNames ? "linear, nearest or cubic"
                       : "bilinear, nearest or bicubic"));
    return;
  }
  Padding padding;
  if (paddingName == "zeros")
    padding = Padding::Zeros;
  else if (paddingName == "border")
    padding = Padding::Border;
  else if (paddingName == "reflection")
    padding = Padding::Reflection;
  else {
    ctx.fail("padding_mode '" + paddingName.substr(0, 32) +
             "' is not zeros, border or reflection");
    return;
  }
  int64_t ho = gType.getDimSize(1), wo = gType.getDimSize(2),
          points = ho * wo;
  Type element = xType.getElementType();
  Value x = ctx.operand(0), grid = ctx.operand(1);
  if (!x || !grid)
    return;
  Sampler sp{ctx, element, padding, alignCorners};
  // Grid coordinates as N x 1 x P (x first, then y).
  Value flatGrid = reshape(ctx, grid, {n, 1, points, 2});
  auto component = [&](int64_t i) -> Value {
    if (!flatGrid)
      return nullptr;
    Value v = ctx.createValue<nn::SliceOp>(
        flatGrid, ctx.i64s({0, 0, 0, i}), ctx.i64s({n, 1, points, 1}),
        ctx.i64s({1, 1, 1, 1}));
    return reshape(ctx, v, {n, 1, points});
  };
  bool round = mode == Mode::Nearest;
  bool cubic = mode == Mode::Cubic;
  Value px = sp.coordinate(component(0), w, round, cubic);
  Value py = sp.coordinate(component(1), h, round, cubic);
  Value data = reshape(ctx, x, {n, c, h * w});
  Value width = indexTable(ctx, {}, {w});
  if (!px || !py || !data || !width)
    return;

  // One tap: the input at integer-valued positions (ty, tx) times `weight`.
  auto sample = [&](Value ty, Value tx, Value weight) -> Value {
    auto [iy, my] = sp.tap(ty, h);
    auto [ix, mx] = sp.tap(tx, w);
    if (my)
      weight = weight ? sp.mul(weight, my) : my;
    if (mx)
      weight = weight ? sp.mul(weight, mx) : mx;
    Value flat = binary<nn::AddOp>(ctx, binary<nn::MulOp>(ctx, iy, width), ix);
    if (!flat)
      return nullptr;
    Value index = ctx.createValue<nn::ExpandOp>(flat, ctx.i64s({n, c, points}));
    Value v = index ? ctx.createValue<nn::GatherElementsOp>(data, index,
                                                            ctx.i64(2))
                    : Value();
    return weight ? sp.mul(v, weight) : v;
  };

  Value y;
  if (mode == Mode::Nearest) {
    y = sample(py, px, Value());
  } else {
    Value fx = sp.floor(px), fy = sp.floor(py);
    Value tx = sp.sub(px, fx), ty = sp.sub(py, fy);
    SmallVector<Value, 4> cx, cy;
    SmallVector<double, 4> offsets;
    if (mode == Mode::Linear) {
      cx = {sp.sub(sp.s(1.0), tx), tx};
      cy = {sp.sub(sp.s(1.0), ty), ty};
      offsets = {0, 1};
    } else {
      cx = cubicCoefficients(sp, tx);
      cy = cubicCoefficients(sp, ty);
      offsets = {-1, 0, 1, 2};
    }
    for (size_t j = 0; j < offsets.size(); ++j) {
      Value rowY = offsets[j] == 0 ? fy : sp.add(fy, sp.s(offsets[j]));
      for (size_t i = 0; i < offsets.size(); ++i) {
        Value colX = offsets[i] == 0 ? fx : sp.add(fx, sp.s(offsets[i]));
        Value term = sample(rowY, colX, sp.mul(cy[j], cx[i]));
        y = y ? sp.add(y, term) : term;
        if (!y)
          return;
      }
    }
  }
  if (Value out = reshape(ctx, y, {n, c, ho, wo}))
    ctx.setOutput(0, out);
}

//===----------------------------------------------------------------------===//
// Det
//===----------------------------------------------------------------------===//

/// Det of `[..., M, M]` for M <= kMaxDetSize by Laplace expansion along the
/// last row with memoized minors: the determinant of rows 0..k-1 restricted
/// to a k-column set S is `sum_{j in S} (-1)^(k-1+pos(j)) A[k-1, j] D(S - j)`.
/// 2^M minors, each a sum of products of batch-shaped tensors, so the
/// derivative comes from nn.mul / nn.add (no pivoting to get wrong).
static constexpr int64_t kMaxDetSize = 5;

static void convertDet(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0, "X");
  if (!type)
    return;
  int64_t rank = type.getRank();
  if (rank < 2 || type.getDimSize(rank - 1) != type.getDimSize(rank - 2)) {
    ctx.fail("input must be [..., M, M], got shape " +
             shapeToString(type.getShape()));
    return;
  }
  if (!isa<FloatType>(type.getElementType())) {
    ctx.fail("input must be a float tensor");
    return;
  }
  int64_t m = type.getDimSize(rank - 1);
  if (m > kMaxDetSize) {
    ctx.unsupported("matrices of size " + Twine(m) + " (at most " +
                    Twine(kMaxDetSize) + ": Laplace expansion)");
    return;
  }
  Value x = ctx.operand(0);
  if (!x)
    return;
  SmallVector<int64_t> batch(type.getShape().drop_back(2));
  if (m == 0) {
    ctx.setOutput(0, constant(ctx, type.getElementType(), batch,
                              std::vector<double>(
                                  size_t(RankedTensorType::get(
                                             batch, type.getElementType())
                                             .getNumElements()),
                                  1.0)));
    return;
  }
  // Element (r, j) as a batch-shaped tensor.
  SmallVector<int64_t> sizes(type.getShape()), starts(rank, 0),
      steps(rank, 1);
  sizes[rank - 2] = sizes[rank - 1] = 1;
  auto element = [&](int64_t r, int64_t j) -> Value {
    starts[rank - 2] = r;
    starts[rank - 1] = j;
    Value e = ctx.createValue<nn::SliceOp>(x, ctx.i64s(starts),
                                           ctx.i64s(sizes), ctx.i64s(steps));
    return reshape(ctx, e, batch);
  };
  std::vector<Value> minors(size_t(1) << m);
  for (unsigned set = 1; set < (1u << m); ++set) {
    int64_t k = llvm::popcount(set);
    Value sum;
    int64_t pos = 0;
    for (int64_t j = 0; j < m; ++j) {
      if (!(set & (1u << j)))
        continue;
      Value term = element(k - 1, j);
      if (k > 1)
        term = binary<nn::MulOp>(ctx, term, minors[set & ~(1u << j)]);
      bool negative = (k - 1 + pos) % 2 != 0;
      if (!sum)
        sum = negative ? (term ? ctx.createValue<nn::NegOp>(term) : Value())
                       : term;
      else
        sum = negative ? binary<nn::SubOp>(ctx, sum, term)
                       : binary<nn::AddOp>(ctx, sum, term);
      ++pos;
    }
    if (!sum)
      return;
    minors[set] = sum;
  }
  ctx.setOutput(0, minors[(1u << m) - 1]);
}

//===----------------------------------------------------------------------===//
// RoiAlign
//===----------------------------------------------------------------------===//

/// RoiAlign, `mode = avg`, as ONNX's reference and onnxruntime compute it:
/// per region r and output bin (ph, pw), the mean over a fixed
/// sampling_ratio x sampling_ratio grid of bilinear samples of
/// X[batch_indices[r]]. A sample outside [-1, size] on either axis is 0; a
/// coordinate is clamped into [0, size - 1] (this is ONNX's rule "y <= 0:
/// 0; y_low >= size - 1: size - 1"). The sample coordinates are computed
/// from the run-time rois: `start + (p + (i + 0.5) / grid) * bin`.
static void convertRoiAlign(NodeContext &ctx) {
  if (!ctx.requireInputs(3))
    return;
  RankedTensorType xType = ctx.inputType(0, "X"),
                   rType = ctx.inputType(1, "rois"),
                   bType = ctx.inputType(2, "batch_indices");
  if (!xType || !rType || !bType)
    return;
  if (xType.getRank() != 4 || !isa<FloatType>(xType.getElementType())) {
    ctx.fail("X must be a 4-D float tensor, got " +
             shapeToString(xType.getShape()));
    return;
  }
  int64_t n = xType.getDimSize(0), c = xType.getDimSize(1),
          h = xType.getDimSize(2), w = xType.getDimSize(3);
  if (rType.getRank() != 2 || rType.getDimSize(1) != 4 ||
      rType.getElementType() != xType.getElementType()) {
    ctx.fail("rois must be [num_rois, 4] of X's element type, got " +
             shapeToString(rType.getShape()));
    return;
  }
  int64_t rois = rType.getDimSize(0);
  if (bType.getRank() != 1 || bType.getDimSize(0) != rois ||
      !bType.getElementType().isInteger(64)) {
    ctx.fail("batch_indices must be [" + Twine(rois) + "] int64, got " +
             shapeToString(bType.getShape()));
    return;
  }
  std::string mode = ctx.stringAttr("mode", "avg");
  int64_t ph = ctx.intAttr("output_height", 1);
  int64_t pw = ctx.intAttr("output_width", 1);
  int64_t ratio = ctx.intAttr("sampling_ratio", 0);
  double scale = ctx.floatAttr("spatial_scale", 1.0);
  // Opset 16 added coordinate_transformation_mode (default half_pixel);
  // opset 10 behaves as output_half_pixel.
  std::string ctm = ctx.sinceVersion() >= 16
                        ? ctx.stringAttr("coordinate_transformation_mode",
                                         "half_pixel")
                        : "output_half_pixel";
  if (ctx.failed())
    return;
  if (mode != "avg") {
    ctx.unsupported("mode '" + mode.substr(0, 32) + "' (only avg)");
    return;
  }
  if (ctm != "half_pixel" && ctm != "output_half_pixel") {
    ctx.fail("coordinate_transformation_mode '" + ctm.substr(0, 32) +
             "' is not half_pixel or output_half_pixel");
    return;
  }
  if (ph < 1 || pw < 1 || ph > kMaxDim || pw > kMaxDim) {
    ctx.fail("output_height and output_width must be positive, got " +
             Twine(ph) + " and " + Twine(pw));
    return;
  }
  if (ratio <= 0) {
    ctx.unsupported("sampling_ratio " + Twine(ratio) +
                    " (adaptive: the number of samples depends on the run-"
                    "time rois; pipedream compiles static shapes)");
    return;
  }
  if (ratio > 64) {
    ctx.unsupported("sampling_ratio " + Twine(ratio) + " (at most 64)");
    return;
  }
  bool halfPixel = ctm == "half_pixel";
  Type element = xType.getElementType();
  Value x = ctx.operand(0), roi = ctx.operand(1), batch = ctx.operand(2);
  if (!x || !roi || !batch)
    return;
  Sampler sp{ctx, element, Padding::Zeros, false};
  auto column = [&](int64_t i) -> Value {
    Value v = ctx.createValue<nn::SliceOp>(roi, ctx.i64s({0, i}),
                                           ctx.i64s({rois, 1}),
                                           ctx.i64s({1, 1}));
    return sp.sub(sp.mul(v, sp.s(scale)), sp.s(halfPixel ? 0.5 : 0.0));
  };
  // Per axis: the sample coordinates [R, bins * ratio] of every region.
  auto samples = [&](Value start, Value end, int64_t bins) -> Value {
    Value size = sp.sub(end, start);
    if (!halfPixel && size)
      size = binary<nn::MaxOp>(ctx, size, sp.s(1.0));
    Value bin = sp.mul(size, sp.s(1.0 / double(bins)));
    std::vector<double> offsets;
    for (int64_t p = 0; p < bins; ++p)
      for (int64_t i = 0; i < ratio; ++i)
        offsets.push_back(double(p) + (double(i) + 0.5) / double(ratio));
    Value table = constant(ctx, element, {1, bins * ratio}, offsets);
    return sp.add(start, sp.mul(bin, table));
  };
  Value ys = samples(column(1), column(3), ph);
  Value xs = samples(column(0), column(2), pw);
  int64_t sy = ph * ratio, sx = pw * ratio;
  // Per axis: the in-range mask, the low and high indices, the weights.
  struct Axis {
    Value valid, low, high, wLow, wHigh;
  };
  auto axis = [&](Value v, int64_t size) -> Axis {
    Axis a;
    a.valid = ctx.createValue<nn::CastOp>(
        binary<nn::AndOp>(ctx, binary<nn::GreaterEqualOp>(ctx, v, sp.s(-1.0)),
                          binary<nn::LessEqualOp>(ctx, v, sp.s(double(size)))),
        TypeAttr::get(element));
    Value clamped = sp.clamp(v, 0.0, size - 1.0);
    Value low = sp.floor(clamped);
    Value high = sp.clamp(sp.add(low, sp.s(1.0)), 0.0, size - 1.0);
    a.wHigh = sp.sub(clamped, low);
    a.wLow = sp.sub(sp.s(1.0), a.wHigh);
    auto i64 = IntegerType::get(ctx.getContext(), 64);
    a.low = low ? ctx.createValue<nn::CastOp>(low, TypeAttr::get(i64)) : low;
    a.high =
        high ? ctx.createValue<nn::CastOp>(high, TypeAttr::get(i64)) : high;
    return a;
  };
  Axis ay = axis(reshape(ctx, ys, {rois, sy, 1}), h);
  Axis ax = axis(reshape(ctx, xs, {rois, 1, sx}), w);
  // Each region's image: [R, C, H * W].
  Value images = ctx.createValue<nn::GatherOp>(
      reshape(ctx, x, {n, c, h * w}), batch, ctx.i64(0));
  Value width = indexTable(ctx, {}, {w});
  Value mask = sp.mul(ay.valid, ax.valid);
  if (!images || !width || !mask)
    return;
  int64_t points = sy * sx;
  Value sum;
  for (int dy = 0; dy < 2; ++dy) {
    for (int dx = 0; dx < 2; ++dx) {
      Value iy = dy ? ay.high : ay.low, ix = dx ? ax.high : ax.low;
      Value weight = sp.mul(sp.mul(dy ? ay.wHigh : ay.wLow,
                                   dx ? ax.wHigh : ax.wLow),
                            mask);
      Value flat = binary<nn::AddOp>(ctx, binary<nn::MulOp>(ctx, iy, width),
                                     ix);
      Value index = reshape(ctx, flat, {rois, 1, points});
      index = index ? ctx.createValue<nn::ExpandOp>(
                          index, ctx.i64s({rois, c, points}))
                    : Value();
      Value v = index ? ctx.createValue<nn::GatherElementsOp>(images, index,
                                                              ctx.i64(2))
                      : Value();
      Value term = sp.mul(v, reshape(ctx, weight, {rois, 1, points}));
      sum = sum ? sp.add(sum, term) : term;
      if (!sum)
        return;
    }
  }
  Value bins = reshape(ctx, sum, {rois, c, ph, ratio, pw, ratio});
  Value y = bins ? ctx.createValue<nn::ReduceMeanOp>(
                       bins, ctx.i64s({3, 5}), ctx.boolean(false))
                 : Value();
  ctx.setOutput(0, y);
}

void onnx_import::registerSamplingOps(OpTable &table) {
  table["RoiAlign"] = {convertRoiAlign, {10, 16, 22}};
  table["Det"] = {convertDet, {11, 22}};
  // Opset 20 renamed the modes (linear, cubic) and allowed N-d; 22 added
  // bfloat16.
  table["GridSample"] = {convertGridSample, {16, 20, 22}};
}
