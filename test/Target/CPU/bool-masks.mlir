// A boolean mask read and a boolean result written by a vectorized loop
// (cpu-bool-memory-as-bytes: byte loads and stores, so LLVM widens them).
// Checked against numpy, and the LLVM IR has vector byte loads and no
// scalar i1 load or store left.

// RUN: rm -rf %t && mkdir -p %t
// RUN: %python %S/Inputs/bool_masks_ref.py %t/in.npz %t/ref.npz
// RUN: pipedream-compile %s --inference -o %t/bundle
// RUN: %python %S/Inputs/run_bundle.py %t/bundle %t/in.npz %t/out.npz
// RUN: %python %S/Inputs/compare.py %t/out.npz %t/ref.npz --rtol 0 --atol 0 | FileCheck %s
// RUN: pipedream-compile %s --inference --emit llvm -o - | FileCheck %s --check-prefix=IR

// CHECK: OK both exact
// CHECK: OK masked 0

// IR-LABEL: define {{.*}}@__pipedream_kernel_0(
// IR-NOT: load i1
// IR-NOT: store i1
// IR: load <{{[0-9]+}} x i8>
// IR-NOT: load i1
// IR-NOT: store i1
// IR: ret void

#map = affine_map<(i, j) -> (i, j)>
func.func @main(%x: tensor<8x40xf32> {nn.name = "x"}, %mask: tensor<8x40xi1> {nn.name = "mask"})
    -> (tensor<8x40xf32> {nn.name = "masked"}, tensor<8x40xi1> {nn.name = "both"}) {
  %e = tensor.empty() : tensor<8x40xf32>
  %b = tensor.empty() : tensor<8x40xi1>
  %r:2 = linalg.generic {indexing_maps = [#map, #map, #map, #map],
                         iterator_types = ["parallel", "parallel"]}
      ins(%x, %mask : tensor<8x40xf32>, tensor<8x40xi1>)
      outs(%e, %b : tensor<8x40xf32>, tensor<8x40xi1>) {
  ^bb0(%v: f32, %m: i1, %o: f32, %ob: i1):
    %two = arith.constant 2.0 : f32
    %fill = arith.constant -1.0e4 : f32
    %zero = arith.constant 0.0 : f32
    %d = arith.mulf %v, %two : f32
    %s = arith.select %m, %d, %fill : f32
    %pos = arith.cmpf ogt, %v, %zero : f32
    %and = arith.andi %m, %pos : i1
    linalg.yield %s, %and : f32, i1
  } -> (tensor<8x40xf32>, tensor<8x40xi1>)
  return %r#0, %r#1 : tensor<8x40xf32>, tensor<8x40xi1>
}
