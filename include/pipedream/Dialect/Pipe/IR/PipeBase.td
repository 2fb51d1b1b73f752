//===- PipeBase.td - pipe dialect definition ---------------*- tablegen -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The `pipe` dialect: pipeline stages, schedules and the communication
// between stages. docs/Pipe.md is the rationale page; this file holds the
// dialect definition shared by PipeAttrs.td and PipeOps.td.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_DIALECT_PIPE_IR_PIPEBASE_TD
#define PIPEDREAM_DIALECT_PIPE_IR_PIPEBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def Pipe_Dialect : Dialect {
  let name = "pipe";
  let cppNamespace = "::pipedream::pipe";
  let summary = "pipeline stages, schedules and inter-stage communication";
  let description = [{
    The `pipe` dialect holds everything the compiler knows about pipeline
    parallelism, in two views:

    - the **global view**: one program for the whole pipeline. Ops carry
      their stage (`#pipe.stage<i>`), values move between stages with
      `pipe.transfer`, and a `pipe.program` without a rank lists every
      rank's work in one order;
    - the **per-rank view**: one `pipe.program` per rank, where transfers have
      been split into `pipe.send` / `pipe.recv` pairs with a peer rank and a
      tag.

    Both views use `pipe.call_stage` to run one action (forward, backward,
    weight gradient, optimizer update) of one stage on one micro-batch, and
    `pipe.stash` / `pipe.restore` to keep activations (or weight versions)
    in static slots until the backward that needs them.

    ```mlir
    pipe.program @train_step rank 0
        schedule #pipe.schedule<kind = "1f1b", stages = 2, microbatches = 4>
        (%w: tensor<4x4xf32>, %x: tensor<2x4xf32>) -> tensor<4x4xf32> {
      %y, %saved = pipe.call_stage F @stage0_forward(%w, %x)
          stage 0 microbatch 0
          : (tensor<4x4xf32>, tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
      pipe.send %y to 1 tag 0 : tensor<2x4xf32>
      pipe.stash %saved into activation slot 0 stage 0 microbatch 0
          : tensor<2x4xf32>
      ...
    }
    ```

    Discardable attributes the dialect defines (checked wherever they
    appear: on ops, function arguments and function results):
    - `pipe.stage`: a `#pipe.stage` attribute, the stage of an op or value;
    - `pipe.schedule`: a `#pipe.schedule` attribute, the pipeline
      configuration (for instance on a module, before `pipe.program`s exist);
    - `pipe.partition`: a `#pipe.partition` attribute on a function, the
      partition `pipe-partition` chose.
  }];
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 0;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let extraClassDeclaration = [{
    /// Discardable attribute holding the `#pipe.stage` of an op or value.
    static constexpr ::llvm::StringLiteral kStageAttrName = "pipe.stage";
    /// Gradient clipping in a pipeline (pipe-build-stage-training's
    /// clip-grad-norm): the pseudo-weight whose accumulator
    /// `grad:pipedream.grad_norm_sq` (rank 0) each stage's `_N` adds its
    /// gradients' squared norm into; a `pipe.all_reduce_grad` of it over
    /// every stage gives the whole model's, which each `_U` reads.
    static constexpr ::llvm::StringLiteral kGradNormWeight =
        "pipedream.grad_norm_sq";
    static constexpr ::llvm::StringLiteral kGradNormBuffer =
        "grad:pipedream.grad_norm_sq";
    /// Discardable attribute holding a `#pipe.schedule` configuration.
    static constexpr ::llvm::StringLiteral kScheduleAttrName = "pipe.schedule";
    /// Discardable attribute holding the `#pipe.partition` pipe-partition
    /// chose for a function.
    static constexpr ::llvm::StringLiteral kPartitionAttrName =
        "pipe.partition";

  private:
    /// Registers the attributes from PipeAttrs.td.
    void registerAttributes();

  public:
  }];
}

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

/// A value the pipeline moves or keeps between stages: a ranked tensor with
/// a static shape, so that every message and stash slot has a size known at
/// compile time.
def Pipe_Tensor : StaticShapeTensorOf<[AnyType]>;

#endif // PIPEDREAM_DIALECT_PIPE_IR_PIPEBASE_TD
