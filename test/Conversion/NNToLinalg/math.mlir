// RUN: pipedream-opt %s -convert-nn-to-linalg -split-input-file | FileCheck %s
// The CPU pipeline must turn the output into the llvm dialect alone.
// RUN: pipedream-opt %s -split-input-file -convert-nn-to-linalg \
// RUN:   -one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" \
// RUN:   -buffer-deallocation-pipeline -convert-bufferization-to-memref \
// RUN:   -convert-linalg-to-loops -convert-scf-to-cf -expand-strided-metadata \
// RUN:   -lower-affine -convert-math-to-llvm -convert-math-to-libm -convert-to-llvm -reconcile-unrealized-casts \
// RUN: | FileCheck %s --check-prefix=LLVM \
// RUN:   --implicit-check-not="{{[^.a-z_](nn|linalg|tensor|memref|bufferization|arith|math|scf|cf|affine|func|builtin)\.}}"
// The ops of NNMathOps.td: elementwise ones are one linalg.generic with a
// math/arith body; arg_max/arg_min a (value, index) reduction; cumsum a
// masked reduction over an extra loop; trilu a select on j - i against k;
// top_k a rank computation and a gather by rank.

// CHECK-LABEL: func.func @trig(
// CHECK: linalg.generic
// CHECK: math.sin
// CHECK: linalg.generic
// CHECK: math.acosh
// LLVM-LABEL: llvm.func @trig(
func.func @trig(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = nn.sin %x : tensor<2x3xf32>
  %1 = nn.acosh %0 : tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}

// -----

// Round is half to even.
// CHECK-LABEL: func.func @round(
// CHECK: math.roundeven
// LLVM-LABEL: llvm.func @round(
func.func @round(%x: tensor<4xf64>) -> tensor<4xf64> {
  %0 = nn.round %x : tensor<4xf64>
  return %0 : tensor<4xf64>
}

// -----

// Python-style integer mod: a zero or -1 divisor is replaced by 1 before
// the remainder, then the divisor is added where the signs differ.
// CHECK-LABEL: func.func @int_mod(
// CHECK: linalg.generic
// CHECK: arith.select
// CHECK: arith.remsi
// CHECK: arith.addi
// CHECK: arith.select
// LLVM-LABEL: llvm.func @int_mod(
func.func @int_mod(%a: tensor<4xi32>, %b: tensor<4xi32>) -> tensor<4xi32> {
  %0 = nn.mod %a, %b : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// CHECK-LABEL: func.func @fmod(
// CHECK: arith.remf
func.func @fmod(%a: tensor<4xf32>, %b: tensor<f32>) -> tensor<4xf32> {
  %0 = nn.mod %a, %b {fmod = true} : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @compare_logic(
// CHECK: arith.cmpf olt
// CHECK: arith.cmpi sge
// CHECK: arith.xori
// LLVM-LABEL: llvm.func @compare_logic(
func.func @compare_logic(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %i: tensor<2x3xi64>, %j: tensor<i64>) -> tensor<2x3xi1> {
  %0 = nn.less %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %1 = nn.greater_equal %i, %j : (tensor<2x3xi64>, tensor<i64>) -> tensor<2x3xi1>
  %2 = nn.xor %0, %1 : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  return %2 : tensor<2x3xi1>
}

// -----

// The axis is a reduction loop; both outputs drop it, and keepdims puts it
// back with an expand_shape.
// CHECK-DAG: #[[$ID:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[$DROP:.+]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-LABEL: func.func @arg_max_last(
// CHECK: %[[LOW:.*]] = arith.constant 0xFF800000 : f32
// CHECK: %[[V:.*]] = linalg.fill ins(%[[LOW]] : f32)
// CHECK: %[[I:.*]] = linalg.fill ins(%{{.*}} : i64)
// CHECK: %[[R:.*]]:2 = linalg.generic {indexing_maps = [#[[$ID]], #[[$DROP]], #[[$DROP]]], iterator_types = ["parallel", "reduction", "parallel"]}
// CHECK-SAME: outs(%[[V]], %[[I]] : tensor<2x4xf32>, tensor<2x4xi64>)
// CHECK: arith.cmpf oge
// CHECK: linalg.index 1
// CHECK: tensor.expand_shape %[[R]]#1
// LLVM-LABEL: llvm.func @arg_max_last(
func.func @arg_max_last(%x: tensor<2x3x4xf32>) -> tensor<2x1x4xi64> {
  %0 = nn.arg_max %x {axis = 1 : i64, select_last_index = true} : (tensor<2x3x4xf32>) -> tensor<2x1x4xi64>
  return %0 : tensor<2x1x4xi64>
}

// -----

// CHECK-LABEL: func.func @arg_min_int(
// CHECK: arith.constant 2147483647 : i32
// CHECK: arith.cmpi slt
func.func @arg_min_int(%x: tensor<5xi32>) -> tensor<i64> {
  %0 = nn.arg_min %x {axis = 0 : i64, keepdims = false} : (tensor<5xi32>) -> tensor<i64>
  return %0 : tensor<i64>
}

// -----

// The input is read at the extra loop j (d2) in place of the axis.
// CHECK-DAG: #[[$IN:.+]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[$OUT:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @cumsum_reverse_exclusive(
// CHECK: linalg.generic {indexing_maps = [#[[$IN]], #[[$OUT]]], iterator_types = ["parallel", "parallel", "reduction"]}
// CHECK: %[[I:.*]] = linalg.index 1
// CHECK: %[[J:.*]] = linalg.index 2
// CHECK: arith.cmpi sgt, %[[J]], %[[I]]
// CHECK: arith.addf
// CHECK: arith.select
// LLVM-LABEL: llvm.func @cumsum_reverse_exclusive(
func.func @cumsum_reverse_exclusive(%x: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %0 = nn.cumsum %x {axis = 1 : i64, exclusive = true, reverse = true} : tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

// CHECK-DAG: #[[$ID:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[$SCALAR:.+]] = affine_map<(d0, d1, d2) -> ()>
// CHECK-LABEL: func.func @trilu_lower(
// CHECK: linalg.generic {indexing_maps = [#[[$ID]], #[[$SCALAR]], #[[$ID]]]
// CHECK: arith.subi
// CHECK: arith.cmpi sle
// LLVM-LABEL: llvm.func @trilu_lower(
func.func @trilu_lower(%x: tensor<2x3x4xf32>, %k: tensor<i64>) -> tensor<2x3x4xf32> {
  %0 = nn.trilu %x, %k {upper = false} : (tensor<2x3x4xf32>, tensor<i64>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// CHECK-LABEL: func.func @reduce_min_prod(
// CHECK: arith.constant 0x7F800000 : f32
// CHECK: linalg.reduce
// CHECK: arith.minimumf
// CHECK: arith.constant 1.000000e+00 : f32
// CHECK: linalg.reduce
// CHECK: arith.mulf
// LLVM-LABEL: llvm.func @reduce_min_prod(
func.func @reduce_min_prod(%x: tensor<3x4xf32>) -> (tensor<3xf32>, tensor<4xf32>) {
  %0 = nn.reduce_min %x {axes = array<i64: 1>, keepdims = false} : (tensor<3x4xf32>) -> tensor<3xf32>
  %1 = nn.reduce_prod %x {axes = array<i64: 0>, keepdims = false} : (tensor<3x4xf32>) -> tensor<4xf32>
  return %0, %1 : tensor<3xf32>, tensor<4xf32>
}

// -----

// Two generics with an extra reduction loop: the rank of every element in
// its row, then the element of rank p for each of the k outputs.
// CHECK-LABEL: func.func @top_k(
// CHECK: %[[RANKS:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]
// CHECK-SAME: outs(%{{.*}} : tensor<3x5xi64>)
// CHECK: arith.cmpf ogt
// CHECK: %[[R:.*]]:2 = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]
// CHECK-SAME: ins(%{{.*}}, %[[RANKS]] : tensor<3x5xf32>, tensor<3x5xi64>)
// CHECK-SAME: outs(%{{.*}}, %{{.*}} : tensor<3x2xf32>, tensor<3x2xi64>)
// CHECK: return %[[R]]#0, %[[R]]#1
// LLVM-LABEL: llvm.func @top_k(
func.func @top_k(%x: tensor<3x5xf32>) -> (tensor<3x2xf32>, tensor<3x2xi64>) {
  %v, %i = nn.top_k %x {axis = 1 : i64, k = 2 : i64} : (tensor<3x5xf32>) -> (tensor<3x2xf32>, tensor<3x2xi64>)
  return %v, %i : tensor<3x2xf32>, tensor<3x2xi64>
}
