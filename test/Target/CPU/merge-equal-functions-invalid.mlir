// RUN: pipedream-opt %s -split-input-file -cpu-merge-equal-functions -verify-diagnostics

// The replaced function's wrapper name is taken by a function with a body.
func.func @a(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = math.exp %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
// expected-error @+1 {{cannot merge 'b' into the equal function 'a': the symbol 'pipedream_b' of an entry wrapper exists}}
func.func @b(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = math.exp %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func @pipedream_b(%p: !llvm.ptr) {
  return
}

// -----

// The kept function's wrapper name is taken by a declaration of another type.
func.func private @pipedream_a(i32)
func.func @a(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = math.exp %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
// expected-error @+1 {{cannot merge 'b' into the equal function 'a': the symbol 'pipedream_a' of an entry wrapper exists}}
func.func @b(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = math.exp %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
