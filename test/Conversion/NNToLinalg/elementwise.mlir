// RUN: pipedream-opt %s -convert-nn-to-linalg -split-input-file | FileCheck %s
// The CPU pipeline (TOOLCHAIN.md, plus convert-bufferization-to-memref for
// results that alias an argument or a constant, and convert-math-to-libm for
// math.erf) must turn the output into the llvm dialect alone.
// RUN: pipedream-opt %s -split-input-file -convert-nn-to-linalg \
// RUN:   -one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" \
// RUN:   -buffer-deallocation-pipeline -convert-bufferization-to-memref \
// RUN:   -convert-linalg-to-loops -convert-scf-to-cf -expand-strided-metadata \
// RUN:   -lower-affine -convert-math-to-libm -convert-to-llvm -reconcile-unrealized-casts \
// RUN: | FileCheck %s --check-prefix=LLVM \
// RUN:   --implicit-check-not="{{[^.a-z_](nn|linalg|tensor|memref|bufferization|arith|math|scf|cf|affine|func|builtin)\.}}"
// Elementwise nn ops: one linalg.generic each, numpy broadcasting in the
// indexing maps (a size-1 operand dimension reads index 0), arith/math body.

// CHECK-DAG: #[[$ID2:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[$LAST:.+]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @add_broadcast(
// CHECK-SAME: %[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<3xf32>)
// CHECK: %[[INIT:.*]] = tensor.empty() : tensor<2x3xf32>
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[$ID2]], #[[$LAST]], #[[$ID2]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME: ins(%[[A]], %[[B]] : tensor<2x3xf32>, tensor<3xf32>) outs(%[[INIT]] : tensor<2x3xf32>)
// CHECK: arith.addf
// CHECK: return %[[R]]
// LLVM-LABEL: llvm.func @add_broadcast(
func.func @add_broadcast(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %0 = nn.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-DAG: #[[$COL:.+]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-DAG: #[[$ROW:.+]] = affine_map<(d0, d1) -> (0, d1)>
// CHECK-DAG: #[[$ID2:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @sub_unit_dims(
// CHECK: linalg.generic {indexing_maps = [#[[$COL]], #[[$ROW]], #[[$ID2]]]
// CHECK: arith.subi %{{.*}}, %{{.*}} : i64
// LLVM-LABEL: llvm.func @sub_unit_dims(
func.func @sub_unit_dims(%a: tensor<2x1xi64>, %b: tensor<1x3xi64>) -> tensor<2x3xi64> {
  %0 = nn.sub %a, %b : (tensor<2x1xi64>, tensor<1x3xi64>) -> tensor<2x3xi64>
  return %0 : tensor<2x3xi64>
}

// -----

// CHECK-DAG: #[[$SCALAR:.+]] = affine_map<(d0) -> ()>
// CHECK-DAG: #[[$ID1:.+]] = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func.func @mul_scalar(
// CHECK: linalg.generic {indexing_maps = [#[[$SCALAR]], #[[$ID1]], #[[$ID1]]]
// CHECK-SAME: ins(%{{.*}}, %{{.*}} : tensor<f32>, tensor<4xf32>)
// CHECK: arith.mulf
// LLVM-LABEL: llvm.func @mul_scalar(
func.func @mul_scalar(%a: tensor<f32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = nn.mul %a, %b : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Integer division truncates toward zero: arith.divsi.
// CHECK-LABEL: func.func @div(
// CHECK: arith.divsi %{{.*}}, %{{.*}} : i32
// CHECK: arith.divf %{{.*}}, %{{.*}} : f64
// LLVM-LABEL: llvm.func @div(
func.func @div(%a: tensor<4xi32>, %b: tensor<4xi32>, %c: tensor<4xf64>, %d: tensor<4xf64>) -> (tensor<4xi32>, tensor<4xf64>) {
  %0 = nn.div %a, %b : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  %1 = nn.div %c, %d : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  return %0, %1 : tensor<4xi32>, tensor<4xf64>
}

// -----

// CHECK-LABEL: func.func @pow_int_exponent(
// CHECK: ^bb0(%[[X:.*]]: f32, %[[E:.*]]: i64, %{{.*}}: f32):
// CHECK: %[[EF:.*]] = arith.sitofp %[[E]] : i64 to f32
// CHECK: %[[P:.*]] = math.powf %[[X]], %[[EF]] : f32
// CHECK: linalg.yield %[[P]]
// LLVM-LABEL: llvm.func @pow_int_exponent(
func.func @pow_int_exponent(%x: tensor<4xf32>, %e: tensor<i64>) -> tensor<4xf32> {
  %0 = nn.pow %x, %e : (tensor<4xf32>, tensor<i64>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// An integer power is computed in f64 and truncated back.
// CHECK-LABEL: func.func @pow_int_base(
// CHECK: arith.sitofp %{{.*}} : i64 to f64
// CHECK: arith.sitofp %{{.*}} : i64 to f64
// CHECK: math.powf %{{.*}}, %{{.*}} : f64
// CHECK: arith.fptosi %{{.*}} : f64 to i64
// LLVM-LABEL: llvm.func @pow_int_base(
func.func @pow_int_base(%x: tensor<4xi64>, %e: tensor<4xi64>) -> tensor<4xi64> {
  %0 = nn.pow %x, %e : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

// CHECK-LABEL: func.func @equal(
// CHECK: linalg.generic
// CHECK-SAME: outs(%{{.*}} : tensor<4xi1>)
// CHECK: arith.cmpf oeq, %{{.*}}, %{{.*}} : f32
// CHECK: arith.cmpi eq, %{{.*}}, %{{.*}} : i64
// LLVM-LABEL: llvm.func @equal(
func.func @equal(%a: tensor<4xf32>, %b: tensor<4xf32>, %c: tensor<4xi64>, %d: tensor<i64>) -> (tensor<4xi1>, tensor<4xi1>) {
  %0 = nn.equal %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %1 = nn.equal %c, %d : (tensor<4xi64>, tensor<i64>) -> tensor<4xi1>
  return %0, %1 : tensor<4xi1>, tensor<4xi1>
}

// -----

// CHECK-DAG: #[[$ROW:.+]] = affine_map<(d0, d1) -> (0, d1)>
// CHECK-DAG: #[[$ID2:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[$SCALAR:.+]] = affine_map<(d0, d1) -> ()>
// CHECK-LABEL: func.func @where(
// CHECK: linalg.generic {indexing_maps = [#[[$ROW]], #[[$ID2]], #[[$SCALAR]], #[[$ID2]]]
// CHECK: ^bb0(%[[C:.*]]: i1, %[[X:.*]]: f32, %[[Y:.*]]: f32, %{{.*}}: f32):
// CHECK: arith.select %[[C]], %[[X]], %[[Y]] : f32
// LLVM-LABEL: llvm.func @where(
func.func @where(%c: tensor<1x4xi1>, %x: tensor<2x4xf32>, %y: tensor<f32>) -> tensor<2x4xf32> {
  %0 = nn.where %c, %x, %y : (tensor<1x4xi1>, tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// CHECK-LABEL: func.func @unary(
// CHECK: math.sqrt
// CHECK: math.exp
// CHECK: math.log
// CHECK: math.tanh
// CHECK: math.erf
// CHECK: arith.negf
// LLVM-LABEL: llvm.func @unary(
// LLVM: llvm.call @erff(
func.func @unary(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %0 = nn.sqrt %x : tensor<4xf32>
  %1 = nn.exp %x : tensor<4xf32>
  %2 = nn.log %x : tensor<4xf32>
  %3 = nn.tanh %x : tensor<4xf32>
  %4 = nn.erf %x : tensor<4xf32>
  %5 = nn.neg %x : tensor<4xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @neg_int(
// CHECK: %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK: arith.subi %[[ZERO]], %{{.*}} : i32
// LLVM-LABEL: llvm.func @neg_int(
func.func @neg_int(%x: tensor<4xi32>) -> tensor<4xi32> {
  %0 = nn.neg %x : tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// CHECK-LABEL: func.func @sigmoid(
// CHECK: ^bb0(%[[X:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: %[[NEG:.*]] = arith.negf %[[X]]
// CHECK: %[[EXP:.*]] = math.exp %[[NEG]]
// CHECK: %[[DEN:.*]] = arith.addf %[[ONE]], %[[EXP]]
// CHECK: arith.divf %[[ONE]], %[[DEN]]
// LLVM-LABEL: llvm.func @sigmoid(
func.func @sigmoid(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = nn.sigmoid %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// NaN propagates through relu and clip (arith.maximumf / minimumf), as in
// the ONNX reference.
// CHECK-LABEL: func.func @relu(
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: arith.maximumf %{{.*}}, %[[ZERO]] : f32
// LLVM-LABEL: llvm.func @relu(
func.func @relu(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = nn.relu %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @leaky_relu(
// CHECK: ^bb0(%[[X:.*]]: f32, %{{.*}}: f32):
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[ALPHA:.*]] = arith.constant 2.500000e-01 : f32
// CHECK: %[[SCALED:.*]] = arith.mulf %[[ALPHA]], %[[X]]
// CHECK: %[[POS:.*]] = arith.cmpf oge, %[[X]], %[[ZERO]]
// CHECK: arith.select %[[POS]], %[[X]], %[[SCALED]]
// LLVM-LABEL: llvm.func @leaky_relu(
func.func @leaky_relu(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = nn.leaky_relu %x {alpha = 0.25 : f64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// 0.5 x (1 + erf(x / sqrt 2))
// CHECK-LABEL: func.func @gelu_none(
// CHECK: ^bb0(%[[X:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[RSQRT2:.*]] = arith.constant 0.707106769 : f32
// CHECK: %[[S:.*]] = arith.mulf %[[X]], %[[RSQRT2]]
// CHECK: math.erf %[[S]]
// LLVM-LABEL: llvm.func @gelu_none(
// LLVM: llvm.call @erff(
func.func @gelu_none(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = nn.gelu %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
// CHECK-LABEL: func.func @gelu_tanh(
// CHECK: arith.constant 4.471500e-02 : f32
// CHECK: arith.constant 0.797884583 : f32
// CHECK: math.tanh
// CHECK-NOT: math.erf
// LLVM-LABEL: llvm.func @gelu_tanh(
func.func @gelu_tanh(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = nn.gelu %x {approximate = "tanh"} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @clip(
// CHECK: %[[MIN:.*]] = arith.constant -1.000000e+00 : f32
// CHECK: %[[LO:.*]] = arith.maximumf %{{.*}}, %[[MIN]] : f32
// CHECK: %[[MAX:.*]] = arith.constant 6.000000e+00 : f32
// CHECK: arith.minimumf %[[LO]], %[[MAX]] : f32
// An absent bound does not clamp.
// CHECK: linalg.generic
// CHECK-NOT: arith.maximumf
// CHECK: arith.minimumf
// LLVM-LABEL: llvm.func @clip(
func.func @clip(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = nn.clip %x {min = -1.0 : f64, max = 6.0 : f64} : tensor<4xf32>
  %1 = nn.clip %x {max = 6.0 : f64} : tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// Float to int truncates toward zero (fptosi); to bool is `!= 0`, with NaN
// true (unordered compare).
// CHECK-LABEL: func.func @cast_float_to_int(
// CHECK: arith.fptosi %{{.*}} : f32 to i32
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: arith.cmpf une, %{{.*}}, %[[ZERO]] : f32
// LLVM-LABEL: llvm.func @cast_float_to_int(
func.func @cast_float_to_int(%x: tensor<4xf32>) -> (tensor<4xi32>, tensor<4xi1>) {
  %0 = nn.cast %x {to = i32} : (tensor<4xf32>) -> tensor<4xi32>
  %1 = nn.cast %x {to = i1} : (tensor<4xf32>) -> tensor<4xi1>
  return %0, %1 : tensor<4xi32>, tensor<4xi1>
}

// -----

// Bool to number is 0/1 (unsigned conversions).
// CHECK-LABEL: func.func @cast_bool(
// CHECK: arith.uitofp %{{.*}} : i1 to f32
// CHECK: arith.extui %{{.*}} : i1 to i64
// LLVM-LABEL: llvm.func @cast_bool(
func.func @cast_bool(%x: tensor<4xi1>) -> (tensor<4xf32>, tensor<4xi64>) {
  %0 = nn.cast %x {to = f32} : (tensor<4xi1>) -> tensor<4xf32>
  %1 = nn.cast %x {to = i64} : (tensor<4xi1>) -> tensor<4xi64>
  return %0, %1 : tensor<4xf32>, tensor<4xi64>
}

// -----

// CHECK-LABEL: func.func @cast_int(
// CHECK: arith.trunci %{{.*}} : i64 to i32
// CHECK: %[[ZERO:.*]] = arith.constant 0 : i64
// CHECK: arith.cmpi ne, %{{.*}}, %[[ZERO]] : i64
// CHECK: arith.extsi %{{.*}} : i32 to i64
// CHECK: arith.sitofp %{{.*}} : i32 to f64
// LLVM-LABEL: llvm.func @cast_int(
func.func @cast_int(%x: tensor<4xi64>, %y: tensor<4xi32>) -> (tensor<4xi32>, tensor<4xi1>, tensor<4xi64>, tensor<4xf64>) {
  %0 = nn.cast %x {to = i32} : (tensor<4xi64>) -> tensor<4xi32>
  %1 = nn.cast %x {to = i1} : (tensor<4xi64>) -> tensor<4xi1>
  %2 = nn.cast %y {to = i64} : (tensor<4xi32>) -> tensor<4xi64>
  %3 = nn.cast %y {to = f64} : (tensor<4xi32>) -> tensor<4xf64>
  return %0, %1, %2, %3 : tensor<4xi32>, tensor<4xi1>, tensor<4xi64>, tensor<4xf64>
}

// -----

// CHECK-LABEL: func.func @cast_float(
// CHECK: arith.extf %{{.*}} : f32 to f64
// CHECK: arith.truncf %{{.*}} : f64 to f32
// LLVM-LABEL: llvm.func @cast_float(
func.func @cast_float(%x: tensor<4xf32>, %y: tensor<4xf64>) -> (tensor<4xf64>, tensor<4xf32>) {
  %0 = nn.cast %x {to = f64} : (tensor<4xf32>) -> tensor<4xf64>
  %1 = nn.cast %y {to = f32} : (tensor<4xf64>) -> tensor<4xf32>
  return %0, %1 : tensor<4xf64>, tensor<4xf32>
}

// -----

// Dropout is the identity at inference.
// CHECK-LABEL: func.func @dropout(
// CHECK-SAME: %[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT: return %[[X]]
// LLVM-LABEL: llvm.func @dropout(
func.func @dropout(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = nn.dropout %x {ratio = 0.1 : f64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Its mask is all true at inference (nothing is dropped).
// CHECK-LABEL: func.func @dropout_mask(
// CHECK-SAME: %[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT: %[[T:.*]] = arith.constant dense<true> : tensor<4xi1>
// CHECK-NEXT: return %[[X]], %[[T]]
// LLVM-LABEL: llvm.func @dropout_mask(
func.func @dropout_mask(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi1>) {
  %0 = nn.dropout %x {ratio = 0.5 : f64} : tensor<4xf32>
  %1 = nn.dropout_mask %0 : (tensor<4xf32>) -> tensor<4xi1>
  return %0, %1 : tensor<4xf32>, tensor<4xi1>
}

// -----

// CHECK-LABEL: func.func @constant(
// CHECK: %[[C:.*]] = arith.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK: return %[[C]]
// LLVM-LABEL: llvm.func @constant(
func.func @constant() -> tensor<2xf32> {
  %0 = nn.constant dense<[1.0, 2.0]> : tensor<2xf32>
  return %0 : tensor<2xf32>
}
