//===- Trainable.cpp - which weights are parameters -----------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// See Trainable.h. The structural part of the rule is one backward walk
// from the trained result: a value "reaches the loss" when an op with a
// float result that reaches it reads the value at a parameter operand
// (differentiable by the op's derivative rule, and not `nn.pow`'s
// exponent). Integer, bool and comparison results stop the walk (no
// gradient flows through them), so a float mask compared with `nn.equal`
// before a `nn.where`, a table only read through an integer cast, or a
// running statistic never reach it.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Dialect/NN/Transforms/Trainable.h"

#include "pipedream/Dialect/NN/IR/NNDialect.h"
#include "pipedream/Dialect/NN/IR/NNInterfaces.h"
#include "pipedream/Dialect/NN/IR/NNOps.h"
#include "pipedream/Dialect/NN/Transforms/Autodiff.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Regex.h"

#include <algorithm>
#include <cmath>
#include <cstring>

using namespace mlir;

namespace pipedream::nn {

namespace {
using Names = NNDialect;

/// Whether the initial value `value` of a float weight holds an infinity, a
/// NaN, or a finite value of at least half the element type's largest
/// magnitude: an additive attention mask (`finfo.min` where masked, as
/// torch's dynamo exporter leaves it in an initializer), never a parameter
/// (a step on it would overflow; PyTorch keeps it as a constant).
bool holdsMaskValues(Attribute value, FloatType elementType) {
  const llvm::fltSemantics &semantics = elementType.getFloatSemantics();
  llvm::APFloat limit = llvm::APFloat::getLargest(semantics);
  bool losesInfo = false;
  double half = limit.convertToDouble() / 2;
  auto isMask = [&](const llvm::APFloat &v) {
    if (!v.isFinite())
      return true;
    llvm::APFloat d = v;
    d.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven,
              &losesInfo);
    return std::abs(d.convertToDouble()) >= half;
  };
  if (auto dense = dyn_cast<DenseFPElementsAttr>(value))
    return llvm::any_of(dense.getValues<llvm::APFloat>(), isMask);
  auto resource = dyn_cast<DenseResourceElementsAttr>(value);
  if (!resource)
    return false;
  AsmResourceBlob *blob = resource.getRawHandle().getBlob();
  if (!blob)
    return false;
  ArrayRef<char> bytes = blob->getData();
  unsigned bits = elementType.getWidth();
  if (bits % 8 != 0)
    return false;
  size_t width = bits / 8;
  // IEEE binary formats order their magnitudes as their bit patterns (sign
  // cleared), with infinities and NaNs above every finite value, and half
  // of the largest finite value is exact in them (one exponent lower): a
  // mask value is a pattern at or above that of `half`. One integer compare
  // per element (a weight table of a billion parameters is scanned in
  // about a second; APFloat per element took minutes).
  auto scan = [&](auto zero) {
    using Raw = decltype(zero);
    llvm::APFloat halfValue = limit;
    halfValue.divide(llvm::APFloat(semantics, 2), llvm::APFloat::rmTowardZero);
    Raw threshold =
        static_cast<Raw>(halfValue.bitcastToAPInt().getZExtValue());
    Raw magnitude = static_cast<Raw>(~(Raw(1) << (bits - 1)));
    size_t count = bytes.size() / sizeof(Raw);
    const char *data = bytes.data();
    // Blocks with an OR-reduced flag, so the inner loop vectorizes.
    constexpr size_t kBlock = 4096;
    for (size_t at = 0; at < count; at += kBlock) {
      size_t end = std::min(count, at + kBlock);
      bool found = false;
      for (size_t i = at; i < end; ++i) {
        Raw raw;
        std::memcpy(&raw, data + i * sizeof(Raw), sizeof(Raw));
        found |= (raw & magnitude) >= threshold;
      }
      if (found)
        return true;
    }
    return false;
  };
  if (&semantics == &llvm::APFloat::IEEEsingle())
    return scan(uint32_t());
  if (&semantics == &llvm::APFloat::IEEEdouble())
    return scan(uint64_t());
  if (&semantics == &llvm::APFloat::IEEEhalf() ||
      &semantics == &llvm::APFloat::BFloat())
    return scan(uint16_t());
  for (size_t at = 0; at + width <= bytes.size(); at += width) {
    uint64_t raw = 0;
    std::memcpy(&raw, bytes.data() + at, width); // little-endian host
    if (isMask(llvm::APFloat(semantics, llvm::APInt(bits, raw))))
      return true;
  }
  return false;
}

bool isFloatTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && isa<FloatType>(tensor.getElementType());
}

std::string argName(func::FuncOp func, unsigned index) {
  if (auto name =
          func.getArgAttrOfType<StringAttr>(index, Names::kNameAttrName))
    return name.getValue().str();
  return "arg" + std::to_string(index);
}

/// Values of `body` from which the trained result can be changed through
/// parameter operands (see the file comment).
DenseSet<Value> valuesReachingLoss(Block &body, Value trained) {
  DenseSet<Value> reaches;
  reaches.insert(trained);
  for (Operation &op : llvm::reverse(body.without_terminator())) {
    bool live = llvm::any_of(op.getResults(), [&](Value r) {
      return isFloatTensor(r.getType()) && reaches.contains(r);
    });
    if (!live)
      continue;
    auto rule = dyn_cast<GradientOpInterface>(&op);
    for (OpOperand &operand : op.getOpOperands()) {
      unsigned index = operand.getOperandNumber();
      if (!isFloatTensor(operand.get().getType()))
        continue;
      // An op without a rule: nn-autodiff reports it if the path matters.
      if (rule && !rule.isDifferentiableOperand(index))
        continue;
      // NOTE: x^e is differentiable in e (x^e ln x), but an exponent is a
      // hyper-parameter (torch: `x.pow(2)`), and its gradient is NaN for
      // any x < 0: it is never a parameter unless --train names it.
      if (isa<PowOp>(op) && index == 1)
        continue;
      reaches.insert(operand.get());
    }
  }
  return reaches;
}

/// `nn.origin` of argument `index` (empty `kind` when there is none).
struct Origin {
  StringRef kind;
  SmallVector<StringRef> sources;
};
Origin originOf(func::FuncOp func, unsigned index) {
  Origin origin;
  auto dict =
      func.getArgAttrOfType<DictionaryAttr>(index, Names::kOriginAttrName);
  if (!dict)
    return origin;
  if (auto kind = dict.getAs<StringAttr>("kind"))
    origin.kind = kind.getValue();
  if (auto sources = dict.getAs<ArrayAttr>("sources"))
    for (auto s : sources.getAsRange<StringAttr>())
      origin.sources.push_back(s.getValue());
  return origin;
}

/// The decision the exporter's record makes (TorchProvenance.h): torch
/// knows which tensors are nn.Parameters, so its word beats the structural
/// guesses (a learnable scalar is trained; an all-zero mask is not).
void decideByOrigin(WeightDecision &d, const Origin &origin, bool reaches) {
  using Kind = WeightDecision::Kind;
  auto list = [&] {
    std::string text;
    for (StringRef s : origin.sources)
      text += (text.empty() ? "'" : ", '") + s.str() + "'";
    return text;
  };
  if (origin.kind == "buffer") {
    d.kind = Kind::Frozen;
    d.reason = "torch buffer (export signature)";
    return;
  }
  if (origin.kind == "constant") {
    d.kind = Kind::Frozen;
    d.reason = origin.sources.empty()
                   ? "constant made by the exporter (not a torch parameter)"
                   : "constant folded by the exporter from torch buffer(s) " +
                         list();
    return;
  }
  if (!reaches) {
    d.kind = Kind::Frozen;
    d.reason = "no differentiable path to the loss";
    return;
  }
  d.kind = Kind::Trainable;
  if (origin.kind == "parameter") {
    d.reason = "torch parameter";
    return;
  }
  if (origin.kind == "folded") {
    d.reason = "folded by the exporter from torch parameter " + list();
    return;
  }
  d.reason = "computed by the exporter from torch parameter(s) " + list() +
             " and other values";
  d.warning = "weight '" + d.name + "' was computed at export from torch "
              "parameter(s) " + list() + " and other values (onnxscript's "
              "constant folding): training it updates the folded value, "
              "which is not the same as training the parameter unless the "
              "fold was a reshape; export with torch.onnx.export(..., "
              "optimize=False), or --freeze it";
}

/// One --freeze/--train entry, compiled.
struct Pattern {
  std::string text;
  std::optional<llvm::Regex> regex;
  bool matched = false;
  bool matches(StringRef name) const {
    if (name == text)
      return true;
    return regex && regex->match(name);
  }
};

/// Splits comma-separated entries and compiles each as an anchored regex
/// (left empty when the text is not a valid one: it can still be a name).
SmallVector<Pattern> compilePatterns(ArrayRef<std::string> entries) {
  SmallVector<Pattern> patterns;
  for (const std::string &entry : entries) {
    SmallVector<StringRef> parts;
    StringRef(entry).split(parts, ',', -1, /*KeepEmpty=*/false);
    for (StringRef part : parts) {
      part = part.trim();
      if (part.empty())
        continue;
      Pattern p;
      p.text = part.str();
      llvm::Regex regex(("^(" + part + ")$").str(), llvm::Regex::NoFlags);
      std::string why;
      if (regex.isValid(why))
        p.regex.emplace(std::move(regex));
      patterns.push_back(std::move(p));
    }
  }
  return patterns;
}

} // namespace

bool isRunningStatistic(BlockArgument arg) {
  if (arg.use_empty())
    return false;
  for (OpOperand &use : arg.getUses()) {
    auto bn = dyn_cast<BatchNormalizationOp>(use.getOwner());
    if (!bn || (use.get() != bn.getMean() && use.get() != bn.getVar()))
      return false;
  }
  return true;
}

FailureOr<SmallVector<WeightDecision>>
classifyWeights(func::FuncOp func, const TrainableOptions &options,
                ArrayRef<std::string> constantInitializers) {
  if (func.isDeclaration() || !func.getBody().hasOneBlock())
    return func.emitError("trainable weights: function '")
           << func.getSymName() << "' must have a body of one block";
  Block &body = func.front();
  auto ret = dyn_cast<func::ReturnOp>(body.getTerminator());
  if (!ret || options.trainedResult >= ret.getNumOperands())
    return func.emitError("trainable weights: function '")
           << func.getSymName() << "' has no result "
           << options.trainedResult << " to train";
  DenseSet<Value> reaches =
      valuesReachingLoss(body, ret.getOperand(options.trainedResult));

  SmallVector<Pattern> freezePatterns = compilePatterns(options.freeze);
  SmallVector<Pattern> trainPatterns = compilePatterns(options.train);
  SmallVector<Pattern> *freeze = &freezePatterns, *train = &trainPatterns;
  auto matchAny = [](SmallVector<Pattern> &patterns, StringRef name,
                     bool exactOnly = false) -> Pattern * {
    Pattern *found = nullptr;
    for (Pattern &p : patterns)
      if (exactOnly ? name == p.text : p.matches(name)) {
        p.matched = true;
        found = found ? found : &p;
      }
    return found;
  };

  SmallVector<WeightDecision> decisions;
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
    if (!isParamArgument(func, i))
      continue;
    BlockArgument arg = func.getArgument(i);
    WeightDecision d;
    d.name = argName(func, i);
    auto type = cast<ShapedType>(arg.getType());
    d.numElements = type.hasStaticShape() ? type.getNumElements() : 0;
    auto decide = [&](WeightDecision::Kind kind, StringRef reason) {
      d.kind = kind;
      d.reason = reason.str();
    };
    using Kind = WeightDecision::Kind;
    if (!isFloatTensor(arg.getType())) {
      if (matchAny(*train, d.name, /*exactOnly=*/true))
        return func.emitError("--train '")
               << d.name << "': the weight has element type "
               << type.getElementType() << "; only float weights can be "
               << "trained";
      matchAny(*freeze, d.name);
      decide(Kind::Frozen, "integer");
    } else if (isRunningStatistic(arg)) {
      // Updated by the step in training mode; regexes skip statistics.
      if (matchAny(*train, d.name, /*exactOnly=*/true) ||
          matchAny(*freeze, d.name, /*exactOnly=*/true))
        return func.emitError("weight '")
               << d.name
               << "' is a BatchNormalization running statistic (updated "
                  "by the step, never trained): --train/--freeze do not "
                  "apply to it";
      decide(Kind::Statistic, "running statistic");
    } else if (arg.use_empty()) {
      matchAny(*train, d.name);
      matchAny(*freeze, d.name);
      decide(Kind::Frozen, "unused");
    } else {
      Pattern *byFreeze = matchAny(*freeze, d.name);
      Pattern *byTrain = matchAny(*train, d.name);
      if (byFreeze && byTrain)
        return func.emitError("weight '")
               << d.name << "' is matched by both --freeze '"
               << byFreeze->text << "' and --train '" << byTrain->text << "'";
      if (byFreeze)
        decide(Kind::Frozen, "--freeze");
      else if (byTrain)
        decide(Kind::Trainable, "--train");
      else if (func.getArgAttr(i, Names::kFrozenAttrName))
        decide(Kind::Frozen, "nn.frozen");
      else if (func.getArgAttr(i, Names::kNoGradAttrName))
        decide(Kind::Frozen, "nn.no_grad");
      else if (Origin origin = originOf(func, i); !origin.kind.empty())
        decideByOrigin(d, origin, reaches.contains(arg));
      else if (type.getRank() == 0)
        decide(Kind::Frozen, "scalar constant");
      else if (!reaches.contains(arg))
        decide(Kind::Frozen, "no differentiable path to the loss");
      else if (Attribute init = func.getArgAttr(i, Names::kParamAttrName);
               init && holdsMaskValues(init, cast<FloatType>(
                                                 type.getElementType())))
        decide(Kind::Frozen, "mask (infinite or extreme values)");
      else
        decide(Kind::Trainable, "parameter");
    }
    decisions.push_back(std::move(d));
  }

  // One torch parameter folded into two trainable weights (the head's
  // transposed copy of a tied embedding) would be trained twice, untied.
  llvm::StringMap<std::string> holderOf;
  for (unsigned i = 0, e = func.getNumArguments(), next = 0; i < e; ++i) {
    if (!isParamArgument(func, i))
      continue;
    const WeightDecision &d = decisions[next++];
    Origin origin = originOf(func, i);
    if (d.kind != WeightDecision::Kind::Trainable || origin.kind.empty() ||
        origin.kind == "derived")
      continue;
    for (StringRef source : origin.sources) {
      auto [it, inserted] = holderOf.try_emplace(source, d.name);
      if (!inserted)
        return func.emitError("weights '")
               << it->second << "' and '" << d.name
               << "' are both torch parameter '" << source
               << "' (the exporter folded a copy of it): training them "
                  "separately unties the parameter; export with "
                  "torch.onnx.export(..., optimize=False), or --freeze one";
    }
  }

  llvm::StringSet<> constants;
  for (const std::string &name : constantInitializers)
    constants.insert(name);
  for (Pattern &p : *train) {
    if (p.matched)
      continue;
    if (!p.regex && !constants.contains(p.text))
      return func.emitError("--train '")
             << p.text << "': no weight has this name and it is not a valid "
                          "regular expression";
    if (constants.contains(p.text))
      return func.emitError("--train '")
             << p.text
             << "': the initializer is a constant (an integer or bool "
                "tensor, or a float one an op reads at import time, such as "
                "a Clip bound); it cannot be trained";
    return func.emitError("--train '")
           << p.text << "' matches no weight of the model";
  }
  for (Pattern &p : *freeze) {
    if (p.matched || constants.contains(p.text))
      continue;
    if (!p.regex)
      return func.emitError("--freeze '")
             << p.text << "': no weight has this name and it is not a valid "
                          "regular expression";
    return func.emitError("--freeze '")
             << p.text << "' matches no weight of the model";
  }
  return decisions;
}

FailureOr<SmallVector<WeightDecision>>
markFrozenWeights(func::FuncOp func, const TrainableOptions &options,
                  ArrayRef<std::string> constantInitializers) {
  FailureOr<SmallVector<WeightDecision>> decisions =
      classifyWeights(func, options, constantInitializers);
  if (failed(decisions))
    return failure();
  UnitAttr unit = UnitAttr::get(func.getContext());
  unsigned next = 0;
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
    if (!isParamArgument(func, i))
      continue;
    const WeightDecision &d = (*decisions)[next++];
    switch (d.kind) {
    case WeightDecision::Kind::Frozen:
      func.setArgAttr(i, Names::kFrozenAttrName, unit);
      break;
    case WeightDecision::Kind::Trainable:
      func.removeArgAttr(i, Names::kFrozenAttrName);
      func.removeArgAttr(i, Names::kNoGradAttrName);
      break;
    case WeightDecision::Kind::Statistic:
      break;
    }
  }
  return decisions;
}

llvm::json::Object weightDecisionsJSON(ArrayRef<WeightDecision> decisions) {
  llvm::json::Array trainable, frozen, statistics;
  int64_t trainableElements = 0, frozenElements = 0;
  for (const WeightDecision &d : decisions) {
    switch (d.kind) {
    case WeightDecision::Kind::Trainable:
      trainable.push_back(d.name);
      trainableElements += d.numElements;
      break;
    case WeightDecision::Kind::Frozen:
      frozen.push_back(llvm::json::Object{{"name", d.name},
                                          {"reason", d.reason}});
      frozenElements += d.numElements;
      break;
    case WeightDecision::Kind::Statistic:
      statistics.push_back(d.name);
      break;
    }
  }
  size_t numTrainable = trainable.size(), numFrozen = frozen.size(),
         numStatistics = statistics.size();
  return llvm::json::Object{
      {"trainable", llvm::json::Object{{"count", int64_t(numTrainable)},
                                       {"elements", trainableElements},
                                       {"names", std::move(trainable)}}},
      {"frozen", llvm::json::Object{{"count", int64_t(numFrozen)},
                                    {"elements", frozenElements},
                                    {"names", std::move(frozen)}}},
      {"running_statistics",
       llvm::json::Object{{"count", int64_t(numStatistics)},
                          {"names", std::move(statistics)}}}};
}

void printWeightDecisions(ArrayRef<WeightDecision> decisions,
                          llvm::raw_ostream &os) {
  int64_t trainable = 0, frozen = 0, statistics = 0, trainableElements = 0,
          frozenElements = 0;
  for (const WeightDecision &d : decisions) {
    if (d.kind == WeightDecision::Kind::Trainable) {
      ++trainable;
      trainableElements += d.numElements;
    } else if (d.kind == WeightDecision::Kind::Frozen) {
      ++frozen;
      frozenElements += d.numElements;
    } else {
      ++statistics;
    }
  }
  os << llvm::formatv("trainable: {0} tensors, {1} elements\n", trainable,
                      trainableElements);
  for (const WeightDecision &d : decisions)
    if (d.kind == WeightDecision::Kind::Trainable)
      os << llvm::formatv("  {0,-32} {1}\n", d.name, d.reason);
  os << llvm::formatv("frozen:    {0} tensors, {1} elements\n", frozen,
                      frozenElements);
  for (const WeightDecision &d : decisions)
    if (d.kind == WeightDecision::Kind::Frozen)
      os << llvm::formatv("  {0,-32} {1}\n", d.name, d.reason);
  if (statistics) {
    os << llvm::formatv("running statistics: {0} tensors\n", statistics);
    for (const WeightDecision &d : decisions)
      if (d.kind == WeightDecision::Kind::Statistic)
        os << llvm::formatv("  {0}\n", d.name);
  }
}

} // namespace pipedream::nn
