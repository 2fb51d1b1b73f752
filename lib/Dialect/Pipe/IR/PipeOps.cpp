//===- PipeOps.cpp - pipe dialect operations ------------------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Verifiers and the custom syntax of `pipe.program`. Every op verifier checks
// the op's own attributes and, when the op sits in a `pipe.program`, its
// consistency with the program's schedule and rank. Whole-program properties
// (matched transfers, deadlock freedom, stash/restore pairing) belong to
// `pipe-verify-schedule`.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Dialect/Pipe/IR/PipeOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Interfaces/FunctionImplementation.h"

using namespace mlir;
using namespace pipedream::pipe;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// Returns the `pipe.program` around `op`, or null outside of one.
static ProgramOp getEnclosingProgram(Operation *op) {
  return op->getParentOfType<ProgramOp>();
}

/// Fails with "<what> must be non-negative" when `attr` is negative.
static LogicalResult verifyNonNegative(Operation *op, StringRef what,
                                       IntegerAttr attr) {
  if (attr.getInt() < 0)
    return op->emitOpError()
           << what << " must be non-negative, got " << attr.getInt();
  return success();
}

/// Checks `stage` (and `microbatch`, when given) against the schedule of the
/// program around `op`, and that a per-rank program runs the stage itself.
/// Outside of a program there is nothing to check against.
static LogicalResult verifyStageInProgram(Operation *op, StageAttr stage,
                                          std::optional<int64_t> microbatch) {
  ProgramOp program = getEnclosingProgram(op);
  if (!program)
    return success();
  ScheduleAttr schedule = program.getSchedule();
  if (stage.getIndex() >= schedule.getNumStages())
    return op->emitOpError() << "stage " << stage
                             << " is out of range for a schedule of "
                             << schedule.getNumStages() << " stages";
  if (stage.getChunk() >= schedule.getNumChunks())
    return op->emitOpError() << "stage " << stage
                             << " is out of range for a schedule of "
                             << schedule.getNumChunks() << " chunks per stage";
  if (stage != schedule.getStageOf(stage.getVirtualIndex(
                   schedule.getNumStages())))
    return op->emitOpError()
           << "stage " << stage << " does not follow the "
           << (schedule.isVShaped() ? "V placement of '"
                                    : "loop placement of '")
           << stringifyScheduleKind(schedule.getKind()) << "' (expected "
           << schedule.getStageOf(stage.getVirtualIndex(schedule.getNumStages()))
           << ")";
  if (microbatch && *microbatch >= schedule.getNumMicrobatches())
    return op->emitOpError() << "microbatch " << *microbatch
                             << " is out of range for a schedule of "
                             << schedule.getNumMicrobatches()
                             << " microbatches";
  if (IntegerAttr rank = program.getRankAttr();
      rank && stage.getRank() != rank.getInt())
    return op->emitOpError()
           << "stage " << stage << " runs on rank " << stage.getRank()
           << ", but the enclosing program is for rank " << rank.getInt();
  return success();
}

//===----------------------------------------------------------------------===//
// custom<Stage>: `1` or `1 chunk 2` for #pipe.stage<1, chunk = 2>, `0 chunk 1
// reversed` for #pipe.stage<0, chunk = 1, reversed = true> (V placement)
//===----------------------------------------------------------------------===//

// NOTE: ops spell their stage as bare integers rather than the qualified
// `#pipe.stage<...>`: a dialect attribute followed by the op's `:` would
// read the op's type as the attribute's type.
static ParseResult parseStage(OpAsmParser &parser, StageAttr &stage) {
  SMLoc loc = parser.getCurrentLocation();
  int64_t index = 0;
  int64_t chunk = 0;
  if (parser.parseInteger(index))
    return failure();
  bool reversed = false;
  if (succeeded(parser.parseOptionalKeyword("chunk")) &&
      parser.parseInteger(chunk))
    return failure();
  if (succeeded(parser.parseOptionalKeyword("reversed")))
    reversed = true;
  stage = StageAttr::getChecked([&] { return parser.emitError(loc); },
                                parser.getContext(), index, chunk, reversed);
  return success(static_cast<bool>(stage));
}

static void printStage(OpAsmPrinter &p, Operation *, StageAttr stage) {
  p << stage.getIndex();
  if (stage.getChunk() != 0)
    p << " chunk " << stage.getChunk();
  if (stage.getReversed())
    p << " reversed";
}

//===----------------------------------------------------------------------===//
// ProgramOp
//===----------------------------------------------------------------------===//

void ProgramOp::build(OpBuilder &builder, OperationState &state, StringRef name,
                      FunctionType type, ScheduleAttr schedule,
                      std::optional<int64_t> rank) {
  state.addAttribute(SymbolTable::getSymbolAttrName(),
                     builder.getStringAttr(name));
  state.addAttribute(getFunctionTypeAttrName(state.name), TypeAttr::get(type));
  state.addAttribute(getScheduleAttrName(state.name), schedule);
  if (rank)
    state.addAttribute(getRankAttrName(state.name),
                       builder.getI64IntegerAttr(*rank));
  // NOTE: like func.func, the body starts empty; call addEntryBlock().
  state.addRegion();
}

/// Syntax:
///   pipe.program @name (`rank` N)? `schedule` #pipe.schedule<...>
///       (%arg: type {attrs}, ...) -> (types) (`attributes` {...})? { body }
ParseResult ProgramOp::parse(OpAsmParser &parser, OperationState &result) {
  Builder &builder = parser.getBuilder();
  StringAttr name;
  if (parser.parseSymbolName(name, SymbolTable::getSymbolAttrName(),
                             result.attributes))
    return failure();

  if (succeeded(parser.parseOptionalKeyword("rank"))) {
    int64_t rank;
    if (parser.parseInteger(rank))
      return failure();
    result.addAttribute(getRankAttrName(result.name),
                        builder.getI64IntegerAttr(rank));
  }

  ScheduleAttr schedule;
  if (parser.parseKeyword("schedule") || parser.parseAttribute(schedule))
    return failure();
  result.addAttribute(getScheduleAttrName(result.name), schedule);

  SmallVector<OpAsmParser::Argument> args;
  SmallVector<Type> resultTypes;
  SmallVector<DictionaryAttr> resultAttrs;
  bool isVariadic = false;
  if (function_interface_impl::parseFunctionSignatureWithArguments(
          parser, /*allowVariadic=*/false, args, isVariadic, resultTypes,
          resultAttrs))
    return failure();
  SmallVector<Type> argTypes;
  for (OpAsmParser::Argument &arg : args)
    argTypes.push_back(arg.type);
  result.addAttribute(
      getFunctionTypeAttrName(result.name),
      TypeAttr::get(builder.getFunctionType(argTypes, resultTypes)));
  call_interface_impl::addArgAndResultAttrs(
      builder, result, args, resultAttrs, getArgAttrsAttrName(result.name),
      getResAttrsAttrName(result.name));

  if (parser.parseOptionalAttrDictWithKeyword(result.attributes))
    return failure();
  Region *body = result.addRegion();
  return parser.parseRegion(*body, args, /*enableNameShadowing=*/false);
}

void ProgramOp::print(OpAsmPrinter &p) {
  p << ' ';
  p.printSymbolName(getSymName());
  if (IntegerAttr rank = getRankAttr())
    p << " rank " << rank.getInt();
  p << " schedule ";
  p.printAttribute(getSchedule());
  p << ' ';
  function_interface_impl::printFunctionSignature(
      p, *this, getArgumentTypes(), /*isVariadic=*/false, getResultTypes());
  function_interface_impl::printFunctionAttributes(
      p, *this,
      {getFunctionTypeAttrName().getValue(), getArgAttrsAttrName().getValue(),
       getResAttrsAttrName().getValue(), getScheduleAttrName().getValue(),
       getRankAttrName().getValue()});
  p << ' ';
  p.printRegion(getBody(), /*printEntryBlockArgs=*/false,
                /*printBlockTerminators=*/true);
}

LogicalResult ProgramOp::verify() {
  if (IntegerAttr rankAttr = getRankAttr()) {
    int64_t rank = rankAttr.getInt();
    int64_t numRanks = getSchedule().getNumRanks();
    if (rank < 0 || rank >= numRanks)
      return emitOpError() << "rank " << rank << " is out of range [0, "
                           << numRanks << ") for a schedule of " << numRanks
                           << " stages";
  }
  // The region constraint guarantees one block; ReturnOp's verifier relies
  // on this program being its parent, so the block must end in one.
  Block &block = getBody().front();
  if (block.empty() || !isa<ReturnOp>(block.back()))
    return emitOpError() << "body must end with 'pipe.return'";
  return success();
}

//===----------------------------------------------------------------------===//
// ReturnOp
//===----------------------------------------------------------------------===//

LogicalResult ReturnOp::verify() {
  auto program = cast<ProgramOp>((*this)->getParentOp());
  ArrayRef<Type> resultTypes = program.getResultTypes();
  if (getNumOperands() != resultTypes.size())
    return emitOpError() << "has " << getNumOperands()
                         << " operands, but the enclosing program returns "
                         << resultTypes.size() << " values";
  for (auto [i, operand, type] :
       llvm::enumerate(getOperands(), resultTypes)) {
    if (operand.getType() != type)
      return emitOpError() << "operand " << i << " has type "
                           << operand.getType()
                           << ", but the enclosing program returns " << type;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// CallStageOp
//===----------------------------------------------------------------------===//

bool pipedream::pipe::isBoundArgument(FunctionOpInterface func,
                                      unsigned index) {
  if (func.getArgAttr(index, "nn.param"))
    return true;
  auto role = func.getArgAttrOfType<StringAttr>(index, "nn.role");
  return role && (role.getValue() == "grad" || role.getValue() == "state");
}

bool pipedream::pipe::isBoundResult(FunctionOpInterface func, unsigned index) {
  return static_cast<bool>(func.getResultAttr(index, "nn.updates"));
}

SmallVector<Type>
pipedream::pipe::getValueArgumentTypes(FunctionOpInterface func) {
  SmallVector<Type> types;
  for (auto [i, type] : llvm::enumerate(func.getArgumentTypes()))
    if (!isBoundArgument(func, i))
      types.push_back(type);
  return types;
}

SmallVector<Type>
pipedream::pipe::getValueResultTypes(FunctionOpInterface func) {
  SmallVector<Type> types;
  for (auto [i, type] : llvm::enumerate(func.getResultTypes()))
    if (!isBoundResult(func, i))
      types.push_back(type);
  return types;
}

LogicalResult CallStageOp::verify() {
  if (failed(verifyNonNegative(*this, "microbatch", getMicrobatchAttr())) ||
      failed(verifyStageInProgram(*this, getStage(),
                                  getMicrobatchAttr().getInt())))
    return failure();
  if (getAction() == ActionKind::WeightGrad) {
    ProgramOp program = getEnclosingProgram(*this);
    if (program && !program.getSchedule().splitsBackward())
      return emitOpError()
             << "action W needs a schedule that splits the backward "
                "('zb-h1'), got '"
             << stringifyScheduleKind(program.getSchedule().getKind()) << "'";
  }
  if (getAction() == ActionKind::GradNorm) {
    ProgramOp program = getEnclosingProgram(*this);
    ScheduleKind kind =
        program ? program.getSchedule().getKind() : ScheduleKind::GPipe;
    if (kind == ScheduleKind::PipeDream || kind == ScheduleKind::TwoBW)
      return emitOpError()
             << "action N (the gradient norm of clipping) needs a "
                "synchronous schedule, got '"
             << stringifyScheduleKind(kind) << "'";
  }
  return success();
}

LogicalResult
CallStageOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto callee = symbolTable.lookupNearestSymbolFrom<FunctionOpInterface>(
      *this, getCalleeAttr());
  // A program is not a stage: programs are never called.
  if (!callee || isa<ProgramOp>(callee))
    return emitOpError() << getCalleeAttr()
                         << " does not reference a stage function";

  SmallVector<Type> inputs = getValueArgumentTypes(callee);
  if (getArgs().size() != inputs.size())
    return emitOpError() << "passes " << getArgs().size() << " operands, but "
                         << getCalleeAttr() << " takes " << inputs.size();
  for (auto [i, arg, type] : llvm::enumerate(getArgs(), inputs)) {
    if (arg.getType() != type)
      return emitOpError() << "operand " << i << " has type " << arg.getType()
                           << ", but " << getCalleeAttr() << " expects "
                           << type;
  }

  SmallVector<Type> results = getValueResultTypes(callee);
  if (getNumResults() != results.size())
    return emitOpError() << "has " << getNumResults() << " results, but "
                         << getCalleeAttr() << " returns " << results.size();
  for (auto [i, result, type] : llvm::enumerate(getResults(), results)) {
    if (result.getType() != type)
      return emitOpError() << "result " << i << " has type "
                           << result.getType() << ", but " << getCalleeAttr()
                           << " returns " << type;
  }

  // The outliner marks each stage function with its stage; a call that
  // disagrees would run the function on the wrong rank.
  if (auto calleeStage =
          callee->getAttrOfType<StageAttr>(PipeDialect::kStageAttrName);
      calleeStage && calleeStage != getStage())
    return emitOpError() << "runs stage " << getStage() << ", but "
                         << getCalleeAttr() << " belongs to stage "
                         << calleeStage;
  return success();
}

//===----------------------------------------------------------------------===//
// TransferOp
//===----------------------------------------------------------------------===//

LogicalResult TransferOp::verify() {
  if (getSrc() == getDst())
    return emitOpError() << "source and destination are the same stage "
                         << getSrc();
  ProgramOp program = getEnclosingProgram(*this);
  if (!program)
    return success();
  if (IntegerAttr rank = program.getRankAttr())
    return emitOpError()
           << "is only valid in a global-view program, but the enclosing "
              "program is for rank "
           << rank.getInt() << " (use 'pipe.send' and 'pipe.recv')";
  if (failed(verifyStageInProgram(*this, getSrc(), std::nullopt)) ||
      failed(verifyStageInProgram(*this, getDst(), std::nullopt)))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// SendOp / RecvOp
//===----------------------------------------------------------------------===//

/// Checks the peer and tag of a send or receive, and, inside a program, that
/// the program is a per-rank view and the peer another rank of it.
static LogicalResult verifyPeerAndTag(Operation *op, IntegerAttr peerAttr,
                                      IntegerAttr tagAttr) {
  if (failed(verifyNonNegative(op, "peer rank", peerAttr)) ||
      failed(verifyNonNegative(op, "tag", tagAttr)))
    return failure();
  ProgramOp program = getEnclosingProgram(op);
  if (!program)
    return success();
  IntegerAttr rank = program.getRankAttr();
  if (!rank)
    return op->emitOpError()
           << "is only valid in a per-rank program, but the enclosing "
              "program is a global view (use 'pipe.transfer')";
  int64_t peer = peerAttr.getInt();
  int64_t numRanks = program.getSchedule().getNumRanks();
  if (peer >= numRanks)
    return op->emitOpError() << "peer rank " << peer
                             << " is out of range for a schedule of "
                             << numRanks << " ranks";
  if (peer == rank.getInt())
    return op->emitOpError()
           << "peer rank " << peer << " is the enclosing program's own rank";
  return success();
}

LogicalResult SendOp::verify() {
  return verifyPeerAndTag(*this, getPeerAttr(), getTagAttr());
}

LogicalResult RecvOp::verify() {
  return verifyPeerAndTag(*this, getPeerAttr(), getTagAttr());
}

//===----------------------------------------------------------------------===//
// AllReduceGradOp
//===----------------------------------------------------------------------===//

SmallVector<int64_t> AllReduceGradOp::getRanks() {
  SmallVector<int64_t> ranks;
  for (auto stage : getStages().getAsRange<StageAttr>())
    ranks.push_back(stage.getRank());
  llvm::sort(ranks);
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return ranks;
}

LogicalResult AllReduceGradOp::verify() {
  if (getWeight().empty())
    return emitOpError() << "needs the weight's name";
  if (failed(verifyNonNegative(*this, "microbatch", getMicrobatchAttr())))
    return failure();
  auto type = cast<RankedTensorType>(getGradType());
  if (!isa<FloatType>(type.getElementType()))
    return emitOpError() << "reduces a gradient, which has a float type, got "
                         << type;
  SmallVector<StageAttr> stages(getStages().getAsRange<StageAttr>());
  for (auto [i, a] : llvm::enumerate(stages))
    for (StageAttr b : ArrayRef<StageAttr>(stages).drop_front(i + 1))
      if (a == b)
        return emitOpError() << "lists stage " << a << " twice";
  SmallVector<int64_t> ranks = getRanks();
  if (ranks.size() < 2)
    return emitOpError() << "needs stages on at least two ranks (a weight "
                            "held by one rank needs no all-reduce), got "
                         << getStages();
  ProgramOp program = getEnclosingProgram(*this);
  if (!program)
    return success();
  ScheduleAttr schedule = program.getSchedule();
  for (StageAttr stage : stages)
    if (stage.getIndex() >= schedule.getNumStages() ||
        stage.getChunk() >= schedule.getNumChunks())
      return emitOpError() << "stage " << stage
                           << " is out of range for the schedule "
                           << schedule;
  if (static_cast<int64_t>(getMicrobatch()) >= schedule.getNumMicrobatches())
    return emitOpError() << "microbatch " << getMicrobatch()
                         << " is out of range for a schedule of "
                         << schedule.getNumMicrobatches() << " microbatches";
  if (IntegerAttr rank = program.getRankAttr();
      rank && !llvm::is_contained(ranks, rank.getInt()))
    return emitOpError() << "is in the program of rank " << rank.getInt()
                         << ", which holds none of its stages";
  return success();
}

//===----------------------------------------------------------------------===//
// StashOp / RestoreOp
//===----------------------------------------------------------------------===//

/// Checks the slot coordinates shared by stash and restore.
static LogicalResult verifySlot(Operation *op, StashKind kind,
                                IntegerAttr slot, StageAttr stage,
                                IntegerAttr microbatch) {
  if (failed(verifyNonNegative(op, "slot", slot)) ||
      failed(verifyNonNegative(op, "microbatch", microbatch)) ||
      failed(verifyStageInProgram(op, stage, microbatch.getInt())))
    return failure();
  ProgramOp program = getEnclosingProgram(op);
  if (kind == StashKind::Weight && program &&
      !program.getSchedule().hasWeightVersions())
    return op->emitOpError()
           << "weight slots need a schedule with weight versions "
              "('pipedream' or '2bw'), got '"
           << stringifyScheduleKind(program.getSchedule().getKind()) << "'";
  return success();
}

LogicalResult StashOp::verify() {
  return verifySlot(*this, getKind(), getSlotAttr(), getStage(),
                    getMicrobatchAttr());
}

LogicalResult RestoreOp::verify() {
  return verifySlot(*this, getKind(), getSlotAttr(), getStage(),
                    getMicrobatchAttr());
}

#define GET_OP_CLASSES
#include "pipedream/Dialect/Pipe/IR/PipeOps.cpp.inc"
