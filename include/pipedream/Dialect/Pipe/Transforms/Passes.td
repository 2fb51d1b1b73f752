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

    Residual j of an F whose micro-batch slot is s on a rank whose stage
    functions have at most R residuals goes to activation slot `s * R + j`.
  }];
  let options = [
    Option<"kind", "kind", "std::string", "\"1f1b\"",
           "gpipe, 1f1b, interleaved-1f1b, pipedream, 2bw or zb-h1">,
    Option<"numMicrobatches", "microbatches", "int64_t", "8",
           "micro-batches per training step">,
    Option<"numChunks", "virtual", "int64_t", "1",
           "virtual chunks per stage (interleaved-1f1b)">
  ];
  let dependentDialects = ["::pipedream::pipe::PipeDialect"];
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
  }];
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

    Errors: more stages than ops, no partition within the memory limit,
    an unknown node name.
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
           "extra copies per trainable weight (0 sgd, 1 momentum, 2 adam)">
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

#endif // PIPEDREAM_DIALECT_PIPE_TRANSFORMS_PASSES_TD
