//===- ConvertNeural.cpp - contraction, window, norm and reduce ops -------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// MatMul, Gemm, Conv, MaxPool, AveragePool, GlobalAveragePool,
// BatchNormalization, LayerNormalization, Softmax, LogSoftmax and the
// reductions. Windowed ops get explicit pads (auto_pad resolved here);
// attributes and outputs the nn dialect cannot honour are reported as not
// supported with the reason.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace pipedream;
using namespace pipedream::onnx_import;

//===----------------------------------------------------------------------===//
// Softmax family, MatMul, Gemm
//===----------------------------------------------------------------------===//

template <typename OpTy>
static void convertSoftmax(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  if (!type)
    return;
  bool coerce2D = ctx.sinceVersion() < 13;
  int64_t rank = type.getRank();
  auto axis = ctx.normalizeAxis(ctx.intAttr("axis", coerce2D ? 1 : -1), rank);
  if (!axis)
    return;
  Value x = ctx.operand(0);
  if (!x)
    return;
  // Before opset 13 the input is coerced to 2-D at `axis` and normalized
  // over the second dimension: reshape -> softmax -> reshape. Over the last
  // axis alone that is the opset-13 form.
  if (!coerce2D || *axis == rank - 1) {
    ctx.setOutput(0, ctx.createValue<OpTy>(x, ctx.i64(*axis)));
    return;
  }
  ArrayRef<int64_t> shape = type.getShape();
  auto outer = checkedNumElements(shape.take_front(*axis));
  auto inner = checkedNumElements(shape.drop_front(*axis));
  if (!outer || !inner) {
    ctx.fail("input shape " + shapeToString(shape) + " is too large");
    return;
  }
  Value flat = ctx.createValue<nn::ReshapeOp>(x, ctx.i64s({*outer, *inner}));
  Value y = flat ? ctx.createValue<OpTy>(flat, ctx.i64(1)) : Value();
  if (y)
    ctx.setOutput(0, ctx.createValue<nn::ReshapeOp>(y, ctx.i64s(shape)));
}

static void convertMatMul(NodeContext &ctx) {
  if (!ctx.requireInputs(2))
    return;
  Value a = ctx.operand(0), b = ctx.operand(1);
  if (a && b)
    ctx.setOutput(0, ctx.createValue<nn::MatMulOp>(a, b));
}

static void convertGemm(NodeContext &ctx) {
  if (!ctx.requireInputs(2))
    return;
  double alpha = ctx.floatAttr("alpha", 1.0), beta = ctx.floatAttr("beta", 1.0);
  bool transA = ctx.intAttr("transA", 0) != 0;
  bool transB = ctx.intAttr("transB", 0) != 0;
  // Before opset 7 C broadcasts only with `broadcast`=1; otherwise it must
  // be M x N already.
  if (ctx.sinceVersion() < 7 && ctx.hasInput(2) &&
      ctx.intAttr("broadcast", 0) == 0 && !ctx.failed()) {
    RankedTensorType ta = ctx.inputType(0), tb = ctx.inputType(1),
                     tc = ctx.inputType(2);
    if (ta.getRank() == 2 && tb.getRank() == 2) {
      SmallVector<int64_t> mn = {ta.getDimSize(transA ? 1 : 0),
                                 tb.getDimSize(transB ? 0 : 1)};
      if (tc.getShape() != ArrayRef<int64_t>(mn)) {
        ctx.fail("C of shape " + shapeToString(tc.getShape()) + " is not " +
                 shapeToString(mn) + " and 'broadcast' is 0");
        return;
      }
    }
  }
  Value a = ctx.operand(0), b = ctx.operand(1);
  Value c = ctx.hasInput(2) ? ctx.operand(2) : Value();
  if (!a || !b || (ctx.hasInput(2) && !c))
    return;
  ctx.setOutput(0, ctx.createValue<nn::GemmOp>(
                       a, b, c, ctx.f64(alpha), ctx.f64(beta),
                       ctx.boolean(transA), ctx.boolean(transB)));
}

//===----------------------------------------------------------------------===//
// Windows: Conv and pooling
//===----------------------------------------------------------------------===//

namespace {
/// Resolved window attributes of Conv / MaxPool / AveragePool.
struct Window {
  SmallVector<int64_t> kernel, strides, pads, dilations;
};
} // namespace

/// A per-spatial-dimension attribute (`strides`, `dilations`), `n` entries,
/// default all ones.
static std::optional<SmallVector<int64_t>>
spatialAttr(NodeContext &ctx, StringRef name, size_t n) {
  auto value = ctx.intsAttr(name);
  if (ctx.failed())
    return std::nullopt;
  if (!value)
    return SmallVector<int64_t>(n, 1);
  if (value->size() != n) {
    ctx.fail("attribute '" + name + "' has " + Twine(value->size()) +
             " entries for " + Twine(n) + " spatial dimensions");
    return std::nullopt;
  }
  for (int64_t v : *value) {
    if (v <= 0 || v > kMaxDim) {
      ctx.fail("attribute '" + name + "' " + shapeToString(*value) +
               " must be positive");
      return std::nullopt;
    }
  }
  return value;
}

/// Reads strides, dilations and pads (resolving auto_pad) for a window of
/// `kernel` over the spatial dimensions of `inputShape` (N x C x D...).
static std::optional<Window> resolveWindow(NodeContext &ctx,
                                           ArrayRef<int64_t> inputShape,
                                           ArrayRef<int64_t> kernel,
                                           bool hasDilations) {
  size_t n = kernel.size();
  Window w;
  w.kernel.assign(kernel.begin(), kernel.end());
  for (int64_t k : kernel) {
    if (k <= 0 || k > kMaxDim) {
      ctx.fail("kernel shape " + shapeToString(kernel) + " must be positive");
      return std::nullopt;
    }
  }
  auto strides = spatialAttr(ctx, "strides", n);
  if (!strides)
    return std::nullopt;
  w.strides = *strides;
  if (hasDilations) {
    auto dilations = spatialAttr(ctx, "dilations", n);
    if (!dilations)
      return std::nullopt;
    w.dilations = *dilations;
  } else {
    w.dilations.assign(n, 1);
  }
  // Keep the window extent (k - 1) * d + 1 far from overflow.
  for (size_t i = 0; i < n; ++i) {
    int64_t extent;
    if (llvm::MulOverflow(w.kernel[i] - 1, w.dilations[i], extent) ||
        extent >= kMaxDim) {
      ctx.fail("window of kernel " + shapeToString(w.kernel) +
               " and dilations " + shapeToString(w.dilations) +
               " is too large");
      return std::nullopt;
    }
  }
  std::string autoPad = ctx.stringAttr("auto_pad", "NOTSET");
  if (ctx.failed())
    return std::nullopt;
  if (autoPad == "NOTSET") {
    auto pads = ctx.intsAttr("pads");
    if (ctx.failed())
      return std::nullopt;
    w.pads = pads ? *pads : SmallVector<int64_t>(2 * n, 0);
    if (w.pads.size() != 2 * n) {
      ctx.fail("attribute 'pads' has " + Twine(w.pads.size()) +
               " entries for " + Twine(n) + " spatial dimensions");
      return std::nullopt;
    }
    for (int64_t p : w.pads) {
      if (p < 0 || p > kMaxDim) {
        ctx.fail("attribute 'pads' " + shapeToString(w.pads) +
                 " must be non-negative");
        return std::nullopt;
      }
    }
  } else if (autoPad == "VALID") {
    w.pads.assign(2 * n, 0);
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    // Output size ceil(in / stride); the extra padding goes at the end for
    // SAME_UPPER and at the beginning for SAME_LOWER.
    w.pads.assign(2 * n, 0);
    for (size_t i = 0; i < n; ++i) {
      int64_t in = inputShape[2 + i];
      int64_t out = llvm::divideCeil(in, w.strides[i]);
      int64_t extent = (w.kernel[i] - 1) * w.dilations[i] + 1;
      int64_t total = std::max<int64_t>(
          0, (out - 1) * w.strides[i] + extent - in);
      int64_t small = total / 2, large = total - small;
      w.pads[i] = autoPad == "SAME_UPPER" ? small : large;
      w.pads[i + n] = autoPad == "SAME_UPPER" ? large : small;
    }
  } else {
    ctx.fail("attribute 'auto_pad' has unknown value '" + autoPad + "'");
    return std::nullopt;
  }
  return w;
}

static void convertConv(NodeContext &ctx) {
  if (!ctx.requireInputs(2))
    return;
  RankedTensorType type = ctx.spatialInputType(0, "X");
  if (!type)
    return;
  RankedTensorType weightType = ctx.inputType(1, "W");
  if (weightType.getRank() != type.getRank()) {
    ctx.fail("weight rank " + Twine(weightType.getRank()) +
             " differs from input rank " + Twine(type.getRank()));
    return;
  }
  ArrayRef<int64_t> kernel = weightType.getShape().drop_front(2);
  if (!ctx.checkKernelShape(kernel))
    return;
  int64_t group = ctx.intAttr("group", 1);
  int64_t channels = type.getDimSize(1), perGroup = weightType.getDimSize(1);
  int64_t product;
  if (group <= 0 || llvm::MulOverflow(perGroup, group, product) ||
      product != channels) {
    ctx.fail("group " + Twine(group) + " with " + Twine(perGroup) +
             " channels per group does not match " + Twine(channels) +
             " input channels");
    return;
  }
  auto w = resolveWindow(ctx, type.getShape(), kernel, /*hasDilations=*/true);
  if (!w)
    return;
  Value x = ctx.operand(0), weight = ctx.operand(1);
  Value bias = ctx.hasInput(2) ? ctx.operand(2) : Value();
  if (!x || !weight || (ctx.hasInput(2) && !bias))
    return;
  ctx.setOutput(0, ctx.createValue<nn::ConvOp>(
                       x, weight, bias, ctx.i64s(w->strides), ctx.i64s(w->pads),
                       ctx.i64s(w->dilations), ctx.i64(group)));
}

/// kernel_shape of a pooling op (required).
static std::optional<SmallVector<int64_t>> poolKernel(NodeContext &ctx,
                                                      RankedTensorType type) {
  auto kernel = ctx.intsAttr("kernel_shape");
  if (ctx.failed())
    return std::nullopt;
  if (!kernel) {
    ctx.fail("attribute 'kernel_shape' is required");
    return std::nullopt;
  }
  if (int64_t(kernel->size()) != type.getRank() - 2) {
    ctx.fail("kernel_shape " + shapeToString(*kernel) + " does not match " +
             Twine(type.getRank() - 2) + " spatial dimensions");
    return std::nullopt;
  }
  return kernel;
}

static void convertMaxPool(NodeContext &ctx) {
  RankedTensorType type = ctx.spatialInputType(0, "X");
  if (!type)
    return;
  if (ctx.outputUsed(1) && ctx.sinceVersion() < 8) {
    ctx.fail("MaxPool before opset 8 has no Indices output");
    return;
  }
  auto kernel = poolKernel(ctx, type);
  if (!kernel)
    return;
  // Opset 10 added ceil_mode and dilations.
  bool newForm = ctx.sinceVersion() >= 10;
  auto w = resolveWindow(ctx, type.getShape(), *kernel,
                         /*hasDilations=*/newForm);
  bool ceilMode = newForm && ctx.intAttr("ceil_mode", 0) != 0;
  if (!w)
    return;
  Value x = ctx.operand(0);
  if (!x)
    return;
  Value y = ctx.createValue<nn::MaxPoolOp>(
      x, ctx.i64s(w->kernel), ctx.i64s(w->strides), ctx.i64s(w->pads),
      ctx.i64s(w->dilations), ctx.boolean(ceilMode));
  if (!y)
    return;
  ctx.setOutput(0, y);
  if (ctx.outputUsed(1)) {
    int64_t storageOrder = ctx.intAttr("storage_order", 0);
    if (storageOrder != 0 && storageOrder != 1) {
      ctx.fail("storage_order must be 0 or 1, got " + Twine(storageOrder));
      return;
    }
    if (Value indices = maxPoolIndices(
            ctx, x, cast<RankedTensorType>(y.getType()).getShape(), w->kernel,
            w->strides, w->pads, w->dilations, storageOrder == 1))
      ctx.setOutput(1, indices);
  }
}

static void convertAveragePool(NodeContext &ctx) {
  RankedTensorType type = ctx.spatialInputType(0, "X");
  if (!type)
    return;
  auto kernel = poolKernel(ctx, type);
  if (!kernel)
    return;
  // Opset 19 added dilations; nn.average_pool has none.
  auto w = resolveWindow(ctx, type.getShape(), *kernel,
                         /*hasDilations=*/ctx.sinceVersion() >= 19);
  if (!w)
    return;
  if (llvm::any_of(w->dilations, [](int64_t d) { return d != 1; })) {
    ctx.unsupported("dilations " + shapeToString(w->dilations));
    return;
  }
  // Opset 7 added count_include_pad, opset 10 ceil_mode.
  bool ceilMode = ctx.sinceVersion() >= 10 && ctx.intAttr("ceil_mode", 0) != 0;
  bool countIncludePad =
      ctx.sinceVersion() >= 7 && ctx.intAttr("count_include_pad", 0) != 0;
  if (Value x = ctx.operand(0))
    ctx.setOutput(0, ctx.createValue<nn::AveragePoolOp>(
                         x, ctx.i64s(w->kernel), ctx.i64s(w->strides),
                         ctx.i64s(w->pads), ctx.boolean(ceilMode),
                         ctx.boolean(countIncludePad)));
}

static void convertGlobalAveragePool(NodeContext &ctx) {
  if (!ctx.spatialInputType(0, "X"))
    return;
  if (Value x = ctx.operand(0))
    ctx.setOutput(0, ctx.createValue<nn::GlobalAveragePoolOp>(x));
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

static void convertBatchNormalization(NodeContext &ctx) {
  if (!ctx.requireInputs(5))
    return;
  double epsilon = ctx.floatAttr("epsilon", 1e-5);
  double momentum = ctx.floatAttr("momentum", 0.9);
  if (ctx.opset() >= 14 && ctx.intAttr("training_mode", 0) != 0) {
    convertBatchNormalizationTraining(ctx); // ConvertLayers.cpp
    return;
  }
  // Before opset 9: `spatial` (statistics per channel when 1); before
  // opset 7: `is_test` (training mode when 0). `consumed_inputs` (< 6) is
  // ignored.
  if (ctx.sinceVersion() < 9 && ctx.intAttr("spatial", 1) == 0) {
    ctx.unsupported("spatial=0 (statistics per element, not per channel)");
    return;
  }
  if (ctx.sinceVersion() < 7 && ctx.intAttr("is_test", 0) == 0) {
    ctx.unsupported("is_test=0 (training mode; export the model in eval "
                    "mode, training is pipedream's job)");
    return;
  }
  for (size_t i = 1; i < ctx.numOutputs(); ++i) {
    if (ctx.outputUsed(i)) {
      ctx.unsupported("output " + Twine(i) +
                      " (running or saved statistics) is used");
      return;
    }
  }
  SmallVector<Value, 5> operands;
  for (size_t i = 0; i < 5; ++i) {
    Value v = ctx.operand(i);
    if (!v)
      return;
    operands.push_back(v);
  }
  ctx.setOutput(0, ctx.createValue<nn::BatchNormalizationOp>(
                       operands[0], operands[1], operands[2], operands[3],
                       operands[4], ctx.f64(epsilon), ctx.f64(momentum)));
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

bool onnx_import::resolveReduceAxes(NodeContext &ctx, int64_t axesFromOpset,
                                    SmallVectorImpl<int64_t> &axes,
                                    bool &keepdims) {
  RankedTensorType type = ctx.inputType(0);
  if (!type)
    return false;
  bool axesInput = ctx.opset() >= axesFromOpset;
  bool ok;
  auto given = ctx.axesOperand(axesInput, 1, ok);
  keepdims = ctx.intAttr("keepdims", 1) != 0;
  bool noop = axesInput && ctx.intAttr("noop_with_empty_axes", 0) != 0;
  if (!ok || ctx.failed())
    return false;
  axes.clear();
  if (given && !given->empty()) {
    auto normalized = ctx.normalizeAxes(*given, type.getRank());
    if (!normalized)
      return false;
    axes.append(normalized->begin(), normalized->end());
  } else if (!noop) {
    for (int64_t d = 0; d < type.getRank(); ++d)
      axes.push_back(d);
  }
  return true;
}

/// `axesFromOpset`: first opset where the axes are an input, not an
/// attribute (ReduceSum 13, the other reductions 18).
template <typename OpTy, ReduceKind Kind, int64_t AxesFromOpset>
static void convertReduce(NodeContext &ctx) {
  SmallVector<int64_t> axes;
  bool keepdims;
  if (!resolveReduceAxes(ctx, AxesFromOpset, axes, keepdims))
    return;
  // Nothing to reduce (noop, or a scalar input).
  if (axes.empty()) {
    ctx.setOutputAlias(0, *ctx.input(0));
    return;
  }
  if (const HostTensor *c = ctx.constantInput(0)) {
    ctx.setFolded(foldReduce(Kind, *c, axes, keepdims));
    return;
  }
  if (Value x = ctx.operand(0))
    ctx.setOutput(0, ctx.createValue<OpTy>(x, ctx.i64s(axes),
                                           ctx.boolean(keepdims)));
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

void onnx_import::registerNeuralOps(OpTable &table) {
  // Schema versions from ONNX's Changelog.md.
  table["Softmax"] = {convertSoftmax<nn::SoftmaxOp>, {1, 11, 13}};
  table["LogSoftmax"] = {convertSoftmax<nn::LogSoftmaxOp>, {1, 11, 13}};
  table["MatMul"] = {convertMatMul, {1, 9, 13}};
  table["Gemm"] = {convertGemm, {1, 6, 7, 9, 11, 13}};
  table["Conv"] = {convertConv, {1, 11}};
  table["MaxPool"] = {convertMaxPool, {1, 8, 10, 11, 12}};
  table["AveragePool"] = {convertAveragePool, {1, 7, 10, 11, 19}};
  table["GlobalAveragePool"] = {convertGlobalAveragePool, {1}};
  table["BatchNormalization"] = {convertBatchNormalization,
                                 {1, 6, 7, 9, 14, 15}};
  // LayerNormalization: ConvertLayers.cpp.
  table["ReduceMean"] = {convertReduce<nn::ReduceMeanOp, ReduceKind::Mean, 18>,
                         {1, 11, 13, 18}};
  table["ReduceSum"] = {convertReduce<nn::ReduceSumOp, ReduceKind::Sum, 13>,
                        {1, 11, 13}};
  table["ReduceMax"] = {convertReduce<nn::ReduceMaxOp, ReduceKind::Max, 18>,
                        {1, 11, 12, 13, 18, 20}};
  table["ReduceMin"] = {convertReduce<nn::ReduceMinOp, ReduceKind::Min, 18>,
                        {1, 11, 12, 13, 18, 20}};
  table["ReduceProd"] = {convertReduce<nn::ReduceProdOp, ReduceKind::Prod, 18>,
                         {1, 11, 13, 18}};
}
