//===- NNInterfaces.td - gradient and cost interfaces ------*- tablegen -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Interfaces the training and partitioning passes query on `nn` ops.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_DIALECT_NN_IR_NNINTERFACES_TD
#define PIPEDREAM_DIALECT_NN_IR_NNINTERFACES_TD

include "mlir/IR/OpBase.td"

def NN_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::pipedream::nn";
  let description = [{
    The derivative rule of an op: given the gradients of the loss with
    respect to the op's results, build the vector-Jacobian product, i.e.
    the gradients with respect to its operands. `nn-autodiff` calls this on
    every op of a function in reverse order, like a table of derivative
    rules.
  }];
  let methods = [
    InterfaceMethod<[{
        Builds, at the builder's insertion point, the gradient of every
        operand from `resultGrads` (one per result; a null value means the
        result does not reach the loss). Appends one value per operand to
        `operandGrads`, null for operands that have no gradient (integer
        indices, masks). Fails with a diagnostic on the op when the rule
        does not apply (for example an unsupported attribute value).
      }],
      "::llvm::LogicalResult", "buildGradient",
      (ins "::mlir::OpBuilder &":$builder,
           "::mlir::ValueRange":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
    InterfaceMethod<[{
        Whether the gradient of operand `index` exists: false for integer
        and boolean operands and for operands the op is constant in.
      }],
      "bool", "isDifferentiableOperand", (ins "unsigned":$index), "",
      [{
        return ::llvm::isa<::mlir::FloatType>(::mlir::getElementTypeOrSelf(
            $_op->getOperand(index).getType()));
      }]>,
  ];
}

def NN_CostOpInterface : OpInterface<"CostOpInterface"> {
  let cppNamespace = "::pipedream::nn";
  let description = [{
    Work and traffic of an op's forward computation, for the analytical cost
    model of `pipe-annotate-costs`. The defaults count one operation per
    result element and every operand and result byte once; ops whose work is
    not proportional to their output (contractions, convolutions,
    reductions, normalizations) override them.
  }];
  let methods = [
    InterfaceMethod<[{
        Floating-point (or integer) operations of the forward computation.
      }],
      "int64_t", "getForwardFlops", (ins), "",
      [{ return ::pipedream::nn::detail::defaultForwardFlops($_op); }]>,
    InterfaceMethod<[{
        Bytes the forward computation reads and writes (operands + results).
      }],
      "int64_t", "getForwardBytes", (ins), "",
      [{ return ::pipedream::nn::detail::defaultForwardBytes($_op); }]>,
  ];
}

#endif // PIPEDREAM_DIALECT_NN_IR_NNINTERFACES_TD
