// RUN: pipedream-opt %s -split-input-file -pipe-annotate-costs="device=cpu" | FileCheck %s
// RUN: pipedream-opt %s -split-input-file -pipe-annotate-costs="device=h200" | FileCheck %s --check-prefix=H200

// The cpu model (CostModel.cpp): 0.5 us per op, contractions at 1e11
// FLOP/s, other ops at 2e10 FLOP/s, memory at 2e10 B/s.
//
// matmul 4x8 x 8x16: 2*4*8*16 = 1024 FLOP (10.24 ns), reads and writes
// (32 + 128 + 64) * 4 = 896 bytes (44.8 ns): memory bound, 0.5448 us. %x
// is an input no gradient reaches: no input gradient; %w is a trainable
// weight: a weight gradient of one forward, 512 parameter bytes, and the
// backward keeps %x (128 bytes) for it.
// add (bias): 64 FLOP, (64 + 16 + 64) * 4 = 576 bytes (28.8 ns); linear:
// keeps nothing; the frozen %b counts as frozen bytes.
// relu: 512 bytes (25.6 ns); keeps its operand (256 bytes); input gradient
// only (its operand depends on %w).
// reshape: a view, free.

// CHECK: module attributes {pipe.device = {link_bandwidth = 5.000000e+09 : f64
// CHECK-SAME: name = "cpu"
// CHECK-LABEL: func.func @mlp
// CHECK: nn.matmul
// CHECK-SAME: pipe.cost = {activation_bytes = 128 : i64, backward_input = 0.000000e+00 : f64, backward_weight = 5.448000e-07 : f64, forward = 5.448000e-07 : f64, frozen_bytes = 0 : i64, output_bytes = 256 : i64, parameter_bytes = 512 : i64, source = "analytical"}
// CHECK: nn.add
// CHECK-SAME: pipe.cost = {activation_bytes = 0 : i64, backward_input = 5.288000e-07 : f64, backward_weight = 0.000000e+00 : f64, forward = 5.288000e-07 : f64, frozen_bytes = 64 : i64, output_bytes = 256 : i64, parameter_bytes = 0 : i64, source = "analytical"}
// CHECK: nn.relu
// CHECK-SAME: activation_bytes = 256 : i64, backward_input = 5.256000e-07 : f64, backward_weight = 0.000000e+00 : f64
// CHECK: nn.reshape
// CHECK-SAME: pipe.cost = {activation_bytes = 0 : i64, backward_input = 0.000000e+00 : f64, backward_weight = 0.000000e+00 : f64, forward = 0.000000e+00 : f64
// CHECK: return
// The h200 model: 3 us per kernel launch dominates small ops; 896 bytes at
// 4.8 TB/s add 0.19 ns.
// H200: name = "h200"
// H200: nn.matmul
// H200-SAME: backward_weight = [[T:3\.000[0-9]*E-6]] : f64, forward = [[T]] : f64
func.func @mlp(%x: tensor<4x8xf32>,
               %w: tensor<8x16xf32> {nn.param = dense<1.0> : tensor<8x16xf32>},
               %b: tensor<16xf32> {nn.param = dense<0.0> : tensor<16xf32>, nn.frozen})
    -> tensor<64xf32> {
  %0 = nn.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %1 = nn.add %0, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %2 = nn.relu %1 : tensor<4x16xf32>
  %3 = nn.reshape %2 {shape = array<i64: 64>} : (tensor<4x16xf32>) -> tensor<64xf32>
  return %3 : tensor<64xf32>
}

// -----

// A weight read twice counts once (at its first reader). Each matmul keeps
// its activation operand for the weight gradient (64 bytes); the mul by a
// constant keeps nothing (its gradient is the constant times the output
// gradient); constants get no cost.
// CHECK-LABEL: func.func @shared
// CHECK: nn.matmul
// CHECK-SAME: activation_bytes = 64 : i64
// CHECK-SAME: parameter_bytes = 64 : i64
// CHECK: nn.constant
// CHECK-NOT: pipe.cost
// CHECK-SAME: dense<2.000000e+00>
// CHECK: nn.mul
// CHECK-SAME: activation_bytes = 0 : i64, backward_input = {{.*}}, backward_weight = 0.000000e+00 : f64
// CHECK: nn.matmul
// CHECK-SAME: activation_bytes = 64 : i64
// CHECK-SAME: parameter_bytes = 0 : i64
func.func @shared(%x: tensor<4x4xf32>,
                  %w: tensor<4x4xf32> {nn.param = dense<1.0> : tensor<4x4xf32>})
    -> tensor<4x4xf32> {
  %h = nn.matmul %x, %w : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %c = nn.constant dense<2.0> : tensor<f32>
  %s = nn.mul %h, %c : (tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
  %y = nn.matmul %s, %w : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}

// -----

// A torch Linear, x @ transpose(w): the transposed weight is weight-derived
// (nn-autodiff recomputes it in the backward, docs/Training.md), so the
// matmul keeps only %x (128 bytes, not the 512 of the transposed weight)
// and computes w's gradient (backward_weight = one forward), as the
// matmul of @mlp does; w's 512 bytes are counted once, at the transpose.
// CHECK-LABEL: func.func @linear_wt
// CHECK: nn.transpose
// CHECK-SAME: parameter_bytes = 512 : i64
// CHECK: nn.matmul
// CHECK-SAME: pipe.cost = {activation_bytes = 128 : i64, backward_input = 0.000000e+00 : f64, backward_weight = 5.448000e-07 : f64, forward = 5.448000e-07 : f64, frozen_bytes = 0 : i64, output_bytes = 256 : i64, parameter_bytes = 0 : i64, source = "analytical"}
func.func @linear_wt(%x: tensor<4x8xf32>,
                     %w: tensor<16x8xf32> {nn.param = dense<1.0> : tensor<16x8xf32>})
    -> tensor<4x16xf32> {
  %t = nn.transpose %w {perm = array<i64: 1, 0>} : (tensor<16x8xf32>) -> tensor<8x16xf32>
  %0 = nn.matmul %x, %t : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}
