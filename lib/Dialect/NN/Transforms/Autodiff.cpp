//===- Autodiff.cpp - reverse-mode differentiation of nn functions --------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Reverse mode in two steps:
//
// 1. The joint function: the forward ops are cloned, then the ops are
//    visited in reverse and each one's GradientOpInterface rule appends its
//    vector-Jacobian product. Only *active* ops get a rule call: ops with an
//    operand that depends on a differentiated argument ("varied") and a
//    result whose gradient is known. Gradients of values with several uses
//    are summed with nn.add as they arrive.
//
// 2. The split: every op before the first rule-built op is forward, the
//    rest backward (including recomputations a rule does from forward
//    values). The forward values the backward reads are the residuals,
//    except weights, which the backward takes as arguments, and values it
//    rematerializes: operand-free ops (constants) and *weight-derived*
//    values, computed from weights and constants alone by memory-bound ops
//    (a transposed, reshaped or cast weight: no more arithmetic than bytes
//    moved). Saving those would make a pipeline stage stash a copy of them
//    per micro-batch in flight (the transposed copy of every weight a GEMM
//    reads) and keep the forward's GEMM from reading the weight in place.
//    Weights the function itself updates (running statistics, `nn.updates`)
//    are not a base for that: their value changes after the forward. Splitting the
//    backward into B (input gradients) and W (weight gradients) is a
//    backward slice from each group of returned gradients; values of B that
//    W reads become carries.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Dialect/NN/Transforms/Autodiff.h"

#include "pipedream/Dialect/NN/IR/NNDialect.h"
#include "pipedream/Dialect/NN/IR/NNInterfaces.h"
#include "pipedream/Dialect/NN/IR/NNOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/RegionUtils.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;

namespace pipedream::nn {

namespace {
using Names = NNDialect;

bool isFloatTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && isa<FloatType>(tensor.getElementType());
}
} // namespace

bool isParamArgument(func::FuncOp func, unsigned index) {
  return static_cast<bool>(func.getArgAttr(index, Names::kParamAttrName));
}

SmallVector<unsigned>
getDifferentiableArguments(func::FuncOp func, const AutodiffOptions &options) {
  SmallVector<unsigned> wrt;
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
    if (!isFloatTensor(func.getArgument(i).getType()))
      continue;
    if (func.getArgAttr(i, Names::kNoGradAttrName) ||
        func.getArgAttr(i, Names::kFrozenAttrName))
      continue;
    if (!options.inputGradients && !isParamArgument(func, i))
      continue;
    wrt.push_back(i);
  }
  return wrt;
}

/// A float zero tensor of `type`.
static Value createZeros(OpBuilder &builder, Location loc,
                         RankedTensorType type) {
  auto attr = DenseElementsAttr::get(
      type, builder.getFloatAttr(type.getElementType(), 0.0));
  return ConstantOp::create(builder, loc, attr);
}

FailureOr<JointFunction>
buildJointFunction(func::FuncOp func, StringRef name, ArrayRef<unsigned> wrt,
                   std::optional<ArrayRef<unsigned>> ofResults) {
  if (func.isDeclaration() || !func.getBody().hasOneBlock())
    return func.emitError("nn-autodiff: function '")
           << func.getSymName() << "' must have a body of one block";
  Block &body = func.front();
  auto ret = dyn_cast<func::ReturnOp>(body.getTerminator());
  if (!ret)
    return func.emitError("nn-autodiff: function '")
           << func.getSymName() << "' must end with func.return";

  MLIRContext *ctx = func.getContext();
  unsigned numArgs = func.getNumArguments();
  unsigned numResults = func.getNumResults();

  SmallVector<unsigned> floatResults;
  for (unsigned j = 0; j < numResults; ++j) {
    if (!isFloatTensor(func.getResultTypes()[j]))
      continue;
    if (ofResults && !llvm::is_contained(*ofResults, j))
      continue;
    floatResults.push_back(j);
  }

  SmallVector<Type> argTypes(func.getArgumentTypes());
  for (unsigned j : floatResults)
    argTypes.push_back(func.getResultTypes()[j]);
  SmallVector<Type> resultTypes(func.getResultTypes());
  for (unsigned k : wrt)
    resultTypes.push_back(func.getArgument(k).getType());

  OpBuilder builder(ctx);
  builder.setInsertionPointAfter(func);
  auto joint = func::FuncOp::create(builder, func.getLoc(), name,
                                    builder.getFunctionType(argTypes,
                                                            resultTypes));
  joint.setPrivate();
  for (unsigned i = 0; i < numArgs; ++i)
    joint.setArgAttrs(i, func.getArgAttrDict(i));
  for (auto [n, j] : llvm::enumerate(floatResults))
    joint.setArgAttr(numArgs + n, Names::kGradOfResultAttrName,
                     builder.getI64IntegerAttr(j));
  for (unsigned j = 0; j < numResults; ++j)
    joint.setResultAttrs(j, func.getResultAttrDict(j));
  for (auto [n, k] : llvm::enumerate(wrt))
    joint.setResultAttr(numResults + n, Names::kGradOfAttrName,
                        builder.getI64IntegerAttr(k));

  Block *entry = joint.addEntryBlock();
  IRMapping mapping;
  for (unsigned i = 0; i < numArgs; ++i)
    mapping.map(func.getArgument(i), entry->getArgument(i));
  builder.setInsertionPointToStart(entry);
  SmallVector<Operation *> forwardOps, originalOps;
  for (Operation &op : body.without_terminator()) {
    forwardOps.push_back(builder.clone(op, mapping));
    originalOps.push_back(&op);
  }

  // Values that depend on a differentiated argument.
  DenseSet<Value> varied;
  for (unsigned k : wrt)
    varied.insert(entry->getArgument(k));
  for (Operation *op : forwardOps) {
    if (llvm::none_of(op->getOperands(),
                      [&](Value v) { return varied.contains(v); }))
      continue;
    for (Value result : op->getResults())
      if (isFloatTensor(result.getType()))
        varied.insert(result);
  }

  DenseMap<Value, Value> grads;
  Operation *firstBackwardOp = nullptr;
  auto noteBackward = [&]() {
    // The first op created after the forward clones.
    if (!firstBackwardOp && !forwardOps.empty() &&
        forwardOps.back()->getNextNode())
      firstBackwardOp = forwardOps.back()->getNextNode();
    if (!firstBackwardOp && forwardOps.empty() && !entry->empty())
      firstBackwardOp = &entry->front();
  };
  auto accumulate = [&](Value value, Value grad) {
    auto it = grads.find(value);
    if (it == grads.end()) {
      grads[value] = grad;
      return;
    }
    it->second = AddOp::create(builder, value.getLoc(), it->second, grad);
    noteBackward();
  };

  builder.setInsertionPointToEnd(entry);
  for (auto [n, j] : llvm::enumerate(floatResults)) {
    Value result = mapping.lookup(ret.getOperand(j));
    if (varied.contains(result))
      accumulate(result, entry->getArgument(numArgs + n));
  }

  for (auto [op, original] :
       llvm::reverse(llvm::zip_equal(forwardOps, originalOps))) {
    SmallVector<Value> resultGrads;
    bool anyGrad = false;
    for (Value result : op->getResults()) {
      Value grad = grads.lookup(result);
      anyGrad |= static_cast<bool>(grad);
      resultGrads.push_back(grad);
    }
    if (!anyGrad)
      continue;
    auto rule = dyn_cast<GradientOpInterface>(op);
    if (!rule) {
      InFlightDiagnostic diag =
          original->emitError("nn-autodiff: '")
          << op->getName()
          << "' has no derivative rule, but a gradient flows through it";
      joint.erase();
      return diag;
    }
    SmallVector<Value> operandGrads;
    if (failed(rule.buildGradient(builder, resultGrads, operandGrads))) {
      joint.erase();
      return failure();
    }
    noteBackward();
    if (operandGrads.size() != op->getNumOperands()) {
      InFlightDiagnostic diag = original->emitError("nn-autodiff: the derivative rule of '")
                                << op->getName() << "' returned "
                                << operandGrads.size() << " gradients for "
                                << op->getNumOperands() << " operands";
      joint.erase();
      return diag;
    }
    for (auto [operand, grad] : llvm::zip(op->getOperands(), operandGrads)) {
      if (!grad || !varied.contains(operand))
        continue;
      if (grad.getType() != operand.getType()) {
        InFlightDiagnostic diag =
            original->emitError("nn-autodiff: the derivative rule of '")
            << op->getName() << "' built a gradient of type "
            << grad.getType() << " for an operand of type "
            << operand.getType();
        joint.erase();
        return diag;
      }
      accumulate(operand, grad);
    }
  }

  SmallVector<Value> returned;
  for (Value v : ret.getOperands())
    returned.push_back(mapping.lookup(v));
  for (unsigned k : wrt) {
    Value arg = entry->getArgument(k);
    Value grad = grads.lookup(arg);
    if (!grad) {
      grad = createZeros(builder, joint.getLoc(),
                         cast<RankedTensorType>(arg.getType()));
      noteBackward();
    }
    returned.push_back(grad);
  }
  func::ReturnOp::create(builder, ret.getLoc(), returned);

  JointFunction result;
  result.func = joint;
  result.firstBackwardOp = firstBackwardOp;
  result.numResultGrads = floatResults.size();
  return result;
}

namespace {

/// Clones `ops` (in order) into a new function `name` after `after`. `args`
/// lists the joint values that become the function's arguments, `results`
/// the joint values it returns; the weight-derived forward ops in `remat`
/// (in forward order) are cloned at the top.
func::FuncOp cloneIntoFunction(OpBuilder &builder, Operation *after,
                               StringRef name, Location loc,
                               ArrayRef<Value> args,
                               ArrayRef<Operation *> remat,
                               ArrayRef<Operation *> ops,
                               ArrayRef<Value> results) {
  SmallVector<Type> argTypes, resultTypes;
  for (Value v : args)
    argTypes.push_back(v.getType());
  for (Value v : results)
    resultTypes.push_back(v.getType());
  builder.setInsertionPointAfter(after);
  auto func = func::FuncOp::create(
      builder, loc, name, builder.getFunctionType(argTypes, resultTypes));
  Block *entry = func.addEntryBlock();
  IRMapping mapping;
  for (auto [value, arg] : llvm::zip(args, entry->getArguments()))
    mapping.map(value, arg);
  builder.setInsertionPointToStart(entry);
  for (Operation *op : remat)
    builder.clone(*op, mapping);
  for (Operation *op : ops)
    builder.clone(*op, mapping);
  SmallVector<Value> mapped;
  for (Value v : results)
    mapped.push_back(mapping.lookupOrDefault(v));
  func::ReturnOp::create(builder, loc, mapped);
  return func;
}

} // namespace

FailureOr<DifferentiatedFunctions>
differentiateFunction(func::FuncOp func, const AutodiffOptions &options) {
  StringRef base = func.getSymName();
  auto module = func->getParentOfType<ModuleOp>();
  SmallVector<std::string> names = {(base + "_forward").str()};
  if (options.splitBackward) {
    names.push_back((base + "_backward_input").str());
    names.push_back((base + "_backward_weight").str());
  } else {
    names.push_back((base + "_backward").str());
  }
  for (const std::string &name : names)
    if (module && SymbolTable::lookupSymbolIn(module, name))
      return func.emitError("nn-autodiff: symbol '")
             << name << "' already exists";

  SmallVector<unsigned> wrt = getDifferentiableArguments(func, options);
  FailureOr<JointFunction> built =
      buildJointFunction(func, (base + "_joint").str(), wrt);
  if (failed(built))
    return failure();
  func::FuncOp joint = built->func;
  Block &entry = joint.front();
  unsigned numArgs = func.getNumArguments();
  unsigned numResults = func.getNumResults();
  auto jointRet = cast<func::ReturnOp>(entry.getTerminator());

  // Split the body at the first backward op, after dropping backward ops
  // whose results nothing reads (a rule builds the gradient of every
  // operand; some are not needed): they would keep residuals alive.
  DenseSet<Operation *> forwardSet;
  for (Operation &op : entry.without_terminator()) {
    if (&op == built->firstBackwardOp)
      break;
    forwardSet.insert(&op);
  }
  {
    SmallVector<Operation *> reversed;
    for (Operation &op : entry.without_terminator())
      if (!forwardSet.contains(&op))
        reversed.push_back(&op);
    for (Operation *op : llvm::reverse(reversed))
      if (isOpTriviallyDead(op))
        op->erase();
  }
  SmallVector<Operation *> forwardOps, backwardOps;
  for (Operation &op : entry.without_terminator())
    (forwardSet.contains(&op) ? forwardOps : backwardOps).push_back(&op);
  DenseSet<Operation *> backwardSet(backwardOps.begin(), backwardOps.end());
  DenseMap<Operation *, unsigned> forwardIndex;
  for (auto [i, op] : llvm::enumerate(forwardOps))
    forwardIndex[op] = i;

  auto isParam = [&](Value v) {
    auto arg = dyn_cast<BlockArgument>(v);
    return arg && arg.getArgNumber() < numArgs &&
           isParamArgument(func, arg.getArgNumber());
  };
  auto isForwardValue = [&](Value v) {
    if (auto arg = dyn_cast<BlockArgument>(v))
      return arg.getArgNumber() < numArgs;
    return !backwardSet.contains(v.getDefiningOp());
  };

  // Weight-derived forward ops (the file comment): operand-free ops, and
  // memory-bound ops (flops <= bytes, CostOpInterface) without regions or
  // memory effects whose operands are weights the function does not update
  // or weight-derived values. One pass in forward order.
  llvm::StringSet<> updatedWeights;
  for (unsigned j = 0; j < numResults; ++j)
    if (auto name = func.getResultAttrOfType<StringAttr>(
            j, Names::kUpdatesAttrName))
      updatedWeights.insert(name.getValue());
  auto isStableParam = [&](Value v) {
    if (!isParam(v))
      return false;
    auto name = func.getArgAttrOfType<StringAttr>(
        cast<BlockArgument>(v).getArgNumber(), Names::kNameAttrName);
    return !name || !updatedWeights.contains(name.getValue());
  };
  DenseSet<Operation *> weightDerived;
  for (Operation *op : forwardOps) {
    if (op->getNumOperands() == 0) {
      weightDerived.insert(op);
      continue;
    }
    auto cost = dyn_cast<CostOpInterface>(op);
    if (!cost || op->getNumRegions() != 0 || op->getNumResults() == 0 ||
        !isMemoryEffectFree(op) ||
        cost.getForwardFlops() > cost.getForwardBytes())
      continue;
    bool derived = llvm::all_of(op->getOperands(), [&](Value v) {
      if (Operation *def = v.getDefiningOp())
        return weightDerived.contains(def);
      return isStableParam(v);
    });
    if (derived)
      weightDerived.insert(op);
  }

  // Residuals: forward values read by backward ops or returned as grads.
  SetVector<Value> residualSet;
  SetVector<Operation *> remat;
  auto noteUse = [&](Value v) {
    if (!isForwardValue(v) || isParam(v))
      return;
    if (Operation *def = v.getDefiningOp(); def && weightDerived.contains(def)) {
      remat.insert(def);
      return;
    }
    residualSet.insert(v);
  };
  for (Operation *op : backwardOps)
    for (Value v : op->getOperands())
      noteUse(v);
  for (Value v : jointRet.getOperands().drop_front(numResults))
    noteUse(v);
  SmallVector<Value> residuals = residualSet.takeVector();
  llvm::stable_sort(residuals, [&](Value a, Value b) {
    auto argA = dyn_cast<BlockArgument>(a), argB = dyn_cast<BlockArgument>(b);
    if (argA || argB) {
      if (argA && argB)
        return argA.getArgNumber() < argB.getArgNumber();
      return static_cast<bool>(argA);
    }
    unsigned ia = forwardIndex.lookup(a.getDefiningOp());
    unsigned ib = forwardIndex.lookup(b.getDefiningOp());
    if (ia != ib)
      return ia < ib;
    return cast<OpResult>(a).getResultNumber() <
           cast<OpResult>(b).getResultNumber();
  });
  DenseMap<Value, unsigned> residualIndex;
  for (auto [i, v] : llvm::enumerate(residuals))
    residualIndex[v] = i;

  OpBuilder builder(func.getContext());
  DifferentiatedFunctions out;
  out.numResiduals = residuals.size();

  // Forward: the joint's forward ops, returning results and residuals.
  SmallVector<Value> forwardArgs, forwardResults;
  for (unsigned i = 0; i < numArgs; ++i)
    forwardArgs.push_back(entry.getArgument(i));
  for (Value v : jointRet.getOperands().take_front(numResults))
    forwardResults.push_back(v);
  forwardResults.append(residuals.begin(), residuals.end());
  out.forward = cloneIntoFunction(builder, func, names[0], func.getLoc(),
                                  forwardArgs, {}, forwardOps, forwardResults);
  for (unsigned i = 0; i < numArgs; ++i)
    out.forward.setArgAttrs(i, func.getArgAttrDict(i));
  for (unsigned j = 0; j < numResults; ++j)
    out.forward.setResultAttrs(j, func.getResultAttrDict(j));
  for (unsigned i = 0; i < residuals.size(); ++i)
    out.forward.setResultAttr(numResults + i, Names::kResidualAttrName,
                              builder.getI64IntegerAttr(i));

  // Builds one backward function over `ops` returning `results` (joint
  // values), with arguments: the weights and residuals the ops read, then
  // `leading` (d_results or carries) as given.
  auto buildBackward = [&](StringRef name, ArrayRef<Operation *> ops,
                           ArrayRef<Value> leading,
                           ArrayRef<Value> results) -> func::FuncOp {
    DenseSet<Operation *> opSet(ops.begin(), ops.end());
    DenseSet<Value> leadingSet(leading.begin(), leading.end());
    SetVector<unsigned> paramsUsed;
    SetVector<unsigned> residualsUsed;
    SetVector<Operation *> rematUsed;
    auto use = [&](Value v) {
      if (leadingSet.contains(v))
        return;
      if (isParam(v)) {
        paramsUsed.insert(cast<BlockArgument>(v).getArgNumber());
        return;
      }
      if (auto it = residualIndex.find(v); it != residualIndex.end()) {
        residualsUsed.insert(it->second);
        return;
      }
      if (Operation *def = v.getDefiningOp(); def && remat.contains(def))
        rematUsed.insert(def);
    };
    for (Operation *op : ops)
      for (Value v : op->getOperands())
        use(v);
    for (Value v : results)
      use(v);
    // A rematerialized op's operands: weights (arguments) and the
    // weight-derived ops before it, cloned too.
    for (unsigned i = 0; i < rematUsed.size(); ++i)
      for (Value v : rematUsed[i]->getOperands()) {
        if (isParam(v))
          paramsUsed.insert(cast<BlockArgument>(v).getArgNumber());
        else if (Operation *def = v.getDefiningOp())
          rematUsed.insert(def);
      }
    SmallVector<unsigned> params(paramsUsed.begin(), paramsUsed.end());
    llvm::sort(params);
    SmallVector<unsigned> residualIds(residualsUsed.begin(),
                                      residualsUsed.end());
    llvm::sort(residualIds);
    SmallVector<Operation *> rematOps(rematUsed.begin(), rematUsed.end());
    llvm::sort(rematOps, [&](Operation *a, Operation *b) {
      return forwardIndex.lookup(a) < forwardIndex.lookup(b);
    });

    SmallVector<Value> args;
    for (unsigned p : params)
      args.push_back(entry.getArgument(p));
    for (unsigned r : residualIds)
      args.push_back(residuals[r]);
    args.append(leading.begin(), leading.end());
    Operation *after = out.backwardWeight   ? out.backwardWeight
                       : out.backwardInput ? out.backwardInput
                       : out.backward      ? out.backward
                                           : out.forward;
    func::FuncOp bwd = cloneIntoFunction(builder, after, name, func.getLoc(),
                                         args, rematOps, ops, results);
    unsigned a = 0;
    for (unsigned p : params)
      bwd.setArgAttrs(a++, func.getArgAttrDict(p));
    for (unsigned r : residualIds)
      bwd.setArgAttr(a++, Names::kResidualAttrName,
                     builder.getI64IntegerAttr(r));
    return bwd;
  };

  SmallVector<Value> dResults;
  for (unsigned n = 0; n < built->numResultGrads; ++n)
    dResults.push_back(entry.getArgument(numArgs + n));
  SmallVector<Value> gradValues(jointRet.getOperands().drop_front(numResults));

  auto markDResults = [&](func::FuncOp bwd, unsigned first) {
    for (unsigned n = 0; n < built->numResultGrads; ++n)
      bwd.setArgAttrs(first + n, joint.getArgAttrDict(numArgs + n));
  };
  auto markGrads = [&](func::FuncOp bwd, ArrayRef<unsigned> which) {
    for (auto [r, n] : llvm::enumerate(which))
      bwd.setResultAttr(r, Names::kGradOfAttrName,
                        builder.getI64IntegerAttr(wrt[n]));
  };

  if (!options.splitBackward) {
    out.backward =
        buildBackward(names[1], backwardOps, dResults, gradValues);
    markDResults(out.backward, out.backward.getNumArguments() -
                                   built->numResultGrads);
    SmallVector<unsigned> all;
    for (unsigned n = 0; n < wrt.size(); ++n)
      all.push_back(n);
    markGrads(out.backward, all);
    joint.erase();
    return out;
  }

  // B: the backward slice of the input gradients; W: the rest of the slice
  // of the weight gradients.
  SmallVector<unsigned> inputGradIds, weightGradIds;
  for (auto [n, k] : llvm::enumerate(wrt))
    (isParamArgument(func, k) ? weightGradIds : inputGradIds).push_back(n);
  auto slice = [&](ArrayRef<unsigned> ids) {
    DenseSet<Operation *> inSlice;
    SmallVector<Value> worklist;
    for (unsigned n : ids)
      worklist.push_back(gradValues[n]);
    while (!worklist.empty()) {
      Value v = worklist.pop_back_val();
      Operation *def = v.getDefiningOp();
      if (!def || !backwardSet.contains(def) || !inSlice.insert(def).second)
        continue;
      worklist.append(def->operand_begin(), def->operand_end());
    }
    return inSlice;
  };
  DenseSet<Operation *> inputSlice = slice(inputGradIds);
  DenseSet<Operation *> weightSlice = slice(weightGradIds);
  SmallVector<Operation *> bOps, wOps;
  for (Operation *op : backwardOps) {
    if (inputSlice.contains(op))
      bOps.push_back(op);
    else if (weightSlice.contains(op))
      wOps.push_back(op);
  }
  // Carries: values of B (or d_results) that W reads or returns.
  DenseSet<Operation *> wSet(wOps.begin(), wOps.end());
  DenseSet<Operation *> bSet(bOps.begin(), bOps.end());
  SetVector<Value> carrySet;
  auto noteCarry = [&](Value v) {
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      if (arg.getArgNumber() >= numArgs)
        carrySet.insert(v);
      return;
    }
    if (bSet.contains(v.getDefiningOp()))
      carrySet.insert(v);
  };
  for (Operation *op : wOps)
    for (Value v : op->getOperands())
      noteCarry(v);
  SmallVector<Value> weightGrads, inputGrads;
  for (unsigned n : weightGradIds) {
    weightGrads.push_back(gradValues[n]);
    noteCarry(gradValues[n]);
  }
  for (unsigned n : inputGradIds)
    inputGrads.push_back(gradValues[n]);
  SmallVector<Value> carries = carrySet.takeVector();

  SmallVector<Value> bResults = inputGrads;
  bResults.append(carries.begin(), carries.end());
  out.backwardInput = buildBackward(names[1], bOps, dResults, bResults);
  markDResults(out.backwardInput, out.backwardInput.getNumArguments() -
                                      built->numResultGrads);
  markGrads(out.backwardInput, inputGradIds);
  for (unsigned c = 0; c < carries.size(); ++c)
    out.backwardInput.setResultAttr(inputGrads.size() + c,
                                    Names::kCarryAttrName,
                                    builder.getI64IntegerAttr(c));

  out.backwardWeight = buildBackward(names[2], wOps, carries, weightGrads);
  unsigned firstCarry = out.backwardWeight.getNumArguments() - carries.size();
  for (unsigned c = 0; c < carries.size(); ++c)
    out.backwardWeight.setArgAttr(firstCarry + c, Names::kCarryAttrName,
                                  builder.getI64IntegerAttr(c));
  markGrads(out.backwardWeight, weightGradIds);
  joint.erase();
  return out;
}

} // namespace pipedream::nn
