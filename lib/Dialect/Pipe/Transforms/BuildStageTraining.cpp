//===- BuildStageTraining.cpp - pipe-build-stage-training -----------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// From the outlined view (pipe-outline-stages: a driver calling one function
// per stage, `pipe.transfer` between them) to the stage functions of the
// schedule (docs/Pipe.md, "Stage functions"): per virtual stage v
//
//   @stage<v>_F  forward in training mode; sends its cut tensors, stashes
//                its residuals; the last stage adds the loss
//   @stage<v>_B  backward (nn-autodiff): gradients of the received tensors,
//                weight gradients added to the `grad:<w>` accumulators
//   @stage<v>_W  (split-backward) the weight gradients, from B's carries
//   @stage<v>_U  the optimizer update of the stage's weights
//   @stage<v>_E  (evaluate) the forward in eval mode; sends its cut tensors;
//                the last stage returns the loss. Updates nothing.
//
// Each cut tensor is an *edge* with a number e: the producer's F returns it
// as `pipe.send = e`, the consumer's F takes it as `pipe.recv = e`, the
// consumer's B returns its gradient as `pipe.grad = e` and the producer's B
// takes it under the same attribute. A producer result read by several
// stages is one edge per consumer (autodiff sums their gradients).
//
//===----------------------------------------------------------------------===//

#include "pipedream/Dialect/NN/IR/NNDialect.h"
#include "pipedream/Dialect/NN/IR/NNOps.h"
#include "pipedream/Dialect/NN/Transforms/Autodiff.h"
#include "pipedream/Dialect/NN/Transforms/Training.h"
#include "pipedream/Dialect/Pipe/IR/PipeOps.h"
#include "pipedream/Dialect/Pipe/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include <map>
#include <set>

namespace pipedream::pipe {
#define GEN_PASS_DEF_BUILDSTAGETRAININGPASS
#include "pipedream/Dialect/Pipe/Transforms/Passes.h.inc"
} // namespace pipedream::pipe

using namespace mlir;
using namespace pipedream::pipe;
namespace nn = pipedream::nn;
using NNNames = pipedream::nn::NNDialect;

namespace {

struct BuildStageTrainingPass
    : pipedream::pipe::impl::BuildStageTrainingPassBase<
          BuildStageTrainingPass> {
  using Base::Base;
  void runOnOperation() override;
};

struct StageCall {
  func::CallOp call;
  func::FuncOp callee;
  StageAttr stage;
  int64_t virtualIndex;
};

Value constantLike(OpBuilder &b, Location loc, Type type, double value) {
  auto tensor = cast<RankedTensorType>(type);
  return nn::ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(
          tensor, b.getFloatAttr(tensor.getElementType(), value)));
}

/// Replaces argument `index` of `func` by a constant and erases it.
void replaceArgumentByConstant(func::FuncOp func, unsigned index,
                               double value) {
  OpBuilder b(func.getContext());
  b.setInsertionPointToStart(&func.front());
  BlockArgument arg = func.getArgument(index);
  arg.replaceAllUsesWith(constantLike(b, func.getLoc(), arg.getType(), value));
  (void)func.eraseArgument(index);
}

/// Turns the weight-gradient results of `func` (those whose `nn.grad_of`
/// names a weight of `stageFn`) into accumulations into `grad:<w>`.
void accumulateWeightGradients(func::FuncOp func, func::FuncOp stageFn) {
  OpBuilder b(func.getContext());
  auto ret = cast<func::ReturnOp>(func.front().getTerminator());
  b.setInsertionPoint(ret);
  for (unsigned j = 0, e = func.getNumResults(); j < e; ++j) {
    auto of = func.getResultAttrOfType<IntegerAttr>(j, NNNames::kGradOfAttrName);
    if (!of || !nn::isParamArgument(stageFn, of.getInt()))
      continue;
    auto name = stageFn.getArgAttrOfType<StringAttr>(of.getInt(),
                                                     NNNames::kNameAttrName);
    std::string gradName = "grad:" + name.getValue().str();
    unsigned argIndex = func.getNumArguments();
    Type type = func.getResultTypes()[j];
    (void)func.insertArgument(
        argIndex, type,
        b.getDictionaryAttr(
            {b.getNamedAttr(NNNames::kNameAttrName, b.getStringAttr(gradName)),
             b.getNamedAttr(NNNames::kRoleAttrName, b.getStringAttr("grad"))}),
        func.getLoc());
    Value sum = nn::AddOp::create(b, func.getLoc(),
                                  func.getArgument(argIndex),
                                  ret.getOperand(j));
    ret.setOperand(j, sum);
    func.setResultAttrs(
        j, b.getDictionaryAttr(
               {b.getNamedAttr(NNNames::kNameAttrName,
                               b.getStringAttr(gradName + ".next")),
                b.getNamedAttr(NNNames::kUpdatesAttrName,
                               b.getStringAttr(gradName))}));
  }
}

/// Renames the input gradients (`nn.grad_of` a received edge) to
/// `pipe.grad = e` and the `nn.grad_of_result` arguments of sent edges to
/// `pipe.grad = e`; the loss's gradient becomes the constant 1/M and the
/// running statistics' (not differentiated) zero.
void markBackward(func::FuncOp func, func::FuncOp stageFn, double lossSeed) {
  OpBuilder b(func.getContext());
  for (unsigned j = 0, e = func.getNumResults(); j < e; ++j) {
    auto of = func.getResultAttrOfType<IntegerAttr>(j, NNNames::kGradOfAttrName);
    if (!of)
      continue;
    if (auto edge = stageFn.getArgAttrOfType<IntegerAttr>(of.getInt(),
                                                          "pipe.recv"))
      func.setResultAttr(j, "pipe.grad", edge);
  }
  for (int64_t i = func.getNumArguments() - 1; i >= 0; --i) {
    auto of = func.getArgAttrOfType<IntegerAttr>(
        i, NNNames::kGradOfResultAttrName);
    if (!of)
      continue;
    unsigned result = of.getInt();
    if (auto edge = stageFn.getResultAttrOfType<IntegerAttr>(result,
                                                             "pipe.send")) {
      func.setArgAttr(i, "pipe.grad", edge);
      continue;
    }
    auto role = stageFn.getResultAttrOfType<StringAttr>(result,
                                                        NNNames::kRoleAttrName);
    replaceArgumentByConstant(func, i,
                              role && role.getValue() == "loss" ? lossSeed
                                                                : 0.0);
  }
}

/// Gradient clipping: `@stage<v>_N(grad:<w>..., grad norm) -> grad norm'`
/// per stage, adding the squared norm of the gradients its U applies into
/// the accumulator PipeDialect::kGradNormBuffer (rank 0). A weight that the
/// U of several stages applies (tied weights on several ranks, whose
/// gradients pipe.all_reduce_grad makes equal) counts on its first stage
/// only, so the sum over the stages is the squared norm of the model's
/// gradients. With non-uniform replication every replica of stage s runs
/// its N on the replicas' summed gradients and the sum runs over all of
/// them, so each adds 1/R_s of it. Builds before the first stage call's
/// callee.
LogicalResult
buildGradientNorms(OpBuilder &b, MutableArrayRef<StageCall> calls,
                   ArrayRef<SmallVector<nn::UpdateWeight>> updatedWeights,
                   ArrayRef<int64_t> stageReplicas) {
  Type element;
  for (const auto &weights : updatedWeights)
    for (const nn::UpdateWeight &w : weights) {
      Type e = getElementTypeOrSelf(w.type);
      if (element && e != element)
        return calls.front().call.emitError()
               << "pipe-build-stage-training: clip-grad-norm needs weights of "
                  "one float type, got "
               << element << " and " << e << " ('" << w.name << "')";
      element = e;
    }
  if (!element)
    element = b.getF32Type();
  auto normType = RankedTensorType::get({}, element);
  std::set<std::string> counted;
  for (auto [v, c] : llvm::enumerate(calls)) {
    Location loc = c.callee.getLoc();
    SmallVector<const nn::UpdateWeight *> mine;
    for (const nn::UpdateWeight &w : updatedWeights[v])
      if (counted.insert(w.name).second)
        mine.push_back(&w);
    SmallVector<Type> argTypes;
    for (const nn::UpdateWeight *w : mine)
      argTypes.push_back(w->type);
    argTypes.push_back(normType);
    b.setInsertionPoint(calls.front().callee);
    auto fn = func::FuncOp::create(b, loc, ("stage" + Twine(v) + "_N").str(),
                                   b.getFunctionType(argTypes, {normType}));
    auto argAttrs = [&](StringRef name) {
      return b.getDictionaryAttr(
          {b.getNamedAttr(NNNames::kNameAttrName, b.getStringAttr(name)),
           b.getNamedAttr(NNNames::kRoleAttrName, b.getStringAttr("grad"))});
    };
    for (auto [i, w] : llvm::enumerate(mine))
      fn.setArgAttrs(i, argAttrs("grad:" + w->name));
    fn.setArgAttrs(mine.size(), argAttrs(PipeDialect::kGradNormBuffer));
    fn.setResultAttrs(
        0,
        b.getDictionaryAttr(
            {b.getNamedAttr(
                 NNNames::kNameAttrName,
                 b.getStringAttr(PipeDialect::kGradNormBuffer.str() + ".next")),
             b.getNamedAttr(NNNames::kUpdatesAttrName,
                            b.getStringAttr(PipeDialect::kGradNormBuffer))}));
    fn->setAttr(PipeDialect::kStageAttrName, c.stage);
    Block *entry = fn.addEntryBlock();
    b.setInsertionPointToStart(entry);
    SmallVector<Value> grads(entry->getArguments().drop_back());
    Value squares = nn::buildSquaredNorm(b, loc, grads, element);
    int64_t rank = c.stage.getIndex();
    if (rank < static_cast<int64_t>(stageReplicas.size()) &&
        stageReplicas[rank] > 1)
      squares = nn::DivOp::create(
          b, loc, squares,
          constantLike(b, loc, normType,
                       static_cast<double>(stageReplicas[rank])));
    Value sum =
        nn::AddOp::create(b, loc, entry->getArguments().back(), squares);
    func::ReturnOp::create(b, loc, sum);
  }
  return success();
}

} // namespace

/// The results a stage's forward returns (F and E alike): the value of
/// each of the outlined function's results once per edge that sends it
/// (`pipe.send = e`), then, on the last stage (`predictionResult` >= 0),
/// the loss of the prediction against `labels` (null for --loss none).
void addSendsAndLoss(
    OpBuilder &b, Location loc,
    std::map<std::pair<int64_t, unsigned>, SmallVector<int64_t>> &sendsOf,
    int64_t v, func::ReturnOp calleeRet, IRMapping &mapping,
    int64_t predictionResult, nn::LossKind lossKind, Value labels,
    SmallVectorImpl<Value> &results,
    SmallVectorImpl<NamedAttrList> &resultAttrs) {
  for (unsigned j = 0, e = calleeRet.getNumOperands(); j < e; ++j)
    for (int64_t edge : sendsOf[{v, j}]) {
      results.push_back(mapping.lookup(calleeRet.getOperand(j)));
      NamedAttrList attrs;
      attrs.set("pipe.send", b.getI64IntegerAttr(edge));
      resultAttrs.push_back(attrs);
    }
  if (predictionResult < 0)
    return;
  results.push_back(nn::buildLoss(
      b, loc, lossKind, mapping.lookup(calleeRet.getOperand(predictionResult)),
      labels));
  NamedAttrList attrs;
  attrs.set(NNNames::kRoleAttrName, b.getStringAttr("loss"));
  attrs.set(NNNames::kNameAttrName, b.getStringAttr("loss"));
  resultAttrs.push_back(attrs);
}

/// `@stage<v>_E` (evaluate): the stage's forward as imported (eval mode:
/// BatchNorm with its running statistics, Dropout the identity) with the
/// arguments of `stageFn` (its data inputs, received edges and weights,
/// bound by name to the buffers the step trains), returning its sent edges
/// and, on the last stage (`predictionResult` >= 0), the loss. It updates
/// nothing.
void buildEvalStage(
    OpBuilder &b, const StageCall &c, func::FuncOp stageFn,
    std::map<std::pair<int64_t, unsigned>, SmallVector<int64_t>> &sendsOf,
    int64_t v, int64_t predictionResult, nn::LossKind lossKind,
    bool hasLabels) {
  func::FuncOp callee = c.callee;
  Block &body = callee.front();
  Location loc = callee.getLoc();
  bool last = predictionResult >= 0;
  unsigned numArgs = callee.getNumArguments() + (last && hasLabels ? 1 : 0);
  SmallVector<Type> argTypes(stageFn.getArgumentTypes().take_front(numArgs));
  b.setInsertionPoint(stageFn);
  auto eval = func::FuncOp::create(b, loc, ("stage" + Twine(v) + "_E").str(),
                                   b.getFunctionType(argTypes, {}));
  for (unsigned i = 0; i < numArgs; ++i)
    if (DictionaryAttr attrs = stageFn.getArgAttrDict(i))
      eval.setArgAttrs(i, attrs);
  eval->setAttr(PipeDialect::kStageAttrName, c.stage);
  Block *entry = eval.addEntryBlock();
  IRMapping mapping;
  for (unsigned i = 0, e = callee.getNumArguments(); i < e; ++i)
    mapping.map(callee.getArgument(i), entry->getArgument(i));
  b.setInsertionPointToStart(entry);
  for (Operation &op : body.without_terminator())
    b.clone(op, mapping);
  SmallVector<Value> results;
  SmallVector<NamedAttrList> resultAttrs;
  addSendsAndLoss(
      b, loc, sendsOf, v, cast<func::ReturnOp>(body.getTerminator()), mapping,
      predictionResult, lossKind,
      last && hasLabels ? entry->getArgument(callee.getNumArguments())
                        : Value(),
      results, resultAttrs);
  func::ReturnOp::create(b, loc, results);
  eval.setType(b.getFunctionType(argTypes, ValueRange(results).getTypes()));
  for (auto [j, attrs] : llvm::enumerate(resultAttrs))
    eval.setResultAttrs(j, attrs.getDictionary(b.getContext()));
}

void BuildStageTrainingPass::runOnOperation() {
  ModuleOp module = getOperation();
  MLIRContext *ctx = &getContext();
  if (replicas < 1) {
    module.emitError() << "pipe-build-stage-training: replicas must be at "
                          "least 1, got "
                       << replicas.getValue();
    return signalPassFailure();
  }
  nn::OptimizerOptions opt;
  if (failed(nn::parseLRSchedule(module, "pipe-build-stage-training",
                                 lrSchedule, warmupSteps, totalSteps, opt)) ||
      failed(nn::parseClipGradNorm(module, "pipe-build-stage-training",
                                   clipGradNorm, opt)))
    return signalPassFailure();
  bool clips = opt.clipGradNorm > 0;
  auto driver = module.lookupSymbol<func::FuncOp>(function);
  if (!driver || driver.isDeclaration()) {
    module.emitError() << "pipe-build-stage-training: no function '"
                       << function << "' (run pipe-outline-stages first)";
    return signalPassFailure();
  }
  std::optional<nn::LossKind> lossKind = nn::parseLossKind(loss);
  std::optional<nn::OptimizerKind> optimizerKind =
      nn::parseOptimizerKind(optimizer);
  if (!lossKind || !optimizerKind) {
    module.emitError() << "pipe-build-stage-training: unknown "
                       << (lossKind ? "optimizer '" + optimizer
                                    : "loss '" + loss)
                       << "'";
    return signalPassFailure();
  }
  // --loss none: the last stage's first output is the model's own loss
  // (one element); there is no labels input (what the loss reads are
  // ordinary graph inputs, fed to the stage that reads them).
  bool hasLabels = *lossKind != nn::LossKind::None;
  opt.kind = *optimizerKind;
  opt.lr = lr;
  opt.momentum = momentum;
  opt.weightDecay = weightDecay;
  opt.nesterov = nesterov;
  opt.beta1 = beta1;
  opt.beta2 = beta2;
  opt.eps = eps;

  // The stage calls, by virtual stage.
  SmallVector<StageCall> calls;
  int64_t numRanks = 0;
  for (auto call : driver.getOps<func::CallOp>()) {
    auto stage = call->getAttrOfType<StageAttr>(PipeDialect::kStageAttrName);
    auto callee = module.lookupSymbol<func::FuncOp>(call.getCallee());
    if (!stage || !callee || callee.isDeclaration()) {
      call.emitError() << "pipe-build-stage-training: expected a call of an "
                          "outlined stage function with a pipe.stage";
      return signalPassFailure();
    }
    calls.push_back({call, callee, stage, 0});
    numRanks = std::max<int64_t>(numRanks, stage.getIndex() + 1);
  }
  if (calls.empty()) {
    driver.emitError() << "pipe-build-stage-training: '" << function
                       << "' calls no stage function";
    return signalPassFailure();
  }
  for (StageCall &c : calls)
    c.virtualIndex = c.stage.getVirtualIndex(numRanks);
  llvm::sort(calls, [](const StageCall &a, const StageCall &b) {
    return a.virtualIndex < b.virtualIndex;
  });
  for (auto [v, c] : llvm::enumerate(calls))
    if (c.virtualIndex != static_cast<int64_t>(v)) {
      c.call.emitError() << "pipe-build-stage-training: virtual stages must "
                            "be 0..N-1, each called once";
      return signalPassFailure();
    }
  int64_t numStages = calls.size();
  if (evaluate)
    for (int64_t v = 0; v < numStages; ++v)
      if (Operation *taken =
              module.lookupSymbol(("stage" + Twine(v) + "_E").str())) {
        taken->emitError() << "pipe-build-stage-training: evaluate builds "
                              "@stage"
                           << v << "_E, but the module already has it";
        return signalPassFailure();
      }

  // Edges: one per pipe.transfer (producer result -> consumer operand).
  DenseMap<Operation *, int64_t> callIndex;
  for (auto [v, c] : llvm::enumerate(calls))
    callIndex[c.call] = v;
  std::map<std::pair<int64_t, unsigned>, SmallVector<int64_t>> sendsOf;
  std::map<std::pair<int64_t, unsigned>, int64_t> recvOf;
  int64_t numEdges = 0;
  for (auto transfer : driver.getOps<TransferOp>()) {
    auto producer = transfer.getInput().getDefiningOp<func::CallOp>();
    if (!producer || !callIndex.count(producer) ||
        !transfer.getResult().hasOneUse()) {
      transfer.emitError() << "pipe-build-stage-training: a transfer must "
                              "carry a stage result to one stage call";
      return signalPassFailure();
    }
    OpOperand &use = *transfer.getResult().getUses().begin();
    auto consumer = dyn_cast<func::CallOp>(use.getOwner());
    if (!consumer || !callIndex.count(consumer) ||
        callIndex[consumer] <= callIndex[producer]) {
      transfer.emitError() << "pipe-build-stage-training: a transfer must go "
                              "to a later stage";
      return signalPassFailure();
    }
    int64_t e = numEdges++;
    sendsOf[{callIndex[producer],
             cast<OpResult>(transfer.getInput()).getResultNumber()}]
        .push_back(e);
    recvOf[{callIndex[consumer], use.getOperandNumber()}] = e;
  }
  auto ret = cast<func::ReturnOp>(driver.front().getTerminator());
  if (ret.getNumOperands() < 1 ||
      ret.getOperand(0).getDefiningOp() != calls.back().call.getOperation()) {
    driver.emitError() << "pipe-build-stage-training: the prediction (first "
                          "result) must come from the last stage";
    return signalPassFailure();
  }
  unsigned predictionResult = cast<OpResult>(ret.getOperand(0)).getResultNumber();
  auto predType = dyn_cast<RankedTensorType>(ret.getOperand(0).getType());
  if (!hasLabels && (!predType || !predType.hasStaticShape() ||
                     predType.getNumElements() != 1)) {
    driver.emitError() << "pipe-build-stage-training: --loss none trains the "
                          "first output as the loss, which must be a scalar; "
                          "it has type "
                       << ret.getOperand(0).getType();
    return signalPassFailure();
  }
  FailureOr<RankedTensorType> labelsType =
      !hasLabels ? FailureOr<RankedTensorType>(RankedTensorType())
      : predType ? nn::getLabelsType(*lossKind, predType)
                 : FailureOr<RankedTensorType>(failure());
  if (failed(labelsType)) {
    driver.emitError() << "pipe-build-stage-training: the loss does not apply "
                          "to the prediction "
                       << ret.getOperand(0).getType();
    return signalPassFailure();
  }

  // A weight read by several virtual stages of one rank (tied weights with
  // interleaving) has one accumulator `grad:<w>` on the rank, which every
  // reader's B adds into; only the first reader's U updates it, or the rank
  // would apply the update twice. (Readers on other ranks hold their own
  // copy; pipe-unroll-schedule sums their accumulators with
  // pipe.all_reduce_grad before the updates.)
  std::map<std::pair<std::string, int64_t>, int64_t> firstReaderOnRank;
  for (auto [v, c] : llvm::enumerate(calls))
    for (unsigned i = 0, e = c.callee.getNumArguments(); i < e; ++i) {
      auto arg = dyn_cast<BlockArgument>(c.call.getOperand(i));
      if (!arg || arg.getOwner() != &driver.front() ||
          !nn::isParamArgument(driver, arg.getArgNumber()) ||
          c.callee.getArgument(i).use_empty())
        continue;
      auto name = driver.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                      NNNames::kNameAttrName);
      if (name)
        firstReaderOnRank.insert(
            {{name.getValue().str(), c.stage.getIndex()}, (int64_t)v});
    }

  auto isFirstReaderOnRank = [&](func::FuncOp stageFn, unsigned i,
                                 int64_t rank, int64_t v) {
    auto name = stageFn.getArgAttrOfType<StringAttr>(i, NNNames::kNameAttrName);
    if (!name)
      return true;
    auto it = firstReaderOnRank.find({name.getValue().str(), rank});
    return it == firstReaderOnRank.end() || it->second == v;
  };

  OpBuilder b(ctx);
  SmallVector<Operation *> toErase{driver};
  int64_t dropoutsBefore = 0;
  // Gradient clipping: the weights each stage's U applies, for its N.
  SmallVector<SmallVector<nn::UpdateWeight>> updatedWeights;
  for (auto [v, c] : llvm::enumerate(calls)) {
    bool last = static_cast<int64_t>(v) == numStages - 1;
    func::FuncOp callee = c.callee;
    Block &body = callee.front();
    Location loc = callee.getLoc();

    // The training-mode stage function G(args..., [labels]) -> (sends...,
    // [loss], running stats'...).
    SmallVector<Type> argTypes(callee.getArgumentTypes());
    if (last && hasLabels)
      argTypes.push_back(*labelsType);
    // Dropout: a per-stage seed state advanced by each F; op k of the whole
    // model draws from seed + k, so the masks equal single-rank training's.
    bool hasDropout = nn::needsRandomSeed(body);
    auto seedType = RankedTensorType::get({}, b.getI64Type());
    if (hasDropout)
      argTypes.push_back(seedType);
    b.setInsertionPoint(driver);
    std::string base = ("stage" + Twine(v)).str();
    auto stageFn = func::FuncOp::create(b, loc, base,
                                        b.getFunctionType(argTypes, {}));
    SmallVector<bool> frozen(callee.getNumArguments(), false);
    for (unsigned i = 0, e = callee.getNumArguments(); i < e; ++i) {
      Value operand = c.call.getOperand(i);
      if (auto it = recvOf.find({v, i}); it != recvOf.end()) {
        stageFn.setArgAttr(i, "pipe.recv", b.getI64IntegerAttr(it->second));
        continue;
      }
      auto arg = dyn_cast<BlockArgument>(operand);
      if (!arg || arg.getOwner() != &driver.front()) {
        c.call.emitError() << "pipe-build-stage-training: operand " << i
                           << " is neither a model argument nor a transfer";
        return signalPassFailure();
      }
      DictionaryAttr attrs = driver.getArgAttrDict(arg.getArgNumber());
      stageFn.setArgAttrs(i, attrs);
      // nn-mark-trainable's decision: no gradient, not in the update.
      if (driver.getArgAttr(arg.getArgNumber(), NNNames::kFrozenAttrName))
        frozen[i] = true;
      stageFn.removeArgAttr(i, PipeDialect::kStageAttrName);
      if (!nn::isParamArgument(driver, arg.getArgNumber())) {
        auto name = driver.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                        NNNames::kNameAttrName);
        stageFn.setArgAttr(i, "pipe.input",
                           name ? name : b.getStringAttr("arg" + Twine(i)));
        stageFn.setArgAttr(i, NNNames::kNoGradAttrName, b.getUnitAttr());
      }
    }
    if (last && hasLabels) {
      unsigned i = callee.getNumArguments();
      stageFn.setArgAttr(i, "pipe.input", b.getStringAttr(labelsName));
      stageFn.setArgAttr(i, NNNames::kNoGradAttrName, b.getUnitAttr());
    }
    if (evaluate)
      buildEvalStage(b, c, stageFn, sendsOf, v,
                     last ? static_cast<int64_t>(predictionResult) : -1,
                     *lossKind, hasLabels);
    std::string seedName = "rng_seed:" + base;
    unsigned seedIndex = argTypes.size() - 1;
    if (hasDropout) {
      stageFn.setArgAttr(seedIndex, NNNames::kNameAttrName,
                         b.getStringAttr(seedName));
      stageFn.setArgAttr(seedIndex, NNNames::kRoleAttrName,
                         b.getStringAttr("state"));
    }
    Block *entry = stageFn.addEntryBlock();
    IRMapping mapping;
    for (unsigned i = 0, e = callee.getNumArguments(); i < e; ++i)
      mapping.map(callee.getArgument(i), entry->getArgument(i));
    b.setInsertionPointToStart(entry);
    SmallVector<std::pair<Value, Value>> statUpdates;
    Value rngSeed = hasDropout ? entry->getArgument(seedIndex) : Value();
    nn::cloneInTrainingMode(b, body, mapping, rngSeed, statUpdates,
                            dropoutsBefore);
    dropoutsBefore += nn::countRandomDropouts(body);
    SmallVector<Value> results;
    SmallVector<NamedAttrList> resultAttrs;
    addSendsAndLoss(
        b, loc, sendsOf, v, cast<func::ReturnOp>(body.getTerminator()), mapping,
        last ? static_cast<int64_t>(predictionResult) : -1, *lossKind,
        last && hasLabels ? entry->getArgument(callee.getNumArguments())
                          : Value(),
        results, resultAttrs);
    for (auto [operand, updated] : statUpdates) {
      auto arg = dyn_cast<BlockArgument>(operand);
      if (!arg || arg.getOwner() != &body ||
          !nn::isParamArgument(stageFn, arg.getArgNumber()))
        continue;
      frozen[arg.getArgNumber()] = true;
      auto name = stageFn.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                       NNNames::kNameAttrName);
      results.push_back(updated);
      NamedAttrList attrs;
      attrs.set(NNNames::kNameAttrName,
                b.getStringAttr(name.getValue() + ".next"));
      attrs.set(NNNames::kUpdatesAttrName, name);
      resultAttrs.push_back(attrs);
    }
    if (hasDropout) {
      results.push_back(nn::AddOp::create(
          b, loc, rngSeed,
          nn::ConstantOp::create(
              b, loc,
              DenseElementsAttr::get(seedType, b.getI64IntegerAttr(1)))));
      NamedAttrList attrs;
      attrs.set(NNNames::kNameAttrName, b.getStringAttr(seedName + ".next"));
      attrs.set(NNNames::kUpdatesAttrName, b.getStringAttr(seedName));
      resultAttrs.push_back(attrs);
    }
    for (unsigned i = 0; i < frozen.size(); ++i)
      if (frozen[i])
        stageFn.setArgAttr(i, NNNames::kFrozenAttrName, b.getUnitAttr());
    func::ReturnOp::create(b, loc, results);
    stageFn.setType(
        b.getFunctionType(argTypes, ValueRange(results).getTypes()));
    for (auto [j, attrs] : llvm::enumerate(resultAttrs))
      stageFn.setResultAttrs(j, attrs.getDictionary(ctx));

    // Forward and backward.
    nn::AutodiffOptions options;
    options.inputGradients = true;
    options.splitBackward = splitBackward;
    FailureOr<nn::DifferentiatedFunctions> diff =
        nn::differentiateFunction(stageFn, options);
    if (failed(diff))
      return signalPassFailure();
    // Replicated stages: the replicas' accumulators are summed before the
    // update, so each replica's share is 1/R of the step's mean.
    double seed =
        1.0 / (static_cast<double>(replicas.getValue()) *
               static_cast<double>(microbatchesPerUpdate > 0
                                       ? microbatchesPerUpdate.getValue()
                                       : microbatches.getValue()));
    auto stageAttr = c.stage;
    auto finish = [&](func::FuncOp fn, StringRef letter) {
      fn.setSymName((base + "_" + letter).str());
      fn->setAttr(PipeDialect::kStageAttrName, stageAttr);
    };
    finish(diff->forward, "F");
    if (splitBackward) {
      markBackward(diff->backwardInput, stageFn, seed);
      markBackward(diff->backwardWeight, stageFn, seed);
      accumulateWeightGradients(diff->backwardWeight, stageFn);
      finish(diff->backwardInput, "B");
      finish(diff->backwardWeight, "W");
    } else {
      markBackward(diff->backward, stageFn, seed);
      accumulateWeightGradients(diff->backward, stageFn);
      finish(diff->backward, "B");
    }

    // The update of the stage's trainable weights.
    SmallVector<nn::UpdateWeight> weights;
    for (unsigned i = 0, e = callee.getNumArguments(); i < e; ++i)
      if (nn::isParamArgument(stageFn, i) && !frozen[i] &&
          !callee.getArgument(i).use_empty() &&
          isa<FloatType>(getElementTypeOrSelf(stageFn.getArgumentTypes()[i])) &&
          isFirstReaderOnRank(stageFn, i, c.stage.getIndex(), v))
        weights.push_back(
            {stageFn.getArgAttrOfType<StringAttr>(i, NNNames::kNameAttrName)
                 .getValue()
                 .str(),
             stageFn.getArgumentTypes()[i], stageFn.getArgAttrDict(i)});
    b.setInsertionPoint(driver);
    func::FuncOp update = nn::buildOptimizerUpdate(
        b, loc, base + "_U", weights, opt, "step:" + base,
        clips && !weights.empty() ? StringRef(PipeDialect::kGradNormBuffer)
                                  : StringRef());
    updatedWeights.push_back(weights);
    update->setAttr(PipeDialect::kStageAttrName, stageAttr);
    // U also clears the gradient accumulators it consumed, so asynchronous
    // schedules (several updates per step) start each window from zero.
    {
      auto ret = cast<func::ReturnOp>(update.front().getTerminator());
      b.setInsertionPoint(ret);
      SmallVector<Value> results(ret.getOperands());
      SmallVector<DictionaryAttr> resultAttrs;
      for (unsigned j = 0; j < update.getNumResults(); ++j)
        resultAttrs.push_back(update.getResultAttrDict(j));
      for (unsigned i = 0, e = update.getNumArguments(); i < e; ++i) {
        auto role =
            update.getArgAttrOfType<StringAttr>(i, NNNames::kRoleAttrName);
        auto name = update.getArgAttrOfType<StringAttr>(i,
                                                        NNNames::kNameAttrName);
        // The gradient norm is every U's of the rank, and read-only.
        if (!role || role.getValue() != "grad" ||
            name.getValue() == PipeDialect::kGradNormBuffer)
          continue;
        results.push_back(
            constantLike(b, loc, update.getArgumentTypes()[i], 0.0));
        resultAttrs.push_back(b.getDictionaryAttr(
            {b.getNamedAttr(NNNames::kNameAttrName,
                            b.getStringAttr(name.getValue() + ".next")),
             b.getNamedAttr(NNNames::kUpdatesAttrName, name)}));
      }
      func::ReturnOp::create(b, ret.getLoc(), results);
      ret.erase();
      update.setType(b.getFunctionType(update.getArgumentTypes(),
                                       ValueRange(results).getTypes()));
      for (auto [j, attrs] : llvm::enumerate(resultAttrs))
        update.setResultAttrs(j, attrs);
    }
    toErase.push_back(stageFn);
    toErase.push_back(callee);
  }
  if (clips &&
      failed(buildGradientNorms(b, calls, updatedWeights, stageReplicas)))
    return signalPassFailure();
  for (Operation *op : toErase)
    op->erase();
}
