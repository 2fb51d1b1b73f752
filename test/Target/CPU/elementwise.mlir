// Non-GEMM code: f32 math functions (erf, tanh, exp: polynomial
// approximations inlined by cpu-approximate-math, so no libm call is left),
// integer and boolean buffers (i1 is one byte per element), f64, several
// outputs, odd sizes. Checked against numpy.

// RUN: rm -rf %t && mkdir -p %t
// RUN: %python %S/Inputs/elementwise_ref.py %t/in.npz %t/ref.npz
// RUN: pipedream-compile %s --inference -o %t/bundle
// RUN: %python %S/Inputs/run_bundle.py %t/bundle %t/in.npz %t/out.npz
// RUN: %python %S/Inputs/compare.py %t/out.npz %t/ref.npz | FileCheck %s
// RUN: FileCheck %s --check-prefix=JSON < %t/bundle/bundle.json
// RUN: llvm-readelf -d %t/bundle/program.so | FileCheck %s --check-prefix=NEEDED
// RUN: llvm-nm -D --undefined-only %t/bundle/program.so | FileCheck %s --allow-empty --check-prefix=UNDEF

// CHECK: OK gelu
// CHECK: OK mixed
// CHECK: OK positive exact
// CHECK: OK soft
// CHECK: OK twice

// JSON: {"name": "x", "role": "input", "dtype": "f32", "shape": [4, 33]},
// JSON: {"name": "n", "role": "input", "dtype": "i64", "shape": [4, 33]},
// JSON: {"name": "positive", "role": "output", "dtype": "i1", "shape": [4, 33]}
// JSON: {"name": "d", "role": "input", "dtype": "f64", "shape": [5]},

// NEEDED-NOT: libm.so
// NEEDED-NOT: openblas
// UNDEF-NOT: erff
// UNDEF-NOT: tanhf
// UNDEF-NOT: expf

#map = affine_map<(i, j) -> (i, j)>
func.func @main(%x: tensor<4x33xf32> {nn.name = "x"}, %n: tensor<4x33xi64> {nn.name = "n"})
    -> (tensor<4x33xf32> {nn.name = "gelu"}, tensor<4x33xf32> {nn.name = "soft"},
        tensor<4x33xf32> {nn.name = "mixed"}, tensor<4x33xi1> {nn.name = "positive"}) {
  %e = tensor.empty() : tensor<4x33xf32>
  %b = tensor.empty() : tensor<4x33xi1>
  %r:4 = linalg.generic {indexing_maps = [#map, #map, #map, #map, #map, #map],
                         iterator_types = ["parallel", "parallel"]}
      ins(%x, %n : tensor<4x33xf32>, tensor<4x33xi64>)
      outs(%e, %e, %e, %b : tensor<4x33xf32>, tensor<4x33xf32>, tensor<4x33xf32>, tensor<4x33xi1>) {
  ^bb0(%v: f32, %i: i64, %o0: f32, %o1: f32, %o2: f32, %o3: i1):
    %half = arith.constant 0.5 : f32
    %one = arith.constant 1.0 : f32
    %rsqrt2 = arith.constant 0.70710678118654752 : f32
    %zero = arith.constant 0.0 : f32
    %s = arith.mulf %v, %rsqrt2 : f32
    %erf = math.erf %s : f32
    %t = arith.addf %erf, %one : f32
    %h = arith.mulf %v, %half : f32
    %gelu = arith.mulf %h, %t : f32
    %tanh = math.tanh %v : f32
    %exp = math.exp %v : f32
    %soft = arith.addf %tanh, %exp : f32
    %fi = arith.sitofp %i : i64 to f32
    %mixed = arith.addf %v, %fi : f32
    %pos = arith.cmpf ogt, %v, %zero : f32
    linalg.yield %gelu, %soft, %mixed, %pos : f32, f32, f32, i1
  } -> (tensor<4x33xf32>, tensor<4x33xf32>, tensor<4x33xf32>, tensor<4x33xi1>)
  return %r#0, %r#1, %r#2, %r#3 : tensor<4x33xf32>, tensor<4x33xf32>, tensor<4x33xf32>, tensor<4x33xi1>
}

func.func @double(%d: tensor<5xf64> {nn.name = "d"}) -> (tensor<5xf64> {nn.name = "twice"}) {
  %e = tensor.empty() : tensor<5xf64>
  %r = linalg.add ins(%d, %d : tensor<5xf64>, tensor<5xf64>) outs(%e : tensor<5xf64>) -> tensor<5xf64>
  return %r : tensor<5xf64>
}
