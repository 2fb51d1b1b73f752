//===- Recompute.cpp - pipe-recompute (activation recomputation) ----------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Activation recomputation of a stage (Passes.td has the contract): its F
// stashes the values its residuals are computed from (received edges, input
// slices, the Dropout seed it advances) instead of the residuals, and its B
// starts with a copy of the forward that rebuilds them. docs/Pipe.md,
// "Activation recomputation".
//
//===----------------------------------------------------------------------===//

#include "pipedream/Dialect/NN/IR/NNDialect.h"
#include "pipedream/Dialect/NN/IR/NNOps.h"
#include "pipedream/Dialect/Pipe/IR/PipeOps.h"
#include "pipedream/Dialect/Pipe/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"

#include <map>
#include <set>

namespace pipedream::pipe {
#define GEN_PASS_DEF_RECOMPUTESTAGESPASS
#include "pipedream/Dialect/Pipe/Transforms/Passes.h.inc"
} // namespace pipedream::pipe

using namespace mlir;
using namespace pipedream::pipe;
using NNNames = pipedream::nn::NNDialect;

namespace {

struct RecomputeStagesPass
    : pipedream::pipe::impl::RecomputeStagesPassBase<RecomputeStagesPass> {
  using Base::Base;
  void runOnOperation() override;
};

std::optional<int64_t> residualIndex(DictionaryAttr attrs) {
  if (!attrs)
    return std::nullopt;
  if (auto index = attrs.getAs<IntegerAttr>(NNNames::kResidualAttrName))
    return index.getInt();
  return std::nullopt;
}

/// Erases the ops of `block` that nothing uses and that have no side
/// effects (last to first, so a chain goes in one sweep).
void eraseDeadOps(Block &block) {
  SmallVector<Operation *> ops;
  for (Operation &op : block.without_terminator())
    ops.push_back(&op);
  for (Operation *op : llvm::reverse(ops))
    if (isOpTriviallyDead(op))
      op->erase();
}

/// Rewrites stage `forward` / `backward` (and `weight`, the W of a split
/// backward, or null) for recomputation.
LogicalResult recomputeStage(func::FuncOp forward, func::FuncOp backward,
                             func::FuncOp weight) {
  MLIRContext *ctx = forward.getContext();
  OpBuilder b(ctx);
  Block &fBody = forward.front();
  Block &bBody = backward.front();
  auto fRet = cast<func::ReturnOp>(fBody.getTerminator());

  // The forward's residual results, by residual number.
  std::map<int64_t, unsigned> residualResult;
  for (unsigned j = 0, e = forward.getNumResults(); j < e; ++j)
    if (std::optional<int64_t> r = residualIndex(forward.getResultAttrDict(j)))
      if (!residualResult.insert({*r, j}).second)
        return forward.emitError()
               << "pipe-recompute: residual " << *r << " is returned twice";
  // The forward's state it advances (`nn.updates` of a state argument).
  llvm::StringSet<> updated;
  for (unsigned j = 0, e = forward.getNumResults(); j < e; ++j)
    if (auto name = forward.getResultAttrOfType<StringAttr>(
            j, NNNames::kUpdatesAttrName))
      updated.insert(name.getValue());

  // 1. The forward's arguments, appended to B for now; 2. its body, cloned
  // at the start of B.
  unsigned numOriginal = backward.getNumArguments();
  for (unsigned i = 0, e = forward.getNumArguments(); i < e; ++i)
    (void)backward.insertArgument(backward.getNumArguments(),
                                  forward.getArgumentTypes()[i],
                                  forward.getArgAttrDict(i), forward.getLoc());
  IRMapping mapping;
  for (unsigned i = 0, e = forward.getNumArguments(); i < e; ++i)
    mapping.map(forward.getArgument(i), backward.getArgument(numOriginal + i));
  b.setInsertionPointToStart(&bBody);
  for (Operation &op : fBody.without_terminator())
    b.clone(op, mapping);

  // 2b. A split backward (zb schedules): W reads residuals too. B now has
  // them (recomputed), so it passes the ones W reads on as new carries
  // (`nn.carry`, stashed from B to W like the others) and W's residual
  // arguments become carry arguments: W runs on the recomputed activations,
  // which equal F's (same inputs, weights and Dropout seeds).
  if (weight) {
    int64_t nextCarry = 0;
    for (unsigned j = 0, e = backward.getNumResults(); j < e; ++j)
      if (auto c = backward.getResultAttrOfType<IntegerAttr>(
              j, NNNames::kCarryAttrName))
        nextCarry = std::max<int64_t>(nextCarry, c.getInt() + 1);
    std::map<int64_t, int64_t> carryOfResidual;
    SmallVector<Value> carried;
    SmallVector<int64_t> carriedIndex;
    for (unsigned i = 0, e = weight.getNumArguments(); i < e; ++i) {
      std::optional<int64_t> r = residualIndex(weight.getArgAttrDict(i));
      if (!r)
        continue;
      auto it = residualResult.find(*r);
      if (it == residualResult.end())
        return weight.emitError()
               << "pipe-recompute: argument " << i << " restores residual "
               << *r << ", which @" << forward.getSymName()
               << " does not return";
      Value recomputed = mapping.lookup(fRet.getOperand(it->second));
      if (recomputed.getType() != weight.getArgumentTypes()[i])
        return weight.emitError()
               << "pipe-recompute: residual " << *r << " has type "
               << weight.getArgumentTypes()[i] << " here but "
               << recomputed.getType() << " in @" << forward.getSymName();
      auto [slot, inserted] = carryOfResidual.insert({*r, nextCarry});
      if (inserted) {
        ++nextCarry;
        carried.push_back(recomputed);
        carriedIndex.push_back(slot->second);
      }
      weight.removeArgAttr(i, NNNames::kResidualAttrName);
      weight.setArgAttr(i, NNNames::kCarryAttrName,
                        b.getI64IntegerAttr(slot->second));
    }
    if (!carried.empty()) {
      auto bRet = cast<func::ReturnOp>(bBody.getTerminator());
      SmallVector<Value> operands(bRet.getOperands());
      operands.append(carried.begin(), carried.end());
      b.setInsertionPoint(bRet);
      func::ReturnOp::create(b, bRet.getLoc(), operands);
      bRet.erase();
      for (auto [k, value] : llvm::enumerate(carried))
        if (failed(backward.insertResult(
                backward.getNumResults(), value.getType(),
                b.getDictionaryAttr({b.getNamedAttr(
                    NNNames::kCarryAttrName,
                    b.getI64IntegerAttr(carriedIndex[k]))}))))
          return backward.emitError()
                 << "pipe-recompute: cannot add the carries for @"
                 << weight.getSymName();
    }
  }

  // 3. B's residual arguments are the recomputed values.
  llvm::BitVector erase(backward.getNumArguments());
  for (unsigned i = 0; i < numOriginal; ++i) {
    std::optional<int64_t> r = residualIndex(backward.getArgAttrDict(i));
    if (!r)
      continue;
    auto it = residualResult.find(*r);
    if (it == residualResult.end())
      return backward.emitError()
             << "pipe-recompute: argument " << i << " restores residual " << *r
             << ", which @" << forward.getSymName() << " does not return";
    Value recomputed = mapping.lookup(fRet.getOperand(it->second));
    if (recomputed.getType() != backward.getArgumentTypes()[i])
      return backward.emitError()
             << "pipe-recompute: residual " << *r << " has type "
             << backward.getArgumentTypes()[i] << " here but "
             << recomputed.getType() << " in @" << forward.getSymName();
    backward.getArgument(i).replaceAllUsesWith(recomputed);
    erase.set(i);
  }
  // The forward value each op result of the copy stands for (what F
  // returns when the copy's value is stashed instead of recomputed).
  DenseMap<Value, Value> forwardValueOf;
  for (Operation &op : fBody.without_terminator())
    for (Value result : op.getResults())
      forwardValueOf[mapping.lookup(result)] = result;
  eraseDeadOps(bBody);

  // 4. What the copy still reads: values to stash (received edges, input
  // slices, advanced state) or bound buffers B binds (weights; reused when
  // B already binds the same name).
  llvm::StringMap<unsigned> boundByName;
  for (unsigned i = 0; i < numOriginal; ++i)
    if (isBoundArgument(backward, i) && !erase.test(i))
      if (auto name = backward.getArgAttrOfType<StringAttr>(
              i, NNNames::kNameAttrName))
        boundByName.try_emplace(name.getValue(), i);
  // (value F returns, value of B it replaces)
  SmallVector<std::pair<Value, Value>> stashed;
  for (unsigned i = 0, e = forward.getNumArguments(); i < e; ++i) {
    BlockArgument arg = backward.getArgument(numOriginal + i);
    if (arg.use_empty()) {
      erase.set(numOriginal + i);
      continue;
    }
    auto name =
        forward.getArgAttrOfType<StringAttr>(i, NNNames::kNameAttrName);
    if (!isBoundArgument(forward, i)) {
      stashed.push_back({forward.getArgument(i), arg});
      erase.set(numOriginal + i);
      continue;
    }
    if (name && updated.contains(name.getValue())) {
      // State F advances in place (the Dropout seed, BatchNorm's running
      // statistics): its buffer holds the next value by B's time, and F
      // cannot return the argument it updates in place. So the results of
      // the ops that read it (the seeds of the masks) are stashed, and those
      // ops are not repeated; BatchNorm's output does not read it (below).
      SetVector<Operation *> users;
      for (Operation *user : arg.getUsers())
        users.insert(user);
      for (Operation *user : users) {
        // Training-mode BatchNorm normalizes with the batch's statistics:
        // only the new running statistics read the old ones, and the copy
        // does not use them. The operand becomes a zero constant.
        if (auto bn = dyn_cast<pipedream::nn::BatchNormTrainOp>(user)) {
          bool mean = bn.getRunningMean() == arg, var = bn.getRunningVar() == arg;
          if ((!mean || bn.getNewRunningMean().use_empty()) &&
              (!var || bn.getNewRunningVar().use_empty()) &&
              arg != bn.getInput() && arg != bn.getScale() &&
              arg != bn.getBias()) {
            OpBuilder before(user);
            Value zero = pipedream::nn::ConstantOp::create(
                before, user->getLoc(),
                DenseElementsAttr::get(cast<ShapedType>(arg.getType()),
                                       before.getZeroAttr(getElementTypeOrSelf(
                                           arg.getType()))));
            user->replaceUsesOfWith(arg, zero);
            continue;
          }
        }
        for (Value result : user->getResults()) {
          Value original = forwardValueOf.lookup(result);
          if (!original || user->getNumRegions() != 0)
            return user->emitError()
                   << "pipe-recompute: cannot stash what this op computes "
                      "from state '"
                   << name.getValue() << "'";
          if (!result.use_empty())
            stashed.push_back({original, result});
        }
      }
      erase.set(numOriginal + i);
      continue;
    }
    if (name) {
      auto it = boundByName.find(name.getValue());
      if (it != boundByName.end()) {
        arg.replaceAllUsesWith(backward.getArgument(it->second));
        erase.set(numOriginal + i);
        continue;
      }
    }
    // A bound buffer B did not bind yet: keeps the forward's attributes.
  }
  for (auto [k, entry] : llvm::enumerate(stashed)) {
    Value replaced = entry.second;
    (void)backward.insertArgument(
        backward.getNumArguments(), replaced.getType(),
        b.getDictionaryAttr({b.getNamedAttr(NNNames::kResidualAttrName,
                                            b.getI64IntegerAttr(k))}),
        forward.getLoc());
    replaced.replaceAllUsesWith(
        backward.getArgument(backward.getNumArguments() - 1));
  }
  eraseDeadOps(bBody);
  erase.resize(backward.getNumArguments());
  for (unsigned i = 0; i < erase.size(); ++i)
    if (erase.test(i) && !backward.getArgument(i).use_empty())
      return backward.emitError()
             << "pipe-recompute: internal error: argument " << i
             << " is still used";
  if (failed(backward.eraseArguments(erase)))
    return backward.emitError() << "pipe-recompute: cannot erase arguments";

  // 5. F returns the stashed values instead of its residuals.
  SmallVector<Value> results;
  SmallVector<DictionaryAttr> resultAttrs;
  for (unsigned j = 0, e = forward.getNumResults(); j < e; ++j) {
    if (residualIndex(forward.getResultAttrDict(j)))
      continue;
    results.push_back(fRet.getOperand(j));
    resultAttrs.push_back(forward.getResultAttrDict(j));
  }
  for (auto [k, entry] : llvm::enumerate(stashed)) {
    results.push_back(entry.first);
    resultAttrs.push_back(
        b.getDictionaryAttr({b.getNamedAttr(NNNames::kResidualAttrName,
                                            b.getI64IntegerAttr(k))}));
  }
  b.setInsertionPoint(fRet);
  func::ReturnOp::create(b, fRet.getLoc(), results);
  fRet.erase();
  forward.setType(b.getFunctionType(forward.getArgumentTypes(),
                                    ValueRange(results).getTypes()));
  for (auto [j, attrs] : llvm::enumerate(resultAttrs))
    forward.setResultAttrs(j, attrs);
  eraseDeadOps(fBody);
  return success();
}

} // namespace

void RecomputeStagesPass::runOnOperation() {
  ModuleOp module = getOperation();
  Attribute listed = module->getAttr("pipe.recompute");
  std::set<int64_t> stages;
  if (listed) {
    auto array = dyn_cast<DenseI64ArrayAttr>(listed);
    if (!array) {
      module.emitError() << "pipe-recompute: pipe.recompute must be an "
                            "array<i64: ...> of virtual stages, got "
                         << listed;
      return signalPassFailure();
    }
    for (int64_t v : array.asArrayRef()) {
      if (v < 0) {
        module.emitError() << "pipe-recompute: pipe.recompute lists stage "
                           << v << "; stages are 0 or more";
        return signalPassFailure();
      }
      stages.insert(v);
    }
  }
  if (all)
    for (auto fn : module.getOps<func::FuncOp>()) {
      StringRef name = fn.getSymName();
      int64_t v;
      if (name.consume_front("stage") && name.consume_back("_F") &&
          !name.getAsInteger(10, v))
        stages.insert(v);
    }
  module->removeAttr("pipe.recompute");
  for (int64_t v : stages) {
    std::string base = "stage" + std::to_string(v);
    auto forward = module.lookupSymbol<func::FuncOp>(base + "_F");
    auto backward = module.lookupSymbol<func::FuncOp>(base + "_B");
    if (!forward || !backward || forward.isDeclaration() ||
        backward.isDeclaration()) {
      module.emitError() << "pipe-recompute: stage " << v
                         << " has no @" << base << "_F and @" << base
                         << "_B with bodies (run pipe-build-stage-training "
                            "first)";
      return signalPassFailure();
    }
    auto weight = module.lookupSymbol<func::FuncOp>(base + "_W");
    if (weight && weight.isDeclaration()) {
      weight.emitError() << "pipe-recompute: stage " << v << "'s @" << base
                         << "_W has no body";
      return signalPassFailure();
    }
    if (failed(recomputeStage(forward, backward, weight)))
      return signalPassFailure();
  }
}
