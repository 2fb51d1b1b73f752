//===- Passes.td - pipedream conversion passes -------------*- tablegen -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Conversions between dialects: `nn` to upstream linalg/tensor/arith/math.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_CONVERSION_PASSES_TD
#define PIPEDREAM_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// NNToLinalg
//===----------------------------------------------------------------------===//

def ConvertNNToLinalgPass : Pass<"convert-nn-to-linalg"> {
  let summary = "Lower every nn op to linalg, tensor, arith and math on tensors";
  let description = [{
    Lowers the `nn` dialect (ONNX semantics on static tensors) to upstream
    structured ops on tensors, ready for one-shot bufferization:

    - contractions become `linalg.matmul` / `linalg.batch_matmul`
      (Gemm transposes as matmul indexing maps), convolutions the named
      `linalg.conv_*` ops (grouped and depthwise variants where upstream has
      them, a `linalg.generic` otherwise) on a `tensor.pad`ded input;
    - pooling becomes `linalg.pooling_*` (padding with -inf for max, zeros
      plus an exact per-window divisor for average);
    - softmax becomes `linalg.softmax` (decomposed into max-subtracting
      generics unless `decompose-softmax=false`);
    - elementwise ops become `linalg.generic` with numpy broadcasting maps
      and `arith`/`math` bodies; reductions `linalg.reduce`;
    - shape ops become `tensor` reshapes, slices, pads and concatenations,
      `linalg.transpose` and `linalg.broadcast`;
    - the training-support ops: `slice_grad` a strided `tensor.insert_slice`
      into zeros, `gather_grad` an `scf.for` over the indices adding one
      slice per index in place, `bernoulli` a generic hashing `linalg.index`.

    Every `nn` op is illegal afterwards but `nn.check_index_range`: an op
    without a lowering fails the pass with an error at its location.

    Ops that index with data (`gather`, `gather_grad`) clamp each index into
    its dimension, so no access leaves its tensor, and check the index
    tensor once, before the access: a min/max reduction over it feeding
    `nn.check_index_range` (the code generator turns it into a write of the
    runtime's status record, docs/Bundle.md "Run-time checks").

    `math.erf` (from `nn.erf` and exact `nn.gelu`) has no LLVM intrinsic: on
    CPU run `convert-math-to-libm` before `convert-to-llvm`.

    ```mlir
    %0 = nn.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    // becomes
    %e = tensor.empty() : tensor<2x3xf32>
    %0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                          affine_map<(d0, d1) -> (d1)>,
                                          affine_map<(d0, d1) -> (d0, d1)>], ...}
        ins(%a, %b : tensor<2x3xf32>, tensor<3xf32>) outs(%e : tensor<2x3xf32>) {...}
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
  ];
  let options = [
    Option<"decomposeSoftmax", "decompose-softmax", "bool", /*default=*/"true",
           "Decompose linalg.softmax into linalg.generic ops (max-subtract, "
           "exp, sum, divide), which the CPU pipeline can lower">,
  ];
}

#endif // PIPEDREAM_CONVERSION_PASSES_TD
