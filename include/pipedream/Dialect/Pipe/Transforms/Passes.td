//===- Passes.td - pipe dialect transformations ------------*- tablegen -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_DIALECT_PIPE_TRANSFORMS_PASSES_TD
#define PIPEDREAM_DIALECT_PIPE_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def UnrollSchedulePass : Pass<"pipe-unroll-schedule", "::mlir::ModuleOp"> {
  let summary = "Unroll a pipeline schedule into one global static program";
  let description = [{
    Reads the stage functions of the module (`func.func @..._F`, `_B`,
    `_W`, `_U` carrying `pipe.stage = #pipe.stage<i>` or
    `#pipe.stage<i, chunk = c>`) and adds `pipe.program @train`, the global
    view of one training step under schedule `kind` with `microbatches`
    micro-batches and `virtual` chunks per stage: the `pipe.call_stage` ops
    in the order the unit-cost simulation runs them (by start time, then
    rank), a `pipe.transfer` per activation and gradient crossing stages,
    and `pipe.stash` / `pipe.restore` with static slots (the slot count per
    rank is the memory bound).

    Calling convention (virtual stage v of N, micro-batch m):
    - `F_v(x) -> (y, r...)`: `x` is program argument m for v = 0 and the
      transferred `y` of v-1 otherwise; `y` goes to v+1 (for v = N-1 it is
      the loss, returned by the program); the residuals `r...` are stashed.
    - `B_v(r..., dy) -> (dx, g...)`: the restored residuals and, for
      v < N-1, the transferred `dx` of v+1; `dx` is omitted for v = 0.
      Without a split backward `g...` are the weight gradients; with one
      (`zb-h1`) they are stashed for W.
    - `W_v(g...) -> (dw...)`: the restored values of B.
    - `U_v(dw...) -> (...)`: the weight gradients of the last B (or W) of v.
    - `N_v(dw..., n) -> n'` (gradient clipping, optional: all stages or
      none, synchronous kinds only): every rank runs its stages' N after its
      last B/W and the shared weights' all-reduces, then the all-reduce of
      `grad:pipedream.grad_norm_sq` over every stage, then its U's (the
      updates are deferred; docs/Pipe.md "Gradient clipping").

    Residual j of an F whose micro-batch slot is s on a rank whose stage
    functions have at most R residuals goes to activation slot `s * R + j`.

    Placement: the stage functions must follow the kind's (an error names
    the first that does not): loop placement, virtual stage v on rank
    v % K, chunk v / K; or the V of `zb-v` and `dualpipe-v`, stage s and
    2K-1-s on rank s, the second chunk `#pipe.stage<r, chunk = 1, reversed
    = true>`. A call joined to the one before it on its rank (DualPipeV's
    overlapped F and B, a full backward's W) carries `pipe.join`.
  }];
  let options = [
    Option<"kind", "kind", "std::string", "\"1f1b\"",
           "gpipe, 1f1b, interleaved-1f1b, pipedream, 2bw, zb-h1, zb-v, "
           "interleaved-zb, dualpipe-v">,
    Option<"numMicrobatches", "microbatches", "int64_t", "8",
           "micro-batches per training step">,
    Option<"numChunks", "virtual", "int64_t", "1",
           "virtual chunks per stage (interleaved-1f1b, interleaved-zb; 2 "
           "for zb-v and dualpipe-v)">,
    Option<"scheduleCsv", "schedule-csv", "std::string", "\"\"",
           "custom schedule in torch.distributed.pipelining's CSV format "
           "(one row per rank, actions like 0F1; see ScheduleCSV.h), "
           "verified and unrolled instead of the kind's generated one">
  ];
  let dependentDialects = ["::pipedream::pipe::PipeDialect"];
}

def BuildStageTrainingPass
    : Pass<"pipe-build-stage-training", "::mlir::ModuleOp"> {
  let summary = "Forward, backward and update functions of every stage";
  let description = [{
    Turns the outlined view of `pipe-outline-stages` (the driver `function`
    calling one function per stage, `pipe.transfer` between them) into the
    stage functions `pipe-unroll-schedule` consumes: per virtual stage v,
    `@stage<v>_F` (training mode; the last stage adds the `loss`),
    `@stage<v>_B` (nn-autodiff's backward; weight gradients added to the
    `grad:<w>` accumulators, the loss's gradient seeded with 1/`microbatches`),
    `@stage<v>_W` with `split-backward` (zb-h1), `@stage<v>_U` (the
    optimizer update of the stage's weights; Adam's counter is
    `step:stage<v>`) and, with `clip-grad-norm`, `@stage<v>_N` (the squared
    norm of the gradients U applies, added into
    `grad:pipedream.grad_norm_sq`, which U reads to clip). With `evaluate`,
    `@stage<v>_E` is the stage's forward as imported (eval mode), sending
    the same edges, the last stage returning the loss. Every cut tensor is an edge e: `pipe.send = e` on the
    producer's F result, `pipe.recv = e` on the consumer's F argument, and
    `pipe.grad = e` on the gradient B returns / takes. Weights, gradient
    accumulators and optimizer state are runtime-bound (docs/Pipe.md,
    "Stage functions"). The driver and the outlined functions are erased.
  }];
  let options = [
    Option<"function", "function", "std::string", "\"main\"",
           "The outlined driver function">,
    Option<"loss", "loss", "std::string", "\"cross-entropy\"",
           "cross-entropy or mse">,
    Option<"labelsName", "labels-name", "std::string", "\"labels\"",
           "Name of the labels input">,
    Option<"microbatches", "microbatches", "int64_t", "1",
           "Micro-batches per step (the loss gradient is 1/M)">,
    Option<"microbatchesPerUpdate", "microbatches-per-update", "int64_t",
           "0",
           "Micro-batches whose gradients one update applies (asynchronous "
           "schedules: 1 for pipedream, K for 2bw; 0 = all M); the loss "
           "gradient is 1/this">,
    Option<"splitBackward", "split-backward", "bool", "false",
           "Split B into input-gradient B and weight-gradient W (zb-h1)">,
    Option<"replicas", "replicas", "int64_t", "1",
           "Data-parallel replicas of every stage (replicated stages): "
           "each runs the micro-batches on its share of the batch and the "
           "replicas' gradients are summed, so the loss gradient is "
           "1/(replicas x micro-batches per update)">,
    Option<"optimizer", "optimizer", "std::string", "\"sgd\"",
           "sgd, momentum, adam or adamw">,
    Option<"lr", "lr", "double", "0.01", "Learning rate">,
    Option<"momentum", "momentum", "double", "0.9", "Momentum">,
    Option<"weightDecay", "weight-decay", "double", "0.0", "Weight decay">,
    Option<"nesterov", "nesterov", "bool", "false", "Nesterov momentum">,
    Option<"beta1", "beta1", "double", "0.9", "Adam beta1">,
    Option<"beta2", "beta2", "double", "0.999", "Adam beta2">,
    Option<"eps", "eps", "double", "1e-8", "Adam epsilon">,
    Option<"lrSchedule", "lr-schedule", "std::string", "\"constant\"",
           "Learning-rate schedule after the warm-up: constant, linear or "
           "cosine (decay to 0 at total-steps)">,
    Option<"warmupSteps", "warmup-steps", "int64_t", "0",
           "Optimizer steps of linear learning-rate warm-up from 0">,
    Option<"totalSteps", "total-steps", "int64_t", "0",
           "Optimizer steps at which linear and cosine reach 0">,
    Option<"clipGradNorm", "clip-grad-norm", "double", "0.0",
           "Scale the gradients so that their 2-norm over every stage is at "
           "most this (clip_grad_norm_; 0: no clipping): each stage gets a "
           "`_N` function adding its gradients' squared norm into "
           "`grad:pipedream.grad_norm_sq`, which its `_U` reads">,
    Option<"evaluate", "evaluate", "bool", "false",
           "Also build @stage<v>_E per stage: the forward as imported (eval "
           "mode) with the same edges, the last stage returning the loss; "
           "the bundle's per-rank evaluation programs call them">,
    ListOption<"stageReplicas", "stage-replicas", "int64_t",
               "Non-uniform replication: the replicas of each stage (rank). "
               "With clip-grad-norm, every replica of a stage computes the "
               "stage's norm and the sum runs over all of them, so the N of "
               "a stage on R replicas adds 1/R of it">,
  ];
  let dependentDialects = ["::pipedream::pipe::PipeDialect",
                           "::pipedream::nn::NNDialect",
                           "::mlir::func::FuncDialect"];
}

def RecomputeStagesPass : Pass<"pipe-recompute", "::mlir::ModuleOp"> {
  let summary = "Activation recomputation: stash a stage's inputs, re-run "
                "its forward before its backward";
  let description = [{
    Runs after `pipe-build-stage-training`, before `pipe-unroll-schedule`
    (docs/Pipe.md, "Activation recomputation"). For every virtual stage v
    it recomputes (`all`, or the stages listed in the module attribute
    `pipe.recompute = array<i64: ...>` that `pipe-partition recompute=...`
    writes), `@stage<v>_F` stops returning its residuals and returns
    instead, as `nn.residual = i`, the values the residuals were computed
    from: its received edges and input slices, and the bound state it
    advances (the Dropout seed `rng_seed:stage<v>`), so the masks are
    drawn again from the seed the forward used. `@stage<v>_B` takes those
    and starts with a copy of the forward (what the residuals do not need
    is dropped), binding the weights it reads (for asynchronous schedules
    the version its F used, as any B). The forward's sends, loss and state
    updates are not repeated. The stash of a (stage, micro-batch) holds the
    stage's inputs instead of its activations.

    Refused: a stage with a split backward (`@stage<v>_W`: zb schedules), a
    listed stage without `_F`/`_B`, a malformed `pipe.recompute`.
  }];
  let options = [
    Option<"all", "all", "bool", "false",
           "recompute every stage (otherwise the module's pipe.recompute)">
  ];
  let dependentDialects = ["::pipedream::pipe::PipeDialect",
                           "::pipedream::nn::NNDialect",
                           "::mlir::func::FuncDialect"];
}

def VerifySchedulePass : Pass<"pipe-verify-schedule", "::mlir::ModuleOp"> {
  let summary = "Prove that every global pipe.program is a valid schedule";
  let description = [{
    Reconstructs each global-view `pipe.program`'s schedule (each rank's
    `pipe.call_stage` actions in body order) and checks it with the
    schedule verifier: every action once, B after its F, W after its B,
    updates per the kind's policy, no deadlock under blocking send/recv,
    weight-version bounds. Also checks stash/restore: every restore after
    a stash of the same kind, slot, stage and micro-batch, and no stash into
    a slot that is still live. Errors are emitted at the offending op and
    name the rank, action and micro-batch.

    Per-rank programs (`pipe-project-ranks`' output, grouped by name
    `<stem>_rank<r>`) are checked as a set: one program per rank, every
    send matched by the peer's receive in order with the same tag and type,
    no deadlock under blocking (rendezvous) send/recv, stash/restore as
    above, and the schedule their `pipe.call_stage` ops form.
  }];
}

def ProjectRanksPass : Pass<"pipe-project-ranks", "::mlir::ModuleOp"> {
  let summary = "Split a global pipe.program into one program per rank";
  let description = [{
    Replaces every global-view `pipe.program @P` by K per-rank programs
    `@P_rank<r>` (`rank r`), each holding rank r's ops in the global order:
    its `pipe.call_stage`, `pipe.stash` and `pipe.restore` ops, its
    arguments and results (by their `pipe.stage`), and for every
    `pipe.transfer` from stage s to stage d on different ranks a
    `pipe.send` on s's rank and a `pipe.recv` on d's rank. Tags count the
    messages of each (source, destination) pair from 0, so both sides see
    one order. A transfer between chunks of one rank becomes nothing.

    Placement: each send right after its producer; each receive at its
    transfer's place, then moved down past the rank's local work up to its
    first reader or the next message (receiving as late as possible never
    adds a deadlock: it only delays the rank's own communication). Ops
    without a stage go to the rank of their operands; operand-free ones
    (constants) are copied to every rank that uses them. The messages and
    stash slots of the result are verified (as `pipe-verify-schedule` does
    for per-rank programs; the schedule itself is left to that pass).
  }];
  let options = [
    Option<"keepGlobal", "keep-global", "bool", "false",
           "keep the global program next to the per-rank ones">
  ];
  let dependentDialects = ["::pipedream::pipe::PipeDialect"];
}

def ReportSchedulePass : Pass<"pipe-report-schedule", "::mlir::ModuleOp"> {
  let summary = "Write a schedule's report, Chrome trace and SVG timeline";
  let description = [{
    Simulates a schedule with unit costs (F = 1, B = 2; split backward:
    B = W = 1) and writes the report fields of CLI.md (`json=FILE`), a
    Chrome-trace JSON with one lane per rank (`trace=FILE`, one cost unit =
    1 ms) and an SVG timeline (`svg=FILE`); "-" writes to stdout. The
    schedule is the one of the module's first global `pipe.program` when
    there is one (and `kind` is empty), else the one `kind`, `stages`,
    `microbatches` and `virtual` (or `schedule-csv`) describe. The module is
    not changed. See ScheduleReport.h for the library pipedream-compile
    calls.
  }];
  let options = [
    Option<"kind", "kind", "std::string", "\"\"",
           "schedule kind (empty: read the module's global pipe.program)">,
    Option<"numStages", "stages", "int64_t", "4", "pipeline stages K">,
    Option<"numMicrobatches", "microbatches", "int64_t", "8",
           "micro-batches M">,
    Option<"numChunks", "virtual", "int64_t", "1", "chunks per stage V">,
    Option<"scheduleCsv", "schedule-csv", "std::string", "\"\"",
           "report on this torch-format CSV schedule instead">,
    Option<"jsonFile", "json", "std::string", "\"\"",
           "write the report.json fields here">,
    Option<"traceFile", "trace", "std::string", "\"\"",
           "write the Chrome-trace JSON here">,
    Option<"svgFile", "svg", "std::string", "\"\"",
           "write the SVG timeline here">,
    Option<"csvFile", "csv", "std::string", "\"\"",
           "export the schedule as torch-format CSV here">
  ];
  let dependentDialects = ["::pipedream::pipe::PipeDialect"];
}

def AnnotateCostsPass : Pass<"pipe-annotate-costs", "::mlir::ModuleOp"> {
  let summary = "Attach forward/backward time and memory to every op";
  let description = [{
    Gives every op of every function body (constants and terminators
    excepted) a `pipe.cost` dictionary, and the module a `pipe.device`
    dictionary describing the device (docs/Pipe.md, "Costs"):

    ```mlir
    %0 = nn.matmul %x, %w {pipe.cost = {activation_bytes = 256 : i64,
        backward_input = 0.0 : f64, backward_weight = 2.1e-06 : f64,
        forward = 2.1e-06 : f64, frozen_bytes = 0 : i64,
        output_bytes = 96 : i64, parameter_bytes = 48 : i64,
        source = "analytical"}} : ...
    ```

    Times are seconds. The analytical model is a roofline on
    `nn::CostOpInterface`: `overhead + max(flops / peak, bytes /
    bandwidth)` with the peak of contractions (matmul, gemm, conv) or of
    other ops, for `device` = `cpu` or `h200`. The input gradient costs one
    forward when a gradient reaches an operand, the weight gradient one
    forward when the op reads a trainable weight (`nn.param` without
    `nn.frozen`). With `profile=FILE` measured times (the JSON of
    `pipedream-profile`) replace the analytical ones op by op.
  }];
  let options = [
    Option<"device", "device", "std::string", "\"cpu\"",
           "device of the analytical model: cpu or h200">,
    Option<"profile", "profile", "std::string", "\"\"",
           "JSON profile whose measured times override the model">
  ];
  let dependentDialects = ["::pipedream::pipe::PipeDialect"];
}

def PartitionPass : Pass<"pipe-partition", "::mlir::ModuleOp"> {
  let summary = "Assign every op a pipeline stage (PipeDream's partitioner)";
  let description = [{
    Cuts each public function with a body into `stages` x `virtual`
    pieces and marks every op, argument and result with `pipe.stage`
    (piece p is `#pipe.stage<p % stages, chunk = p / stages>`). Functions
    record the choice as `pipe.partition`.

    - `method=auto`: PipeDream's dynamic program over cut points of the
      body's (topological) op order: minimises the slowest stage's time
      (forward + backward + sending the cut tensors and their gradients at
      the link bandwidth of `pipe.device`) under `memory-limit` per rank,
      counting the schedule's in-flight micro-batches and weight versions.
      Needs `pipe-annotate-costs` first.
    - `method=uniform`: equal op counts (the baseline).
    - `split-after=NODE,...`: manual, stage boundaries after the named ops
      (ONNX node names: the ops' `NameLoc` locations).

    - `ranks=N` (with `method=auto`, one chunk): PipeDream's planner with
      replication (ReplicationPlanner.h) picks the number of stages K and
      each stage's data-parallel replicas over N ranks, with the replicas'
      all-reduce in the cost. The runtime runs K x R plans (every stage R
      replicas), so the best *uniform* plan is applied (`stages` is then
      K); `pipe.partition` also records `replicas` = R and `plans`: the
      optimum over all replications (possibly non-uniform, PipeDream's
      1F1B-RR) and every uniform K x R plan with K x R = N, each with its
      bottleneck, and which one was chosen.

    - `recompute=full|auto`: a recomputing stage stashes its inputs (the
      values it receives and the arguments it reads) instead of its
      activations, keeps one micro-batch's activations while its backward
      runs, and costs one more forward. `full` recomputes every stage,
      `auto` exactly those whose memory exceeds `memory-limit` without it
      (the dynamic program chooses the cuts with that rule). The module gets
      `pipe.recompute = array<i64: ...>` (the recomputing virtual stages,
      for `pipe-recompute`) and the function `pipe.recompute_mode`.

    Errors: more stages than ops, no partition within the memory limit,
    an unknown node name, `ranks` with `split-after`, `method=uniform` or
    `virtual` > 1, an unknown `recompute`.
  }];
  let options = [
    Option<"numStages", "stages", "int64_t", "1", "pipeline stages (ranks)">,
    Option<"numChunks", "virtual", "int64_t", "1",
           "virtual chunks per stage (interleaved schedules)">,
    Option<"method", "method", "std::string", "\"auto\"",
           "auto (dynamic program) or uniform (equal op counts)">,
    ListOption<"splitAfter", "split-after", "std::string",
               "ONNX node names to end a stage after (manual partition)">,
    Option<"memoryLimit", "memory-limit", "std::string", "\"\"",
           "bytes per rank (suffixes K, M, G, KiB, MiB, GiB); empty: none">,
    Option<"scheduleKind", "schedule", "std::string", "\"1f1b\"",
           "schedule whose in-flight micro-batches and weight versions the "
           "memory limit counts (1f1b becomes interleaved-1f1b for virtual > 1)">,
    Option<"numMicrobatches", "microbatches", "int64_t", "0",
           "micro-batches per step (0: stages)">,
    Option<"optimizerStates", "optimizer-states", "int64_t", "0",
           "extra copies per trainable weight (0 sgd, 1 momentum, 2 adam)">,
    Option<"numRanks", "ranks", "int64_t", "0",
           "plan stages and per-stage replication over this many ranks "
           "(0: stages x 1)">,
    Option<"recompute", "recompute", "std::string", "\"none\"",
           "activation recomputation: none, full (every stage) or auto (the "
           "stages that exceed memory-limit without it); the recomputing "
           "virtual stages go to the module's pipe.recompute">
  ];
  let dependentDialects = ["::pipedream::pipe::PipeDialect"];
}

def ReportPartitionPass : Pass<"pipe-report-partition", "::mlir::ModuleOp"> {
  let summary = "Write the partition report of a partitioned module";
  let description = [{
    Describes the partition `pipe-partition` left in the module (before
    `pipe-outline-stages`): the `#pipe.partition` of the first partitioned
    function and the costs of its pieces (`pipe.cost` of the ops of each
    stage), as pipedream-compile's `--report` text (`text=FILE`) and the
    `stages`, `partition` and `shared_weights` sections of its report.json
    (`json=FILE`); "-" writes to stdout. The comparison with the uniform
    and the dynamic program's partitions is the one `pipe-partition`
    recorded: no partitioner runs here. The module is not changed.
  }];
  let options = [
    Option<"textFile", "text", "std::string", "\"-\"",
           "write the text report here (\"\": none)">,
    Option<"jsonFile", "json", "std::string", "\"\"",
           "write the report.json sections here">
  ];
  let dependentDialects = ["::pipedream::pipe::PipeDialect"];
}

def OutlineStagesPass : Pass<"pipe-outline-stages", "::mlir::ModuleOp"> {
  let summary = "Outline one function per pipeline stage";
  let description = [{
    For each function whose ops carry `pipe.stage` (after `pipe-partition`),
    moves the ops of stage i (chunk c) into `func.func private
    @<name>_stage<i>` (`@<name>_stage<i>_chunk<c>`) marked with that
    `pipe.stage`, and rewrites the function into the global view: one
    `func.call` per stage in pipeline order and one `pipe.transfer` per
    value and consuming stage. A stage function's arguments are the
    weights and graph inputs it reads (with their `nn.*` attributes), then
    the values it receives, in definition order; its results are the values
    later stages or the return read. Constants are cloned into every stage
    that uses them.

    Checks first: every op (but constants) is in exactly one stage, no value
    flows from a later stage to an earlier one, no stage is empty.
  }];
  let dependentDialects = ["::pipedream::pipe::PipeDialect",
                           "::mlir::func::FuncDialect"];
}

def ShardOptimizerPass : Pass<"pipe-shard-optimizer", "::mlir::ModuleOp"> {
  let summary = "Split every stage update over the stage's replicas (ZeRO-1)";
  let description = [{
    Sharded optimizer state over the `shards` data-parallel replicas of
    every stage (replicated stages, docs/Bundle.md "Replicated stages";
    DeepSpeed's ZeRO stage 1). Each update function `@f` called by a
    `pipe.call_stage U` is split into `@f_shard<j>`, j < shards: the stage's
    trainable weights are dealt to the shards greedily by size (largest
    first, to the least loaded shard, ties to the lowest), and shard j keeps
    only the results that update its weights, their optimizer state
    (`<kind>:<weight>`) and gradient accumulators, plus the results no
    weight owns (Adam's step counter, which every shard advances). Unused
    arguments are dropped, so replica j binds only its shard's optimizer
    state. Every `pipe.call_stage U @f` becomes the `shards` calls of the
    shards in order, each tagged `pipe.replica = j`: the runtime runs only
    its replica's call and then all-gathers the updated weights.

    ```mlir
    pipe.call_stage U @stage0_U_shard0() stage 0 microbatch 3 {pipe.replica = 0 : i64} : () -> ()
    pipe.call_stage U @stage0_U_shard1() stage 0 microbatch 3 {pipe.replica = 1 : i64} : () -> ()
    ```

    Non-uniform replication (PipeDream's 1F1B-RR) gives each stage its own
    count: with `stage-shards` (one entry per stage, `shards` then unused) a
    stage-s update is split over `stage-shards[s]` replicas; a stage of one
    replica is left alone.

    Asynchronous schedules (pipedream, 2bw) are refused. `shards=1` leaves
    the module alone.
  }];
  let options = [
    Option<"shards", "shards", "int64_t", "1",
           "replicas of every stage that share its optimizer state">,
    ListOption<"stageShards", "stage-shards", "int64_t",
               "per stage: its replicas (non-uniform replication); "
               "overrides shards">
  ];
}

def LowerRankProgramsPass
    : Pass<"pipe-lower-rank-programs", "::mlir::ModuleOp"> {
  let summary = "Lower per-rank programs to native rank entries";
  let description = [{
    Replaces each per-rank `pipe.program` (`rank r`, from
    `pipe-project-ranks`) by its native entry, a function the CPU code
    generator exports from program.so unchanged (`pipedream.cpu.export`):

    ```mlir
    func.func private @pipeline_rank0(%ctx: !llvm.ptr, %registers: !llvm.ptr)
        -> i32 attributes {pipe.rank = 0 : i64, pipedream.cpu.export}
    ```

    that is, `int32_t pipeline_rank<r>(pd_rank_context *ctx, void
    **registers)` (docs/Bundle.md, "Native rank entries"). The body is the
    rank's straight-line program with the registers and instruction indices
    of the bundle's `pipeline.ranks[r]` (the same plan): stage calls build
    the callee's argument array from the register table (value buffers) and
    call its entry wrapper `<symbol-prefix><callee>` directly, between the
    runtime's `call_begin` (binds weights, stashed weight versions,
    gradients, state) and `call_end` (applies `updates`); input, send, recv
    and loss call the runtime through the function table `ctx->runtime`.
    Every runtime call returns a status and a non-zero one is returned at
    once. Only upstream dialects are produced (func, llvm, arith, cf).

    A module without `pipe.program` is left alone.
  }];
  let options = [
    Option<"symbolPrefix", "symbol-prefix", "std::string", "\"pipedream_\"",
           "prefix of the stage functions' entry wrappers">
  ];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::cf::ControlFlowDialect"];
}

#endif // PIPEDREAM_DIALECT_PIPE_TRANSFORMS_PASSES_TD
