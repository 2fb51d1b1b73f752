func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %0 = nn.relu %x : tensor<3xf32>
  return %0 : tensor<2xf32>
}
