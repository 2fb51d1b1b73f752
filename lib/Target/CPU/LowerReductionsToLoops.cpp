//===- LowerReductionsToLoops.cpp - reductions with register accumulators -===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Lowers a linalg op on buffers whose innermost loops are reductions (a row
// sum, max or variance: LayerNorm's statistics, softmax's max and sum) to
// loops that carry the accumulator in an `scf.for` iter_arg and store it
// once, instead of convert-linalg-to-loops' load and store of the output
// element at every step; with `reassociate`, a floating-point sum or
// product is split into 16 lanes in a fixed order, the elements of
// vector<16xT> values where the body allows (`vectorize`), else scalar
// chains for LLVM's SLP vectorizer (see Passes.td).
//
//===----------------------------------------------------------------------===//

#include "pipedream/Target/CPU/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"
#include "llvm/ADT/STLExtras.h"

namespace pipedream::cpu {
#define GEN_PASS_DEF_LOWERREDUCTIONSTOLOOPSPASS
#include "pipedream/Target/CPU/Passes.h.inc"
} // namespace pipedream::cpu

using namespace mlir;

namespace {

/// The buffer `value` is a view of (through subviews, reshapes, casts), or
/// `value` itself.
Value baseBuffer(Value value) {
  return memref::skipViewLikeOps(cast<MemrefValue>(value));
}

/// Whether `op` is a reduction the pass may lower, its loops in any order:
/// on buffers, one output, at least one reduction loop, and no input a
/// view of the output's buffer (the accumulator must be the only access
/// to it).
bool isLowerableReduction(linalg::LinalgOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInits() != 1 ||
      op.getNumReductionLoops() == 0)
    return false;
  Value out = baseBuffer(op.getDpsInitOperand(0)->get());
  for (OpOperand *input : op.getDpsInputOperands())
    if (isa<MemRefType>(input->get().getType()) &&
        baseBuffer(input->get()) == out)
      return false;
  return true;
}

/// Whether `op`'s reduction loops are its innermost ones.
bool reductionsInnermost(linalg::LinalgOp op) {
  return llvm::is_sorted(op.getIteratorTypesArray(),
                         [](utils::IteratorType a, utils::IteratorType b) {
                           return a == utils::IteratorType::parallel &&
                                  b == utils::IteratorType::reduction;
                         });
}

/// The lowerable reduction `op`, its reduction loops not all innermost,
/// with its parallel loops moved outside them when its innermost loop is a
/// reduction: BatchNorm's and a convolution bias's sums over N, H, W of
/// [N, C, H, W] into [C], whose loops N, C, H, W become C, N, H, W. The
/// trailing reduction loops stay innermost, in order (the same memory
/// order there), and each output element's terms come in the same order.
/// Null (`op` unchanged) when its innermost loop is parallel (a column sum)
/// or the interchange fails.
linalg::LinalgOp moveReductionsInward(RewriterBase &rewriter,
                                      linalg::LinalgOp op) {
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  if (iterators.back() != utils::IteratorType::reduction)
    return nullptr;
  SmallVector<unsigned> order;
  for (auto [i, type] : llvm::enumerate(iterators))
    if (type != utils::IteratorType::reduction)
      order.push_back(unsigned(i));
  for (auto [i, type] : llvm::enumerate(iterators))
    if (type == utils::IteratorType::reduction)
      order.push_back(unsigned(i));
  rewriter.setInsertionPoint(op);
  FailureOr<linalg::GenericOp> generic =
      isa<linalg::GenericOp>(op.getOperation())
          ? FailureOr<linalg::GenericOp>(cast<linalg::GenericOp>(op))
          : linalg::generalizeNamedOp(rewriter, op);
  if (failed(generic))
    return nullptr;
  FailureOr<linalg::GenericOp> swapped =
      linalg::interchangeGenericOp(rewriter, *generic, order);
  if (failed(swapped))
    return nullptr;
  return cast<linalg::LinalgOp>(swapped->getOperation());
}

/// Whether two indices are the same value: one SSA value, or equal ops
/// (the loop lowering computes each access's indices anew).
bool sameIndex(Value a, Value b) {
  if (a == b)
    return true;
  Operation *x = a.getDefiningOp(), *y = b.getDefiningOp();
  return x && y && isPure(x) &&
         OperationEquivalence::isEquivalentTo(
             x, y, OperationEquivalence::exactValueMatch,
             /*markEquivalent=*/nullptr, OperationEquivalence::IgnoreLocations);
}

/// The load and the store of the output element in `loop`'s body block:
/// the same buffer and indices, defined outside the loop, the load before
/// the store, and no other op of the block that writes memory.
bool findAccumulator(scf::ForOp loop, Value buffer, memref::LoadOp &load,
                     memref::StoreOp &store) {
  load = nullptr;
  store = nullptr;
  for (Operation &op : *loop.getBody()) {
    if (auto l = dyn_cast<memref::LoadOp>(op);
        l && l.getMemRef() == buffer && !load && !store) {
      load = l;
      continue;
    }
    if (auto s = dyn_cast<memref::StoreOp>(op);
        s && s.getMemRef() == buffer && load && !store) {
      store = s;
      continue;
    }
    // Anything else may read (the inputs, nested loops) but not write, and
    // not touch the output's buffer.
    if (!isMemoryEffectFree(&op) && !isa<memref::LoadOp, scf::ForOp>(op))
      return false;
    if (auto l = dyn_cast<memref::LoadOp>(op); l && l.getMemRef() == buffer)
      return false;
  }
  if (!load || !store ||
      !llvm::all_of_zip(load.getIndices(), store.getIndices(), sameIndex))
    return false;
  return loop.isDefinedOutsideOfLoop(buffer) &&
         llvm::all_of(load.getIndices(), [&](Value index) {
           return loop.isDefinedOutsideOfLoop(index);
         });
}

/// Whether `loop`'s nested loops (all from one linalg op) write memory only
/// through stores to `buffer`.
bool nestedWritesOnly(scf::ForOp loop, Value buffer) {
  WalkResult result = loop.getBody()->walk([&](Operation *op) {
    if (isa<scf::ForOp, scf::YieldOp, memref::LoadOp>(op) ||
        isMemoryEffectFree(op))
      return WalkResult::advance();
    if (auto s = dyn_cast<memref::StoreOp>(op); s && s.getMemRef() == buffer)
      return WalkResult::advance();
    return WalkResult::interrupt();
  });
  return !result.wasInterrupted();
}

/// Carries the output element of `loop` in an iter_arg: loaded before the
/// loop, stored after it. Returns the new loop.
scf::ForOp promote(RewriterBase &rewriter, scf::ForOp loop, memref::LoadOp load,
                   memref::StoreOp store) {
  rewriter.setInsertionPoint(loop);
  Operation *init = rewriter.clone(*load);
  Value stored = store.getValueToStore();
  FailureOr<LoopLikeOpInterface> grown = loop.replaceWithAdditionalYields(
      rewriter, init->getResult(0), /*replaceInitOperandUsesInLoop=*/false,
      [&](OpBuilder &, Location, ArrayRef<BlockArgument>) {
        return SmallVector<Value>{stored};
      });
  // NOTE: scf.for always grows (the interface's failure is for other
  // loops).
  auto newLoop = cast<scf::ForOp>(grown->getOperation());
  rewriter.replaceAllUsesWith(load.getResult(),
                              newLoop.getRegionIterArgs().back());
  // The hoisted load's indices: checked to be defined outside the loop
  // (the store's are equal ops, possibly inside it).
  rewriter.setInsertionPointAfter(newLoop);
  memref::StoreOp::create(rewriter, store.getLoc(), newLoop.getResults().back(),
                          store.getMemRef(),
                          cast<memref::LoadOp>(init).getIndices());
  rewriter.eraseOp(store);
  rewriter.eraseOp(load);
  return newLoop;
}

/// Lanes of a split reduction: a fixed number, whatever the target, so the
/// order of the sum is the same on every machine (16 floats: two AVX2 or
/// one AVX-512 register).
constexpr int64_t kLanes = 16;

/// A value of the body of a reduction loop being put in vector lanes.
enum class LaneKind {
  /// The same in every lane: defined outside the loop, or computed from
  /// such values only (a constant, a broadcast element).
  Uniform,
  /// The induction variable (or an identity affine.apply of it): only the
  /// last index of a load.
  Iv,
  /// Lane l holds the step's value at iv + l: a vector.
  Lanes,
};

/// The kind of `value` in `kinds` (Uniform when absent: defined outside
/// the loop or from uniform values only).
LaneKind laneKind(const DenseMap<Value, LaneKind> &kinds, Value value) {
  auto it = kinds.find(value);
  return it == kinds.end() ? LaneKind::Uniform : it->second;
}

/// Whether `loop`'s body (every op but the terminator) can run as vector
/// ops of kLanes elements, one step per lane: loads contiguous along the
/// induction variable in their last index (unit stride) or not depending on
/// it, elementwise ops on integers and floats, and nothing else depending
/// on the induction variable. `kinds` gets every body value's kind.
bool vectorizableLanes(scf::ForOp loop, DenseMap<Value, LaneKind> &kinds) {
  Value iv = loop.getInductionVar();
  kinds[iv] = LaneKind::Iv;
  kinds[loop.getRegionIterArgs().front()] = LaneKind::Lanes;
  auto kindOf = [&](Value v) { return laneKind(kinds, v); };
  auto scalarType = [](Type t) { return t.isIntOrFloat(); };
  for (Operation &op : loop.getBody()->without_terminator()) {
    if (op.getNumRegions() != 0 || op.getNumResults() != 1)
      return false;
    bool anyIv = false, anyLanes = false;
    for (Value operand : op.getOperands()) {
      anyIv |= kindOf(operand) == LaneKind::Iv;
      anyLanes |= kindOf(operand) == LaneKind::Lanes;
    }
    Value result = op.getResult(0);
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      if (!anyIv)
        continue; // Uniform: no store in the body (findAccumulator).
      ValueRange indices = load.getIndices();
      auto type = load.getMemRefType();
      if (indices.empty() || kindOf(indices.back()) != LaneKind::Iv ||
          !scalarType(type.getElementType()) || !type.isLastDimUnitStride() ||
          llvm::any_of(indices.drop_back(), [&](Value index) {
            return kindOf(index) != LaneKind::Uniform;
          }))
        return false;
      kinds[result] = LaneKind::Lanes;
      continue;
    }
    if (auto apply = dyn_cast<affine::AffineApplyOp>(op); apply && anyIv) {
      if (!apply.getAffineMap().isIdentity() || apply.getNumOperands() != 1)
        return false;
      kinds[result] = LaneKind::Iv;
      continue;
    }
    if (anyIv)
      return false;
    if (!anyLanes) {
      if (!isPure(&op))
        return false;
      continue; // Uniform.
    }
    if (!OpTrait::hasElementwiseMappableTraits(&op) || !isPure(&op) ||
        !scalarType(result.getType()) ||
        !llvm::all_of(op.getOperandTypes(), scalarType))
      return false;
    kinds[result] = LaneKind::Lanes;
  }
  return true;
}

/// The kLanes partial results of splitIntoLanes from one loop over
/// vector<kLanes x T> values (see vectorizableLanes): lane l of every
/// vector computes what scalar lane l did, in the same order; LLVM gets
/// vector loads and ops rather than having to find them (its SLP vectorizer
/// paired the scalar lanes into shuffled <2 x float> halves of each load).
SmallVector<Value> vectorLanes(RewriterBase &rewriter, scf::ForOp loop,
                               Operation *combiner,
                               const DenseMap<Value, LaneKind> &kinds,
                               Value lowerBound, Value upperBound, Value step,
                               Value identity) {
  Location loc = loop.getLoc();
  Value acc = loop.getRegionIterArgs().front();
  auto vectorOf = [](Type t) { return VectorType::get({kLanes}, t); };
  Value init = vector::BroadcastOp::create(rewriter, loc,
                                           vectorOf(acc.getType()), identity);
  init = vector::InsertOp::create(rewriter, loc, loop.getInitArgs().front(),
                                  init, ArrayRef<int64_t>{0});
  auto lanes = scf::ForOp::create(
      rewriter, loc, lowerBound, upperBound, step, ValueRange{init},
      [&](OpBuilder &b, Location, Value iv, ValueRange partial) {
        IRMapping uniform;
        DenseMap<Value, Value> vectors;
        vectors[acc] = partial.front();
        auto kindOf = [&](Value v) { return laneKind(kinds, v); };
        // An operand of a vector op: its vector, or the uniform value
        // broadcast.
        auto lanesOf = [&](Value v) -> Value {
          if (kindOf(v) == LaneKind::Lanes)
            return vectors.lookup(v);
          return vector::BroadcastOp::create(b, loc, vectorOf(v.getType()),
                                             uniform.lookupOrDefault(v));
        };
        for (Operation &op : loop.getBody()->without_terminator()) {
          Value result = op.getResult(0);
          LaneKind kind = kindOf(result);
          if (kind == LaneKind::Uniform) {
            b.clone(op, uniform);
            continue;
          }
          if (kind == LaneKind::Iv)
            continue; // Only a load's last index: the vector's first lane.
          if (auto load = dyn_cast<memref::LoadOp>(op)) {
            SmallVector<Value> indices;
            for (Value index : load.getIndices().drop_back())
              indices.push_back(uniform.lookupOrDefault(index));
            indices.push_back(iv);
            vectors[result] = vector::LoadOp::create(
                b, op.getLoc(), vectorOf(result.getType()),
                uniform.lookupOrDefault(load.getMemRef()), indices);
            continue;
          }
          OperationState state(op.getLoc(), op.getName());
          for (Value operand : op.getOperands())
            state.operands.push_back(lanesOf(operand));
          state.types.push_back(vectorOf(result.getType()));
          state.attributes = op.getAttrs();
          vectors[result] = b.create(state)->getResult(0);
        }
        scf::YieldOp::create(b, loc, vectors.lookup(combiner->getResult(0)));
      });
  SmallVector<Value> values;
  for (int64_t l = 0; l < kLanes; ++l)
    values.push_back(vector::ExtractOp::create(
        rewriter, loc, lanes.getResult(0), ArrayRef<int64_t>{l}));
  return values;
}

/// Splits the sum (or product) `loop` carries in its one iter_arg into
/// kLanes partial ones: the first kLanes * floor(n / kLanes) steps go
/// round-robin to the lanes (lane l takes steps l, l + kLanes, ...), the
/// lanes are combined pairwise in a fixed tree, and the remaining steps
/// add to that in order (`loop` itself, its lower bound moved). With
/// `vectorize` and a body vectorizableLanes accepts (unit steps), the lanes
/// are the elements of vectors (vectorLanes); otherwise independent scalar
/// chains that LLVM's SLP vectorizer may put in vector registers. No
/// fast-math flag lets LLVM choose another order, so the result is the same
/// whatever the code generator does (but for its FMA contractions), and
/// the same order with and without `vectorize`. False (nothing changed) unless
/// the body is `acc' = acc + f(iv)` (or `*`) with f not reading acc, static
/// bounds and at least 2 kLanes steps.
bool splitIntoLanes(RewriterBase &rewriter, scf::ForOp loop, bool vectorize) {
  if (loop.getNumRegionIterArgs() != 1)
    return false;
  Value acc = loop.getRegionIterArgs().front();
  if (!acc.hasOneUse())
    return false;
  Operation *combiner = *acc.getUsers().begin();
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
  if (!isa<arith::AddFOp, arith::MulFOp>(combiner) ||
      combiner->getBlock() != loop.getBody() ||
      yield.getOperand(0) != combiner->getResult(0) ||
      !combiner->getResult(0).hasOneUse())
    return false;
  std::optional<int64_t> lb = getConstantIntValue(loop.getLowerBound()),
                         ub = getConstantIntValue(loop.getUpperBound()),
                         step = getConstantIntValue(loop.getStep());
  if (!lb || !ub || !step || *step <= 0 || *ub <= *lb)
    return false;
  int64_t trips = (*ub - *lb + *step - 1) / *step;
  if (trips < 2 * kLanes)
    return false;
  int64_t mainTrips = trips / kLanes * kLanes;
  int64_t mainEnd = *lb + mainTrips * *step;

  Location loc = loop.getLoc();
  auto type = cast<FloatType>(acc.getType());
  bool sum = isa<arith::AddFOp>(combiner);
  rewriter.setInsertionPoint(loop);
  auto index = [&](int64_t v) {
    return arith::ConstantIndexOp::create(rewriter, loc, v).getResult();
  };
  // The identity of the other lanes' start: -0 for a sum (x + -0 is x,
  // even for x = -0), 1 for a product.
  Value identity = arith::ConstantOp::create(
      rewriter, loc, type, rewriter.getFloatAttr(type, sum ? -0.0 : 1.0));
  SmallVector<Value> values;
  DenseMap<Value, LaneKind> kinds;
  if (vectorize && *step == 1 && vectorizableLanes(loop, kinds)) {
    values = vectorLanes(rewriter, loop, combiner, kinds, index(*lb),
                         index(mainEnd), index(kLanes), identity);
  } else {
    SmallVector<Value> inits(kLanes, identity);
    inits.front() = loop.getInitArgs().front();
    auto lanes = scf::ForOp::create(
        rewriter, loc, index(*lb), index(mainEnd), index(kLanes * *step), inits,
        [&](OpBuilder &b, Location, Value iv, ValueRange partial) {
          SmallVector<Value> next;
          for (int64_t l = 0; l < kLanes; ++l) {
            IRMapping map;
            Value laneIv =
                l == 0 ? iv
                       : arith::AddIOp::create(
                             b, loc, iv,
                             arith::ConstantIndexOp::create(b, loc, l * *step))
                             .getResult();
            map.map(loop.getInductionVar(), laneIv);
            map.map(acc, partial[l]);
            for (Operation &op : loop.getBody()->without_terminator())
              b.clone(op, map);
            next.push_back(map.lookup(combiner->getResult(0)));
          }
          scf::YieldOp::create(b, loc, next);
        });
    values.assign(lanes.getResults().begin(), lanes.getResults().end());
  }
  // Pairwise, in a fixed order.
  while (values.size() > 1) {
    SmallVector<Value> pairs;
    for (size_t i = 0; i + 1 < values.size(); i += 2) {
      Operation *c = rewriter.clone(*combiner);
      c->setOperands({values[i], values[i + 1]});
      pairs.push_back(c->getResult(0));
    }
    values = std::move(pairs);
  }
  rewriter.modifyOpInPlace(loop, [&] {
    loop.getLowerBoundMutable().assign(index(mainEnd));
    loop.getInitArgsMutable()[0].assign(values.front());
  });
  return true;
}

struct LowerReductionsToLoopsPass
    : pipedream::cpu::impl::LowerReductionsToLoopsPassBase<
          LowerReductionsToLoopsPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> ops;
    getOperation().walk([&](linalg::LinalgOp op) { ops.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : ops) {
      if (!isLowerableReduction(op))
        continue;
      if (!reductionsInnermost(op)) {
        op = moveReductionsInward(rewriter, op);
        if (!op)
          continue;
      }
      if (failed(lower(rewriter, op)))
        return signalPassFailure();
    }
  }

  LogicalResult lower(RewriterBase &rewriter, linalg::LinalgOp op) {
    Value buffer = op.getDpsInitOperand(0)->get();
    unsigned numLoops = op.getNumLoops(),
             numReductions = op.getNumReductionLoops();
    rewriter.setInsertionPoint(op);
    FailureOr<linalg::LinalgLoops> loops =
        linalg::linalgOpToLoops(rewriter, op);
    if (failed(loops))
      return op.emitError("cpu-lower-reductions-to-loops: cannot lower "
                          "the op to loops");
    rewriter.eraseOp(op);
    // A loop per dimension, outermost first; a 0-trip dimension may have
    // been folded away, leaving nothing to promote.
    if (loops->size() != numLoops)
      return success();
    unsigned first = numLoops - numReductions;
    // The index computations that do not depend on a loop leave it, so
    // the output element's indices are defined outside the reduction loops.
    for (Operation *loop : llvm::reverse(*loops))
      moveLoopInvariantCode(cast<LoopLikeOpInterface>(loop));
    auto outer = cast<scf::ForOp>((*loops)[first]);
    if (!nestedWritesOnly(outer, buffer))
      return success();
    for (unsigned d = numLoops; d-- > first;) {
      auto loop = cast<scf::ForOp>((*loops)[d]);
      memref::LoadOp load;
      memref::StoreOp store;
      if (!findAccumulator(loop, buffer, load, store))
        return success();
      // The enclosing loops stay the same ops.
      scf::ForOp promoted = promote(rewriter, loop, load, store);
      if (reassociate && d == numLoops - 1)
        splitIntoLanes(rewriter, promoted, vectorize);
    }
    return success();
  }
};

} // namespace
