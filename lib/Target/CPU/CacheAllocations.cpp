//===- CacheAllocations.cpp - reuse each allocation site's buffer ---------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Rewrites the `malloc` / `free` calls of memref allocations into calls of
// two internal functions added to the module, `__pipedream_alloc(size, slot)`
// and `__pipedream_free(ptr)`, with one slot (an i64 global) per `malloc`
// call site (see Passes.td). Block layout:
//
//   [slot pointer (8 bytes) | size (8 bytes) | the caller's bytes ...]
//                                            ^ returned pointer
//
// The returned pointer keeps malloc's 16-byte alignment; the memref lowering
// over-allocates and aligns further itself when an alignment was asked for.
// Slots and the parked-bytes counter change only through atomic exchanges,
// so threads calling into the same program.so need no lock: a block goes
// back to its slot only if the slot is empty (compare-and-swap), and is
// taken out whole (exchange with 0).
//
//===----------------------------------------------------------------------===//

#include "pipedream/Target/CPU/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

namespace pipedream::cpu {
#define GEN_PASS_DEF_CACHEALLOCATIONSPASS
#include "pipedream/Target/CPU/Passes.h.inc"
} // namespace pipedream::cpu

using namespace mlir;

namespace {

constexpr int64_t kHeaderBytes = 16;

/// Callee name of a direct `llvm.call`, or empty.
StringRef calleeName(LLVM::CallOp call) {
  if (auto callee = call.getCallee())
    return *callee;
  return {};
}

struct CacheAllocationsPass
    : pipedream::cpu::impl::CacheAllocationsPassBase<CacheAllocationsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<LLVM::CallOp> mallocs, frees;
    bool otherAllocator = false;
    module.walk([&](LLVM::CallOp call) {
      StringRef name = calleeName(call);
      if (name == "malloc")
        mallocs.push_back(call);
      else if (name == "free")
        frees.push_back(call);
      else if (name == "aligned_alloc" || name == "posix_memalign" ||
               name == "realloc" || name == "calloc" ||
               name.starts_with("_mlir_memref_to_llvm_"))
        otherAllocator = true;
    });
    // NOTE: every `free` must receive a block from `__pipedream_alloc` (it
    // reads the header): give up when anything else allocates.
    if (mallocs.empty() || otherAllocator)
      return;
    auto mallocFn = module.lookupSymbol<LLVM::LLVMFuncOp>("malloc");
    auto freeFn = module.lookupSymbol<LLVM::LLVMFuncOp>("free");
    if (!mallocFn || !freeFn)
      return;

    MLIRContext *ctx = &getContext();
    SymbolTable symbols(module);
    OpBuilder builder(ctx);
    builder.setInsertionPointToEnd(module.getBody());
    Location loc = builder.getUnknownLoc();
    Type ptrType = LLVM::LLVMPointerType::get(ctx);
    Type i64 = builder.getI64Type();
    auto acqRel = LLVM::AtomicOrdering::acq_rel;

    // Slots and the parked-bytes counter are i64 globals (a slot holds a
    // block address, 0 when empty), updated atomically.
    auto addGlobal = [&](StringRef name) {
      auto global = LLVM::GlobalOp::create(
          builder, loc, i64, /*isConstant=*/false, LLVM::Linkage::Internal,
          name, builder.getI64IntegerAttr(0), /*alignment=*/8);
      symbols.insert(global);
      return global;
    };
    LLVM::GlobalOp counter = addGlobal("__pipedream_cached_bytes");

    auto constant = [&](int64_t value) -> Value {
      return LLVM::ConstantOp::create(builder, loc, i64,
                                      builder.getI64IntegerAttr(value));
    };
    auto byteOffset = [&](Value base, int64_t offset) -> Value {
      return LLVM::GEPOp::create(builder, loc, ptrType, builder.getI8Type(),
                                 base, ArrayRef<LLVM::GEPArg>{int32_t(offset)});
    };
    auto atomic = [&](LLVM::AtomicBinOp op, Value address, Value value) {
      return LLVM::AtomicRMWOp::create(builder, loc, op, address, value, acqRel)
          .getResult();
    };

    // __pipedream_alloc(size, slot): the parked block of `slot` when its size
    // matches, else a fresh one.
    auto allocFn = LLVM::LLVMFuncOp::create(
        builder, loc, "__pipedream_alloc",
        LLVM::LLVMFunctionType::get(ptrType, {i64, ptrType}),
        LLVM::Linkage::Internal);
    // NOTE: the helpers stay calls (noinline). Inlined, each of a training
    // step's thousands of allocation sites became five blocks of branches
    // in one function, and LLVM's register allocation and live interval
    // analysis grew quadratically with the step (issue 16: 13.1 s against
    // 1.6 s of llc for a 250-layer chain); a call costs nanoseconds next to
    // the malloc it saves.
    allocFn.setNoInline(true);
    symbols.insert(allocFn);
    {
      OpBuilder::InsertionGuard guard(builder);
      Block *entry = allocFn.addEntryBlock(builder);
      Region &body = allocFn.getBody();
      Block *hit = new Block(), *reuse = new Block(), *drop = new Block(),
            *miss = new Block(), *fresh = new Block(), *fail = new Block();
      for (Block *block : {hit, reuse, drop, miss, fresh, fail})
        body.push_back(block);
      Value size = entry->getArgument(0), slot = entry->getArgument(1);

      builder.setInsertionPointToStart(entry);
      Value null = LLVM::ZeroOp::create(builder, loc, ptrType);
      Value parkedInt = atomic(LLVM::AtomicBinOp::xchg, slot, constant(0));
      Value hasParked = LLVM::ICmpOp::create(
          builder, loc, LLVM::ICmpPredicate::ne, parkedInt, constant(0));
      LLVM::CondBrOp::create(builder, loc, hasParked, hit, miss);

      builder.setInsertionPointToStart(hit);
      Value parked = LLVM::IntToPtrOp::create(builder, loc, ptrType, parkedInt);
      Value parkedSize =
          LLVM::LoadOp::create(builder, loc, i64, byteOffset(parked, 8));
      Value counterAddr = LLVM::AddressOfOp::create(builder, loc, counter);
      atomic(LLVM::AtomicBinOp::sub, counterAddr, parkedSize);
      Value sameSize = LLVM::ICmpOp::create(
          builder, loc, LLVM::ICmpPredicate::eq, parkedSize, size);
      LLVM::CondBrOp::create(builder, loc, sameSize, reuse, drop);

      builder.setInsertionPointToStart(reuse);
      LLVM::ReturnOp::create(builder, loc, byteOffset(parked, kHeaderBytes));

      builder.setInsertionPointToStart(drop);
      LLVM::CallOp::create(builder, loc, freeFn, ValueRange{parked});
      LLVM::BrOp::create(builder, loc, ValueRange(), miss);

      builder.setInsertionPointToStart(miss);
      Value total =
          LLVM::AddOp::create(builder, loc, size, constant(kHeaderBytes));
      Value block =
          LLVM::CallOp::create(builder, loc, mallocFn, ValueRange{total})
              .getResult();
      Value failed = LLVM::ICmpOp::create(builder, loc, LLVM::ICmpPredicate::eq,
                                          block, null);
      LLVM::CondBrOp::create(builder, loc, failed, fail, fresh);

      builder.setInsertionPointToStart(fail);
      LLVM::ReturnOp::create(builder, loc, null);

      builder.setInsertionPointToStart(fresh);
      LLVM::StoreOp::create(builder, loc, slot, block);
      LLVM::StoreOp::create(builder, loc, size, byteOffset(block, 8));
      LLVM::ReturnOp::create(builder, loc, byteOffset(block, kHeaderBytes));
    }

    // __pipedream_free(ptr): park the block in its slot when the slot is
    // empty and the parked bytes stay within max-cached-bytes, else free it.
    auto releaseFn = LLVM::LLVMFuncOp::create(
        builder, loc, "__pipedream_free",
        LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {ptrType}),
        LLVM::Linkage::Internal);
    releaseFn.setNoInline(true);
    symbols.insert(releaseFn);
    {
      OpBuilder::InsertionGuard guard(builder);
      Block *entry = releaseFn.addEntryBlock(builder);
      Region &body = releaseFn.getBody();
      Block *check = new Block(), *tryPark = new Block(), *unpark = new Block(),
            *release = new Block(), *done = new Block();
      for (Block *block : {check, tryPark, unpark, release, done})
        body.push_back(block);
      Value pointer = entry->getArgument(0);

      builder.setInsertionPointToStart(entry);
      Value null = LLVM::ZeroOp::create(builder, loc, ptrType);
      Value isNull = LLVM::ICmpOp::create(builder, loc, LLVM::ICmpPredicate::eq,
                                          pointer, null);
      LLVM::CondBrOp::create(builder, loc, isNull, done, check);

      // Reserve the bytes first, so concurrent frees cannot overshoot.
      builder.setInsertionPointToStart(check);
      Value block = byteOffset(pointer, -kHeaderBytes);
      Value size =
          LLVM::LoadOp::create(builder, loc, i64, byteOffset(block, 8));
      Value counterAddr = LLVM::AddressOfOp::create(builder, loc, counter);
      Value before = atomic(LLVM::AtomicBinOp::add, counterAddr, size);
      Value after = LLVM::AddOp::create(builder, loc, before, size);
      Value fits = LLVM::ICmpOp::create(builder, loc, LLVM::ICmpPredicate::ule,
                                        after, constant(maxCachedBytes));
      LLVM::CondBrOp::create(builder, loc, fits, tryPark, unpark);

      builder.setInsertionPointToStart(tryPark);
      Value slot = LLVM::LoadOp::create(builder, loc, ptrType, block);
      Value blockInt = LLVM::PtrToIntOp::create(builder, loc, i64, block);
      auto exchange = LLVM::AtomicCmpXchgOp::create(
          builder, loc, slot, constant(0), blockInt, acqRel,
          LLVM::AtomicOrdering::acquire);
      Value parked = LLVM::ExtractValueOp::create(builder, loc, exchange,
                                                  ArrayRef<int64_t>{1});
      LLVM::CondBrOp::create(builder, loc, parked, done, unpark);

      builder.setInsertionPointToStart(unpark);
      Value counterAddr2 = LLVM::AddressOfOp::create(builder, loc, counter);
      atomic(LLVM::AtomicBinOp::sub, counterAddr2, size);
      LLVM::BrOp::create(builder, loc, ValueRange(), release);

      builder.setInsertionPointToStart(release);
      LLVM::CallOp::create(builder, loc, freeFn, ValueRange{block});
      LLVM::BrOp::create(builder, loc, ValueRange(), done);

      builder.setInsertionPointToStart(done);
      LLVM::ReturnOp::create(builder, loc, ValueRange());
    }

    SmallVector<LLVM::GlobalOp> slots;
    for (auto [index, call] : llvm::enumerate(mallocs)) {
      builder.setInsertionPointToEnd(module.getBody());
      LLVM::GlobalOp slotGlobal =
          addGlobal(("__pipedream_alloc_slot_" + Twine(index)).str());
      slots.push_back(slotGlobal);
      builder.setInsertionPoint(call);
      Value slot = LLVM::AddressOfOp::create(builder, loc, slotGlobal);
      auto replacement =
          LLVM::CallOp::create(builder, call.getLoc(), allocFn,
                               ValueRange{call.getArgOperands()[0], slot});
      call.replaceAllUsesWith(replacement);
      call.erase();
    }
    for (LLVM::CallOp call : frees) {
      builder.setInsertionPoint(call);
      LLVM::CallOp::create(builder, call.getLoc(), releaseFn,
                           call.getArgOperands());
      call.erase();
    }

    // Parked blocks go back to malloc when program.so is unloaded (a
    // process that dlopens and dlcloses bundles must not leak them).
    if (!module.getOps<LLVM::GlobalDtorsOp>().empty())
      return;
    builder.setInsertionPointToEnd(module.getBody());
    auto dropFn = LLVM::LLVMFuncOp::create(
        builder, loc, "__pipedream_drop_slot",
        LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {ptrType}),
        LLVM::Linkage::Internal);
    dropFn.setNoInline(true);
    symbols.insert(dropFn);
    {
      OpBuilder::InsertionGuard guard(builder);
      Block *entry = dropFn.addEntryBlock(builder);
      Block *release = new Block(), *done = new Block();
      dropFn.getBody().push_back(release);
      dropFn.getBody().push_back(done);
      builder.setInsertionPointToStart(entry);
      Value parked =
          atomic(LLVM::AtomicBinOp::xchg, entry->getArgument(0), constant(0));
      Value hasParked = LLVM::ICmpOp::create(
          builder, loc, LLVM::ICmpPredicate::ne, parked, constant(0));
      LLVM::CondBrOp::create(builder, loc, hasParked, release, done);
      builder.setInsertionPointToStart(release);
      LLVM::CallOp::create(
          builder, loc, freeFn,
          ValueRange{LLVM::IntToPtrOp::create(builder, loc, ptrType, parked)});
      LLVM::BrOp::create(builder, loc, ValueRange(), done);
      builder.setInsertionPointToStart(done);
      LLVM::ReturnOp::create(builder, loc, ValueRange());
    }
    auto dtorFn = LLVM::LLVMFuncOp::create(
        builder, loc, "__pipedream_release_cached",
        LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {}),
        LLVM::Linkage::Internal);
    symbols.insert(dtorFn);
    {
      OpBuilder::InsertionGuard guard(builder);
      builder.setInsertionPointToStart(dtorFn.addEntryBlock(builder));
      for (LLVM::GlobalOp slot : slots)
        LLVM::CallOp::create(
            builder, loc, dropFn,
            ValueRange{LLVM::AddressOfOp::create(builder, loc, slot)});
      LLVM::ReturnOp::create(builder, loc, ValueRange());
    }
    LLVM::GlobalDtorsOp::create(
        builder, loc, builder.getArrayAttr({FlatSymbolRefAttr::get(dtorFn)}),
        builder.getI32ArrayAttr({65535}),
        builder.getArrayAttr({LLVM::ZeroAttr::get(ctx)}));
  }
};

} // namespace
