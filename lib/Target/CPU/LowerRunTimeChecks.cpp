//===- LowerRunTimeChecks.cpp - nn.check_index_range to the status record -===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The compiled side of the run-time status channel (docs/Bundle.md,
// "Run-time checks"): a thread-local record in program.so, its exported
// accessor, and the lowering of every `nn.check_index_range` into a
// conditional write of the record. Thread-local because the threads
// transport runs several ranks' calls into one program.so at once; the
// runtime reads the record on the thread that made the call, right after
// it returns.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Target/CPU/Passes.h"
#include "pipedream/Target/CPU/RunTimeStatus.h"

#include "pipedream/Dialect/NN/IR/NNOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

namespace pipedream::cpu {
#define GEN_PASS_DEF_LOWERRUNTIMECHECKSPASS
#include "pipedream/Target/CPU/Passes.h.inc"
} // namespace pipedream::cpu

using namespace mlir;

namespace {

/// Field order of the record (runtime/lib/RankEntry.h, pd_check_record).
enum RecordField { Failed = 0, Value_ = 1, Lower = 2, Upper = 3, Info = 4 };

constexpr llvm::StringLiteral kRecordName = "pipedream.run_time_status";
constexpr llvm::StringLiteral kAccessorName = "pipedream_run_time_status";

struct LowerRunTimeChecksPass
    : pipedream::cpu::impl::LowerRunTimeChecksPassBase<
          LowerRunTimeChecksPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    SymbolTable symbols(module);
    if (symbols.lookup(kRecordName) || symbols.lookup(kAccessorName)) {
      module.emitError("the run-time status record '")
          << kAccessorName << "' is already defined";
      return signalPassFailure();
    }
    if (dropChecks) {
      module.walk([](pipedream::nn::CheckIndexRangeOp op) { op.erase(); });
      return;
    }
    if (failed(pipedream::cpu::defineRunTimeStatusRecord(module)))
      return signalPassFailure();
    OpBuilder b(ctx);

    SmallVector<pipedream::nn::CheckIndexRangeOp> checks;
    module.walk([&](pipedream::nn::CheckIndexRangeOp op) {
      checks.push_back(op);
    });
    unsigned counter = 0;
    for (pipedream::nn::CheckIndexRangeOp op : checks) {
      Location l = op.getLoc();
      pipedream::cpu::IndexRangeTest t =
          pipedream::cpu::emitIfOutOfRange(b, op);
      std::string info = (op.getOpType() + llvm::Twine('\0') + op.getNode() +
                          llvm::Twine('\0') +
                          pipedream::cpu::getRunTimeCheckInputName(op))
                             .str();
      info.push_back('\0');
      std::string name;
      do
        name = "pipedream.check_info." + std::to_string(counter++);
      while (symbols.lookup(name));
      pipedream::cpu::emitRecordFirstFailure(
          b, l, t.lower, t.upper, [&](OpBuilder &inner) {
            // NOTE: createGlobalString appends no terminator of its own
            // beyond the value; `info` carries all three.
            Value text = LLVM::createGlobalString(l, inner, name, info,
                                                  LLVM::Linkage::Internal);
            Value value =
                arith::SelectOp::create(inner, l, t.tooHigh, t.max, t.min);
            return std::make_pair(value, text);
          });
      op.erase();
    }
  }
};

} // namespace

namespace pipedream::cpu {

LLVM::LLVMStructType getRunTimeStatusType(MLIRContext *ctx) {
  Type i64 = IntegerType::get(ctx, 64);
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  return LLVM::LLVMStructType::getLiteral(ctx, {i64, i64, i64, i64, ptr});
}

static Value recordAddress(OpBuilder &b, Location loc) {
  Type ptr = LLVM::LLVMPointerType::get(b.getContext());
  Value global = LLVM::AddressOfOp::create(b, loc, ptr, kRecordName);
  return LLVM::ThreadlocalAddressOp::create(b, loc, ptr, global);
}

LogicalResult defineRunTimeStatusRecord(ModuleOp module) {
  MLIRContext *ctx = module.getContext();
  SymbolTable symbols(module);
  if (symbols.lookup(kRecordName) || symbols.lookup(kAccessorName))
    return module.emitError("the run-time status record '")
           << kAccessorName << "' is already defined";
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  LLVM::LLVMStructType recordType = getRunTimeStatusType(ctx);
  Location loc = module.getLoc();
  OpBuilder b(ctx);

  // The record, zero-initialized, one per thread.
  b.setInsertionPointToStart(module.getBody());
  auto record = LLVM::GlobalOp::create(
      b, loc, recordType, /*isConstant=*/false, LLVM::Linkage::Internal,
      kRecordName, Attribute(), /*alignment=*/8, /*addrSpace=*/0,
      /*dsoLocal=*/false, /*thread_local_=*/true);
  {
    Block *init = b.createBlock(&record.getInitializerRegion());
    b.setInsertionPointToStart(init);
    Value zero = LLVM::ZeroOp::create(b, loc, recordType);
    LLVM::ReturnOp::create(b, loc, zero);
  }

  // The accessor the runtime finds with dlsym.
  b.setInsertionPointToEnd(module.getBody());
  auto accessor = func::FuncOp::create(b, loc, kAccessorName,
                                       b.getFunctionType({}, {ptr}));
  accessor->setAttr("pipedream.cpu.export", b.getUnitAttr());
  b.setInsertionPointToStart(accessor.addEntryBlock());
  func::ReturnOp::create(b, loc, recordAddress(b, loc));
  return success();
}

std::string getRunTimeCheckInputName(pipedream::nn::CheckIndexRangeOp op) {
  if (op.getKind() == "size")
    return "\x01" + op.getInput().str();
  return op.getInput().str();
}

IndexRangeTest emitIfOutOfRange(OpBuilder &b,
                                pipedream::nn::CheckIndexRangeOp op) {
  Location l = op.getLoc();
  b.setInsertionPoint(op);
  Type i64 = b.getI64Type();
  auto widen = [&](Value v) -> Value {
    if (v.getType() == i64)
      return v;
    return arith::ExtSIOp::create(b, l, i64, v);
  };
  IndexRangeTest t;
  t.min = widen(op.getMin());
  t.max = widen(op.getMax());
  // NOTE: I64Attr getters return uint64_t; the bounds are signed.
  t.lower = arith::ConstantIntOp::create(b, l, op.getLowerAttr().getInt(), 64);
  t.upper = arith::ConstantIntOp::create(b, l, op.getUpperAttr().getInt(), 64);
  Value tooLow =
      arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, t.min, t.lower);
  t.tooHigh =
      arith::CmpIOp::create(b, l, arith::CmpIPredicate::sge, t.max, t.upper);
  t.bad = arith::OrIOp::create(b, l, tooLow, t.tooHigh);
  auto ifBad = scf::IfOp::create(b, l, t.bad, /*withElseRegion=*/false);
  b.setInsertionPointToStart(ifBad.thenBlock());
  return t;
}

void emitRecordFirstFailure(
    OpBuilder &b, Location l, Value lower, Value upper,
    llvm::function_ref<std::pair<Value, Value>(OpBuilder &)> valueAndInfo) {
  MLIRContext *ctx = b.getContext();
  Type i64 = IntegerType::get(ctx, 64);
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  LLVM::LLVMStructType recordType = getRunTimeStatusType(ctx);
  Value address = recordAddress(b, l);
  auto field = [&](int index) -> Value {
    return LLVM::GEPOp::create(b, l, ptr, recordType, address,
                               ArrayRef<LLVM::GEPArg>{0, index});
  };
  Value failed = LLVM::LoadOp::create(b, l, i64, field(Failed));
  Value first =
      arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, failed,
                            arith::ConstantIntOp::create(b, l, 0, 64));
  auto ifFirst = scf::IfOp::create(b, l, first, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifFirst.thenBlock());
  auto [value, info] = valueAndInfo(b);
  LLVM::StoreOp::create(b, l, arith::ConstantIntOp::create(b, l, 1, 64),
                        field(Failed));
  LLVM::StoreOp::create(b, l, value, field(Value_));
  LLVM::StoreOp::create(b, l, lower, field(Lower));
  LLVM::StoreOp::create(b, l, upper, field(Upper));
  LLVM::StoreOp::create(b, l, info, field(Info));
}

} // namespace pipedream::cpu
