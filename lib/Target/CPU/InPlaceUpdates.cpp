//===- InPlaceUpdates.cpp - outputs computed in their argument's buffer ---===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// cpu-in-place-updates (tensors) and cpu-drop-in-place-copies (buffers):
// an output marked `pipedream.in_place = j` is left in argument j's buffer
// (docs/Bundle.md "in_place"), so the runtime needs no second buffer per
// weight, gradient accumulator or optimizer state. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Target/CPU/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"

namespace pipedream::cpu {
#define GEN_PASS_DEF_INPLACEUPDATESPASS
#define GEN_PASS_DEF_DROPINPLACECOPIESPASS
#include "pipedream/Target/CPU/Passes.h.inc"
} // namespace pipedream::cpu

using namespace mlir;

namespace {

constexpr StringLiteral kInPlaceAttr = "pipedream.in_place";
constexpr StringLiteral kOutputsAttr = "pipedream.cpu.in_place_outputs";

/// True when `value` is a floating-point zero constant.
bool isFloatZero(Value value) {
  return matchPattern(value, m_AnyZeroFloat());
}

/// `generic ins(a, b) outs(e)` with identity maps, parallel iterators and
/// body `yield addf(a, b)`: returns the operand other than `accumulator`,
/// or null.
Value addendOf(linalg::GenericOp add, Value accumulator) {
  if (add.getNumDpsInputs() != 2 || add.getNumDpsInits() != 1 ||
      add->getNumResults() != 1 ||
      add.getNumParallelLoops() != add.getNumLoops())
    return {};
  for (AffineMap map : add.getIndexingMapsArray())
    if (!map.isIdentity())
      return {};
  Block &body = add.getRegion().front();
  auto yield = dyn_cast<linalg::YieldOp>(body.getTerminator());
  if (!yield || yield->getNumOperands() != 1 || body.getOperations().size() != 2)
    return {};
  auto addf = yield->getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!addf)
    return {};
  BlockArgument in0 = body.getArgument(0), in1 = body.getArgument(1);
  if (!((addf.getLhs() == in0 && addf.getRhs() == in1) ||
        (addf.getLhs() == in1 && addf.getRhs() == in0)))
    return {};
  Value a = add.getDpsInputOperand(0)->get();
  Value b = add.getDpsInputOperand(1)->get();
  if (a == accumulator && b != accumulator)
    return b;
  if (b == accumulator && a != accumulator)
    return a;
  return {};
}

/// `accumulator + contraction(..., outs = fill(0))`, the contraction used
/// only there: the contraction with `outs = accumulator` (it adds into
/// its init), or null.
Value foldAccumulation(OpBuilder &builder, Value value, Value accumulator) {
  auto add = value.getDefiningOp<linalg::GenericOp>();
  if (!add)
    return {};
  Value addend = addendOf(add, accumulator);
  if (!addend || addend.getType() != accumulator.getType() ||
      !addend.hasOneUse())
    return {};
  auto contraction = addend.getDefiningOp<linalg::LinalgOp>();
  if (!contraction || contraction->getNumResults() != 1 ||
      contraction.getNumDpsInits() != 1 ||
      !linalg::isaContractionOpInterface(contraction))
    return {};
  auto fill =
      contraction.getDpsInitOperand(0)->get().getDefiningOp<linalg::FillOp>();
  if (!fill || !isFloatZero(fill.getInputs()[0]))
    return {};
  builder.setInsertionPoint(contraction);
  Operation *clone = builder.clone(*contraction);
  cast<linalg::LinalgOp>(clone).getDpsInitOperand(0)->set(accumulator);
  return clone->getResult(0);
}

struct InPlaceUpdatesPass
    : pipedream::cpu::impl::InPlaceUpdatesPassBase<InPlaceUpdatesPass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (failed(runOnFunction(func)))
        return signalPassFailure();
  }

  LogicalResult runOnFunction(func::FuncOp func) {
    unsigned numResults = func.getNumResults();
    SmallVector<int64_t> targets(numResults, -1);
    bool any = false;
    for (unsigned i = 0; i < numResults; ++i) {
      auto attr = func.getResultAttrOfType<IntegerAttr>(i, kInPlaceAttr);
      if (!attr) {
        if (func.getResultAttr(i, kInPlaceAttr))
          return func.emitError() << "result #" << i << ": " << kInPlaceAttr
                                  << " must be an integer argument index";
        continue;
      }
      int64_t j = attr.getInt();
      if (!func.isPublic() || func.isDeclaration())
        return func.emitError() << "result #" << i << ": " << kInPlaceAttr
                                << " on a function that is not a public "
                                   "definition";
      if (j < 0 || j >= static_cast<int64_t>(func.getNumArguments()))
        return func.emitError()
               << "result #" << i << ": " << kInPlaceAttr << " = " << j
               << " names no argument (the function has "
               << func.getNumArguments() << ")";
      auto type = dyn_cast<RankedTensorType>(func.getResultTypes()[i]);
      if (!type || !type.hasStaticShape() ||
          func.getArgumentTypes()[j] != type)
        return func.emitError()
               << "result #" << i << " (" << func.getResultTypes()[i]
               << ") cannot update argument #" << j << " ("
               << func.getArgumentTypes()[j]
               << ") in place: both must be the same static tensor type";
      if (llvm::is_contained(targets, j))
        return func.emitError() << "two results update argument #" << j
                                << " in place";
      targets[i] = j;
      any = true;
    }
    if (!any)
      return success();
    if (!func.getBody().hasOneBlock())
      return func.emitError() << kInPlaceAttr
                              << " needs a function body of one block";
    auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
    OpBuilder builder(ret);
    for (unsigned i = 0; i < numResults; ++i) {
      if (targets[i] < 0)
        continue;
      Value arg = func.getArgument(static_cast<unsigned>(targets[i]));
      Value value = ret.getOperand(i);
      Location loc = value.getLoc();
      // A splat constant (zeroed gradient accumulators): filled in place.
      DenseElementsAttr splat;
      if (matchPattern(value, m_Constant(&splat)) && splat.isSplat()) {
        builder.setInsertionPoint(ret);
        Value scalar = arith::ConstantOp::create(
            builder, loc, cast<TypedAttr>(splat.getSplatValue<Attribute>()));
        value = linalg::FillOp::create(builder, loc, scalar, arg).getResult(0);
      } else if (Value folded = foldAccumulation(builder, value, arg)) {
        value = folded;
      }
      builder.setInsertionPoint(ret);
      auto materialize = bufferization::MaterializeInDestinationOp::create(
          builder, loc, value, arg);
      Value old = ret.getOperand(i);
      ret.setOperand(i, materialize.getResult());
      // What the rewrite left unused (an add and its contraction, a
      // constant), so bufferization allocates nothing for it.
      SmallVector<Operation *> worklist;
      llvm::DenseSet<Operation *> erased;
      if (Operation *op = old.getDefiningOp())
        worklist.push_back(op);
      while (!worklist.empty()) {
        Operation *op = worklist.pop_back_val();
        if (erased.contains(op) || !op->use_empty() ||
            !isMemoryEffectFree(op))
          continue;
        erased.insert(op);
        SmallVector<Operation *> producers;
        for (Value operand : op->getOperands())
          if (Operation *producer = operand.getDefiningOp())
            producers.push_back(producer);
        op->erase();
        worklist.append(producers.begin(), producers.end());
      }
    }
    func->setAttr(kOutputsAttr, builder.getDenseI64ArrayAttr(targets));
    return success();
  }
};

struct DropInPlaceCopiesPass
    : pipedream::cpu::impl::DropInPlaceCopiesPassBase<DropInPlaceCopiesPass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (failed(runOnFunction(func)))
        return signalPassFailure();
  }

  static Value stripCasts(Value value) {
    while (auto cast = value.getDefiningOp<memref::CastOp>())
      value = cast.getSource();
    return value;
  }

  LogicalResult runOnFunction(func::FuncOp func) {
    auto targets = func->getAttrOfType<DenseI64ArrayAttr>(kOutputsAttr);
    if (!targets)
      return success();
    func->removeAttr(kOutputsAttr);
    int64_t numOutputs = targets.size();
    int64_t numArgs = func.getNumArguments();
    if (func.getNumResults() != 0 || numArgs < numOutputs)
      return func.emitError()
             << "cpu-drop-in-place-copies expects every result as an "
                "out-parameter (run buffer-results-to-out-params first)";
    int64_t first = numArgs - numOutputs;
    for (auto [i, j] : llvm::enumerate(targets.asArrayRef())) {
      if (j < 0)
        continue;
      if (j >= first)
        return func.emitError() << "in-place output #" << i
                                << " names argument #" << j
                                << ", which is an out-parameter";
      Value out = func.getArgument(static_cast<unsigned>(first + i));
      Value source = func.getArgument(static_cast<unsigned>(j));
      SmallVector<Operation *> copies;
      for (Operation *user : out.getUsers()) {
        auto copy = dyn_cast<memref::CopyOp>(user);
        if (!copy || copy.getTarget() != out ||
            stripCasts(copy.getSource()) != source)
          return user->emitError()
                 << "in-place output #" << i << " of @" << func.getSymName()
                 << " is not in argument #" << j
                 << "'s buffer after bufferization";
        copies.push_back(copy);
      }
      for (Operation *copy : copies)
        copy->erase();
    }
    return success();
  }
};

} // namespace
