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

#endif // PIPEDREAM_DIALECT_PIPE_TRANSFORMS_PASSES_TD
