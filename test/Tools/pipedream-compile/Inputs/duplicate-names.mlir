func.func @main(%x: tensor<2xf32> {nn.name = "x"}, %y: tensor<2xf32> {nn.name = "x"}) -> tensor<2xf32> {
  %0 = nn.add %x, %y : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
