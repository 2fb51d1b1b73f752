// cpu-cache-allocations in a bundle: the temporaries (the scaled operands
// of the matmul, never fused into it) come from malloc on the first call
// and from their slots afterwards; every call's result is checked against
// numpy, and the library is unloaded (its destructor frees the parked
// buffers, so it must be in .fini_array: glibc does not run .dtors) and
// loaded again.

// RUN: rm -rf %t && mkdir -p %t
// RUN: %python -c "import numpy as np; x = np.random.default_rng(0).standard_normal((32, 48)).astype(np.float32); np.savez('%t/in.npz', x=x); t = 2 * x.astype(np.float64); np.savez('%t/ref.npz', r=(t @ t.T + 1).astype(np.float32))"
// RUN: pipedream-compile %s --inference -o %t/bundle
// RUN: %python %S/Inputs/run_repeated.py %t/bundle %t/in.npz %t/ref.npz --calls 3 | FileCheck %s
// RUN: llvm-readelf -S %t/bundle/program.so | FileCheck %s --check-prefix=ELF
// RUN: pipedream-compile %s --inference --emit llvm-dialect -o - | FileCheck %s --check-prefix=LLVM

// CHECK: OK call 0
// CHECK-NEXT: OK call 1
// CHECK-NEXT: OK call 2
// CHECK-NEXT: OK reloaded

// ELF: .fini_array
// ELF-NOT: .dtors

// LLVM: llvm.call @__pipedream_alloc(
// LLVM: llvm.call @__pipedream_free(
// LLVM: llvm.mlir.global_dtors dtors = [@__pipedream_release_cached]

func.func @main(%x: tensor<32x48xf32> {nn.name = "x"}) -> (tensor<32x32xf32> {nn.name = "r"}) {
  %e = tensor.empty() : tensor<32x48xf32>
  %t = linalg.add ins(%x, %x : tensor<32x48xf32>, tensor<32x48xf32>) outs(%e : tensor<32x48xf32>) -> tensor<32x48xf32>
  %et = tensor.empty() : tensor<48x32xf32>
  %tt = linalg.transpose ins(%t : tensor<32x48xf32>) outs(%et : tensor<48x32xf32>) permutation = [1, 0]
  %zero = arith.constant 0.0 : f32
  %ec = tensor.empty() : tensor<32x32xf32>
  %c = linalg.fill ins(%zero : f32) outs(%ec : tensor<32x32xf32>) -> tensor<32x32xf32>
  %p = linalg.matmul ins(%t, %tt : tensor<32x48xf32>, tensor<48x32xf32>) outs(%c : tensor<32x32xf32>) -> tensor<32x32xf32>
  %one = arith.constant 1.0 : f32
  %eo = tensor.empty() : tensor<32x32xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%p : tensor<32x32xf32>) outs(%eo : tensor<32x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %one : f32
    linalg.yield %s : f32
  } -> tensor<32x32xf32>
  return %r : tensor<32x32xf32>
}
