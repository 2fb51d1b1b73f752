func.func @main(%x: tensor<2xf32> {nn.name = "x", nn.role = "bogus"}) -> tensor<2xf32> {
  %0 = nn.relu %x : tensor<2xf32>
  return %0 : tensor<2xf32>
}
