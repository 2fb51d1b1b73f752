//===- PlanTemporaries.cpp - a function's temporaries in one buffer -------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The temporaries of a function's top-level block get live ranges (from the
// alloc to the last use of anything derived from it) and byte offsets in
// one buffer, so that a temporary reuses the bytes of one no longer used
// (see Passes.td).
//
//===----------------------------------------------------------------------===//

#include "pipedream/Target/CPU/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>

namespace pipedream::cpu {
#define GEN_PASS_DEF_PLANTEMPORARIESPASS
#include "pipedream/Target/CPU/Passes.h.inc"
} // namespace pipedream::cpu

using namespace mlir;

namespace {

/// The least alignment of a placed temporary (a cache line, what the
/// bufferization asks of its allocations).
constexpr int64_t kMinAlignment = 64;

/// A temporary of the block: its alloc and dealloc, its live range as
/// positions of operations in the block (both ends included), its size
/// and alignment in bytes, and the offset it gets.
struct Temporary {
  memref::AllocOp alloc;
  memref::DeallocOp dealloc;
  int64_t start = 0;
  int64_t end = 0;
  int64_t bytes = 0;
  int64_t alignment = kMinAlignment;
  int64_t offset = 0;
};

bool overlap(const Temporary &a, const Temporary &b) {
  return a.start <= b.end && b.start <= a.end;
}

/// The bytes of `alloc`'s memref when the pass may place it: a static
/// shape, the identity layout, the default memory space, and elements of
/// whole bytes.
std::optional<int64_t> placeableBytes(memref::AllocOp alloc) {
  MemRefType type = alloc.getType();
  if (!type.hasStaticShape() || !type.getLayout().isIdentity() ||
      type.getMemorySpace() || !alloc.getDynamicSizes().empty() ||
      !alloc.getSymbolOperands().empty())
    return std::nullopt;
  Type element = type.getElementType();
  if (!element.isIntOrFloat())
    return std::nullopt;
  unsigned bits = element.getIntOrFloatBitWidth();
  if (bits == 0 || bits % 8 != 0)
    return std::nullopt;
  int64_t bytes = type.getNumElements() * int64_t(bits / 8);
  if (bytes <= 0)
    return std::nullopt;
  return bytes;
}

/// Whether `use` lets the value it uses leave the reach of this analysis:
/// returned, yielded out of a region, passed to a successor block, or
/// stored to memory as a value (not as the address).
bool escapes(OpOperand &use) {
  Operation *user = use.getOwner();
  if (user->hasTrait<OpTrait::IsTerminator>())
    return true;
  if (auto store = dyn_cast<memref::StoreOp>(user))
    return use.get() == store.getValueToStore();
  if (auto store = dyn_cast<LLVM::StoreOp>(user))
    return use.get() == store.getValue();
  return false;
}

/// `temp.end` and `temp.dealloc` for the alloc of `temp`: the last position
/// in `block` of a use of the alloc or of anything derived from it (any
/// result of an operation that uses it), and its one dealloc there. False
/// when the temporary cannot be placed (a derived value escapes; no
/// dealloc in the block, or a dealloc of something derived).
bool findLiveRange(Temporary &temp, Block &block,
                   const llvm::DenseMap<Operation *, int64_t> &position) {
  Value root = temp.alloc.getResult();
  SmallVector<Value> worklist{root};
  llvm::SmallPtrSet<Operation *, 16> visited;
  temp.end = temp.start;
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      if (auto dealloc = dyn_cast<memref::DeallocOp>(user)) {
        if (value != root || dealloc->getBlock() != &block || temp.dealloc)
          return false;
        temp.dealloc = dealloc;
        continue;
      }
      if (escapes(use))
        return false;
      Operation *ancestor = block.findAncestorOpInBlock(*user);
      if (!ancestor)
        return false;
      temp.end = std::max(temp.end, position.lookup(ancestor));
      if (visited.insert(user).second)
        llvm::append_range(worklist, user->getResults());
    }
  }
  // The dealloc comes after every use (the deallocation pipeline puts it
  // there); one before a use would be a use after free, not ours to move.
  return temp.dealloc && position.lookup(temp.dealloc) > temp.end;
}

/// Offsets for `temps` (largest first, each at the lowest aligned offset
/// free of the temporaries already placed whose live ranges overlap its
/// own); returns the bytes the buffer needs.
int64_t assignOffsets(MutableArrayRef<Temporary> temps) {
  SmallVector<Temporary *> order;
  for (Temporary &t : temps)
    order.push_back(&t);
  // Starts are distinct: a total order, the same on every run.
  llvm::sort(order, [](const Temporary *a, const Temporary *b) {
    return a->bytes != b->bytes ? a->bytes > b->bytes : a->start < b->start;
  });
  SmallVector<Temporary *> placed;
  SmallVector<std::pair<int64_t, int64_t>> busy;
  int64_t total = 0;
  for (Temporary *t : order) {
    busy.clear();
    for (Temporary *p : placed)
      if (overlap(*t, *p))
        busy.emplace_back(p->offset, p->offset + p->bytes);
    llvm::sort(busy);
    int64_t offset = 0;
    for (auto [begin, end] : busy) {
      if (int64_t(llvm::alignTo(offset, t->alignment)) + t->bytes <= begin)
        break;
      offset = std::max(offset, end);
    }
    t->offset = int64_t(llvm::alignTo(offset, t->alignment));
    total = std::max(total, t->offset + t->bytes);
    placed.push_back(t);
  }
  return int64_t(llvm::alignTo(total, kMinAlignment));
}

struct PlanTemporariesPass
    : pipedream::cpu::impl::PlanTemporariesPassBase<PlanTemporariesPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    WalkResult pending = func.walk([](bufferization::DeallocOp op) {
      op.emitOpError("cpu-plan-temporaries runs after the deallocation "
                     "pipeline; run bufferization-lower-deallocations first");
      return WalkResult::interrupt();
    });
    if (pending.wasInterrupted())
      return signalPassFailure();
    if (func.isExternal() || !func.getBody().hasOneBlock())
      return;
    Block &block = func.getBody().front();

    llvm::DenseMap<Operation *, int64_t> position;
    SmallVector<Temporary> temps;
    int64_t index = 0;
    for (Operation &op : block) {
      position[&op] = index++;
      if (auto alloc = dyn_cast<memref::AllocOp>(op))
        if (std::optional<int64_t> bytes = placeableBytes(alloc))
          temps.push_back(Temporary{alloc, nullptr, position[&op], 0, *bytes});
    }
    SmallVector<Temporary> placeable;
    int64_t alignment = kMinAlignment;
    for (Temporary &t : temps) {
      if (!findLiveRange(t, block, position)) {
        ++numKept;
        continue;
      }
      if (std::optional<uint64_t> align = t.alloc.getAlignment())
        t.alignment = std::max<int64_t>(t.alignment, int64_t(*align));
      alignment = std::max(alignment, t.alignment);
      placeable.push_back(t);
    }
    // One temporary has nothing to share its bytes with.
    if (placeable.size() < 2) {
      numKept += placeable.size();
      return;
    }
    int64_t total = assignOffsets(placeable);

    OpBuilder builder(&block, block.begin());
    Location loc = func.getLoc();
    auto bufferType = MemRefType::get({total}, builder.getI8Type());
    Value buffer = memref::AllocOp::create(
        builder, loc, bufferType, builder.getI64IntegerAttr(alignment));
    for (Temporary &t : placeable) {
      builder.setInsertionPoint(t.alloc);
      Value offset =
          arith::ConstantIndexOp::create(builder, t.alloc.getLoc(), t.offset);
      Value view =
          memref::ViewOp::create(builder, t.alloc.getLoc(), t.alloc.getType(),
                                 buffer, offset, ValueRange{});
      t.alloc.getResult().replaceAllUsesWith(view);
      t.alloc->erase();
      t.dealloc->erase();
      bytesBefore += t.bytes;
      ++numPlaced;
    }
    builder.setInsertionPoint(block.getTerminator());
    memref::DeallocOp::create(builder, loc, buffer);
    bytesAfter += total;
  }
};

} // namespace
