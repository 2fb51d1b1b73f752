//===- NNBase.td - nn dialect definition -------------------*- tablegen -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The `nn` dialect: ONNX-level tensor operations on ranked, statically shaped
// tensors. One op per ONNX op family; opset differences are resolved by the
// importer, so every op here has one canonical form.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_DIALECT_NN_IR_NNBASE_TD
#define PIPEDREAM_DIALECT_NN_IR_NNBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def NN_Dialect : Dialect {
  let name = "nn";
  let cppNamespace = "::pipedream::nn";
  let summary = "ONNX-level neural-network tensor operations";
  let description = [{
    The `nn` dialect holds the forward graph of an imported model: ONNX
    operator semantics (numpy broadcasting, ONNX attribute meanings) on
    ranked, statically shaped tensors. Every op infers its result type from
    its operands and attributes, so a pass that builds `nn` ops never
    computes shapes by hand.

    Weights are function arguments. The importer marks them with argument
    attributes:
    - `nn.name`: the ONNX name of a graph input, initializer or output;
    - `nn.param`: present on weights only; holds the initializer's value.

    ```mlir
    func.func @main(%x: tensor<2x4xf32> {nn.name = "x"},
                    %w: tensor<4x3xf32> {nn.name = "fc.weight",
                                         nn.param = dense<0.5> : tensor<4x3xf32>})
        -> (tensor<2x3xf32> {nn.name = "y"}) {
      %0 = nn.matmul %x, %w : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
      return %0 : tensor<2x3xf32>
    }
    ```
  }];
  let useDefaultAttributePrinterParser = 0;
  let useDefaultTypePrinterParser = 0;
  let extraClassDeclaration = [{
    /// Argument/result attribute holding the ONNX name of a value.
    static constexpr ::llvm::StringLiteral kNameAttrName = "nn.name";
    /// Argument attribute marking a weight and holding its initial value.
    static constexpr ::llvm::StringLiteral kParamAttrName = "nn.param";
    /// Argument attribute: a weight that is not trained (BatchNorm running
    /// statistics); its value may still be updated by the forward.
    static constexpr ::llvm::StringLiteral kFrozenAttrName = "nn.frozen";
    /// Argument attribute (dictionary): where a weight came from, as the
    /// exporter recorded it (torch's dynamo exporter: its graph signature
    /// and `pkg.onnxscript.optimizer.folded_from`). `kind` is "parameter" (a
    /// torch nn.Parameter), "folded" (computed at export from exactly the
    /// parameters in `sources`, e.g. a transpose), "derived" (from those
    /// parameters and other values), "buffer" or "constant"; `sources`
    /// lists the torch names. nn-mark-trainable reads it.
    static constexpr ::llvm::StringLiteral kOriginAttrName = "nn.origin";
    /// Argument attribute (unit): no gradient is wanted for this argument.
    static constexpr ::llvm::StringLiteral kNoGradAttrName = "nn.no_grad";
    /// Result of a forward / argument of a backward (index): a value the
    /// backward needs, saved by the forward (what a pipeline stage stashes).
    static constexpr ::llvm::StringLiteral kResidualAttrName = "nn.residual";
    /// Result of a backward (index): the gradient of that argument of the
    /// differentiated function.
    static constexpr ::llvm::StringLiteral kGradOfAttrName = "nn.grad_of";
    /// Argument of a backward (index): the gradient flowing into that result
    /// of the differentiated function.
    static constexpr ::llvm::StringLiteral kGradOfResultAttrName =
        "nn.grad_of_result";
    /// Result of a backward-input / argument of a backward-weight function
    /// (index): a value the input-gradient pass hands to the weight-gradient
    /// pass (zero-bubble split).
    static constexpr ::llvm::StringLiteral kCarryAttrName = "nn.carry";
    /// Result attribute (string): this result is the new value of the
    /// weight / state buffer of that name (the runtime swaps them in).
    static constexpr ::llvm::StringLiteral kUpdatesAttrName = "nn.updates";
    /// Argument/result attribute (string): what a buffer is to a training
    /// function ("input", "label", "param", "grad", "state", "loss"...).
    static constexpr ::llvm::StringLiteral kRoleAttrName = "nn.role";
  }];
  let hasConstantMaterializer = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
}

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

/// Element types the dialect computes with. Integers are signless (ONNX's
/// signed types and bool) or unsigned (ONNX uint8..uint64: `ui8`..`ui64`,
/// the lowering picks the unsigned arith ops for them and then drops the
/// signedness, docs/NN.md "Unsigned integers").
def NN_ElementType
    : AnyTypeOf<[AnyFloat, AnySignlessInteger, AnyUnsignedInteger]>;

/// A ranked tensor whose every dimension is static.
def NN_Tensor
    : StaticShapeTensorOf<[AnyFloat, AnySignlessInteger, AnyUnsignedInteger]>;
/// Integer tensors only (bit operations).
def NN_IntegerTensor
    : StaticShapeTensorOf<[AnySignlessInteger, AnyUnsignedInteger]>;
def NN_FloatTensor : StaticShapeTensorOf<[AnyFloat]>;
/// Floats and integers other than bool: values with an order (pooling).
def NN_OrderedTensor
    : StaticShapeTensorOf<[AnyFloat, I8, I16, I32, I64, AnyUnsignedInteger]>;
def NN_IndexTensor : StaticShapeTensorOf<[I32, I64]>;
def NN_BoolTensor : StaticShapeTensorOf<[I1]>;

#endif // PIPEDREAM_DIALECT_NN_IR_NNBASE_TD
