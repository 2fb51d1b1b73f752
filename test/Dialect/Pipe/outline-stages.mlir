// RUN: pipedream-opt %s -split-input-file -pipe-outline-stages | FileCheck %s
// RUN: pipedream-opt %s -split-input-file -pipe-outline-stages | pipedream-opt -split-input-file > /dev/null

// Three stages; %a skips stage 1 (a residual), the constant is used by two
// stages, the function returns values of stages 0 and 2.

// CHECK-LABEL: func.func private @net_stage0
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32> {nn.name = "x"}) -> tensor<4xf32>
// CHECK-SAME: attributes {pipe.stage = #pipe.stage<0>}
// CHECK-NEXT: %[[A:.*]] = nn.relu %[[X]]
// CHECK-NEXT: return %[[A]]

// CHECK-LABEL: func.func private @net_stage1
// CHECK-SAME: (%[[W:.*]]: tensor<4xf32> {nn.name = "w", nn.param = dense<1.000000e+00> : tensor<4xf32>}, %[[A1:.*]]: tensor<4xf32> {pipe.received_from = #pipe.stage<0>}) -> tensor<4xf32>
// CHECK-SAME: attributes {pipe.stage = #pipe.stage<1>}
// CHECK-NEXT: %[[B:.*]] = nn.mul %[[A1]], %[[W]]
// CHECK-NEXT: %[[K:.*]] = nn.constant dense<2.000000e+00>
// CHECK-NEXT: %[[C:.*]] = nn.add %[[B]], %[[K]]
// CHECK-NEXT: return %[[C]]

// CHECK-LABEL: func.func private @net_stage2
// CHECK-SAME: (%[[A2:.*]]: tensor<4xf32> {pipe.received_from = #pipe.stage<0>}, %[[C2:.*]]: tensor<4xf32> {pipe.received_from = #pipe.stage<1>}) -> tensor<4xf32>
// CHECK-NEXT: %[[D:.*]] = nn.add %[[C2]], %[[A2]]
// CHECK-NEXT: %[[K2:.*]] = nn.constant dense<2.000000e+00>
// CHECK-NEXT: %[[E:.*]] = nn.mul %[[D]], %[[K2]]
// CHECK-NEXT: return %[[E]]

// CHECK-LABEL: func.func @net
// CHECK-SAME: (%[[GX:.*]]: tensor<4xf32> {nn.name = "x"}, %[[GW:.*]]: tensor<4xf32> {nn.name = "w"
// CHECK-NEXT: %[[S0:.*]] = call @net_stage0(%[[GX]]) {pipe.stage = #pipe.stage<0>}
// CHECK-NEXT: %[[T01:.*]] = pipe.transfer %[[S0]] from stage 0 to stage 1 : tensor<4xf32>
// CHECK-NEXT: %[[S1:.*]] = call @net_stage1(%[[GW]], %[[T01]]) {pipe.stage = #pipe.stage<1>}
// CHECK-NEXT: %[[T02:.*]] = pipe.transfer %[[S0]] from stage 0 to stage 2 : tensor<4xf32>
// CHECK-NEXT: %[[T12:.*]] = pipe.transfer %[[S1]] from stage 1 to stage 2 : tensor<4xf32>
// CHECK-NEXT: %[[S2:.*]] = call @net_stage2(%[[T02]], %[[T12]]) {pipe.stage = #pipe.stage<2>}
// CHECK-NEXT: return %[[S2]], %[[S0]]
func.func @net(%x: tensor<4xf32> {nn.name = "x"},
               %w: tensor<4xf32> {nn.name = "w", nn.param = dense<1.0> : tensor<4xf32>})
    -> (tensor<4xf32>, tensor<4xf32>) {
  %a = nn.relu %x {pipe.stage = #pipe.stage<0>} : tensor<4xf32>
  %k = nn.constant dense<2.0> : tensor<4xf32>
  %b = nn.mul %a, %w {pipe.stage = #pipe.stage<1>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %c = nn.add %b, %k {pipe.stage = #pipe.stage<1>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %d = nn.add %c, %a {pipe.stage = #pipe.stage<2>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %e = nn.mul %d, %k {pipe.stage = #pipe.stage<2>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %e, %a : tensor<4xf32>, tensor<4xf32>
}

// -----

// Interleaved: two stages with two chunks each; piece c * 2 + i is stage i
// chunk c, so the last piece of chunk 0 (stage 1) feeds stage 0 chunk 1.

// CHECK-LABEL: func.func private @f_stage0(
// CHECK-SAME: attributes {pipe.stage = #pipe.stage<0>}
// CHECK-LABEL: func.func private @f_stage1(
// CHECK-SAME: attributes {pipe.stage = #pipe.stage<1>}
// CHECK-LABEL: func.func private @f_stage0_chunk1(
// CHECK-SAME: attributes {pipe.stage = #pipe.stage<0, chunk = 1>}
// CHECK-LABEL: func.func private @f_stage1_chunk1(
// CHECK-SAME: attributes {pipe.stage = #pipe.stage<1, chunk = 1>}
// CHECK-LABEL: func.func @f(
// CHECK: call @f_stage0
// CHECK: pipe.transfer %{{.*}} from stage 0 to stage 1
// CHECK: call @f_stage1
// CHECK: pipe.transfer %{{.*}} from stage 1 to stage 0 chunk 1
// CHECK: call @f_stage0_chunk1
// CHECK: pipe.transfer %{{.*}} from stage 0 chunk 1 to stage 1 chunk 1
// CHECK: call @f_stage1_chunk1
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.partition = #pipe.partition<method = "manual", stages = 2, chunks = 2, schedule = "interleaved-1f1b", microbatches = 2, slowest = 1.0 : f64, ideal = 1.0 : f64>} {
  %0 = nn.relu %x {pipe.stage = #pipe.stage<0>} : tensor<4xf32>
  %1 = nn.relu %0 {pipe.stage = #pipe.stage<1>} : tensor<4xf32>
  %2 = nn.relu %1 {pipe.stage = #pipe.stage<0, chunk = 1>} : tensor<4xf32>
  %3 = nn.relu %2 {pipe.stage = #pipe.stage<1, chunk = 1>} : tensor<4xf32>
  return %3 : tensor<4xf32>
}
