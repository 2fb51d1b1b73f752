// RUN: pipedream-opt %s | pipedream-opt | FileCheck %s
// RUN: pipedream-opt %s --mlir-print-op-generic | pipedream-opt | FileCheck %s

// Round trip of every nn op. The declared result types are checked against
// the inferred ones by the verifier, so each case also pins down a shape rule;
// the expected shapes of conv and pooling come from PyTorch
// (torch.nn.functional.conv2d / max_pool2d / avg_pool2d).

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @constant
func.func @constant() -> (tensor<2xf32>, tensor<2x2xi64>, tensor<3xi1>, tensor<f16>) {
  // CHECK: %[[A:.*]] = nn.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
  %0 = nn.constant dense<[1.0, 2.0]> : tensor<2xf32>
  // CHECK: %[[B:.*]] = nn.constant dense<7> : tensor<2x2xi64>
  %1 = nn.constant dense<7> : tensor<2x2xi64>
  // CHECK: %[[C:.*]] = nn.constant dense<[true, false, true]> : tensor<3xi1>
  %2 = nn.constant dense<[true, false, true]> : tensor<3xi1>
  // CHECK: %[[D:.*]] = nn.constant dense<5.000000e-01> : tensor<f16>
  %3 = nn.constant dense<0.5> : tensor<f16>
  // CHECK: return %[[A]], %[[B]], %[[C]], %[[D]]
  return %0, %1, %2, %3 : tensor<2xf32>, tensor<2x2xi64>, tensor<3xi1>, tensor<f16>
}

//===----------------------------------------------------------------------===//
// Elementwise binary (broadcasting)
//===----------------------------------------------------------------------===//

// Rank extension and size-1 stretching on both sides.
// CHECK-LABEL: func.func @add
// CHECK-SAME: (%[[A:.*]]: tensor<2x1x4xf32>, %[[B:.*]]: tensor<3x1xf32>)
func.func @add(%a: tensor<2x1x4xf32>, %b: tensor<3x1xf32>) -> tensor<2x3x4xf32> {
  // CHECK: %[[R:.*]] = nn.add %[[A]], %[[B]] : (tensor<2x1x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
  %0 = nn.add %a, %b : (tensor<2x1x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
  // CHECK: return %[[R]]
  return %0 : tensor<2x3x4xf32>
}

// Integers, scalar right-hand side.
// CHECK-LABEL: func.func @sub
// CHECK-SAME: (%[[A:.*]]: tensor<4xi64>, %[[B:.*]]: tensor<i64>)
func.func @sub(%a: tensor<4xi64>, %b: tensor<i64>) -> tensor<4xi64> {
  // CHECK: nn.sub %[[A]], %[[B]] : (tensor<4xi64>, tensor<i64>) -> tensor<4xi64>
  %0 = nn.sub %a, %b : (tensor<4xi64>, tensor<i64>) -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// CHECK-LABEL: func.func @mul
// CHECK-SAME: (%[[A:.*]]: tensor<2x1xf16>, %[[B:.*]]: tensor<1x3xf16>)
func.func @mul(%a: tensor<2x1xf16>, %b: tensor<1x3xf16>) -> tensor<2x3xf16> {
  // CHECK: nn.mul %[[A]], %[[B]] : (tensor<2x1xf16>, tensor<1x3xf16>) -> tensor<2x3xf16>
  %0 = nn.mul %a, %b : (tensor<2x1xf16>, tensor<1x3xf16>) -> tensor<2x3xf16>
  return %0 : tensor<2x3xf16>
}

// The shorter operand on the left.
// CHECK-LABEL: func.func @div
// CHECK-SAME: (%[[A:.*]]: tensor<4x1xi32>, %[[B:.*]]: tensor<5x1x3xi32>)
func.func @div(%a: tensor<4x1xi32>, %b: tensor<5x1x3xi32>) -> tensor<5x4x3xi32> {
  // CHECK: nn.div %[[A]], %[[B]] : (tensor<4x1xi32>, tensor<5x1x3xi32>) -> tensor<5x4x3xi32>
  %0 = nn.div %a, %b : (tensor<4x1xi32>, tensor<5x1x3xi32>) -> tensor<5x4x3xi32>
  return %0 : tensor<5x4x3xi32>
}

// The exponent may have another element type; the result has the base's.
// CHECK-LABEL: func.func @pow
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>, %[[E:.*]]: tensor<3xi64>, %[[F:.*]]: tensor<f32>)
func.func @pow(%x: tensor<2x3xf32>, %e: tensor<3xi64>, %f: tensor<f32>)
    -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  // CHECK: nn.pow %[[X]], %[[E]] : (tensor<2x3xf32>, tensor<3xi64>) -> tensor<2x3xf32>
  %0 = nn.pow %x, %e : (tensor<2x3xf32>, tensor<3xi64>) -> tensor<2x3xf32>
  // CHECK: nn.pow %[[X]], %[[F]] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %1 = nn.pow %x, %f : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  return %0, %1 : tensor<2x3xf32>, tensor<2x3xf32>
}

// The result is i1 whatever the operand element type.
// CHECK-LABEL: func.func @equal
// CHECK-SAME: (%[[A:.*]]: tensor<4xi64>, %[[B:.*]]: tensor<i64>, %[[C:.*]]: tensor<2x1xf32>, %[[D:.*]]: tensor<1x3xf32>)
func.func @equal(%a: tensor<4xi64>, %b: tensor<i64>, %c: tensor<2x1xf32>,
                 %d: tensor<1x3xf32>) -> (tensor<4xi1>, tensor<2x3xi1>) {
  // CHECK: nn.equal %[[A]], %[[B]] : (tensor<4xi64>, tensor<i64>) -> tensor<4xi1>
  %0 = nn.equal %a, %b : (tensor<4xi64>, tensor<i64>) -> tensor<4xi1>
  // CHECK: nn.equal %[[C]], %[[D]] : (tensor<2x1xf32>, tensor<1x3xf32>) -> tensor<2x3xi1>
  %1 = nn.equal %c, %d : (tensor<2x1xf32>, tensor<1x3xf32>) -> tensor<2x3xi1>
  return %0, %1 : tensor<4xi1>, tensor<2x3xi1>
}

// All three operands broadcast together.
// CHECK-LABEL: func.func @where
// CHECK-SAME: (%[[C:.*]]: tensor<3x1x1xi1>, %[[X:.*]]: tensor<4x1xf32>, %[[Y:.*]]: tensor<5xf32>, %[[D:.*]]: tensor<1x4xi1>, %[[Z:.*]]: tensor<2x4xi64>, %[[S:.*]]: tensor<i64>)
func.func @where(%c: tensor<3x1x1xi1>, %x: tensor<4x1xf32>, %y: tensor<5xf32>,
                 %d: tensor<1x4xi1>, %z: tensor<2x4xi64>, %s: tensor<i64>)
    -> (tensor<3x4x5xf32>, tensor<2x4xi64>) {
  // CHECK: nn.where %[[C]], %[[X]], %[[Y]] : (tensor<3x1x1xi1>, tensor<4x1xf32>, tensor<5xf32>) -> tensor<3x4x5xf32>
  %0 = nn.where %c, %x, %y : (tensor<3x1x1xi1>, tensor<4x1xf32>, tensor<5xf32>) -> tensor<3x4x5xf32>
  // CHECK: nn.where %[[D]], %[[Z]], %[[S]] : (tensor<1x4xi1>, tensor<2x4xi64>, tensor<i64>) -> tensor<2x4xi64>
  %1 = nn.where %d, %z, %s : (tensor<1x4xi1>, tensor<2x4xi64>, tensor<i64>) -> tensor<2x4xi64>
  return %0, %1 : tensor<3x4x5xf32>, tensor<2x4xi64>
}

//===----------------------------------------------------------------------===//
// Elementwise unary
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @unary
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
func.func @unary(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: %[[SQRT:.*]] = nn.sqrt %[[X]] : tensor<2x3xf32>
  %0 = nn.sqrt %x : tensor<2x3xf32>
  // CHECK: %[[NEG:.*]] = nn.neg %[[SQRT]] : tensor<2x3xf32>
  %1 = nn.neg %0 : tensor<2x3xf32>
  // CHECK: %[[EXP:.*]] = nn.exp %[[NEG]] : tensor<2x3xf32>
  %2 = nn.exp %1 : tensor<2x3xf32>
  // CHECK: %[[LOG:.*]] = nn.log %[[EXP]] : tensor<2x3xf32>
  %3 = nn.log %2 : tensor<2x3xf32>
  // CHECK: %[[TANH:.*]] = nn.tanh %[[LOG]] : tensor<2x3xf32>
  %4 = nn.tanh %3 : tensor<2x3xf32>
  // CHECK: %[[ERF:.*]] = nn.erf %[[TANH]] : tensor<2x3xf32>
  %5 = nn.erf %4 : tensor<2x3xf32>
  // CHECK: %[[SIG:.*]] = nn.sigmoid %[[ERF]] : tensor<2x3xf32>
  %6 = nn.sigmoid %5 : tensor<2x3xf32>
  // CHECK: %[[RELU:.*]] = nn.relu %[[SIG]] : tensor<2x3xf32>
  %7 = nn.relu %6 : tensor<2x3xf32>
  // CHECK: return %[[RELU]]
  return %7 : tensor<2x3xf32>
}

// Neg also takes signed integers.
// CHECK-LABEL: func.func @neg_int
// CHECK-SAME: (%[[X:.*]]: tensor<4xi32>)
func.func @neg_int(%x: tensor<4xi32>) -> tensor<4xi32> {
  // CHECK: nn.neg %[[X]] : tensor<4xi32>
  %0 = nn.neg %x : tensor<4xi32>
  return %0 : tensor<4xi32>
}

// Default-valued attributes are elided when printed.
// CHECK-LABEL: func.func @leaky_relu
// CHECK-SAME: (%[[X:.*]]: tensor<4xbf16>)
func.func @leaky_relu(%x: tensor<4xbf16>) -> (tensor<4xbf16>, tensor<4xbf16>) {
  // CHECK: nn.leaky_relu %[[X]] : tensor<4xbf16>
  %0 = nn.leaky_relu %x : tensor<4xbf16>
  // CHECK: nn.leaky_relu %[[X]] {alpha = 2.000000e-01 : f64} : tensor<4xbf16>
  %1 = nn.leaky_relu %x {alpha = 0.2 : f64} : tensor<4xbf16>
  return %0, %1 : tensor<4xbf16>, tensor<4xbf16>
}

// CHECK-LABEL: func.func @gelu
// CHECK-SAME: (%[[X:.*]]: tensor<2x8xf32>)
func.func @gelu(%x: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
  // CHECK: nn.gelu %[[X]] : tensor<2x8xf32>
  %0 = nn.gelu %x : tensor<2x8xf32>
  // CHECK: nn.gelu %[[X]] {approximate = "tanh"} : tensor<2x8xf32>
  %1 = nn.gelu %x {approximate = "tanh"} : tensor<2x8xf32>
  return %0, %1 : tensor<2x8xf32>, tensor<2x8xf32>
}

// Each bound is optional; equal bounds are allowed.
// CHECK-LABEL: func.func @clip
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
func.func @clip(%x: tensor<4xf32>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  // CHECK: nn.clip %[[X]] {max = 6.000000e+00 : f64, min = 0.000000e+00 : f64} : tensor<4xf32>
  %0 = nn.clip %x {min = 0.0 : f64, max = 6.0 : f64} : tensor<4xf32>
  // CHECK: nn.clip %[[X]] {min = -1.000000e+00 : f64} : tensor<4xf32>
  %1 = nn.clip %x {min = -1.0 : f64} : tensor<4xf32>
  // CHECK: nn.clip %[[X]] {max = 1.000000e+00 : f64} : tensor<4xf32>
  %2 = nn.clip %x {max = 1.0 : f64} : tensor<4xf32>
  // CHECK: nn.clip %[[X]] : tensor<4xf32>
  %3 = nn.clip %x : tensor<4xf32>
  // CHECK: nn.clip %[[X]] {max = 2.000000e+00 : f64, min = 2.000000e+00 : f64} : tensor<4xf32>
  %4 = nn.clip %x {min = 2.0 : f64, max = 2.0 : f64} : tensor<4xf32>
  return %0, %1, %2, %3, %4 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @cast
// CHECK-SAME: (%[[I:.*]]: tensor<2x4xi64>, %[[F:.*]]: tensor<3xf32>)
func.func @cast(%i: tensor<2x4xi64>, %f: tensor<3xf32>)
    -> (tensor<2x4xf32>, tensor<3xi1>, tensor<3xf16>, tensor<3xi32>) {
  // CHECK: nn.cast %[[I]] {to = f32} : (tensor<2x4xi64>) -> tensor<2x4xf32>
  %0 = nn.cast %i {to = f32} : (tensor<2x4xi64>) -> tensor<2x4xf32>
  // CHECK: nn.cast %[[F]] {to = i1} : (tensor<3xf32>) -> tensor<3xi1>
  %1 = nn.cast %f {to = i1} : (tensor<3xf32>) -> tensor<3xi1>
  // CHECK: nn.cast %[[F]] {to = f16} : (tensor<3xf32>) -> tensor<3xf16>
  %2 = nn.cast %f {to = f16} : (tensor<3xf32>) -> tensor<3xf16>
  // CHECK: nn.cast %[[F]] {to = i32} : (tensor<3xf32>) -> tensor<3xi32>
  %3 = nn.cast %f {to = i32} : (tensor<3xf32>) -> tensor<3xi32>
  return %0, %1, %2, %3 : tensor<2x4xf32>, tensor<3xi1>, tensor<3xf16>, tensor<3xi32>
}

// CHECK-LABEL: func.func @dropout
// CHECK-SAME: (%[[X:.*]]: tensor<2x16xf32>)
func.func @dropout(%x: tensor<2x16xf32>) -> (tensor<2x16xf32>, tensor<2x16xf32>, tensor<2x16xf32>) {
  // CHECK: nn.dropout %[[X]] : tensor<2x16xf32>
  %0 = nn.dropout %x : tensor<2x16xf32>
  // CHECK: nn.dropout %[[X]] {ratio = 1.000000e-01 : f64, seed = 7 : i64} : tensor<2x16xf32>
  %1 = nn.dropout %x {ratio = 0.1 : f64, seed = 7 : i64} : tensor<2x16xf32>
  // CHECK: nn.dropout %[[X]] {ratio = 0.000000e+00 : f64} : tensor<2x16xf32>
  %2 = nn.dropout %x {ratio = 0.0 : f64} : tensor<2x16xf32>
  return %0, %1, %2 : tensor<2x16xf32>, tensor<2x16xf32>, tensor<2x16xf32>
}

// CHECK-LABEL: func.func @dropout_mask
func.func @dropout_mask(%x: tensor<2x16xf32>) -> tensor<2x16xi1> {
  // CHECK: %[[Y:.*]] = nn.dropout
  %0 = nn.dropout %x {ratio = 0.5 : f64} : tensor<2x16xf32>
  // CHECK: nn.dropout_mask %[[Y]] : (tensor<2x16xf32>) -> tensor<2x16xi1>
  %1 = nn.dropout_mask %0 : (tensor<2x16xf32>) -> tensor<2x16xi1>
  return %1 : tensor<2x16xi1>
}

//===----------------------------------------------------------------------===//
// Softmax family
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @softmax
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x8xf32>)
func.func @softmax(%x: tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  // CHECK: nn.softmax %[[X]] {axis = 2 : i64} : tensor<2x4x8xf32>
  %0 = nn.softmax %x {axis = 2 : i64} : tensor<2x4x8xf32>
  // CHECK: nn.softmax %[[X]] {axis = 0 : i64} : tensor<2x4x8xf32>
  %1 = nn.softmax %x {axis = 0 : i64} : tensor<2x4x8xf32>
  return %0, %1 : tensor<2x4x8xf32>, tensor<2x4x8xf32>
}

// CHECK-LABEL: func.func @log_softmax
// CHECK-SAME: (%[[X:.*]]: tensor<2x8xf32>)
func.func @log_softmax(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  // CHECK: nn.log_softmax %[[X]] {axis = 1 : i64} : tensor<2x8xf32>
  %0 = nn.log_softmax %x {axis = 1 : i64} : tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @matmul_2d
// CHECK-SAME: (%[[A:.*]]: tensor<2x4xf32>, %[[B:.*]]: tensor<4x3xf32>)
func.func @matmul_2d(%a: tensor<2x4xf32>, %b: tensor<4x3xf32>) -> tensor<2x3xf32> {
  // CHECK: nn.matmul %[[A]], %[[B]] : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %0 = nn.matmul %a, %b : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// Batch dimensions broadcast (8x1 with 2 -> 8x2); a matrix rhs is reused
// for every batch.
// CHECK-LABEL: func.func @matmul_batched
// CHECK-SAME: (%[[A:.*]]: tensor<8x1x16x64xf32>, %[[B:.*]]: tensor<2x64x32xf32>, %[[W:.*]]: tensor<64x32xf32>)
func.func @matmul_batched(%a: tensor<8x1x16x64xf32>, %b: tensor<2x64x32xf32>,
                          %w: tensor<64x32xf32>)
    -> (tensor<8x2x16x32xf32>, tensor<8x1x16x32xf32>) {
  // CHECK: nn.matmul %[[A]], %[[B]] : (tensor<8x1x16x64xf32>, tensor<2x64x32xf32>) -> tensor<8x2x16x32xf32>
  %0 = nn.matmul %a, %b : (tensor<8x1x16x64xf32>, tensor<2x64x32xf32>) -> tensor<8x2x16x32xf32>
  // CHECK: nn.matmul %[[A]], %[[W]] : (tensor<8x1x16x64xf32>, tensor<64x32xf32>) -> tensor<8x1x16x32xf32>
  %1 = nn.matmul %a, %w : (tensor<8x1x16x64xf32>, tensor<64x32xf32>) -> tensor<8x1x16x32xf32>
  return %0, %1 : tensor<8x2x16x32xf32>, tensor<8x1x16x32xf32>
}

// 1-D operands are promoted to matrices and the promoted dimension dropped:
// vector.vector is a scalar, vector.batch-of-matrices and
// batch-of-matrices.vector lose a dimension.
// CHECK-LABEL: func.func @matmul_vector
// CHECK-SAME: (%[[V:.*]]: tensor<4xf32>, %[[M:.*]]: tensor<2x4x3xf32>, %[[N:.*]]: tensor<2x3x4xf32>)
func.func @matmul_vector(%v: tensor<4xf32>, %m: tensor<2x4x3xf32>, %n: tensor<2x3x4xf32>)
    -> (tensor<f32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  // CHECK: nn.matmul %[[V]], %[[V]] : (tensor<4xf32>, tensor<4xf32>) -> tensor<f32>
  %0 = nn.matmul %v, %v : (tensor<4xf32>, tensor<4xf32>) -> tensor<f32>
  // CHECK: nn.matmul %[[V]], %[[M]] : (tensor<4xf32>, tensor<2x4x3xf32>) -> tensor<2x3xf32>
  %1 = nn.matmul %v, %m : (tensor<4xf32>, tensor<2x4x3xf32>) -> tensor<2x3xf32>
  // CHECK: nn.matmul %[[N]], %[[V]] : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  %2 = nn.matmul %n, %v : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return %0, %1, %2 : tensor<f32>, tensor<2x3xf32>, tensor<2x3xf32>
}

// CHECK-LABEL: func.func @gemm
// CHECK-SAME: (%[[A:.*]]: tensor<2x4xf32>, %[[AT:.*]]: tensor<4x2xf32>, %[[B:.*]]: tensor<4x3xf32>, %[[BT:.*]]: tensor<3x4xf32>, %[[C:.*]]: tensor<3xf32>, %[[C2:.*]]: tensor<2x1xf32>)
func.func @gemm(%a: tensor<2x4xf32>, %at: tensor<4x2xf32>, %b: tensor<4x3xf32>,
                %bt: tensor<3x4xf32>, %c: tensor<3xf32>, %c2: tensor<2x1xf32>)
    -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  // CHECK: nn.gemm %[[A]], %[[B]] : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %0 = nn.gemm %a, %b : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  // CHECK: nn.gemm %[[AT]], %[[B]] {trans_a = true} : (tensor<4x2xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %1 = nn.gemm %at, %b {trans_a = true} : (tensor<4x2xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  // CHECK: nn.gemm %[[A]], %[[BT]], %[[C]] {trans_b = true} : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %2 = nn.gemm %a, %bt, %c {trans_b = true} : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK: nn.gemm %[[AT]], %[[BT]], %[[C2]] {alpha = 5.000000e-01 : f64, beta = 2.000000e+00 : f64, trans_a = true, trans_b = true} : (tensor<4x2xf32>, tensor<3x4xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  %3 = nn.gemm %at, %bt, %c2 {alpha = 0.5 : f64, beta = 2.0 : f64, trans_a = true, trans_b = true}
      : (tensor<4x2xf32>, tensor<3x4xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  return %0, %1, %2, %3 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}

// Same padding: 8x8 stays 8x8.
// CHECK-LABEL: func.func @conv
// CHECK-SAME: (%[[X:.*]]: tensor<1x3x8x8xf32>, %[[W:.*]]: tensor<4x3x3x3xf32>, %[[B:.*]]: tensor<4xf32>)
func.func @conv(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>)
    -> tensor<1x4x8x8xf32> {
  // CHECK: nn.conv %[[X]], %[[W]], %[[B]] {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
  %0 = nn.conv %x, %w, %b {dilations = array<i64: 1, 1>, group = 1 : i64,
                           pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}
      : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
  return %0 : tensor<1x4x8x8xf32>
}

// No bias, 2 groups, per-dimension strides and dilations, asymmetric pads
// (begins 1, 0; ends 2, 1): H = (11 + 3 - 5) / 2 + 1 = 5,
// W = (9 + 1 - 2) / 3 + 1 = 3.
// CHECK-LABEL: func.func @conv_grouped_strided
// CHECK-SAME: (%[[X:.*]]: tensor<2x6x11x9xf32>, %[[W:.*]]: tensor<4x3x3x2xf32>)
func.func @conv_grouped_strided(%x: tensor<2x6x11x9xf32>, %w: tensor<4x3x3x2xf32>)
    -> tensor<2x4x5x3xf32> {
  // CHECK: nn.conv %[[X]], %[[W]] {dilations = array<i64: 2, 1>, group = 2 : i64, pads = array<i64: 1, 0, 2, 1>, strides = array<i64: 2, 3>} : (tensor<2x6x11x9xf32>, tensor<4x3x3x2xf32>) -> tensor<2x4x5x3xf32>
  %0 = nn.conv %x, %w {dilations = array<i64: 2, 1>, group = 2 : i64,
                       pads = array<i64: 1, 0, 2, 1>, strides = array<i64: 2, 3>}
      : (tensor<2x6x11x9xf32>, tensor<4x3x3x2xf32>) -> tensor<2x4x5x3xf32>
  return %0 : tensor<2x4x5x3xf32>
}

// 1-D and 3-D (depthwise-like, group 4) convolutions.
// CHECK-LABEL: func.func @conv_1d_3d
// CHECK-SAME: (%[[X1:.*]]: tensor<1x2x10xf32>, %[[W1:.*]]: tensor<3x2x4xf32>, %[[X3:.*]]: tensor<1x4x5x6x7xf32>, %[[W3:.*]]: tensor<8x1x3x3x3xf32>)
func.func @conv_1d_3d(%x1: tensor<1x2x10xf32>, %w1: tensor<3x2x4xf32>,
                      %x3: tensor<1x4x5x6x7xf32>, %w3: tensor<8x1x3x3x3xf32>)
    -> (tensor<1x3x7xf32>, tensor<1x8x3x3x4xf32>) {
  // CHECK: nn.conv %[[X1]], %[[W1]] {{.*}} : (tensor<1x2x10xf32>, tensor<3x2x4xf32>) -> tensor<1x3x7xf32>
  %0 = nn.conv %x1, %w1 {dilations = array<i64: 1>, pads = array<i64: 0, 0>, strides = array<i64: 1>}
      : (tensor<1x2x10xf32>, tensor<3x2x4xf32>) -> tensor<1x3x7xf32>
  // CHECK: nn.conv %[[X3]], %[[W3]] {{.*}}group = 4 : i64{{.*}} : (tensor<1x4x5x6x7xf32>, tensor<8x1x3x3x3xf32>) -> tensor<1x8x3x3x4xf32>
  %1 = nn.conv %x3, %w3 {dilations = array<i64: 1, 1, 1>, group = 4 : i64,
                         pads = array<i64: 1, 1, 1, 1, 1, 1>, strides = array<i64: 2, 2, 2>}
      : (tensor<1x4x5x6x7xf32>, tensor<8x1x3x3x3xf32>) -> tensor<1x8x3x3x4xf32>
  return %0, %1 : tensor<1x3x7xf32>, tensor<1x8x3x3x4xf32>
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @batch_normalization
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x8x8xf32>, %[[S:.*]]: tensor<4xf32>, %[[B:.*]]: tensor<4xf32>, %[[M:.*]]: tensor<4xf32>, %[[V:.*]]: tensor<4xf32>, %[[Y:.*]]: tensor<3x4xf32>)
func.func @batch_normalization(%x: tensor<2x4x8x8xf32>, %s: tensor<4xf32>,
                               %b: tensor<4xf32>, %m: tensor<4xf32>,
                               %v: tensor<4xf32>, %y: tensor<3x4xf32>)
    -> (tensor<2x4x8x8xf32>, tensor<3x4xf32>) {
  // CHECK: nn.batch_normalization %[[X]], %[[S]], %[[B]], %[[M]], %[[V]] : (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x8x8xf32>
  %0 = nn.batch_normalization %x, %s, %b, %m, %v
      : (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
      -> tensor<2x4x8x8xf32>
  // CHECK: nn.batch_normalization %[[Y]], %[[S]], %[[B]], %[[M]], %[[V]] {epsilon = 1.000000e-03 : f64, momentum = 5.000000e-01 : f64} : (tensor<3x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  %1 = nn.batch_normalization %y, %s, %b, %m, %v {epsilon = 1.0e-3 : f64, momentum = 0.5 : f64}
      : (tensor<3x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
      -> tensor<3x4xf32>
  return %0, %1 : tensor<2x4x8x8xf32>, tensor<3x4xf32>
}

// With and without bias; scale may broadcast to the normalized shape.
// CHECK-LABEL: func.func @layer_normalization
// CHECK-SAME: (%[[X:.*]]: tensor<2x16x64xf32>, %[[G:.*]]: tensor<64xf32>, %[[B:.*]]: tensor<64xf32>, %[[G2:.*]]: tensor<1x64xf32>)
func.func @layer_normalization(%x: tensor<2x16x64xf32>, %g: tensor<64xf32>,
                               %b: tensor<64xf32>, %g2: tensor<1x64xf32>)
    -> (tensor<2x16x64xf32>, tensor<2x16x64xf32>) {
  // CHECK: nn.layer_normalization %[[X]], %[[G]], %[[B]] {axis = 2 : i64} : (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  %0 = nn.layer_normalization %x, %g, %b {axis = 2 : i64, epsilon = 1.0e-05 : f64}
      : (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  // CHECK: nn.layer_normalization %[[X]], %[[G2]] {axis = 1 : i64, epsilon = 9.9999999999999995E-7 : f64} : (tensor<2x16x64xf32>, tensor<1x64xf32>) -> tensor<2x16x64xf32>
  %1 = nn.layer_normalization %x, %g2 {axis = 1 : i64, epsilon = 1.0e-06 : f64}
      : (tensor<2x16x64xf32>, tensor<1x64xf32>) -> tensor<2x16x64xf32>
  return %0, %1 : tensor<2x16x64xf32>, tensor<2x16x64xf32>
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @max_pool
// CHECK-SAME: (%[[X:.*]]: tensor<1x4x8x8xf32>, %[[Y:.*]]: tensor<1x1x7x7xf32>)
func.func @max_pool(%x: tensor<1x4x8x8xf32>, %y: tensor<1x1x7x7xf32>)
    -> (tensor<1x4x4x4xf32>, tensor<1x1x3x3xf32>, tensor<1x1x4x4xf32>) {
  // CHECK: nn.max_pool %[[X]] {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  %0 = nn.max_pool %x {ceil_mode = false, dilations = array<i64: 1, 1>,
                       kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>,
                       strides = array<i64: 2, 2>}
      : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  // 7 / 2: floor gives 3 windows, ceil 4.
  // CHECK: nn.max_pool %[[Y]] {{.*}} : (tensor<1x1x7x7xf32>) -> tensor<1x1x3x3xf32>
  %1 = nn.max_pool %y {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>,
                       pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>}
      : (tensor<1x1x7x7xf32>) -> tensor<1x1x3x3xf32>
  // CHECK: nn.max_pool %[[Y]] {ceil_mode = true, {{.*}}} : (tensor<1x1x7x7xf32>) -> tensor<1x1x4x4xf32>
  %2 = nn.max_pool %y {ceil_mode = true, dilations = array<i64: 1, 1>,
                       kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>,
                       strides = array<i64: 2, 2>}
      : (tensor<1x1x7x7xf32>) -> tensor<1x1x4x4xf32>
  return %0, %1, %2 : tensor<1x4x4x4xf32>, tensor<1x1x3x3xf32>, tensor<1x1x4x4xf32>
}

// In ceil mode a window that would start in the end padding is dropped:
// 5 + 1 + 1 padded, kernel 2, stride 2 gives ceil(5 / 2) + 1 = 4 windows,
// but the 4th starts at 6 >= 5 + 1, so 3 remain (as in PyTorch and the
// current ONNX spec).
// CHECK-LABEL: func.func @max_pool_ceil_last_window
// CHECK-SAME: (%[[X:.*]]: tensor<1x1x5xf32>, %[[Y:.*]]: tensor<1x2x6x9xf32>)
func.func @max_pool_ceil_last_window(%x: tensor<1x1x5xf32>, %y: tensor<1x2x6x9xf32>)
    -> (tensor<1x1x3xf32>, tensor<1x2x4x4xf32>) {
  // CHECK: nn.max_pool %[[X]] {{.*}} : (tensor<1x1x5xf32>) -> tensor<1x1x3xf32>
  %0 = nn.max_pool %x {ceil_mode = true, dilations = array<i64: 1>,
                       kernel_shape = array<i64: 2>, pads = array<i64: 1, 1>,
                       strides = array<i64: 2>}
      : (tensor<1x1x5xf32>) -> tensor<1x1x3xf32>
  // Dilated window in W: extent 5; H = ceil((6 + 2 - 3) / 2) + 1 = 4.
  // CHECK: nn.max_pool %[[Y]] {{.*}} : (tensor<1x2x6x9xf32>) -> tensor<1x2x4x4xf32>
  %1 = nn.max_pool %y {ceil_mode = true, dilations = array<i64: 1, 2>,
                       kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>,
                       strides = array<i64: 2, 2>}
      : (tensor<1x2x6x9xf32>) -> tensor<1x2x4x4xf32>
  return %0, %1 : tensor<1x1x3xf32>, tensor<1x2x4x4xf32>
}

// The drop applies in ceil mode even when nothing was rounded up: with end
// padding as wide as the window, (3 + 2 - 2) / 1 + 1 = 4 windows, the last
// starting at 3 >= 3 + 0. Floor mode keeps it (ONNX reference, onnxruntime).
// CHECK-LABEL: func.func @max_pool_ceil_exact
// CHECK-SAME: (%[[X:.*]]: tensor<1x1x3xf32>)
func.func @max_pool_ceil_exact(%x: tensor<1x1x3xf32>)
    -> (tensor<1x1x3xf32>, tensor<1x1x4xf32>) {
  // CHECK: nn.max_pool %[[X]] {ceil_mode = true, {{.*}}} : (tensor<1x1x3xf32>) -> tensor<1x1x3xf32>
  %0 = nn.max_pool %x {ceil_mode = true, dilations = array<i64: 1>,
                       kernel_shape = array<i64: 2>, pads = array<i64: 0, 2>,
                       strides = array<i64: 1>}
      : (tensor<1x1x3xf32>) -> tensor<1x1x3xf32>
  // CHECK: nn.max_pool %[[X]] {dilations = {{.*}}} : (tensor<1x1x3xf32>) -> tensor<1x1x4xf32>
  %1 = nn.max_pool %x {dilations = array<i64: 1>, kernel_shape = array<i64: 2>,
                       pads = array<i64: 0, 2>, strides = array<i64: 1>}
      : (tensor<1x1x3xf32>) -> tensor<1x1x4xf32>
  return %0, %1 : tensor<1x1x3xf32>, tensor<1x1x4xf32>
}

// CHECK-LABEL: func.func @average_pool
// CHECK-SAME: (%[[X:.*]]: tensor<1x3x10x10xf32>)
func.func @average_pool(%x: tensor<1x3x10x10xf32>)
    -> (tensor<1x3x3x3xf32>, tensor<1x3x4x4xf32>, tensor<1x3x5x5xf32>) {
  // CHECK: nn.average_pool %[[X]] {kernel_shape = array<i64: 3, 3>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 3, 3>} : (tensor<1x3x10x10xf32>) -> tensor<1x3x3x3xf32>
  %0 = nn.average_pool %x {kernel_shape = array<i64: 3, 3>, pads = array<i64: 0, 0, 0, 0>,
                           strides = array<i64: 3, 3>}
      : (tensor<1x3x10x10xf32>) -> tensor<1x3x3x3xf32>
  // CHECK: nn.average_pool %[[X]] {count_include_pad = true, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 3, 3>} : (tensor<1x3x10x10xf32>) -> tensor<1x3x4x4xf32>
  %1 = nn.average_pool %x {count_include_pad = true, kernel_shape = array<i64: 3, 3>,
                           pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 3, 3>}
      : (tensor<1x3x10x10xf32>) -> tensor<1x3x4x4xf32>
  // (10 - 3) / 2 = 3.5: floor gives 4 windows, ceil 5.
  // CHECK: nn.average_pool %[[X]] {ceil_mode = true, kernel_shape = array<i64: 3, 3>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x3x10x10xf32>) -> tensor<1x3x5x5xf32>
  %2 = nn.average_pool %x {ceil_mode = true, kernel_shape = array<i64: 3, 3>,
                           pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>}
      : (tensor<1x3x10x10xf32>) -> tensor<1x3x5x5xf32>
  return %0, %1, %2 : tensor<1x3x3x3xf32>, tensor<1x3x4x4xf32>, tensor<1x3x5x5xf32>
}

// CHECK-LABEL: func.func @global_average_pool
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x5x7xf32>, %[[Y:.*]]: tensor<1x8x4x5x6xf16>)
func.func @global_average_pool(%x: tensor<2x3x5x7xf32>, %y: tensor<1x8x4x5x6xf16>)
    -> (tensor<2x3x1x1xf32>, tensor<1x8x1x1x1xf16>) {
  // CHECK: nn.global_average_pool %[[X]] : (tensor<2x3x5x7xf32>) -> tensor<2x3x1x1xf32>
  %0 = nn.global_average_pool %x : (tensor<2x3x5x7xf32>) -> tensor<2x3x1x1xf32>
  // CHECK: nn.global_average_pool %[[Y]] : (tensor<1x8x4x5x6xf16>) -> tensor<1x8x1x1x1xf16>
  %1 = nn.global_average_pool %y : (tensor<1x8x4x5x6xf16>) -> tensor<1x8x1x1x1xf16>
  return %0, %1 : tensor<2x3x1x1xf32>, tensor<1x8x1x1x1xf16>
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @reduce_mean
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
func.func @reduce_mean(%x: tensor<2x3x4xf32>) -> (tensor<2x1x4xf32>, tensor<3xf32>) {
  // CHECK: nn.reduce_mean %[[X]] {axes = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
  %0 = nn.reduce_mean %x {axes = array<i64: 1>, keepdims = true}
      : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
  // CHECK: nn.reduce_mean %[[X]] {axes = array<i64: 0, 2>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  %1 = nn.reduce_mean %x {axes = array<i64: 0, 2>, keepdims = false}
      : (tensor<2x3x4xf32>) -> tensor<3xf32>
  return %0, %1 : tensor<2x1x4xf32>, tensor<3xf32>
}

// Reducing every axis gives a scalar without keepdims, all ones with it.
// CHECK-LABEL: func.func @reduce_sum
// CHECK-SAME: (%[[X:.*]]: tensor<2x8xf32>, %[[I:.*]]: tensor<2x8xi64>)
func.func @reduce_sum(%x: tensor<2x8xf32>, %i: tensor<2x8xi64>)
    -> (tensor<f32>, tensor<1x1xi64>) {
  // CHECK: nn.reduce_sum %[[X]] {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x8xf32>) -> tensor<f32>
  %0 = nn.reduce_sum %x {axes = array<i64: 0, 1>, keepdims = false}
      : (tensor<2x8xf32>) -> tensor<f32>
  // CHECK: nn.reduce_sum %[[I]] {axes = array<i64: 0, 1>} : (tensor<2x8xi64>) -> tensor<1x1xi64>
  %1 = nn.reduce_sum %i {axes = array<i64: 0, 1>} : (tensor<2x8xi64>) -> tensor<1x1xi64>
  return %0, %1 : tensor<f32>, tensor<1x1xi64>
}

// CHECK-LABEL: func.func @reduce_max
// CHECK-SAME: (%[[X:.*]]: tensor<2x8x3xf32>)
func.func @reduce_max(%x: tensor<2x8x3xf32>) -> (tensor<2x3xf32>, tensor<2x8x1xf32>) {
  // CHECK: nn.reduce_max %[[X]] {axes = array<i64: 1>, keepdims = false} : (tensor<2x8x3xf32>) -> tensor<2x3xf32>
  %0 = nn.reduce_max %x {axes = array<i64: 1>, keepdims = false}
      : (tensor<2x8x3xf32>) -> tensor<2x3xf32>
  // CHECK: nn.reduce_max %[[X]] {axes = array<i64: 2>} : (tensor<2x8x3xf32>) -> tensor<2x8x1xf32>
  %1 = nn.reduce_max %x {axes = array<i64: 2>} : (tensor<2x8x3xf32>) -> tensor<2x8x1xf32>
  return %0, %1 : tensor<2x3xf32>, tensor<2x8x1xf32>
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @reshape
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>, %[[S:.*]]: tensor<1xi64>)
func.func @reshape(%x: tensor<2x3x4xf32>, %s: tensor<1xi64>)
    -> (tensor<6x4xf32>, tensor<24xf32>, tensor<i64>) {
  // CHECK: nn.reshape %[[X]] {shape = array<i64: 6, 4>} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %0 = nn.reshape %x {shape = array<i64: 6, 4>} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  // CHECK: nn.reshape %[[X]] {shape = array<i64: 24>} : (tensor<2x3x4xf32>) -> tensor<24xf32>
  %1 = nn.reshape %x {shape = array<i64: 24>} : (tensor<2x3x4xf32>) -> tensor<24xf32>
  // CHECK: nn.reshape %[[S]] {shape = array<i64>} : (tensor<1xi64>) -> tensor<i64>
  %2 = nn.reshape %s {shape = array<i64>} : (tensor<1xi64>) -> tensor<i64>
  return %0, %1, %2 : tensor<6x4xf32>, tensor<24xf32>, tensor<i64>
}

// axis 0 and axis rank put a unit dimension first or last.
// CHECK-LABEL: func.func @flatten
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
func.func @flatten(%x: tensor<2x3x4xf32>)
    -> (tensor<2x12xf32>, tensor<6x4xf32>, tensor<1x24xf32>, tensor<24x1xf32>) {
  // CHECK: nn.flatten %[[X]] {axis = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
  %0 = nn.flatten %x {axis = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
  // CHECK: nn.flatten %[[X]] {axis = 2 : i64} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %1 = nn.flatten %x {axis = 2 : i64} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  // CHECK: nn.flatten %[[X]] {axis = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<1x24xf32>
  %2 = nn.flatten %x {axis = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<1x24xf32>
  // CHECK: nn.flatten %[[X]] {axis = 3 : i64} : (tensor<2x3x4xf32>) -> tensor<24x1xf32>
  %3 = nn.flatten %x {axis = 3 : i64} : (tensor<2x3x4xf32>) -> tensor<24x1xf32>
  return %0, %1, %2, %3 : tensor<2x12xf32>, tensor<6x4xf32>, tensor<1x24xf32>, tensor<24x1xf32>
}

// CHECK-LABEL: func.func @transpose
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
func.func @transpose(%x: tensor<2x3x4xf32>) -> (tensor<4x2x3xf32>, tensor<2x3x4xf32>) {
  // CHECK: nn.transpose %[[X]] {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %0 = nn.transpose %x {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  // CHECK: nn.transpose %[[X]] {perm = array<i64: 0, 1, 2>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %1 = nn.transpose %x {perm = array<i64: 0, 1, 2>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %0, %1 : tensor<4x2x3xf32>, tensor<2x3x4xf32>
}

// CHECK-LABEL: func.func @squeeze
// CHECK-SAME: (%[[X:.*]]: tensor<1x2x1x4x1xf32>, %[[S:.*]]: tensor<1x1xi64>)
func.func @squeeze(%x: tensor<1x2x1x4x1xf32>, %s: tensor<1x1xi64>)
    -> (tensor<2x4xf32>, tensor<1x2x4xf32>, tensor<i64>) {
  // CHECK: nn.squeeze %[[X]] {axes = array<i64: 0, 2, 4>} : (tensor<1x2x1x4x1xf32>) -> tensor<2x4xf32>
  %0 = nn.squeeze %x {axes = array<i64: 0, 2, 4>} : (tensor<1x2x1x4x1xf32>) -> tensor<2x4xf32>
  // CHECK: nn.squeeze %[[X]] {axes = array<i64: 2, 4>} : (tensor<1x2x1x4x1xf32>) -> tensor<1x2x4xf32>
  %1 = nn.squeeze %x {axes = array<i64: 2, 4>} : (tensor<1x2x1x4x1xf32>) -> tensor<1x2x4xf32>
  // CHECK: nn.squeeze %[[S]] {axes = array<i64: 0, 1>} : (tensor<1x1xi64>) -> tensor<i64>
  %2 = nn.squeeze %s {axes = array<i64: 0, 1>} : (tensor<1x1xi64>) -> tensor<i64>
  return %0, %1, %2 : tensor<2x4xf32>, tensor<1x2x4xf32>, tensor<i64>
}

// Axes index the result: 0 and 3 of a rank-4 result.
// CHECK-LABEL: func.func @unsqueeze
// CHECK-SAME: (%[[X:.*]]: tensor<2x4xf32>, %[[S:.*]]: tensor<i64>)
func.func @unsqueeze(%x: tensor<2x4xf32>, %s: tensor<i64>)
    -> (tensor<1x2x4x1xf32>, tensor<2x1x1x4xf32>, tensor<1xi64>) {
  // CHECK: nn.unsqueeze %[[X]] {axes = array<i64: 0, 3>} : (tensor<2x4xf32>) -> tensor<1x2x4x1xf32>
  %0 = nn.unsqueeze %x {axes = array<i64: 0, 3>} : (tensor<2x4xf32>) -> tensor<1x2x4x1xf32>
  // CHECK: nn.unsqueeze %[[X]] {axes = array<i64: 1, 2>} : (tensor<2x4xf32>) -> tensor<2x1x1x4xf32>
  %1 = nn.unsqueeze %x {axes = array<i64: 1, 2>} : (tensor<2x4xf32>) -> tensor<2x1x1x4xf32>
  // CHECK: nn.unsqueeze %[[S]] {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %2 = nn.unsqueeze %s {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  return %0, %1, %2 : tensor<1x2x4x1xf32>, tensor<2x1x1x4xf32>, tensor<1xi64>
}

// CHECK-LABEL: func.func @expand
// CHECK-SAME: (%[[X:.*]]: tensor<3x1xf32>, %[[S:.*]]: tensor<i1>)
func.func @expand(%x: tensor<3x1xf32>, %s: tensor<i1>)
    -> (tensor<3x4xf32>, tensor<2x3x4xf32>, tensor<3x1xf32>, tensor<2x2xi1>) {
  // CHECK: nn.expand %[[X]] {shape = array<i64: 3, 4>} : (tensor<3x1xf32>) -> tensor<3x4xf32>
  %0 = nn.expand %x {shape = array<i64: 3, 4>} : (tensor<3x1xf32>) -> tensor<3x4xf32>
  // CHECK: nn.expand %[[X]] {shape = array<i64: 2, 3, 4>} : (tensor<3x1xf32>) -> tensor<2x3x4xf32>
  %1 = nn.expand %x {shape = array<i64: 2, 3, 4>} : (tensor<3x1xf32>) -> tensor<2x3x4xf32>
  // CHECK: nn.expand %[[X]] {shape = array<i64: 3, 1>} : (tensor<3x1xf32>) -> tensor<3x1xf32>
  %2 = nn.expand %x {shape = array<i64: 3, 1>} : (tensor<3x1xf32>) -> tensor<3x1xf32>
  // CHECK: nn.expand %[[S]] {shape = array<i64: 2, 2>} : (tensor<i1>) -> tensor<2x2xi1>
  %3 = nn.expand %s {shape = array<i64: 2, 2>} : (tensor<i1>) -> tensor<2x2xi1>
  return %0, %1, %2, %3 : tensor<3x4xf32>, tensor<2x3x4xf32>, tensor<3x1xf32>, tensor<2x2xi1>
}

// CHECK-LABEL: func.func @concat
// CHECK-SAME: (%[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<2x5xf32>, %[[C:.*]]: tensor<2x1xf32>, %[[I:.*]]: tensor<3xi64>)
func.func @concat(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>, %c: tensor<2x1xf32>,
                  %i: tensor<3xi64>)
    -> (tensor<2x9xf32>, tensor<4x3xf32>, tensor<3xi64>) {
  // CHECK: nn.concat %[[A]], %[[B]], %[[C]] {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>, tensor<2x1xf32>) -> tensor<2x9xf32>
  %0 = nn.concat %a, %b, %c {axis = 1 : i64}
      : (tensor<2x3xf32>, tensor<2x5xf32>, tensor<2x1xf32>) -> tensor<2x9xf32>
  // CHECK: nn.concat %[[A]], %[[A]] {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  %1 = nn.concat %a, %a {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  // CHECK: nn.concat %[[I]] {axis = 0 : i64} : (tensor<3xi64>) -> tensor<3xi64>
  %2 = nn.concat %i {axis = 0 : i64} : (tensor<3xi64>) -> tensor<3xi64>
  return %0, %1, %2 : tensor<2x9xf32>, tensor<4x3xf32>, tensor<3xi64>
}

// Unequal pieces, including an empty one.
// CHECK-LABEL: func.func @split
// CHECK-SAME: (%[[X:.*]]: tensor<2x12xf32>)
func.func @split(%x: tensor<2x12xf32>)
    -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x5xf32>, tensor<2x0xf32>, tensor<2x7xf32>, tensor<1x12xf32>) {
  // CHECK: %[[S:.*]]:3 = nn.split %[[X]] {axis = 1 : i64, split_sizes = array<i64: 4, 4, 4>} : (tensor<2x12xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>)
  %0:3 = nn.split %x {axis = 1 : i64, split_sizes = array<i64: 4, 4, 4>}
      : (tensor<2x12xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>)
  // CHECK: %[[T:.*]]:3 = nn.split %[[X]] {axis = 1 : i64, split_sizes = array<i64: 5, 0, 7>} : (tensor<2x12xf32>) -> (tensor<2x5xf32>, tensor<2x0xf32>, tensor<2x7xf32>)
  %1:3 = nn.split %x {axis = 1 : i64, split_sizes = array<i64: 5, 0, 7>}
      : (tensor<2x12xf32>) -> (tensor<2x5xf32>, tensor<2x0xf32>, tensor<2x7xf32>)
  // CHECK: %[[U:.*]]:2 = nn.split %[[X]] {axis = 0 : i64, split_sizes = array<i64: 1, 1>} : (tensor<2x12xf32>) -> (tensor<1x12xf32>, tensor<1x12xf32>)
  %2:2 = nn.split %x {axis = 0 : i64, split_sizes = array<i64: 1, 1>}
      : (tensor<2x12xf32>) -> (tensor<1x12xf32>, tensor<1x12xf32>)
  // CHECK: return %[[S]]#0, %[[S]]#1, %[[S]]#2, %[[T]]#0, %[[T]]#1, %[[T]]#2, %[[U]]#1
  return %0#0, %0#1, %0#2, %1#0, %1#1, %1#2, %2#1
      : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x5xf32>, tensor<2x0xf32>, tensor<2x7xf32>, tensor<1x12xf32>
}

// The result shape is `sizes`. A negative step walks backwards from `start`:
// start 8, size 3, step -3 reads 8, 5, 2 (ONNX starts=8, ends=1, steps=-3).
// CHECK-LABEL: func.func @slice
// CHECK-SAME: (%[[X:.*]]: tensor<2x6xf32>, %[[Y:.*]]: tensor<4x10xi64>)
func.func @slice(%x: tensor<2x6xf32>, %y: tensor<4x10xi64>)
    -> (tensor<2x2xf32>, tensor<4x3xi64>, tensor<0x6xf32>) {
  // CHECK: nn.slice %[[X]] {sizes = array<i64: 2, 2>, starts = array<i64: 0, 1>, steps = array<i64: 1, 2>} : (tensor<2x6xf32>) -> tensor<2x2xf32>
  %0 = nn.slice %x {sizes = array<i64: 2, 2>, starts = array<i64: 0, 1>, steps = array<i64: 1, 2>}
      : (tensor<2x6xf32>) -> tensor<2x2xf32>
  // CHECK: nn.slice %[[Y]] {sizes = array<i64: 4, 3>, starts = array<i64: 3, 8>, steps = array<i64: -1, -3>} : (tensor<4x10xi64>) -> tensor<4x3xi64>
  %1 = nn.slice %y {sizes = array<i64: 4, 3>, starts = array<i64: 3, 8>, steps = array<i64: -1, -3>}
      : (tensor<4x10xi64>) -> tensor<4x3xi64>
  // An empty slice.
  // CHECK: nn.slice %[[X]] {sizes = array<i64: 0, 6>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : (tensor<2x6xf32>) -> tensor<0x6xf32>
  %2 = nn.slice %x {sizes = array<i64: 0, 6>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>}
      : (tensor<2x6xf32>) -> tensor<0x6xf32>
  return %0, %1, %2 : tensor<2x2xf32>, tensor<4x3xi64>, tensor<0x6xf32>
}

// The indices' shape replaces the gathered axis.
// CHECK-LABEL: func.func @gather
// CHECK-SAME: (%[[T:.*]]: tensor<100x16xf32>, %[[I:.*]]: tensor<2x8xi64>, %[[D:.*]]: tensor<3x5x4xf32>, %[[J:.*]]: tensor<i32>)
func.func @gather(%t: tensor<100x16xf32>, %i: tensor<2x8xi64>, %d: tensor<3x5x4xf32>,
                  %j: tensor<i32>)
    -> (tensor<2x8x16xf32>, tensor<3x2x8x4xf32>, tensor<3x5xf32>) {
  // CHECK: nn.gather %[[T]], %[[I]] {axis = 0 : i64} : (tensor<100x16xf32>, tensor<2x8xi64>) -> tensor<2x8x16xf32>
  %0 = nn.gather %t, %i {axis = 0 : i64} : (tensor<100x16xf32>, tensor<2x8xi64>) -> tensor<2x8x16xf32>
  // CHECK: nn.gather %[[D]], %[[I]] {axis = 1 : i64} : (tensor<3x5x4xf32>, tensor<2x8xi64>) -> tensor<3x2x8x4xf32>
  %1 = nn.gather %d, %i {axis = 1 : i64} : (tensor<3x5x4xf32>, tensor<2x8xi64>) -> tensor<3x2x8x4xf32>
  // A scalar index removes the axis.
  // CHECK: nn.gather %[[D]], %[[J]] {axis = 2 : i64} : (tensor<3x5x4xf32>, tensor<i32>) -> tensor<3x5xf32>
  %2 = nn.gather %d, %j {axis = 2 : i64} : (tensor<3x5x4xf32>, tensor<i32>) -> tensor<3x5xf32>
  return %0, %1, %2 : tensor<2x8x16xf32>, tensor<3x2x8x4xf32>, tensor<3x5xf32>
}

//===----------------------------------------------------------------------===//
// Gradients of convolution and pooling, training-mode batch normalization
//===----------------------------------------------------------------------===//

// The gradient ops restate the forward op's shapes: the input shape and the
// kernel shape are attributes where no operand carries them.
// CHECK-LABEL: func.func @conv_backward
// CHECK-SAME: (%[[DY:.*]]: tensor<2x4x5x3xf32>, %[[W:.*]]: tensor<4x3x3x2xf32>, %[[X:.*]]: tensor<2x6x11x9xf32>)
func.func @conv_backward(%dy: tensor<2x4x5x3xf32>, %w: tensor<4x3x3x2xf32>,
                         %x: tensor<2x6x11x9xf32>)
    -> (tensor<2x6x11x9xf32>, tensor<4x3x3x2xf32>) {
  // CHECK: nn.conv_backward_input %[[DY]], %[[W]] {dilations = array<i64: 2, 1>, group = 2 : i64, input_shape = array<i64: 2, 6, 11, 9>, pads = array<i64: 1, 0, 2, 1>, strides = array<i64: 2, 3>} : (tensor<2x4x5x3xf32>, tensor<4x3x3x2xf32>) -> tensor<2x6x11x9xf32>
  %0 = nn.conv_backward_input %dy, %w {dilations = array<i64: 2, 1>, group = 2 : i64,
                                       input_shape = array<i64: 2, 6, 11, 9>,
                                       pads = array<i64: 1, 0, 2, 1>, strides = array<i64: 2, 3>}
      : (tensor<2x4x5x3xf32>, tensor<4x3x3x2xf32>) -> tensor<2x6x11x9xf32>
  // CHECK: nn.conv_backward_weight %[[DY]], %[[X]] {dilations = array<i64: 2, 1>, group = 2 : i64, kernel_shape = array<i64: 3, 2>, pads = array<i64: 1, 0, 2, 1>, strides = array<i64: 2, 3>} : (tensor<2x4x5x3xf32>, tensor<2x6x11x9xf32>) -> tensor<4x3x3x2xf32>
  %1 = nn.conv_backward_weight %dy, %x {dilations = array<i64: 2, 1>, group = 2 : i64,
                                        kernel_shape = array<i64: 3, 2>,
                                        pads = array<i64: 1, 0, 2, 1>, strides = array<i64: 2, 3>}
      : (tensor<2x4x5x3xf32>, tensor<2x6x11x9xf32>) -> tensor<4x3x3x2xf32>
  return %0, %1 : tensor<2x6x11x9xf32>, tensor<4x3x3x2xf32>
}

// CHECK-LABEL: func.func @pool_grads
// CHECK-SAME: (%[[DY:.*]]: tensor<1x4x4x4xf32>, %[[X:.*]]: tensor<1x4x7x7xf32>)
func.func @pool_grads(%dy: tensor<1x4x4x4xf32>, %x: tensor<1x4x7x7xf32>)
    -> (tensor<1x4x7x7xf32>, tensor<1x4x7x7xf32>) {
  // CHECK: nn.max_pool_grad %[[DY]], %[[X]] {ceil_mode = true, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x4x4x4xf32>, tensor<1x4x7x7xf32>) -> tensor<1x4x7x7xf32>
  %0 = nn.max_pool_grad %dy, %x {ceil_mode = true, dilations = array<i64: 1, 1>,
                                 kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>,
                                 strides = array<i64: 2, 2>}
      : (tensor<1x4x4x4xf32>, tensor<1x4x7x7xf32>) -> tensor<1x4x7x7xf32>
  // CHECK: nn.average_pool_grad %[[DY]] {count_include_pad = true, input_shape = array<i64: 1, 4, 7, 7>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x4x4x4xf32>) -> tensor<1x4x7x7xf32>
  %1 = nn.average_pool_grad %dy {count_include_pad = true, input_shape = array<i64: 1, 4, 7, 7>,
                                 kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>,
                                 strides = array<i64: 2, 2>}
      : (tensor<1x4x4x4xf32>) -> tensor<1x4x7x7xf32>
  return %0, %1 : tensor<1x4x7x7xf32>, tensor<1x4x7x7xf32>
}

// CHECK-LABEL: func.func @batch_norm_train
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x8x8xf32>, %[[S:.*]]: tensor<4xf32>, %[[B:.*]]: tensor<4xf32>, %[[M:.*]]: tensor<4xf32>, %[[V:.*]]: tensor<4xf32>)
func.func @batch_norm_train(%x: tensor<2x4x8x8xf32>, %s: tensor<4xf32>, %b: tensor<4xf32>,
                            %m: tensor<4xf32>, %v: tensor<4xf32>)
    -> (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>) {
  // CHECK: = nn.batch_norm_train %[[X]], %[[S]], %[[B]], %[[M]], %[[V]] {momentum = 5.000000e-01 : f64} : (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>)
  %0:3 = nn.batch_norm_train %x, %s, %b, %m, %v {momentum = 0.5 : f64}
      : (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
      -> (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>)
  return %0#0, %0#1, %0#2 : tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @check_size(
// CHECK: nn.check_size %{{.*}}, %{{.*}} {expected = 3 : i64, op_type = "NonZero", output = "result"} : tensor<2x3xi64>, tensor<i64>
func.func @check_size(%y: tensor<2x3xi64>, %n: tensor<i64>) -> tensor<2x3xi64> {
  %0 = nn.check_size %y, %n {expected = 3 : i64, op_type = "NonZero", output = "result"} : tensor<2x3xi64>, tensor<i64>
  return %0 : tensor<2x3xi64>
}

// CHECK-LABEL: func.func @check_index_range(
// CHECK: nn.check_index_range %{{.*}}, %{{.*}} {input = "idx", lower = -61 : i64, node = "/tok/Gather", op_type = "Gather", upper = 61 : i64} : i32
func.func @check_index_range(%min: i32, %max: i32) {
  nn.check_index_range %min, %max {input = "idx", lower = -61 : i64, node = "/tok/Gather", op_type = "Gather", upper = 61 : i64} : i32
  return
}
