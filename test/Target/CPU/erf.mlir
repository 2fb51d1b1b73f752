// f32 erf (cpu-approximate-math's rational function, ApproximateMath.cpp)
// against float64 math.erf: 2^20 points uniform on [-4.5, 4.5], 2^18 on
// [3.5, 4] (where it meets 1), 2^18 geometric on 2^-126 .. 4, and the
// special values. At most 4e-7 absolute and relative error (measured
// 3.6e-7; upstream's piecewise approximation 2.7e-7), |erf| <= 1, odd
// (erf(-x) is -erf(x) bit for bit), erf(+-inf) = +-1, NaN stays NaN, -0
// stays -0.

// RUN: rm -rf %t && mkdir -p %t
// RUN: %python %S/Inputs/erf_check.py inputs %t/in.npz
// RUN: pipedream-compile %s --inference -o %t/bundle
// RUN: %python %S/Inputs/run_bundle.py %t/bundle %t/in.npz %t/out.npz
// RUN: %python %S/Inputs/erf_check.py check %t/in.npz %t/out.npz | FileCheck %s

// CHECK: uniform: max abs error {{[0-3]\.[0-9]+e-07}}
// CHECK: near one: max abs error {{[0-3]\.[0-9]+e-07}}
// CHECK: geometric: max rel error {{[0-3]\.[0-9]+e-07}}
// CHECK: special values OK
// CHECK: odd, |erf| <= 1: OK

#map = affine_map<(i) -> (i)>
func.func @main(%x: tensor<1572880xf32> {nn.name = "x"})
    -> (tensor<1572880xf32> {nn.name = "erf"}) {
  %e = tensor.empty() : tensor<1572880xf32>
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%x : tensor<1572880xf32>) outs(%e : tensor<1572880xf32>) {
  ^bb0(%v: f32, %o: f32):
    %y = math.erf %v : f32
    linalg.yield %y : f32
  } -> tensor<1572880xf32>
  return %r : tensor<1572880xf32>
}
