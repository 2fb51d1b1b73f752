// Integer operands the profiler must fill with valid values: gather
// indices (axis 1), one-hot classes, boolean conditions. Ops on integers
// and ops on values no gradient reaches (computed from inputs only) get
// backward times 0.
func.func @main(%ids: tensor<4x3xi64> {nn.name = "ids"},
                %labels: tensor<4xi64> {nn.name = "labels"},
                %x: tensor<4x8xf32> {nn.name = "x"},
                %w: tensor<8x16xf32> {nn.name = "w", nn.param = dense<0.5> : tensor<8x16xf32>})
    -> (tensor<4x4x3xf32>, tensor<4x10xf32>, tensor<4x16xf32>) {
  %e = nn.exp %x : tensor<4x8xf32> loc("/exp/e")
  %h = nn.matmul %e, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32> loc("/matmul/h")
  %g = nn.gather %h, %ids {axis = 1 : i64} : (tensor<4x16xf32>, tensor<4x3xi64>) -> tensor<4x4x3xf32> loc("/gather/g")
  %o = nn.one_hot %labels {depth = 10 : i64, dtype = f32} : (tensor<4xi64>) -> tensor<4x10xf32> loc("/one_hot/o")
  %zero = nn.constant dense<0> : tensor<i64>
  %c = nn.equal %labels, %zero : (tensor<4xi64>, tensor<i64>) -> tensor<4xi1> loc("/equal/c")
  %c2 = nn.reshape %c {shape = array<i64: 4, 1>} : (tensor<4xi1>) -> tensor<4x1xi1> loc("/reshape/c2")
  %r = nn.relu %h : tensor<4x16xf32> loc("/relu/r")
  %s = nn.where %c2, %h, %r : (tensor<4x1xi1>, tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32> loc("/where/s")
  return %g, %o, %s : tensor<4x4x3xf32>, tensor<4x10xf32>, tensor<4x16xf32>
}
