//===- SplitLargeFunctions.cpp - huge LLVM functions as runs of calls -----===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Cuts the single block of a huge LLVM function into runs of operations,
// each moved into a `noinline` function of its own; values crossing runs go
// through a frame on the stack (see Passes.td). Straight-line code only: the
// order of the block is the order of execution, so a value's live range is
// the span from its definition to its last user.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Target/CPU/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/DataLayoutInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/MathExtras.h"

namespace pipedream::cpu {
#define GEN_PASS_DEF_SPLITLARGEFUNCTIONSPASS
#include "pipedream/Target/CPU/Passes.h.inc"
} // namespace pipedream::cpu

using namespace mlir;

namespace {

/// The frame may not grow past this (it lives on the caller's stack).
constexpr uint64_t kMaxFrameBytes = 1 << 20;

bool isRematerializable(Operation *op) {
  return op->hasTrait<OpTrait::ConstantLike>() ||
         isa<LLVM::AddressOfOp, LLVM::ZeroOp, LLVM::UndefOp, LLVM::PoisonOp>(
             op);
}

/// Ops that must stay in the function: allocas outlive the runs.
bool staysInFunction(Operation *op) { return isa<LLVM::AllocaOp>(op); }

/// Ops whose meaning depends on the function they are in.
bool blocksSplitting(Operation *op) {
  return op->getNumRegions() != 0 ||
         isa<LLVM::StackSaveOp, LLVM::StackRestoreOp, LLVM::LifetimeStartOp,
             LLVM::LifetimeEndOp, LLVM::VaStartOp, LLVM::VaEndOp,
             LLVM::VaCopyOp, LLVM::LandingpadOp>(op);
}

struct FrameValue {
  Value value;
  int64_t def;     // item that stores it (-1: the function's arguments)
  int64_t lastUse; // last item that loads it
  uint64_t offset = 0;
};

struct SplitLargeFunctionsPass
    : pipedream::cpu::impl::SplitLargeFunctionsPassBase<
          SplitLargeFunctionsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (maxOps < 1) {
      getOperation().emitError("cpu-split-large-functions: max-ops must be "
                               "positive, got ")
          << static_cast<int64_t>(maxOps);
      return signalPassFailure();
    }
    SymbolTable symbols(getOperation());
    for (auto func :
         llvm::to_vector(getOperation().getOps<LLVM::LLVMFuncOp>()))
      if (!func.isExternal() && llvm::hasSingleElement(func.getBody()))
        split(func, symbols);
  }

  void split(LLVM::LLVMFuncOp func, SymbolTable &symbols) {
    Block &block = func.getBody().front();
    Operation *terminator = block.getTerminator();

    // The items of the new body, in order: runs of ops (chunks) and ops
    // that stay (allocas); rematerializable ops belong to no item.
    SmallVector<SmallVector<Operation *>> chunks;
    SmallVector<Operation *> kept;
    llvm::DenseMap<Operation *, int64_t> itemOf;
    int64_t items = 0, chunkable = 0;
    SmallVector<Operation *> current;
    SmallVector<int64_t> chunkItem;
    auto close = [&] {
      if (current.empty())
        return;
      for (Operation *op : current)
        itemOf[op] = items;
      chunkItem.push_back(items++);
      chunks.push_back(std::move(current));
      current.clear();
    };
    for (Operation &op : block.without_terminator()) {
      if (blocksSplitting(&op))
        return;
      if (isRematerializable(&op))
        continue;
      if (staysInFunction(&op)) {
        close();
        kept.push_back(&op);
        itemOf[&op] = items++;
        continue;
      }
      current.push_back(&op);
      ++chunkable;
      if (static_cast<int64_t>(current.size()) >= maxOps)
        close();
    }
    close();
    if (blocksSplitting(terminator) || chunkable <= 2 * maxOps ||
        chunks.size() < 2)
      return;
    itemOf[terminator] = items++;

    // Values that cross items, in order of definition.
    llvm::MapVector<Value, FrameValue> frame;
    auto noteUse = [&](Value value, int64_t def, Operation *user) {
      auto it = itemOf.find(user);
      if (it == itemOf.end() || it->second == def)
        return;
      auto [entry, inserted] =
          frame.try_emplace(value, FrameValue{value, def, it->second});
      entry->second.lastUse = std::max(entry->second.lastUse, it->second);
    };
    auto isChunked = [&](Operation *op) {
      auto it = itemOf.find(op);
      return it != itemOf.end() && op != terminator &&
             !staysInFunction(op);
    };
    for (BlockArgument argument : block.getArguments())
      for (Operation *user : argument.getUsers())
        if (isChunked(user))
          noteUse(argument, -1, user);
    for (Operation &op : block.without_terminator()) {
      if (isRematerializable(&op))
        continue;
      int64_t def = itemOf.lookup(&op);
      bool chunked = !staysInFunction(&op);
      for (Value result : op.getResults())
        for (Operation *user : result.getUsers())
          // Kept values reach kept users directly; everything else that
          // changes item goes through the frame.
          if (chunked || isChunked(user))
            noteUse(result, def, user);
    }

    // Slots: first fit among freed slots of the same type.
    DataLayout layout = DataLayout::closest(func);
    struct Slot {
      Type type;
      uint64_t offset;
      int64_t freeAt;
    };
    SmallVector<Slot> slots;
    uint64_t size = 0, alignment = 16;
    for (auto &[value, entry] : frame) {
      Type type = value.getType();
      Slot *reuse = nullptr;
      for (Slot &slot : slots)
        if (slot.type == type && slot.freeAt <= entry.def) {
          reuse = &slot;
          break;
        }
      if (!reuse) {
        uint64_t bytes = layout.getTypeSize(type).getFixedValue();
        uint64_t align = std::max<uint64_t>(layout.getTypeABIAlignment(type), 1);
        if (bytes == 0)
          return;
        alignment = std::max(alignment, align);
        uint64_t offset = llvm::alignTo(size, align);
        size = offset + bytes;
        if (size > kMaxFrameBytes)
          return;
        slots.push_back({type, offset, entry.lastUse});
        reuse = &slots.back();
      }
      reuse->freeAt = entry.lastUse;
      entry.offset = reuse->offset;
    }

    MLIRContext *ctx = func.getContext();
    Location loc = func.getLoc();
    Type ptrType = LLVM::LLVMPointerType::get(ctx);
    Type i8 = IntegerType::get(ctx, 8);
    OpBuilder builder(ctx);
    auto slotAddress = [&](Value base, uint64_t offset) -> Value {
      if (offset == 0)
        return base;
      return LLVM::GEPOp::create(
          builder, loc, ptrType, i8, base,
          ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(offset)});
    };

    // The frame, and the function's own values stored into it.
    builder.setInsertionPointToStart(&block);
    Value one = LLVM::ConstantOp::create(builder, loc, builder.getI64Type(),
                                         builder.getI64IntegerAttr(1));
    Value frameBase =
        LLVM::AllocaOp::create(builder, loc, ptrType,
                               LLVM::LLVMArrayType::get(i8, std::max<uint64_t>(size, 1)),
                               one, alignment);
    for (auto &[value, entry] : frame) {
      if (entry.def == -1) {
        LLVM::StoreOp::create(builder, loc, value,
                              slotAddress(frameBase, entry.offset));
      } else if (Operation *def = value.getDefiningOp();
                 def && staysInFunction(def)) {
        OpBuilder::InsertionGuard guard(builder);
        builder.setInsertionPointAfter(def);
        LLVM::StoreOp::create(builder, loc, value,
                              slotAddress(frameBase, entry.offset));
      }
    }

    // One function per chunk.
    auto voidType = LLVM::LLVMVoidType::get(ctx);
    auto partType = LLVM::LLVMFunctionType::get(voidType, {ptrType});
    for (auto [index, chunk] : llvm::enumerate(chunks)) {
      std::string name;
      for (unsigned n = index;; n += chunks.size()) {
        name = (func.getSymName() + ".part" + llvm::Twine(n)).str();
        if (!symbols.lookup(name))
          break;
      }
      builder.setInsertionPointAfter(func);
      auto part = LLVM::LLVMFuncOp::create(builder, loc, name, partType,
                                           LLVM::Linkage::Internal);
      part.setNoInline(true);
      for (StringRef attr : {"target_cpu", "target_features", "tune_cpu"})
        if (Attribute value = func->getAttr(attr))
          part->setAttr(attr, value);
      symbols.insert(part);
      Block *body = part.addEntryBlock(builder);
      Value partFrame = body->getArgument(0);
      builder.setInsertionPointToStart(body);
      IRMapping mapping;
      llvm::DenseSet<Operation *> inChunk(chunk.begin(), chunk.end());
      for (Operation *op : chunk)
        for (Value operand : op->getOperands()) {
          if (mapping.contains(operand))
            continue;
          Operation *def = operand.getDefiningOp();
          if (def && inChunk.contains(def))
            continue;
          if (def && isRematerializable(def)) {
            mapping.map(operand, builder.clone(*def)->getResult(0));
            continue;
          }
          auto it = frame.find(operand);
          assert(it != frame.end() && "a live-in without a frame slot");
          mapping.map(operand,
                      LLVM::LoadOp::create(builder, loc, operand.getType(),
                                           slotAddress(partFrame,
                                                       it->second.offset)));
        }
      for (Operation *op : chunk)
        builder.clone(*op, mapping);
      for (Operation *op : chunk)
        for (Value result : op->getResults())
          if (auto it = frame.find(result); it != frame.end())
            LLVM::StoreOp::create(builder, loc, mapping.lookup(result),
                                  slotAddress(partFrame, it->second.offset));
      LLVM::ReturnOp::create(builder, loc, ValueRange());
      ++numParts;

      builder.setInsertionPoint(chunk.front());
      LLVM::CallOp::create(builder, chunk.front()->getLoc(), part,
                           ValueRange{frameBase});
    }
    numFrameBytes += size;

    // Users that stay (allocas, the terminator) read chunk values back.
    SmallVector<Operation *> stayingUsers(kept.begin(), kept.end());
    stayingUsers.push_back(terminator);
    for (Operation *user : stayingUsers) {
      for (OpOperand &operand : user->getOpOperands()) {
        Operation *def = operand.get().getDefiningOp();
        if (!def || !isChunked(def))
          continue;
        builder.setInsertionPoint(user);
        const FrameValue &entry = frame.find(operand.get())->second;
        operand.set(LLVM::LoadOp::create(builder, loc, operand.get().getType(),
                                         slotAddress(frameBase, entry.offset)));
      }
    }
    for (auto &chunk : llvm::reverse(chunks))
      for (Operation *op : llvm::reverse(chunk)) {
        op->dropAllUses();
        op->erase();
      }
  }
};

} // namespace
