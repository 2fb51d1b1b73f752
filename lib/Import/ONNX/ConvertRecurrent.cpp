//===- ConvertRecurrent.cpp - RNN, GRU, LSTM, ReverseSequence -------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// ONNX's recurrent layers (RNN, GRU, LSTM) are unrolled at import into nn
// ops over the (static) sequence length, so they are verified, lowered,
// differentiated and costed like any other composition:
// - the input projection of every time step is one `nn.gemm`
//   (`[seq * batch, input] x W^T + Wb (+ Rb)`), split into the steps;
// - each step is an `nn.gemm` of the previous hidden state with R^T plus
//   the step's projection, split into the gates, and elementwise ops;
// - `direction = reverse` walks the steps backwards; `bidirectional` builds
//   both directions and concatenates them;
// - `sequence_lens` (a constant known at import) masks the steps past a
//   sequence's end: its hidden (and cell) state is carried unchanged and its
//   `Y` rows are zero, as ONNX defines; a reverse direction reverses each
//   sequence within its length first (ReverseSequence's gather).
// ReverseSequence itself is one `nn.gather` over the flattened
// (time, batch) axes with an index table computed at import.
//
// Not supported (reported naming the node): `activation_alpha` /
// `activation_beta` (the order ONNX consumes them in is ambiguous), the
// activations `Affine` and `ScaledTanh` (they have no default parameters),
// and a `sequence_lens` that is not a constant at import.
//
//===----------------------------------------------------------------------===//

#include "Decompose.h"

#include "llvm/ADT/StringExtras.h"

#include <cctype>

using namespace mlir;
using namespace pipedream;
using namespace pipedream::onnx_import;
using namespace pipedream::onnx_import::decompose;

/// `x` split along `axis` into `parts` equal pieces (empty on error).
static SmallVector<Value> split(NodeContext &ctx, Value x, int64_t axis,
                                int64_t parts) {
  if (!x)
    return {};
  if (parts == 1)
    return {x};
  int64_t size = typeOf(x).getDimSize(axis) / parts;
  SmallVector<int64_t> sizes(parts, size);
  auto op = ctx.create<nn::SplitOp>(x, ctx.i64(axis), ctx.i64s(sizes));
  if (!op)
    return {};
  return SmallVector<Value>(op.getOutputs().begin(), op.getOutputs().end());
}

static Value concat(NodeContext &ctx, ArrayRef<Value> parts, int64_t axis) {
  if (parts.empty() || llvm::any_of(parts, [](Value v) { return !v; }))
    return nullptr;
  if (parts.size() == 1)
    return parts.front();
  return ctx.createValue<nn::ConcatOp>(ValueRange(parts), ctx.i64(axis));
}

/// Printable text of an attribute string for an error message.
static std::string printable(StringRef s) {
  std::string out;
  for (char c : s.take_front(64))
    out.push_back(std::isprint(static_cast<unsigned char>(c)) ? c : '?');
  return out;
}

//===----------------------------------------------------------------------===//
// ReverseSequence
//===----------------------------------------------------------------------===//

/// Reverses the first `lens[b]` elements along `timeAxis` of every batch
/// element `b` (along `batchAxis`); {timeAxis, batchAxis} = {0, 1}. One
/// `nn.gather` over the flattened leading two axes.
static Value reverseSequence(NodeContext &ctx, Value x, int64_t timeAxis,
                             ArrayRef<int64_t> lens) {
  if (!x)
    return nullptr;
  ArrayRef<int64_t> shape = typeOf(x).getShape();
  int64_t steps = shape[timeAxis], batch = shape[1 - timeAxis];
  std::vector<int64_t> table(size_t(steps * batch));
  for (int64_t t = 0; t < steps; ++t) {
    for (int64_t b = 0; b < batch; ++b) {
      int64_t from = t < lens[b] ? lens[b] - 1 - t : t;
      if (timeAxis == 0)
        table[t * batch + b] = from * batch + b;
      else
        table[b * steps + t] = b * steps + from;
    }
  }
  SmallVector<int64_t> flat{shape[0] * shape[1]};
  flat.append(shape.begin() + 2, shape.end());
  Value rows = reshape(ctx, x, flat);
  Value index = indexTable(ctx, {shape[0] * shape[1]}, std::move(table));
  if (!rows || !index)
    return nullptr;
  Value gathered = ctx.createValue<nn::GatherOp>(rows, index, ctx.i64(0));
  return reshape(ctx, gathered, shape);
}

/// Checks `lens` (one length per batch element, each in [0, steps]).
static bool checkLengths(NodeContext &ctx, ArrayRef<int64_t> lens,
                         int64_t batch, int64_t steps) {
  if (int64_t(lens.size()) != batch) {
    ctx.fail("sequence_lens has " + Twine(lens.size()) +
             " values, but the batch size is " + Twine(batch));
    return false;
  }
  for (int64_t len : lens) {
    if (len < 0 || len > steps) {
      ctx.fail("sequence_lens value " + Twine(len) + " is outside [0, " +
               Twine(steps) + "]");
      return false;
    }
  }
  return true;
}

static void convertReverseSequence(NodeContext &ctx) {
  if (!ctx.requireInputs(2))
    return;
  RankedTensorType type = ctx.inputType(0);
  if (!type)
    return;
  if (type.getRank() < 2) {
    ctx.fail("input must have rank >= 2, got rank " + Twine(type.getRank()));
    return;
  }
  int64_t timeAxis = ctx.intAttr("time_axis", 0);
  int64_t batchAxis = ctx.intAttr("batch_axis", 1);
  if (ctx.failed())
    return;
  if (!((timeAxis == 0 && batchAxis == 1) ||
        (timeAxis == 1 && batchAxis == 0))) {
    ctx.fail("time_axis " + Twine(timeAxis) + " and batch_axis " +
             Twine(batchAxis) + " must be 0 and 1 in some order");
    return;
  }
  auto lens = ctx.constantInts(1, "sequence_lens");
  if (!lens)
    return;
  if (!checkLengths(ctx, *lens, type.getDimSize(batchAxis),
                    type.getDimSize(timeAxis)))
    return;
  if (Value y = reverseSequence(ctx, ctx.operand(0), timeAxis, *lens))
    ctx.setOutput(0, y);
}

//===----------------------------------------------------------------------===//
// RNN, GRU, LSTM
//===----------------------------------------------------------------------===//

namespace {
enum class Cell { RNN, GRU, LSTM };

enum class Act {
  Relu,
  Tanh,
  Sigmoid,
  LeakyRelu,
  ThresholdedRelu,
  HardSigmoid,
  Elu,
  Softsign,
  Softplus
};

/// What a recurrent node computes, resolved from its attributes and inputs.
struct Recurrence {
  Cell cell;
  int64_t gates = 1;
  int64_t directions = 1;
  bool reverse = false; // direction = reverse (with one direction)
  int64_t steps = 0, batch = 0, inputSize = 0, hidden = 0;
  bool batchFirst = false; // layout = 1
  std::optional<double> clip;
  bool linearBeforeReset = false; // GRU
  bool inputForget = false;       // LSTM
  /// Activations per direction: f (RNN); f, g (GRU); f, g, h (LSTM).
  SmallVector<Act, 6> acts;
  /// Per batch element; empty when every sequence has all `steps`.
  SmallVector<int64_t> lens;
};
} // namespace

static std::optional<Act> parseActivation(StringRef name) {
  std::string lower = name.lower();
  return llvm::StringSwitch<std::optional<Act>>(lower)
      .Case("relu", Act::Relu)
      .Case("tanh", Act::Tanh)
      .Case("sigmoid", Act::Sigmoid)
      .Case("leakyrelu", Act::LeakyRelu)
      .Case("thresholdedrelu", Act::ThresholdedRelu)
      .Case("hardsigmoid", Act::HardSigmoid)
      .Case("elu", Act::Elu)
      .Case("softsign", Act::Softsign)
      .Case("softplus", Act::Softplus)
      .Default(std::nullopt);
}

/// `act(x)` with the defaults of the ONNX op of that name.
static Value activate(NodeContext &ctx, Act act, Value x) {
  if (!x)
    return nullptr;
  switch (act) {
  case Act::Relu:
    return ctx.createValue<nn::ReluOp>(x);
  case Act::Tanh:
    return ctx.createValue<nn::TanhOp>(x);
  case Act::Sigmoid:
    return ctx.createValue<nn::SigmoidOp>(x);
  case Act::LeakyRelu:
    return ctx.createValue<nn::LeakyReluOp>(x, ctx.f64(0.01));
  case Act::ThresholdedRelu:
    return ctx.createValue<nn::ThresholdedReluOp>(x, ctx.f64(1.0));
  case Act::HardSigmoid:
    return ctx.createValue<nn::HardSigmoidOp>(x, ctx.f64(0.2), ctx.f64(0.5));
  case Act::Elu:
    return ctx.createValue<nn::EluOp>(x, ctx.f64(1.0));
  case Act::Softsign:
    return ctx.createValue<nn::SoftsignOp>(x);
  case Act::Softplus:
    return ctx.createValue<nn::SoftplusOp>(x);
  }
  return nullptr;
}

/// Checks that input `i` (when given) has shape `want`.
static bool checkShape(NodeContext &ctx, size_t i, StringRef what,
                       ArrayRef<int64_t> want) {
  if (!ctx.hasInput(i))
    return true;
  RankedTensorType type = ctx.inputType(i, what);
  if (!type)
    return false;
  if (type.getShape() != want) {
    ctx.fail("input '" + what + "' has shape " +
             shapeToString(type.getShape()) + ", expected " +
             shapeToString(want));
    return false;
  }
  return true;
}

static std::optional<Recurrence> resolve(NodeContext &ctx, Cell cell) {
  Recurrence r;
  r.cell = cell;
  r.gates = cell == Cell::RNN ? 1 : cell == Cell::GRU ? 3 : 4;
  if (!ctx.requireInputs(3))
    return std::nullopt;
  if (ctx.attr("activation_alpha") || ctx.attr("activation_beta")) {
    ctx.unsupported("activation_alpha / activation_beta (ONNX leaves the "
                    "order they are consumed in ambiguous)");
    return std::nullopt;
  }
  std::string direction = ctx.stringAttr("direction", "forward");
  r.batchFirst = ctx.intAttr("layout", 0) != 0;
  if (ctx.failed())
    return std::nullopt;
  if (direction == "bidirectional")
    r.directions = 2;
  else if (direction == "reverse")
    r.reverse = true;
  else if (direction != "forward") {
    ctx.fail("direction '" + printable(direction) +
             "' is not forward, reverse or bidirectional");
    return std::nullopt;
  }
  if (ctx.attr("clip")) {
    double c = ctx.floatAttr("clip", 0.0);
    if (!(c > 0.0)) {
      ctx.fail("clip must be positive, got " + std::to_string(c));
      return std::nullopt;
    }
    r.clip = c;
  }
  if (cell == Cell::GRU)
    r.linearBeforeReset = ctx.intAttr("linear_before_reset", 0) != 0;
  if (cell == Cell::LSTM)
    r.inputForget = ctx.intAttr("input_forget", 0) != 0;

  // Activations: one list for all directions, forward's first.
  size_t perDirection = cell == Cell::RNN ? 1 : cell == Cell::GRU ? 2 : 3;
  SmallVector<Act, 3> defaults;
  if (cell == Cell::RNN)
    defaults = {Act::Tanh};
  else if (cell == Cell::GRU)
    defaults = {Act::Sigmoid, Act::Tanh};
  else
    defaults = {Act::Sigmoid, Act::Tanh, Act::Tanh};
  if (const onnx::AttributeProto *a = ctx.attr("activations")) {
    if (a->type() != onnx::AttributeProto::STRINGS &&
        a->type() != onnx::AttributeProto::UNDEFINED) {
      ctx.fail("attribute 'activations' must be a list of strings");
      return std::nullopt;
    }
    if (size_t(a->strings_size()) != perDirection * r.directions) {
      ctx.fail("attribute 'activations' has " + Twine(a->strings_size()) +
               " entries, expected " + Twine(perDirection * r.directions));
      return std::nullopt;
    }
    for (const std::string &name : a->strings()) {
      std::optional<Act> act = parseActivation(name);
      if (!act) {
        StringRef lower = name;
        bool parametric = lower.equals_insensitive("affine") ||
                          lower.equals_insensitive("scaledtanh");
        ctx.unsupported("activation '" + printable(name) + "'" +
                        (parametric ? " (it has no default parameters)" : ""));
        return std::nullopt;
      }
      r.acts.push_back(*act);
    }
  } else {
    for (int64_t d = 0; d < r.directions; ++d)
      r.acts.append(defaults.begin(), defaults.end());
  }

  RankedTensorType x = ctx.inputType(0, "X"), w = ctx.inputType(1, "W"),
                   rec = ctx.inputType(2, "R");
  if (!x || !w || !rec)
    return std::nullopt;
  if (x.getRank() != 3 || w.getRank() != 3 || rec.getRank() != 3) {
    ctx.fail("X, W and R must have rank 3, got shapes " +
             shapeToString(x.getShape()) + ", " +
             shapeToString(w.getShape()) + ", " +
             shapeToString(rec.getShape()));
    return std::nullopt;
  }
  if (!llvm::isa<FloatType>(x.getElementType())) {
    ctx.fail("X must be a float tensor");
    return std::nullopt;
  }
  r.steps = x.getDimSize(r.batchFirst ? 1 : 0);
  r.batch = x.getDimSize(r.batchFirst ? 0 : 1);
  r.inputSize = x.getDimSize(2);
  r.hidden = rec.getDimSize(2);
  if (ctx.attr("hidden_size") &&
      ctx.intAttr("hidden_size", r.hidden) != r.hidden) {
    ctx.fail("hidden_size " + Twine(ctx.intAttr("hidden_size", 0)) +
             " does not match R's shape " + shapeToString(rec.getShape()));
    return std::nullopt;
  }
  if (r.steps < 1 || r.batch < 1 || r.hidden < 1) {
    ctx.fail("empty sequence, batch or hidden size (X " +
             shapeToString(x.getShape()) + ", R " +
             shapeToString(rec.getShape()) + ")");
    return std::nullopt;
  }
  int64_t gh = r.gates * r.hidden, d = r.directions;
  SmallVector<int64_t> stateShape =
      r.batchFirst ? SmallVector<int64_t>{r.batch, d, r.hidden}
                   : SmallVector<int64_t>{d, r.batch, r.hidden};
  if (!checkShape(ctx, 1, "W", {d, gh, r.inputSize}) ||
      !checkShape(ctx, 2, "R", {d, gh, r.hidden}) ||
      !checkShape(ctx, 3, "B", {d, 2 * gh}) ||
      !checkShape(ctx, 5, "initial_h", stateShape))
    return std::nullopt;
  if (cell == Cell::LSTM && (!checkShape(ctx, 6, "initial_c", stateShape) ||
                             !checkShape(ctx, 7, "P", {d, 3 * r.hidden})))
    return std::nullopt;
  for (size_t i = 1; i < std::min<size_t>(ctx.numInputs(), 8); ++i) {
    if (i == 4 || !ctx.hasInput(i))
      continue;
    if (ctx.inputType(i).getElementType() != x.getElementType()) {
      ctx.fail("input " + Twine(i) + " has element type other than X's");
      return std::nullopt;
    }
  }
  if (ctx.hasInput(4)) {
    if (!ctx.constantInput(4)) {
      ctx.unsupported("sequence_lens that is not a constant at import "
                      "(pipedream compiles static shapes)");
      return std::nullopt;
    }
    auto lens = ctx.constantInts(4, "sequence_lens");
    if (!lens || !checkLengths(ctx, *lens, r.batch, r.steps))
      return std::nullopt;
    if (llvm::any_of(*lens, [&](int64_t l) { return l != r.steps; }))
      r.lens = *lens;
  }
  return r;
}

namespace {
/// The result of one direction: the hidden state of every step (in time
/// order, already zero past a sequence's end) and the final states.
struct DirectionResult {
  SmallVector<Value> ys;
  Value lastH, lastC;
};
} // namespace

/// Direction `d`'s slice of a `[D, ...]` input `i`, without the direction
/// axis; for the states (`stateLayout`) of layout 1 the axis is 1.
static Value directionSlice(NodeContext &ctx, const Recurrence &r, size_t i,
                            int64_t d, bool stateLayout = false) {
  Value v = ctx.operand(i);
  if (!v)
    return nullptr;
  int64_t axis = stateLayout && r.batchFirst ? 1 : 0;
  Value s = sliceAxis(ctx, v, axis, d, 1);
  if (!s)
    return nullptr;
  SmallVector<int64_t> shape(typeOf(s).getShape());
  shape.erase(shape.begin() + axis);
  return reshape(ctx, s, shape);
}

static DirectionResult runDirection(NodeContext &ctx, const Recurrence &r,
                                    Value x, int64_t d, bool backwards) {
  DirectionResult out;
  Type element = typeOf(x).getElementType();
  int64_t h = r.hidden, gh = r.gates * h, b = r.batch, s = r.steps;
  ArrayRef<Act> acts = ArrayRef<Act>(r.acts).slice(
      d * (r.acts.size() / r.directions), r.acts.size() / r.directions);

  Value w = directionSlice(ctx, r, 1, d);
  Value rw = directionSlice(ctx, r, 2, d);
  Value wb, rb;
  if (ctx.hasInput(3)) {
    Value bias = directionSlice(ctx, r, 3, d);
    wb = sliceAxis(ctx, bias, 0, 0, gh);
    rb = sliceAxis(ctx, bias, 0, gh, gh);
  }
  // The bias added to the input projection: Wb + Rb, except for GRU with
  // linear_before_reset, whose Rb goes with the recurrent product (Rb_h is
  // inside the reset product).
  Value inputBias;
  if (wb) {
    if (r.cell == Cell::GRU && r.linearBeforeReset)
      inputBias = wb;
    else
      inputBias = binary<nn::AddOp>(ctx, wb, rb);
  }
  // A reverse direction with lengths: reverse each sequence in its length
  // and run forwards; the outputs are reversed back by the caller.
  bool reversedInput = backwards && !r.lens.empty();
  Value xs = reversedInput ? reverseSequence(ctx, x, 0, r.lens) : x;
  Value projected = ctx.createValue<nn::GemmOp>(
      reshape(ctx, xs, {s * b, r.inputSize}), w, inputBias, ctx.f64(1.0),
      ctx.f64(1.0), ctx.boolean(false), ctx.boolean(true));
  SmallVector<Value> perStep = split(ctx, projected, 0, s);
  if (ctx.failed() || int64_t(perStep.size()) != s)
    return out;

  Value hState = ctx.hasInput(5) ? directionSlice(ctx, r, 5, d, true)
                                 : constant(ctx, element, {b, h},
                                            std::vector<double>(b * h, 0.0));
  Value cState;
  if (r.cell == Cell::LSTM)
    cState = ctx.hasInput(6) ? directionSlice(ctx, r, 6, d, true)
                             : constant(ctx, element, {b, h},
                                        std::vector<double>(b * h, 0.0));
  SmallVector<Value, 3> peep;
  if (r.cell == Cell::LSTM && ctx.hasInput(7))
    peep = split(ctx, directionSlice(ctx, r, 7, d), 0, 3); // i, o, f
  // GRU: R split into z/r and h rows (without linear_before_reset).
  Value rzr, rh;
  if (r.cell == Cell::GRU && !r.linearBeforeReset) {
    rzr = sliceAxis(ctx, rw, 0, 0, 2 * h);
    rh = sliceAxis(ctx, rw, 0, 2 * h, h);
  }
  Value one = scalar(ctx, element, 1.0);
  auto clipped = [&](Value v) -> Value {
    if (!v || !r.clip)
      return v;
    return ctx.createValue<nn::ClipOp>(v, ctx.f64(-*r.clip),
                                       ctx.f64(*r.clip));
  };
  auto matmulT = [&](Value a, Value m, Value c) -> Value {
    if (!a || !m)
      return nullptr;
    return ctx.createValue<nn::GemmOp>(a, m, c, ctx.f64(1.0), ctx.f64(1.0),
                                       ctx.boolean(false), ctx.boolean(true));
  };

  out.ys.assign(s, Value());
  for (int64_t k = 0; k < s && !ctx.failed(); ++k) {
    // Step k reads time t (backwards without lengths walks t down).
    int64_t t = backwards && !reversedInput ? s - 1 - k : k;
    Value xw = perStep[t];
    Value newH, newC;
    switch (r.cell) {
    case Cell::RNN:
      newH = activate(ctx, acts[0], clipped(matmulT(hState, rw, xw)));
      break;
    case Cell::GRU: {
      SmallVector<Value> xg = split(ctx, xw, 1, 3);
      if (xg.size() != 3)
        return out;
      Value z, rt, cand;
      if (r.linearBeforeReset) {
        SmallVector<Value> hg = split(ctx, matmulT(hState, rw, rb), 1, 3);
        if (hg.size() != 3)
          return out;
        z = activate(ctx, acts[0],
                     clipped(binary<nn::AddOp>(ctx, xg[0], hg[0])));
        rt = activate(ctx, acts[0],
                      clipped(binary<nn::AddOp>(ctx, xg[1], hg[1])));
        cand = binary<nn::AddOp>(ctx, xg[2],
                                 binary<nn::MulOp>(ctx, rt, hg[2]));
      } else {
        SmallVector<Value> zr = split(
            ctx, matmulT(hState, rzr, concat(ctx, {xg[0], xg[1]}, 1)), 1, 2);
        if (zr.size() != 2)
          return out;
        z = activate(ctx, acts[0], clipped(zr[0]));
        rt = activate(ctx, acts[0], clipped(zr[1]));
        cand = matmulT(binary<nn::MulOp>(ctx, rt, hState), rh, xg[2]);
      }
      Value hTilde = activate(ctx, acts[1], clipped(cand));
      // (1 - z) * h~ + z * H = h~ + z * (H - h~)
      newH = binary<nn::AddOp>(
          ctx, hTilde,
          binary<nn::MulOp>(ctx, z,
                            binary<nn::SubOp>(ctx, hState, hTilde)));
      break;
    }
    case Cell::LSTM: {
      SmallVector<Value> g = split(ctx, matmulT(hState, rw, xw), 1, 4);
      if (g.size() != 4)
        return out;
      Value iPre = g[0], oPre = g[1], fPre = g[2], cPre = g[3];
      if (!peep.empty()) {
        iPre = binary<nn::AddOp>(ctx, iPre,
                                 binary<nn::MulOp>(ctx, peep[0], cState));
        fPre = binary<nn::AddOp>(ctx, fPre,
                                 binary<nn::MulOp>(ctx, peep[2], cState));
      }
      Value i = activate(ctx, acts[0], clipped(iPre));
      Value f = r.inputForget ? binary<nn::SubOp>(ctx, one, i)
                              : activate(ctx, acts[0], clipped(fPre));
      Value c = activate(ctx, acts[1], clipped(cPre));
      newC = binary<nn::AddOp>(ctx, binary<nn::MulOp>(ctx, f, cState),
                               binary<nn::MulOp>(ctx, i, c));
      if (!peep.empty())
        oPre = binary<nn::AddOp>(ctx, oPre,
                                 binary<nn::MulOp>(ctx, peep[1], newC));
      Value o = activate(ctx, acts[0], clipped(oPre));
      newH = binary<nn::MulOp>(ctx, o, activate(ctx, acts[2], newC));
      break;
    }
    }
    if (!newH || (r.cell == Cell::LSTM && !newC))
      return out;
    // Past a sequence's end: the state is carried, the output is zero.
    bool masked = !r.lens.empty() &&
                  llvm::any_of(r.lens, [&](int64_t l) { return k >= l; });
    if (masked) {
      std::vector<double> m(b), keep(b);
      for (int64_t i = 0; i < b; ++i) {
        m[i] = k < r.lens[i] ? 1.0 : 0.0;
        keep[i] = 1.0 - m[i];
      }
      Value mask = constant(ctx, element, {b, 1}, m);
      Value hold = constant(ctx, element, {b, 1}, keep);
      Value y = binary<nn::MulOp>(ctx, mask, newH);
      out.ys[t] = y;
      hState = binary<nn::AddOp>(ctx, y, binary<nn::MulOp>(ctx, hold, hState));
      if (newC)
        cState = binary<nn::AddOp>(ctx, binary<nn::MulOp>(ctx, mask, newC),
                                   binary<nn::MulOp>(ctx, hold, cState));
    } else {
      out.ys[t] = newH;
      hState = newH;
      cState = newC;
    }
  }
  if (reversedInput) {
    // Back to time order: steps were taken on the reversed sequences.
    SmallVector<Value> rows;
    for (Value y : out.ys)
      rows.push_back(reshape(ctx, y, {1, b, h}));
    SmallVector<Value> back =
        split(ctx, reverseSequence(ctx, concat(ctx, rows, 0), 0, r.lens), 0, s);
    if (int64_t(back.size()) != s)
      return out;
    for (int64_t t = 0; t < s; ++t)
      out.ys[t] = reshape(ctx, back[t], {b, h});
  }
  out.lastH = hState;
  out.lastC = cState;
  return out;
}

template <Cell C>
static void convertRecurrent(NodeContext &ctx) {
  std::optional<Recurrence> r = resolve(ctx, C);
  if (!r)
    return;
  Value x = ctx.operand(0);
  if (!x)
    return;
  if (r->batchFirst)
    x = transpose(ctx, x, {1, 0, 2});
  int64_t b = r->batch, h = r->hidden, s = r->steps, dirs = r->directions;
  SmallVector<DirectionResult, 2> results;
  for (int64_t d = 0; d < dirs; ++d) {
    results.push_back(runDirection(ctx, *r, x, d, r->reverse || d == 1));
    if (ctx.failed() || !results.back().lastH)
      return;
  }
  // Y: [S, D, B, H] (layout 1: [B, S, D, H]).
  if (ctx.outputUsed(0)) {
    SmallVector<Value> rows;
    for (int64_t t = 0; t < s; ++t)
      for (int64_t d = 0; d < dirs; ++d)
        rows.push_back(reshape(ctx, results[d].ys[t], {1, 1, b, h}));
    Value y = reshape(ctx, concat(ctx, rows, 0), {s, dirs, b, h});
    if (r->batchFirst)
      y = transpose(ctx, y, {2, 0, 1, 3});
    if (!y)
      return;
    ctx.setOutput(0, y);
  }
  // Y_h, Y_c: [D, B, H] (layout 1: [B, D, H]).
  auto states = [&](bool cell) -> Value {
    SmallVector<Value> rows;
    for (const DirectionResult &res : results)
      rows.push_back(reshape(ctx, cell ? res.lastC : res.lastH, {1, b, h}));
    Value v = concat(ctx, rows, 0);
    return r->batchFirst ? transpose(ctx, v, {1, 0, 2}) : v;
  };
  if (ctx.numOutputs() > 1 && ctx.outputUsed(1)) {
    if (Value v = states(false))
      ctx.setOutput(1, v);
    else
      return;
  }
  if (C == Cell::LSTM && ctx.numOutputs() > 2 && ctx.outputUsed(2)) {
    if (Value v = states(true))
      ctx.setOutput(2, v);
  }
}

void onnx_import::registerRecurrentOps(OpTable &table) {
  // Schema versions from ONNX's Changelog.md; opset 7 is the current form
  // (14 added `layout`, 22 bfloat16). Older forms had `output_sequence`.
  table["RNN"] = {convertRecurrent<Cell::RNN>, {1, 7, 14, 22}, 7};
  table["GRU"] = {convertRecurrent<Cell::GRU>, {1, 3, 7, 14, 22}, 7};
  table["LSTM"] = {convertRecurrent<Cell::LSTM>, {1, 7, 14, 22}, 7};
  table["ReverseSequence"] = {convertReverseSequence, {10}};
}
