//===- LowerRankPrograms.cpp - per-rank programs to native entries --------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// pipe-lower-rank-programs: each per-rank `pipe.program` becomes the native
// entry of docs/Bundle.md "Native rank entries",
//
//   int32_t pipeline_rank<r>(pd_rank_context *ctx, void **registers);
//
// a `func.func` on `!llvm.ptr` whose body is the rank's straight-line
// program (RankPrograms.h's plan, the same one bundle.json lists):
//
//   - a stage call stores the register pointers of its value arguments and
//     results into an argument array at the positions of the callee's
//     non-bound buffers, asks the runtime to bind the rest (call_begin:
//     weights or their stashed version, gradients, optimizer state), calls
//     the stage's entry wrapper `<prefix><callee>(void **)` directly, and
//     lets the runtime apply its `updates` (call_end);
//   - input, send, recv and loss call the runtime;
//   - every runtime call returns a pd_status; anything but 0 returns from
//     the entry at once with that status (the runtime has set the message),
//     so transport timeouts, aborts and dead peers end the step as before.
//
// Runtime functions are reached through the function table at the start of
// the context (`ctx->runtime`, a `pd_rank_runtime`), not by symbol: program.so
// is linked with `-z defs` against libc/libm only, and a runtime linked
// statically into a user's binary need not export anything.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Dialect/Pipe/IR/PipeOps.h"
#include "pipedream/Dialect/Pipe/Transforms/Passes.h"
#include "pipedream/Dialect/Pipe/Transforms/RankPrograms.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

namespace pipedream::pipe {
#define GEN_PASS_DEF_LOWERRANKPROGRAMSPASS
#include "pipedream/Dialect/Pipe/Transforms/Passes.h.inc"
} // namespace pipedream::pipe

using namespace mlir;
using namespace pipedream::pipe;

namespace {

/// Bytes of a register of `type` as the runtime stores it (i1: one byte
/// per element), or -1 when bundles cannot hold the element type.
int64_t registerBytes(RankedTensorType type) {
  Type element = type.getElementType();
  if (!element.isIntOrFloat())
    return -1;
  unsigned width = element.getIntOrFloatBitWidth();
  if (width != 1 && width != 8 && width != 16 && width != 32 && width != 64)
    return -1;
  return type.getNumElements() * std::max<int64_t>(1, width / 8);
}

/// Builds one rank's entry.
struct EntryBuilder {
  EntryBuilder(ModuleOp module, SymbolTable &symbols, StringRef prefix)
      : module(module), symbols(symbols), prefix(prefix),
        builder(module.getContext()) {
    MLIRContext *ctx = module.getContext();
    ptrType = LLVM::LLVMPointerType::get(ctx);
    i32 = IntegerType::get(ctx, 32);
    i64 = IntegerType::get(ctx, 64);
  }

  ModuleOp module;
  SymbolTable &symbols;
  StringRef prefix;
  OpBuilder builder;
  Type ptrType, i32, i64;

  Location loc = UnknownLoc::get(builder.getContext());
  Value context, registers, table, buffers;
  Block *failBlock = nullptr;
  Operation *lastDeclaration = nullptr;

  Value constant(Type type, int64_t value) {
    return arith::ConstantOp::create(builder, loc, type,
                                     builder.getIntegerAttr(type, value));
  }

  /// `base[index]` of an array of pointers.
  Value pointerSlot(Value base, int64_t index) {
    return LLVM::GEPOp::create(builder, loc, ptrType, ptrType, base,
                               ArrayRef<LLVM::GEPArg>{
                                   static_cast<int32_t>(index)});
  }

  /// The memory of register `reg` (registers[reg]).
  Value registerPointer(int64_t reg) {
    return LLVM::LoadOp::create(builder, loc, ptrType,
                                pointerSlot(registers, reg));
  }

  /// Calls runtime function `function` with (ctx, args...) and returns from
  /// the entry with its status unless it is 0.
  void callRuntime(RankRuntimeFunction function, ValueRange args) {
    Value callee = LLVM::LoadOp::create(
        builder, loc, ptrType,
        pointerSlot(table, static_cast<int64_t>(function)));
    SmallVector<Value> operands{callee, context};
    SmallVector<Type> types{ptrType};
    for (Value arg : args) {
      operands.push_back(arg);
      types.push_back(arg.getType());
    }
    auto type = LLVM::LLVMFunctionType::get(i32, types);
    Value status =
        LLVM::CallOp::create(builder, loc, type, operands).getResult();
    Value ok = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq,
                                     status, constant(i32, 0));
    Block *current = builder.getInsertionBlock();
    Block *next = builder.createBlock(current->getParent(),
                                      std::next(current->getIterator()));
    builder.setInsertionPointToEnd(current);
    cf::CondBranchOp::create(builder, loc, ok, next, ValueRange(), failBlock,
                             ValueRange{status});
    builder.setInsertionPointToStart(next);
  }

  /// The declaration of the entry wrapper of stage function `callee`,
  /// created once.
  FailureOr<func::FuncOp> wrapperOf(CallStageOp call) {
    std::string name = (prefix + call.getCallee()).str();
    auto type = builder.getFunctionType({ptrType}, {});
    if (Operation *existing = symbols.lookup(name)) {
      auto func = dyn_cast<func::FuncOp>(existing);
      if (!func || func.getFunctionType() != type || !func.isDeclaration()) {
        call.emitOpError() << "cannot declare the entry wrapper '" << name
                           << "' of its stage function: the symbol exists";
        return failure();
      }
      return func;
    }
    // Declarations at the top of the module, in order of first call.
    OpBuilder::InsertionGuard guard(builder);
    if (lastDeclaration)
      builder.setInsertionPointAfter(lastDeclaration);
    else
      builder.setInsertionPointToStart(module.getBody());
    auto decl = func::FuncOp::create(builder, call.getLoc(), name, type);
    decl.setPrivate();
    symbols.insert(decl);
    lastDeclaration = decl;
    return decl;
  }

  FailureOr<func::FuncOp> build(const RankProgramPlan &plan) {
    func::FuncOp entry;
    FailureOr<func::FuncOp> result = buildEntry(plan, entry);
    if (failed(result) && entry)
      entry.erase();
    else if (succeeded(result))
      symbols.insert(entry);
    return result;
  }

  FailureOr<func::FuncOp> buildEntry(const RankProgramPlan &plan,
                                     func::FuncOp &entry) {
    ProgramOp program = plan.program;
    std::string name = getRankEntryName(plan.rank);
    if (symbols.lookup(name)) {
      program.emitOpError() << "cannot create the native entry '" << name
                            << "': the symbol exists";
      return failure();
    }
    // Each call's argument array: the callee's buffers (arguments, then
    // results); the value ones are the non-bound ones, in order.
    struct CallLayout {
      func::FuncOp callee;
      SmallVector<int64_t> argSlots, resultSlots;
      int64_t size = 0;
    };
    SmallVector<CallLayout> layouts;
    int64_t maxBuffers = 1;
    for (const RankInstruction &ins : plan.instructions) {
      if (ins.kind != RankInstruction::Kind::Call)
        continue;
      auto callee = symbols.lookup<func::FuncOp>(ins.call.getCallee());
      if (!callee) {
        ins.call.emitOpError()
            << "calls " << ins.call.getCalleeAttr()
            << ", which is not a func.func (a stage function)";
        return failure();
      }
      CallLayout layout;
      layout.callee = callee;
      for (unsigned i = 0, e = callee.getNumArguments(); i < e; ++i)
        if (!isBoundArgument(callee, i))
          layout.argSlots.push_back(i);
      for (unsigned i = 0, e = callee.getNumResults(); i < e; ++i)
        if (!isBoundResult(callee, i))
          layout.resultSlots.push_back(callee.getNumArguments() + i);
      if (layout.argSlots.size() != ins.args.size() ||
          layout.resultSlots.size() != ins.results.size()) {
        ins.call.emitOpError()
            << "passes " << ins.args.size() << " values and receives "
            << ins.results.size() << ", but " << ins.call.getCalleeAttr()
            << " takes " << layout.argSlots.size() << " and returns "
            << layout.resultSlots.size();
        return failure();
      }
      layout.size = callee.getNumArguments() + callee.getNumResults();
      maxBuffers = std::max(maxBuffers, layout.size);
      layouts.push_back(std::move(layout));
    }
    for (const RankInstruction &ins : plan.instructions) {
      if (ins.kind == RankInstruction::Kind::Send ||
          ins.kind == RankInstruction::Kind::Recv) {
        int64_t reg =
            ins.kind == RankInstruction::Kind::Send ? ins.src : ins.dst;
        if (registerBytes(plan.registers[reg]) < 0) {
          ins.op->emitOpError() << "sends or receives "
                                << plan.registers[reg]
                                << ", which bundles cannot hold";
          return failure();
        }
      }
      if (ins.kind == RankInstruction::Kind::Loss) {
        RankedTensorType type = plan.registers[ins.src];
        if (type.getNumElements() != 1 ||
            !(type.getElementType().isF32() || type.getElementType().isF64())) {
          ins.op->emitOpError() << "returns the loss of micro-batch "
                                << ins.microbatch << " as " << type
                                << "; the runtime reads one f32 or f64";
          return failure();
        }
      }
    }

    loc = program.getLoc();
    builder.setInsertionPoint(program);
    entry = func::FuncOp::create(
        builder, loc, name,
        builder.getFunctionType({ptrType, ptrType}, {i32}));
    entry.setPrivate();
    entry->setAttr("pipedream.cpu.export", builder.getUnitAttr());
    entry->setAttr("pipe.rank", builder.getI64IntegerAttr(plan.rank));
    Block *body = entry.addEntryBlock();
    context = body->getArgument(0);
    registers = body->getArgument(1);
    failBlock = new Block();
    entry.getBody().push_back(failBlock);
    Value failStatus = failBlock->addArgument(i32, loc);
    builder.setInsertionPointToStart(failBlock);
    func::ReturnOp::create(builder, loc, failStatus);

    builder.setInsertionPointToStart(body);
    // ctx->runtime: the function table, fixed for the whole step.
    table = LLVM::LoadOp::create(builder, loc, ptrType, context);
    buffers = LLVM::AllocaOp::create(builder, loc, ptrType, ptrType,
                                     constant(i64, maxBuffers));

    size_t nextLayout = 0;
    for (auto [index, ins] : llvm::enumerate(plan.instructions)) {
      loc = ins.op->getLoc();
      Value instruction = constant(i64, static_cast<int64_t>(index));
      switch (ins.kind) {
      case RankInstruction::Kind::Input:
        callRuntime(RankRuntimeFunction::Input,
                    {instruction, registerPointer(ins.dst)});
        break;
      case RankInstruction::Kind::Call: {
        const CallLayout &layout = layouts[nextLayout++];
        for (auto [slot, reg] : llvm::zip(layout.argSlots, ins.args))
          LLVM::StoreOp::create(builder, loc, registerPointer(reg),
                                pointerSlot(buffers, slot));
        for (auto [slot, reg] : llvm::zip(layout.resultSlots, ins.results))
          LLVM::StoreOp::create(builder, loc, registerPointer(reg),
                                pointerSlot(buffers, slot));
        callRuntime(RankRuntimeFunction::CallBegin, {instruction, buffers});
        FailureOr<func::FuncOp> wrapper = wrapperOf(ins.call);
        if (failed(wrapper))
          return failure();
        func::CallOp::create(builder, loc, *wrapper, ValueRange{buffers});
        callRuntime(RankRuntimeFunction::CallEnd, {instruction});
        break;
      }
      case RankInstruction::Kind::Send:
      case RankInstruction::Kind::Recv: {
        bool send = ins.kind == RankInstruction::Kind::Send;
        int64_t reg = send ? ins.src : ins.dst;
        callRuntime(send ? RankRuntimeFunction::Send
                         : RankRuntimeFunction::Recv,
                    {instruction, constant(i64, ins.peer),
                     constant(i64, ins.tag), registerPointer(reg),
                     constant(i64, registerBytes(plan.registers[reg]))});
        break;
      }
      case RankInstruction::Kind::Loss:
        callRuntime(RankRuntimeFunction::Loss,
                    {instruction, constant(i64, ins.microbatch),
                     registerPointer(ins.src)});
        break;
      case RankInstruction::Kind::AllReduce:
        // The accumulator is a persistent buffer the runtime holds: the
        // instruction index names it (and the group).
        callRuntime(RankRuntimeFunction::AllReduce, {instruction});
        break;
      }
    }
    loc = program.getLoc();
    func::ReturnOp::create(builder, loc, constant(i32, 0));
    return entry;
  }
};

struct LowerRankProgramsPass
    : pipedream::pipe::impl::LowerRankProgramsPassBase<LowerRankProgramsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (module.getOps<ProgramOp>().empty())
      return;
    std::vector<std::string> entries;
    if (failed(lowerRankPrograms(module, symbolPrefix, entries)))
      signalPassFailure();
  }
};

} // namespace

namespace pipedream::pipe {

LogicalResult lowerRankPrograms(ModuleOp module, StringRef symbolPrefix,
                                std::vector<std::string> &entries) {
  FailureOr<std::vector<RankProgramPlan>> plans = planRankPrograms(module);
  if (failed(plans))
    return failure();

  SymbolTable symbols(module);
  EntryBuilder builder(module, symbols, symbolPrefix);
  SmallVector<Operation *> created;
  for (const RankProgramPlan &plan : *plans) {
    FailureOr<func::FuncOp> entry = builder.build(plan);
    if (failed(entry)) {
      // Drop the entries this call built; the programs stay.
      for (Operation *op : llvm::reverse(created))
        symbols.erase(op);
      return failure();
    }
    created.push_back(*entry);
    entries.push_back(entry->getSymName().str());
  }
  for (const RankProgramPlan &plan : *plans)
    plan.program.erase();
  return success();
}

} // namespace pipedream::pipe
