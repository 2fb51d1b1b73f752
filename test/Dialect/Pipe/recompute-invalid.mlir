// RUN: pipedream-opt %s --pipe-recompute -split-input-file -verify-diagnostics

// expected-error @below {{pipe-recompute: pipe.recompute must be an array<i64: ...> of virtual stages, got [1]}}
module attributes {pipe.recompute = [1 : i64]} {
}

// -----

// expected-error @below {{pipe-recompute: pipe.recompute lists stage -1; stages are 0 or more}}
module attributes {pipe.recompute = array<i64: -1>} {
}

// -----

// expected-error @below {{pipe-recompute: stage 3 has no @stage3_F and @stage3_B with bodies (run pipe-build-stage-training first)}}
module attributes {pipe.recompute = array<i64: 3>} {
}

// -----

// A split backward whose W restores a residual F does not return.
module attributes {pipe.recompute = array<i64: 0>} {
func.func @stage0_F(%x: tensor<4xf32> {pipe.input = "x"}) -> (tensor<4xf32> {pipe.send = 0 : i64}, tensor<4xf32> {nn.residual = 0 : i64}) {
  return %x, %x : tensor<4xf32>, tensor<4xf32>
}
func.func @stage0_B(%r: tensor<4xf32> {nn.residual = 0 : i64}) {
  return
}
// expected-error @below {{pipe-recompute: argument 0 restores residual 3, which @stage0_F does not return}}
func.func @stage0_W(%r: tensor<4xf32> {nn.residual = 3 : i64}) {
  return
}
}

// -----

// B restores a residual F does not return.
module attributes {pipe.recompute = array<i64: 0>} {
func.func @stage0_F(%x: tensor<4xf32> {pipe.input = "x"}) -> (tensor<4xf32> {pipe.send = 0 : i64}, tensor<4xf32> {nn.residual = 0 : i64}) {
  return %x, %x : tensor<4xf32>, tensor<4xf32>
}
// expected-error @below {{pipe-recompute: argument 0 restores residual 1, which @stage0_F does not return}}
func.func @stage0_B(%r: tensor<4xf32> {nn.residual = 1 : i64}) {
  return
}
}

// -----

// A residual of another type in B than in F.
module attributes {pipe.recompute = array<i64: 0>} {
func.func @stage0_F(%x: tensor<4xf32> {pipe.input = "x"}) -> (tensor<4xf32> {pipe.send = 0 : i64}, tensor<4xf32> {nn.residual = 0 : i64}) {
  return %x, %x : tensor<4xf32>, tensor<4xf32>
}
// expected-error @below {{pipe-recompute: residual 0 has type 'tensor<2xf32>' here but 'tensor<4xf32>' in @stage0_F}}
func.func @stage0_B(%r: tensor<2xf32> {nn.residual = 0 : i64}) {
  return
}
}
