//===- PipeOps.h - pipe dialect operations ----------------------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_DIALECT_PIPE_IR_PIPEOPS_H
#define PIPEDREAM_DIALECT_PIPE_IR_PIPEOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "pipedream/Dialect/Pipe/IR/PipeAttrs.h"
#include "pipedream/Dialect/Pipe/IR/PipeDialect.h"

namespace pipedream::pipe {

/// The links between ranks: `pipe.send` and `pipe.recv` read and write it.
struct CommunicationResource
    : public mlir::SideEffects::Resource::Base<CommunicationResource> {
  llvm::StringRef getName() final { return "pipe::Communication"; }
};

/// The stash slots of a rank: `pipe.stash` writes them, `pipe.restore` reads
/// and frees them.
struct StashResource : public mlir::SideEffects::Resource::Base<StashResource> {
  llvm::StringRef getName() final { return "pipe::Stash"; }
};

/// Whether argument `index` of a stage function is bound by the runtime
/// rather than passed by `pipe.call_stage`: a persistent buffer of the rank
/// (a weight, `nn.param`; a gradient accumulator or optimizer state,
/// `nn.role` = "grad" / "state"). docs/Pipe.md, "Stage functions".
bool isBoundArgument(mlir::FunctionOpInterface func, unsigned index);

/// Whether result `index` of a stage function updates a persistent buffer
/// (`nn.updates`) instead of being returned to the program.
bool isBoundResult(mlir::FunctionOpInterface func, unsigned index);

/// The types of the arguments / results a `pipe.call_stage` of `func`
/// passes / returns: the non-bound ones, in order.
llvm::SmallVector<mlir::Type> getValueArgumentTypes(mlir::FunctionOpInterface func);
llvm::SmallVector<mlir::Type> getValueResultTypes(mlir::FunctionOpInterface func);

} // namespace pipedream::pipe

#define GET_OP_CLASSES
#include "pipedream/Dialect/Pipe/IR/PipeOps.h.inc"

#endif // PIPEDREAM_DIALECT_PIPE_IR_PIPEOPS_H
