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
// RUN: pipedream-opt %s -convert-nn-to-linalg="decompose-softmax=false" -split-input-file | FileCheck %s --check-prefix=KEEP
// Batch/layer normalization and the softmax family.

// Inference batch normalization: one generic; the [C] operands become
// [C, 1, 1] so broadcasting reads them along axis 1.
// CHECK-DAG: #[[$ID4:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[$CHAN:.+]] = affine_map<(d0, d1, d2, d3) -> (d1, 0, 0)>
// CHECK-LABEL: func.func @batch_norm(
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x4x8x8xf32>, %[[S:[^:]*]]: tensor<4xf32>, %[[B:[^:]*]]: tensor<4xf32>, %[[M:[^:]*]]: tensor<4xf32>, %[[V:[^:]*]]: tensor<4xf32>)
// CHECK: %[[EPS:.*]] = arith.constant 9.99999974E-6 : f32
// CHECK: %[[S3:.*]] = tensor.expand_shape %[[S]] {{\[}}[0, 1, 2]] output_shape [4, 1, 1]
// CHECK: %[[B3:.*]] = tensor.expand_shape %[[B]]
// CHECK: %[[M3:.*]] = tensor.expand_shape %[[M]]
// CHECK: %[[V3:.*]] = tensor.expand_shape %[[V]]
// CHECK: linalg.generic {indexing_maps = [#[[$ID4]], #[[$CHAN]], #[[$CHAN]], #[[$CHAN]], #[[$CHAN]], #[[$ID4]]]
// CHECK-SAME: ins(%[[X]], %[[S3]], %[[B3]], %[[M3]], %[[V3]] :
// CHECK: ^bb0(%[[XE:[^:]*]]: f32, %[[SE:[^:]*]]: f32, %[[BE:[^:]*]]: f32, %[[ME:[^:]*]]: f32, %[[VE:[^:]*]]: f32, %{{.*}}: f32):
// CHECK: %[[C:.*]] = arith.subf %[[XE]], %[[ME]]
// CHECK: %[[VEPS:.*]] = arith.addf %[[VE]], %[[EPS]]
// CHECK: %[[STD:.*]] = math.sqrt %[[VEPS]]
// CHECK: %[[N:.*]] = arith.divf %[[C]], %[[STD]]
// CHECK: %[[SC:.*]] = arith.mulf %[[N]], %[[SE]]
// CHECK: arith.addf %[[SC]], %[[BE]]
// LLVM-LABEL: llvm.func @batch_norm(
func.func @batch_norm(%x: tensor<2x4x8x8xf32>, %s: tensor<4xf32>, %b: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>) -> tensor<2x4x8x8xf32> {
  %0 = nn.batch_normalization %x, %s, %b, %m, %v {epsilon = 1.0e-05 : f64} : (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x8x8xf32>
  return %0 : tensor<2x4x8x8xf32>
}

// -----

// Layer normalization over [1, 3): mean (reduce + divide by 20), variance
// as the mean of squared deviations (a second pass), 1 / sqrt(var + eps),
// then (x - mean) * inv_std * scale, with the statistics as [3, 1, 1].
// CHECK-DAG: #[[$ID3:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[$OUTER:.+]] = affine_map<(d0, d1, d2) -> (d0)>
// CHECK-DAG: #[[$STAT:.+]] = affine_map<(d0, d1, d2) -> (d0, 0, 0)>
// CHECK-DAG: #[[$SCALE:.+]] = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-LABEL: func.func @layer_norm_no_bias(
// CHECK-SAME: %[[X:[^:]*]]: tensor<3x4x5xf32>, %[[G:[^:]*]]: tensor<5xf32>)
// CHECK: %[[COUNT:.*]] = arith.constant 2.000000e+01 : f32
// CHECK: %[[SUM:.*]] = linalg.reduce ins(%[[X]] : tensor<3x4x5xf32>) outs(%{{.*}} : tensor<3xf32>) dimensions = [1, 2]
// CHECK: %[[MEAN:.*]] = linalg.generic
// CHECK-SAME: ins(%[[SUM]] : tensor<3xf32>)
// CHECK: arith.divf %{{.*}}, %[[COUNT]]
// CHECK: %[[SQ:.*]] = linalg.generic {indexing_maps = [#[[$ID3]], #[[$OUTER]], #[[$OUTER]]], iterator_types = ["parallel", "reduction", "reduction"]}
// CHECK-SAME: ins(%[[X]], %[[MEAN]] : tensor<3x4x5xf32>, tensor<3xf32>)
// CHECK: %[[D:.*]] = arith.subf
// CHECK: %[[D2:.*]] = arith.mulf %[[D]], %[[D]]
// CHECK: arith.addf %{{.*}}, %[[D2]]
// CHECK: %[[EPS:.*]] = arith.constant 9.99999974E-6 : f32
// CHECK: %[[INV:.*]] = linalg.generic
// CHECK-SAME: ins(%[[SQ]] : tensor<3xf32>)
// CHECK: %[[VAR:.*]] = arith.divf %{{.*}}, %[[COUNT]]
// CHECK: %[[VE:.*]] = arith.addf %[[VAR]], %[[EPS]]
// CHECK: math.sqrt %[[VE]]
// CHECK: %[[MEAN3:.*]] = tensor.expand_shape %[[MEAN]] {{\[}}[0, 1, 2]] output_shape [3, 1, 1]
// CHECK: %[[INV3:.*]] = tensor.expand_shape %[[INV]] {{\[}}[0, 1, 2]] output_shape [3, 1, 1]
// CHECK: linalg.generic {indexing_maps = [#[[$ID3]], #[[$STAT]], #[[$STAT]], #[[$SCALE]], #[[$ID3]]]
// CHECK-SAME: ins(%[[X]], %[[MEAN3]], %[[INV3]], %[[G]] :
// CHECK: arith.subf
// CHECK: arith.mulf
// CHECK: %[[Y:.*]] = arith.mulf
// CHECK-NEXT: linalg.yield %[[Y]]
// LLVM-LABEL: llvm.func @layer_norm_no_bias(
func.func @layer_norm_no_bias(%x: tensor<3x4x5xf32>, %g: tensor<5xf32>) -> tensor<3x4x5xf32> {
  %0 = nn.layer_normalization %x, %g {axis = 1 : i64, epsilon = 1.0e-05 : f64} : (tensor<3x4x5xf32>, tensor<5xf32>) -> tensor<3x4x5xf32>
  return %0 : tensor<3x4x5xf32>
}

// -----

// CHECK-LABEL: func.func @layer_norm_bias(
// CHECK-SAME: %[[G:[^:]*]]: tensor<64xf32>, %[[B:[^:]*]]: tensor<64xf32>)
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}}, %{{.*}}, %[[G]], %[[B]] :
// CHECK: ^bb0(%{{[^:]*}}: f32, %{{[^:]*}}: f32, %{{[^:]*}}: f32, %[[GE:[^:]*]]: f32, %[[BE:[^:]*]]: f32, %{{.*}}: f32):
// CHECK: %[[SC:.*]] = arith.mulf %{{.*}}, %[[GE]]
// CHECK-NEXT: %[[Y:.*]] = arith.addf %[[SC]], %[[BE]]
// CHECK-NEXT: linalg.yield %[[Y]]
// LLVM-LABEL: llvm.func @layer_norm_bias(
func.func @layer_norm_bias(%x: tensor<2x16x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<2x16x64xf32> {
  %0 = nn.layer_normalization %x, %g, %b {axis = 2 : i64, epsilon = 1.0e-05 : f64} : (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  return %0 : tensor<2x16x64xf32>
}

// -----

// Softmax is linalg.softmax, decomposed (max, exp(x - max), sum, divide).
// CHECK-LABEL: func.func @softmax(
// CHECK-SAME: %[[X:.*]]: tensor<2x8xf32>)
// CHECK-NOT: linalg.softmax
// CHECK: %[[MAX:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[X]] : tensor<2x8xf32>) outs(%{{.*}} : tensor<2xf32>)
// CHECK: arith.maxnumf
// CHECK: %[[EXP:.*]] = linalg.generic {{.*}} ins(%[[X]], %[[MAX]] : tensor<2x8xf32>, tensor<2xf32>)
// CHECK: arith.subf
// CHECK: math.exp
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} ins(%[[EXP]] : tensor<2x8xf32>) outs(%{{.*}} : tensor<2xf32>)
// CHECK: arith.addf
// CHECK: linalg.generic {{.*}} ins(%[[EXP]], %[[SUM]] : tensor<2x8xf32>, tensor<2xf32>)
// CHECK: arith.divf
// KEEP-LABEL: func.func @softmax(
// KEEP: linalg.softmax dimension(1) ins(%{{.*}} : tensor<2x8xf32>) outs(%{{.*}} : tensor<2x8xf32>) -> tensor<2x8xf32>
// LLVM-LABEL: llvm.func @softmax(
func.func @softmax(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = nn.softmax %x {axis = 1 : i64} : tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// log_softmax: x - max - log(sum(exp(x - max))) along axis 0.
// CHECK-DAG: #[[$ID2:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[$COLS:.+]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @log_softmax(
// CHECK-SAME: %[[X:.*]]: tensor<2x8xf32>)
// CHECK: %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: %[[INIT:.*]] = linalg.fill ins(%[[NEGINF]] : f32)
// CHECK: %[[MAX:.*]] = linalg.reduce ins(%[[X]] : tensor<2x8xf32>) outs(%[[INIT]] : tensor<8xf32>) dimensions = [0]
// CHECK: arith.maximumf
// CHECK: %[[SUM:.*]] = linalg.generic {indexing_maps = [#[[$ID2]], #[[$COLS]], #[[$COLS]]], iterator_types = ["reduction", "parallel"]}
// CHECK-SAME: ins(%[[X]], %[[MAX]] : tensor<2x8xf32>, tensor<8xf32>)
// CHECK: math.exp
// CHECK: linalg.generic {indexing_maps = [#[[$ID2]], #[[$COLS]], #[[$COLS]], #[[$ID2]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME: ins(%[[X]], %[[MAX]], %[[SUM]] : tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>)
// CHECK: ^bb0(%[[XE:[^:]*]]: f32, %[[ME:[^:]*]]: f32, %[[SE:[^:]*]]: f32, %{{.*}}: f32):
// CHECK: %[[SH:.*]] = arith.subf %[[XE]], %[[ME]]
// CHECK: %[[LOG:.*]] = math.log %[[SE]]
// CHECK: arith.subf %[[SH]], %[[LOG]]
// LLVM-LABEL: llvm.func @log_softmax(
func.func @log_softmax(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = nn.log_softmax %x {axis = 0 : i64} : tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// nn.batch_norm_train: batch mean (sum / 8) and biased variance (second
// pass over squared deviations) per channel, the normalized output, and the
// running statistics: running * 0.75 + batch * 0.25, the variance scaled by
// 8 / 7 (unbiased).
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[CH:.*]] = affine_map<(d0, d1, d2) -> (d1)>
// CHECK-LABEL: func.func @batch_norm_train(
// CHECK-SAME: %[[X:.*]]: tensor<2x3x4xf32>, %[[S:.*]]: tensor<3xf32>, %[[B:.*]]: tensor<3xf32>, %[[M:.*]]: tensor<3xf32>, %[[V:.*]]: tensor<3xf32>)
// CHECK-DAG: %[[COUNT:.*]] = arith.constant 8.000000e+00 : f32
// CHECK: %[[SUM:.*]] = linalg.reduce ins(%[[X]] : tensor<2x3x4xf32>) outs(%{{.*}} : tensor<3xf32>) dimensions = [0, 2]
// CHECK: %[[MEAN:.*]] = linalg.generic {{.*}} ins(%[[SUM]] : tensor<3xf32>)
// CHECK: arith.divf %{{.*}}, %[[COUNT]]
// CHECK: %[[SQ:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[CH]], #[[CH]]], iterator_types = ["reduction", "parallel", "reduction"]} ins(%[[X]], %[[MEAN]] : tensor<2x3x4xf32>, tensor<3xf32>)
// CHECK: %[[VAR:.*]] = linalg.generic {{.*}} ins(%[[SQ]] : tensor<3xf32>)
// CHECK: %[[Y:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[CH]], #[[CH]], #[[CH]], #[[CH]], #[[ID]]], {{.*}} ins(%[[X]], %[[MEAN]], %[[VAR]], %[[S]], %[[B]] : {{.*}})
// CHECK: math.sqrt
// CHECK-DAG: %[[MOMENTUM:.*]] = arith.constant 7.500000e-01 : f32
// CHECK-DAG: %[[BATCH_PART:.*]] = arith.constant 2.500000e-01 : f32
// CHECK-DAG: %[[UNBIAS:.*]] = arith.constant 1.14285719 : f32
// CHECK: %[[NEW_M:.*]] = linalg.generic {{.*}} ins(%[[M]], %[[MEAN]] : tensor<3xf32>, tensor<3xf32>)
// CHECK: %[[NEW_V:.*]] = linalg.generic {{.*}} ins(%[[V]], %[[VAR]] : tensor<3xf32>, tensor<3xf32>)
// CHECK: arith.mulf %{{.*}}, %[[UNBIAS]]
// CHECK: return %[[Y]], %[[NEW_M]], %[[NEW_V]]
// LLVM-LABEL: llvm.func @batch_norm_train(
func.func @batch_norm_train(%x: tensor<2x3x4xf32>, %s: tensor<3xf32>, %b: tensor<3xf32>, %m: tensor<3xf32>, %v: tensor<3xf32>) -> (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>) {
  %0:3 = nn.batch_norm_train %x, %s, %b, %m, %v {epsilon = 1.0e-05 : f64, momentum = 0.75 : f64} : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>)
  return %0#0, %0#1, %0#2 : tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>
}
