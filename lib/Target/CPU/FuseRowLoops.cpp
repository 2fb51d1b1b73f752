//===- FuseRowLoops.cpp - one loop over the rows of consecutive nests -----===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// cpu-fuse-row-loops (Passes.td): consecutive loop nests of a function body
// that iterate over the same leading dimensions (the rows of a LayerNorm,
// softmax or loss: statistics, then the elementwise ops that use them)
// become one nest over those dimensions whose body runs each nest's row in
// turn, while the row is in L1. Legal when every access to a buffer that
// one nest writes and another accesses selects the row by the loops'
// induction variables: then the nests touch different rows in different
// iterations (legal() below has the whole rule).
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
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/STLExtras.h"

namespace pipedream::cpu {
#define GEN_PASS_DEF_FUSEROWLOOPSPASS
#include "pipedream/Target/CPU/Passes.h.inc"
} // namespace pipedream::cpu

using namespace mlir;

namespace {

/// Whether `buffer` is a fresh allocation of the function: it aliases no
/// other buffer. Anything else (the entry point's buffers, globals) may
/// alias every other such buffer (an output updated in place is its
/// input's buffer).
bool isAllocation(Value buffer) {
  return isa_and_present<memref::AllocOp, memref::AllocaOp>(
      buffer.getDefiningOp());
}

/// A load or store in a nest: its memref, indices, and the buffer the
/// memref is a view of (or itself).
struct Access {
  Value memref;
  ValueRange indices;
  bool write;
  Value base;
};

/// A loop nest of the group being formed: its root and its band (the
/// perfectly nested outer loops, lower bound 0, step 1, constant upper
/// bound; between them only pure ops).
struct Nest {
  scf::ForOp root;
  SmallVector<scf::ForOp> band;
  SmallVector<Access> accesses;
};

/// The band of `root`: its perfectly nested outer loops (at most `limit`).
SmallVector<scf::ForOp> bandOf(scf::ForOp root, unsigned limit) {
  SmallVector<scf::ForOp> band;
  scf::ForOp loop = root;
  while (loop && band.size() < limit) {
    std::optional<int64_t> lb = getConstantIntValue(loop.getLowerBound()),
                           step = getConstantIntValue(loop.getStep()),
                           ub = getConstantIntValue(loop.getUpperBound());
    if (!lb || *lb != 0 || !step || *step != 1 || !ub ||
        loop.getNumRegionIterArgs() != 0)
      break;
    band.push_back(loop);
    // The next level: the body's one loop, with pure ops before it and
    // nothing after it.
    scf::ForOp inner;
    bool perfect = true;
    for (Operation &op : loop.getBody()->without_terminator()) {
      if (auto f = dyn_cast<scf::ForOp>(op); f && !inner) {
        inner = f;
        continue;
      }
      if (inner || op.getNumRegions() != 0 || !isPure(&op)) {
        perfect = false;
        break;
      }
    }
    loop = perfect ? inner : scf::ForOp();
  }
  return band;
}

/// Whether `op` is a load or store the pass reads the indices of.
bool isAccess(Operation *op) {
  return isa<memref::LoadOp, memref::StoreOp, vector::LoadOp, vector::StoreOp>(
      op);
}

/// The memref operand and the indices of an access (isAccess).
std::pair<OpOperand *, OperandRange> addressOf(Operation *access) {
  if (auto load = dyn_cast<memref::LoadOp>(access))
    return {&load.getMemrefMutable(), load.getIndices()};
  if (auto store = dyn_cast<memref::StoreOp>(access))
    return {&store.getMemrefMutable(), store.getIndices()};
  if (auto load = dyn_cast<vector::LoadOp>(access))
    return {&load.getBaseMutable(), load.getIndices()};
  auto store = cast<vector::StoreOp>(access);
  return {&store.getBaseMutable(), store.getIndices()};
}

/// The loads and stores of `root` into `out`; false when the nest has
/// another op with memory effects (a call, a copy).
bool collectAccesses(scf::ForOp root, SmallVectorImpl<Access> &out) {
  WalkResult result = root->walk([&](Operation *op) {
    if (isAccess(op)) {
      auto [address, indices] = addressOf(op);
      Value memref = address->get();
      out.push_back({memref, indices, isa<memref::StoreOp, vector::StoreOp>(op),
                     memref::skipViewLikeOps(cast<MemrefValue>(memref))});
    } else if (!isa<scf::ForOp, scf::YieldOp>(op) && !isMemoryEffectFree(op))
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return !result.wasInterrupted();
}

/// Whether `index` is the induction variable `iv` (or an identity
/// affine.apply of it, as linalg's loop lowering writes indices).
bool isIv(Value index, Value iv) {
  while (index != iv) {
    auto apply = index.getDefiningOp<affine::AffineApplyOp>();
    if (!apply || apply.getNumOperands() != 1 ||
        !apply.getAffineMap().isIdentity())
      return false;
    index = apply.getOperand(0);
  }
  return true;
}

/// The indices of `base`'s first `depth` dimensions that an access of
/// `memref` at `indices` touches: `memref` is `base`, or an expand_shape of
/// it (recursively) that keeps those dimensions (the first `depth` groups
/// start at dimensions 0, 1, ... and their other dimensions have size 1: a
/// reduction's keepdims view [8, 128] -> [8, 128, 1]). None for another
/// view (a collapse_shape mixes rows).
std::optional<SmallVector<Value>>
leadingIndices(Value memref, ValueRange indices, Value base, unsigned depth) {
  if (indices.size() < depth)
    return std::nullopt;
  while (memref != base) {
    auto expand = memref.getDefiningOp<memref::ExpandShapeOp>();
    if (!expand)
      return std::nullopt;
    SmallVector<ReassociationIndices> groups = expand.getReassociationIndices();
    MemRefType type = expand.getResultType();
    if (groups.size() < depth)
      return std::nullopt;
    for (unsigned q = 0; q < depth; ++q) {
      if (groups[q].front() != static_cast<int64_t>(q))
        return std::nullopt;
      for (int64_t dim : ArrayRef<int64_t>(groups[q]).drop_front())
        if (type.getDimSize(dim) != 1)
          return std::nullopt;
    }
    memref = expand.getSrc();
  }
  return SmallVector<Value>(indices.take_front(depth));
}

/// Whether the nests, fused over their first `depth` band loops, compute
/// what they computed one after the other: every access to a buffer that
/// one of them writes and another one accesses selects the row of the
/// buffer (itself or through a keepdims view, leadingIndices) by the band's
/// induction variables (a buffer that one nest alone accesses, such as a
/// column sum's, sees that nest's iterations in their order); when they
/// write a buffer of the entry point, it is the only one they access. Then
/// iteration (i, j) of one nest and iteration (i', j') != (i, j) of another
/// touch different elements of every written buffer.
bool legal(MutableArrayRef<Nest> nests, unsigned depth) {
  llvm::SmallPtrSet<Value, 8> written, external, shared;
  llvm::DenseMap<Value, size_t> accessedBy;
  bool externalWritten = false;
  for (auto [index, nest] : llvm::enumerate(nests))
    for (const Access &a : nest.accesses) {
      Value base = a.base;
      if (!isAllocation(base))
        external.insert(base);
      if (a.write) {
        written.insert(base);
        externalWritten |= !isAllocation(base);
      }
      auto [it, inserted] = accessedBy.try_emplace(base, index);
      if (!inserted && it->second != index)
        shared.insert(base);
    }
  // Two buffers of the entry point may overlap in any way (an output
  // updated in place is its input's buffer, and a caller may pass views
  // of one array): with one of them written, no other may be accessed.
  if (externalWritten && external.size() > 1)
    return false;
  for (Nest &nest : nests)
    for (const Access &a : nest.accesses) {
      Value base = a.base;
      // Only read, or only one nest's: any element, any view (fused, a
      // nest's own iterations keep their order).
      if (!written.contains(base) || !shared.contains(base))
        continue;
      std::optional<SmallVector<Value>> row =
          leadingIndices(a.memref, a.indices, base, depth);
      if (!row)
        return false;
      for (unsigned level = 0; level < depth; ++level)
        if (!isIv((*row)[level], nest.band[level].getInductionVar()))
          return false;
    }
  return true;
}

/// Whether `nest` and the nests of `group` can run in either order: no
/// buffer one of them writes is accessed by the other, and they do not both
/// access buffers of the entry point (which may alias) when one writes one.
bool independent(ArrayRef<Nest> group, const Nest &nest) {
  auto bases = [](const Nest &n, bool writes,
                  llvm::SmallPtrSetImpl<Value> &out) {
    for (const Access &a : n.accesses)
      if (!writes || a.write)
        out.insert(a.base);
  };
  llvm::SmallPtrSet<Value, 16> groupWrites, groupAll, nestWrites, nestAll;
  for (const Nest &n : group) {
    bases(n, true, groupWrites);
    bases(n, false, groupAll);
  }
  bases(nest, true, nestWrites);
  bases(nest, false, nestAll);
  auto external = [](Value base) { return !isAllocation(base); };
  bool groupExternal = llvm::any_of(groupAll, external),
       nestExternal = llvm::any_of(nestAll, external);
  if (groupExternal && nestExternal &&
      (llvm::any_of(groupWrites, external) ||
       llvm::any_of(nestWrites, external)))
    return false;
  return llvm::none_of(nestWrites,
                       [&](Value b) { return groupAll.contains(b); }) &&
         llvm::none_of(groupWrites,
                       [&](Value b) { return nestAll.contains(b); });
}

/// The number of leading band loops `a` and `b` share (equal trip counts).
unsigned commonDepth(Nest &a, Nest &b) {
  unsigned depth = 0;
  while (depth < a.band.size() && depth < b.band.size() &&
         getConstantIntValue(a.band[depth].getUpperBound()) ==
             getConstantIntValue(b.band[depth].getUpperBound()))
    ++depth;
  return depth;
}

/// Moves `source`'s body to the end of `target`'s over `depth` levels of
/// their bands: at each level but the last, source's pure ops go before
/// target's next loop and the two next loops are merged in turn.
void merge(RewriterBase &rewriter, MutableArrayRef<scf::ForOp> target,
           MutableArrayRef<scf::ForOp> source, unsigned depth) {
  for (unsigned level = 0; level < depth; ++level) {
    scf::ForOp t = target[level], s = source[level];
    Block *body = t.getBody();
    // Source's ops before its next loop (pure: index computations).
    SmallVector<Operation *> prefix;
    if (level + 1 < depth)
      for (Operation &op : s.getBody()->without_terminator()) {
        if (&op == source[level + 1].getOperation())
          break;
        prefix.push_back(&op);
      }
    rewriter.eraseOp(s.getBody()->getTerminator());
    rewriter.inlineBlockBefore(s.getBody(), body->getTerminator(),
                               {t.getInductionVar()});
    rewriter.eraseOp(s);
    if (level + 1 < depth)
      for (Operation *op : prefix)
        rewriter.moveOpBefore(op, target[level + 1]);
  }
}

/// The loads and stores of `buffer` (an allocation) and of its
/// expand_shape views into `accesses`, the views into `views` (each after
/// the memref it views); false when it has another user than these and
/// its deallocation.
bool collectRowUsers(Value buffer, SmallVectorImpl<Operation *> &accesses,
                     SmallVectorImpl<memref::ExpandShapeOp> &views) {
  SmallVector<Value> memrefs = {buffer};
  for (size_t i = 0; i < memrefs.size(); ++i)
    for (Operation *user : memrefs[i].getUsers()) {
      if (isAccess(user)) {
        accesses.push_back(user);
      } else if (auto view = dyn_cast<memref::ExpandShapeOp>(user)) {
        views.push_back(view);
        memrefs.push_back(view.getResult());
      } else if (!(isa<memref::DeallocOp>(user) && i == 0)) {
        return false;
      }
    }
  return true;
}

/// The loops around `access` up to and including `root`, outermost first,
/// as far as they step by 1 from 0 (an induction variable is then the
/// index of its iteration).
SmallVector<scf::ForOp> loopsAround(Operation *access, Operation *root) {
  SmallVector<scf::ForOp> loops;
  for (Operation *op = access->getParentOp(); op; op = op->getParentOp()) {
    if (auto loop = dyn_cast<scf::ForOp>(op))
      loops.push_back(loop);
    if (op == root)
      break;
  }
  std::reverse(loops.begin(), loops.end());
  for (auto [level, loop] : llvm::enumerate(loops)) {
    std::optional<int64_t> lb = getConstantIntValue(loop.getLowerBound()),
                           step = getConstantIntValue(loop.getStep());
    if (!lb || *lb != 0 || !step || *step != 1) {
      loops.truncate(level);
      break;
    }
  }
  return loops;
}

/// The number of leading dimensions of `buffer` that every access indexes
/// by the induction variables of the same loops (the outermost ones of one
/// top-level nest, at levels 0, 1, ...), on the buffer or through keepdims
/// views (leadingIndices); 0 when there is none, or the accesses are in
/// different nests. The loops need not be perfectly nested: what counts is
/// that every access of the buffer is inside them (a nest fused at depth 2
/// whose last member joined at depth 1 still has its rows at depth 2 for
/// the buffers its other members alone access).
unsigned rowDepth(Value buffer, ArrayRef<Operation *> accesses) {
  Block *block = buffer.getParentBlock();
  Operation *root = nullptr;
  for (Operation *access : accesses) {
    Operation *top = block->findAncestorOpInBlock(*access);
    if (!top || (root && top != root))
      return 0;
    root = top;
  }
  if (!isa_and_present<scf::ForOp>(root))
    return 0;
  // The loops around every access: their common outer ones.
  SmallVector<scf::ForOp> band;
  for (auto [index, access] : llvm::enumerate(accesses)) {
    SmallVector<scf::ForOp> loops = loopsAround(access, root);
    if (index == 0) {
      band = std::move(loops);
      continue;
    }
    size_t common = 0;
    while (common < band.size() && common < loops.size() &&
           band[common] == loops[common])
      ++common;
    band.truncate(common);
  }
  unsigned depth = std::min<int64_t>(
      band.size(), cast<MemRefType>(buffer.getType()).getRank());
  for (Operation *access : accesses) {
    auto [memref, indices] = addressOf(access);
    // A vector access spans the memref's last dimensions from its
    // indices: those stay whole.
    VectorType vector;
    if (auto load = dyn_cast<vector::LoadOp>(access))
      vector = load.getVectorType();
    else if (auto store = dyn_cast<vector::StoreOp>(access))
      vector = store.getVectorType();
    if (vector) {
      int64_t rank = cast<MemRefType>(memref->get().getType()).getRank();
      depth = std::min<int64_t>(depth, rank - vector.getRank());
    }
    unsigned matched = 0;
    for (unsigned d = depth; d > 0 && !matched; --d) {
      std::optional<SmallVector<Value>> row =
          leadingIndices(memref->get(), indices, buffer, d);
      if (row && llvm::all_of(llvm::seq(d), [&](unsigned level) {
            return isIv((*row)[level], band[level].getInductionVar());
          }))
        matched = d;
    }
    depth = matched;
    if (depth == 0)
      return 0;
  }
  return depth;
}

struct FuseRowLoopsPass
    : pipedream::cpu::impl::FuseRowLoopsPassBase<FuseRowLoopsPass> {
  void runOnOperation() override {
    func::FuncOp function = getOperation();
    // On tensors, nothing is a loop nest over buffers yet.
    WalkResult bufferized = function.walk([&](linalg::LinalgOp op) {
      if (op.hasPureBufferSemantics())
        return WalkResult::advance();
      op->emitOpError("cpu-fuse-row-loops expects bufferized ops (memref "
                      "operands); run one-shot-bufferize first");
      return WalkResult::interrupt();
    });
    if (bufferized.wasInterrupted())
      return signalPassFailure();
    IRRewriter rewriter(&getContext());
    for (Block &block : function.getBody())
      if (failed(lowerToLoops(rewriter, block)))
        return signalPassFailure();
    for (Block &block : function.getBody())
      fuseBlock(rewriter, block);
    shrinkRowTemporaries(rewriter, function);
  }

  /// A temporary that only one nest accesses, each access at the row of
  /// the nest's band iteration (leading indices the band's induction
  /// variables, rowDepth), holds one row at a time: iteration (i, j)
  /// writes and reads only row (i, j), so the values of a row live within
  /// its iteration. The buffer becomes that one row (leading dimensions
  /// of size 1, indexed by 0) and stays in L1, instead of a tensor written
  /// to memory and read back (a fused LayerNorm backward's 4 row-sized
  /// intermediates of [8, 128, 256]).
  void shrinkRowTemporaries(RewriterBase &rewriter, func::FuncOp function) {
    SmallVector<memref::AllocOp> allocs;
    function.walk([&](memref::AllocOp alloc) {
      MemRefType type = alloc.getType();
      if (type.hasStaticShape() && type.getLayout().isIdentity())
        allocs.push_back(alloc);
    });
    for (memref::AllocOp alloc : allocs) {
      SmallVector<Operation *> accesses;
      SmallVector<memref::ExpandShapeOp> views;
      if (!collectRowUsers(alloc, accesses, views) || accesses.empty())
        continue;
      unsigned depth = rowDepth(alloc, accesses);
      if (depth == 0)
        continue;
      auto rowOf = [&](MemRefType type) {
        SmallVector<int64_t> shape(type.getShape());
        std::fill_n(shape.begin(), depth, 1);
        return MemRefType::get(shape, type.getElementType(),
                               MemRefLayoutAttrInterface(),
                               type.getMemorySpace());
      };
      rewriter.setInsertionPoint(alloc);
      auto row = memref::AllocOp::create(rewriter, alloc.getLoc(),
                                         rowOf(alloc.getType()),
                                         alloc.getAlignmentAttr());
      IRMapping mapped;
      mapped.map(alloc.getResult(), row.getResult());
      for (memref::ExpandShapeOp view : views) {
        rewriter.setInsertionPoint(view);
        auto rowView = memref::ExpandShapeOp::create(
            rewriter, view.getLoc(), rowOf(view.getResultType()),
            mapped.lookup(view.getSrc()), view.getReassociationIndices());
        mapped.map(view.getResult(), rowView.getResult());
      }
      Value zero;
      {
        OpBuilder::InsertionGuard guard(rewriter);
        rewriter.setInsertionPointAfter(row);
        zero = arith::ConstantIndexOp::create(rewriter, alloc.getLoc(), 0);
      }
      for (Operation *access : accesses) {
        auto [memref, indices] = addressOf(access);
        unsigned first = indices.getBeginOperandIndex();
        OpOperand *address = memref;
        rewriter.modifyOpInPlace(access, [&] {
          address->set(mapped.lookup(address->get()));
          for (unsigned d = 0; d < depth; ++d)
            access->setOperand(first + d, zero);
        });
      }
      for (memref::ExpandShapeOp view : llvm::reverse(views))
        rewriter.eraseOp(view);
      rewriter.replaceOp(alloc, row);
      ++numShrunk;
    }
  }

  /// The block's linalg ops on buffers (and copies between buffers of the
  /// identity layout) as the loops convert-linalg-to-loops makes of them
  /// later: nests that can join a group.
  LogicalResult lowerToLoops(RewriterBase &rewriter, Block &block) {
    SmallVector<Operation *> ops;
    for (Operation &op : block) {
      if (auto copy = dyn_cast<memref::CopyOp>(op)) {
        auto source = cast<MemRefType>(copy.getSource().getType());
        auto target = cast<MemRefType>(copy.getTarget().getType());
        if (source.hasStaticShape() && source.getLayout().isIdentity() &&
            target.getLayout().isIdentity() && source.getRank() > 0)
          ops.push_back(&op);
        continue;
      }
      auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
      if (linalgOp && linalgOp.hasPureBufferSemantics() &&
          linalgOp.getNumLoops() > 0 &&
          llvm::none_of(linalgOp.getStaticLoopRanges(), ShapedType::isDynamic))
        ops.push_back(&op);
    }
    for (Operation *op : ops) {
      rewriter.setInsertionPoint(op);
      Operation *lowered = op;
      if (auto copy = dyn_cast<memref::CopyOp>(op))
        lowered = linalg::CopyOp::create(rewriter, copy.getLoc(),
                                         copy.getSource(), copy.getTarget());
      if (failed(linalg::linalgOpToLoops(rewriter,
                                         cast<linalg::LinalgOp>(lowered))))
        return op->emitError("cpu-fuse-row-loops: cannot lower to loops");
      if (lowered != op)
        rewriter.eraseOp(lowered);
      rewriter.eraseOp(op);
    }
    return success();
  }

  /// Greedy: each nest joins the group before it when the ops in between
  /// can stay out of it (pure ops and allocations move before the group,
  /// which stays at its first nest; deallocations stay after it) and the
  /// group is legal at the deepest depth both share (at most the group's
  /// depth so far: legal at a depth, the merged nests are legal at a
  /// smaller one).
  void fuseBlock(RewriterBase &rewriter, Block &block) {
    SmallVector<Nest> group;
    unsigned depth = 0;
    SmallVector<Operation *> between;
    auto restart = [&](Nest *nest) {
      group.clear();
      between.clear();
      depth = 0;
      if (nest)
        group.push_back(std::move(*nest));
    };
    for (Operation *op = block.empty() ? nullptr : &block.front(); op;) {
      Operation *next = op->getNextNode();
      Nest nest;
      if (auto loop = dyn_cast<scf::ForOp>(op);
          loop && loop.getNumResults() == 0) {
        nest.root = loop;
        nest.band = bandOf(loop, kMaxDepth);
        if (!collectAccesses(loop, nest.accesses))
          nest.band.clear();
      }
      if (nest.band.empty()) {
        // Not a nest: it waits between the group's nests if it can move.
        if (!group.empty() && movable(op, group.front().root, between))
          between.push_back(op);
        else
          restart(nullptr);
        op = next;
        continue;
      }
      if (group.empty() || group.size() >= kMaxNests) {
        restart(&nest);
        op = next;
        continue;
      }
      unsigned common = commonDepth(group.front(), nest);
      if (depth != 0)
        common = std::min(common, depth);
      group.push_back(nest);
      unsigned chosen = 0;
      for (unsigned d = common; d > 0 && !chosen; --d)
        if (legal(group, d))
          chosen = d;
      if (!chosen) {
        group.pop_back();
        // A nest the group does not depend on (a column sum's zero fill
        // between a LayerNorm's row nests and its column sums) moves before
        // the group, which goes on.
        if (independent(group, nest)) {
          Operation *first = group.front().root;
          moveBefore(rewriter, between, first);
          rewriter.moveOpBefore(nest.root, first);
          ++numHoisted;
          op = next;
          continue;
        }
        restart(&nest);
        op = next;
        continue;
      }
      depth = chosen;
      Nest &first = group.front();
      moveBefore(rewriter, between, first.root);
      merge(rewriter, first.band, group.back().band, depth);
      ++numFused;
      // The merged accesses now index with the first nest's loops.
      group.back().band = first.band;
      group.back().root = first.root;
      op = next;
    }
  }

  /// The ops waiting `between` nests of a group (see movable) out of its
  /// way: all but the deallocations move before `first`, in their order.
  static void moveBefore(RewriterBase &rewriter,
                         SmallVectorImpl<Operation *> &between,
                         Operation *first) {
    for (Operation *op : between)
      if (!isa<memref::DeallocOp>(op))
        rewriter.moveOpBefore(op, first);
    between.clear();
  }

  /// Whether `op`, between nests of a group, can stay out of the fused
  /// nest: a deallocation stays after it; a pure op or an allocation
  /// moves before `first`, its operands defined before `first` or by the
  /// ops `before` it that move too.
  static bool movable(Operation *op, Operation *first,
                      ArrayRef<Operation *> before) {
    if (isa<memref::DeallocOp>(op))
      return true;
    if (op->getNumRegions() != 0 ||
        !(isPure(op) || isa<memref::AllocOp, memref::AllocaOp>(op)))
      return false;
    return llvm::all_of(op->getOperands(), [&](Value v) {
      Operation *def = v.getDefiningOp();
      if (!def || def->getBlock() != first->getBlock() ||
          def->isBeforeInBlock(first))
        return true;
      return llvm::is_contained(before, def) && !isa<memref::DeallocOp>(def);
    });
  }

  /// Bounds of the work: band levels looked at, nests per fused nest (a
  /// kernel LLVM compiles in reasonable time).
  static constexpr unsigned kMaxDepth = 8;
  static constexpr size_t kMaxNests = 32;
};

} // namespace
