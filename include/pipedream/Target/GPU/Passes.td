//===- Passes.td - CUDA code generation passes -------------*- tablegen -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The passes pipedream adds to the upstream GPU lowering. The whole pipeline
// is `pipedream-cuda-lowering` (see CUDACodegen.h and docs/GPU.md); each pass
// here can also run alone in pipedream-opt.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_TARGET_GPU_PASSES_TD
#define PIPEDREAM_TARGET_GPU_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// cuda-interchange-parallel-loops
//===----------------------------------------------------------------------===//

def InterchangeParallelLoopsPass
    : Pass<"cuda-interchange-parallel-loops", "mlir::func::FuncOp"> {
  let summary = "Put the parallel loops of linalg ops outermost";
  let description = [{
    Reorders the loops of every non-contraction linalg op on tensors whose
    reduction loops are not all innermost (e.g. a column sum, the bias
    gradient `reduce` over the batch dimension) so that the parallel loops
    come first: `cuda-map-to-kernels` maps the parallel loops to threads,
    and a reduction loop left outside them would run on one thread. Named
    ops (e.g. `linalg.reduce`) are generalized first.

    ```mlir
    // iterator_types = ["reduction", "parallel"], (d0, d1) -> (d1)
    // becomes
    // iterator_types = ["parallel", "reduction"], (d0, d1) -> (d0)
    ```
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect"];
}

//===----------------------------------------------------------------------===//
// cuda-lower-gemm-to-library
//===----------------------------------------------------------------------===//

def LowerGemmToLibraryPass
    : Pass<"cuda-lower-gemm-to-library", "mlir::ModuleOp"> {
  let summary = "Replace linalg contractions on memrefs by pd_gpu_gemm calls";
  let description = [{
    Replaces every f32 (and bf16) contraction a strided GEMM can run
    (matmul, batch_matmul, transposed variants, convolutions after im2col,
    generic contractions; the analysis of cpu-lower-gemm-to-blas, GemmPlan.h)
    by a call to the runtime's

    ```c
    void pd_gpu_gemm_f32(int64_t batch, int64_t m, int64_t n, int64_t k,
                         int32_t transA, int32_t transB, float alpha,
                         const float *A, int64_t lda, int64_t strideA,
                         const float *B, int64_t ldb, int64_t strideB,
                         float beta, float *C, int64_t ldc, int64_t strideC);
    ```

    (row-major semantics, docs/GPU.md; `pd_gpu_gemm_bf16` for bf16, same
    signature). The innermost loop around the GEMM becomes the batch
    (strides per operand, 0 = broadcast); further loops stay `scf.for`
    around the call on the host. A zero `linalg.fill` of the output just
    before the contraction is dropped and beta set to 0.

    With `bf16=true` (`--dtype bf16`), f32 contractions call
    `pd_gpu_gemm_bf16` instead: A and B are rounded to bf16
    (`arith.truncf`, round-to-nearest-even) into new buffers with the
    operands' strides, the GEMM (f32 accumulation) writes a bf16 product
    with beta = 0 into a buffer shaped like C, and an elementwise
    `linalg.generic` adds it to C in f32 (or stores it, when C was
    zero-filled). Operands with dynamic or negative strides keep the f32
    call.
  }];
  let options = [
    Option<"bf16", "bf16", "bool", /*default=*/"false",
           "Run f32 contractions as bf16 GEMMs (bf16 operands and product, "
           "f32 accumulation)">,
  ];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::func::FuncDialect",
                           "mlir::linalg::LinalgDialect",
                           "mlir::LLVM::LLVMDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::scf::SCFDialect"];
}

//===----------------------------------------------------------------------===//
// cuda-map-to-kernels
//===----------------------------------------------------------------------===//

def MapToKernelsPass : Pass<"cuda-map-to-kernels", "mlir::func::FuncOp"> {
  let summary = "Turn the buffer-level work of a host function into "
                "gpu.launch kernels";
  let description = [{
    After bufferization and cuda-lower-gemm-to-library, every remaining
    linalg op and `memref.copy` becomes a `gpu.launch`:

    - Reductions whose innermost loops are the reduction loops, whose output
      is indexed by the parallel loops only and whose combiner is `addf`,
      `maximumf`, `maxnumf`, `minimumf`, `minnumf` or `mulf` (row sums and
      maxima of softmax, layer norm, losses): one block per output element,
      the threads of the block striding over the reduction and combining
      with `gpu.all_reduce`.
    - Everything else: the op's parallel loops (`scf.parallel`) are
      flattened into one index, `block-size` threads per block, so
      consecutive threads touch consecutive elements of row-major buffers
      (coalesced); reduction loops stay sequential inside the thread.
    - Remaining host work that reads or writes memory (e.g. a loop whose
      bound comes from a tensor element) runs as one single-thread kernel.

    Host functions keep only allocation, views, calls, launches and scalar
    arithmetic.
  }];
  let options = [
    Option<"blockSize", "block-size", "unsigned", /*default=*/"256",
           "Threads per block">,
    Option<"rowReductions", "row-reductions", "bool", /*default=*/"true",
           "One block per output element for row reductions">,
  ];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::gpu::GPUDialect",
                           "mlir::linalg::LinalgDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::scf::SCFDialect"];
}

//===----------------------------------------------------------------------===//
// cuda-allocate-device-memory
//===----------------------------------------------------------------------===//

def AllocateDeviceMemoryPass
    : Pass<"cuda-allocate-device-memory", "mlir::func::FuncOp"> {
  let summary = "Allocate the host functions' buffers on the device";
  let description = [{
    Host-side `memref.alloc` / `memref.alloca` become `gpu.alloc`,
    `memref.dealloc` becomes `gpu.dealloc` (an `alloca` is freed before
    every return). A `memref.get_global` the host still uses (constants
    read by library calls; kernels read their own copy in the gpu.module) is
    copied to a device buffer with `gpu.memcpy` at its use. Fails on a host
    `memref.load` / `memref.store` (run cuda-map-to-kernels first).
  }];
  let dependentDialects = ["mlir::gpu::GPUDialect",
                           "mlir::memref::MemRefDialect"];
}

//===----------------------------------------------------------------------===//
// cuda-merge-kernel-modules
//===----------------------------------------------------------------------===//

def MergeKernelModulesPass
    : Pass<"cuda-merge-kernel-modules", "mlir::ModuleOp"> {
  let summary = "Move all outlined kernels into one gpu.module";
  let description = [{
    gpu-kernel-outlining makes one gpu.module per kernel, which would become
    one ptxas run and one embedded binary each. This pass moves every
    gpu.func (and the globals kernels read) into one gpu.module named
    `module-name`, renames kernels `<host function>_k<N>` (PTX identifiers:
    letters, digits and `_` only) and updates the `gpu.launch_func` ops.
  }];
  let options = [
    Option<"moduleName", "module-name", "std::string",
           /*default=*/"\"pipedream_kernels\"", "Name of the gpu.module">,
  ];
  let dependentDialects = ["mlir::gpu::GPUDialect"];
}

//===----------------------------------------------------------------------===//
// cuda-stream-order-library-calls
//===----------------------------------------------------------------------===//

def StreamOrderLibraryCallsPass
    : Pass<"cuda-stream-order-library-calls", "mlir::func::FuncOp"> {
  let summary = "Keep the stream across pd_gpu_* calls instead of a host "
                "synchronization";
  let description = [{
    `gpu-async-region` cannot see that the `pd_gpu_gemm_*` calls run on the
    runtime's current stream, so it ends the stream before each call
    (`gpu.wait [%t]`: synchronize and destroy) and starts a new one after it
    (`%t2 = gpu.wait async`). The bundle ABI (docs/GPU.md) makes
    `mgpuStreamCreate` return the current stream, the one the library calls
    use: this pass drops both waits and keeps using `%t`, so kernels, GEMMs
    and kernels stay ordered on the stream with no host synchronization in
    between. The wait at the end of the function stays, and a function
    whose last stream work is a library call gets a synchronization of the
    current stream before it returns (entry points return with their device
    work done).

    ```mlir
    gpu.wait [%t]
    func.call @pd_gpu_gemm_f32(...)
    %t2 = gpu.wait async
    %t3 = gpu.launch_func async [%t2] ...
    // becomes
    func.call @pd_gpu_gemm_f32(...)
    %t3 = gpu.launch_func async [%t] ...
    ```
  }];
  let dependentDialects = ["mlir::gpu::GPUDialect"];
}

//===----------------------------------------------------------------------===//
// cuda-test-emulate-on-host
//===----------------------------------------------------------------------===//

def EmulateOnHostPass : Pass<"cuda-test-emulate-on-host", "mlir::ModuleOp"> {
  let summary = "Run the CUDA target's kernels and GEMM calls on the CPU "
                "(tests only)";
  let description = [{
    Checks the numerics of the CUDA lowering on a machine without a GPU:
    every `gpu.launch` becomes loops over its blocks and threads, device
    buffers become host buffers (`gpu.alloc` / `gpu.dealloc` /
    `gpu.memcpy` to memref ops) and `pd_gpu_gemm_f32` / `pd_gpu_gemm_bf16`
    get a loop implementation of their documented semantics (docs/GPU.md;
    bf16: operands and C widened to f32, f32 accumulation, the result
    rounded to bf16), written independently of the runtime's cuBLAS
    wrapper. Launches that
    synchronize threads (`gpu.all_reduce`, `gpu.barrier`) must have one
    thread per block (`pipedream-cuda-emulation` maps with block size 1).
    Used by `pipedream-cuda-emulation` and test/Target/GPU/emulation.test;
    never part of a real bundle.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::LLVM::LLVMDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::scf::SCFDialect"];
}

//===----------------------------------------------------------------------===//
// cuda-lower-run-time-checks, cuda-define-run-time-status
//===----------------------------------------------------------------------===//

def LowerRunTimeChecksPass
    : Pass<"cuda-lower-run-time-checks", "mlir::ModuleOp"> {
  let summary = "Turn `nn.check_index_range` into writes of a device-side "
                "status record";
  let description = [{
    The device half of the run-time status channel of cuda bundles
    (docs/Bundle.md "Run-time checks"; the CPU target's is
    `cpu-lower-run-time-checks`). Runs on bufferized host functions, before
    `cuda-map-to-kernels`. Every function with checks gets a device record
    `memref<5xi64>` (failed, value, lower, upper, check id), allocated and
    zero-filled at its entry; each `nn.check_index_range` becomes: if
    `min < lower || max >= upper` and the record's `failed` is 0, store 1,
    the offending index (`max` if too large, else `min`), the bounds and
    the check's id. Those loads and stores are scalar memory accesses, so
    `cuda-map-to-kernels` puts them, with the loads of `min` and `max`,
    into a single-thread kernel that runs in stream order after the
    reduction that computed them: the check never reads device memory from
    the host. Before every return the function calls
    `pipedream.cuda_take_run_time_status(record)` and frees the record;
    that function is declared here, with the checks' ONNX op types, nodes
    and inputs (`pipedream.cuda.checks`, by id), and defined by
    `cuda-define-run-time-status`.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::func::FuncDialect",
                           "mlir::linalg::LinalgDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::scf::SCFDialect"];
}

def DefineRunTimeStatusPass
    : Pass<"cuda-define-run-time-status", "mlir::ModuleOp"> {
  let summary = "The host-side status record of a cuda bundle, filled from "
                "the device record";
  let description = [{
    The host half of the run-time status channel of cuda bundles. Runs
    after `cuda-allocate-device-memory`. Adds the thread-local host record
    and its exported accessor `pipedream_run_time_status()` (the same as
    the CPU target's, runtime/lib/Bundle.h) and defines
    `pipedream.cuda_take_run_time_status(memref<5xi64>)`, declared by
    `cuda-lower-run-time-checks`: it copies the device record to the host
    (`gpu.memcpy`, which waits for the kernels before it) and, when a check
    failed and the host record holds no failure yet, stores the value, the
    bounds and the failed check's op type, node and input names there. The
    runtime reads and clears the host record after every call, as for CPU
    bundles. A module without checks still gets the record and accessor.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::func::FuncDialect",
                           "mlir::gpu::GPUDialect",
                           "mlir::LLVM::LLVMDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::scf::SCFDialect"];
}

#endif // PIPEDREAM_TARGET_GPU_PASSES_TD
