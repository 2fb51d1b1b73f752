// Outputs that are not fresh values: a graph input passed through, a weight,
// one value returned twice (cpu-prepare-entry-points gives it a second
// buffer), a constant. Each output buffer is fully written.

// RUN: rm -rf %t && mkdir -p %t
// RUN: %python -c "import numpy as np; np.savez('%t/in.npz', x=np.arange(4, dtype=np.float32))"
// RUN: %python -c "import numpy as np; x = np.arange(4, dtype=np.float32); w = np.array([1, 2, 3, 4], np.float32); np.savez('%t/ref.npz', xo=x, wo=w, s1=x + w, s2=x + w, c=np.array([5, 6], np.float32))"
// RUN: pipedream-compile %s --inference -o %t/bundle
// RUN: %python %S/Inputs/run_bundle.py %t/bundle %t/in.npz %t/out.npz
// RUN: %python %S/Inputs/compare.py %t/out.npz %t/ref.npz | FileCheck %s

// CHECK: OK c 0
// CHECK: OK s1 0
// CHECK: OK s2 0
// CHECK: OK wo 0
// CHECK: OK xo 0

func.func @main(%x: tensor<4xf32> {nn.name = "x"},
                %w: tensor<4xf32> {nn.name = "w", nn.param = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>})
    -> (tensor<4xf32> {nn.name = "xo"}, tensor<4xf32> {nn.name = "wo"},
        tensor<4xf32> {nn.name = "s1"}, tensor<4xf32> {nn.name = "s2"},
        tensor<2xf32> {nn.name = "c"}) {
  %e = tensor.empty() : tensor<4xf32>
  %s = linalg.add ins(%x, %w : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %c = arith.constant dense<[5.0, 6.0]> : tensor<2xf32>
  return %x, %w, %s, %s, %c : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2xf32>
}
