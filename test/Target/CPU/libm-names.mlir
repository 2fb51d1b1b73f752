// Public functions named like the libm functions they call. f64 math.erf
// becomes a call of libm's `erf`, which convert-math-to-libm declares in the
// module: with the user's @erf there it used to call that function instead
// ("'func.call' op incorrect number of operands for callee"). f64 math.exp
// and math.log become LLVM intrinsics the backend turns into libm calls.
// The implementations are renamed (`__pipedream.<name>`), the exported
// wrappers keep `pipedream_<name>`; @erf and @log, called by nothing else,
// are the bodies of their wrappers, @exp (called by @exp_of_exp) stays a
// function. Checked against Python's math module.

// RUN: rm -rf %t && mkdir -p %t
// RUN: %python -c "import math, numpy as np; x = np.array([-2.5, -0.3, 0.0, 0.7, 1.9]); p = np.array([0.1, 1.0, 2.5, 7.0, 30.0]); np.savez('%t/in.npz', x=x, y=x, p=p); np.savez('%t/ref.npz', e=np.exp(x), ee=np.exp(np.exp(x)), r=np.array([math.erf(v) for v in x]), l=np.log(p))"
// RUN: pipedream-compile %s --inference -o %t/bundle
// RUN: %python %S/Inputs/run_bundle.py %t/bundle %t/in.npz %t/out.npz
// RUN: %python %S/Inputs/compare.py %t/out.npz %t/ref.npz --rtol 1e-12 --atol 1e-12 | FileCheck %s
// RUN: llvm-nm -D %t/bundle/program.so | FileCheck %s --check-prefix=NM
// RUN: pipedream-compile %s --inference --emit llvm-dialect -o %t/ll.mlir
// RUN: FileCheck %s --check-prefix=LLVM < %t/ll.mlir
// RUN: FileCheck %s --check-prefix=BODIES < %t/ll.mlir

// CHECK: OK e
// CHECK: OK ee
// CHECK: OK l
// CHECK: OK r

// The libm functions are imported, the wrappers exported.
// NM-DAG: U erf
// NM-DAG: U exp
// NM-DAG: U log
// NM-DAG: T pipedream_erf
// NM-DAG: T pipedream_exp
// NM-DAG: T pipedream_exp_of_exp
// NM-DAG: T pipedream_log

// LLVM-DAG: llvm.func internal @__pipedream.exp(
// BODIES-NOT: @__pipedream.erf
// BODIES-NOT: @__pipedream.log
// LLVM-DAG: llvm.func @erf(f64) -> f64
// LLVM-DAG: llvm.func @pipedream_exp(
// LLVM-DAG: llvm.func @pipedream_erf(
// LLVM-DAG: llvm.func @pipedream_log(

func.func @exp(%x: tensor<5xf64> {nn.name = "x"}) -> (tensor<5xf64> {nn.name = "e"}) {
  %init = tensor.empty() : tensor<5xf64>
  %r = linalg.map { math.exp } ins(%x : tensor<5xf64>) outs(%init : tensor<5xf64>)
  return %r : tensor<5xf64>
}

func.func @erf(%x: tensor<5xf64> {nn.name = "y"}) -> (tensor<5xf64> {nn.name = "r"}) {
  %init = tensor.empty() : tensor<5xf64>
  %r = linalg.map { math.erf } ins(%x : tensor<5xf64>) outs(%init : tensor<5xf64>)
  return %r : tensor<5xf64>
}

func.func @log(%x: tensor<5xf64> {nn.name = "p"}) -> (tensor<5xf64> {nn.name = "l"}) {
  %init = tensor.empty() : tensor<5xf64>
  %r = linalg.map { math.log } ins(%x : tensor<5xf64>) outs(%init : tensor<5xf64>)
  return %r : tensor<5xf64>
}

func.func @exp_of_exp(%x: tensor<5xf64> {nn.name = "x"}) -> (tensor<5xf64> {nn.name = "ee"}) {
  %a = func.call @exp(%x) : (tensor<5xf64>) -> tensor<5xf64>
  %b = func.call @exp(%a) : (tensor<5xf64>) -> tensor<5xf64>
  return %b : tensor<5xf64>
}
