//===- PipeOps.td - pipe dialect operations ----------------*- tablegen -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Programs, stage calls, transfers, send/recv and stash/restore.
//
// NOTE: op verifiers check what one op can see: its own attributes and, when
// it sits in a `pipe.program`, the program's schedule and rank. Properties of
// a whole program (every transfer matched, no deadlock, every restore after
// its stash, slot types agree) are proof obligations of
// `pipe-verify-schedule`, not of these verifiers.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_DIALECT_PIPE_IR_PIPEOPS_TD
#define PIPEDREAM_DIALECT_PIPE_IR_PIPEOPS_TD

include "pipedream/Dialect/Pipe/IR/PipeBase.td"
include "pipedream/Dialect/Pipe/IR/PipeAttrs.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/CallInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/FunctionInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

class Pipe_Op<string mnemonic, list<Trait> traits = []>
    : Op<Pipe_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Enum properties
//===----------------------------------------------------------------------===//

// NOTE: ops hold their enums as properties, printed as a bare keyword
// (`pipe.call_stage F ...`); the generic form shows the attribute form
// (`action = #pipe.action F`).
def Pipe_ActionKindProp
    : EnumPropWithAttrForm<Pipe_ActionKind, Pipe_ActionKindAttr> {
  let storeInCustomAttribute = 1;
}
def Pipe_StashKindProp
    : EnumPropWithAttrForm<Pipe_StashKind, Pipe_StashKindAttr> {
  let storeInCustomAttribute = 1;
}

//===----------------------------------------------------------------------===//
// Side-effect resources
//===----------------------------------------------------------------------===//

/// The links between ranks. `pipe.send` and `pipe.recv` read and write it, so
/// they keep their relative order and are never erased as dead, while ops
/// that do not communicate may still move across them.
def Pipe_CommunicationResource
    : Resource<"::pipedream::pipe::CommunicationResource">;

/// The stash slots of a rank, written by `pipe.stash` and read and released
/// by `pipe.restore`.
def Pipe_StashResource : Resource<"::pipedream::pipe::StashResource">;

//===----------------------------------------------------------------------===//
// ProgramOp
//===----------------------------------------------------------------------===//

def Pipe_ProgramOp : Pipe_Op<"program", [
    AutomaticAllocationScope, FunctionOpInterface, IsolatedFromAbove]> {
  let summary = "static pipeline program for one training step";
  let description = [{
    A function-like op whose body is the straight-line list of everything one
    training step does, in order: stage calls, transfers (or sends and
    receives), stashes and restores. `schedule` fixes the schedule kind, the
    number of stages K, micro-batches M and chunks V.

    Without `rank` the program is the **global view** that
    `pipe-unroll-schedule` produces: the body interleaves the work of every
    rank in one order (the order each rank runs its own ops in is their
    relative order in the body), values cross ranks with `pipe.transfer`, and
    `pipe.send` / `pipe.recv` are not allowed. With `rank r` (0 <= r < K) it
    is the **per-rank view** that `pipe-project-ranks` produces: only rank
    r's ops, communication through `pipe.send` / `pipe.recv`, and
    `pipe.transfer` is not allowed.

    The arguments and results are whatever the step consumes and produces
    (weights, the batch, updated weights, the loss); in the global view the
    argument and result attribute `pipe.stage` tells which stage owns each.
    The body is one block ending in `pipe.return`.

    ```mlir
    pipe.program @train_step
        schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 1>
        (%w0: tensor<4x4xf32> {pipe.stage = #pipe.stage<0>},
         %x: tensor<2x4xf32> {pipe.stage = #pipe.stage<0>}) -> tensor<2x4xf32> {
      %a = pipe.call_stage F @stage0_forward(%w0, %x)
          stage 0 microbatch 0
          : (tensor<4x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
      %b = pipe.transfer %a from stage 0 to stage 1
          : tensor<2x4xf32>
      pipe.return %b : tensor<2x4xf32>
    }
    ```

    The syntax is custom (as for `func.func`): the signature binds the entry
    block's arguments, which a declarative format cannot express.
  }];

  let arguments = (ins
    SymbolNameAttr:$sym_name,
    TypeAttrOf<FunctionType>:$function_type,
    OptionalAttr<DictArrayAttr>:$arg_attrs,
    OptionalAttr<DictArrayAttr>:$res_attrs,
    Pipe_ScheduleAttr:$schedule,
    OptionalAttr<I64Attr>:$rank
  );
  let regions = (region SizedRegion<1>:$body);

  let builders = [
    OpBuilder<(ins "::llvm::StringRef":$name, "::mlir::FunctionType":$type,
                   "ScheduleAttr":$schedule,
                   CArg<"std::optional<int64_t>", "std::nullopt">:$rank)>
  ];

  let extraClassDeclaration = [{
    /// True for the global view (no rank), false for a per-rank program.
    bool isGlobalView() { return !getRank().has_value(); }

    //===------------------------------------------------------------------===//
    // FunctionOpInterface
    //===------------------------------------------------------------------===//

    /// Returns the body; a program always has one.
    ::mlir::Region *getCallableRegion() { return &getBody(); }
    /// Returns the argument types of the program.
    ::llvm::ArrayRef<::mlir::Type> getArgumentTypes() {
      return getFunctionType().getInputs();
    }
    /// Returns the result types of the program.
    ::llvm::ArrayRef<::mlir::Type> getResultTypes() {
      return getFunctionType().getResults();
    }
  }];

  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// ReturnOp
//===----------------------------------------------------------------------===//

def Pipe_ReturnOp : Pipe_Op<"return", [
    Pure, HasParent<"ProgramOp">, ReturnLike, Terminator]> {
  let summary = "end of a pipeline program, yielding its results";
  let description = [{
    Terminates a `pipe.program`. The operands match the program's result
    types.

    ```mlir
    pipe.return %w0_new, %loss : tensor<4x4xf32>, tensor<f32>
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$operands);
  let builders = [OpBuilder<(ins), [{ build($_builder, $_state, {}); }]>];
  let assemblyFormat = "attr-dict ($operands^ `:` type($operands))?";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// CallStageOp
//===----------------------------------------------------------------------===//

def Pipe_CallStageOp : Pipe_Op<"call_stage", [
    CallOpInterface, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "run one action of one stage on one micro-batch";
  let description = [{
    Calls the stage function `callee` (a `func.func` the outliner and
    autodiff produced) to perform `action` (`F`, `B`, `W`, `U` or `N`) of `stage`
    on micro-batch `microbatch`. Operands and results follow the callee's
    signature, as with `func.call`; when the callee carries a `pipe.stage`
    attribute it must equal `stage`.

    One `pipe.call_stage` is one cell of a pipeline schedule diagram: the
    unrolled program is the list of these cells in execution order, and the
    rank that runs a cell is `stage`'s index. For `U` the micro-batch is the
    one whose backward completes the gradients the update applies. `N`
    (gradient clipping) adds the squared norm of the stage's final
    gradients into `grad:pipedream.grad_norm_sq` before the updates; it is
    not a cell of the schedule, and has U's micro-batch.

    Inside a `pipe.program`: the stage and micro-batch lie within the
    schedule, the stage belongs to the program's rank (per-rank view),
    `W` appears only in schedules that split the backward (`zb-h1`), and
    `N` only in synchronous schedules.

    ```mlir
    %y, %saved = pipe.call_stage F @stage1_forward(%w1, %x)
        stage 1 microbatch 3
        : (tensor<4x4xf32>, tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
    ```
  }];

  let arguments = (ins
    Pipe_ActionKindProp:$action,
    FlatSymbolRefAttr:$callee,
    Variadic<AnyType>:$args,
    Pipe_StageAttr:$stage,
    I64Attr:$microbatch,
    OptionalAttr<DictArrayAttr>:$arg_attrs,
    OptionalAttr<DictArrayAttr>:$res_attrs
  );
  let results = (outs Variadic<AnyType>:$results);

  let builders = [
    // Result types from the callee's signature.
    OpBuilder<(ins "::mlir::FunctionOpInterface":$callee,
                   "ActionKind":$action, "::mlir::ValueRange":$args,
                   "StageAttr":$stage, "int64_t":$microbatch), [{
      build($_builder, $_state, ::pipedream::pipe::getValueResultTypes(callee), action,
            ::mlir::SymbolRefAttr::get(callee), args, stage,
            $_builder.getI64IntegerAttr(microbatch),
            /*arg_attrs=*/::mlir::ArrayAttr(),
            /*res_attrs=*/::mlir::ArrayAttr());
    }]>
  ];

  let assemblyFormat = [{
    $action $callee `(` $args `)` `stage` custom<Stage>($stage)
    `microbatch` $microbatch attr-dict `:` functional-type($args, results)
  }];

  let extraClassDeclaration = [{
    //===------------------------------------------------------------------===//
    // CallOpInterface
    //===------------------------------------------------------------------===//

    /// Returns the operands passed to the stage function.
    operand_range getArgOperands() { return getArgs(); }
    /// Returns the operands passed to the stage function, mutable.
    ::mlir::MutableOperandRange getArgOperandsMutable() {
      return getArgsMutable();
    }
    /// Returns the callee symbol.
    ::mlir::CallInterfaceCallable getCallableForCallee() {
      return getCalleeAttr();
    }
    /// Sets the callee symbol.
    void setCalleeFromCallable(::mlir::CallInterfaceCallable callee) {
      setCalleeAttr(::llvm::cast<::mlir::FlatSymbolRefAttr>(
          ::llvm::cast<::mlir::SymbolRefAttr>(callee)));
    }
  }];

  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// TransferOp
//===----------------------------------------------------------------------===//

def Pipe_TransferOp : Pipe_Op<"transfer", [
    Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "move a value from one stage to another (global view)";
  let description = [{
    The value `input`, computed on stage `src`, becomes available on stage
    `dst`. The result is the same tensor, owned by `dst`.

    `pipe-outline-stages` creates one transfer per value that crosses a stage
    boundary; `pipe-unroll-schedule` keeps one per micro-batch in the global
    program; `pipe-project-ranks` turns each into a `pipe.send` on `src`'s
    rank and a `pipe.recv` on `dst`'s rank. Keeping both sides in one op of
    one global order is what makes the send/recv pairs match by
    construction (as in Shardy's MPMD dialect).

    `src` and `dst` differ. Inside a `pipe.program`, the program is a global
    view and both stages lie within its schedule.

    ```mlir
    %1 = pipe.transfer %0 from stage 0 to stage 1 : tensor<2x4xf32>
    // Interleaved: the last stage's chunk 0 feeds the first stage's chunk 1.
    %2 = pipe.transfer %1 from stage 3 to stage 0 chunk 1 : tensor<2x4xf32>
    ```
  }];
  let arguments = (ins Pipe_Tensor:$input, Pipe_StageAttr:$src,
                       Pipe_StageAttr:$dst);
  let results = (outs Pipe_Tensor:$result);
  let builders = [
    // The result has the input's type.
    OpBuilder<(ins "::mlir::Value":$input, "StageAttr":$src,
                   "StageAttr":$dst), [{
      build($_builder, $_state, input.getType(), input, src, dst);
    }]>
  ];
  let assemblyFormat = [{
    $input `from` `stage` custom<Stage>($src) `to` `stage` custom<Stage>($dst)
    attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// SendOp
//===----------------------------------------------------------------------===//

def Pipe_SendOp : Pipe_Op<"send", [
    MemoryEffects<[MemRead<Pipe_CommunicationResource>,
                   MemWrite<Pipe_CommunicationResource>]>]> {
  let summary = "send a tensor to a peer rank (per-rank view)";
  let description = [{
    Sends `input` to rank `peer`; the matching `pipe.recv` on `peer` names
    this rank and the same `tag`. Blocking semantics: the send may not
    complete before the receive starts, which is why `pipe-verify-schedule`
    checks the per-rank orders for deadlock.

    `peer` and `tag` are non-negative. Inside a `pipe.program`, the program
    is a per-rank view, and `peer` is another rank of its schedule.

    ```mlir
    pipe.send %y to 1 tag 7 : tensor<2x4xf32>
    ```
  }];
  let arguments = (ins Pipe_Tensor:$input, I64Attr:$peer, I64Attr:$tag);
  let assemblyFormat = [{
    $input `to` $peer `tag` $tag attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// AllReduceGradOp
//===----------------------------------------------------------------------===//

def Pipe_AllReduceGradOp : Pipe_Op<"all_reduce_grad", [
    MemoryEffects<[MemRead<Pipe_CommunicationResource>,
                   MemWrite<Pipe_CommunicationResource>]>]> {
  let summary = "sum a shared weight's gradient over the ranks that hold it";
  let description = [{
    A weight read by several stages (tied embeddings: the first stage's
    Gather and the last stage's LM head) is one parameter: the stages in
    `stages` add their contributions to their rank's accumulator
    `grad:<weight>` or apply it, and this op replaces the accumulator on
    every rank of `stages` by the sum over those ranks (Megatron's embedding group; an
    all-reduce of the transport: `MPI_Allreduce`, `ncclAllReduce`, or the
    threads transport's). Each rank then applies the same update to its
    copy, so the copies stay equal. `microbatch` is the micro-batch whose
    backward completes the gradients, as for the `U` that follows it.

    The accumulator is a persistent buffer of each rank, not a program
    value: the op has no operands. `grad_type` is its type (what each rank
    sends). In the global view it is one op of the whole group; in the
    per-rank view every rank of the group has it, in the same order.

    `stages` lists at least two stages, without repeats, on at least two
    ranks; `microbatch` is non-negative. Inside a program, the stages and
    micro-batch lie within the schedule, and a per-rank program's rank is
    one of the group's.

    ```mlir
    pipe.all_reduce_grad "wte" stages [#pipe.stage<0>, #pipe.stage<1>]
        microbatch 3 : tensor<64x16xf32>
    ```
  }];
  let arguments = (ins StrAttr:$weight,
                       TypedArrayAttrBase<Pipe_StageAttr, "stages">:$stages,
                       I64Attr:$microbatch,
                       TypeAttrOf<AnyStaticShapeTensor>:$grad_type);
  let assemblyFormat = [{
    $weight `stages` $stages `microbatch` $microbatch attr-dict `:`
    $grad_type
  }];
  let extraClassDeclaration = [{
    /// The name of the accumulator it reduces: `grad:<weight>`.
    std::string getGradName() { return "grad:" + getWeight().str(); }
    /// The distinct ranks of `stages`, ascending.
    ::llvm::SmallVector<int64_t> getRanks();
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// RecvOp
//===----------------------------------------------------------------------===//

def Pipe_RecvOp : Pipe_Op<"recv", [
    MemoryEffects<[MemRead<Pipe_CommunicationResource>,
                   MemWrite<Pipe_CommunicationResource>]>]> {
  let summary = "receive a tensor from a peer rank (per-rank view)";
  let description = [{
    Receives a tensor of the result type from rank `peer`, sent by the
    `pipe.send` with the same `tag`. It is never erased as dead, even when
    unused: the peer's send would wait forever.

    `peer` and `tag` are non-negative. Inside a `pipe.program`, the program
    is a per-rank view, and `peer` is another rank of its schedule.

    ```mlir
    %x = pipe.recv from 0 tag 7 : tensor<2x4xf32>
    ```
  }];
  let arguments = (ins I64Attr:$peer, I64Attr:$tag);
  let results = (outs Pipe_Tensor:$result);
  let assemblyFormat = [{
    `from` $peer `tag` $tag attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// StashOp
//===----------------------------------------------------------------------===//

def Pipe_StashOp : Pipe_Op<"stash", [
    MemoryEffects<[MemWrite<Pipe_StashResource>]>]> {
  let summary = "keep a value in a static slot until its backward";
  let description = [{
    Stores `input` into stash slot `slot` of `stage`'s rank, tagged with the
    micro-batch it belongs to. `kind` says what the slot holds: an
    `activation` a forward saved for its backward, or the `weight` version
    a forward used (asynchronous schedules). A later `pipe.restore` with the
    same kind, slot, stage and micro-batch gets it back and frees the slot.

    Slots are numbered per rank and kind; the number of slots a rank uses is
    the memory bound the compiler reports (1F1B keeps about K activations on
    rank 0, GPipe M).

    `slot` and `microbatch` are non-negative. Inside a `pipe.program`, the
    stage and micro-batch lie within the schedule, the stage belongs to the
    program's rank (per-rank view), and `weight` slots appear only in
    schedules with weight versions (`pipedream`, `2bw`).

    ```mlir
    pipe.stash %saved into activation slot 2 stage 0 microbatch 5
        : tensor<2x4xf32>
    ```
  }];
  let arguments = (ins Pipe_Tensor:$input, Pipe_StashKindProp:$kind,
                       I64Attr:$slot, Pipe_StageAttr:$stage,
                       I64Attr:$microbatch);
  let assemblyFormat = [{
    $input `into` $kind `slot` $slot `stage` custom<Stage>($stage)
    `microbatch` $microbatch attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// RestoreOp
//===----------------------------------------------------------------------===//

def Pipe_RestoreOp : Pipe_Op<"restore", [
    MemoryEffects<[MemRead<Pipe_StashResource>,
                   MemWrite<Pipe_StashResource>]>]> {
  let summary = "get a stashed value back and free its slot";
  let description = [{
    Returns the value the matching `pipe.stash` (same kind, slot, stage and
    micro-batch) stored, and frees the slot. The result type is the stashed
    value's type. It is never erased as dead: freeing the slot is an effect.

    The attributes obey the same rules as `pipe.stash`.

    ```mlir
    %saved = pipe.restore activation slot 2 stage 0 microbatch 5
        : tensor<2x4xf32>
    ```
  }];
  let arguments = (ins Pipe_StashKindProp:$kind, I64Attr:$slot,
                       Pipe_StageAttr:$stage, I64Attr:$microbatch);
  let results = (outs Pipe_Tensor:$result);
  let assemblyFormat = [{
    $kind `slot` $slot `stage` custom<Stage>($stage) `microbatch` $microbatch
    attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

#endif // PIPEDREAM_DIALECT_PIPE_IR_PIPEOPS_TD
