//===- OutlineStages.cpp - pipe-outline-stages -----------------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Dialect/Pipe/IR/PipeAttrs.h"
#include "pipedream/Dialect/Pipe/IR/PipeOps.h"
#include "pipedream/Dialect/Pipe/Transforms/CostModel.h"
#include "pipedream/Dialect/Pipe/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"

#include <map>

namespace pipedream::pipe {
#define GEN_PASS_DEF_OUTLINESTAGESPASS
#include "pipedream/Dialect/Pipe/Transforms/Passes.h.inc"
} // namespace pipedream::pipe

using namespace mlir;
using namespace pipedream::pipe;

namespace {

struct OutlineStagesPass
    : pipedream::pipe::impl::OutlineStagesPassBase<OutlineStagesPass> {
  void runOnOperation() override;
  LogicalResult outline(func::FuncOp func, SymbolTable &symbols);
};

/// What one stage function takes and gives.
struct StagePlan {
  SmallVector<Operation *> ops;
  SmallVector<Value> inputs;  ///< Arguments, then received values.
  SmallVector<Value> outputs; ///< Values later stages or the return read.
  func::FuncOp callee;
};

} // namespace

static bool isConstant(Operation *op) {
  return op->hasTrait<OpTrait::ConstantLike>();
}

LogicalResult OutlineStagesPass::outline(func::FuncOp func,
                                         SymbolTable &symbols) {
  Block &body = func.getBody().front();
  Operation *terminator = body.getTerminator();
  MLIRContext *context = &getContext();

  // Number of physical stages: from the partition when recorded, else the
  // largest index.
  int64_t k = 0, maxChunk = 0;
  // V placement (zb-v, dualpipe-v) when the partitioner reversed a chunk.
  bool vShaped = false;
  for (Operation &op : body)
    if (auto stage = op.getAttrOfType<StageAttr>(PipeDialect::kStageAttrName)) {
      k = std::max<int64_t>(k, stage.getIndex() + 1);
      maxChunk = std::max<int64_t>(maxChunk, stage.getChunk());
      vShaped |= stage.getReversed();
    }
  if (auto summary =
          func->getAttrOfType<PartitionAttr>(PipeDialect::kPartitionAttrName))
    k = std::max<int64_t>(k, summary.getStages());
  int64_t numPieces = k * (maxChunk + 1);
  auto stageAt = [&](int64_t piece) {
    return StageAttr::getForVirtualIndex(context, piece, k, vShaped);
  };

  // Every op in exactly one stage; no edge backwards.
  llvm::DenseMap<Operation *, int64_t> pieceOf;
  for (Operation &op : body) {
    if (&op == terminator || isConstant(&op))
      continue;
    auto stage = op.getAttrOfType<StageAttr>(PipeDialect::kStageAttrName);
    if (!stage)
      return op.emitOpError()
             << "has no pipe.stage: pipe-outline-stages needs every op in "
                "exactly one stage (run pipe-partition first)";
    pieceOf[&op] = stage.getVirtualIndex(k);
  }
  std::vector<StagePlan> plans(numPieces);
  for (Operation &op : body) {
    if (!pieceOf.count(&op))
      continue;
    int64_t piece = pieceOf[&op];
    for (Value operand : op.getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (!def || !pieceOf.count(def))
        continue;
      if (pieceOf[def] > piece) {
        auto diag = op.emitOpError()
                    << "in stage piece " << piece
                    << " uses a value computed in the later piece "
                    << pieceOf[def]
                    << ": pipeline stages must only feed later stages";
        diag.attachNote(def->getLoc()) << "value defined here";
        return diag;
      }
    }
    plans[piece].ops.push_back(&op);
  }
  for (int64_t p = 0; p < numPieces; ++p)
    if (plans[p].ops.empty())
      return func.emitError()
             << "pipe-outline-stages: stage " << stageAt(p).getIndex()
             << " chunk " << p / k << " has no ops";

  // Inputs and outputs of each stage.
  for (int64_t p = 0; p < numPieces; ++p) {
    StagePlan &plan = plans[p];
    llvm::SetVector<Value> args, received;
    for (Operation *op : plan.ops)
      for (Value operand : op->getOperands()) {
        if (isa<BlockArgument>(operand)) {
          args.insert(operand);
          continue;
        }
        Operation *def = operand.getDefiningOp();
        if (pieceOf.count(def) && pieceOf[def] != p)
          received.insert(operand);
      }
    SmallVector<Value> sortedArgs(args.begin(), args.end());
    llvm::sort(sortedArgs, [](Value a, Value b) {
      return cast<BlockArgument>(a).getArgNumber() <
             cast<BlockArgument>(b).getArgNumber();
    });
    plan.inputs.assign(sortedArgs.begin(), sortedArgs.end());
    // Received values in definition order (body order).
    SmallVector<Value> sortedReceived(received.begin(), received.end());
    llvm::sort(sortedReceived, [](Value a, Value b) {
      Operation *da = a.getDefiningOp(), *db = b.getDefiningOp();
      if (da != db)
        return da->isBeforeInBlock(db);
      return cast<OpResult>(a).getResultNumber() <
             cast<OpResult>(b).getResultNumber();
    });
    plan.inputs.append(sortedReceived.begin(), sortedReceived.end());
    for (Operation *op : plan.ops)
      for (Value result : op->getResults())
        if (llvm::any_of(result.getUsers(), [&](Operation *user) {
              return user == terminator ||
                     (pieceOf.count(user) && pieceOf[user] != p);
            }))
          plan.outputs.push_back(result);
  }

  // The stage functions.
  OpBuilder b(context);
  b.setInsertionPoint(func);
  for (int64_t p = 0; p < numPieces; ++p) {
    StagePlan &plan = plans[p];
    auto stage = stageAt(p);
    std::string name =
        (func.getSymName() + "_stage" + Twine(stage.getIndex())).str();
    if (p / k > 0)
      name += "_chunk" + std::to_string(p / k);
    SmallVector<Type> argTypes, resultTypes;
    for (Value v : plan.inputs)
      argTypes.push_back(v.getType());
    for (Value v : plan.outputs)
      resultTypes.push_back(v.getType());
    auto callee = func::FuncOp::create(b, func.getLoc(), name,
                                       b.getFunctionType(argTypes, resultTypes));
    callee.setPrivate();
    callee->setAttr(PipeDialect::kStageAttrName, stage);
    symbols.insert(callee); // renames on a clash
    for (auto [i, v] : llvm::enumerate(plan.inputs)) {
      if (auto arg = dyn_cast<BlockArgument>(v)) {
        if (DictionaryAttr attrs = func.getArgAttrDict(arg.getArgNumber())) {
          SmallVector<NamedAttribute> kept;
          for (NamedAttribute attr : attrs)
            if (attr.getName() != PipeDialect::kStageAttrName)
              kept.push_back(attr);
          callee.setArgAttrs(i, kept);
        }
      } else {
        auto src = v.getDefiningOp()->getAttrOfType<StageAttr>(
            PipeDialect::kStageAttrName);
        callee.setArgAttr(i, "pipe.received_from", src);
      }
    }
    Block *entry = callee.addEntryBlock();
    OpBuilder inner = OpBuilder::atBlockEnd(entry);
    IRMapping mapping;
    for (auto [v, arg] : llvm::zip(plan.inputs, entry->getArguments()))
      mapping.map(v, arg);
    for (Operation *op : plan.ops) {
      // Constants are cloned into every stage that reads them.
      for (Value operand : op->getOperands())
        if (Operation *def = operand.getDefiningOp();
            def && isConstant(def) && !mapping.contains(operand))
          inner.clone(*def, mapping);
      Operation *copy = inner.clone(*op, mapping);
      copy->removeAttr(PipeDialect::kStageAttrName);
    }
    SmallVector<Value> results;
    for (Value v : plan.outputs)
      results.push_back(mapping.lookup(v));
    func::ReturnOp::create(inner, func.getLoc(), results);
    plan.callee = callee;
  }

  // The global view: calls in pipeline order, one transfer per value and
  // consuming stage, after which the original ops go.
  SmallVector<Operation *> old;
  for (Operation &op : body)
    if (&op != terminator)
      old.push_back(&op);
  b.setInsertionPoint(terminator);
  llvm::DenseMap<Value, Value> available; // value -> call result
  std::map<std::pair<void *, int64_t>, Value> transferred;
  llvm::DenseMap<Value, int64_t> producerPiece;
  for (int64_t p = 0; p < numPieces; ++p) {
    StagePlan &plan = plans[p];
    auto dst = stageAt(p);
    SmallVector<Value> operands;
    for (Value v : plan.inputs) {
      if (isa<BlockArgument>(v)) {
        operands.push_back(v);
        continue;
      }
      auto key = std::make_pair(v.getAsOpaquePointer(), p);
      auto it = transferred.find(key);
      if (it == transferred.end()) {
        int64_t from = producerPiece[v];
        auto src = stageAt(from);
        auto transfer =
            TransferOp::create(b, v.getLoc(), available[v], src, dst);
        it = transferred.emplace(key, transfer.getResult()).first;
      }
      operands.push_back(it->second);
    }
    auto call = func::CallOp::create(b, func.getLoc(), plan.callee, operands);
    call->setAttr(PipeDialect::kStageAttrName, dst);
    for (auto [v, r] : llvm::zip(plan.outputs, call.getResults())) {
      available[v] = r;
      producerPiece[v] = p;
    }
  }
  // The return reads call results (or arguments, or cloned constants).
  IRMapping returnMapping;
  for (OpOperand &operand : terminator->getOpOperands()) {
    Value v = operand.get();
    if (available.count(v)) {
      operand.set(available[v]);
    } else if (Operation *def = v.getDefiningOp(); def && isConstant(def)) {
      operand.set(b.clone(*def, returnMapping)->getResult(
          cast<OpResult>(v).getResultNumber()));
    }
  }
  // Drop the original ops (users first).
  for (Operation *op : llvm::reverse(old)) {
    if (!op->use_empty())
      return op->emitOpError("pipe-outline-stages: internal error: an "
                             "outlined op is still used");
    op->erase();
  }
  return success();
}

void OutlineStagesPass::runOnOperation() {
  ModuleOp module = getOperation();
  SymbolTable symbols(module);
  SmallVector<func::FuncOp> todo;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isExternal() || func->hasAttr(PipeDialect::kStageAttrName))
      continue;
    bool staged = false;
    func.getBody().front().walk([&](Operation *op) {
      if (op->hasAttr(PipeDialect::kStageAttrName))
        staged = true;
    });
    if (staged)
      todo.push_back(func);
  }
  for (func::FuncOp func : todo)
    if (failed(outline(func, symbols)))
      return signalPassFailure();
}
