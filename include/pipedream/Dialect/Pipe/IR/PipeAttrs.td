//===- PipeAttrs.td - pipe dialect attributes --------------*- tablegen -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Stage and schedule attributes, and the enums of schedule kinds, actions and
// stash kinds.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_DIALECT_PIPE_IR_PIPEATTRS_TD
#define PIPEDREAM_DIALECT_PIPE_IR_PIPEATTRS_TD

include "pipedream/Dialect/Pipe/IR/PipeBase.td"
include "mlir/IR/EnumAttr.td"

class Pipe_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Pipe_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

// NOTE: the string of each schedule kind is the name users type
// (`pipedream-compile --schedule 1f1b`) and DESIGN.md uses. Names that are
// not MLIR keywords (a leading digit, a hyphen) print quoted in the IR:
// `kind = "1f1b"`, `kind = "zb-h1"`; `kind = gpipe` needs no quotes.
def Pipe_ScheduleKind : I32Enum<"ScheduleKind", "pipeline schedule", [
    I32EnumCase<"GPipe", 0, "gpipe">,
    I32EnumCase<"OneFOneB", 1, "1f1b">,
    I32EnumCase<"Interleaved1F1B", 2, "interleaved-1f1b">,
    I32EnumCase<"PipeDream", 3, "pipedream">,
    I32EnumCase<"TwoBW", 4, "2bw">,
    I32EnumCase<"ZeroBubbleH1", 5, "zb-h1">,
    I32EnumCase<"InterleavedZeroBubble", 6, "interleaved-zb">,
    I32EnumCase<"ZeroBubbleV", 7, "zb-v">,
    I32EnumCase<"DualPipeV", 8, "dualpipe-v">
  ]> {
  let cppNamespace = "::pipedream::pipe";
}

def Pipe_ActionKind : I32Enum<"ActionKind", "stage action", [
    I32EnumCase<"Forward", 0, "F">,
    I32EnumCase<"Backward", 1, "B">,
    I32EnumCase<"WeightGrad", 2, "W">,
    I32EnumCase<"Update", 3, "U">,
    I32EnumCase<"GradNorm", 4, "N">
  ]> {
  let cppNamespace = "::pipedream::pipe";
}

def Pipe_StashKind : I32Enum<"StashKind", "what a stash slot holds", [
    I32EnumCase<"Activation", 0, "activation">,
    I32EnumCase<"Weight", 1, "weight">
  ]> {
  let cppNamespace = "::pipedream::pipe";
}

//===----------------------------------------------------------------------===//
// ActionKindAttr
//===----------------------------------------------------------------------===//

def Pipe_ActionKindAttr : EnumAttr<Pipe_Dialect, Pipe_ActionKind, "action"> {
  let summary = "what a `pipe.call_stage` runs: F, B, W or U";
  let description = [{
    The action of a stage on a micro-batch, with the letters of the PipeDream
    and zero-bubble papers:
    - `F`: forward;
    - `B`: backward; the full backward, or only the input gradient when the
      schedule splits the backward (`zb-h1`);
    - `W`: weight gradient (only in schedules that split the backward);
    - `U`: optimizer update of the stage's weights.

    Ops hold it as a property printed as the bare letter
    (`pipe.call_stage F ...`); the attribute form is `#pipe.action<F>`.
  }];
  let assemblyFormat = "`<` $value `>`";
}

//===----------------------------------------------------------------------===//
// StashKindAttr
//===----------------------------------------------------------------------===//

def Pipe_StashKindAttr : EnumAttr<Pipe_Dialect, Pipe_StashKind, "stash_kind"> {
  let summary = "what a stash slot holds: an activation or a weight version";
  let description = [{
    - `activation`: a value a forward saved for its backward;
    - `weight`: the weight version a forward used, kept for its backward by
      the asynchronous schedules (`pipedream`, `2bw`).

    Ops hold it as a property printed as the bare keyword
    (`pipe.stash %x into activation slot 0 ...`); the attribute form is
    `#pipe.stash_kind<activation>`.
  }];
  let assemblyFormat = "`<` $value `>`";
}

//===----------------------------------------------------------------------===//
// StageAttr
//===----------------------------------------------------------------------===//

def Pipe_StageAttr : Pipe_Attr<"Stage", "stage"> {
  let summary = "pipeline stage of an op or value";
  let description = [{
    `index` is the physical stage, which is also the rank that runs it: rank
    `r` runs every chunk of stage `r`. `chunk` is the virtual chunk for
    interleaved schedules (Megatron's virtual pipeline stages), 0 otherwise,
    and is omitted from the syntax when 0.

    With K stages, the position of `#pipe.stage<index, chunk = c>` in model
    order is `c * K + index`: the partitioner cuts the model into `K * V`
    consecutive pieces and deals them to the ranks round-robin (loop
    placement). `reversed = true` (odd chunks only) is the way back of the V
    placement of `zb-v` and `dualpipe-v`: `#pipe.stage<r, chunk = 1,
    reversed = true>` is piece `2K - 1 - r`, so rank 0 runs the first and
    the last piece.

    Used as the discardable attribute `pipe.stage` (the partitioner's output)
    and as the inherent stage of `pipe.call_stage`, `pipe.transfer`,
    `pipe.stash` and `pipe.restore`, whose syntax spells it without the
    attribute brackets: `stage 1`, `stage 1 chunk 1`, `stage 0 chunk 1
    reversed`.

    ```mlir
    %0 = nn.relu %x {pipe.stage = #pipe.stage<1>} : tensor<4xf32>
    %1 = nn.relu %0 {pipe.stage = #pipe.stage<1, chunk = 1>} : tensor<4xf32>
    ```
  }];
  let parameters = (ins
    "int64_t":$index,
    DefaultValuedParameter<"int64_t", "0",
                           "virtual chunk (interleaved schedules)">:$chunk,
    DefaultValuedParameter<"bool", "false",
                           "V placement: the chunk visits the ranks in "
                           "reverse order">:$reversed
  );
  let assemblyFormat =
      "`<` $index (`,` `chunk` `=` $chunk^)? (`,` `reversed` `=` $reversed^)? `>`";
  let genVerifyDecl = 1;
  let builders = [
    AttrBuilder<(ins "int64_t":$index), [{
      return $_get($_ctxt, index, /*chunk=*/0, /*reversed=*/false);
    }]>,
    AttrBuilder<(ins "int64_t":$index, "int64_t":$chunk), [{
      return $_get($_ctxt, index, chunk, /*reversed=*/false);
    }]>
  ];
  let extraClassDeclaration = [{
    /// Position of this stage in model order for a pipeline of `numStages`
    /// physical stages: `chunk * numStages + index` (loop placement), or
    /// `chunk * numStages + numStages - 1 - index` for a reversed chunk (V
    /// placement: stage s and 2K-1-s on rank s).
    int64_t getVirtualIndex(int64_t numStages) const {
      return getChunk() * numStages +
             (getReversed() ? numStages - 1 - getIndex() : getIndex());
    }
    /// Rank that runs this stage (rank r runs every chunk of stage r).
    int64_t getRank() const { return getIndex(); }
    /// The stage of piece `v` of numStages * V in model order: loop
    /// placement (rank v % K), or V placement when `vShaped` (odd chunks
    /// reversed).
    static StageAttr getForVirtualIndex(::mlir::MLIRContext *context,
                                        int64_t v, int64_t numStages,
                                        bool vShaped) {
      int64_t chunk = v / numStages, pos = v % numStages;
      bool reversed = vShaped && chunk % 2 == 1;
      return get(context, reversed ? numStages - 1 - pos : pos, chunk,
                 reversed);
    }
  }];
}

//===----------------------------------------------------------------------===//
// ScheduleAttr
//===----------------------------------------------------------------------===//

def Pipe_ScheduleAttr : Pipe_Attr<"Schedule", "schedule"> {
  let summary = "pipeline schedule: kind, stages K, micro-batches M, chunks V";
  let description = [{
    The configuration a pipeline schedule is built from:
    - `kind`: one of `gpipe`, `"1f1b"`, `"interleaved-1f1b"`, `pipedream`,
      `"2bw"`, `"zb-h1"`, `"interleaved-zb"`, `"zb-v"`, `"dualpipe-v"`
      (names that are not MLIR keywords print quoted; the V-shaped `zb-v`
      and `dualpipe-v` place stage s and 2K-1-s on rank s, the second
      chunk `reversed`);
    - `stages` (K >= 1): physical stages, one rank each;
    - `microbatches` (M >= 1): micro-batches per training step;
    - `chunks` (V >= 1, printed only when not 1): virtual chunks per stage.
      `interleaved-1f1b` needs V > 1 and M a multiple of K (Megatron's
      interleaved schedule runs micro-batches in groups of K);
      `interleaved-zb` V > 1; `zb-v` and `dualpipe-v` V = 2 (`dualpipe-v`
      M >= 2K); every other kind has V = 1.

    ```mlir
    #pipe.schedule<kind = gpipe, stages = 4, microbatches = 8>
    #pipe.schedule<kind = "interleaved-1f1b", stages = 4, microbatches = 8, chunks = 2>
    ```
  }];
  let parameters = (ins
    EnumParameter<Pipe_ScheduleKind>:$kind,
    "int64_t":$numStages,
    "int64_t":$numMicrobatches,
    DefaultValuedParameter<"int64_t", "1",
                           "virtual chunks per stage">:$numChunks
  );
  let assemblyFormat = [{
    `<` `kind` `=` $kind `,` `stages` `=` $numStages `,`
        `microbatches` `=` $numMicrobatches
        (`,` `chunks` `=` $numChunks^)? `>`
  }];
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Number of ranks a per-rank projection produces (one per stage).
    int64_t getNumRanks() const { return getNumStages(); }
    /// Number of model pieces: stages times chunks.
    int64_t getNumVirtualStages() const {
      return getNumStages() * getNumChunks();
    }
    /// True for schedules with a flush at the end of every step (gpipe,
    /// 1f1b, interleaved-1f1b, zb-h1, interleaved-zb): all micro-batches of a step see the
    /// same weights.
    bool isSynchronous() const;
    /// True when the backward is split into B (input gradient) and W
    /// (weight gradient) actions.
    bool splitsBackward() const;
    /// True when a forward's weight version must be kept for its backward
    /// (pipedream, 2bw): these schedules stash `weight` slots.
    bool hasWeightVersions() const;
    /// V placement (`zb-v`, `dualpipe-v`): stage s and 2K-1-s on rank s.
    bool isVShaped() const {
      return getKind() == ScheduleKind::ZeroBubbleV ||
             getKind() == ScheduleKind::DualPipeV;
    }
    /// The stage attribute of virtual stage `v` under this placement.
    StageAttr getStageOf(int64_t v) const {
      return StageAttr::getForVirtualIndex(getContext(), v, getNumStages(),
                                           isVShaped());
    }
  }];
}

//===----------------------------------------------------------------------===//
// PlanAttr
//===----------------------------------------------------------------------===//

def Pipe_PlanAttr : Pipe_Attr<"Plan", "plan"> {
  let summary = "a replication plan pipe-partition's planner compared";
  let description = [{
    One plan of `pipe-partition{ranks=N}` (ReplicationPlanner.h): `stages`
    pipeline stages, stage s run by `replicas[s]` data-parallel replicas,
    its bottleneck time `slowest` (seconds per micro-batch), whether every
    stage has the same replicas (`uniform`, the plans the runtime runs) and
    whether it is the one applied (`chosen`).

    ```mlir
    #pipe.plan<stages = 2, replicas = [1, 2], slowest = 2.008000e+00 : f64,
               uniform = false, chosen = false>
    ```
  }];
  let parameters = (ins
    "int64_t":$stages,
    ArrayRefParameter<"int64_t", "replicas of each stage">:$replicas,
    "::mlir::FloatAttr":$slowest,
    "bool":$uniform,
    "bool":$chosen
  );
  let assemblyFormat = [{
    `<` `stages` `=` $stages `,` `replicas` `=` `[` $replicas `]` `,`
        `slowest` `=` $slowest `,` `uniform` `=` $uniform `,`
        `chosen` `=` $chosen `>`
  }];
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// PartitionAttr
//===----------------------------------------------------------------------===//

def Pipe_PartitionAttr : Pipe_Attr<"Partition", "partition"> {
  let summary = "the partition pipe-partition chose for a function";
  let description = [{
    What `pipe-partition` leaves on each function it cuts, as the
    discardable attribute `pipe.partition`, for `pipe-outline-stages`, the
    partition report (`pipe-report-partition`, pipedream-compile
    `--report`) and the schedule phase:
    - `method`: `auto` (dynamic program), `uniform` (equal op counts) or
      `manual` (`split-after`);
    - `stages` (K), `chunks` (V, printed only when not 1), the `schedule`
      kind and `microbatches` (M) the memory limit was counted for, and the
      `optimizer_states` per trainable weight;
    - `slowest` and `ideal` (total compute / (K x V)): seconds per
      micro-batch of this partition; `uniform_slowest` and `auto_slowest`:
      the slowest stage of the uniform and of the dynamic program's
      partition of the same function (absent when impossible, or when the
      ops have no costs);
    - `memory_limit` (bytes per rank, absent: none);
    - with `ranks=N`: `replicas` (R of the applied K x R plan),
      `replicated_slowest` (its bottleneck) and the `plans` compared.

    ```mlir
    func.func @main(...) attributes {pipe.partition = #pipe.partition<
        method = "auto", stages = 2, schedule = "1f1b", microbatches = 4,
        optimizer_states = 0, slowest = 4.0 : f64, ideal = 3.0 : f64>}
    ```
  }];
  let parameters = (ins
    StringRefParameter<"auto, uniform or manual">:$method,
    "int64_t":$stages,
    DefaultValuedParameter<"int64_t", "1", "virtual chunks per stage">:$chunks,
    EnumParameter<Pipe_ScheduleKind>:$schedule,
    "int64_t":$microbatches,
    DefaultValuedParameter<"int64_t", "0",
                           "optimizer states per trainable weight">:$optimizer_states,
    "::mlir::FloatAttr":$slowest,
    "::mlir::FloatAttr":$ideal,
    OptionalParameter<"::mlir::FloatAttr",
                      "the uniform partition's slowest stage">:$uniform_slowest,
    OptionalParameter<"::mlir::FloatAttr",
                      "the dynamic program's slowest stage">:$auto_slowest,
    DefaultValuedParameter<"int64_t", "0",
                           "bytes per rank (0: none)">:$memory_limit,
    DefaultValuedParameter<"int64_t", "0",
                           "replicas of the applied plan (0: no planner)">:$replicas,
    OptionalParameter<"::mlir::FloatAttr",
                      "the applied plan's bottleneck">:$replicated_slowest,
    OptionalArrayRefParameter<"::pipedream::pipe::PlanAttr",
                              "the plans the planner compared">:$plans
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Number of model pieces: stages times chunks.
    int64_t getNumPieces() const { return getStages() * getChunks(); }
  }];
}

#endif // PIPEDREAM_DIALECT_PIPE_IR_PIPEATTRS_TD
