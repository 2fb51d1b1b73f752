//===- MapToKernels.cpp - buffer-level work to gpu.launch -----------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Turns what a bufferized host function computes into `gpu.launch` ops, so
// that afterwards the host only allocates, makes views, calls the GEMM
// library and launches kernels:
//
// 1. `memref.copy` becomes `linalg.copy`.
// 2. Row reductions (parallel loops, then reduction loops; the output
//    indexed by parallel loops only; a payload ending in one associative
//    combiner with the output element) become one block per output element:
//    threads stride over the reduction, then `gpu.all_reduce`, and thread 0
//    folds the result into the output.
// 3. Every other linalg op becomes `scf.parallel` (+ sequential reduction
//    loops); each host-level `scf.parallel` becomes a 1-D launch over the
//    flattened iteration space (thread i handles the i-th point in row-major
//    order: consecutive threads, consecutive addresses).
// 4. Memory accesses left on the host (a loop that reads an index from a
//    tensor, scalar loads and stores) are grouped into runs and each run
//    becomes a single-thread kernel.
//
// NOTE: step 4 relies on nothing but kernels reading memory a host function
// allocated; cuda-allocate-device-memory then moves all host allocations to
// the device.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Target/GPU/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/Support/MathExtras.h"

namespace pipedream::cuda {
#define GEN_PASS_DEF_MAPTOKERNELSPASS
#include "pipedream/Target/GPU/Passes.h.inc"
} // namespace pipedream::cuda

using namespace mlir;

namespace {

/// True for ops that read or write memref memory themselves.
bool isMemoryAccess(Operation *op) {
  if (isa<memref::LoadOp, memref::StoreOp, memref::AtomicRMWOp,
          memref::GenericAtomicRMWOp, memref::CopyOp, affine::AffineLoadOp,
          affine::AffineStoreOp, linalg::LinalgOp>(op))
    return true;
  if (isa<vector::VectorDialect>(op->getDialect()))
    return llvm::any_of(op->getOperandTypes(),
                        [](Type type) { return isa<MemRefType>(type); });
  return false;
}

/// True when `op` or an op nested in it accesses memory outside any nested
/// scf.parallel (which becomes a kernel of its own).
bool hasSerialDeviceWork(Operation *op) {
  if (isMemoryAccess(op))
    return true;
  WalkResult result = op->walk<WalkOrder::PreOrder>([&](Operation *nested) {
    if (nested == op)
      return WalkResult::advance();
    if (isa<scf::ParallelOp, gpu::LaunchOp>(nested))
      return WalkResult::skip();
    if (isMemoryAccess(nested))
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return result.wasInterrupted();
}

bool containsParallelLoop(Operation *op) {
  return op
      ->walk([](scf::ParallelOp) { return WalkResult::interrupt(); })
      .wasInterrupted();
}

/// Creates an empty `gpu.launch` with the given 1-D grid and block sizes
/// before the builder's insertion point and sets the insertion point to the
/// start of its body.
gpu::LaunchOp createLaunch(OpBuilder &builder, Location loc, int64_t grid,
                           int64_t block) {
  auto c = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(builder, loc, v);
  };
  Value one = c(1);
  auto launch =
      gpu::LaunchOp::create(builder, loc, c(grid), one, one, c(block), one,
                            one);
  builder.setInsertionPointToEnd(&launch.getBody().front());
  gpu::TerminatorOp::create(builder, loc);
  builder.setInsertionPointToStart(&launch.getBody().front());
  return launch;
}

/// Splits the linear index `linear` over `sizes` (row-major, last fastest).
SmallVector<Value> delinearize(OpBuilder &builder, Location loc, Value linear,
                               ArrayRef<int64_t> sizes) {
  SmallVector<Value> indices(sizes.size());
  Value rest = linear;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    if (d == 0) {
      indices[d] = rest;
      break;
    }
    Value size = arith::ConstantIndexOp::create(builder, loc, sizes[d]);
    indices[d] = arith::RemUIOp::create(builder, loc, rest, size);
    rest = arith::DivUIOp::create(builder, loc, rest, size);
  }
  return indices;
}

/// Linear thread id: blockIdx.x * blockDim.x + threadIdx.x.
Value globalThreadId(OpBuilder &builder, Location loc, gpu::LaunchOp launch,
                     int64_t block) {
  Value blockId = launch.getBlockIds().x;
  Value threadId = launch.getThreadIds().x;
  Value scaled = arith::MulIOp::create(
      builder, loc, blockId,
      arith::ConstantIndexOp::create(builder, loc, block));
  return arith::AddIOp::create(builder, loc, scaled, threadId);
}

//===----------------------------------------------------------------------===//
// scf.parallel -> 1-D launch
//===----------------------------------------------------------------------===//

/// Replaces `loop` (constant bounds, no reductions) by a launch over its
/// flattened iteration space. Fails, leaving `loop` alone, otherwise.
LogicalResult mapParallelLoop(scf::ParallelOp loop, int64_t blockSize) {
  if (loop.getNumResults() != 0)
    return failure();
  SmallVector<int64_t> lbs, steps, trips;
  int64_t total = 1;
  for (auto [lb, ub, step] : llvm::zip(loop.getLowerBound(),
                                       loop.getUpperBound(), loop.getStep())) {
    std::optional<int64_t> l = getConstantIntValue(lb);
    std::optional<int64_t> u = getConstantIntValue(ub);
    std::optional<int64_t> s = getConstantIntValue(step);
    if (!l || !u || !s || *s <= 0)
      return failure();
    int64_t trip = *u > *l ? llvm::divideCeil(*u - *l, *s) : 0;
    lbs.push_back(*l);
    steps.push_back(*s);
    trips.push_back(trip);
    total *= trip;
  }
  if (total == 0) {
    loop.erase();
    return success();
  }
  OpBuilder builder(loop);
  Location loc = loop.getLoc();
  int64_t block = std::min<int64_t>(blockSize, total);
  int64_t grid = llvm::divideCeil(total, block);
  gpu::LaunchOp launch = createLaunch(builder, loc, grid, block);
  Value id = globalThreadId(builder, loc, launch, block);
  if (grid * block != total) {
    Value inRange = arith::CmpIOp::create(
        builder, loc, arith::CmpIPredicate::ult, id,
        arith::ConstantIndexOp::create(builder, loc, total));
    auto guard = scf::IfOp::create(builder, loc, inRange,
                                   /*withElseRegion=*/false);
    builder.setInsertionPointToStart(&guard.getThenRegion().front());
  }
  SmallVector<Value> indices = delinearize(builder, loc, id, trips);
  IRMapping mapping;
  for (auto [iv, index, lb, step] :
       llvm::zip(loop.getInductionVars(), indices, lbs, steps)) {
    Value value = index;
    if (step != 1)
      value = arith::MulIOp::create(
          builder, loc, value,
          arith::ConstantIndexOp::create(builder, loc, step));
    if (lb != 0)
      value = arith::AddIOp::create(
          builder, loc, value, arith::ConstantIndexOp::create(builder, loc, lb));
    mapping.map(iv, value);
  }
  for (Operation &op : loop.getBody()->without_terminator())
    builder.clone(op, mapping);
  loop.erase();
  return success();
}

//===----------------------------------------------------------------------===//
// Row reductions -> one block per output element
//===----------------------------------------------------------------------===//

/// A reduction the block-per-row kernel handles.
struct RowReduction {
  linalg::GenericOp op;
  unsigned numParallel;
  /// The combiner in the payload and the value it folds into the output.
  Operation *combiner;
  Value contribution;
  gpu::AllReduceOperation kind;
};

std::optional<gpu::AllReduceOperation> allReduceKind(Operation *op) {
  return llvm::TypeSwitch<Operation *, std::optional<gpu::AllReduceOperation>>(
             op)
      .Case([](arith::AddFOp) { return gpu::AllReduceOperation::ADD; })
      .Case([](arith::MulFOp) { return gpu::AllReduceOperation::MUL; })
      .Case([](arith::MaximumFOp) { return gpu::AllReduceOperation::MAXIMUMF; })
      .Case([](arith::MinimumFOp) { return gpu::AllReduceOperation::MINIMUMF; })
      .Case([](arith::MaxNumFOp) { return gpu::AllReduceOperation::MAXNUMF; })
      .Case([](arith::MinNumFOp) { return gpu::AllReduceOperation::MINNUMF; })
      .Default([](Operation *) { return std::nullopt; });
}

/// The neutral element of `kind` for f32.
Value neutralElement(OpBuilder &builder, Location loc,
                     gpu::AllReduceOperation kind) {
  float value = 0.0f;
  switch (kind) {
  case gpu::AllReduceOperation::MUL:
    value = 1.0f;
    break;
  case gpu::AllReduceOperation::MAXIMUMF:
  case gpu::AllReduceOperation::MAXNUMF:
    value = -std::numeric_limits<float>::infinity();
    break;
  case gpu::AllReduceOperation::MINIMUMF:
  case gpu::AllReduceOperation::MINNUMF:
    value = std::numeric_limits<float>::infinity();
    break;
  default:
    break;
  }
  return arith::ConstantFloatOp::create(builder, loc, builder.getF32Type(),
                                        APFloat(value));
}

std::optional<RowReduction> matchRowReduction(linalg::LinalgOp op) {
  auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  if (!generic || !generic.hasPureBufferSemantics() ||
      generic.getNumDpsInits() != 1 || generic->getNumRegions() != 1)
    return std::nullopt;
  SmallVector<utils::IteratorType> iterators = generic.getIteratorTypesArray();
  unsigned numParallel = 0;
  while (numParallel < iterators.size() &&
         iterators[numParallel] == utils::IteratorType::parallel)
    ++numParallel;
  if (numParallel == iterators.size())
    return std::nullopt;
  for (unsigned i = numParallel; i < iterators.size(); ++i)
    if (iterators[i] != utils::IteratorType::reduction)
      return std::nullopt;
  SmallVector<int64_t> sizes = generic.getStaticLoopRanges();
  if (llvm::any_of(sizes, ShapedType::isDynamic))
    return std::nullopt;
  // Every operand indexed by projected permutations (or constants) of the
  // loops; the output by parallel loops only.
  OpOperand *init = generic.getDpsInitOperand(0);
  auto outType = dyn_cast<MemRefType>(init->get().getType());
  if (!outType || !outType.getElementType().isF32())
    return std::nullopt;
  // Each parallel loop indexes the output exactly once: one block per
  // output element, no two blocks writing the same one.
  llvm::SmallBitVector seen(numParallel);
  for (AffineExpr expr : generic.getMatchingIndexingMap(init).getResults()) {
    if (auto dim = dyn_cast<AffineDimExpr>(expr)) {
      if (dim.getPosition() >= numParallel || seen.test(dim.getPosition()))
        return std::nullopt;
      seen.set(dim.getPosition());
    } else if (!isa<AffineConstantExpr>(expr)) {
      return std::nullopt;
    }
  }
  if (!seen.all())
    return std::nullopt;
  // The payload: ... ; %r = combiner(%x, %out) ; linalg.yield %r.
  Block &body = generic.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  Value outArg = body.getArgument(body.getNumArguments() - 1);
  Operation *combiner = yield.getOperand(0).getDefiningOp();
  if (!combiner || combiner->getBlock() != &body ||
      combiner->getNumOperands() != 2 || !outArg.hasOneUse() ||
      outArg.getUses().begin()->getOwner() != combiner)
    return std::nullopt;
  std::optional<gpu::AllReduceOperation> kind = allReduceKind(combiner);
  if (!kind || !combiner->getResult(0).hasOneUse())
    return std::nullopt;
  Value contribution = combiner->getOperand(0) == outArg
                           ? combiner->getOperand(1)
                           : combiner->getOperand(0);
  if (contribution == outArg)
    return std::nullopt;
  return RowReduction{generic, numParallel, combiner, contribution, *kind};
}

/// Index values of `map`'s results given the loop indices `loops`.
SmallVector<Value> applyIndexingMap(OpBuilder &builder, Location loc,
                                    AffineMap map, ArrayRef<Value> loops) {
  SmallVector<Value> indices;
  for (AffineExpr expr : map.getResults()) {
    if (auto dim = dyn_cast<AffineDimExpr>(expr)) {
      indices.push_back(loops[dim.getPosition()]);
    } else if (auto constant = dyn_cast<AffineConstantExpr>(expr)) {
      indices.push_back(
          arith::ConstantIndexOp::create(builder, loc, constant.getValue()));
    } else {
      indices.push_back(affine::AffineApplyOp::create(
          builder, loc, AffineMap::get(map.getNumDims(), 0, expr), loops));
    }
  }
  return indices;
}

void emitRowReduction(const RowReduction &match, int64_t blockSize) {
  linalg::GenericOp op = match.op;
  OpBuilder builder(op);
  Location loc = op.getLoc();
  SmallVector<int64_t> sizes = op.getStaticLoopRanges();
  ArrayRef<int64_t> parallelSizes = ArrayRef(sizes).take_front(match.numParallel);
  ArrayRef<int64_t> reductionSizes = ArrayRef(sizes).drop_front(match.numParallel);
  int64_t rows = 1, length = 1;
  for (int64_t s : parallelSizes)
    rows *= s;
  for (int64_t s : reductionSizes)
    length *= s;
  if (rows == 0) {
    op.erase();
    return;
  }
  // The output usually was just filled (0 for a sum, -inf for a max): fold
  // the fill value in instead of a kernel that fills. Only ops without
  // memory effects may sit between the fill and the reduction.
  Value initialValue;
  {
    Operation *previous = op->getPrevNode();
    while (previous && !isa<linalg::FillOp>(previous) &&
           isMemoryEffectFree(previous))
      previous = previous->getPrevNode();
    auto fill = dyn_cast_or_null<linalg::FillOp>(previous);
    if (fill && fill.getOutputs().size() == 1 &&
        fill.getOutputs()[0] == op.getDpsInitOperand(0)->get() &&
        fill.getInputs()[0].getType().isF32()) {
      initialValue = fill.getInputs()[0];
      fill.erase();
    }
  }
  // A whole number of warps, no more threads than elements need.
  int64_t block = std::min<int64_t>(
      blockSize, std::max<int64_t>(32, llvm::alignTo(length, 32)));
  gpu::LaunchOp launch = createLaunch(builder, loc, rows, block);
  SmallVector<Value> loops =
      delinearize(builder, loc, launch.getBlockIds().x, parallelSizes);

  Value acc = neutralElement(builder, loc, match.kind);
  auto forOp = scf::ForOp::create(
      builder, loc, launch.getThreadIds().x,
      arith::ConstantIndexOp::create(builder, loc, length),
      arith::ConstantIndexOp::create(builder, loc, block), ValueRange{acc});
  {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(forOp.getBody());
    SmallVector<Value> all(loops);
    llvm::append_range(all, delinearize(builder, loc, forOp.getInductionVar(),
                                        reductionSizes));
    Block &body = op.getRegion().front();
    IRMapping mapping;
    for (OpOperand *input : op.getDpsInputOperands()) {
      Value memref = input->get();
      Value arg = body.getArgument(input->getOperandNumber());
      if (!isa<MemRefType>(memref.getType())) {
        mapping.map(arg, memref); // a scalar input
        continue;
      }
      SmallVector<Value> indices = applyIndexingMap(
          builder, loc, op.getMatchingIndexingMap(input), all);
      mapping.map(arg,
                  memref::LoadOp::create(builder, loc, memref, indices));
    }
    for (Operation &nested : body.without_terminator()) {
      if (&nested == match.combiner)
        continue;
      if (auto index = dyn_cast<linalg::IndexOp>(nested)) {
        mapping.map(index.getResult(), all[index.getDim()]);
        continue;
      }
      builder.clone(nested, mapping);
    }
    Value partial = forOp.getRegionIterArgs()[0];
    IRMapping combine;
    Value outArg = body.getArgument(body.getNumArguments() - 1);
    combine.map(outArg, partial);
    combine.map(match.contribution, mapping.lookup(match.contribution));
    Value next = builder.clone(*match.combiner, combine)->getResult(0);
    scf::YieldOp::create(builder, loc, next);
  }
  Value total = gpu::AllReduceOp::create(
      builder, loc, forOp.getResult(0),
      gpu::AllReduceOperationAttr::get(builder.getContext(), match.kind),
      /*uniform=*/builder.getUnitAttr());
  Value isFirst = arith::CmpIOp::create(
      builder, loc, arith::CmpIPredicate::eq, launch.getThreadIds().x,
      arith::ConstantIndexOp::create(builder, loc, 0));
  auto ifOp = scf::IfOp::create(builder, loc, isFirst, false);
  builder.setInsertionPointToStart(&ifOp.getThenRegion().front());
  OpOperand *init = op.getDpsInitOperand(0);
  SmallVector<Value> outIndices =
      applyIndexingMap(builder, loc, op.getMatchingIndexingMap(init), loops);
  Value old = initialValue
                  ? initialValue
                  : memref::LoadOp::create(builder, loc, init->get(),
                                           outIndices)
                        .getResult();
  IRMapping combine;
  Block &body = op.getRegion().front();
  combine.map(body.getArgument(body.getNumArguments() - 1), old);
  combine.map(match.contribution, total);
  Value result = builder.clone(*match.combiner, combine)->getResult(0);
  memref::StoreOp::create(builder, loc, result, init->get(), outIndices);
  op.erase();
}

//===----------------------------------------------------------------------===//
// Fill forwarding
//===----------------------------------------------------------------------===//

/// True when `op` may write `buffer` (or memory we cannot see through).
bool mayWrite(Operation *op, Value buffer) {
  if (isMemoryEffectFree(op) || isa<memref::AllocOp, memref::AllocaOp>(op))
    return false;
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
    return llvm::is_contained(linalgOp.getDpsInits(), buffer);
  if (auto copy = dyn_cast<memref::CopyOp>(op))
    return copy.getTarget() == buffer;
  return true;
}

/// Bufferization copies a filled buffer when several reductions start from
/// one filled tensor: `fill %a; copy %a, %b; reduce into %b`. Fill %b
/// instead (one kernel less, and cuda-map-to-kernels then folds the fill
/// into the reduction), and drop %a when nothing else reads it.
void forwardFillsThroughCopies(func::FuncOp func) {
  for (auto copy :
       llvm::make_early_inc_range(func.getBody().front().getOps<memref::CopyOp>())) {
    Value source = copy.getSource();
    Operation *previous = copy->getPrevNode();
    while (previous && !isa<linalg::FillOp>(previous) &&
           !mayWrite(previous, source))
      previous = previous->getPrevNode();
    auto fill = dyn_cast_or_null<linalg::FillOp>(previous);
    if (!fill || fill.getOutputs().size() != 1 ||
        fill.getOutputs()[0] != source ||
        source.getType() != copy.getTarget().getType())
      continue;
    OpBuilder builder(copy);
    linalg::FillOp::create(builder, copy.getLoc(), fill.getInputs()[0],
                           copy.getTarget());
    copy.erase();
    // The filled buffer may now be write-only: remove it.
    auto alloc = source.getDefiningOp<memref::AllocOp>();
    if (!alloc || !llvm::all_of(alloc->getUsers(), [](Operation *user) {
          return isa<linalg::FillOp, memref::DeallocOp>(user);
        }))
      continue;
    for (Operation *user : llvm::make_early_inc_range(alloc->getUsers()))
      user->erase();
    alloc.erase();
  }
}

//===----------------------------------------------------------------------===//
// Host-side runs -> single-thread kernels
//===----------------------------------------------------------------------===//

struct MapToKernelsPass
    : pipedream::cuda::impl::MapToKernelsPassBase<MapToKernelsPass> {
  using Base::Base;

  /// Moves `run` (consecutive ops of one block) into a 1x1 launch.
  LogicalResult wrapRun(ArrayRef<Operation *> run) {
    llvm::SmallPtrSet<Operation *, 16> inRun(run.begin(), run.end());
    // A value the host still needs must not be computed in the kernel:
    // hoist pure ops that only depend on values from before the run.
    SmallVector<Operation *> kept;
    for (Operation *op : run) {
      bool usedOutside = llvm::any_of(op->getUsers(), [&](Operation *user) {
        Operation *ancestor = run.front()->getBlock()->findAncestorOpInBlock(*user);
        return !ancestor || !inRun.contains(ancestor);
      });
      if (!usedOutside) {
        kept.push_back(op);
        continue;
      }
      bool hoistable = isMemoryEffectFree(op) && op->getNumRegions() == 0 &&
                       llvm::none_of(op->getOperands(), [&](Value v) {
                         Operation *def = v.getDefiningOp();
                         return def && inRun.contains(def);
                       });
      if (!hoistable)
        return op->emitError("a value computed from device memory is used by "
                             "host code; the CUDA target cannot compile it");
      op->moveBefore(run.front());
      inRun.erase(op);
    }
    if (kept.empty())
      return success();
    OpBuilder builder(kept.front());
    gpu::LaunchOp launch = createLaunch(builder, kept.front()->getLoc(), 1, 1);
    Operation *terminator = launch.getBody().front().getTerminator();
    for (Operation *op : kept)
      op->moveBefore(terminator);
    return success();
  }

  LogicalResult processBlock(Block &block) {
    SmallVector<Operation *> run, pending;
    auto flush = [&]() -> LogicalResult {
      pending.clear();
      if (run.empty())
        return success();
      LogicalResult result = wrapRun(run);
      run.clear();
      return result;
    };
    for (Operation &op : llvm::make_early_inc_range(block)) {
      if (op.hasTrait<OpTrait::IsTerminator>() || isa<gpu::LaunchOp>(op)) {
        if (failed(flush()))
          return failure();
        continue;
      }
      if (auto parallel = dyn_cast<scf::ParallelOp>(op)) {
        if (failed(flush()))
          return failure();
        if (failed(mapParallelLoop(parallel, blockSize)))
          run.push_back(&op); // non-constant bounds: one thread
        continue;
      }
      if (hasSerialDeviceWork(&op)) {
        run.append(pending.begin(), pending.end());
        pending.clear();
        run.push_back(&op);
        continue;
      }
      if (op.getNumRegions() != 0 && containsParallelLoop(&op)) {
        if (failed(flush()))
          return failure();
        for (Region &region : op.getRegions())
          for (Block &nested : region)
            if (failed(processBlock(nested)))
              return failure();
        continue;
      }
      if (!run.empty() && isMemoryEffectFree(&op) && op.getNumRegions() == 0) {
        pending.push_back(&op);
        continue;
      }
      if (failed(flush()))
        return failure();
    }
    return flush();
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isDeclaration())
      return;
    IRRewriter rewriter(&getContext());

    forwardFillsThroughCopies(func);

    // memref.copy -> linalg.copy (a kernel like any other).
    SmallVector<memref::CopyOp> copies;
    func.walk([&](memref::CopyOp copy) {
      if (!copy->getParentOfType<gpu::LaunchOp>())
        copies.push_back(copy);
    });
    for (memref::CopyOp copy : copies) {
      rewriter.setInsertionPoint(copy);
      rewriter.replaceOpWithNewOp<linalg::CopyOp>(copy, copy.getSource(),
                                                  copy.getTarget());
    }

    // Row reductions first: they absorb the fill before them. Only those
    // on the host level (not inside a loop that becomes a single-thread
    // kernel) get their own kernel.
    if (rowReductions) {
      SmallVector<linalg::LinalgOp> reductions;
      for (Operation &op : func.getBody().front())
        if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
          if (linalgOp.getNumReductionLoops() > 0)
            reductions.push_back(linalgOp);
      for (linalg::LinalgOp op : reductions) {
        // Named reductions (linalg.reduce) are matched in generic form.
        if (!isa<linalg::GenericOp>(op.getOperation()) &&
            !linalg::isaContractionOpInterface(op)) {
          rewriter.setInsertionPoint(op);
          FailureOr<linalg::GenericOp> generic =
              linalg::generalizeNamedOp(rewriter, op);
          if (succeeded(generic))
            op = *generic;
        }
        if (std::optional<RowReduction> match = matchRowReduction(op))
          emitRowReduction(*match, blockSize);
      }
    }

    SmallVector<linalg::LinalgOp> linalgOps;
    func.walk([&](linalg::LinalgOp op) {
      if (!op->getParentOfType<gpu::LaunchOp>())
        linalgOps.push_back(op);
    });
    for (linalg::LinalgOp op : linalgOps) {
      rewriter.setInsertionPoint(op);
      if (failed(linalg::linalgOpToParallelLoops(rewriter, op))) {
        op->emitError("cannot lower this linalg op to loops for the GPU");
        return signalPassFailure();
      }
      rewriter.eraseOp(op);
    }

    if (failed(processBlock(func.getBody().front())))
      return signalPassFailure();

    // Kernels read constants from their own module: sink the get_global
    // (gpu-kernel-outlining then copies the memref.global there).
    func.walk([&](gpu::LaunchOp launch) {
      SmallVector<memref::GetGlobalOp> globals;
      launch.getBody().walk([&](Operation *op) {
        for (Value operand : op->getOperands())
          if (auto global = operand.getDefiningOp<memref::GetGlobalOp>())
            if (!launch->isAncestor(global))
              globals.push_back(global);
      });
      for (memref::GetGlobalOp global : globals) {
        OpBuilder builder(&launch.getBody().front(),
                          launch.getBody().front().begin());
        Operation *clone = builder.clone(*global);
        global.getResult().replaceUsesWithIf(
            clone->getResult(0), [&](OpOperand &use) {
              return launch->isAncestor(use.getOwner());
            });
      }
    });
  }
};

} // namespace
