//===- ConvertLayers.cpp - ONNX layers built from nn ops ------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// ConvTranspose, Resize, Upsample, MaxUnpool, InstanceNormalization,
// GroupNormalization, MeanVarianceNormalization, LRN, GlobalMaxPool and
// LayerNormalization
// (with its Mean / InvStdDev outputs). Each is a composition of existing nn
// ops, so it is verified, lowered, differentiated and costed like them:
// - ConvTranspose is `nn.conv_backward_input` (the adjoint of a convolution
//   is a transposed convolution) plus the bias;
// - Resize / Upsample are separable: along every resized axis, output
//   position `o` is `sum_t w[o, t] * x[idx[o, t]]` with index and weight
//   tables computed at import (one `nn.gather` per tap), exactly as ONNX's
//   reference interpolates one axis after the other;
// - the normalizations are means, differences, square roots and quotients;
// - LRN's window sum over channels is an `nn.average_pool`;
// - MaxUnpool is an `nn.scatter_nd` of the values at their flat indices.
//
//===----------------------------------------------------------------------===//

#include "Decompose.h"

#include "llvm/Support/MathExtras.h"

#include <cmath>
#include <numeric>

using namespace mlir;
using namespace pipedream;
using namespace pipedream::onnx_import;
using namespace pipedream::onnx_import::decompose;

//===----------------------------------------------------------------------===//
// Normalizations
//===----------------------------------------------------------------------===//

/// `(x - mean) * invstd` over `axes` and the statistics, as LayerNormalization
/// and InstanceNormalization define them (biased variance).
namespace {
struct Normalized {
  Value centered, mean, invStdDev, output;
};
} // namespace

static Normalized normalize(NodeContext &ctx, Value x, ArrayRef<int64_t> axes,
                            double epsilon) {
  Normalized n;
  Type element = typeOf(x).getElementType();
  n.mean = mean(ctx, x, axes);
  n.centered = binary<nn::SubOp>(ctx, x, n.mean);
  Value var = mean(ctx, binary<nn::MulOp>(ctx, n.centered, n.centered), axes);
  Value std = var ? ctx.createValue<nn::SqrtOp>(binary<nn::AddOp>(
                        ctx, var, scalar(ctx, element, epsilon)))
                  : Value();
  n.invStdDev = binary<nn::DivOp>(ctx, scalar(ctx, element, 1.0), std);
  n.output = binary<nn::MulOp>(ctx, n.centered, n.invStdDev);
  return n;
}

static void convertLayerNormalization(NodeContext &ctx) {
  if (!ctx.requireInputs(2))
    return;
  RankedTensorType type = ctx.inputType(0);
  auto axis = ctx.normalizeAxis(ctx.intAttr("axis", -1), type.getRank());
  double epsilon = ctx.floatAttr("epsilon", 1e-5);
  if (!axis)
    return;
  Value x = ctx.operand(0), scale = ctx.operand(1);
  Value bias = ctx.hasInput(2) ? ctx.operand(2) : Value();
  if (!x || !scale || (ctx.hasInput(2) && !bias))
    return;
  bool statistics = ctx.outputUsed(1) || ctx.outputUsed(2);
  if (!statistics) {
    ctx.setOutput(0, ctx.createValue<nn::LayerNormalizationOp>(
                         x, scale, bias, ctx.i64(*axis), ctx.f64(epsilon)));
    return;
  }
  // The statistics are wanted too: the composed form (the same arithmetic
  // as the fused op), with Mean and InvStdDev keeping the normalized axes.
  Normalized n = normalize(ctx, x, range(*axis, type.getRank()), epsilon);
  Value y = binary<nn::MulOp>(ctx, n.output, scale);
  if (bias)
    y = binary<nn::AddOp>(ctx, y, bias);
  if (!y)
    return;
  ctx.setOutput(0, y);
  ctx.setOutput(1, n.mean);
  ctx.setOutput(2, n.invStdDev);
}

/// `v` (one value per channel) shaped to broadcast along axis 1 of a rank
/// `rank` tensor.
static Value perChannel(NodeContext &ctx, Value v, int64_t channels,
                        int64_t rank) {
  if (!v)
    return nullptr;
  if (typeOf(v).getNumElements() != channels) {
    ctx.fail("expects " + Twine(channels) + " values per channel, got shape " +
             shapeToString(typeOf(v).getShape()));
    return nullptr;
  }
  SmallVector<int64_t> shape(rank - 1, 1);
  shape[0] = channels;
  return reshape(ctx, v, shape);
}

/// Input 0's type when it is a float N x C x ... tensor; null (the node
/// failed) otherwise.
static RankedTensorType channelsInputType(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  if (!type)
    return nullptr;
  if (type.getRank() < 2) {
    ctx.fail("input must be N x C x ..., got rank " + Twine(type.getRank()));
    return nullptr;
  }
  if (!isa<FloatType>(type.getElementType())) {
    ctx.fail("input must be a float tensor");
    return nullptr;
  }
  return type;
}

static void convertInstanceNormalization(NodeContext &ctx) {
  if (!ctx.requireInputs(3))
    return;
  RankedTensorType type = ctx.spatialInputType(0);
  if (!type)
    return;
  double epsilon = ctx.floatAttr("epsilon", 1e-5);
  int64_t rank = type.getRank(), channels = type.getDimSize(1);
  Value x = ctx.operand(0);
  Value scale = perChannel(ctx, ctx.operand(1), channels, rank);
  Value bias = perChannel(ctx, ctx.operand(2), channels, rank);
  if (!x || !scale || !bias)
    return;
  Normalized n = normalize(ctx, x, range(2, rank), epsilon);
  Value y = binary<nn::AddOp>(ctx, binary<nn::MulOp>(ctx, n.output, scale),
                              bias);
  ctx.setOutput(0, y);
}

/// GroupNormalization: the C channels in `num_groups` groups of C / G
/// consecutive channels, each group of each sample normalized over its
/// channels and every spatial position (biased variance), then scaled and
/// shifted: per channel since opset 21 (scale and bias of C values), per
/// group in opset 18 (G values; the reason opset 21 changed it). The
/// statistics of an f16 / bf16 input are computed in f32 when `stash_type`
/// is 1 (opset 21's default; opset 18 computes in the input's type).
static void convertGroupNormalization(NodeContext &ctx) {
  if (!ctx.requireInputs(3))
    return;
  RankedTensorType type = channelsInputType(ctx);
  Value x = ctx.operand(0), scale = ctx.operand(1), bias = ctx.operand(2);
  if (!type || !x || !scale || !bias)
    return;
  Type element = type.getElementType();
  if (!ctx.attr("num_groups")) {
    ctx.fail("attribute 'num_groups' is required");
    return;
  }
  int64_t groups = ctx.intAttr("num_groups", 0);
  int64_t rank = type.getRank(), n = type.getDimSize(0),
          channels = type.getDimSize(1);
  if (groups <= 0 || channels % groups != 0) {
    ctx.fail("num_groups " + Twine(groups) + " must be positive and divide " +
             "the " + Twine(channels) + " channels");
    return;
  }
  bool perGroup = ctx.sinceVersion() < 21;
  int64_t params = perGroup ? groups : channels;
  for (auto [what, v] : {std::pair{"scale", scale}, std::pair{"bias", bias}})
    if (typeOf(v).getNumElements() != params) {
      ctx.fail(Twine(what) + " must have " + Twine(params) +
               " values (one per " +
               (perGroup ? "group, opset 18" : "channel") + "), got shape " +
               shapeToString(typeOf(v).getShape()));
      return;
    }
  double epsilon = ctx.floatAttr("epsilon", 1e-5);
  if (type.getNumElements() == 0) {
    // No sample or no position: the empty result.
    ctx.setOutput(0, x);
    return;
  }
  bool stash = !perGroup && ctx.intAttr("stash_type", 1) == 1 &&
               element.getIntOrFloatBitWidth() < 32;
  Type f32 = Float32Type::get(element.getContext());
  if (stash)
    x = ctx.createValue<nn::CastOp>(x, TypeAttr::get(f32));
  // [N, G, C / G * spatial]: each group of a sample one row.
  int64_t perRow = type.getNumElements() / (n * groups);
  Value rows = reshape(ctx, x, {n, groups, perRow});
  Value y = normalize(ctx, rows, {2}, epsilon).output;
  if (stash) {
    scale = ctx.createValue<nn::CastOp>(scale, TypeAttr::get(f32));
    bias = ctx.createValue<nn::CastOp>(bias, TypeAttr::get(f32));
  }
  if (perGroup) {
    y = binary<nn::AddOp>(
        ctx, binary<nn::MulOp>(ctx, y, reshape(ctx, scale, {groups, 1})),
        reshape(ctx, bias, {groups, 1}));
    y = reshape(ctx, y, type.getShape());
  } else {
    y = reshape(ctx, y, type.getShape());
    y = binary<nn::AddOp>(
        ctx, binary<nn::MulOp>(ctx, y, perChannel(ctx, scale, channels, rank)),
        perChannel(ctx, bias, channels, rank));
  }
  if (y && stash)
    y = ctx.createValue<nn::CastOp>(y, TypeAttr::get(element));
  ctx.setOutput(0, y);
}

/// BatchNormalization, training_mode=1: normalized with the statistics of
/// this batch (biased variance, over every axis but 1), and the running
/// statistics `input * momentum + batch * (1 - momentum)` as outputs 1 and 2
/// (ONNX's reference; the biased variance too). The input running
/// statistics are frozen: they only feed those outputs.
void onnx_import::convertBatchNormalizationTraining(NodeContext &ctx) {
  RankedTensorType type = channelsInputType(ctx);
  if (!type)
    return;
  double epsilon = ctx.floatAttr("epsilon", 1e-5);
  double momentum = ctx.floatAttr("momentum", 0.9);
  int64_t rank = type.getRank(), channels = type.getDimSize(1);
  Type element = type.getElementType();
  Value x = ctx.operand(0);
  Value scale = perChannel(ctx, ctx.operand(1), channels, rank);
  Value bias = perChannel(ctx, ctx.operand(2), channels, rank);
  if (!x || !scale || !bias)
    return;
  SmallVector<int64_t> axes{0};
  axes.append(range(2, rank));
  Value m = mean(ctx, x, axes);
  Value centered = binary<nn::SubOp>(ctx, x, m);
  Value var = mean(ctx, binary<nn::MulOp>(ctx, centered, centered), axes);
  Value std = var ? ctx.createValue<nn::SqrtOp>(binary<nn::AddOp>(
                        ctx, var, scalar(ctx, element, epsilon)))
                  : Value();
  Value y = binary<nn::AddOp>(
      ctx, binary<nn::MulOp>(ctx, binary<nn::DivOp>(ctx, centered, std), scale),
      bias);
  if (!y)
    return;
  ctx.setOutput(0, y);
  for (size_t i = 1; i < 3 && i < ctx.numOutputs(); ++i) {
    if (!ctx.outputUsed(i))
      continue;
    ctx.markFrozenWeight(i + 2);
    Value running = ctx.operand(i + 2);
    if (running && typeOf(running).getNumElements() != channels) {
      ctx.fail("expects " + Twine(channels) + " running statistics, got " +
               "shape " + shapeToString(typeOf(running).getShape()));
      return;
    }
    Value batch = reshape(ctx, i == 1 ? m : var, {channels});
    Value updated = binary<nn::AddOp>(
        ctx,
        binary<nn::MulOp>(ctx, reshape(ctx, running, {channels}),
                          scalar(ctx, element, momentum)),
        binary<nn::MulOp>(ctx, batch, scalar(ctx, element, 1.0 - momentum)));
    if (!updated)
      return;
    ctx.setOutput(i, reshape(ctx, updated,
                             typeOf(ctx.operand(i + 2)).getShape()));
  }
}

/// Gathers every window's taps from `x` flattened to `[N * C, P + 1]` (the
/// last column -inf, read by taps in the padding), takes the first maximum
/// with `nn.arg_max` over the taps, and maps that tap to its flat input
/// index through tables computed at import (integers, int8 and uint8
/// in ONNX's MaxPool, are compared as float32). Not differentiable (an index);
/// the pooled values stay `nn.max_pool`.
Value onnx_import::maxPoolIndices(NodeContext &ctx, Value x,
                                  ArrayRef<int64_t> outShape,
                                  ArrayRef<int64_t> kernel,
                                  ArrayRef<int64_t> strides,
                                  ArrayRef<int64_t> pads,
                                  ArrayRef<int64_t> dilations,
                                  bool columnMajor) {
  ArrayRef<int64_t> inShape = typeOf(x).getShape();
  size_t n = kernel.size();
  int64_t planes = inShape[0] * inShape[1];
  int64_t points = 1, windows = 1, taps = 1;
  for (size_t i = 0; i < n; ++i) {
    points *= inShape[2 + i];
    windows *= outShape[2 + i];
    taps *= kernel[i];
  }
  if (planes * windows * taps > (int64_t(1) << 26)) {
    ctx.unsupported("the Indices output of a pool this large (" +
                    Twine(planes * windows * taps) + " window taps)");
    return nullptr;
  }
  // Per (window, tap): the gathered column (`points` for padding) and the
  // flat spatial index in the storage order.
  std::vector<int64_t> column(size_t(windows * taps)),
      flat(size_t(windows * taps));
  SmallVector<int64_t> o(n, 0), k(n, 0);
  for (int64_t wi = 0; wi < windows; ++wi) {
    for (int64_t ti = 0; ti < taps; ++ti) {
      int64_t rest = ti;
      for (size_t i = n; i-- > 0;) {
        k[i] = rest % kernel[i];
        rest /= kernel[i];
      }
      bool inside = true;
      int64_t rowMajor = 0, colMajor = 0, colStride = 1;
      for (size_t i = 0; i < n; ++i) {
        int64_t p = o[i] * strides[i] - pads[i] + k[i] * dilations[i];
        int64_t dim = inShape[2 + i];
        if (p < 0 || p >= dim) {
          inside = false;
          break;
        }
        rowMajor = rowMajor * dim + p;
        colMajor += p * colStride;
        colStride *= dim;
      }
      size_t at = size_t(wi * taps + ti);
      column[at] = inside ? rowMajor : points;
      flat[at] = inside ? (columnMajor ? colMajor : rowMajor) : 0;
    }
    for (size_t i = n; i-- > 0;) {
      if (++o[i] < outShape[2 + i])
        break;
      o[i] = 0;
    }
  }
  std::vector<int64_t> base(static_cast<size_t>(planes));
  for (int64_t p = 0; p < planes; ++p)
    base[p] = p * points;
  Type element = typeOf(x).getElementType();
  // Integer inputs (MaxPool's int8 / uint8) compare as floats, exactly:
  // padding taps are -inf and never tie with a value.
  if (!isa<FloatType>(element)) {
    element = Float32Type::get(ctx.getContext());
    x = ctx.createValue<nn::CastOp>(x, TypeAttr::get(element));
    if (!x)
      return nullptr;
  }
  Value rows = reshape(ctx, x, {planes, points});
  Value padding = constant(ctx, element, {planes, 1},
                           std::vector<double>(planes, -INFINITY));
  if (!rows || !padding)
    return nullptr;
  Value padded = ctx.createValue<nn::ConcatOp>(ValueRange{rows, padding},
                                               ctx.i64(1));
  if (!padded)
    return nullptr;
  Value tapValues = ctx.createValue<nn::GatherOp>(
      padded, indexTable(ctx, {windows * taps}, std::move(column)),
      ctx.i64(1));
  Value best = ctx.createValue<nn::ArgMaxOp>(
      reshape(ctx, tapValues, {planes, windows, taps}), ctx.i64(2),
      ctx.boolean(true), ctx.boolean(false));
  Value table = indexTable(ctx, {1, windows, taps}, std::move(flat));
  if (!best || !table)
    return nullptr;
  Value spatial = ctx.createValue<nn::GatherElementsOp>(
      ctx.createValue<nn::ExpandOp>(table,
                                    ctx.i64s({planes, windows, taps})),
      best, ctx.i64(2));
  Value index = binary<nn::AddOp>(
      ctx, spatial, indexTable(ctx, {planes, 1, 1}, std::move(base)));
  return reshape(ctx, index, outShape);
}

static void convertMeanVarianceNormalization(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  if (!type)
    return;
  SmallVector<int64_t> given{0, 2, 3};
  if (auto a = ctx.intsAttr("axes"))
    given = *a;
  auto axes = ctx.normalizeAxes(given, type.getRank());
  if (!axes)
    return;
  Value x = ctx.operand(0);
  if (!x)
    return;
  // ONNX's function body: (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9); the
  // variance is computed as E[(x - E[x])^2], the same value, more stably.
  Type element = type.getElementType();
  Value m = mean(ctx, x, *axes);
  Value centered = binary<nn::SubOp>(ctx, x, m);
  Value var = mean(ctx, binary<nn::MulOp>(ctx, centered, centered), *axes);
  Value std = var ? ctx.createValue<nn::SqrtOp>(var) : Value();
  Value y = binary<nn::DivOp>(
      ctx, centered, binary<nn::AddOp>(ctx, std, scalar(ctx, element, 1e-9)));
  ctx.setOutput(0, y);
}

static void convertLRN(NodeContext &ctx) {
  RankedTensorType type = ctx.spatialInputType(0);
  if (!type)
    return;
  if (!ctx.attr("size")) {
    ctx.fail("attribute 'size' is required");
    return;
  }
  int64_t size = ctx.intAttr("size", 1);
  double alpha = ctx.floatAttr("alpha", 1e-4);
  double beta = ctx.floatAttr("beta", 0.75);
  double bias = ctx.floatAttr("bias", 1.0);
  if (size <= 0 || size > kMaxDim) {
    ctx.fail("size " + Twine(size) + " must be positive");
    return;
  }
  Value x = ctx.operand(0);
  if (!x)
    return;
  // square_sum[c] = sum of x^2 over channels [c - floor((size-1)/2),
  // c + ceil((size-1)/2)]: an average pool over (N, 1, C, rest) with that
  // zero padding, times `size`; alpha / size * square_sum = alpha * mean.
  ArrayRef<int64_t> shape = type.getShape();
  int64_t n = shape[0], c = shape[1];
  int64_t rest = checkedNumElements(shape.drop_front(2)).value_or(0);
  Value sq = binary<nn::MulOp>(ctx, x, x);
  Value pooled = reshape(ctx, sq, {n, 1, c, rest});
  int64_t before = (size - 1) / 2, after = (size - 1) - before;
  if (pooled)
    pooled = ctx.createValue<nn::AveragePoolOp>(
        pooled, ctx.i64s({size, 1}), ctx.i64s({1, 1}),
        ctx.i64s({before, 0, after, 0}), ctx.boolean(false),
        ctx.boolean(true));
  Value windowMean = reshape(ctx, pooled, shape);
  Type element = type.getElementType();
  Value base = binary<nn::AddOp>(
      ctx, binary<nn::MulOp>(ctx, windowMean, scalar(ctx, element, alpha)),
      scalar(ctx, element, bias));
  Value y = binary<nn::DivOp>(
      ctx, x, binary<nn::PowOp>(ctx, base, scalar(ctx, element, beta)));
  ctx.setOutput(0, y);
}

static void convertGlobalMaxPool(NodeContext &ctx) {
  RankedTensorType type = ctx.spatialInputType(0);
  if (!type)
    return;
  if (Value x = ctx.operand(0))
    ctx.setOutput(0, ctx.createValue<nn::ReduceMaxOp>(
                         x, ctx.i64s(range(2, type.getRank())),
                         ctx.boolean(true)));
}

//===----------------------------------------------------------------------===//
// ConvTranspose
//===----------------------------------------------------------------------===//

/// A per-spatial-dimension attribute with `n` entries (default `fill`),
/// each at least `min`.
static std::optional<SmallVector<int64_t>>
spatialInts(NodeContext &ctx, StringRef name, size_t n, int64_t fill,
            int64_t min) {
  auto value = ctx.intsAttr(name);
  if (ctx.failed())
    return std::nullopt;
  if (!value)
    return SmallVector<int64_t>(n, fill);
  if (value->size() != n) {
    ctx.fail("attribute '" + name + "' has " + Twine(value->size()) +
             " entries for " + Twine(n) + " spatial dimensions");
    return std::nullopt;
  }
  for (int64_t v : *value) {
    if (v < min || v > kMaxDim) {
      ctx.fail("attribute '" + name + "' " + shapeToString(*value) +
               " is out of range");
      return std::nullopt;
    }
  }
  return value;
}

static void convertConvTranspose(NodeContext &ctx) {
  if (!ctx.requireInputs(2))
    return;
  RankedTensorType type = ctx.inputType(0, "X");
  RankedTensorType weightType = ctx.inputType(1, "W");
  if (type.getRank() < 3 || weightType.getRank() != type.getRank()) {
    ctx.fail("input must be N x C x D1 ... Dn and the weight of the same "
             "rank, got ranks " +
             Twine(type.getRank()) + " and " + Twine(weightType.getRank()));
    return;
  }
  size_t n = type.getRank() - 2;
  ArrayRef<int64_t> kernel = weightType.getShape().drop_front(2);
  if (!ctx.checkKernelShape(kernel))
    return;
  int64_t group = ctx.intAttr("group", 1);
  int64_t channels = type.getDimSize(1);
  if (group <= 0 || weightType.getDimSize(0) != channels ||
      channels % group != 0) {
    ctx.fail("weight of shape " + shapeToString(weightType.getShape()) +
             " and group " + Twine(group) + " do not match " +
             Twine(channels) + " input channels");
    return;
  }
  int64_t outChannels;
  if (llvm::MulOverflow(weightType.getDimSize(1), group, outChannels)) {
    ctx.fail("too many output channels");
    return;
  }
  auto strides = spatialInts(ctx, "strides", n, 1, 1);
  auto dilations = strides ? spatialInts(ctx, "dilations", n, 1, 1)
                           : std::nullopt;
  auto outputPadding = dilations ? spatialInts(ctx, "output_padding", n, 0, 0)
                                 : std::nullopt;
  std::string autoPad = ctx.stringAttr("auto_pad", "NOTSET");
  auto outputShape = ctx.intsAttr("output_shape");
  if (!outputPadding || ctx.failed())
    return;
  if (outputShape && outputShape->size() == n + 2)
    outputShape->erase(outputShape->begin(), outputShape->begin() + 2);
  if (outputShape && outputShape->size() != n) {
    ctx.fail("output_shape " + shapeToString(*outputShape) + " does not have " +
             Twine(n) + " spatial dimensions");
    return;
  }
  if (autoPad != "NOTSET" && autoPad != "VALID" && autoPad != "SAME_UPPER" &&
      autoPad != "SAME_LOWER") {
    ctx.fail("attribute 'auto_pad' has unknown value '" + autoPad + "'");
    return;
  }
  SmallVector<int64_t> pads(2 * n, 0);
  if (autoPad == "NOTSET" && !outputShape) {
    if (auto given = spatialInts(ctx, "pads", 2 * n, 0, 0))
      pads = *given;
    else
      return;
  }
  // The full (unpadded) output extent is s * (in - 1) + (k - 1) * d + 1;
  // output_padding adds zero rows at the end. With output_shape or SAME
  // padding the pads follow from the wanted size (ONNX's formulas, with a
  // floor division so that a negative total padding extends the end).
  SmallVector<int64_t> outSpatial(n), padsBegin(n), padsEnd(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t in = type.getDimSize(2 + i), s = (*strides)[i];
    int64_t extent = (kernel[i] - 1) * (*dilations)[i] + 1;
    int64_t full = s * (in - 1) + extent + (*outputPadding)[i];
    if (in <= 0 || full > kMaxDim) {
      ctx.fail("spatial size " + Twine(in) + " is out of range");
      return;
    }
    int64_t out;
    if (outputShape || autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
      out = outputShape ? (*outputShape)[i] : in * s;
      int64_t total = full - out;
      int64_t half = llvm::divideFloorSigned(total, int64_t(2));
      bool upper = autoPad == "SAME_UPPER";
      padsBegin[i] = upper ? half : total - half;
      padsEnd[i] = upper ? total - half : half;
    } else {
      padsBegin[i] = pads[i];
      padsEnd[i] = pads[n + i];
      out = full - padsBegin[i] - padsEnd[i];
    }
    if (out <= 0 || padsBegin[i] < 0) {
      ctx.unsupported("output size " + Twine(out) + " with begin padding " +
                      Twine(padsBegin[i]) + " in spatial dimension " +
                      Twine(i));
      return;
    }
    outSpatial[i] = out;
  }
  // conv_backward_input(X, W) is the gradient of a convolution of an input
  // of the output's shape with W (M x C/group... read as C x M/group...):
  // that convolution must map the output size back to the input size. The
  // rows output_padding (or a negative end padding) adds at the end are
  // ones no window reaches: they stay zero, as in ONNX.
  SmallVector<int64_t> convPads(2 * n);
  for (size_t i = 0; i < n; ++i) {
    int64_t in = type.getDimSize(2 + i), s = (*strides)[i];
    int64_t extent = (kernel[i] - 1) * (*dilations)[i] + 1;
    int64_t extra = outSpatial[i] + padsBegin[i] - (s * (in - 1) + extent);
    // extra > 0: rows past the last window; the forward convolution with
    // end padding 0 still gives `in` outputs when extra < s.
    int64_t endPad = extra > 0 ? 0 : -extra;
    if (extra >= s) {
      ctx.unsupported("output_padding / output_shape of " + Twine(extra) +
                      " extra rows in spatial dimension " + Twine(i) +
                      " (not below the stride " + Twine(s) + ")");
      return;
    }
    convPads[i] = padsBegin[i];
    convPads[n + i] = endPad;
  }
  SmallVector<int64_t> resultShape{type.getDimSize(0), outChannels};
  llvm::append_range(resultShape, outSpatial);
  Value x = ctx.operand(0), weight = ctx.operand(1);
  Value bias = ctx.hasInput(2) ? ctx.operand(2) : Value();
  if (!x || !weight || (ctx.hasInput(2) && !bias))
    return;
  Value y = ctx.createValue<nn::ConvBackwardInputOp>(
      x, weight, ctx.i64s(resultShape), ctx.i64s(*strides),
      ctx.i64s(convPads), ctx.i64s(*dilations), ctx.i64(group));
  if (bias)
    y = binary<nn::AddOp>(ctx, y,
                          perChannel(ctx, bias, outChannels, n + 2));
  ctx.setOutput(0, y);
}

//===----------------------------------------------------------------------===//
// MaxUnpool
//===----------------------------------------------------------------------===//

static void convertMaxUnpool(NodeContext &ctx) {
  if (!ctx.requireInputs(2))
    return;
  RankedTensorType type = ctx.inputType(0, "X");
  RankedTensorType indicesType = ctx.inputType(1, "I");
  if (type.getRank() < 3 || indicesType.getShape() != type.getShape()) {
    ctx.fail("input must be N x C x D1 ... Dn and the indices of its shape");
    return;
  }
  if (!isa<IntegerType>(indicesType.getElementType())) {
    ctx.fail("indices must be integers");
    return;
  }
  size_t n = type.getRank() - 2;
  auto kernel = ctx.intsAttr("kernel_shape");
  if (!kernel || kernel->size() != n) {
    if (!ctx.failed())
      ctx.fail("attribute 'kernel_shape' with " + Twine(n) +
               " entries is required");
    return;
  }
  auto strides = spatialInts(ctx, "strides", n, 1, 1);
  auto pads = strides ? spatialInts(ctx, "pads", 2 * n, 0, 0) : std::nullopt;
  if (!pads)
    return;
  // The pooled input's shape; the indices address it flattened (N and C
  // included), as MaxPool's Indices output does.
  SmallVector<int64_t> shape(type.getShape().take_front(2));
  for (size_t i = 0; i < n; ++i) {
    int64_t size = (type.getDimSize(2 + i) - 1) * (*strides)[i] +
                   (*kernel)[i] - (*pads)[i] - (*pads)[n + i];
    if ((*kernel)[i] <= 0 || size <= 0 || size > kMaxDim) {
      ctx.fail("kernel " + shapeToString(*kernel) +
               " gives an empty or too large output");
      return;
    }
    shape.push_back(size);
  }
  SmallVector<int64_t> outShape(shape);
  if (ctx.hasInput(2)) {
    auto given = ctx.constantInts(2, "output_shape");
    if (!given)
      return;
    if (given->size() != shape.size()) {
      ctx.fail("output_shape " + shapeToString(*given) + " has the wrong rank");
      return;
    }
    for (size_t d = 0; d < shape.size(); ++d) {
      if ((*given)[d] < shape[d] || (*given)[d] > kMaxDim ||
          (d < 2 && (*given)[d] != shape[d])) {
        ctx.unsupported("output_shape " + shapeToString(*given) +
                        " smaller than the unpooled shape " +
                        shapeToString(shape));
        return;
      }
    }
    outShape = *given;
  }
  auto total = checkedNumElements(outShape);
  if (!total || *total >= kMaxElements) {
    ctx.fail("output shape " + shapeToString(outShape) + " is too large");
    return;
  }
  int64_t count = type.getNumElements();
  int64_t flat = *checkedNumElements(shape);
  Type element = type.getElementType();
  int64_t indexCount = indicesType.getNumElements();
  auto indexSize = [&](int64_t) { return flat; };
  if (const HostTensor *c = ctx.constantInput(1))
    for (int64_t i = 0; i < indexCount; ++i)
      if (c->getInt(i) < 0 || c->getInt(i) >= indexSize(i)) {
        ctx.fail("index " + Twine(c->getInt(i)) + " is out of range for " +
                 Twine(flat) + " unpooled elements");
        return;
      }
  Value x = ctx.operand(0), indices = ctx.operand(1);
  if (!x || !indices)
    return;
  Type i64 = ctx.builder().getI64Type();
  if (indicesType.getElementType() != i64)
    indices = ctx.createValue<nn::CastOp>(indices, TypeAttr::get(i64));
  Value zeros = scalar(ctx, element, 0.0);
  Value base = zeros ? ctx.createValue<nn::ExpandOp>(zeros, ctx.i64s({flat}))
                     : Value();
  Value y;
  if (base)
    y = ctx.createValue<nn::ScatterNDOp>(
        base, reshape(ctx, indices, {count, 1}), reshape(ctx, x, {count}),
        ctx.i64(0), StringAttr::get(ctx.getContext(), "none"));
  y = reshape(ctx, y, shape);
  // A larger output_shape adds zeros at the end of each spatial axis.
  for (size_t d = 2; d < shape.size() && y; ++d) {
    if (outShape[d] == shape[d])
      continue;
    SmallVector<int64_t> fillShape(typeOf(y).getShape());
    fillShape[d] = outShape[d] - shape[d];
    Value fill = ctx.createValue<nn::ExpandOp>(zeros, ctx.i64s(fillShape));
    y = fill ? ctx.createValue<nn::ConcatOp>(ValueRange{y, fill}, ctx.i64(d))
             : Value();
  }
  ctx.setOutput(0, y);
}

//===----------------------------------------------------------------------===//
// Resize, Upsample
//===----------------------------------------------------------------------===//

namespace {
enum class InterpolationMode { Nearest, Linear, Cubic };

struct ResizeSpec {
  InterpolationMode mode = InterpolationMode::Nearest;
  std::string coordinateMode = "half_pixel";
  std::string nearestMode = "round_prefer_floor";
  double cubicA = -0.75;
  bool excludeOutside = false;
  double extrapolation = 0.0;
};

/// One resized axis: output position `o` is
/// `bias[o] + sum_t weight[o * taps + t] * x[index[o * taps + t]]`.
struct AxisTaps {
  int64_t taps = 0;
  std::vector<int64_t> index;
  std::vector<double> weight, bias;
};
} // namespace

/// Interpolation coefficients of the `taps` neighbours at fractional offset
/// `ratio` (ONNX's nearest_coeffs / linear_coeffs / cubic_coeffs).
static SmallVector<double, 4> coefficients(const ResizeSpec &spec,
                                           double ratio, bool integral) {
  switch (spec.mode) {
  case InterpolationMode::Nearest: {
    if (integral)
      return {0.0, 1.0};
    bool up;
    if (spec.nearestMode == "round_prefer_ceil")
      up = ratio >= 0.5;
    else if (spec.nearestMode == "floor")
      up = false;
    else if (spec.nearestMode == "ceil")
      up = true;
    else // round_prefer_floor
      up = ratio > 0.5;
    return {up ? 0.0 : 1.0, up ? 1.0 : 0.0};
  }
  case InterpolationMode::Linear:
    return {1.0 - ratio, ratio};
  case InterpolationMode::Cubic: {
    double a = spec.cubicA, r = ratio;
    auto outer = [a](double t) {
      return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
    };
    auto inner = [a](double t) { return ((a + 2) * t - (a + 3)) * t * t + 1; };
    return {outer(r + 1), inner(r), inner(1 - r), outer(2 - r)};
  }
  }
  return {};
}

/// The taps of one axis resized from `in` to `out` with `scale` (the
/// coordinate transformation uses `scale * in` as the output length, as the
/// reference implementation does, also when that is not an integer).
static std::optional<AxisTaps> axisTaps(NodeContext &ctx,
                                        const ResizeSpec &spec, int64_t in,
                                        int64_t out, double scale,
                                        double roiStart, double roiEnd) {
  AxisTaps t;
  t.taps = spec.mode == InterpolationMode::Cubic ? 4 : 2;
  const std::string &cm = spec.coordinateMode;
  double outLength = scale * double(in);
  int64_t pad = (t.taps + 1) / 2;
  int64_t padded = in + 2 * pad;
  for (int64_t o = 0; o < out; ++o) {
    double x = double(o), xo;
    if (cm == "align_corners")
      xo = outLength == 1 ? 0.0 : x * double(in - 1) / (outLength - 1);
    else if (cm == "asymmetric")
      xo = x / scale;
    else if (cm == "tf_crop_and_resize")
      xo = (outLength == 1 ? (roiEnd - roiStart) * double(in - 1) / 2
                           : x * (roiEnd - roiStart) * double(in - 1) /
                                 (outLength - 1)) +
           roiStart * double(in - 1);
    else if (cm == "pytorch_half_pixel")
      xo = outLength == 1 ? -0.5 : (x + 0.5) / scale - 0.5;
    else if (cm == "tf_half_pixel_for_nn")
      xo = (x + 0.5) / scale;
    else // half_pixel
      xo = (x + 0.5) / scale - 0.5;
    if (!std::isfinite(xo) || std::abs(xo) > double(kMaxDim)) {
      ctx.fail("resize coordinate of output " + Twine(o) + " is not finite");
      return std::nullopt;
    }
    if (cm == "tf_crop_and_resize" && (xo < 0 || xo > double(in - 1))) {
      t.bias.push_back(spec.extrapolation);
      for (int64_t k = 0; k < t.taps; ++k) {
        t.index.push_back(0);
        t.weight.push_back(0.0);
      }
      continue;
    }
    t.bias.push_back(0.0);
    double floorX = std::floor(xo);
    bool integral = floorX == xo;
    SmallVector<double, 4> c =
        coefficients(spec, integral ? 1.0 : xo - floorX, integral);
    // The `taps` positions of the edge-padded axis nearest to the
    // coordinate, ties to the lower one, in ascending order.
    double xp = xo + double(pad);
    SmallVector<int64_t, 4> picked;
    int64_t centre = int64_t(std::floor(xp));
    SmallVector<int64_t, 8> candidates;
    for (int64_t p = centre - t.taps; p <= centre + t.taps; ++p)
      if (p >= 0 && p < padded)
        candidates.push_back(p);
    llvm::stable_sort(candidates, [&](int64_t a, int64_t b) {
      double da = std::abs(xp - double(a)), db = std::abs(xp - double(b));
      return da != db ? da < db : a < b;
    });
    if (int64_t(candidates.size()) < t.taps) {
      ctx.fail("resize coordinate of output " + Twine(o) + " is out of range");
      return std::nullopt;
    }
    picked.assign(candidates.begin(), candidates.begin() + t.taps);
    llvm::sort(picked);
    double sum = 0.0;
    for (int64_t k = 0; k < t.taps; ++k) {
      int64_t idx = picked[k] - pad;
      if (spec.excludeOutside && (idx < 0 || idx >= in))
        c[k] = 0.0;
      sum += c[k];
    }
    for (int64_t k = 0; k < t.taps; ++k) {
      int64_t idx = picked[k] - pad;
      t.index.push_back(std::clamp<int64_t>(idx, 0, in - 1));
      t.weight.push_back(spec.excludeOutside ? c[k] / sum : c[k]);
    }
  }
  return t;
}

/// Resizes `x` to `outShape` with per-axis `scales` (and `roi` for
/// tf_crop_and_resize: starts then ends, one per axis).
static Value resize(NodeContext &ctx, Value x, const ResizeSpec &spec,
                    ArrayRef<int64_t> outShape, ArrayRef<double> scales,
                    ArrayRef<double> roi) {
  RankedTensorType type = typeOf(x);
  int64_t rank = type.getRank();
  Type element = type.getElementType();
  for (int64_t axis = 0; axis < rank && x; ++axis) {
    int64_t in = type.getDimSize(axis), out = outShape[axis];
    double roiStart = roi.empty() ? 0.0 : roi[axis];
    double roiEnd = roi.empty() ? 1.0 : roi[rank + axis];
    auto taps = axisTaps(ctx, spec, in, out, scales[axis], roiStart, roiEnd);
    if (!taps)
      return nullptr;
    // The identity along this axis reads nothing new.
    bool identity = in == out;
    for (int64_t o = 0; identity && o < out; ++o) {
      double total = 0.0;
      for (int64_t k = 0; identity && k < taps->taps; ++k) {
        double w = taps->weight[o * taps->taps + k];
        identity = w == 0.0 || taps->index[o * taps->taps + k] == o;
        total += w;
      }
      identity = identity && total == 1.0 && taps->bias[o] == 0.0;
    }
    if (identity)
      continue;
    // One tap of weight 1 per position (nearest, and linear at integral
    // coordinates): a single gather.
    std::vector<int64_t> single(out, -1);
    for (int64_t o = 0; o < out; ++o) {
      bool ok = taps->bias[o] == 0.0;
      for (int64_t k = 0; ok && k < taps->taps; ++k) {
        double w = taps->weight[o * taps->taps + k];
        if (w == 1.0 && single[o] < 0)
          single[o] = taps->index[o * taps->taps + k];
        else if (w != 0.0)
          ok = false;
      }
      if (!ok || single[o] < 0) {
        single.clear();
        break;
      }
    }
    if (!single.empty()) {
      x = ctx.createValue<nn::GatherOp>(
          x, indexTable(ctx, {out}, std::move(single)), ctx.i64(axis));
      if (x)
        type = typeOf(x);
      continue;
    }
    // Weights broadcast along the dimensions after `axis`.
    SmallVector<int64_t> weightShape{out};
    weightShape.append(rank - axis - 1, 1);
    Value sum;
    for (int64_t k = 0; k < taps->taps; ++k) {
      std::vector<int64_t> index(out);
      std::vector<double> weight(out);
      bool allZero = true, allOne = true;
      for (int64_t o = 0; o < out; ++o) {
        index[o] = taps->index[o * taps->taps + k];
        weight[o] = taps->weight[o * taps->taps + k];
        allZero &= weight[o] == 0.0;
        allOne &= weight[o] == 1.0;
      }
      if (allZero)
        continue;
      Value gathered = ctx.createValue<nn::GatherOp>(
          x, indexTable(ctx, {out}, std::move(index)), ctx.i64(axis));
      Value term = allOne ? gathered
                          : binary<nn::MulOp>(
                                ctx, gathered,
                                constant(ctx, element, weightShape, weight));
      sum = sum ? binary<nn::AddOp>(ctx, sum, term) : term;
    }
    if (llvm::any_of(taps->bias, [](double b) { return b != 0.0; })) {
      Value bias = constant(ctx, element, weightShape, taps->bias);
      sum = sum ? binary<nn::AddOp>(ctx, sum, bias) : Value();
    }
    if (!sum && !ctx.failed()) {
      // Every output position is extrapolated.
      SmallVector<int64_t> shape(typeOf(x).getShape());
      shape[axis] = out;
      Value bias = constant(ctx, element, weightShape, taps->bias);
      sum = ctx.createValue<nn::ExpandOp>(bias, ctx.i64s(shape));
    }
    x = sum;
    if (x)
      type = typeOf(x);
  }
  return x;
}

/// Float values of constant input `i`, or std::nullopt (reported).
static std::optional<SmallVector<double>> constantFloats(NodeContext &ctx,
                                                         size_t i,
                                                         StringRef what) {
  const HostTensor *t = ctx.requireConstant(i, what);
  if (!t)
    return std::nullopt;
  SmallVector<double> v;
  for (int64_t k = 0; k < t->numElements(); ++k)
    v.push_back(t->getDouble(k));
  return v;
}

/// Output shape and per-axis scales from `scales` or `sizes`.
static bool resolveResizeShape(NodeContext &ctx, ArrayRef<int64_t> inShape,
                               const SmallVector<double> *scalesIn,
                               const SmallVector<int64_t> *sizesIn,
                               ArrayRef<double> roi, bool crop,
                               SmallVector<int64_t> &outShape,
                               SmallVector<double> &scales) {
  size_t rank = inShape.size();
  if (sizesIn) {
    if (sizesIn->size() != rank) {
      ctx.fail("sizes " + shapeToString(*sizesIn) + " do not have rank " +
               Twine(rank));
      return false;
    }
    for (size_t d = 0; d < rank; ++d) {
      int64_t s = (*sizesIn)[d];
      if (s <= 0 || s > kMaxDim || inShape[d] <= 0) {
        ctx.fail("sizes " + shapeToString(*sizesIn) + " must be positive");
        return false;
      }
      outShape.push_back(s);
      scales.push_back(double(s) / double(inShape[d]));
    }
  } else {
    if (!scalesIn || scalesIn->size() != rank) {
      ctx.fail("expects " + Twine(rank) + " scales");
      return false;
    }
    for (size_t d = 0; d < rank; ++d) {
      double s = (*scalesIn)[d];
      double length = crop ? roi[rank + d] - roi[d] : 1.0;
      double out = std::floor(double(inShape[d]) * length * s);
      if (!(s > 0) || !(out >= 1) || out > double(kMaxDim)) {
        ctx.fail("scale " + std::to_string(s) + " of axis " + Twine(d) +
                 " gives no valid output size");
        return false;
      }
      outShape.push_back(int64_t(out));
      scales.push_back(s);
    }
  }
  if (checkedNumElements(outShape).value_or(kMaxElements) >= kMaxElements) {
    ctx.fail("output shape " + shapeToString(outShape) + " is too large");
    return false;
  }
  return true;
}

/// The type of input X of Resize / Upsample, with `spec.mode` read from
/// attribute 'mode'; null once the node failed.
static RankedTensorType readResizeInput(NodeContext &ctx, ResizeSpec &spec) {
  RankedTensorType type = ctx.inputType(0, "X");
  if (!type)
    return nullptr;
  std::string mode = ctx.stringAttr("mode", "nearest");
  if (mode == "nearest")
    spec.mode = InterpolationMode::Nearest;
  else if (mode == "linear" || mode == "bilinear" || mode == "trilinear")
    spec.mode = InterpolationMode::Linear;
  else if (mode == "cubic" || mode == "bicubic")
    spec.mode = InterpolationMode::Cubic;
  else {
    ctx.fail("attribute 'mode' has unknown value '" + mode + "'");
    return nullptr;
  }
  return ctx.failed() ? nullptr : type;
}

static void convertResize(NodeContext &ctx) {
  ResizeSpec spec;
  RankedTensorType type = readResizeInput(ctx, spec);
  if (!type)
    return;
  bool v10 = ctx.sinceVersion() < 11;
  if (v10) {
    // Opset 10: Resize(X, scales), asymmetric coordinates, nearest rounds
    // down (as Upsample).
    spec.coordinateMode = "asymmetric";
    spec.nearestMode = "floor";
    if (spec.mode == InterpolationMode::Cubic) {
      ctx.fail("mode 'cubic' needs opset 11");
      return;
    }
  } else {
    spec.coordinateMode =
        ctx.stringAttr("coordinate_transformation_mode", "half_pixel");
    spec.nearestMode = ctx.stringAttr("nearest_mode", "round_prefer_floor");
    spec.cubicA = ctx.floatAttr("cubic_coeff_a", -0.75);
    spec.excludeOutside = ctx.intAttr("exclude_outside", 0) != 0;
    spec.extrapolation = ctx.floatAttr("extrapolation_value", 0.0);
  }
  if (ctx.failed())
    return;
  static const char *const kModes[] = {
      "half_pixel",         "pytorch_half_pixel", "align_corners",
      "asymmetric",         "tf_half_pixel_for_nn", "tf_crop_and_resize"};
  if (!llvm::is_contained(kModes, spec.coordinateMode)) {
    ctx.fail("coordinate_transformation_mode '" + spec.coordinateMode +
             "' is unknown");
    return;
  }
  static const char *const kNearest[] = {"round_prefer_floor",
                                         "round_prefer_ceil", "floor", "ceil"};
  if (!llvm::is_contained(kNearest, spec.nearestMode)) {
    ctx.fail("nearest_mode '" + spec.nearestMode + "' is unknown");
    return;
  }
  if (ctx.intAttr("antialias", 0) != 0 || ctx.attr("axes") ||
      ctx.stringAttr("keep_aspect_ratio_policy", "stretch") != "stretch") {
    if (!ctx.failed())
      ctx.unsupported("antialias, axes or keep_aspect_ratio_policy (opset "
                      "18 attributes)");
    return;
  }
  if (!isa<FloatType>(type.getElementType())) {
    ctx.unsupported("element type " + dtypeName(getDType(type.getElementType())) +
                    " (floats only)");
    return;
  }
  int64_t rank = type.getRank();
  SmallVector<double> roi;
  std::optional<SmallVector<double>> scales;
  std::optional<SmallVector<int64_t>> sizes;
  if (v10) {
    if (!ctx.requireInputs(2))
      return;
    scales = constantFloats(ctx, 1, "scales");
    if (!scales)
      return;
  } else {
    bool crop = spec.coordinateMode == "tf_crop_and_resize";
    if (crop) {
      auto r = ctx.hasInput(1) ? constantFloats(ctx, 1, "roi") : std::nullopt;
      if (!r) {
        if (!ctx.failed())
          ctx.fail("tf_crop_and_resize needs input 'roi'");
        return;
      }
      roi = *r;
      if (int64_t(roi.size()) != 2 * rank) {
        ctx.fail("roi has " + Twine(roi.size()) + " values for rank " +
                 Twine(rank));
        return;
      }
    }
    bool hasScales = ctx.hasInput(2) && ctx.input(2)->type.getNumElements() > 0;
    bool hasSizes = ctx.hasInput(3) && ctx.input(3)->type.getNumElements() > 0;
    if (hasScales == hasSizes) {
      ctx.fail("exactly one of 'scales' and 'sizes' must be given");
      return;
    }
    if (hasScales) {
      scales = constantFloats(ctx, 2, "scales");
      if (!scales)
        return;
    } else {
      sizes = ctx.constantInts(3, "sizes");
      if (!sizes)
        return;
    }
  }
  SmallVector<int64_t> outShape;
  SmallVector<double> axisScales;
  if (!resolveResizeShape(ctx, type.getShape(), scales ? &*scales : nullptr,
                          sizes ? &*sizes : nullptr, roi, !roi.empty(),
                          outShape, axisScales))
    return;
  Value x = ctx.operand(0);
  if (!x)
    return;
  if (Value y = resize(ctx, x, spec, outShape, axisScales, roi))
    ctx.setOutput(0, y);
}

static void convertUpsample(NodeContext &ctx) {
  ResizeSpec spec;
  RankedTensorType type = readResizeInput(ctx, spec);
  if (!type)
    return;
  if (spec.mode == InterpolationMode::Cubic) {
    ctx.fail("mode must be 'nearest' or 'linear'");
    return;
  }
  if (!isa<FloatType>(type.getElementType())) {
    ctx.unsupported("element type " + dtypeName(getDType(type.getElementType())) +
                    " (floats only)");
    return;
  }
  // Upsample: asymmetric coordinates; nearest repeats (rounds down).
  spec.coordinateMode = "asymmetric";
  spec.nearestMode = "floor";
  std::optional<SmallVector<double>> scales;
  if (ctx.sinceVersion() < 9) {
    auto a = ctx.attr("scales");
    if (!a) {
      ctx.fail("attribute 'scales' is required");
      return;
    }
    scales.emplace(a->floats().begin(), a->floats().end());
  } else {
    if (!ctx.requireInputs(2))
      return;
    scales = constantFloats(ctx, 1, "scales");
    if (!scales)
      return;
  }
  SmallVector<int64_t> outShape;
  SmallVector<double> axisScales;
  if (!resolveResizeShape(ctx, type.getShape(), &*scales, nullptr, {}, false,
                          outShape, axisScales))
    return;
  Value x = ctx.operand(0);
  if (!x)
    return;
  if (Value y = resize(ctx, x, spec, outShape, axisScales, {}))
    ctx.setOutput(0, y);
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

void onnx_import::registerLayerOps(OpTable &table) {
  // Schema versions from ONNX's Changelog.md.
  table["LayerNormalization"] = {convertLayerNormalization, {17}};
  table["InstanceNormalization"] = {convertInstanceNormalization, {1, 6}};
  table["GroupNormalization"] = {convertGroupNormalization, {18, 21}};
  table["MeanVarianceNormalization"] = {convertMeanVarianceNormalization,
                                        {9, 13}};
  table["LRN"] = {convertLRN, {1, 13}};
  table["GlobalMaxPool"] = {convertGlobalMaxPool, {1}};
  table["ConvTranspose"] = {convertConvTranspose, {1, 11}};
  table["Resize"] = {convertResize, {10, 11, 13, 18, 19}};
  // Upsample 1 (experimental height/width scales) is not handled.
  table["Upsample"] = {convertUpsample, {1, 7, 9, 10}, 7};
  table["MaxUnpool"] = {convertMaxUnpool, {9, 11}};
}
