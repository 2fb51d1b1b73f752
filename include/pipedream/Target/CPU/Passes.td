//===- Passes.td - CPU code generation passes --------------*- tablegen -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The passes pipedream adds to the upstream CPU lowering (bufferization,
// loops, LLVM dialect). The whole pipeline is `pipedream-cpu-lowering`
// (see CPUCodegen.h); each pass here can also run alone in pipedream-opt.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_TARGET_CPU_PASSES_TD
#define PIPEDREAM_TARGET_CPU_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// cpu-merge-equal-functions
//===----------------------------------------------------------------------===//

def MergeEqualFunctionsPass
    : Pass<"cpu-merge-equal-functions", "mlir::ModuleOp"> {
  let summary = "Compile public functions with equal bodies once";
  let description = [{
    Runs first in the CPU lowering, on tensor IR. Public functions (bundle
    functions) that are equal apart from their names and locations are
    lowered once: equal function types, equal argument and result
    attributes, equal bodies (the same operations with the same attributes,
    types and use-def structure, nested regions included). The first of
    them in module order keeps its body; every other one is replaced by
    its exported entry wrapper, which forwards its buffer array to the
    first one's:

    ```mlir
    func.func @pipedream_stage3_F(%buffers: !llvm.ptr)
        attributes {pipedream.cpu.export} {
      func.call @pipedream_stage1_F(%buffers) : (!llvm.ptr) -> ()
      return
    }
    ```

    so program.so still exports one symbol per bundle function and the
    bundle ABI (docs/Bundle.md) is unchanged. A private declaration of the
    replaced wrapper (a native rank entry calls it) is taken over by the
    forwarder; a `func.call` of a replaced function calls the kept one. A
    function that anything but a `func.call` names (a `pipe.program` still
    in the module names its stages) is not replaced.

    The stages of a pipeline that hold the same number of identical blocks
    (stages 1 to 6 of a 48-block GPT on 8 ranks) differ only in the weights
    passed to them, so they are lowered and compiled once (issue 16).
    Weights are arguments; anything that does differ in the body (a
    constant, an attribute such as a check's ONNX node name, a callee)
    keeps the functions apart. The model's and the schedule's annotations
    on the function, its arguments and results are not compared: attributes
    named `nn.*` and `onnx.*` (names and initial values of weights, which
    the bundle has taken before and pipedream-compile removes before the
    lowering) and `pipe.*` (stages, sends); no lowering reads them.

    A function is not merged into another when its wrapper's name is taken
    by anything but a declaration of the wrapper: that is an error.
  }];
  let options = [
    Option<"symbolPrefix", "symbol-prefix", "std::string",
           /*default=*/"\"pipedream_\"",
           "Prefix of the exported wrapper symbols (as cpu-generate-entry-points)">,
  ];
  let dependentDialects = ["mlir::LLVM::LLVMDialect",
                           "mlir::func::FuncDialect"];
  let statistics = [
    Statistic<"numMerged", "merged", "Functions replaced by a forwarder to an equal one">,
  ];
}

//===----------------------------------------------------------------------===//
// cpu-lower-conv-to-gemm
//===----------------------------------------------------------------------===//

def LowerConvToGemmPass : Pass<"cpu-lower-conv-to-gemm", "mlir::ModuleOp"> {
  let summary = "Rewrite 2-D convolutions as im2col + a contraction";
  let description = [{
    Rewrites `linalg.conv_2d_nchw_fchw`, `linalg.conv_2d_nhwc_hwcf` and
    `linalg.conv_2d_nhwc_fhwc` on tensors into an im2col `linalg.generic`
    followed by a matmul-like contraction (upstream `rewriteInIm2Col`), so
    that `cpu-lower-gemm-to-blas` turns the convolution's arithmetic into
    BLAS calls after bufferization.

    For NCHW x FCHW with one float element type (what NNToLinalg makes) the
    im2col is the pass's own: loops n, c, kh, kw, oh, ow with affine input
    indices (oh * sh + kh * dh, ow * sw + kw * dw), collapsed to
    [N, C*KH*KW, OH*OW]; the contraction is upstream's. Upstream loops its
    im2col over the collapsed OH*OW, a division and a remainder per element
    (a small CNN's training step spent 9% of its time in those copies).

    ```mlir
    %0 = linalg.conv_2d_nchw_fchw ins(%x, %w : ...) outs(%init : ...)
    // becomes
    %cols = linalg.generic ... // im2col: [N, C*KH*KW, OH*OW]
    %1 = linalg.generic ...    // [F, C*KH*KW] x [N, C*KH*KW, OH*OW]
    %2 = tensor.expand_shape %1 ...
    ```
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect",
                           "mlir::tensor::TensorDialect",
                           "mlir::arith::ArithDialect"];
}

//===----------------------------------------------------------------------===//
// cpu-fuse-elementwise-ops
//===----------------------------------------------------------------------===//

def FuseElementwiseOpsPass
    : Pass<"cpu-fuse-elementwise-ops", "mlir::func::FuncOp"> {
  let summary = "Fuse elementwise linalg ops, keeping contractions intact";
  let description = [{
    Upstream `linalg-fuse-elementwise-ops` (producer/consumer fusion of
    elementwise `linalg.generic`s, reshape folding by expansion, constant
    folding) with one difference: an elementwise producer is never fused
    into a contraction. Fused into a matmul, a LayerNorm's last step or a
    scaling would turn the matmul's body into something that is no longer a
    multiply-accumulate, and `cpu-vectorize-gemm` / `cpu-lower-gemm-to-blas`
    would no longer recognize it (it would run as scalar loops).

    One addition: an elementwise producer whose results are read by one
    elementwise consumer and otherwise only returned, into a consumer whose
    results are all returned, becomes one `linalg.generic` with the results
    of both (upstream would recompute the producer in the consumer and keep
    its loop). That is the end of an optimizer step: Adam's new moments are
    returned and read by the weight update, and the step becomes one loop
    per weight that reads and writes each array once.
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect",
                           "mlir::affine::AffineDialect",
                           "mlir::tensor::TensorDialect"];
}

//===----------------------------------------------------------------------===//
// cpu-fold-transposes-into-contractions
//===----------------------------------------------------------------------===//

def FoldTransposesIntoContractionsPass
    : Pass<"cpu-fold-transposes-into-contractions", "mlir::func::FuncOp"> {
  let summary = "Read the input of a transpose that feeds a GEMM in place";
  let description = [{
    On tensors. An input of a multiply-accumulate contraction (what the
    GEMM lowerings take: `linalg.matmul`, `batch_matmul`, or a generic whose
    body is one multiply and one add) that a `linalg.transpose` produces is
    replaced by the transpose's input, read through the composed indexing
    map; a named contraction becomes the `linalg.generic` it stands for.
    The GEMM lowering then sees a transposed operand (its unit stride on
    another dimension), which its packing reads directly (`pd_cpu_sgemm`
    transA/transB, BLAS, cuBLAS): no transposed copy is written. Results are
    the same bits: the packed panels hold the same values.

    A training graph has many: the backward of `x W^T` multiplies by the
    transposed weight, and with M micro-batches every weight was transposed
    M times per step. A transpose with other users stays for them. Left
    alone: contractions whose body is not a plain multiply-add (mixed
    precision casts), ops on buffers, transposes feeding other ops, and a
    transpose whose folding would turn a contraction the GEMM lowerings
    take into one they do not (in some operand its M, N or K dimensions no
    longer consecutive, or not in the order of the other operands: a
    convolution's weight gradient reading dY as [N, M, OH, OW], the
    reduction's N and OH x OW apart, became scalar loops).

    Through reshapes (attention's head split and merge): when a contraction
    reads a `tensor.collapse_shape` of a transpose, or its result goes
    through a `tensor.expand_shape` to a transpose, the contraction's loops
    are expanded to the uncollapsed shape (upstream's reshape fusion by
    expansion, for these reshapes only), and the transpose folds. A
    transpose of a contraction's result (its only user) whose init is a
    `linalg.fill` of a `tensor.empty` becomes the contraction's output map:
    it writes the transposed layout (a C with a larger leading dimension).
    The GEMM lowering loops over the batch dimensions that do not merge.
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect",
                           "mlir::tensor::TensorDialect"];
}

//===----------------------------------------------------------------------===//
// cpu-vectorize-gemm
//===----------------------------------------------------------------------===//

def VectorizeGemmPass : Pass<"cpu-vectorize-gemm", "mlir::func::FuncOp"> {
  let summary = "Tile and vectorize f32 contractions into a register-blocked "
                "kernel";
  let description = [{
    Tiles every f32 contraction on tensors whose innermost output dimension
    N is also the innermost dimension of the right-hand side (row-major B
    and C; any batch dimensions, A in either layout) twice with
    `scf::tileUsingSCF`: cache tiles (up to 64 x 64 x K, K tiled only past
    1024), then register tiles of 8 x 32 x 1 (M x N x K; smaller when the
    sizes are not multiples). The register tile is vectorized
    (`linalg::vectorize`), the contraction lowered to outer products (FMAs
    of a broadcast A element and a 32-wide B row into 16 AVX-512
    accumulators) and the accumulator hoisted out of the K loop.

    Only shapes the register tile divides are handled (no masking); other
    contractions are left for `cpu-lower-gemm-to-blas` or the loop lowering.

    ```mlir
    %r = linalg.matmul ins(%a, %b : tensor<512x512xf32>, tensor<512x512xf32>)
                       outs(%c : tensor<512x512xf32>) -> tensor<512x512xf32>
    // becomes scf.for nests over 64x64 tiles and 8x32 register tiles whose
    // K loop carries a vector<8x32xf32> accumulator (as 8 x vector<32xf32>)
    ```
  }];
  let dependentDialects = ["mlir::affine::AffineDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::linalg::LinalgDialect",
                           "mlir::scf::SCFDialect",
                           "mlir::tensor::TensorDialect",
                           "mlir::vector::VectorDialect"];
}

//===----------------------------------------------------------------------===//
// cpu-in-place-updates, cpu-drop-in-place-copies
//===----------------------------------------------------------------------===//

def InPlaceUpdatesPass : Pass<"cpu-in-place-updates", "mlir::ModuleOp"> {
  let summary = "Compute the outputs that update an argument in its buffer";
  let description = [{
    Runs on tensors, before bufferization. A result of a public function
    with `pipedream.in_place = <j>` (set by collectBundle for an output
    whose `updates` names the function's argument j: new weights, gradient
    accumulators, optimizer state) is the new value of argument j, and
    docs/Bundle.md's "in_place" contract says the runtime keeps no second
    buffer for it: the function must leave the value in argument j's
    buffer.

    The returned value becomes `bufferization.materialize_in_destination`
    into argument j, which One-Shot Bufferize either places in that buffer
    (with empty-tensor elimination, the computation itself writes there)
    or refuses: the analysis, not this pass, proves that no read of the old
    value comes after the write. A splat constant (zeroed gradients)
    becomes a `linalg.fill` of the argument. An accumulation
    `arg + contraction(..., outs = zeros)` (a gradient added to its
    accumulator) becomes the contraction with `outs = arg`, so the
    weight-sized product needs no temporary of its own.

    The function gets `pipedream.cpu.in_place_outputs` (per result, the
    argument index or -1) for `cpu-drop-in-place-copies`.

    ```mlir
    func.func @u(%w: tensor<4xf32>, %g: tensor<4xf32>)
        -> (tensor<4xf32> {pipedream.in_place = 0 : i64}) {
      %n = linalg.sub ins(%w, %g : ...) outs(%e : tensor<4xf32>) -> tensor<4xf32>
      return %n : tensor<4xf32>
    }
    // becomes
      %m = bufferization.materialize_in_destination %n in %w
          : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      return %m : tensor<4xf32>
    ```
  }];
  let dependentDialects = ["mlir::bufferization::BufferizationDialect",
                           "mlir::linalg::LinalgDialect"];
}

def DropInPlaceCopiesPass
    : Pass<"cpu-drop-in-place-copies", "mlir::ModuleOp"> {
  let summary = "Remove the out-parameter copies of in-place outputs";
  let description = [{
    Runs after `buffer-results-to-out-params` on the functions
    `cpu-in-place-updates` marked. An in-place output's out-parameter
    receives a `memref.copy` from the argument it updates (whose buffer
    already holds the new value); the copy is erased, so the
    out-parameter is never read or written and the runtime may pass the
    argument's own buffer for it. Anything else using the out-parameter is
    an error: the value did not end up in the argument's buffer.
  }];
  let dependentDialects = ["mlir::memref::MemRefDialect"];
}

//===----------------------------------------------------------------------===//
// cpu-prepare-entry-points
//===----------------------------------------------------------------------===//

def PrepareEntryPointsPass
    : Pass<"cpu-prepare-entry-points", "mlir::ModuleOp"> {
  let summary = "Give every result of a public function its own tensor";
  let description = [{
    Runs on tensors, before bufferization. A public function that returns
    the same value twice (two graph outputs of one node) would need two
    out-parameters aliasing one buffer; `buffer-results-to-out-params`
    cannot express that (and crashes in MLIR 22 when hoisting allocations).
    Every repeated result becomes a copy in a fresh allocation.

    ```mlir
    return %s, %s : tensor<4xf32>, tensor<4xf32>
    // becomes
    %c = bufferization.alloc_tensor() copy(%s) : tensor<4xf32>
    return %s, %c : tensor<4xf32>, tensor<4xf32>
    ```
  }];
  let dependentDialects = ["mlir::bufferization::BufferizationDialect"];
}

//===----------------------------------------------------------------------===//
// cpu-split-empty-tensors
//===----------------------------------------------------------------------===//

def SplitEmptyTensorsPass
    : Pass<"cpu-split-empty-tensors", "mlir::func::FuncOp"> {
  let summary = "Give every use of a `tensor.empty` its own `tensor.empty`";
  let description = [{
    Runs on tensors, right before `eliminate-empty-tensors` and One-Shot
    Bufferize (no canonicalization or CSE in between, which would merge them
    again). CSE folds every `tensor.empty` of one type into one value, so in
    a long chain of layers hundreds of `linalg.fill` / `linalg.matmul`
    destinations are uses of one value: One-Shot Analysis puts them all in
    one alias set and checks every write against every read of it, which
    made both passes cost O(n^2) and more in the number of layers (a
    1000-layer MatMul + Tanh chain: minutes; issue 16). A `tensor.empty`
    has no contents, so one per use means the same: an op with several
    uses is replaced by one clone per use, placed right before its user
    (dynamic sizes dominate the original op, hence the clone).

    CSE merges the zero fills too: in a chain every `linalg.matmul`
    accumulated into one `linalg.fill` of one `tensor.empty`, so all of
    them were one alias set again (One-Shot Analysis k = 3.3 between 500
    and 1000 layers) and all but one bufferized out of place, as an
    allocation and a copy of the zeros. A fill of a `tensor.empty` used
    as the destination (DPS init) of several ops gets one fill (with its
    own `tensor.empty`) per destination use, right before the user; uses
    that only read it keep the original (one buffer, no extra fill).

    ```mlir
    %e = tensor.empty() : tensor<4x16xf32>
    %a = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
    %b = linalg.fill ins(%c1 : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
    // becomes
    %e0 = tensor.empty() : tensor<4x16xf32>
    %a = linalg.fill ins(%c0 : f32) outs(%e0 : tensor<4x16xf32>) -> tensor<4x16xf32>
    %e1 = tensor.empty() : tensor<4x16xf32>
    %b = linalg.fill ins(%c1 : f32) outs(%e1 : tensor<4x16xf32>) -> tensor<4x16xf32>
    ```
  }];
  let dependentDialects = ["mlir::tensor::TensorDialect"];
  let statistics = [
    Statistic<"numClones", "clones", "tensor.empty ops added (one per extra use)">,
  ];
}

//===----------------------------------------------------------------------===//
// cpu-split-deallocs
//===----------------------------------------------------------------------===//

def SplitDeallocsPass : Pass<"cpu-split-deallocs", "mlir::func::FuncOp"> {
  let summary = "Turn a `bufferization.dealloc` of unconditionally owned, "
                "distinct allocations into one `memref.dealloc` each";
  let description = [{
    Runs between `ownership-based-buffer-deallocation` and
    `buffer-deallocation-simplification`. In a straight-line function the
    ownership-based pass puts one `bufferization.dealloc` before the
    return holding every allocation of the block, each with the ownership
    `true`, and nothing retained (the results are out-parameters). The
    simplification's `SplitDeallocWhenNotAliasingAnyOther` then asks, for
    each of the n memrefs, whether it may alias any of the n - 1 others
    (n^2 buffer-origin queries, each building a new dealloc op), which made
    it the costliest MLIR pass on long chains (a 1000-layer MatMul + Tanh
    training step: 5000 allocations; issue 16).

    When a dealloc retains nothing, each of its memrefs is the result of
    its own `memref.alloc` and every condition is the constant `true`,
    the memrefs are distinct allocations that are all freed: that is one
    `memref.dealloc` each (a memref listed twice is freed once), what the
    simplification and `bufferization-lower-deallocations` would produce,
    in linear time. Any other dealloc (a retained value, a view, a block
    argument, a condition decided at run time) is left to the upstream
    passes.

    ```mlir
    %a = memref.alloc() : memref<4xf32>
    %b = memref.alloc() : memref<8xf32>
    bufferization.dealloc (%a, %b : memref<4xf32>, memref<8xf32>) if (%true, %true)
    // becomes
    memref.dealloc %a : memref<4xf32>
    memref.dealloc %b : memref<8xf32>
    ```
  }];
  let dependentDialects = ["mlir::memref::MemRefDialect"];
  let statistics = [
    Statistic<"numSplit", "split", "bufferization.dealloc ops replaced">,
  ];
}

//===----------------------------------------------------------------------===//
// cpu-lower-gemm-to-blas
//===----------------------------------------------------------------------===//

def LowerGemmToBLASPass : Pass<"cpu-lower-gemm-to-blas", "mlir::ModuleOp"> {
  let summary = "Replace f32/f64 linalg contractions on memrefs by CBLAS gemm "
                "calls";
  let description = [{
    Every linalg op with buffer semantics that is a contraction
    (`linalg.matmul`, `linalg.batch_matmul`, transposed variants, matvec, and
    `linalg.generic` with a multiply-accumulate body and projected-permutation
    indexing maps) over statically shaped and strided `f32` or `f64`
    memrefs becomes a call to `cblas_sgemm` / `cblas_dgemm` (row-major),
    one per batch index inside `scf.for` loops.

    Loop dimensions of the same role (several M, N or K dimensions) are
    merged when the memrefs lay them out contiguously, so
    `[B, T, C] x [C, N]` is a single `(B*T) x C x N` GEMM. A contraction
    whose operands cannot be described by leading dimensions with unit
    inner stride is left to the loop lowering.

    When the op's output was zero-filled by the `linalg.fill` right before
    it, the fill is erased and the call uses `beta = 0`.

    With pipedream's kernels (`sgemm=pd_cpu_sgemm` or `pd_cpu_gemm_bf16`),
    a `linalg.generic` right before the op that broadcasts a rank-1 bias
    along the output's last dimension (a Linear layer's bias, when that
    dimension is the GEMM's contiguous N) is erased too: the call becomes
    `pd_cpu_sgemm_epilogue` (`pd_cpu_gemm_bf16_epilogue`) with `beta = 0`
    and the bias pointer, and the kernel adds the bias to each register
    tile after its last update. A `linalg.generic` that is the only reader
    of an output initialized so (zero or bias; directly or through one
    reshape) and computes from it a ReLU (`arith.maximumf` or
    `arith.maxnumf` with +0.0), or, after a zero fill, `+ bias` (the
    MatMul + Add that PyTorch exports for a Linear on 3-D input) and/or
    `+ residual` (a memref laid out as the result; only as `(c + bias) +
    residual`, the kernel's order of additions, and for a single call) with
    or without the ReLU, becomes the call's bias, addend and activation
    arguments: the
    GEMM writes the generic's buffer (through the inverse reshape) and the
    intermediate buffer is removed. CBLAS calls take no epilogue.

    `sgemm=pd_cpu_sgemm` calls pipedream's own packed, register-tiled
    kernel for f32 instead (lib/Target/CPU/Kernels: same arguments as
    `cblas_sgemm`, AVX-512 or AVX2 chosen by cpuid at run time, linked into
    every program.so); `f64=false` leaves f64 contractions to the loop
    lowering (no OpenBLAS). `sgemm=pd_cpu_gemm_bf16` (`--dtype bf16`) calls
    the kernel's bf16 GEMM, same arguments, the CUDA target's semantics: A
    and B rounded to bf16, f32 accumulation, the product rounded to bf16
    and added to the f32 C (`beta`).

    ```mlir
    linalg.matmul ins(%a, %b : memref<64x32xf32>, memref<32x16xf32>)
                  outs(%c : memref<64x16xf32>)
    // becomes
    func.call @cblas_sgemm(%c101, %c111, %c111, %c64, %c16, %c32, %one,
        %pa, %c32, %pb, %c16, %one, %pc, %c16) : (...) -> ()
    ```
  }];
  let options = [
    Option<"sgemm", "sgemm", "std::string", /*default=*/"\"cblas_sgemm\"",
           "Callee of f32 contractions: cblas_sgemm (OpenBLAS) or "
           "pd_cpu_sgemm (pipedream's kernel) or pd_cpu_gemm_bf16 (its bf16 "
           "GEMM: bf16 operands and product, f32 accumulation)">,
    Option<"lowerF64", "f64", "bool", /*default=*/"true",
           "Lower f64 contractions to cblas_dgemm">,
  ];
  let dependentDialects = ["mlir::LLVM::LLVMDialect",
                           "mlir::func::FuncDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::scf::SCFDialect",
                           "mlir::arith::ArithDialect"];
}

//===----------------------------------------------------------------------===//
// cpu-lower-strided-copies
//===----------------------------------------------------------------------===//

def ApproximateMathPass
    : Pass<"cpu-approximate-math", "mlir::ModuleOp"> {
  let summary = "Replace f32 transcendental math ops by polynomial "
                "approximations";
  let description = [{
    `math.exp`, `math.erf`, `math.tanh`, `math.log` and their relatives on
    f32 otherwise become scalar libm calls, which LLVM cannot vectorize:
    GELU (erf) and softmax (exp) then run one element at a time. Upstream's
    polynomial approximations (the ones MLIR's own CPU pipelines use) are
    plain arithmetic that vectorizes; they agree with libm to a few ulp,
    well inside the ONNX conformance tolerances the tests hold us to. Other
    element types keep libm.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::math::MathDialect",
                           "mlir::vector::VectorDialect"];
}

def LowerStridedCopiesPass
    : Pass<"cpu-lower-strided-copies", "mlir::ModuleOp"> {
  let summary = "Turn memref.copy between non-contiguous memrefs into "
                "linalg.copy";
  let description = [{
    The LLVM lowering of `memref.copy` calls `memrefCopy` from MLIR's C runner
    utilities unless both sides are contiguous; compiled bundles do not link
    those utilities. This pass rewrites such copies into `linalg.copy`, which
    the loop lowering expands in place. Contiguous copies stay `memref.copy`
    (they become `llvm.memcpy`).
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect"];
}

//===----------------------------------------------------------------------===//
// cpu-lower-reductions-to-loops
//===----------------------------------------------------------------------===//

def LowerReductionsToLoopsPass
    : Pass<"cpu-lower-reductions-to-loops", "mlir::func::FuncOp"> {
  let summary = "Lower innermost reductions to loops that keep the "
                "accumulator in a register";
  let description = [{
    Runs on buffers, before `cpu-outline-kernels` (so that the alias check
    below sees the buffers the ops share, not a kernel's separate arguments)
    and `convert-linalg-to-loops`. A linalg op
    with one output whose reduction loops are its innermost ones (a sum,
    max or variance along the last dimension: LayerNorm's statistics,
    softmax's max and sum, a row-wise loss) becomes the same loops as
    `convert-linalg-to-loops` makes, except that the output element is
    loaded once before the reduction loops, carried through them as an
    `scf.for` iter_arg and stored once after them. Without it every step
    loads and stores the output element: LLVM cannot keep it in a register,
    since the output may alias the inputs as far as it knows, and a
    reduction through memory cannot be vectorized.

    With `reassociate` (the default), an innermost sum or product of at
    least 32 static steps is split into 16 lanes: the steps go round-robin
    to the lanes, the lanes are combined pairwise in a fixed tree and the
    remaining steps are added in order. With `vectorize` (the default) the
    lanes are the elements of `vector<16xT>` values when the body allows
    (every load contiguous along the reduction in its last index or not
    depending on it, elementwise ops): vector loads, vector ops and one
    vector accumulator, the 16 lanes extracted after the loop. Otherwise
    they are 16 scalar chains for LLVM's SLP vectorizer (which paired them
    into shuffled halves of each load: a row sum ran at a fraction of the
    vector speed). Both sum in the same order: the same bits, but for
    where LLVM contracts a product and a sum into an FMA (pipedream compiles
    with contraction on), which differs between the scalar and the vector
    code. The order is fixed in the IR, with no fast-math
    flag, so the result does not depend on LLVM's choices (codegen threads,
    outlining, -O); it differs from the sequential sum by rounding only, as
    any blocked or vectorized sum (onnxruntime's, PyTorch's, and pipedream's
    GEMM kernel) does. Max and min reductions are exact in any order and are
    left as they are.

    An op whose innermost loop is a reduction but whose parallel loops are
    not all outside its reduction loops (a per-channel sum over N, H, W of
    [N, C, H, W]: loops N, C, H, W) first has its parallel loops moved out
    (C, N, H, W; `linalg::interchangeGenericOp`): the innermost loops and
    the order of each output element's terms stay the same.

    Ops it leaves to `convert-linalg-to-loops`: on tensors, several outputs,
    an innermost parallel loop (a column sum: vectorized as an elementwise
    loop already), an input that is a view of the output's buffer.
  }];
  let options = [
    Option<"reassociate", "reassociate", "bool", /*default=*/"true",
           "Split the innermost sum or product into 16 lanes in a fixed "
           "order (vectorizable)">,
    Option<"vectorize", "vectorize", "bool", /*default=*/"true",
           "Carry the 16 lanes in vector<16xT> values where the body allows "
           "(the same bits as the scalar lanes)">,
  ];
  let dependentDialects = ["mlir::scf::SCFDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::vector::VectorDialect"];
}

//===----------------------------------------------------------------------===//
// cpu-generate-entry-points
//===----------------------------------------------------------------------===//

def LowerRunTimeChecksPass
    : Pass<"cpu-lower-run-time-checks", "mlir::ModuleOp"> {
  let summary = "Turn `nn.check_index_range` into writes of the status record";
  let description = [{
    Adds the run-time status channel of docs/Bundle.md ("Run-time checks")
    to the module: a thread-local record

    ```c
    struct { int64_t failed, value, lower, upper; const char *info; }
    ```

    (`info` points at three NUL-terminated strings: the ONNX op type, node
    and input name), zero-initialized, and the exported accessor
    `pipedream_run_time_status()` returning its address (marked
    `pipedream.cpu.export`). Each `nn.check_index_range` becomes: if
    `min < lower || max >= upper` and the record's `failed` is 0, store 1,
    the offending index (`max` if too large, else `min`), the bounds and
    `info`. The runtime reads and clears the record after every call.

    With `drop-checks` the checks are erased instead and no record is
    added (`pipedream-compile --no-run-time-checks`; the CUDA pipeline
    lowers its checks itself, `cuda-lower-run-time-checks`): the runtime
    treats a library without the accessor as one whose calls never fail a
    check.
  }];
  let options = [
    Option<"dropChecks", "drop-checks", "bool", /*default=*/"false",
           "Erase the checks instead of lowering them">,
  ];
  let dependentDialects = ["mlir::LLVM::LLVMDialect",
                           "mlir::func::FuncDialect", "mlir::scf::SCFDialect",
                           "mlir::arith::ArithDialect"];
}

def GenerateEntryPointsPass
    : Pass<"cpu-generate-entry-points", "mlir::ModuleOp"> {
  let summary = "Add the `pipedream_<fn>(void **buffers)` entry wrappers";
  let description = [{
    Runs on bufferized IR whose public functions take only statically
    shaped, identity-layout memrefs and return nothing (after
    `buffer-results-to-out-params`). For every public `func.func @f` it adds

    ```mlir
    func.func @pipedream_f(%buffers: !llvm.ptr) {
      // for each argument i: load buffers[i], build a memref descriptor
      // (allocated = aligned = pointer, offset 0, static sizes, row-major
      // strides) and cast it to the argument's memref type
      func.call @f(%m0, %m1, ...) : (...) -> ()
      return
    }
    ```

    and makes every other function private, so the wrappers are the only
    symbols `program.so` exports (docs/Bundle.md). A function that nothing
    else in the module uses and whose body is one block is not called but
    moved into its wrapper (and erased): a training step's call would pass
    every buffer as a descriptor of 5 + 2 x rank scalars, thousands of
    arguments, on which LLVM's interprocedural passes are quadratic. The casts fold away in
    `reconcile-unrealized-casts` after the LLVM conversion.
  }];
  let options = [
    Option<"symbolPrefix", "symbol-prefix", "std::string",
           /*default=*/"\"pipedream_\"",
           "Prefix of the exported wrapper symbols">,
  ];
  let dependentDialects = ["mlir::LLVM::LLVMDialect",
                           "mlir::func::FuncDialect"];
}

//===----------------------------------------------------------------------===//
// cpu-cache-allocations
//===----------------------------------------------------------------------===//

def BoolMemoryAsBytesPass
    : Pass<"cpu-bool-memory-as-bytes", "mlir::ModuleOp"> {
  let summary = "Load and store i1 values in memory as the bytes they are";
  let description = [{
    Runs on the LLVM dialect. A `memref<...xi1>` (a boolean mask: a causal
    attention mask, a `Where` condition kept for the backward) lowers to
    `llvm.load` / `llvm.store` of `i1`, one byte per element. LLVM's loop
    vectorizer cannot widen those accesses: a `<8 x i1>` in memory is 8
    bits, not 8 bytes, so it loads every element on its own and assembles
    the mask bit by bit (on AVX-512, 2-3 mask-register instructions per
    element: a third of the time of gpt256's softmax rows).

    Each scalar `i1` load becomes a load of the byte and an `llvm.trunc` to
    `i1`, each `i1` store a `llvm.zext` to `i8` and a store of the byte.
    Same memory, same values (an `i1` is stored as the byte 0 or 1, and
    `trunc` reads its low bit); the vectorizer then loads 8 or 16 bytes at
    once. Vector-typed accesses are left as they are (LLVM's `<N x i1>` in
    memory is bit-packed; the memref lowering does not make them).

    ```mlir
    %m = llvm.load %p : !llvm.ptr -> i1
    // becomes
    %b = llvm.load %p : !llvm.ptr -> i8
    %m = llvm.trunc %b : i8 to i1
    ```

    Refuses (an error at the op) a module that still has `memref.load` or
    `memref.store` of `i1`: those would reach LLVM unrewritten.
  }];
  let statistics = [
    Statistic<"numLoads", "loads", "i1 loads made byte loads">,
    Statistic<"numStores", "stores", "i1 stores made byte stores">,
  ];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}

def CacheAllocationsPass
    : Pass<"cpu-cache-allocations", "mlir::ModuleOp"> {
  let summary = "Keep each allocation site's last freed buffer for its next "
                "call";
  let description = [{
    Runs on the LLVM dialect, after `memref.alloc` / `memref.dealloc` became
    `malloc` / `free` calls. A training step allocates the same buffers
    (statically shaped temporaries, many of them megabytes) on every call;
    glibc serves large blocks with fresh `mmap`s or trims its heap after
    `free`, so every step pays page faults and zeroing for each of them
    (measured: more system than user time on a small CNN's step).

    Every `malloc` call site gets an internal slot (an i64 global), and the
    calls become `__pipedream_alloc(size, slot)` / `__pipedream_free(ptr)`
    (internal functions added to the module): a block carries a 16-byte
    header (its slot, its size); `free` parks the block in its slot when
    the slot is empty and the module's parked bytes stay within
    `max-cached-bytes`, else frees it; `alloc` takes the parked block when
    its size matches. Slots change only by atomic exchange and
    compare-and-swap, so concurrent calls are safe without a lock, and no
    process-wide allocator setting changes. A destructor
    (`llvm.mlir.global_dtors`) frees the parked blocks when program.so is
    unloaded.

    Only modules whose allocations are all `malloc` / `free` pairs are
    rewritten (no `aligned_alloc`, no generic allocation functions).

    ```mlir
    %p = llvm.call @malloc(%n) : (i64) -> !llvm.ptr
    llvm.call @free(%p) : (!llvm.ptr) -> ()
    // becomes
    %s = llvm.mlir.addressof @__pipedream_alloc_slot_0 : !llvm.ptr
    %p = llvm.call @__pipedream_alloc(%n, %s) : (i64, !llvm.ptr) -> !llvm.ptr
    llvm.call @__pipedream_free(%p) : (!llvm.ptr) -> ()
    ```
  }];
  let options = [
    Option<"maxCachedBytes", "max-cached-bytes", "int64_t",
           /*default=*/"int64_t(1) << 30",
           "Bytes the module keeps parked at most (default 1 GiB)">,
  ];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}

//===----------------------------------------------------------------------===//
// cpu-fuse-row-loops
//===----------------------------------------------------------------------===//

def FuseRowLoopsPass : Pass<"cpu-fuse-row-loops", "mlir::func::FuncOp"> {
  let summary = "Run consecutive loop nests over the same rows in one nest, "
                "row by row";
  let description = [{
    Runs on buffers, after `cpu-lower-reductions-to-loops` and before
    `cpu-outline-kernels`. A LayerNorm, softmax or loss is a chain of loop
    nests over the same rows (a row sum, then an elementwise op reading it,
    then another row sum...), each a pass over the whole tensor: a
    LayerNorm's backward makes eight, and each pass reads its rows back
    from L2 or memory. This pass runs such a chain as one nest over the
    rows whose body runs each nest's row in turn, while the row is in L1.

    First the function body's linalg ops on buffers with static bounds, and
    copies between identity-layout buffers, become the loops
    `convert-linalg-to-loops` makes of them later. Then consecutive
    top-level `scf.for` nests join a group when:
    - their outer loops (from 0, step 1, constant trip counts, perfectly
      nested up to the fused depth, only pure ops between the levels)
      agree over the fused depth;
    - every load and store to a buffer that a nest of the group writes and
      another one accesses selects the row by the fused loops' induction
      variables as its leading indices, on the buffer itself or through a
      keepdims `expand_shape` view ([8, 128] -> [8, 128, 1]). Then
      iteration (i, j) of one nest and iteration (i', j') != (i, j) of
      another touch different elements of every such buffer, and running
      the nests row by row computes what running them one after the other
      did. A buffer one nest alone accesses (a column sum's, LayerNorm's
      dscale) needs nothing: that nest's iterations keep their order;
    - a group that writes a buffer that is not an allocation of the
      function accesses no other such buffer (the entry point's buffers
      may alias);
    - every op between them is pure or an allocation (moved before the
      group) or a deallocation (left after it); anything else ends the
      group.
    A nest that cannot join but is independent of the group (no buffer
    that one writes is accessed by the other; a column sum's zero fill)
    moves before the group, which goes on. The depth is the deepest at
    which the group is legal (the chain's row dimensions); at most 32 nests
    a group. Nests with other memory effects (calls, GEMMs) are left alone.

    Last, row temporaries shrink: an allocation whose only users are loads
    and stores in one top-level nest (directly or through keepdims
    `expand_shape` views) and its deallocation, all of them inside the
    same d outer loops of the nest (from 0, step 1; not necessarily
    perfectly nested) and indexing the buffer's first d dimensions by
    their induction variables, holds in iteration (i, j) only row (i, j),
    written and read there. It
    becomes one row: those d dimensions of size 1, indexed by 0 (memref<8x
    128x256xf32> -> memref<1x1x256xf32>), which stays in L1 instead of a
    tensor written to memory and read back (a fused LayerNorm backward has
    four such intermediates). This relies on the band's iterations running
    one after the other, as every later pass keeps them.

    ```mlir
    scf.for %i = %c0 to %c8 step %c1 {            // sum of each row
      ... memref.store %s, %sum[%i] ...
    }
    scf.for %i = %c0 to %c8 step %c1 {            // x / sum
      scf.for %k = %c0 to %c64 step %c1 { ... %sum[%i] ... %y[%i, %k] }
    }
    // becomes
    scf.for %i = %c0 to %c8 step %c1 {
      ... memref.store %s, %sum[%i] ...
      scf.for %k = %c0 to %c64 step %c1 { ... %sum[%i] ... %y[%i, %k] }
    }
    ```
  }];
  let dependentDialects = ["mlir::scf::SCFDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::affine::AffineDialect",
                           "mlir::linalg::LinalgDialect"];
  let statistics = [
    Statistic<"numFused", "fused-nests", "Nests merged into the nest before them">,
    Statistic<"numHoisted", "hoisted-nests", "Independent nests moved before a group">,
    Statistic<"numShrunk", "row-temporaries", "Temporaries reduced to the one row a band iteration uses">,
  ];
}

//===----------------------------------------------------------------------===//
// cpu-outline-kernels
//===----------------------------------------------------------------------===//

def OutlineKernelsPass : Pass<"cpu-outline-kernels", "mlir::ModuleOp"> {
  let summary = "Move every loop nest into a function of its own, one "
                "function per distinct nest";
  let description = [{
    Runs on bufferized IR (before `convert-linalg-to-loops`). Every loop nest
    at the top level of a function body (a linalg op on memrefs, an
    `scf.for`/`scf.forall`/`scf.parallel` or `affine.for` without results)
    becomes a call of a private `func.func @__pipedream_kernel_<N>` with
    internal linkage and LLVM's `noinline` (`passthrough`), whose arguments are the values the nest uses from outside
    (memrefs, scalars); constants are cloned into the kernel, so trip counts
    and strides stay constant there. Kernels that print the same (same ops,
    types, attributes and constants) are one function: the identical blocks
    of a transformer compile once.

    Why: LLVM's optimization and instruction selection are superlinear in
    the size of a function, and a training step in one function is
    thousands of loop nests; outlined, every function is small, the module
    can be split over threads, and equal nests are compiled once.

    ```mlir
    func.func @f(%a: memref<4xf32>, %b: memref<4xf32>) {
      linalg.generic {...} ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) {...}
      return
    }
    // becomes
    func.func @f(%a: memref<4xf32>, %b: memref<4xf32>) {
      call @__pipedream_kernel_0(%a, %b) : (memref<4xf32>, memref<4xf32>) -> ()
      return
    }
    func.func private @__pipedream_kernel_0(%a: memref<4xf32>, %b: memref<4xf32>)
        attributes {llvm.linkage = #llvm.linkage<internal>,
                    passthrough = ["noinline"]} {
      linalg.generic {...} ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) {...}
      return
    }
    ```

    A linalg op on tensors (a module that was not bufferized) is an error.
  }];
  let dependentDialects = ["mlir::func::FuncDialect",
                           "mlir::LLVM::LLVMDialect"];
  let statistics = [
    Statistic<"numKernels", "kernels", "Distinct kernel functions created">,
    Statistic<"numCalls", "calls", "Loop nests replaced by a kernel call">,
  ];
}

//===----------------------------------------------------------------------===//
// cpu-plan-temporaries
//===----------------------------------------------------------------------===//

def PlanTemporariesPass
    : Pass<"cpu-plan-temporaries", "mlir::func::FuncOp"> {
  let summary = "Place a function's temporaries in one buffer, reusing the "
                "bytes of those no longer used";
  let description = [{
    Runs on bufferized IR after the deallocation pipeline (and after
    `cpu-outline-kernels`). In a straight-line function the deallocation
    pipeline frees every temporary before the return, so all of them are
    live at once: a GPT block's training step kept 55 MiB of temporaries,
    and each step wrote to every byte of them. Reading and writing that
    much memory is slow when the caches are cold, for example when the
    step runs after other work.

    The pass gives each temporary a live range and places all of them in
    one buffer. Two temporaries whose live ranges overlap get disjoint
    bytes. A temporary is placed when:
    - it is a `memref.alloc` in the function's top-level block, with a
      static shape, the identity layout, the default memory space and an
      integer or float element of whole bytes;
    - it has a `memref.dealloc` in the same block;
    - no value derived from it (a view, an extracted pointer or index,
      anything computed from them) is returned, yielded, passed to a
      successor block or stored to memory.

    The live range runs from the `memref.alloc` to the last operation of
    the block that uses the allocation or any value derived from it. A use
    inside a nested region counts at its parent operation in the block.
    Callees (kernels, the GEMM library, run-time checks) get
    memrefs or pointers as arguments and do not keep them after they
    return. Offsets are chosen greedily, largest first, lowest free offset,
    aligned to 64 bytes (or more when an alloc asks for it). The placed
    temporaries become `memref.view`s of one `memref.alloc` at the start of
    the block, freed before the terminator, and their deallocs go. After
    `cpu-cache-allocations` that buffer is kept from one call to the next,
    as each temporary was before.

    ```mlir
    %a = memref.alloc() : memref<256xf32>
    call @k(%x, %a) : (memref<256xf32>, memref<256xf32>) -> ()
    %b = memref.alloc() : memref<256xf32>
    call @k(%a, %b) : (memref<256xf32>, memref<256xf32>) -> ()
    %c = memref.alloc() : memref<256xf32>
    call @k(%b, %c) : (memref<256xf32>, memref<256xf32>) -> ()
    memref.dealloc %a : memref<256xf32>
    memref.dealloc %b : memref<256xf32>
    memref.dealloc %c : memref<256xf32>
    // becomes (%c reuses %a's bytes)
    %t = memref.alloc() {alignment = 64 : i64} : memref<2048xi8>
    %a = memref.view %t[%c0][] : memref<2048xi8> to memref<256xf32>
    ...
    %c = memref.view %t[%c0][] : memref<2048xi8> to memref<256xf32>
    ```

    Refuses (an error at the op) a function that still has a
    `bufferization.dealloc`: its temporaries' deallocs are not known yet.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::memref::MemRefDialect"];
  let statistics = [
    Statistic<"numPlaced", "placed", "Temporaries placed in the buffer">,
    Statistic<"numKept", "kept", "Temporaries left as they were">,
    Statistic<"bytesBefore", "bytes-before",
              "Bytes of the placed temporaries, all together">,
    Statistic<"bytesAfter", "bytes-after", "Bytes of the buffers made">,
  ];
}

//===----------------------------------------------------------------------===//
// cpu-split-large-functions
//===----------------------------------------------------------------------===//

def SplitLargeFunctionsPass
    : Pass<"cpu-split-large-functions", "mlir::ModuleOp"> {
  let summary = "Cut the straight-line body of a huge LLVM function into "
                "calls of functions of bounded size";
  let description = [{
    Runs last, on the LLVM dialect. After `cpu-outline-kernels` a training
    step is one long block of allocations, kernel and GEMM calls and
    descriptor arithmetic, thousands of operations per hundred layers.
    Several LLVM passes are superlinear in the length of one basic block
    or function (instruction combining renumbers a block on every order
    query, SelectionDAG scheduling and greedy register allocation see every
    value live across every call): a 1000-layer chain spent most of its
    compile time there (issue 16).

    A function with one block of more than twice `max-ops` operations is
    cut into consecutive runs of about `max-ops` operations; each run
    becomes an internal `noinline` function `@<name>.part<N>(!llvm.ptr)`
    called in its place. Values that cross from one run (or from the
    function's arguments and allocas) to another go through a frame, one
    `llvm.alloca` of bytes in the function: stored after their definition,
    loaded at the start of each run that uses them. Frame slots are reused
    once a value's last user has run. Constants (`llvm.mlir.constant`,
    `addressof`, `zero`, `undef`, `poison`) are cloned into each run that
    uses them; allocas stay in the function (they must outlive the runs).
    Functions with several blocks, regions, `stacksave`/`stackrestore`,
    `lifetime` markers or `va_start` are left alone, as is a frame that
    would exceed 1 MiB.

    ```mlir
    llvm.func @f(%buffers: !llvm.ptr) {
      %a = llvm.load %buffers : !llvm.ptr -> !llvm.ptr
      ... (thousands of ops using %a)
      llvm.return
    }
    // becomes
    llvm.func @f(%buffers: !llvm.ptr) {
      %frame = llvm.alloca %c1 x !llvm.array<16 x i8> : (i64) -> !llvm.ptr
      llvm.store %buffers, %frame : !llvm.ptr, !llvm.ptr
      llvm.call @f.part0(%frame) : (!llvm.ptr) -> ()
      llvm.call @f.part1(%frame) : (!llvm.ptr) -> ()
      llvm.return
    }
    llvm.func internal @f.part0(%frame: !llvm.ptr) attributes {no_inline} {
      %buffers = llvm.load %frame : !llvm.ptr -> !llvm.ptr
      %a = llvm.load %buffers : !llvm.ptr -> !llvm.ptr
      ...
      %slot = llvm.getelementptr %frame[8] : (!llvm.ptr) -> !llvm.ptr, i8
      llvm.store %a, %slot : !llvm.ptr, !llvm.ptr
      llvm.return
    }
    ```
  }];
  let options = [
    Option<"maxOps", "max-ops", "int64_t", /*default=*/"1000",
           "Operations per run (a block is cut when it has more than twice "
           "as many)">,
  ];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
  let statistics = [
    Statistic<"numParts", "parts", "Functions created from runs of operations">,
    Statistic<"numFrameBytes", "frame-bytes", "Frame bytes allocated, all functions">,
  ];
}

#endif // PIPEDREAM_TARGET_CPU_PASSES_TD
