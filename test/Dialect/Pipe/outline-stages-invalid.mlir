// RUN: pipedream-opt %s -split-input-file -verify-diagnostics -pipe-outline-stages

func.func @unplaced(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = nn.relu %x {pipe.stage = #pipe.stage<0>} : tensor<4xf32>
  // expected-error @+1 {{'nn.relu' op has no pipe.stage: pipe-outline-stages needs every op in exactly one stage (run pipe-partition first)}}
  %1 = nn.relu %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

func.func @backward_edge(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-note @+1 {{value defined here}}
  %0 = nn.relu %x {pipe.stage = #pipe.stage<1>} : tensor<4xf32>
  // expected-error @+1 {{'nn.relu' op in stage piece 0 uses a value computed in the later piece 1: pipeline stages must only feed later stages}}
  %1 = nn.relu %0 {pipe.stage = #pipe.stage<0>} : tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// expected-error @+1 {{pipe-outline-stages: stage 1 chunk 0 has no ops}}
func.func @empty_stage(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = nn.relu %x {pipe.stage = #pipe.stage<0>} : tensor<4xf32>
  %1 = nn.relu %0 {pipe.stage = #pipe.stage<2>} : tensor<4xf32>
  return %1 : tensor<4xf32>
}
