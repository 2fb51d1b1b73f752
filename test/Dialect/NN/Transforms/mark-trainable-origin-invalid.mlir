// RUN: pipedream-opt %s -split-input-file -verify-diagnostics --nn-mark-trainable

// One torch parameter folded into two trainable weights would be trained
// twice and untied.
// expected-error @+1 {{weights 'emb' and 'head' are both torch parameter 'emb.weight' (the exporter folded a copy of it): training them separately unties the parameter}}
func.func @main(%x: tensor<2x4xf32> {nn.name = "x"},
                %e: tensor<4x4xf32> {nn.name = "emb", nn.origin = {kind = "parameter", sources = ["emb.weight"]}, nn.param = dense<0.5> : tensor<4x4xf32>},
                %h: tensor<4x4xf32> {nn.name = "head", nn.origin = {kind = "folded", sources = ["emb.weight"]}, nn.param = dense<0.5> : tensor<4x4xf32>})
    -> (tensor<2x4xf32> {nn.name = "y"}) {
  %0 = nn.matmul %x, %e : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %1 = nn.matmul %0, %h : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  return %1 : tensor<2x4xf32>
}

// -----

// expected-error @+1 {{'nn.origin' must be {kind = "parameter"|"folded"|"derived"|"buffer"|"constant", sources = [strings]}}}
func.func @main(%x: tensor<2x4xf32> {nn.name = "x"},
                %e: tensor<4x4xf32> {nn.name = "emb", nn.origin = {kind = "weight", sources = []}, nn.param = dense<0.5> : tensor<4x4xf32>})
    -> (tensor<2x4xf32> {nn.name = "y"}) {
  %0 = nn.matmul %x, %e : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}
