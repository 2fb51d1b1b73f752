//===- NNOps.td - nn dialect operations --------------------*- tablegen -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Canonical forms (the importer produces them, passes may rely on them):
// - every axis attribute is non-negative (`0 <= axis < rank`), every axes list
//   is sorted and free of duplicates;
// - shapes are fully resolved (no ONNX `0` / `-1` placeholders);
// - attributes that ONNX passes as constant inputs in newer opsets (Split
//   sizes, Reduce axes, Clip bounds, Slice bounds...) are attributes here.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_DIALECT_NN_IR_NNOPS_TD
#define PIPEDREAM_DIALECT_NN_IR_NNOPS_TD

include "pipedream/Dialect/NN/IR/NNBase.td"
include "pipedream/Dialect/NN/IR/NNInterfaces.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Base classes
//===----------------------------------------------------------------------===//

/// Every nn op is side-effect free and infers its result types (the
/// InferTypeOpInterface verifier then checks declared against inferred types).
/// `cost` is the cost-interface trait: the default counts one op per result
/// element; contractions and reductions declare their own.
/// `infer` is InferTypeOpAdaptor (hand-written inference from the adaptor)
/// or, for SameOperandsAndResultType ops, InferTypeOpInterface (ODS
/// generates the inference).
class NN_Op<string mnemonic, list<Trait> traits = [],
            Trait cost = NN_CostOpInterface,
            list<Trait> infer = [InferTypeOpAdaptor]>
    : Op<NN_Dialect, mnemonic,
         !listconcat(traits, [Pure, cost], infer)>;

/// `y = f(x)` elementwise on floats; the result type is the operand type
/// (ODS generates the inference from SameOperandsAndResultType).
class NN_UnaryFloatOp<string mnemonic, list<Trait> traits = [],
                      Trait cost = NN_CostOpInterface>
    : NN_Op<mnemonic, !listconcat(traits, [SameOperandsAndResultType]), cost,
            [InferTypeOpInterface]> {
  let arguments = (ins NN_FloatTensor:$input);
  let results = (outs NN_FloatTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

/// `z = x op y` with ONNX (numpy) multidirectional broadcasting.
/// The result element type is the operands' (or `i1` for comparisons).
class NN_BroadcastBinaryOp<string mnemonic, list<Trait> traits = [],
                           bit boolResult = 0>
    : NN_Op<mnemonic, traits> {
  let arguments = (ins NN_Tensor:$lhs, NN_Tensor:$rhs);
  let results = (outs NN_Tensor:$output);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, std::optional<::mlir::Location> location,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &inferred) {
      return ::pipedream::nn::detail::inferBroadcastBinaryOp(
          getOperationName(), location, adaptor.getLhs().getType(),
          adaptor.getRhs().getType(), /*boolResult=*/}] #
          !if(boolResult, "true", "false") # [{, inferred);
    }
  }];
}

/// Ops whose syntax is the generic `operands : (types) -> types`.
class NN_GenericFormatOp<string mnemonic, list<Trait> traits = [],
                         Trait cost = NN_CostOpInterface>
    : NN_Op<mnemonic, traits, cost> {
  let assemblyFormat =
      "operands attr-dict `:` functional-type(operands, results)";
}

def NN_OverrideCost
    : DeclareOpInterfaceMethods<NN_CostOpInterface, ["getForwardFlops"]>;

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

def NN_ConstantOp : NN_Op<"constant", [ConstantLike]> {
  let summary = "tensor constant";
  let description = [{
    A constant tensor: an ONNX `Constant` node, or a value the importer folded
    and still needs (a scalar divisor, an attention mask).

    ```mlir
    %0 = nn.constant dense<[1.0, 2.0]> : tensor<2xf32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs NN_Tensor:$output);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Training helpers
//===----------------------------------------------------------------------===//

def NN_OneHotOp : NN_GenericFormatOp<"one_hot"> {
  let summary = "one-hot encoding of class indices along a new last axis";
  let description = [{
    `output[..., c] = (indices[...] == c) ? 1 : 0` for `c` in `[0, depth)`,
    of element type `dtype`. Indices outside `[0, depth)` give an all-zero
    row (the runtime rejects such labels before a training step). The
    cross-entropy loss is built from it:
    `mean(-sum(one_hot(labels) * log_softmax(logits), -1))`.

    ```mlir
    %0 = nn.one_hot %labels {depth = 10 : i64, dtype = f32}
        : (tensor<8xi64>) -> tensor<8x10xf32>
    ```
  }];
  let arguments = (ins NN_IndexTensor:$indices, I64Attr:$depth,
                       TypeAttrOf<AnyFloat>:$dtype);
  let results = (outs NN_FloatTensor:$output);
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise binary (broadcasting)
//===----------------------------------------------------------------------===//

def NN_AddOp : NN_BroadcastBinaryOp<"add", [Commutative]> {
  let summary = "elementwise addition with broadcasting";
  let description = [{
    ONNX `Add`: `output = lhs + rhs`, shapes broadcast numpy-style.

    ```mlir
    %0 = nn.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    ```
  }];
}

def NN_SubOp : NN_BroadcastBinaryOp<"sub"> {
  let summary = "elementwise subtraction with broadcasting";
  let description = [{
    ONNX `Sub`: `output = lhs - rhs`.

    ```mlir
    %0 = nn.sub %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    ```
  }];
}

def NN_MulOp : NN_BroadcastBinaryOp<"mul", [Commutative]> {
  let summary = "elementwise multiplication with broadcasting";
  let description = [{
    ONNX `Mul`: `output = lhs * rhs`.

    ```mlir
    %0 = nn.mul %a, %b : (tensor<2x1xf32>, tensor<1x3xf32>) -> tensor<2x3xf32>
    ```
  }];
}

def NN_DivOp : NN_BroadcastBinaryOp<"div"> {
  let summary = "elementwise division with broadcasting";
  let description = [{
    ONNX `Div`: `output = lhs / rhs` (integer division truncates).

    ```mlir
    %0 = nn.div %a, %b : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
    ```
  }];
}

def NN_PowOp : NN_BroadcastBinaryOp<"pow"> {
  let summary = "elementwise power with broadcasting";
  let description = [{
    ONNX `Pow`: `output = lhs ^ rhs`; the result has the base's element type.

    ```mlir
    %0 = nn.pow %x, %e : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    ```
  }];
}

def NN_EqualOp : NN_BroadcastBinaryOp<"equal", [Commutative], /*boolResult=*/1> {
  let summary = "elementwise equality with broadcasting";
  let description = [{
    ONNX `Equal`: `output = (lhs == rhs)` as `i1`.

    ```mlir
    %0 = nn.equal %a, %b : (tensor<4xi64>, tensor<i64>) -> tensor<4xi1>
    ```
  }];
  let results = (outs NN_BoolTensor:$output);
}

def NN_WhereOp : NN_Op<"where"> {
  let summary = "elementwise select with broadcasting";
  let description = [{
    ONNX `Where`: `output = condition ? lhs : rhs`, all three broadcast.

    ```mlir
    %0 = nn.where %c, %x, %y
        : (tensor<1x4xi1>, tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
    ```
  }];
  let arguments = (ins NN_BoolTensor:$condition, NN_Tensor:$lhs, NN_Tensor:$rhs);
  let results = (outs NN_Tensor:$output);
  let assemblyFormat = "$condition `,` $lhs `,` $rhs attr-dict `:` "
                       "functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Elementwise unary
//===----------------------------------------------------------------------===//

def NN_SqrtOp : NN_UnaryFloatOp<"sqrt"> {
  let summary = "elementwise square root";
  let description = [{
    ```mlir
    %0 = nn.sqrt %x : tensor<4xf32>
    ```
  }];
}

def NN_NegOp : NN_Op<"neg", [SameOperandsAndResultType], NN_CostOpInterface,
                     [InferTypeOpInterface]> {
  let summary = "elementwise negation";
  let description = [{
    ONNX `Neg` (floats and signed integers).

    ```mlir
    %0 = nn.neg %x : tensor<4xf32>
    ```
  }];
  let arguments = (ins NN_Tensor:$input);
  let results = (outs NN_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def NN_ExpOp : NN_UnaryFloatOp<"exp"> {
  let summary = "elementwise exponential";
  let description = [{
    ```mlir
    %0 = nn.exp %x : tensor<4xf32>
    ```
  }];
}

def NN_LogOp : NN_UnaryFloatOp<"log"> {
  let summary = "elementwise natural logarithm";
  let description = [{
    ```mlir
    %0 = nn.log %x : tensor<4xf32>
    ```
  }];
}

def NN_TanhOp : NN_UnaryFloatOp<"tanh"> {
  let summary = "elementwise hyperbolic tangent";
  let description = [{
    ```mlir
    %0 = nn.tanh %x : tensor<4xf32>
    ```
  }];
}

def NN_ErfOp : NN_UnaryFloatOp<"erf"> {
  let summary = "elementwise error function";
  let description = [{
    ```mlir
    %0 = nn.erf %x : tensor<4xf32>
    ```
  }];
}

def NN_SigmoidOp : NN_UnaryFloatOp<"sigmoid"> {
  let summary = "elementwise logistic sigmoid";
  let description = [{
    `output = 1 / (1 + exp(-input))`.

    ```mlir
    %0 = nn.sigmoid %x : tensor<4xf32>
    ```
  }];
}

def NN_ReluOp : NN_UnaryFloatOp<"relu"> {
  let summary = "elementwise rectified linear unit";
  let description = [{
    `output = max(input, 0)`.

    ```mlir
    %0 = nn.relu %x : tensor<4xf32>
    ```
  }];
}

def NN_LeakyReluOp : NN_UnaryFloatOp<"leaky_relu"> {
  let summary = "elementwise leaky rectified linear unit";
  let description = [{
    `output = input >= 0 ? input : alpha * input`.

    ```mlir
    %0 = nn.leaky_relu %x {alpha = 0.1 : f64} : tensor<4xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input,
                       DefaultValuedAttr<F64Attr, "0.01">:$alpha);
}

def NN_GeluOp : NN_UnaryFloatOp<"gelu"> {
  let summary = "elementwise Gaussian error linear unit";
  let description = [{
    ONNX `Gelu` (opset 20). `approximate` is `"none"`
    (`0.5 x (1 + erf(x / sqrt 2))`) or `"tanh"`.

    ```mlir
    %0 = nn.gelu %x {approximate = "tanh"} : tensor<4xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input,
                       DefaultValuedStrAttr<StrAttr, "none">:$approximate);
  let hasVerifier = 1;
}

def NN_ClipOp : NN_UnaryFloatOp<"clip"> {
  let summary = "elementwise clamp";
  let description = [{
    ONNX `Clip`; absent bounds do not clamp. The importer turns the bound
    inputs of opset 11+ into these attributes.

    ```mlir
    %0 = nn.clip %x {min = 0.0 : f64, max = 6.0 : f64} : tensor<4xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, OptionalAttr<F64Attr>:$min,
                       OptionalAttr<F64Attr>:$max);
  let hasVerifier = 1;
}

def NN_CastOp : NN_Op<"cast"> {
  let summary = "elementwise element-type conversion";
  let description = [{
    ONNX `Cast`: converts every element to the element type `to`
    (float to integer truncates toward zero; to `i1` tests `!= 0`).

    ```mlir
    %0 = nn.cast %x {to = f32} : (tensor<4xi64>) -> tensor<4xf32>
    ```
  }];
  let arguments = (ins NN_Tensor:$input, TypeAttrOf<NN_ElementType>:$to);
  let results = (outs NN_Tensor:$output);
  let assemblyFormat =
      "$input attr-dict `:` functional-type(operands, results)";
}

def NN_DropoutOp : NN_UnaryFloatOp<"dropout"> {
  let summary = "dropout (identity at inference)";
  let description = [{
    ONNX `Dropout`. At inference it is the identity. When training, each
    element is zeroed with probability `ratio` and the rest scaled by
    `1 / (1 - ratio)`, with a mask drawn from `seed`.

    ```mlir
    %0 = nn.dropout %x {ratio = 0.1 : f64, seed = 7 : i64} : tensor<4xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input,
                       DefaultValuedAttr<F64Attr, "0.5">:$ratio,
                       DefaultValuedAttr<I64Attr, "0">:$seed);
  let hasVerifier = 1;
}

def NN_DropoutMaskOp : NN_GenericFormatOp<"dropout_mask"> {
  let summary = "the keep mask of a dropout (ONNX Dropout's mask output)";
  let description = [{
    The mask of the `nn.dropout` that produced `input` (the operand must be
    an `nn.dropout` result): `true` where the element was kept. At
    inference every element is kept (all true, ONNX's eval-mode mask). When
    training, `nn-build-training` replaces it with the mask the dropout
    drew (`nn.bernoulli` != 0), so the mask and the dropped elements agree.

    ```mlir
    %y = nn.dropout %x {ratio = 0.5 : f64, seed = 0 : i64} : tensor<4xf32>
    %m = nn.dropout_mask %y : (tensor<4xf32>) -> tensor<4xi1>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input);
  let results = (outs NN_BoolTensor:$output);
  let hasVerifier = 1;
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *context, std::optional<::mlir::Location>,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &inferred) {
      inferred.push_back(::llvm::cast<::mlir::RankedTensorType>(
          adaptor.getInput().getType()).clone(
              ::mlir::IntegerType::get(context, 1)));
      return ::mlir::success();
    }
  }];
}

//===----------------------------------------------------------------------===//
// Softmax family
//===----------------------------------------------------------------------===//

def NN_SoftmaxOp : NN_UnaryFloatOp<"softmax", [], NN_OverrideCost> {
  let summary = "softmax along one axis";
  let description = [{
    ONNX `Softmax` (opset 13 semantics: along `axis` only).

    ```mlir
    %0 = nn.softmax %x {axis = 1 : i64} : tensor<2x8xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, I64Attr:$axis);
  let hasVerifier = 1;
}

def NN_LogSoftmaxOp : NN_UnaryFloatOp<"log_softmax", [], NN_OverrideCost> {
  let summary = "log of softmax along one axis";
  let description = [{
    ONNX `LogSoftmax` (opset 13 semantics).

    ```mlir
    %0 = nn.log_softmax %x {axis = 1 : i64} : tensor<2x8xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, I64Attr:$axis);
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

def NN_MatMulOp : NN_GenericFormatOp<"matmul", [], NN_OverrideCost> {
  let summary = "numpy matrix product (batched, broadcasting)";
  let description = [{
    ONNX `MatMul`: 1-D operands are promoted to matrices and the promoted
    dimension removed afterwards; leading (batch) dimensions broadcast.

    ```mlir
    %0 = nn.matmul %a, %b
        : (tensor<8x2x16x64xf32>, tensor<64x32xf32>) -> tensor<8x2x16x32xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$lhs, NN_FloatTensor:$rhs);
  let results = (outs NN_FloatTensor:$output);
}

def NN_GemmOp : NN_GenericFormatOp<"gemm", [], NN_OverrideCost> {
  let summary = "general matrix multiply";
  let description = [{
    ONNX `Gemm`: `output = alpha * op(a) * op(b) + beta * c` where `op`
    transposes when `trans_a` / `trans_b` is set and `c` (optional)
    broadcasts to the `M x N` result.

    ```mlir
    %0 = nn.gemm %x, %w, %b {trans_b = true}
        : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$a, NN_FloatTensor:$b,
                       Optional<NN_FloatTensor>:$c,
                       DefaultValuedAttr<F64Attr, "1.0">:$alpha,
                       DefaultValuedAttr<F64Attr, "1.0">:$beta,
                       DefaultValuedAttr<BoolAttr, "false">:$trans_a,
                       DefaultValuedAttr<BoolAttr, "false">:$trans_b);
  let results = (outs NN_FloatTensor:$output);
}

def NN_ConvOp : NN_GenericFormatOp<"conv", [], NN_OverrideCost> {
  let summary = "N-d convolution (NCHW), with groups, strides, padding, dilation";
  let description = [{
    ONNX `Conv` with explicit padding. `input` is `N x C x D1 x ... x Dn`,
    `weight` is `M x C/group x k1 x ... x kn`, `bias` (optional) is `M`.
    `strides` and `dilations` have one entry per spatial dimension, `pads`
    two (all begins, then all ends), as in ONNX. The importer resolves
    `auto_pad` into `pads`.

    ```mlir
    %0 = nn.conv %x, %w, %b {dilations = array<i64: 1, 1>, group = 1 : i64,
                             pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}
        : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$weight,
                       Optional<NN_FloatTensor>:$bias,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$group);
  let results = (outs NN_FloatTensor:$output);
}

def NN_ConvBackwardInputOp
    : NN_GenericFormatOp<"conv_backward_input", [], NN_OverrideCost> {
  let summary = "gradient of nn.conv with respect to its input";
  let description = [{
    The vector-Jacobian product of `nn.conv` for its input: given the
    gradient `output_grad` (`N x M x O1 x ... x On`) of a convolution of an
    input of shape `input_shape` with `weight`, the gradient of that input
    (a transposed convolution). `strides`, `pads`, `dilations` and `group`
    are the forward convolution's; input positions no window reads (the
    rows a floor division drops) get zero.

    ```mlir
    %0 = nn.conv_backward_input %dy, %w {dilations = array<i64: 1, 1>, group = 1 : i64,
                                         input_shape = array<i64: 1, 3, 8, 8>,
                                         pads = array<i64: 1, 1, 1, 1>,
                                         strides = array<i64: 1, 1>}
        : (tensor<1x4x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x3x8x8xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$output_grad, NN_FloatTensor:$weight,
                       DenseI64ArrayAttr:$input_shape,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$group);
  let results = (outs NN_FloatTensor:$input_grad);
}

def NN_ConvBackwardWeightOp
    : NN_GenericFormatOp<"conv_backward_weight", [], NN_OverrideCost> {
  let summary = "gradient of nn.conv with respect to its weight";
  let description = [{
    The vector-Jacobian product of `nn.conv` for its weight: given the
    gradient `output_grad` of a convolution of `input`, the gradient of a
    weight of shape `M x C/group x kernel_shape` (the correlation of the
    padded input with the output gradient). `strides`, `pads`, `dilations`
    and `group` are the forward convolution's.

    ```mlir
    %0 = nn.conv_backward_weight %dy, %x {dilations = array<i64: 1, 1>, group = 1 : i64,
                                          kernel_shape = array<i64: 3, 3>,
                                          pads = array<i64: 1, 1, 1, 1>,
                                          strides = array<i64: 1, 1>}
        : (tensor<1x4x8x8xf32>, tensor<1x3x8x8xf32>) -> tensor<4x3x3x3xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$output_grad, NN_FloatTensor:$input,
                       DenseI64ArrayAttr:$kernel_shape,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$group);
  let results = (outs NN_FloatTensor:$weight_grad);
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

def NN_BatchNormalizationOp
    : NN_GenericFormatOp<"batch_normalization", [], NN_OverrideCost> {
  let summary = "batch normalization (NC...)";
  let description = [{
    ONNX `BatchNormalization` over the channel axis 1:
    `output = scale * (input - mean) / sqrt(var + epsilon) + bias`.
    At inference `mean`/`var` are the running statistics; when training,
    the training passes use batch statistics and update the running ones
    with `momentum` (ONNX convention: `running = momentum * running +
    (1 - momentum) * batch`).

    ```mlir
    %0 = nn.batch_normalization %x, %s, %b, %m, %v {epsilon = 1.0e-05 : f64}
        : (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>,
           tensor<4xf32>) -> tensor<2x4x8x8xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$scale,
                       NN_FloatTensor:$bias, NN_FloatTensor:$mean,
                       NN_FloatTensor:$var,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon,
                       DefaultValuedAttr<F64Attr, "0.9">:$momentum);
  let results = (outs NN_FloatTensor:$output);
}

def NN_BatchNormTrainOp
    : NN_GenericFormatOp<"batch_norm_train", [], NN_OverrideCost> {
  let summary = "batch normalization with batch statistics (training mode)";
  let description = [{
    Training-mode batch normalization over the channel axis 1 (ONNX
    `BatchNormalization` with `training_mode = 1`, PyTorch
    `BatchNorm*d.train()`): normalizes with the mean and the biased variance
    of the batch, over every axis but 1,
    `output = scale * (input - mean) / sqrt(var + epsilon) + bias`,
    and returns the updated running statistics
    `running_mean * momentum + mean * (1 - momentum)` and
    `running_var * momentum + var_unbiased * (1 - momentum)`.

    NOTE: the running variance is updated with the unbiased batch variance
    (`var * count / (count - 1)`), as PyTorch does (its momentum is
    `1 - momentum`); the ONNX reference implementation uses the biased one.
    Every channel needs more than one value (`count > 1`).

    ```mlir
    %y, %mean, %var = nn.batch_norm_train %x, %s, %b, %rm, %rv
                          {epsilon = 1.0e-05 : f64, momentum = 0.9 : f64}
        : (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>,
           tensor<4xf32>) -> (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>)
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$scale,
                       NN_FloatTensor:$bias, NN_FloatTensor:$running_mean,
                       NN_FloatTensor:$running_var,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon,
                       DefaultValuedAttr<F64Attr, "0.9">:$momentum);
  let results = (outs NN_FloatTensor:$output, NN_FloatTensor:$new_running_mean,
                      NN_FloatTensor:$new_running_var);
  let hasVerifier = 1;
}

def NN_LayerNormalizationOp
    : NN_GenericFormatOp<"layer_normalization", [], NN_OverrideCost> {
  let summary = "layer normalization over the trailing axes";
  let description = [{
    ONNX `LayerNormalization` (opset 17): normalizes over axes
    `[axis, rank)`; `scale` and optional `bias` have the shape of those
    axes (or broadcast to it).

    ```mlir
    %0 = nn.layer_normalization %x, %g, %b {axis = 2 : i64, epsilon = 1.0e-05 : f64}
        : (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$scale,
                       Optional<NN_FloatTensor>:$bias, I64Attr:$axis,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon);
  let results = (outs NN_FloatTensor:$output);
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

def NN_MaxPoolOp : NN_GenericFormatOp<"max_pool", [], NN_OverrideCost> {
  let summary = "N-d max pooling (NCHW)";
  let description = [{
    ONNX `MaxPool` with explicit padding (padding never wins the max).
    `kernel_shape`, `strides` and `dilations` have one entry per spatial
    dimension, `pads` two. Floats, and integers (ONNX opset 12: int8,
    uint8; compared signed or unsigned by type, not differentiated).

    ```mlir
    %0 = nn.max_pool %x {ceil_mode = false, dilations = array<i64: 1, 1>,
                         kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>,
                         strides = array<i64: 2, 2>}
        : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
    ```
  }];
  let arguments = (ins NN_OrderedTensor:$input, DenseI64ArrayAttr:$kernel_shape,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<BoolAttr, "false">:$ceil_mode);
  let results = (outs NN_OrderedTensor:$output);
}

def NN_AveragePoolOp : NN_GenericFormatOp<"average_pool", [], NN_OverrideCost> {
  let summary = "N-d average pooling (NCHW)";
  let description = [{
    ONNX `AveragePool` with explicit padding; padded elements count in the
    divisor only when `count_include_pad` is set.

    ```mlir
    %0 = nn.average_pool %x {ceil_mode = false, count_include_pad = false,
                             kernel_shape = array<i64: 2, 2>,
                             pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>}
        : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, DenseI64ArrayAttr:$kernel_shape,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DefaultValuedAttr<BoolAttr, "false">:$ceil_mode,
                       DefaultValuedAttr<BoolAttr, "false">:$count_include_pad);
  let results = (outs NN_FloatTensor:$output);
}

def NN_GlobalAveragePoolOp
    : NN_GenericFormatOp<"global_average_pool", [], NN_OverrideCost> {
  let summary = "mean over all spatial dimensions";
  let description = [{
    ONNX `GlobalAveragePool`: `N x C x D1 ... Dn -> N x C x 1 ... 1`.

    ```mlir
    %0 = nn.global_average_pool %x : (tensor<1x4x8x8xf32>) -> tensor<1x4x1x1xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input);
  let results = (outs NN_FloatTensor:$output);
}

def NN_MaxPoolGradOp : NN_GenericFormatOp<"max_pool_grad", [], NN_OverrideCost> {
  let summary = "gradient of nn.max_pool with respect to its input";
  let description = [{
    The vector-Jacobian product of `nn.max_pool`: every element of
    `output_grad` goes to the position of its window's maximum in `input`
    (the first one in row-major window order on ties, as PyTorch), summed
    where windows overlap. The attributes are the forward pooling's.

    ```mlir
    %0 = nn.max_pool_grad %dy, %x {ceil_mode = false, dilations = array<i64: 1, 1>,
                                   kernel_shape = array<i64: 2, 2>,
                                   pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>}
        : (tensor<1x4x4x4xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$output_grad, NN_FloatTensor:$input,
                       DenseI64ArrayAttr:$kernel_shape,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<BoolAttr, "false">:$ceil_mode);
  let results = (outs NN_FloatTensor:$input_grad);
}

def NN_AveragePoolGradOp
    : NN_GenericFormatOp<"average_pool_grad", [], NN_OverrideCost> {
  let summary = "gradient of nn.average_pool with respect to its input";
  let description = [{
    The vector-Jacobian product of `nn.average_pool` for an input of shape
    `input_shape`: every element of `output_grad`, divided by its window's
    divisor, is added to every input position of the window. The attributes
    are the forward pooling's.

    ```mlir
    %0 = nn.average_pool_grad %dy {ceil_mode = false, count_include_pad = false,
                                   input_shape = array<i64: 1, 4, 8, 8>,
                                   kernel_shape = array<i64: 2, 2>,
                                   pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>}
        : (tensor<1x4x4x4xf32>) -> tensor<1x4x8x8xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$output_grad,
                       DenseI64ArrayAttr:$input_shape,
                       DenseI64ArrayAttr:$kernel_shape,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DefaultValuedAttr<BoolAttr, "false">:$ceil_mode,
                       DefaultValuedAttr<BoolAttr, "false">:$count_include_pad);
  let results = (outs NN_FloatTensor:$input_grad);
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

class NN_ReduceOp<string mnemonic> : NN_GenericFormatOp<mnemonic, [], NN_OverrideCost> {
  let arguments = (ins NN_Tensor:$input, DenseI64ArrayAttr:$axes,
                       DefaultValuedAttr<BoolAttr, "true">:$keepdims);
  let results = (outs NN_Tensor:$output);
  let hasVerifier = 1;
}

def NN_ReduceMeanOp : NN_ReduceOp<"reduce_mean"> {
  let summary = "mean over axes";
  let description = [{
    ONNX `ReduceMean` with the axes resolved (an empty ONNX axes list that
    reduces everything becomes every axis).

    ```mlir
    %0 = nn.reduce_mean %x {axes = array<i64: 1>, keepdims = true}
        : (tensor<2x8xf32>) -> tensor<2x1xf32>
    ```
  }];
}

def NN_ReduceSumOp : NN_ReduceOp<"reduce_sum"> {
  let summary = "sum over axes";
  let description = [{
    ```mlir
    %0 = nn.reduce_sum %x {axes = array<i64: 0, 1>, keepdims = false}
        : (tensor<2x8xf32>) -> tensor<f32>
    ```
  }];
}

def NN_ReduceMaxOp : NN_ReduceOp<"reduce_max"> {
  let summary = "maximum over axes";
  let description = [{
    ```mlir
    %0 = nn.reduce_max %x {axes = array<i64: 1>, keepdims = false}
        : (tensor<2x8xf32>) -> tensor<2xf32>
    ```
  }];
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

def NN_ReshapeOp : NN_GenericFormatOp<"reshape"> {
  let summary = "reshape to a static shape";
  let description = [{
    ONNX `Reshape` with the target shape resolved (no `0` or `-1`); the
    element count is unchanged. `Flatten`-like reshapes from other importers
    may use it too.

    ```mlir
    %0 = nn.reshape %x {shape = array<i64: 2, 12>} : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
    ```
  }];
  let arguments = (ins NN_Tensor:$input, DenseI64ArrayAttr:$shape);
  let results = (outs NN_Tensor:$output);
}

def NN_FlattenOp : NN_GenericFormatOp<"flatten"> {
  let summary = "flatten into a matrix at an axis";
  let description = [{
    ONNX `Flatten`: dimensions `[0, axis)` and `[axis, rank)` become the
    two result dimensions.

    ```mlir
    %0 = nn.flatten %x {axis = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
    ```
  }];
  let arguments = (ins NN_Tensor:$input, I64Attr:$axis);
  let results = (outs NN_Tensor:$output);
}

def NN_TransposeOp : NN_GenericFormatOp<"transpose"> {
  let summary = "permute dimensions";
  let description = [{
    ONNX `Transpose`: result dimension `i` is input dimension `perm[i]`.

    ```mlir
    %0 = nn.transpose %x {perm = array<i64: 0, 2, 1>}
        : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
    ```
  }];
  let arguments = (ins NN_Tensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs NN_Tensor:$output);
}

def NN_SqueezeOp : NN_GenericFormatOp<"squeeze"> {
  let summary = "remove unit dimensions";
  let description = [{
    ONNX `Squeeze` with resolved axes (every listed axis has size 1).

    ```mlir
    %0 = nn.squeeze %x {axes = array<i64: 1>} : (tensor<2x1x4xf32>) -> tensor<2x4xf32>
    ```
  }];
  let arguments = (ins NN_Tensor:$input, DenseI64ArrayAttr:$axes);
  let results = (outs NN_Tensor:$output);
}

def NN_UnsqueezeOp : NN_GenericFormatOp<"unsqueeze"> {
  let summary = "insert unit dimensions";
  let description = [{
    ONNX `Unsqueeze`: `axes` are positions in the result.

    ```mlir
    %0 = nn.unsqueeze %x {axes = array<i64: 0, 3>} : (tensor<2x4xf32>) -> tensor<1x2x4x1xf32>
    ```
  }];
  let arguments = (ins NN_Tensor:$input, DenseI64ArrayAttr:$axes);
  let results = (outs NN_Tensor:$output);
}

def NN_ExpandOp : NN_GenericFormatOp<"expand"> {
  let summary = "broadcast to a static shape";
  let description = [{
    ONNX `Expand` with the result shape resolved: `shape` is the broadcast
    of the input shape with ONNX's shape input.

    ```mlir
    %0 = nn.expand %x {shape = array<i64: 4, 3>} : (tensor<1x3xf32>) -> tensor<4x3xf32>
    ```
  }];
  let arguments = (ins NN_Tensor:$input, DenseI64ArrayAttr:$shape);
  let results = (outs NN_Tensor:$output);
}

def NN_ConcatOp : NN_GenericFormatOp<"concat"> {
  let summary = "concatenate along an axis";
  let description = [{
    ```mlir
    %0 = nn.concat %a, %b {axis = 1 : i64}
        : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
    ```
  }];
  let arguments = (ins Variadic<NN_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs NN_Tensor:$output);
}

def NN_SplitOp : NN_GenericFormatOp<"split"> {
  let summary = "split along an axis into pieces of given sizes";
  let description = [{
    ONNX `Split` with sizes resolved (from the `split` input or attribute,
    or equal parts).

    ```mlir
    %0:3 = nn.split %x {axis = 1 : i64, split_sizes = array<i64: 4, 4, 4>}
        : (tensor<2x12xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>)
    ```
  }];
  let arguments = (ins NN_Tensor:$input, I64Attr:$axis,
                       DenseI64ArrayAttr:$split_sizes);
  let results = (outs Variadic<NN_Tensor>:$outputs);
}

def NN_SliceOp : NN_GenericFormatOp<"slice"> {
  let summary = "strided slice with one (start, size, step) per dimension";
  let description = [{
    ONNX `Slice` in resolved form: for every dimension `d` the result takes
    `sizes[d]` elements starting at `starts[d]` (in range) with stride
    `steps[d]` (non-zero, negative walks backwards). The importer applies
    ONNX's clamping rules to `starts`/`ends`/`axes`/`steps` to get here.

    ```mlir
    %0 = nn.slice %x {sizes = array<i64: 2, 2>, starts = array<i64: 0, 1>,
                      steps = array<i64: 1, 2>}
        : (tensor<2x6xf32>) -> tensor<2x2xf32>
    ```
  }];
  let arguments = (ins NN_Tensor:$input, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$sizes, DenseI64ArrayAttr:$steps);
  let results = (outs NN_Tensor:$output);
}

def NN_GatherOp : NN_GenericFormatOp<"gather"> {
  let summary = "gather slices along an axis (embedding lookup)";
  let description = [{
    ONNX `Gather`: result shape is `data[:axis] ++ indices ++ data[axis+1:]`.
    Negative indices count from the end at run time.

    ```mlir
    %0 = nn.gather %table, %ids {axis = 0 : i64}
        : (tensor<100x16xf32>, tensor<2x8xi64>) -> tensor<2x8x16xf32>
    ```
  }];
  let arguments = (ins NN_Tensor:$data, NN_IndexTensor:$indices, I64Attr:$axis);
  let results = (outs NN_Tensor:$output);
}

//===----------------------------------------------------------------------===//
// Data-dependent indexing (GatherElements, GatherND, ScatterElements,
// ScatterND). Index normalization is one helper in NNToLinalg/Utils.h.
//===----------------------------------------------------------------------===//

def NN_GatherElementsOp : NN_GenericFormatOp<"gather_elements"> {
  let summary = "gather single elements along an axis (take_along_axis)";
  let description = [{
    ONNX `GatherElements`: `output[i...] = data[i... with index
    indices[i...] at axis]`. `indices` has the rank of `data` and, except
    at `axis`, no larger dimensions; the result has its shape. Negative
    indices count from the end; indices outside `[-dim, dim)` are an error
    the lowering's index normalization flags (`normalizeIndex`).

    ```mlir
    %0 = nn.gather_elements %x, %i {axis = 1 : i64}
        : (tensor<2x5xf32>, tensor<2x3xi64>) -> tensor<2x3xf32>
    ```
  }];
  let arguments = (ins NN_Tensor:$data, NN_IndexTensor:$indices,
                       I64Attr:$axis);
  let results = (outs NN_Tensor:$output);
}

def NN_ScatterElementsOp
    : NN_GenericFormatOp<"scatter_elements", [], NN_OverrideCost> {
  let summary = "scatter single elements along an axis";
  let description = [{
    ONNX `ScatterElements` (and the old `Scatter`): a copy of `data` where
    `output[i... with index indices[i...] at axis]` is combined with
    `updates[i...]` by `reduction` (`none` replaces; `add`, `mul`, `max`,
    `min` accumulate), in row-major order of `updates`. `indices` and
    `updates` have one shape, of the rank of `data`, no larger except at
    `axis`. Negative indices count from the end; an out-of-range index
    writes nothing (and is flagged by `normalizeIndex`).

    ```mlir
    %0 = nn.scatter_elements %x, %i, %u {axis = 0 : i64, reduction = "add"}
        : (tensor<3x3xf32>, tensor<2x3xi64>, tensor<2x3xf32>) -> tensor<3x3xf32>
    ```
  }];
  let arguments = (ins NN_Tensor:$data, NN_IndexTensor:$indices,
                       NN_Tensor:$updates, I64Attr:$axis,
                       DefaultValuedStrAttr<StrAttr, "none">:$reduction);
  let results = (outs NN_Tensor:$output);
  let hasVerifier = 1;
}

def NN_GatherNDOp : NN_GenericFormatOp<"gather_nd"> {
  let summary = "gather slices addressed by index tuples";
  let description = [{
    ONNX `GatherND`: the last dimension `q` of `indices` holds coordinates
    into dimensions `[batch_dims, batch_dims + q)` of `data`; the first
    `batch_dims` dimensions of both are shared. The result shape is
    `indices.shape[:-1] ++ data.shape[batch_dims + q:]`. Negative
    coordinates count from the end (out-of-range ones are flagged by
    `normalizeIndex`).

    ```mlir
    %0 = nn.gather_nd %x, %i {batch_dims = 0 : i64}
        : (tensor<2x2xf32>, tensor<2x2xi64>) -> tensor<2xf32>
    ```
  }];
  let arguments = (ins NN_Tensor:$data, NN_IndexTensor:$indices,
                       DefaultValuedAttr<I64Attr, "0">:$batch_dims);
  let results = (outs NN_Tensor:$output);
}

def NN_ScatterNDOp : NN_GenericFormatOp<"scatter_nd", [], NN_OverrideCost> {
  let summary = "scatter slices addressed by index tuples";
  let description = [{
    ONNX `ScatterND`: a copy of `data` where the slice that each index tuple
    (last dimension `q` of `indices`, coordinates into dimensions
    `[batch_dims, batch_dims + q)`) addresses is combined with the
    matching slice of `updates` by `reduction` (`none`, `add`, `mul`,
    `max`, `min`), in row-major order. `updates` has the shape
    `indices.shape[:-1] ++ data.shape[batch_dims + q:]`. ONNX's op has
    `batch_dims = 0`; other values serve the gradient of `nn.gather_nd`.
    Out-of-range coordinates write nothing (flagged by `normalizeIndex`).

    ```mlir
    %0 = nn.scatter_nd %x, %i, %u {reduction = "none"}
        : (tensor<8xf32>, tensor<4x1xi64>, tensor<4xf32>) -> tensor<8xf32>
    ```
  }];
  let arguments = (ins NN_Tensor:$data, NN_IndexTensor:$indices,
                       NN_Tensor:$updates,
                       DefaultValuedAttr<I64Attr, "0">:$batch_dims,
                       DefaultValuedStrAttr<StrAttr, "none">:$reduction);
  let results = (outs NN_Tensor:$output);
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Training support: adjoints of data-movement ops, random masks
//===----------------------------------------------------------------------===//

def NN_SliceGradOp : NN_GenericFormatOp<"slice_grad"> {
  let summary = "scatter a slice back into zeros (the adjoint of slice)";
  let description = [{
    The gradient of `nn.slice`: a tensor of `shape` that is zero except at
    the positions `nn.slice` with the same `starts` and `steps` (and the
    input's shape as `sizes`) reads, which hold the input's elements.

    ```mlir
    %0 = nn.slice_grad %g {shape = array<i64: 2, 6>, starts = array<i64: 0, 1>,
                           steps = array<i64: 1, 2>}
        : (tensor<2x2xf32>) -> tensor<2x6xf32>
    ```
  }];
  let arguments = (ins NN_Tensor:$input, DenseI64ArrayAttr:$shape,
                       DenseI64ArrayAttr:$starts, DenseI64ArrayAttr:$steps);
  let results = (outs NN_Tensor:$output);
}

def NN_GatherGradOp : NN_GenericFormatOp<"gather_grad", [], NN_OverrideCost> {
  let summary = "scatter-add along an axis (the adjoint of gather)";
  let description = [{
    The gradient of `nn.gather` with respect to its data: `grad` has the
    gather's result shape `data[:axis] ++ indices ++ data[axis+1:]`; the
    result has the data shape, with `axis_size` at `axis`, and sums every
    slice of `grad` into the row its index names (negative indices count
    from the end, as in `nn.gather`). Rows no index names are zero.

    ```mlir
    %0 = nn.gather_grad %g, %ids {axis = 0 : i64, axis_size = 100 : i64}
        : (tensor<2x8x16xf32>, tensor<2x8xi64>) -> tensor<100x16xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$grad, NN_IndexTensor:$indices,
                       I64Attr:$axis, I64Attr:$axis_size);
  let results = (outs NN_FloatTensor:$output);
}

def NN_BernoulliOp : NN_Op<"bernoulli", [], NN_CostOpInterface, []> {
  let summary = "seeded Bernoulli mask (training-mode dropout)";
  let description = [{
    Each element is `1.0` with probability `probability` and `0.0`
    otherwise. Element `i` (row-major linear index) is a counter-based hash
    (splitmix64) of `seed` and `i`: the same seed gives the same mask, and
    elements are independent. The result type is not implied by the operands
    and is written out.

    ```mlir
    %m = nn.bernoulli %seed {probability = 0.9 : f64} : (tensor<i64>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins 0DTensorOf<[I64]>:$seed, F64Attr:$probability);
  let results = (outs NN_FloatTensor:$output);
  let assemblyFormat =
      "$seed attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def NN_CheckSizeOp : NN_Op<"check_size"> {
  let summary = "a data-dependent size, checked against the compiled one";
  let description = [{
    The result is `input`. ONNX ops whose output size depends on the input
    values (NonZero, Unique, NonMaxSuppression) are compiled with the size
    the model declares for that output (`expected`, the extent of its
    data-dependent axis); `size` is the size the input values give at run
    time. When they differ, the run fails with a message naming the node
    (the op's location), `op_type` and `output`, and the runtime discards
    the call's results; the compiled op computes only `expected` entries
    (extra ones are dropped, missing ones are zero). `convert-nn-to-linalg`
    lowers it to `nn.check_index_range` of kind `size`.

    ```mlir
    %r = nn.check_size %y, %n {expected = 3 : i64, op_type = "NonZero",
                               output = "result"} : tensor<2x3xi64>, tensor<i64>
    ```
  }];
  let arguments = (ins NN_Tensor:$input, 0DTensorOf<[I64]>:$size,
                       I64Attr:$expected, StrAttr:$op_type, StrAttr:$output);
  let results = (outs NN_Tensor:$result);
  let assemblyFormat =
      "$input `,` $size attr-dict `:` type($input) `,` type($size)";
  let hasVerifier = 1;
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, std::optional<::mlir::Location>,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &inferred) {
      inferred.push_back(adaptor.getInput().getType());
      return ::mlir::success();
    }
  }];
}

//===----------------------------------------------------------------------===//
// Math, comparison, logic, arg and scan ops (NNMathOps.td)
//===----------------------------------------------------------------------===//

include "pipedream/Dialect/NN/IR/NNMathOps.td"

//===----------------------------------------------------------------------===//
// Run-time checks (created by convert-nn-to-linalg, lowered by the targets)
//===----------------------------------------------------------------------===//

def NN_CheckIndexRangeOp
    : Op<NN_Dialect, "check_index_range",
         [MemoryEffects<[MemWrite]>, AllTypesMatch<["min", "max"]>]> {
  let summary = "report indices outside [lower, upper) to the runtime";
  let description = [{
    `min` and `max` are the smallest and largest index a data-dependent
    indexing op (Gather, its gradient, ...) reads at run time. When
    `min < lower` or `max >= upper`, the op records the failure in the
    calling thread's status record (docs/Bundle.md "Run-time checks"),
    unless an earlier check of the same call already did: the offending
    index (`max` when it is too large, else `min`), the bounds, and the
    ONNX node (`node`), op type (`op_type`) and input (`input`) the
    runtime names in its message. It does not stop the computation: the
    indexing op clamps its indices, so what it reads or writes stays in
    bounds, and the runtime discards the call's results. Created on
    tensors by `convert-nn-to-linalg`, lowered by the code generators
    (`cpu-lower-run-time-checks`). `kind` is `index` (an index into input
    `input`) or `size` (from `nn.check_size`: `min` = `max` is the size of
    output `input` the values give, `[lower, upper)` = `[expected,
    expected + 1)`); the status record marks a `size` check by a leading
    U+0001 in its input name (docs/Bundle.md "Run-time checks").

    ```mlir
    nn.check_index_range %min, %max {lower = -61 : i64, upper = 61 : i64,
        node = "/tok/Gather", op_type = "Gather", input = "idx"} : i64
    ```
  }];
  let arguments = (ins AnySignlessInteger:$min, AnySignlessInteger:$max,
                       I64Attr:$lower, I64Attr:$upper, StrAttr:$node,
                       StrAttr:$op_type, StrAttr:$input,
                       DefaultValuedStrAttr<StrAttr, "index">:$kind);
  let assemblyFormat = "$min `,` $max attr-dict `:` type($min)";
  let hasVerifier = 1;
}

#endif // PIPEDREAM_DIALECT_NN_IR_NNOPS_TD
