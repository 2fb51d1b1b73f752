//===- Passes.td - nn dialect transformations --------------*- tablegen -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_DIALECT_NN_TRANSFORMS_PASSES_TD
#define PIPEDREAM_DIALECT_NN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def AutodiffPass : Pass<"nn-autodiff", "::mlir::ModuleOp"> {
  let summary = "Reverse-mode differentiation of nn functions";
  let description = [{
    For every public `func.func @f(args) -> results` with a body (or those
    named by `functions`), adds the forward and backward of reverse-mode
    automatic differentiation built from each op's `GradientOpInterface`
    rule, and keeps `@f`:

    - `@f_forward(args) -> (results..., residuals...)`: `@f` plus the values
      the backward needs (marked `nn.residual = i`). Non-weight arguments
      the backward reads are residuals too (a pipeline stage stashes its
      input); weights are not, the backward takes them as arguments.
      Operand-free ops (constants) and weight-derived values are
      rematerialized, never saved: values computed from weights (not ones
      the function updates, `nn.updates`) and constants alone by
      memory-bound ops (CostOpInterface flops <= bytes: a transposed,
      reshaped or cast weight). Saving them would stash a copy per
      micro-batch in flight and keep the forward's GEMM from reading the
      weight in place.
    - `@f_backward(params..., residuals..., d_results...) -> (grads...)`:
      the weights (`nn.param` arguments) the backward reads, the residuals,
      one gradient per float result (`nn.grad_of_result = j`); one result
      per differentiable argument (`nn.grad_of = k`, the index of the
      argument of `@f`). An argument is differentiable when it is a float
      tensor, not marked `nn.no_grad` or `nn.frozen`, and (with
      `input-gradients=false`) a weight.
    - with `split-backward`: `@f_backward_input(params..., residuals...,
      d_results...) -> (input grads..., carries...)` and
      `@f_backward_weight(params..., residuals..., carries...) -> (weight
      grads...)`, where the carries (`nn.carry = i`) are the values the
      weight gradients need from the input-gradient pass. This is the B/W
      split of zero-bubble schedules: B computes only what the previous
      stage waits for.

    Gradients of values used several times are summed. A result that does
    not depend on any differentiable argument gets a zero gradient.
  }];
  let options = [
    ListOption<"functions", "functions", "std::string",
               "Functions to differentiate (default: every public one)">,
    Option<"inputGradients", "input-gradients", "bool", "true",
           "Also differentiate with respect to non-weight arguments">,
    Option<"splitBackward", "split-backward", "bool", "false",
           "Split the backward into input-gradient and weight-gradient "
           "functions">,
  ];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::pipedream::nn::NNDialect"];
}

def BuildTrainingPass : Pass<"nn-build-training", "::mlir::ModuleOp"> {
  let summary = "Build the training step and optimizer update of a model";
  let description = [{
    Replaces the inference function `function` (`@main(inputs...,
    weights...) -> (prediction, ...)`) by the two functions of a training
    bundle (docs/Bundle.md, "Training bundles"):

    - `@train_microbatch(inputs..., labels, weights..., [rng_seed],
      grads...) -> (loss, grads'..., running stats'..., [rng_seed'])`: the
      forward in training mode (BatchNormalization with batch statistics,
      Dropout with a seeded mask), the loss (`cross-entropy` over class
      indices on the last axis, or `mse`; mean reduction, as
      torch.nn.functional), its gradient with respect to every trainable
      weight scaled by `1/microbatches` and added to the accumulators;
    - `@update(weights..., grads..., state...) -> (weights'..., state'...)`:
      one torch.optim step (`sgd`, `momentum`, `adam`, `adamw`).

    Results that replace a persistent buffer carry `nn.updates = "<name>"`.
    Weights used only as BatchNormalization running statistics are not
    trained (they are updated by the step).
  }];
  let options = [
    Option<"function", "function", "std::string", "\"main\"",
           "The inference function to train">,
    Option<"loss", "loss", "std::string", "\"cross-entropy\"",
           "cross-entropy, mse, or none (the first result is the loss)">,
    Option<"labelsName", "labels-name", "std::string", "\"labels\"",
           "Name of the labels input">,
    Option<"microbatches", "microbatches", "int64_t", "1",
           "Micro-batches per optimizer step">,
    Option<"optimizer", "optimizer", "std::string", "\"sgd\"",
           "sgd, momentum, adam or adamw">,
    Option<"lr", "lr", "double", "0.01", "Learning rate">,
    Option<"momentum", "momentum", "double", "0.9",
           "Momentum of the momentum optimizer">,
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
           "Scale the gradients so that their joint 2-norm is at most this "
           "(clip_grad_norm_; 0: no clipping)">,
    Option<"evaluate", "evaluate", "bool", "false",
           "Also build @evaluate: one micro-batch's loss through the "
           "forward in eval mode (Dropout off, BatchNorm running "
           "statistics), changing nothing">,
  ];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::pipedream::nn::NNDialect"];
}

def FuseActivationsPass : Pass<"nn-fuse-activations", "::mlir::ModuleOp"> {
  let summary = "Recognize GELU spelled out in elementwise ops as nn.gelu";
  let description = [{
    PyTorch exports `nn.GELU()` below opset 20 as its formula,
    `x * (erf(x / sqrt(2)) + 1) * 0.5` (Div, Erf, Add, Mul, Mul), and the
    tanh approximation (`approximate="tanh"`, GPT-2's `gelu_new`) as
    `(0.5 * x) * (tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)) + 1)` (Mul,
    Pow, Mul, Add, Mul, Tanh, Add, Mul). Each step is an `nn` op of its
    own: lowered as such, a training step runs one loop per op and saves
    the intermediates for the backward, which reads them back. This pass
    replaces either chain by `nn.gelu` (`approximate = "tanh"` for the
    second), whose derivative rule recomputes from `x` alone: one forward
    loop, and one backward loop reading `x` and the gradient. A chain
    matches in either operand order of each commutative op, with `x / c`
    or `x * c'` for the erf's scaling, the `0.5` applied to `x` first or to
    the product last, and constants (scalar or all-equal `nn.constant`s)
    equal to the formula's within 1e-6 relative. Every intermediate must
    have no other user, and the result the type of `x`; else the chain
    stays as it is. So does a chain whose constants are weights (the
    dynamo exporter's scalar initializers: a weight's value may change).
    The `nn.gelu` keeps the last op's location and `nn.name`. The ONNX
    importer runs these patterns on every module it makes
    (`fuseActivations`).

    ```mlir
    %d = nn.div %x, %sqrt2 ...   // 1.41421354
    %e = nn.erf %d ...
    %a = nn.add %e, %one ...
    %m = nn.mul %x, %a ...
    %y = nn.mul %m, %half ...
    // becomes
    %y = nn.gelu %x ...
    ```
  }];
  let dependentDialects = ["::pipedream::nn::NNDialect"];
}

def MarkTrainablePass : Pass<"nn-mark-trainable", "::mlir::ModuleOp"> {
  let summary = "Mark the weights that cannot be parameters nn.frozen";
  let description = [{
    Decides for every weight (`nn.param` argument) of `function` whether
    training updates it, and marks the others `nn.frozen` (no gradient, no
    optimizer state, never written by the update). A float weight is
    trainable when it is read, is not a BatchNormalization running
    statistic, is not rank 0 (a scalar constant: eps, an exponent, a
    scale) and reaches result `result` through parameter operands: operands
    each op's derivative rule differentiates (`isDifferentiableOperand`),
    of ops with a float result on the way, and not `nn.pow`'s exponent. A
    float mask compared before a `nn.where`, a table only read by integer
    ops, a constant feeding only shapes do not. `freeze` and `train` (exact
    names or regular expressions over the whole name) override the rule;
    `train` of a non-float weight, an override that matches nothing, or a
    weight matched by both is an error. docs/Training.md explains the rule.

    ```mlir
    // %eps (rank 0) and %mask (only compared) get nn.frozen; %w stays.
    func.func @main(%x: tensor<2x4xf32>,
                    %w: tensor<4x4xf32> {nn.param = ...},
                    %eps: tensor<f32> {nn.param = ...},
                    %mask: tensor<2x4xf32> {nn.param = ...})
    ```
  }];
  let options = [
    Option<"function", "function", "std::string", "\"main\"",
           "The inference function whose weights are classified">,
    Option<"result", "result", "unsigned", "0",
           "The trained result (the prediction the loss is taken of, or "
           "the loss itself)">,
    ListOption<"freeze", "freeze", "std::string",
               "Weights to keep fixed (names or regular expressions)">,
    ListOption<"train", "train", "std::string",
               "Weights to train whatever the rule says">,
    Option<"printDecisions", "print", "bool", "false",
           "Print the trainable and frozen weights to stdout">,
  ];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::pipedream::nn::NNDialect"];
}

#endif // PIPEDREAM_DIALECT_NN_TRANSFORMS_PASSES_TD
