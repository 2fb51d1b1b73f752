//===- LowerRunTimeChecks.cpp - index checks of cuda bundles --------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The run-time status channel of cuda bundles (docs/Bundle.md, "Run-time
// checks"), in two passes:
//
// - cuda-lower-run-time-checks (bufferized host code, before
//   cuda-map-to-kernels): a device record per function, written by the
//   checks, which cuda-map-to-kernels puts into single-thread kernels;
// - cuda-define-run-time-status (after cuda-allocate-device-memory): the
//   host record of the CPU target, filled from the device record when the
//   function returns.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Target/GPU/Passes.h"

#include "pipedream/Dialect/NN/IR/NNOps.h"
#include "pipedream/Target/CPU/RunTimeStatus.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

namespace pipedream::cuda {
#define GEN_PASS_DEF_LOWERRUNTIMECHECKSPASS
#define GEN_PASS_DEF_DEFINERUNTIMESTATUSPASS
#include "pipedream/Target/GPU/Passes.h.inc"
} // namespace pipedream::cuda

using namespace mlir;

namespace {

/// Fields of the device record (memref<5xi64>).
enum DeviceField { Failed = 0, Value_ = 1, Lower = 2, Upper = 3, Id = 4 };
constexpr int64_t kDeviceFields = 5;

constexpr llvm::StringLiteral kTakeName = "pipedream.cuda_take_run_time_status";
constexpr llvm::StringLiteral kChecksAttr = "pipedream.cuda.checks";

MemRefType deviceRecordType(MLIRContext *ctx) {
  return MemRefType::get({kDeviceFields}, IntegerType::get(ctx, 64));
}

struct LowerRunTimeChecksPass
    : pipedream::cuda::impl::LowerRunTimeChecksPassBase<
          LowerRunTimeChecksPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    if (SymbolTable::lookupSymbolIn(module, kTakeName)) {
      module.emitError("'") << kTakeName << "' is already defined";
      return signalPassFailure();
    }
    SmallVector<func::FuncOp> funcs;
    module.walk([&](func::FuncOp func) {
      if (!func.isDeclaration() &&
          func.walk([](pipedream::nn::CheckIndexRangeOp) {
                return WalkResult::interrupt();
              }).wasInterrupted())
        funcs.push_back(func);
    });
    if (funcs.empty())
      return;

    MemRefType recordType = deviceRecordType(ctx);
    OpBuilder b(ctx);
    b.setInsertionPointToEnd(module.getBody());
    auto take = func::FuncOp::create(b, module.getLoc(), kTakeName,
                                     b.getFunctionType({recordType}, {}));
    take.setPrivate();

    SmallVector<Attribute> infos;
    for (func::FuncOp func : funcs) {
      Location loc = func.getLoc();
      auto c = [&](OpBuilder &builder, Location l, int64_t v) -> Value {
        return arith::ConstantIntOp::create(builder, l, v, 64);
      };
      auto index = [&](OpBuilder &builder, Location l, int64_t v) -> Value {
        return arith::ConstantIndexOp::create(builder, l, v);
      };
      // The record, zeroed (a fill: a kernel like any other).
      b.setInsertionPointToStart(&func.getBody().front());
      Value record = memref::AllocOp::create(b, loc, recordType);
      linalg::FillOp::create(b, loc, ValueRange{c(b, loc, 0)},
                             ValueRange{record});

      SmallVector<pipedream::nn::CheckIndexRangeOp> checks;
      func.walk([&](pipedream::nn::CheckIndexRangeOp op) {
        checks.push_back(op);
      });
      // Each check right after its operands (in program order when several
      // share them, e.g. a Gather and its gradient reading one index
      // tensor, whose min/max CSE merged): cuda-map-to-kernels then puts
      // the loads and the checks into one kernel, where a check further
      // down would need the loaded values on the host.
      for (pipedream::nn::CheckIndexRangeOp op : checks) {
        Operation *last = nullptr;
        for (Value v : {op.getMin(), op.getMax()}) {
          Operation *def = v.getDefiningOp();
          if (!def || def->getBlock() != op->getBlock()) {
            last = nullptr;
            break;
          }
          if (!last || last->isBeforeInBlock(def))
            last = def;
        }
        if (!last)
          continue;
        Operation *after = last;
        while (after->getNextNode() != op.getOperation() &&
               isa_and_nonnull<pipedream::nn::CheckIndexRangeOp>(
                   after->getNextNode()))
          after = after->getNextNode();
        if (after != op.getOperation() && after->getNextNode() != op)
          op->moveAfter(after);
      }
      for (pipedream::nn::CheckIndexRangeOp op : checks) {
        Location l = op.getLoc();
        pipedream::cpu::IndexRangeTest t =
            pipedream::cpu::emitIfOutOfRange(b, op);
        Value failed = memref::LoadOp::create(b, l, record,
                                              ValueRange{index(b, l, Failed)});
        Value first = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                                            failed, c(b, l, 0));
        auto ifFirst = scf::IfOp::create(b, l, first, /*withElseRegion=*/false);
        b.setInsertionPointToStart(ifFirst.thenBlock());
        Value value = arith::SelectOp::create(b, l, t.tooHigh, t.max, t.min);
        auto store = [&](Value v, int64_t field) {
          memref::StoreOp::create(b, l, v, record,
                                  ValueRange{index(b, l, field)});
        };
        store(c(b, l, 1), Failed);
        store(value, Value_);
        store(t.lower, Lower);
        store(t.upper, Upper);
        store(c(b, l, static_cast<int64_t>(infos.size())), Id);
        infos.push_back(b.getStrArrayAttr(
            {op.getOpType(), op.getNode(),
             pipedream::cpu::getRunTimeCheckInputName(op)}));
        op.erase();
      }

      // Hand the record to the host record, then free it, at every return.
      SmallVector<func::ReturnOp> returns;
      func.walk([&](func::ReturnOp ret) { returns.push_back(ret); });
      for (func::ReturnOp ret : returns) {
        b.setInsertionPoint(ret);
        func::CallOp::create(b, ret.getLoc(), take, ValueRange{record});
        memref::DeallocOp::create(b, ret.getLoc(), record);
      }
    }
    take->setAttr(kChecksAttr, b.getArrayAttr(infos));
  }
};

struct DefineRunTimeStatusPass
    : pipedream::cuda::impl::DefineRunTimeStatusPassBase<
          DefineRunTimeStatusPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    if (failed(pipedream::cpu::defineRunTimeStatusRecord(module)))
      return signalPassFailure();
    auto take = dyn_cast_or_null<func::FuncOp>(
        SymbolTable::lookupSymbolIn(module, kTakeName));
    if (!take)
      return;
    if (!take.isDeclaration()) {
      take.emitError("'") << kTakeName << "' is already defined";
      return signalPassFailure();
    }
    auto infos = take->getAttrOfType<ArrayAttr>(kChecksAttr);
    if (!infos || take.getNumArguments() != 1 ||
        take.getArgumentTypes()[0] != deviceRecordType(ctx)) {
      take.emitError("'") << kTakeName
                          << "' must take memref<5xi64> and carry '"
                          << kChecksAttr << "' (cuda-lower-run-time-checks)";
      return signalPassFailure();
    }
    SmallVector<std::string> texts;
    for (Attribute info : infos) {
      auto names = dyn_cast<ArrayAttr>(info);
      if (!names || names.size() != 3 ||
          !llvm::all_of(names, [](Attribute a) { return isa<StringAttr>(a); })) {
        take.emitError("'") << kChecksAttr
                            << "' must list [op type, node, input] strings";
        return signalPassFailure();
      }
      std::string text;
      for (Attribute name : names) {
        text += cast<StringAttr>(name).getValue().str();
        text.push_back('\0');
      }
      texts.push_back(std::move(text));
    }
    take->removeAttr(kChecksAttr);

    Location loc = take.getLoc();
    Type ptr = LLVM::LLVMPointerType::get(ctx);
    Block *entry = take.addEntryBlock();
    OpBuilder b = OpBuilder::atBlockBegin(entry);
    auto index = [&](int64_t v) -> Value {
      return arith::ConstantIndexOp::create(b, loc, v);
    };
    // Device to host: gpu.memcpy is stream-ordered after the function's
    // kernels, and the load below waits for it (gpu-async-region).
    Value host = memref::AllocaOp::create(b, loc, deviceRecordType(ctx));
    gpu::MemcpyOp::create(b, loc, Type(), ValueRange(), host,
                          entry->getArgument(0));
    auto load = [&](int64_t field) -> Value {
      return memref::LoadOp::create(b, loc, host, ValueRange{index(field)});
    };
    Value failed = load(Failed);
    Value anyFailed = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::ne, failed,
        arith::ConstantIntOp::create(b, loc, 0, 64));
    auto ifFailed = scf::IfOp::create(b, loc, anyFailed, false);
    b.setInsertionPointToStart(ifFailed.thenBlock());
    Value value = load(Value_), lower = load(Lower), upper = load(Upper);
    Value id = load(Id);
    pipedream::cpu::emitRecordFirstFailure(
        b, loc, lower, upper, [&](OpBuilder &inner) {
          // The failed check's names: a select over the ids (few per
          // function); an id out of range (never written) names none.
          Value info = LLVM::ZeroOp::create(inner, loc, ptr);
          SymbolTable symbols(module);
          for (size_t i = 0; i < texts.size(); ++i) {
            std::string name;
            unsigned counter = static_cast<unsigned>(i);
            do
              name = "pipedream.cuda_check_info." + std::to_string(counter++);
            while (symbols.lookup(name));
            Value text = LLVM::createGlobalString(loc, inner, name, texts[i],
                                                  LLVM::Linkage::Internal);
            Value is = arith::CmpIOp::create(
                inner, loc, arith::CmpIPredicate::eq, id,
                arith::ConstantIntOp::create(inner, loc,
                                             static_cast<int64_t>(i), 64));
            info = arith::SelectOp::create(inner, loc, is, text, info);
          }
          return std::make_pair(value, info);
        });
    b.setInsertionPointToEnd(entry);
    func::ReturnOp::create(b, loc);
  }
};

} // namespace
