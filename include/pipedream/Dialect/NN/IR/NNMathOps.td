//===- NNMathOps.td - nn math, comparison and scan ops -----*- tablegen -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Elementwise math (trigonometric and hyperbolic functions, rounding,
// reciprocal, abs, sign), the activations beyond relu/gelu, comparisons and
// boolean logic, binary max/min/mod/prelu, min/prod reductions, arg-max/min
// and cumulative sums. Included from NNOps.td (same dialect, same canonical
// forms). Ops with integer or boolean results (comparisons, is_nan, arg_max)
// are not differentiable: no gradient flows through them. floor, ceil,
// round and sign have a zero derivative (PyTorch's convention).
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_DIALECT_NN_IR_NNMATHOPS_TD
#define PIPEDREAM_DIALECT_NN_IR_NNMATHOPS_TD

/// `y = f(x)` elementwise on floats or integers; same type in and out.
class NN_UnaryNumericOp<string mnemonic>
    : NN_Op<mnemonic, [SameOperandsAndResultType], NN_CostOpInterface,
            [InferTypeOpInterface]> {
  let arguments = (ins NN_Tensor:$input);
  let results = (outs NN_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

/// `y = f(x)` elementwise, an `i1` result of the operand's shape.
class NN_UnaryPredicateOp<string mnemonic> : NN_GenericFormatOp<mnemonic> {
  let arguments = (ins NN_FloatTensor:$input);
  let results = (outs NN_BoolTensor:$output);
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
// Trigonometric and hyperbolic functions
//===----------------------------------------------------------------------===//

class NN_MathUnaryOp<string mnemonic, string onnx, string formula>
    : NN_UnaryFloatOp<mnemonic> {
  let summary = "elementwise " # formula;
  let description = "ONNX `" # onnx # "`: `output = " # formula # "`." # [{

    ```mlir
    %0 = nn.}] # mnemonic # [{ %x : tensor<4xf32>
    ```
  }];
}

def NN_SinOp : NN_MathUnaryOp<"sin", "Sin", "sin(input)">;
def NN_CosOp : NN_MathUnaryOp<"cos", "Cos", "cos(input)">;
def NN_TanOp : NN_MathUnaryOp<"tan", "Tan", "tan(input)">;
def NN_AsinOp : NN_MathUnaryOp<"asin", "Asin", "asin(input)">;
def NN_AcosOp : NN_MathUnaryOp<"acos", "Acos", "acos(input)">;
def NN_AtanOp : NN_MathUnaryOp<"atan", "Atan", "atan(input)">;
def NN_SinhOp : NN_MathUnaryOp<"sinh", "Sinh", "sinh(input)">;
def NN_CoshOp : NN_MathUnaryOp<"cosh", "Cosh", "cosh(input)">;
def NN_AsinhOp : NN_MathUnaryOp<"asinh", "Asinh", "asinh(input)">;
def NN_AcoshOp : NN_MathUnaryOp<"acosh", "Acosh", "acosh(input)">;
def NN_AtanhOp : NN_MathUnaryOp<"atanh", "Atanh", "atanh(input)">;

//===----------------------------------------------------------------------===//
// Rounding, reciprocal, abs, sign
//===----------------------------------------------------------------------===//

def NN_ReciprocalOp : NN_MathUnaryOp<"reciprocal", "Reciprocal", "1 / input">;
def NN_FloorOp : NN_MathUnaryOp<"floor", "Floor", "floor(input)">;
def NN_CeilOp : NN_MathUnaryOp<"ceil", "Ceil", "ceil(input)">;
def NN_RoundOp
    : NN_MathUnaryOp<"round", "Round",
                     "input rounded to the nearest integer, halves to even">;

def NN_AbsOp : NN_UnaryNumericOp<"abs"> {
  let summary = "elementwise absolute value";
  let description = [{
    ONNX `Abs` (floats and signed integers; the absolute value of the most
    negative integer wraps to itself, as in numpy).

    ```mlir
    %0 = nn.abs %x : tensor<4xf32>
    ```
  }];
}

def NN_SignOp : NN_UnaryNumericOp<"sign"> {
  let summary = "elementwise sign (-1, 0 or 1)";
  let description = [{
    ONNX `Sign`: `-1` for negative, `0` for zero, `1` for positive input
    (NaN stays NaN).

    ```mlir
    %0 = nn.sign %x : tensor<4xf32>
    ```
  }];
}

def NN_IsNaNOp : NN_UnaryPredicateOp<"is_nan"> {
  let summary = "elementwise NaN test";
  let description = [{
    ONNX `IsNaN`.

    ```mlir
    %0 = nn.is_nan %x : (tensor<4xf32>) -> tensor<4xi1>
    ```
  }];
}

def NN_IsInfOp : NN_UnaryPredicateOp<"is_inf"> {
  let summary = "elementwise infinity test";
  let description = [{
    ONNX `IsInf`: true for `+inf` when `detect_positive` and for `-inf` when
    `detect_negative`.

    ```mlir
    %0 = nn.is_inf %x {detect_negative = false} : (tensor<4xf32>) -> tensor<4xi1>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input,
                       DefaultValuedAttr<BoolAttr, "true">:$detect_negative,
                       DefaultValuedAttr<BoolAttr, "true">:$detect_positive);
}

def NN_NotOp : NN_Op<"not", [SameOperandsAndResultType], NN_CostOpInterface,
                     [InferTypeOpInterface]> {
  let summary = "elementwise logical negation";
  let description = [{
    ONNX `Not`.

    ```mlir
    %0 = nn.not %b : tensor<4xi1>
    ```
  }];
  let arguments = (ins NN_BoolTensor:$input);
  let results = (outs NN_BoolTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

//===----------------------------------------------------------------------===//
// Activations
//===----------------------------------------------------------------------===//

def NN_SoftplusOp : NN_UnaryFloatOp<"softplus"> {
  let summary = "elementwise softplus";
  let description = [{
    ONNX `Softplus`: `output = log(1 + exp(input))`, computed as
    `max(x, 0) + log1p(exp(-|x|))` so it does not overflow.

    ```mlir
    %0 = nn.softplus %x : tensor<4xf32>
    ```
  }];
}

def NN_SoftsignOp : NN_UnaryFloatOp<"softsign"> {
  let summary = "elementwise softsign";
  let description = [{
    ONNX `Softsign`: `output = input / (1 + |input|)`.

    ```mlir
    %0 = nn.softsign %x : tensor<4xf32>
    ```
  }];
}

def NN_EluOp : NN_UnaryFloatOp<"elu"> {
  let summary = "elementwise exponential linear unit";
  let description = [{
    ONNX `Elu`: `x > 0 ? x : alpha * (exp(x) - 1)`.

    ```mlir
    %0 = nn.elu %x {alpha = 1.0 : f64} : tensor<4xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input,
                       DefaultValuedAttr<F64Attr, "1.0">:$alpha);
}

def NN_SeluOp : NN_UnaryFloatOp<"selu"> {
  let summary = "elementwise scaled exponential linear unit";
  let description = [{
    ONNX `Selu`: `gamma * (x > 0 ? x : alpha * (exp(x) - 1))`.

    ```mlir
    %0 = nn.selu %x {alpha = 1.67326 : f64, gamma = 1.0507 : f64} : tensor<4xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input,
                       DefaultValuedAttr<F64Attr, "1.67326319217681884765625">:$alpha,
                       DefaultValuedAttr<F64Attr, "1.05070102214813232421875">:$gamma);
}

def NN_CeluOp : NN_UnaryFloatOp<"celu"> {
  let summary = "elementwise continuously differentiable exponential linear unit";
  let description = [{
    ONNX `Celu`: `max(0, x) + min(0, alpha * (exp(x / alpha) - 1))`;
    `alpha` is non-zero.

    ```mlir
    %0 = nn.celu %x {alpha = 2.0 : f64} : tensor<4xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input,
                       DefaultValuedAttr<F64Attr, "1.0">:$alpha);
  let hasVerifier = 1;
}

def NN_HardSigmoidOp : NN_UnaryFloatOp<"hard_sigmoid"> {
  let summary = "elementwise piecewise-linear sigmoid";
  let description = [{
    ONNX `HardSigmoid`: `max(0, min(1, alpha * x + beta))`.

    ```mlir
    %0 = nn.hard_sigmoid %x {alpha = 0.2 : f64, beta = 0.5 : f64} : tensor<4xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input,
                       DefaultValuedAttr<F64Attr, "0.2">:$alpha,
                       DefaultValuedAttr<F64Attr, "0.5">:$beta);
}

def NN_HardSwishOp : NN_UnaryFloatOp<"hard_swish"> {
  let summary = "elementwise hard swish";
  let description = [{
    ONNX `HardSwish`: `x * max(0, min(1, x / 6 + 1 / 2))`.

    ```mlir
    %0 = nn.hard_swish %x : tensor<4xf32>
    ```
  }];
}

def NN_ThresholdedReluOp : NN_UnaryFloatOp<"thresholded_relu"> {
  let summary = "elementwise thresholded rectified linear unit";
  let description = [{
    ONNX `ThresholdedRelu`: `x > alpha ? x : 0`.

    ```mlir
    %0 = nn.thresholded_relu %x {alpha = 1.0 : f64} : tensor<4xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input,
                       DefaultValuedAttr<F64Attr, "1.0">:$alpha);
}

def NN_ShrinkOp : NN_UnaryFloatOp<"shrink"> {
  let summary = "elementwise soft/hard shrinkage";
  let description = [{
    ONNX `Shrink`: `x < -lambd ? x + bias : (x > lambd ? x - bias : 0)`.

    ```mlir
    %0 = nn.shrink %x {bias = 0.0 : f64, lambd = 1.5 : f64} : tensor<4xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input,
                       DefaultValuedAttr<F64Attr, "0.0">:$bias,
                       DefaultValuedAttr<F64Attr, "0.5">:$lambd);
  let hasVerifier = 1;
}

def NN_PReluOp : NN_BroadcastBinaryOp<"prelu"> {
  let summary = "elementwise parametric rectified linear unit";
  let description = [{
    ONNX `PRelu`: `lhs < 0 ? rhs * lhs : lhs` with the slope `rhs`
    broadcast to the input (the importer checks it broadcasts
    unidirectionally).

    ```mlir
    %0 = nn.prelu %x, %slope : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$lhs, NN_FloatTensor:$rhs);
  let results = (outs NN_FloatTensor:$output);
}

//===----------------------------------------------------------------------===//
// Binary max, min, mod
//===----------------------------------------------------------------------===//

def NN_MaxOp : NN_BroadcastBinaryOp<"max", [Commutative]> {
  let summary = "elementwise maximum with broadcasting";
  let description = [{
    ONNX `Max` of two operands (the importer chains the variadic form);
    a NaN operand gives NaN, as numpy's `maximum`.

    ```mlir
    %0 = nn.max %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    ```
  }];
}

def NN_MinOp : NN_BroadcastBinaryOp<"min", [Commutative]> {
  let summary = "elementwise minimum with broadcasting";
  let description = [{
    ONNX `Min` of two operands; a NaN operand gives NaN.

    ```mlir
    %0 = nn.min %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    ```
  }];
}

def NN_ModOp : NN_BroadcastBinaryOp<"mod"> {
  let summary = "elementwise remainder with broadcasting";
  let description = [{
    ONNX `Mod`. With `fmod` the remainder takes the dividend's sign (C
    `fmod`); without it (integers only) the divisor's sign (Python `%`).
    An integer remainder by zero is 0 (numpy's result).

    ```mlir
    %0 = nn.mod %a, %b {fmod = true} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    ```
  }];
  let arguments = (ins NN_Tensor:$lhs, NN_Tensor:$rhs,
                       DefaultValuedAttr<BoolAttr, "false">:$fmod);
  let hasVerifier = 1;
}

def NN_BitShiftOp : NN_BroadcastBinaryOp<"bit_shift"> {
  let summary = "elementwise bit shift with broadcasting";
  let description = [{
    ONNX `BitShift` (unsigned integers): `lhs << rhs` with `left`, else the
    logical `lhs >> rhs`. A shift by the bit width or more gives 0 (numpy's
    result; LLVM's shifts would be poison).

    ```mlir
    %0 = nn.bit_shift %a, %b {left = true} : (tensor<3xui8>, tensor<3xui8>) -> tensor<3xui8>
    ```
  }];
  let arguments = (ins NN_IntegerTensor:$lhs, NN_IntegerTensor:$rhs,
                       BoolAttr:$left);
  let results = (outs NN_IntegerTensor:$output);
}

//===----------------------------------------------------------------------===//
// Comparisons and logic
//===----------------------------------------------------------------------===//

class NN_CompareOp<string mnemonic, string onnx, string formula>
    : NN_BroadcastBinaryOp<mnemonic, [], /*boolResult=*/1> {
  let summary = "elementwise " # formula # " with broadcasting";
  let description = "ONNX `" # onnx # "`: `output = (" # formula #
                    ")` as `i1` (false when either side is NaN)." # [{

    ```mlir
    %0 = nn.}] # mnemonic # [{ %a, %b : (tensor<4xf32>, tensor<f32>) -> tensor<4xi1>
    ```
  }];
  let results = (outs NN_BoolTensor:$output);
}

def NN_LessOp : NN_CompareOp<"less", "Less", "lhs < rhs">;
def NN_LessEqualOp : NN_CompareOp<"less_equal", "LessOrEqual", "lhs <= rhs">;
def NN_GreaterOp : NN_CompareOp<"greater", "Greater", "lhs > rhs">;
def NN_GreaterEqualOp
    : NN_CompareOp<"greater_equal", "GreaterOrEqual", "lhs >= rhs">;

class NN_LogicOp<string mnemonic, string onnx>
    : NN_BroadcastBinaryOp<mnemonic, [Commutative], /*boolResult=*/1> {
  let summary = "elementwise logical " # mnemonic # " with broadcasting";
  let description = "ONNX `" # onnx # "` on booleans." # [{

    ```mlir
    %0 = nn.}] # mnemonic # [{ %a, %b : (tensor<2x4xi1>, tensor<4xi1>) -> tensor<2x4xi1>
    ```
  }];
  let arguments = (ins NN_BoolTensor:$lhs, NN_BoolTensor:$rhs);
  let results = (outs NN_BoolTensor:$output);
}

def NN_AndOp : NN_LogicOp<"and", "And">;
def NN_OrOp : NN_LogicOp<"or", "Or">;
def NN_XorOp : NN_LogicOp<"xor", "Xor">;

//===----------------------------------------------------------------------===//
// Reductions, arg-max/min, cumulative sum
//===----------------------------------------------------------------------===//

def NN_ReduceMinOp : NN_ReduceOp<"reduce_min"> {
  let summary = "minimum over axes";
  let description = [{
    ```mlir
    %0 = nn.reduce_min %x {axes = array<i64: 1>, keepdims = false}
        : (tensor<2x8xf32>) -> tensor<2xf32>
    ```
  }];
}

def NN_ReduceProdOp : NN_ReduceOp<"reduce_prod"> {
  let summary = "product over axes";
  let description = [{
    ```mlir
    %0 = nn.reduce_prod %x {axes = array<i64: 0>, keepdims = true}
        : (tensor<2x8xf32>) -> tensor<1x8xf32>
    ```
  }];
}

class NN_ArgReduceOp<string mnemonic, string onnx, string what>
    : NN_GenericFormatOp<mnemonic> {
  let summary = "index of the " # what # " along an axis";
  let description = "ONNX `" # onnx # "`: the `i64` index of the " # what #
                    [{ along `axis` (the first one on ties, the last with
    `select_last_index`); `keepdims` keeps `axis` with size 1.

    ```mlir
    %0 = nn.}] # mnemonic # [{ %x {axis = 1 : i64, keepdims = false}
        : (tensor<2x8xf32>) -> tensor<2xi64>
    ```
  }];
  let arguments = (ins NN_Tensor:$input, I64Attr:$axis,
                       DefaultValuedAttr<BoolAttr, "true">:$keepdims,
                       DefaultValuedAttr<BoolAttr, "false">:$select_last_index);
  let results = (outs TensorOf<[I64]>:$output);
}

def NN_ArgMaxOp : NN_ArgReduceOp<"arg_max", "ArgMax", "maximum">;
def NN_ArgMinOp : NN_ArgReduceOp<"arg_min", "ArgMin", "minimum">;

def NN_CumSumOp : NN_Op<"cumsum", [SameOperandsAndResultType], NN_OverrideCost,
                        [InferTypeOpInterface]> {
  let summary = "cumulative sum along an axis";
  let description = [{
    ONNX `CumSum` with the axis resolved: `output[i] = sum of input[j]` for
    `j <= i` along `axis` (`j < i` when `exclusive`; `j >= i` / `j > i`
    when `reverse`).

    ```mlir
    %0 = nn.cumsum %x {axis = 1 : i64, exclusive = false, reverse = true}
        : tensor<2x8xf32>
    ```
  }];
  let arguments = (ins NN_Tensor:$input, I64Attr:$axis,
                       DefaultValuedAttr<BoolAttr, "false">:$exclusive,
                       DefaultValuedAttr<BoolAttr, "false">:$reverse);
  let results = (outs NN_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def NN_TriluOp : NN_GenericFormatOp<"trilu"> {
  let summary = "upper or lower triangle of the last two dimensions";
  let description = [{
    ONNX `Trilu`: keeps `input[..., i, j]` where `j - i >= k` (`upper`) or
    `j - i <= k` (lower) and zeroes the rest; `k` is a run-time scalar.

    ```mlir
    %0 = nn.trilu %x, %k {upper = false}
        : (tensor<2x4x5xf32>, tensor<i64>) -> tensor<2x4x5xf32>
    ```
  }];
  let arguments = (ins NN_Tensor:$input, 0DTensorOf<[I64]>:$k,
                       DefaultValuedAttr<BoolAttr, "true">:$upper);
  let results = (outs NN_Tensor:$output);
}

def NN_TopKOp : NN_GenericFormatOp<"top_k", [], NN_OverrideCost> {
  let summary = "the k largest (or smallest) elements along an axis";
  let description = [{
    ONNX `TopK` with a constant `k`: `values` and their `i64` `indices`
    along `axis`, sorted (largest first, or smallest first without
    `largest`); equal values keep their input order. NaN counts as larger
    than every number (numpy's sort order).

    ```mlir
    %v, %i = nn.top_k %x {axis = 1 : i64, k = 2 : i64}
        : (tensor<3x5xf32>) -> (tensor<3x2xf32>, tensor<3x2xi64>)
    ```
  }];
  let arguments = (ins NN_Tensor:$input, I64Attr:$axis, I64Attr:$k,
                       DefaultValuedAttr<BoolAttr, "true">:$largest);
  let results = (outs NN_Tensor:$values, TensorOf<[I64]>:$indices);
}

#endif // PIPEDREAM_DIALECT_NN_IR_NNMATHOPS_TD
