//===- Autodiff.h - reverse-mode differentiation of nn functions -*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The library behind `nn-autodiff` (Passes.td has the contract of the
// functions it builds). Training assembly (loss, accumulation, optimizer)
// and the pipeline passes call it on whole models and on stage functions.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_DIALECT_NN_TRANSFORMS_AUTODIFF_H
#define PIPEDREAM_DIALECT_NN_TRANSFORMS_AUTODIFF_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <optional>

namespace pipedream::nn {

struct AutodiffOptions {
  /// Differentiate with respect to non-weight float arguments too.
  bool inputGradients = true;
  /// Build `_backward_input` / `_backward_weight` instead of `_backward`.
  bool splitBackward = false;
};

/// Whether argument `index` of `func` is a weight (`nn.param`).
bool isParamArgument(mlir::func::FuncOp func, unsigned index);

/// The arguments of `func` that get gradients: float tensors not marked
/// `nn.no_grad` / `nn.frozen`, and only weights unless
/// `options.inputGradients`.
llvm::SmallVector<unsigned>
getDifferentiableArguments(mlir::func::FuncOp func,
                           const AutodiffOptions &options);

/// A function computing a forward and its vector-Jacobian product together.
struct JointFunction {
  /// `@name(args..., d_results...) -> (results..., grads...)`: one
  /// `d_result` per float result of the differentiated function, one grad
  /// per entry of `wrt`, in order.
  mlir::func::FuncOp func;
  /// The first op of the backward part of the body (every op before it is a
  /// clone of the forward), or null when the backward is empty.
  mlir::Operation *firstBackwardOp = nullptr;
  /// Number of d_result arguments.
  unsigned numResultGrads = 0;
};

/// Builds the joint function of `func` with respect to the arguments `wrt`,
/// inserted after `func` with the name `name`. `ofResults` selects the
/// (float) results that get a `d_result` argument (default: every float
/// result); the others are treated as not reaching the loss. Fails, with a
/// diagnostic on the offending op, when a value on the path from `wrt` to
/// the results is produced by an op without a derivative rule, or when a
/// rule fails.
mlir::FailureOr<JointFunction>
buildJointFunction(mlir::func::FuncOp func, llvm::StringRef name,
                   llvm::ArrayRef<unsigned> wrt,
                   std::optional<llvm::ArrayRef<unsigned>> ofResults = {});

/// The functions `nn-autodiff` adds for one function.
struct DifferentiatedFunctions {
  mlir::func::FuncOp forward;
  /// Set without `splitBackward`.
  mlir::func::FuncOp backward;
  /// Set with `splitBackward`.
  mlir::func::FuncOp backwardInput;
  mlir::func::FuncOp backwardWeight;
  /// Number of residuals the forward returns after the function's results.
  unsigned numResiduals = 0;
};

/// Adds `@<f>_forward` and `@<f>_backward` (or the split pair) after `func`,
/// as documented on the `nn-autodiff` pass. Fails with a diagnostic.
mlir::FailureOr<DifferentiatedFunctions>
differentiateFunction(mlir::func::FuncOp func, const AutodiffOptions &options);

} // namespace pipedream::nn

#endif // PIPEDREAM_DIALECT_NN_TRANSFORMS_AUTODIFF_H
