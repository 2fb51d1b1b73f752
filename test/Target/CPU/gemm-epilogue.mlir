// cpu-lower-gemm-to-blas with pipedream's kernels: a bias broadcast into
// the output right before the contraction, or a loop that is the output's
// only reader and adds a bias and/or a residual (after a zero fill) and/or
// applies a ReLU, become the epilogue of one pd_cpu_sgemm_epilogue call
// (bias pointer, addend pointer and leading dimension, activation: 0 none,
// 1 arith.maximumf, 2 arith.maxnumf), beta 0.
// CBLAS has no epilogue: there the IR keeps its bias broadcast and ReLU.
// Numerics: unittests/Target/CPU/GemmEpilogueTest.cpp (bitwise the loops
// it replaces) and test/Tools/pipedream-compile/bundle.test (a model with
// a fused bias against numpy).

// RUN: pipedream-opt %s --cpu-lower-gemm-to-blas="sgemm=pd_cpu_sgemm" --cse | FileCheck %s
// RUN: pipedream-opt %s --cpu-lower-gemm-to-blas="sgemm=pd_cpu_gemm_bf16" | FileCheck %s --check-prefix=BF16
// RUN: pipedream-opt %s --cpu-lower-gemm-to-blas | FileCheck %s --check-prefix=BLAS

#bias = affine_map<(d0, d1) -> (d1)>
#rows = affine_map<(d0, d1) -> (d0)>
#id = affine_map<(d0, d1) -> (d0, d1)>

// Linear + ReLU: the hidden buffer is gone, the GEMM writes the ReLU's
// buffer (its allocation moved above the call).
// CHECK-LABEL: func.func @linear_relu(
// CHECK-SAME:    %{{.*}}: memref<8x32xf32>, %{{.*}}: memref<16x32xf32>, %[[B:.*]]: memref<16xf32>
// CHECK:         %[[OUT:.*]] = memref.alloc() {alignment = 64 : i64} : memref<8x16xf32>
// CHECK-NOT:     memref.alloc
// CHECK:         memref.extract_aligned_pointer_as_index %[[B]]
// CHECK:         memref.extract_aligned_pointer_as_index %[[OUT]]
// CHECK:         %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:         %[[NOADDEND:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK:         %[[ACT:.*]] = arith.constant 1 : i32
// CHECK:         call @pd_cpu_sgemm_epilogue(%{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %[[ZERO]], %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %[[NOADDEND]], %{{[^,]*}}, %[[ACT]])
// CHECK-NOT:     linalg.generic
// CHECK-NOT:     memref.dealloc
// CHECK:         return %[[OUT]]
// BF16-LABEL: func.func @linear_relu(
// BF16:         call @pd_cpu_gemm_bf16_epilogue(
// BF16-NOT:     linalg.generic
// BF16-LABEL: func.func @matmul_relu_maxnum(
// BLAS-LABEL: func.func @linear_relu(
// BLAS:         linalg.generic
// BLAS:         call @cblas_sgemm(
// BLAS:         linalg.generic
// BLAS:         arith.maximumf
func.func @linear_relu(%x: memref<8x32xf32>, %w: memref<16x32xf32>, %b: memref<16xf32>) -> memref<8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %hidden = memref.alloc() {alignment = 64 : i64} : memref<8x16xf32>
  linalg.generic {indexing_maps = [#bias, #id], iterator_types = ["parallel", "parallel"]}
      ins(%b : memref<16xf32>) outs(%hidden : memref<8x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : memref<8x32xf32>, memref<16x32xf32>) outs(%hidden : memref<8x16xf32>)
  %out = memref.alloc() {alignment = 64 : i64} : memref<8x16xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%hidden : memref<8x16xf32>) outs(%out : memref<8x16xf32>) {
  ^bb0(%in: f32, %o: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  }
  memref.dealloc %hidden : memref<8x16xf32>
  return %out : memref<8x16xf32>
}

// A zero-filled output and a ReLU in arith.maxnumf's spelling, zero first:
// no bias (a null pointer), activation 2.
// CHECK-LABEL: func.func @matmul_relu_maxnum(
// CHECK:         %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK:         %[[ACT:.*]] = arith.constant 2 : i32
// CHECK:         call @pd_cpu_sgemm_epilogue({{.*}}, %[[NULL]], %[[NULL]], %{{[^,]*}}, %[[ACT]])
// CHECK-NOT:     linalg.
// CHECK:         return
func.func @matmul_relu_maxnum(%x: memref<8x32xf32>, %w: memref<32x16xf32>) -> memref<8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %hidden = memref.alloc() : memref<8x16xf32>
  linalg.fill ins(%zero : f32) outs(%hidden : memref<8x16xf32>)
  linalg.matmul ins(%x, %w : memref<8x32xf32>, memref<32x16xf32>) outs(%hidden : memref<8x16xf32>)
  %out = memref.alloc() : memref<8x16xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%hidden : memref<8x16xf32>) outs(%out : memref<8x16xf32>) {
  ^bb0(%in: f32, %o: f32):
    %r = arith.maxnumf %zero, %in : f32
    linalg.yield %r : f32
  }
  return %out : memref<8x16xf32>
}

// The pre-activation is read again (a training step saves it): only the
// bias joins the call (activation 0); the ReLU stays a loop.
// CHECK-LABEL: func.func @bias_saved_preactivation(
// CHECK:         %[[ACT:.*]] = arith.constant 0 : i32
// CHECK:         call @pd_cpu_sgemm_epilogue({{.*}}, %[[ACT]])
// CHECK:         linalg.generic
// CHECK:         arith.maximumf
// CHECK:         memref.copy
func.func @bias_saved_preactivation(%x: memref<8x32xf32>, %w: memref<32x16xf32>, %b: memref<16xf32>, %saved: memref<8x16xf32>) -> memref<8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %hidden = memref.alloc() : memref<8x16xf32>
  linalg.generic {indexing_maps = [#bias, #id], iterator_types = ["parallel", "parallel"]}
      ins(%b : memref<16xf32>) outs(%hidden : memref<8x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  linalg.matmul ins(%x, %w : memref<8x32xf32>, memref<32x16xf32>) outs(%hidden : memref<8x16xf32>)
  %out = memref.alloc() : memref<8x16xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%hidden : memref<8x16xf32>) outs(%out : memref<8x16xf32>) {
  ^bb0(%in: f32, %o: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  }
  memref.copy %hidden, %saved : memref<8x16xf32> to memref<8x16xf32>
  return %out : memref<8x16xf32>
}

// A batched product ([2, 8, 32] x [2, 32, 16]): the bias along the last
// dimension holds for every batch item's call.
// CHECK-LABEL: func.func @batched_bias(
// CHECK:         scf.for
// CHECK:           call @pd_cpu_sgemm_epilogue({{.*}}, %{{.*}}, %{{.*}})
// CHECK-NOT:     linalg.generic
func.func @batched_bias(%x: memref<2x8x32xf32>, %w: memref<2x32x16xf32>, %b: memref<16xf32>, %out: memref<2x8x16xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%b : memref<16xf32>) outs(%out : memref<2x8x16xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  linalg.batch_matmul ins(%x, %w : memref<2x8x32xf32>, memref<2x32x16xf32>) outs(%out : memref<2x8x16xf32>)
  return
}

// Not an epilogue: a broadcast along the rows (one value per row, not per
// column), and a max against 1.0. The plain call, beta 1, the loops kept.
// CHECK-LABEL: func.func @not_epilogues(
// CHECK:         %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK:         linalg.generic
// CHECK:         call @pd_cpu_sgemm({{.*}}, %[[ONE]], %{{[^,]*}}, %{{[^,]*}}) :
// CHECK:         linalg.generic
// CHECK:         arith.maximumf
func.func @not_epilogues(%x: memref<16x32xf32>, %w: memref<32x16xf32>, %rowBias: memref<16xf32>) -> memref<16x16xf32> {
  %one = arith.constant 1.0 : f32
  %hidden = memref.alloc() : memref<16x16xf32>
  linalg.generic {indexing_maps = [#rows, #id], iterator_types = ["parallel", "parallel"]}
      ins(%rowBias : memref<16xf32>) outs(%hidden : memref<16x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  linalg.matmul ins(%x, %w : memref<16x32xf32>, memref<32x16xf32>) outs(%hidden : memref<16x16xf32>)
  %out = memref.alloc() : memref<16x16xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%hidden : memref<16x16xf32>) outs(%out : memref<16x16xf32>) {
  ^bb0(%in: f32, %o: f32):
    %r = arith.maximumf %in, %one : f32
    linalg.yield %r : f32
  }
  return %out : memref<16x16xf32>
}

// The bias added after the product (PyTorch's MatMul + Add export of a
// Linear on [B, T, C] input), with the ReLU in the same loop, through the
// reshape of the GEMM's [B*T, N] result: the GEMM writes the loop's buffer
// through the inverse reshape.
// CHECK-LABEL: func.func @matmul_add_relu_reshaped(
// CHECK-SAME:    %{{.*}}: memref<16x32xf32>, %{{.*}}: memref<32x24xf32>, %[[B:.*]]: memref<24xf32>
// CHECK:         %[[OUT:.*]] = memref.alloc() : memref<2x8x24xf32>
// CHECK:         %[[C:.*]] = memref.collapse_shape %[[OUT]] {{\[}}[0, 1], [2]] : memref<2x8x24xf32> into memref<16x24xf32>
// CHECK:         memref.extract_aligned_pointer_as_index %[[B]]
// CHECK:         memref.extract_aligned_pointer_as_index %[[C]]
// CHECK:         %[[ACT:.*]] = arith.constant 1 : i32
// CHECK:         call @pd_cpu_sgemm_epilogue({{.*}}, %[[ACT]])
// CHECK-NOT:     linalg.
// CHECK-NOT:     memref.expand_shape
// CHECK:         return %[[OUT]]
func.func @matmul_add_relu_reshaped(%x: memref<16x32xf32>, %w: memref<32x24xf32>, %b: memref<24xf32>) -> memref<2x8x24xf32> {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<16x24xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<16x24xf32>)
  linalg.matmul ins(%x, %w : memref<16x32xf32>, memref<32x24xf32>) outs(%c : memref<16x24xf32>)
  %v = memref.expand_shape %c [[0, 1], [2]] output_shape [2, 8, 24] : memref<16x24xf32> into memref<2x8x24xf32>
  %out = memref.alloc() : memref<2x8x24xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%b, %v : memref<24xf32>, memref<2x8x24xf32>) outs(%out : memref<2x8x24xf32>) {
  ^bb0(%bias: f32, %in: f32, %o: f32):
    %s = arith.addf %in, %bias : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  }
  memref.dealloc %c : memref<16x24xf32>
  return %out : memref<2x8x24xf32>
}

// A residual after the bias (a transformer block's projection: x + (c +
// b)) is the epilogue's addend, read with C's leading dimension.
// CHECK-LABEL: func.func @bias_residual(
// CHECK-SAME:    %{{.*}}: memref<8x32xf32>, %{{.*}}: memref<32x16xf32>, %[[B:[^:]*]]: memref<16xf32>, %[[RES:[^:]*]]: memref<8x16xf32>
// CHECK:         memref.extract_aligned_pointer_as_index %[[B]]
// CHECK:         memref.extract_aligned_pointer_as_index %[[RES]]
// CHECK:         %[[LDC:.*]] = arith.constant 16 : i32
// CHECK:         call @pd_cpu_sgemm_epilogue({{.*}}, %[[LDC]], %{{[^,]*}}, %{{[^,]*}}, %[[LDC]], %{{[^,]*}}) :
// CHECK-NOT:     linalg.generic
func.func @bias_residual(%x: memref<8x32xf32>, %w: memref<32x16xf32>, %b: memref<16xf32>, %res: memref<8x16xf32>) -> memref<8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<8x16xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<8x16xf32>)
  linalg.matmul ins(%x, %w : memref<8x32xf32>, memref<32x16xf32>) outs(%c : memref<8x16xf32>)
  %out = memref.alloc() : memref<8x16xf32>
  linalg.generic {indexing_maps = [#id, #id, #bias, #id], iterator_types = ["parallel", "parallel"]}
      ins(%res, %c, %b : memref<8x16xf32>, memref<8x16xf32>, memref<16xf32>) outs(%out : memref<8x16xf32>) {
  ^bb0(%r: f32, %in: f32, %bias: f32, %o: f32):
    %s = arith.addf %bias, %in : f32
    %t = arith.addf %r, %s : f32
    linalg.yield %t : f32
  }
  return %out : memref<8x16xf32>
}

// Not epilogues: the residual added before the bias ((c + r) + b rounds
// differently from the kernel's (c + b) + r), and a bias added to a product
// whose output already started as a bias.
// CHECK-LABEL: func.func @add_not_epilogues(
// CHECK:         call @pd_cpu_sgemm(
// CHECK:         linalg.generic
// CHECK:         %[[NOACT:.*]] = arith.constant 0 : i32
// CHECK:         call @pd_cpu_sgemm_epilogue({{.*}}, %[[NOACT]], %[[NOACT]]) :
// CHECK:         linalg.generic
// CHECK:         arith.addf
func.func @add_not_epilogues(%x: memref<8x32xf32>, %w: memref<32x16xf32>, %b: memref<16xf32>, %res: memref<8x16xf32>) -> (memref<8x16xf32>, memref<8x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<8x16xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<8x16xf32>)
  linalg.matmul ins(%x, %w : memref<8x32xf32>, memref<32x16xf32>) outs(%c : memref<8x16xf32>)
  %out = memref.alloc() : memref<8x16xf32>
  linalg.generic {indexing_maps = [#id, #bias, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c, %b, %res : memref<8x16xf32>, memref<16xf32>, memref<8x16xf32>) outs(%out : memref<8x16xf32>) {
  ^bb0(%in: f32, %bias: f32, %r: f32, %o: f32):
    %s = arith.addf %in, %r : f32
    %t = arith.addf %s, %bias : f32
    linalg.yield %t : f32
  }
  %c2 = memref.alloc() : memref<8x16xf32>
  linalg.generic {indexing_maps = [#bias, #id], iterator_types = ["parallel", "parallel"]}
      ins(%b : memref<16xf32>) outs(%c2 : memref<8x16xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  linalg.matmul ins(%x, %w : memref<8x32xf32>, memref<32x16xf32>) outs(%c2 : memref<8x16xf32>)
  %out2 = memref.alloc() : memref<8x16xf32>
  linalg.generic {indexing_maps = [#id, #bias, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c2, %b : memref<8x16xf32>, memref<16xf32>) outs(%out2 : memref<8x16xf32>) {
  ^bb0(%in: f32, %bias: f32, %o: f32):
    %s = arith.addf %in, %bias : f32
    linalg.yield %s : f32
  }
  return %out, %out2 : memref<8x16xf32>, memref<8x16xf32>
}
