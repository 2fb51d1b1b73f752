//===- BuildTraining.cpp - nn-build-training: loss, accumulation, update --===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The nn-build-training pass and buildTrainingFunctions (Training.h), the
// library pipedream-compile calls. The functions are built in three steps:
//
// 1. `@__pipedream_loss(args..., labels, [rng_seed]) -> (loss, running
//    stats'...)`: the inference body in training mode plus the loss, made
//    of ordinary nn ops (so the derivative rules of those ops give its
//    gradient): cross-entropy is
//    `-mean(sum(one_hot(labels) * log_softmax(prediction), -1))`, mse is
//    `mean((prediction - target)^2)`, as torch.nn.functional with mean
//    reduction.
// 2. Its joint function with respect to the trainable weights, only the
//    loss differentiated (running statistics are not).
// 3. `@train_microbatch`: the joint body with `d_loss = 1/M`, the gradients
//    added to the accumulators (for M = 1 written instead: nothing to add
//    to, so the runtime need not zero them); `@update`: torch.optim's
//    update rule written with nn ops on rank-0 hyper-parameter constants.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Dialect/NN/Transforms/Training.h"
#include "pipedream/Dialect/NN/Transforms/Passes.h"

#include "pipedream/Dialect/NN/IR/NNDialect.h"
#include "pipedream/Dialect/NN/IR/NNOps.h"
#include "pipedream/Dialect/NN/Transforms/Autodiff.h"
#include "pipedream/Dialect/NN/Transforms/Trainable.h"
#include "pipedream/Support/EnumNames.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>

using namespace mlir;

namespace pipedream::nn {

/// The loss and optimizer kinds' names, parsed and printed from one table
/// each.
constexpr EnumName<LossKind> kLossKindNames[] = {
    {"cross-entropy", LossKind::CrossEntropy},
    {"mse", LossKind::MSE},
    {"none", LossKind::None}};
constexpr EnumName<OptimizerKind> kOptimizerKindNames[] = {
    {"sgd", OptimizerKind::SGD},
    {"momentum", OptimizerKind::Momentum},
    {"adam", OptimizerKind::Adam},
    {"adamw", OptimizerKind::AdamW}};
constexpr EnumName<LRScheduleKind> kLRScheduleKindNames[] = {
    {"constant", LRScheduleKind::Constant},
    {"linear", LRScheduleKind::Linear},
    {"cosine", LRScheduleKind::Cosine}};

std::optional<LossKind> parseLossKind(StringRef text) {
  return parseEnumName(kLossKindNames, text);
}

StringRef stringifyLossKind(LossKind kind) {
  return stringifyKnownEnumName(kLossKindNames, kind);
}

std::optional<OptimizerKind> parseOptimizerKind(StringRef text) {
  return parseEnumName(kOptimizerKindNames, text);
}

StringRef stringifyOptimizerKind(OptimizerKind kind) {
  return stringifyKnownEnumName(kOptimizerKindNames, kind);
}

std::optional<LRScheduleKind> parseLRScheduleKind(StringRef text) {
  return parseEnumName(kLRScheduleKindNames, text);
}

StringRef stringifyLRScheduleKind(LRScheduleKind kind) {
  return stringifyKnownEnumName(kLRScheduleKindNames, kind);
}

LogicalResult parseLRSchedule(Operation *anchor, StringRef pass, StringRef kind,
                              int64_t warmupSteps, int64_t totalSteps,
                              OptimizerOptions &opt) {
  std::optional<LRScheduleKind> parsed = parseLRScheduleKind(kind);
  if (!parsed)
    return anchor->emitError() << pass << ": unknown lr-schedule '" << kind
                               << "' (expected constant, linear or cosine)";
  if (warmupSteps < 0 || totalSteps < 0)
    return anchor->emitError()
           << pass << ": warmup-steps and total-steps must be at least 0";
  if (*parsed != LRScheduleKind::Constant && totalSteps <= warmupSteps)
    return anchor->emitError()
           << pass << ": lr-schedule " << kind
           << " needs total-steps greater than warmup-steps (got " << totalSteps
           << " and " << warmupSteps << ")";
  opt.lrSchedule = *parsed;
  opt.warmupSteps = warmupSteps;
  opt.totalSteps = totalSteps;
  return success();
}

LogicalResult parseClipGradNorm(Operation *anchor, StringRef pass,
                                double maxNorm, OptimizerOptions &opt) {
  if (!(maxNorm >= 0) || std::isinf(maxNorm)) {
    std::string text;
    llvm::raw_string_ostream(text) << llvm::format("%g", maxNorm);
    return anchor->emitError()
           << pass << ": clip-grad-norm must be a positive number (0: no "
           << "clipping), got " << text;
  }
  opt.clipGradNorm = maxNorm;
  return success();
}

namespace {

using Names = NNDialect;

constexpr StringLiteral kLossFunction = "__pipedream_loss";
constexpr StringLiteral kJointFunction = "__pipedream_joint";
constexpr StringLiteral kStepFunction = "train_microbatch";
constexpr StringLiteral kUpdateFunction = "update";
constexpr StringLiteral kSeedName = "rng_seed";

Value scalarConstant(OpBuilder &b, Location loc, Type elementType,
                     double value) {
  auto type = RankedTensorType::get({}, elementType);
  Attribute element = isa<FloatType>(elementType)
                          ? Attribute(b.getFloatAttr(elementType, value))
                          : Attribute(b.getIntegerAttr(
                                elementType, static_cast<int64_t>(value)));
  return ConstantOp::create(b, loc, DenseElementsAttr::get(type, element));
}

std::string argName(func::FuncOp func, unsigned index) {
  if (auto name = func.getArgAttrOfType<StringAttr>(index,
                                                    Names::kNameAttrName))
    return name.getValue().str();
  return "arg" + std::to_string(index);
}


} // namespace

void cloneInTrainingMode(OpBuilder &b, Block &body, IRMapping &mapping,
                         Value seed,
                         SmallVectorImpl<std::pair<Value, Value>> &statUpdates,
                         int64_t firstDropout) {
  int64_t dropoutIndex = firstDropout;
  // Per training-mode dropout (its result), the mask it drew.
  DenseMap<Value, Value> drawnMasks;
  for (Operation &op : body.without_terminator()) {
    if (auto maskOp = dyn_cast<DropoutMaskOp>(op)) {
      if (Value drawn = drawnMasks.lookup(maskOp.getInput())) {
        Location l = maskOp.getLoc();
        mapping.map(maskOp.getResult(),
                    CastOp::create(b, l, drawn, TypeAttr::get(b.getI1Type())));
        continue;
      }
    }
    if (auto bn = dyn_cast<BatchNormalizationOp>(op)) {
      auto train = BatchNormTrainOp::create(
          b, bn.getLoc(), mapping.lookup(bn.getInput()),
          mapping.lookup(bn.getScale()), mapping.lookup(bn.getBias()),
          mapping.lookup(bn.getMean()), mapping.lookup(bn.getVar()),
          bn.getEpsilonAttr(), bn.getMomentumAttr());
      mapping.map(bn.getResult(), train.getResult(0));
      statUpdates.push_back({bn.getMean(), train.getResult(1)});
      statUpdates.push_back({bn.getVar(), train.getResult(2)});
      continue;
    }
    if (auto dropout = dyn_cast<DropoutOp>(op);
        dropout && dropout.getRatio().convertToDouble() > 0 && seed) {
      double ratio = dropout.getRatio().convertToDouble();
      Location l = dropout.getLoc();
      auto type = cast<RankedTensorType>(dropout.getType());
      Type seedElement = getElementTypeOrSelf(seed.getType());
      // Each dropout op draws from its own stream of the seed.
      Value opSeed = AddOp::create(
          b, l, seed,
          scalarConstant(b, l, seedElement,
                         static_cast<double>(++dropoutIndex * 1000003)));
      Value mask = BernoulliOp::create(b, l, type, opSeed,
                                       b.getF64FloatAttr(1.0 - ratio));
      Value kept = MulOp::create(b, l, mapping.lookup(dropout.getInput()),
                                 mask);
      Value scaled = MulOp::create(
          b, l, kept,
          scalarConstant(b, l, type.getElementType(), 1.0 / (1.0 - ratio)));
      mapping.map(dropout.getResult(), scaled);
      drawnMasks[dropout.getResult()] = mask;
      continue;
    }
    b.clone(op, mapping);
  }
}

int64_t countRandomDropouts(Block &body) {
  int64_t count = 0;
  body.walk([&](DropoutOp op) {
    if (op.getRatio().convertToDouble() > 0)
      ++count;
  });
  return count;
}

bool needsRandomSeed(Block &body) {
  bool found = false;
  body.walk([&](DropoutOp op) {
    if (op.getRatio().convertToDouble() > 0)
      found = true;
  });
  return found;
}

FailureOr<RankedTensorType> getLabelsType(LossKind kind,
                                          RankedTensorType prediction) {
  if (kind == LossKind::MSE)
    return prediction;
  if (prediction.getRank() < 1)
    return failure();
  return RankedTensorType::get(prediction.getShape().drop_back(),
                               IntegerType::get(prediction.getContext(), 64));
}

Value buildLoss(OpBuilder &b, Location loc, LossKind kind, Value prediction,
                Value labels) {
  auto predType = cast<RankedTensorType>(prediction.getType());
  Type elementType = predType.getElementType();
  Location lossLoc = NameLoc::get(b.getStringAttr(stringifyLossKind(kind)), loc);
  if (kind == LossKind::None) {
    // The model's own scalar loss (one element), as rank 0.
    if (predType.getRank() == 0)
      return prediction;
    return ReshapeOp::create(b, lossLoc, prediction, ArrayRef<int64_t>{});
  }
  if (kind == LossKind::CrossEntropy) {
    int64_t rank = predType.getRank();
    Value logProbs = LogSoftmaxOp::create(b, lossLoc, prediction, rank - 1);
    Value oneHot = OneHotOp::create(
        b, lossLoc, labels, b.getI64IntegerAttr(predType.getShape().back()),
        TypeAttr::get(elementType));
    Value picked = MulOp::create(b, lossLoc, oneHot, logProbs);
    Value perPosition = ReduceSumOp::create(
        b, lossLoc, picked, SmallVector<int64_t>{rank - 1},
        /*keepdims=*/false);
    Value mean = perPosition;
    if (rank > 1)
      mean = ReduceMeanOp::create(
          b, lossLoc, perPosition,
          llvm::to_vector(llvm::seq<int64_t>(0, rank - 1)),
          /*keepdims=*/false);
    return NegOp::create(b, lossLoc, mean);
  }
  Value diff = SubOp::create(b, lossLoc, prediction, labels);
  Value squared = MulOp::create(b, lossLoc, diff, diff);
  if (predType.getRank() == 0)
    return squared;
  return ReduceMeanOp::create(
      b, lossLoc, squared,
      llvm::to_vector(llvm::seq<int64_t>(0, predType.getRank())),
      /*keepdims=*/false);
}

Value buildSquaredNorm(OpBuilder &b, Location loc, ValueRange tensors,
                       Type elementType) {
  Value total;
  for (Value t : tensors) {
    auto type = cast<RankedTensorType>(t.getType());
    Value sum = MulOp::create(b, loc, t, t);
    if (type.getRank() > 0)
      sum = ReduceSumOp::create(
          b, loc, sum, llvm::to_vector(llvm::seq<int64_t>(0, type.getRank())),
          /*keepdims=*/false);
    if (type.getElementType() != elementType)
      sum = CastOp::create(b, loc, sum, TypeAttr::get(elementType));
    total = total ? Value(AddOp::create(b, loc, total, sum)) : sum;
  }
  return total ? total : scalarConstant(b, loc, elementType, 0.0);
}

func::FuncOp buildOptimizerUpdate(OpBuilder &b, Location loc, StringRef name,
                                  ArrayRef<UpdateWeight> weights,
                                  const OptimizerOptions &opt,
                                  StringRef stepName, StringRef gradNormName,
                                  StringRef reportNormTo) {
  Type elementType =
      weights.empty() ? b.getF32Type() : getElementTypeOrSelf(weights[0].type);
  SmallVector<Type> updateArgTypes;
  struct ArgInfo {
    std::string name, role;
    DictionaryAttr weightAttrs;
  };
  SmallVector<ArgInfo> updateArgs;
  for (const UpdateWeight &w : weights) {
    updateArgTypes.push_back(w.type);
    updateArgs.push_back({w.name, "weight", w.attrs});
  }
  for (const UpdateWeight &w : weights) {
    updateArgTypes.push_back(w.type);
    updateArgs.push_back({"grad:" + w.name, "grad", {}});
  }
  SmallVector<StringRef> statePrefixes;
  if (opt.kind == OptimizerKind::Momentum)
    statePrefixes.push_back("momentum_buffer:");
  if (opt.kind == OptimizerKind::Adam || opt.kind == OptimizerKind::AdamW) {
    statePrefixes.push_back("exp_avg:");
    statePrefixes.push_back("exp_avg_sq:");
  }
  for (StringRef prefix : statePrefixes)
    for (const UpdateWeight &w : weights) {
      updateArgTypes.push_back(w.type);
      updateArgs.push_back({(prefix + w.name).str(), "state", {}});
    }
  bool adam =
      opt.kind == OptimizerKind::Adam || opt.kind == OptimizerKind::AdamW;
  bool usesStep = adam || opt.hasLRSchedule();
  if (usesStep) {
    updateArgTypes.push_back(RankedTensorType::get({}, elementType));
    updateArgs.push_back({stepName.str(), "state", {}});
  }
  // A pipeline stage's update reads the squared gradient norm of every
  // stage (summed by the stages' `_N` functions and an all-reduce).
  bool clips = opt.clipGradNorm > 0;
  bool normGiven = clips && !gradNormName.empty();
  // One rank: the squared norm the update computes, written to the bound
  // buffer `reportNormTo` for the runtime to report.
  bool reportsNorm = clips && !normGiven && !reportNormTo.empty();
  if (normGiven || reportsNorm) {
    updateArgTypes.push_back(RankedTensorType::get({}, elementType));
    updateArgs.push_back(
        {(normGiven ? gradNormName : reportNormTo).str(), "grad", {}});
  }
  auto update = func::FuncOp::create(b, loc, name,
                                     b.getFunctionType(updateArgTypes, {}));
  for (auto [i, arg] : llvm::enumerate(updateArgs)) {
    if (arg.weightAttrs)
      update.setArgAttrs(i, arg.weightAttrs);
    update.setArgAttr(i, Names::kNameAttrName, b.getStringAttr(arg.name));
    update.setArgAttr(i, Names::kRoleAttrName, b.getStringAttr(arg.role));
  }
  Block *updateEntry = update.addEntryBlock();
  b.setInsertionPointToStart(updateEntry);
  Location optLoc =
      NameLoc::get(b.getStringAttr(stringifyOptimizerKind(opt.kind)), loc);
  auto constant = [&](double value) {
    return scalarConstant(b, optLoc, elementType, value);
  };
  unsigned numWeights = weights.size();
  auto weightArg = [&](unsigned n) { return updateEntry->getArgument(n); };
  auto gradArg = [&](unsigned n) {
    return updateEntry->getArgument(numWeights + n);
  };
  auto stateArg = [&](unsigned which, unsigned n) {
    return updateEntry->getArgument(numWeights * (2 + which) + n);
  };
  SmallVector<Value> newWeights, newStates;
  SmallVector<std::string> newStateNames;
  Value stepCount, biasCorrection1, biasCorrection2Sqrt;
  Value stepArg = usesStep
                      ? updateEntry->getArgument(updateArgs.size() - 1 -
                                                 (normGiven || reportsNorm))
                      : Value();
  if (usesStep)
    stepCount = AddOp::create(b, optLoc, stepArg, constant(1.0));
  // The learning rate of this step: a constant, or lr * factor(s) for the
  // s-th step (s = the counter before this step, as torch's LambdaLR's
  // last_epoch when optimizer.step() runs).
  Value scheduledLR;
  if (opt.hasLRSchedule()) {
    Value s = stepArg;
    double warmup = static_cast<double>(opt.warmupSteps);
    double decay = std::max<double>(
        1.0, static_cast<double>(opt.totalSteps - opt.warmupSteps));
    Value factor;
    switch (opt.lrSchedule) {
    case LRScheduleKind::Constant:
      factor = constant(1.0);
      break;
    case LRScheduleKind::Linear:
      // max(0, (T - s) / max(1, T - W)).
      factor = MaxOp::create(
          b, optLoc, constant(0.0),
          DivOp::create(
              b, optLoc,
              SubOp::create(b, optLoc,
                            constant(static_cast<double>(opt.totalSteps)), s),
              constant(decay)));
      break;
    case LRScheduleKind::Cosine: {
      // 0.5 (1 + cos(pi min(1, (s - W) / max(1, T - W)))): 0 from T on.
      Value progress = MinOp::create(
          b, optLoc, constant(1.0),
          DivOp::create(b, optLoc,
                        SubOp::create(b, optLoc, s, constant(warmup)),
                        constant(decay)));
      factor = MulOp::create(
          b, optLoc, constant(0.5),
          AddOp::create(b, optLoc, constant(1.0),
                        CosOp::create(b, optLoc,
                                      MulOp::create(b, optLoc,
                                                    constant(llvm::numbers::pi),
                                                    progress))));
      break;
    }
    }
    if (opt.warmupSteps > 0)
      factor = WhereOp::create(
          b, optLoc, LessOp::create(b, optLoc, s, constant(warmup)),
          DivOp::create(b, optLoc, s, constant(warmup)), factor);
    scheduledLR = MulOp::create(b, optLoc, constant(opt.lr), factor);
  }
  auto lr = [&]() -> Value {
    return scheduledLR ? scheduledLR : constant(opt.lr);
  };
  if (adam) {
    biasCorrection1 = SubOp::create(
        b, optLoc, constant(1.0),
        PowOp::create(b, optLoc, constant(opt.beta1), stepCount));
    biasCorrection2Sqrt = SqrtOp::create(
        b, optLoc,
        SubOp::create(b, optLoc, constant(1.0),
                      PowOp::create(b, optLoc, constant(opt.beta2),
                                    stepCount)));
  }
  // Gradient clipping: every gradient times min(1, max / (norm + 1e-6)),
  // as torch.nn.utils.clip_grad_norm_ before optimizer.step().
  Value clipCoefficient, reportedNorm;
  if (clips) {
    Value sumOfSquares =
        normGiven ? Value(updateEntry->getArguments().back())
                  : buildSquaredNorm(
                        b, optLoc,
                        llvm::to_vector(llvm::map_range(
                            llvm::seq<unsigned>(0, numWeights),
                            [&](unsigned n) -> Value { return gradArg(n); })),
                        elementType);
    if (reportsNorm)
      reportedNorm = sumOfSquares;
    Value norm = SqrtOp::create(b, optLoc, sumOfSquares);
    clipCoefficient = MinOp::create(
        b, optLoc, constant(1.0),
        DivOp::create(b, optLoc, constant(opt.clipGradNorm),
                      AddOp::create(b, optLoc, norm, constant(1e-6))));
  }
  SmallVector<SmallVector<Value>> statesByKind(statePrefixes.size());
  for (unsigned n = 0; n < numWeights; ++n) {
    Value w = weightArg(n), g = gradArg(n);
    if (clipCoefficient)
      g = MulOp::create(b, optLoc, g, clipCoefficient);
    switch (opt.kind) {
    case OptimizerKind::SGD:
    case OptimizerKind::Momentum: {
      if (opt.weightDecay != 0)
        g = AddOp::create(b, optLoc, g,
                          MulOp::create(b, optLoc, constant(opt.weightDecay),
                                        w));
      Value direction = g;
      if (opt.kind == OptimizerKind::Momentum) {
        Value buf = AddOp::create(
            b, optLoc, MulOp::create(b, optLoc, constant(opt.momentum),
                                     stateArg(0, n)),
            g);
        statesByKind[0].push_back(buf);
        direction =
            opt.nesterov
                ? Value(AddOp::create(
                      b, optLoc, g,
                      MulOp::create(b, optLoc, constant(opt.momentum), buf)))
                : buf;
      }
      newWeights.push_back(SubOp::create(
          b, optLoc, w, MulOp::create(b, optLoc, lr(), direction)));
      break;
    }
    case OptimizerKind::Adam:
    case OptimizerKind::AdamW: {
      if (opt.kind == OptimizerKind::AdamW && opt.weightDecay != 0)
        w = MulOp::create(
            b, optLoc, w,
            scheduledLR
                ? Value(SubOp::create(b, optLoc, constant(1.0),
                                      MulOp::create(b, optLoc, scheduledLR,
                                                    constant(opt.weightDecay))))
                : constant(1.0 - opt.lr * opt.weightDecay));
      if (opt.kind == OptimizerKind::Adam && opt.weightDecay != 0)
        g = AddOp::create(b, optLoc, g,
                          MulOp::create(b, optLoc, constant(opt.weightDecay),
                                        w));
      Value m = AddOp::create(
          b, optLoc,
          MulOp::create(b, optLoc, constant(opt.beta1), stateArg(0, n)),
          MulOp::create(b, optLoc, constant(1.0 - opt.beta1), g));
      Value v = AddOp::create(
          b, optLoc,
          MulOp::create(b, optLoc, constant(opt.beta2), stateArg(1, n)),
          MulOp::create(b, optLoc, constant(1.0 - opt.beta2),
                        MulOp::create(b, optLoc, g, g)));
      statesByKind[0].push_back(m);
      statesByKind[1].push_back(v);
      Value denom = AddOp::create(
          b, optLoc,
          DivOp::create(b, optLoc, SqrtOp::create(b, optLoc, v),
                        biasCorrection2Sqrt),
          constant(opt.eps));
      Value stepSize = DivOp::create(b, optLoc, lr(), biasCorrection1);
      newWeights.push_back(SubOp::create(
          b, optLoc, w,
          MulOp::create(b, optLoc, stepSize,
                        DivOp::create(b, optLoc, m, denom))));
      break;
    }
    }
  }
  SmallVector<Value> updateResults(newWeights);
  SmallVector<std::pair<std::string, std::string>> updateNames;
  for (const UpdateWeight &w : weights)
    updateNames.push_back({w.name + ".next", w.name});
  for (auto [which, prefix] : llvm::enumerate(statePrefixes))
    for (auto [n, w] : llvm::enumerate(weights)) {
      updateResults.push_back(statesByKind[which][n]);
      std::string stateName = (prefix + w.name).str();
      updateNames.push_back({stateName + ".next", stateName});
    }
  if (usesStep) {
    updateResults.push_back(stepCount);
    updateNames.push_back({(stepName + ".next").str(), stepName.str()});
  }
  if (reportedNorm) {
    updateResults.push_back(reportedNorm);
    updateNames.push_back({(reportNormTo + ".next").str(), reportNormTo.str()});
  }
  func::ReturnOp::create(b, optLoc, updateResults);
  update.setType(b.getFunctionType(updateArgTypes,
                                   ValueRange(updateResults).getTypes()));
  for (auto [j, names] : llvm::enumerate(updateNames)) {
    update.setResultAttr(j, Names::kNameAttrName,
                         b.getStringAttr(names.first));
    update.setResultAttr(j, Names::kUpdatesAttrName,
                         b.getStringAttr(names.second));
  }

  return update;
}

FailureOr<TrainingInfo>
buildTrainingFunctions(ModuleOp module, const TrainingOptions &options) {
  auto main = module.lookupSymbol<func::FuncOp>(options.function);
  if (!main || main.isDeclaration())
    return module.emitError("training: no function '")
           << options.function << "' with a body to train";
  for (StringRef name : {kStepFunction, kUpdateFunction, kLossFunction,
                         kJointFunction})
    if (module.lookupSymbol(name))
      return module.emitError("training: the module already has a symbol '")
             << name << "'";
  if (options.evaluate && module.lookupSymbol(kEvaluateFunction))
    return module.emitError("training: the module already has a symbol '")
           << kEvaluateFunction << "'";
  if (options.microbatches < 1)
    return main.emitError("training: the number of micro-batches must be "
                          "at least 1, got ")
           << options.microbatches;
  if (main.getNumResults() == 0)
    return main.emitError("training: '")
           << options.function << "' has no result to take the loss of";
  auto predType = dyn_cast<RankedTensorType>(main.getResultTypes()[0]);
  if (!predType || !isa<FloatType>(predType.getElementType()))
    return main.emitError("training: the prediction (first result) has type ")
           << main.getResultTypes()[0]
           << "; a loss needs a float tensor";
  Type elementType = predType.getElementType();
  MLIRContext *ctx = module.getContext();
  Location loc = main.getLoc();
  unsigned numArgs = main.getNumArguments();
  Block &body = main.front();

  TrainingInfo info;
  llvm::StringSet<> argNames;
  SmallVector<bool> isWeight(numArgs, false), isTrainable(numArgs, false);
  for (unsigned i = 0; i < numArgs; ++i) {
    std::string name = argName(main, i);
    argNames.insert(name);
    if (!isParamArgument(main, i)) {
      info.inputNames.push_back(name);
      continue;
    }
    isWeight[i] = true;
    BlockArgument arg = main.getArgument(i);
    bool trainable =
        isa<FloatType>(getElementTypeOrSelf(arg.getType())) &&
        !main.getArgAttr(i, Names::kFrozenAttrName) &&
        !main.getArgAttr(i, Names::kNoGradAttrName) && !arg.use_empty() &&
        !isRunningStatistic(arg);
    isTrainable[i] = trainable;
    (trainable ? info.trainableWeights : info.frozenWeights).push_back(name);
  }
  bool hasLabels = options.loss != LossKind::None;
  if (!hasLabels && predType.getNumElements() != 1)
    return main.emitError("training: --loss none trains the first output as "
                          "the loss, which must be a scalar; it has type ")
           << predType;
  if (hasLabels && argNames.contains(options.labelsName))
    return main.emitError("training: the labels name '")
           << options.labelsName
           << "' is already the name of an input or weight; choose another "
              "with --labels-name";
  if (info.trainableWeights.empty())
    return main.emitError("training: '")
           << options.function << "' has no trainable weight";
  if (!info.inputNames.empty()) {
    auto first = cast<RankedTensorType>(
        main.getArgument(llvm::find_if(llvm::seq(0u, numArgs),
                                       [&](unsigned i) { return !isWeight[i]; })
                             .operator*())
            .getType());
    info.microbatchSize = first.getRank() ? first.getDimSize(0) : 0;
  }

  // The labels' type (none: the loss is the first output itself).
  RankedTensorType labelsType;
  if (hasLabels) {
    FailureOr<RankedTensorType> labelsTypeOr =
        getLabelsType(options.loss, predType);
    if (failed(labelsTypeOr))
      return main.emitError("training: cross-entropy needs a prediction with "
                            "a class axis, got ")
             << predType;
    labelsType = *labelsTypeOr;
  }
  unsigned numLabels = hasLabels ? 1 : 0;
  if (options.loss == LossKind::CrossEntropy)
    info.numClasses = predType.getShape().back();

  bool hasDropout = needsRandomSeed(body);
  info.usesRandomSeed = hasDropout;
  auto seedType = RankedTensorType::get({}, IntegerType::get(ctx, 64));

  //===--- 1. The loss function ------------------------------------------===//
  OpBuilder b(ctx);
  b.setInsertionPointAfter(main);
  SmallVector<Type> lossArgTypes(main.getArgumentTypes());
  if (hasLabels)
    lossArgTypes.push_back(labelsType);
  if (hasDropout)
    lossArgTypes.push_back(seedType);
  auto lossFn = func::FuncOp::create(b, loc, kLossFunction,
                                     b.getFunctionType(lossArgTypes, {}));
  lossFn.setPrivate();
  for (unsigned i = 0; i < numArgs; ++i)
    lossFn.setArgAttrs(i, main.getArgAttrDict(i));
  Block *lossEntry = lossFn.addEntryBlock();
  Value labels = hasLabels ? lossEntry->getArgument(numArgs) : Value();
  Value seed =
      hasDropout ? lossEntry->getArgument(numArgs + numLabels) : Value();
  IRMapping mapping;
  for (unsigned i = 0; i < numArgs; ++i)
    mapping.map(main.getArgument(i), lossEntry->getArgument(i));
  b.setInsertionPointToStart(lossEntry);

  // Running-statistic updates: weight argument -> new value.
  SmallVector<std::pair<unsigned, Value>> statUpdates;
  {
    SmallVector<std::pair<Value, Value>> updates;
    cloneInTrainingMode(b, body, mapping, seed, updates);
    for (auto [operand, updated] : updates) {
      auto arg = dyn_cast<BlockArgument>(operand);
      if (arg && arg.getOwner() == &body && isWeight[arg.getArgNumber()] &&
          !isTrainable[arg.getArgNumber()])
        statUpdates.push_back({arg.getArgNumber(), updated});
    }
  }
  auto mainReturn = cast<func::ReturnOp>(body.getTerminator());
  Value prediction = mapping.lookup(mainReturn.getOperand(0));
  Value loss = hasLabels ? buildLoss(b, loc, options.loss, prediction, labels)
                        : buildLoss(b, loc, options.loss, prediction, {});
  SmallVector<Value> lossResults{loss};
  for (auto &[argIndex, value] : statUpdates)
    lossResults.push_back(value);
  func::ReturnOp::create(b, loc, lossResults);
  lossFn.setType(b.getFunctionType(
      lossArgTypes, ValueRange(lossResults).getTypes()));

  //===--- 2. The joint function ------------------------------------------===//
  SmallVector<unsigned> wrt;
  for (unsigned i = 0; i < numArgs; ++i)
    if (isTrainable[i])
      wrt.push_back(i);
  unsigned lossIndex = 0;
  FailureOr<JointFunction> joint = buildJointFunction(
      lossFn, kJointFunction, wrt, ArrayRef<unsigned>(lossIndex));
  if (failed(joint)) {
    lossFn.erase();
    return failure();
  }
  func::FuncOp jointFn = joint->func;

  //===--- 3a. The micro-batch step ---------------------------------------===//
  unsigned numLossArgs = lossArgTypes.size();
  SmallVector<Type> stepArgTypes(lossArgTypes);
  for (unsigned k : wrt)
    stepArgTypes.push_back(main.getArgument(k).getType());
  b.setInsertionPointAfter(jointFn);
  auto step = func::FuncOp::create(b, loc, kStepFunction,
                                   b.getFunctionType(stepArgTypes, {}));
  // The model's arguments (inputs, and weights: frozen ones marked) and
  // the labels, as the step and the evaluation function bind them.
  auto setDataAndWeightAttrs = [&](func::FuncOp fn) {
    for (unsigned i = 0; i < numArgs; ++i) {
      fn.setArgAttrs(i, main.getArgAttrDict(i));
      if (isWeight[i] && !isTrainable[i])
        fn.setArgAttr(i, Names::kFrozenAttrName, b.getUnitAttr());
      fn.setArgAttr(i, Names::kRoleAttrName,
                    b.getStringAttr(isWeight[i] ? "weight" : "input"));
    }
    if (hasLabels) {
      fn.setArgAttr(numArgs, Names::kNameAttrName,
                    b.getStringAttr(options.labelsName));
      fn.setArgAttr(numArgs, Names::kRoleAttrName, b.getStringAttr("input"));
    }
  };
  setDataAndWeightAttrs(step);
  if (hasDropout) {
    step.setArgAttr(numArgs + numLabels, Names::kNameAttrName,
                    b.getStringAttr(kSeedName));
    step.setArgAttr(numArgs + numLabels, Names::kRoleAttrName,
                    b.getStringAttr("state"));
  }
  for (auto [n, k] : llvm::enumerate(wrt)) {
    step.setArgAttr(numLossArgs + n, Names::kNameAttrName,
                    b.getStringAttr("grad:" + argName(main, k)));
    step.setArgAttr(numLossArgs + n, Names::kRoleAttrName,
                    b.getStringAttr("grad"));
  }
  Block *stepEntry = step.addEntryBlock();
  IRMapping stepMapping;
  Block &jointEntry = jointFn.front();
  for (unsigned i = 0; i < numLossArgs; ++i)
    stepMapping.map(jointEntry.getArgument(i), stepEntry->getArgument(i));
  b.setInsertionPointToStart(stepEntry);
  stepMapping.map(
      jointEntry.getArgument(numLossArgs),
      scalarConstant(b, loc, elementType,
                     1.0 / static_cast<double>(options.microbatches)));
  for (Operation &op : jointEntry.without_terminator())
    b.clone(op, stepMapping);
  auto jointReturn = cast<func::ReturnOp>(jointEntry.getTerminator());
  SmallVector<Value> stepResults{
      stepMapping.lookup(jointReturn.getOperand(0))};
  SmallVector<std::pair<std::string, std::string>> stepResultNames{
      {"loss", ""}};
  unsigned numLossResults = lossResults.size();
  info.gradientsWritten = options.microbatches == 1;
  for (auto [n, k] : llvm::enumerate(wrt)) {
    Value grad = stepMapping.lookup(jointReturn.getOperand(numLossResults + n));
    // One micro-batch a step: nothing to accumulate, the gradient is
    // written (the accumulator argument stays, unread, for the one ABI).
    Value accumulated =
        info.gradientsWritten
            ? grad
            : Value(AddOp::create(
                  b, loc, stepEntry->getArgument(numLossArgs + n), grad));
    std::string name = "grad:" + argName(main, k);
    stepResults.push_back(accumulated);
    stepResultNames.push_back({name + ".next", name});
  }
  for (auto [n, update] : llvm::enumerate(statUpdates)) {
    stepResults.push_back(stepMapping.lookup(jointReturn.getOperand(1 + n)));
    std::string name = argName(main, update.first);
    stepResultNames.push_back({name + ".next", name});
  }
  if (hasDropout) {
    Value next = AddOp::create(b, loc, stepEntry->getArgument(numArgs + numLabels),
                               scalarConstant(b, loc, seedType.getElementType(),
                                              1));
    stepResults.push_back(next);
    stepResultNames.push_back({std::string(kSeedName) + ".next",
                               kSeedName.str()});
  }
  func::ReturnOp::create(b, loc, stepResults);
  step.setType(
      b.getFunctionType(stepArgTypes, ValueRange(stepResults).getTypes()));
  for (auto [j, names] : llvm::enumerate(stepResultNames)) {
    step.setResultAttr(j, Names::kNameAttrName,
                       b.getStringAttr(names.first));
    if (!names.second.empty())
      step.setResultAttr(j, Names::kUpdatesAttrName,
                         b.getStringAttr(names.second));
  }

  //===--- 3b. The optimizer update ---------------------------------------===//
  SmallVector<UpdateWeight> updateWeights;
  for (unsigned k : wrt)
    updateWeights.push_back(
        {argName(main, k), main.getArgument(k).getType(), main.getArgAttrDict(k)});
  b.setInsertionPointAfter(step);
  buildOptimizerUpdate(b, loc, kUpdateFunction, updateWeights,
                       options.optimizer, "step", /*gradNormName=*/{},
                       kGradNormBuffer);

  //===--- 4. Evaluation (options.evaluate) -------------------------------===//
  // The forward as imported (eval mode) and the loss; the weights are bound
  // by name to the buffers the step trains, frozen ones (running
  // statistics) read as they are.
  if (options.evaluate) {
    SmallVector<Type> evalArgTypes(main.getArgumentTypes());
    if (hasLabels)
      evalArgTypes.push_back(labelsType);
    b.setInsertionPointAfter(step);
    auto eval = func::FuncOp::create(b, loc, kEvaluateFunction,
                                     b.getFunctionType(evalArgTypes, {}));
    setDataAndWeightAttrs(eval);
    Block *evalEntry = eval.addEntryBlock();
    IRMapping evalMapping;
    for (unsigned i = 0; i < numArgs; ++i)
      evalMapping.map(main.getArgument(i), evalEntry->getArgument(i));
    b.setInsertionPointToStart(evalEntry);
    for (Operation &op : body.without_terminator())
      b.clone(op, evalMapping);
    Value evalPrediction = evalMapping.lookup(mainReturn.getOperand(0));
    Value evalLoss =
        buildLoss(b, loc, options.loss, evalPrediction,
                  hasLabels ? evalEntry->getArgument(numArgs) : Value());
    func::ReturnOp::create(b, loc, evalLoss);
    eval.setType(b.getFunctionType(evalArgTypes, {evalLoss.getType()}));
    eval.setResultAttr(0, Names::kNameAttrName, b.getStringAttr("loss"));
    info.evaluateFunction = kEvaluateFunction.str();
  }

  jointFn.erase();
  lossFn.erase();
  main.erase();
  return info;
}

} // namespace pipedream::nn

//===----------------------------------------------------------------------===//
// nn-build-training
//===----------------------------------------------------------------------===//

namespace pipedream::nn {
#define GEN_PASS_DEF_BUILDTRAININGPASS
#include "pipedream/Dialect/NN/Transforms/Passes.h.inc"
} // namespace pipedream::nn

namespace {
struct BuildTrainingPass
    : pipedream::nn::impl::BuildTrainingPassBase<BuildTrainingPass> {
  using Base::Base;

  void runOnOperation() override {
    using namespace pipedream::nn;
    TrainingOptions options;
    options.function = function;
    options.labelsName = labelsName;
    options.microbatches = microbatches;
    std::optional<LossKind> lossKind = parseLossKind(loss);
    if (!lossKind) {
      getOperation().emitError("nn-build-training: unknown loss '")
          << loss << "' (expected cross-entropy, mse or none)";
      return signalPassFailure();
    }
    options.loss = *lossKind;
    std::optional<OptimizerKind> optimizerKind = parseOptimizerKind(optimizer);
    if (!optimizerKind) {
      getOperation().emitError("nn-build-training: unknown optimizer '")
          << optimizer << "' (expected sgd, momentum, adam or adamw)";
      return signalPassFailure();
    }
    options.optimizer.kind = *optimizerKind;
    options.optimizer.lr = lr;
    options.optimizer.momentum = momentum;
    options.optimizer.weightDecay = weightDecay;
    options.optimizer.nesterov = nesterov;
    options.optimizer.beta1 = beta1;
    options.optimizer.beta2 = beta2;
    options.optimizer.eps = eps;
    if (failed(parseLRSchedule(getOperation(), "nn-build-training", lrSchedule,
                               warmupSteps, totalSteps, options.optimizer)) ||
        failed(parseClipGradNorm(getOperation(), "nn-build-training",
                                 clipGradNorm, options.optimizer)))
      return signalPassFailure();
    options.evaluate = evaluate;
    if (failed(buildTrainingFunctions(getOperation(), options)))
      signalPassFailure();
  }
};
} // namespace
