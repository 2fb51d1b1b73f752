// RUN: pipedream-opt %s -split-input-file -verify-diagnostics

// Verifier and shape-inference messages of gather_elements,
// scatter_elements, gather_nd and scatter_nd.

func.func @gather_elements_rank(%x: tensor<3x4xf32>, %i: tensor<6xi64>) {
  // expected-error @+2 {{indices of rank 1 differ in rank from data of rank 2}}
  // expected-error @+1 {{'nn.gather_elements' op failed to infer returned types}}
  %0 = nn.gather_elements %x, %i {axis = 0 : i64} : (tensor<3x4xf32>, tensor<6xi64>) -> tensor<6xf32>
  return
}

// -----

func.func @gather_elements_larger(%x: tensor<3x4xf32>, %i: tensor<2x5xi64>) {
  // expected-error @+2 {{indices shape [2, 5] exceeds data shape [3, 4] in dimension 1}}
  // expected-error @+1 {{'nn.gather_elements' op failed to infer returned types}}
  %0 = nn.gather_elements %x, %i {axis = 0 : i64} : (tensor<3x4xf32>, tensor<2x5xi64>) -> tensor<2x5xf32>
  return
}

// -----

func.func @gather_elements_axis(%x: tensor<3x4xf32>, %i: tensor<2x4xi64>) {
  // expected-error @+2 {{axis 2 is out of range [0, 2)}}
  // expected-error @+1 {{'nn.gather_elements' op failed to infer returned types}}
  %0 = nn.gather_elements %x, %i {axis = 2 : i64} : (tensor<3x4xf32>, tensor<2x4xi64>) -> tensor<2x4xf32>
  return
}

// -----

func.func @scatter_elements_updates(%x: tensor<3x4xf32>, %i: tensor<2x4xi64>, %u: tensor<2x3xf32>) {
  // expected-error @+2 {{updates 'tensor<2x3xf32>' must have the indices' shape [2, 4] and the data's element type}}
  // expected-error @+1 {{'nn.scatter_elements' op failed to infer returned types}}
  %0 = nn.scatter_elements %x, %i, %u {axis = 0 : i64} : (tensor<3x4xf32>, tensor<2x4xi64>, tensor<2x3xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @scatter_elements_reduction(%x: tensor<3x4xf32>, %i: tensor<2x4xi64>, %u: tensor<2x4xf32>) {
  // expected-error @+1 {{'nn.scatter_elements' op reduction must be none, add, mul, max or min, got 'sum'}}
  %0 = nn.scatter_elements %x, %i, %u {axis = 0 : i64, reduction = "sum"} : (tensor<3x4xf32>, tensor<2x4xi64>, tensor<2x4xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @gather_nd_rank0(%x: tensor<3x4xf32>, %i: tensor<i64>) {
  // expected-error @+2 {{indices must have rank >= 1}}
  // expected-error @+1 {{'nn.gather_nd' op failed to infer returned types}}
  %0 = nn.gather_nd %x, %i : (tensor<3x4xf32>, tensor<i64>) -> tensor<3x4xf32>
  return
}

// -----

func.func @gather_nd_batch_dims(%x: tensor<3x4xf32>, %i: tensor<3x1xi64>) {
  // expected-error @+2 {{batch_dims 2 must be in [0, min(data rank 2, indices rank 2 - 1)]}}
  // expected-error @+1 {{'nn.gather_nd' op failed to infer returned types}}
  %0 = nn.gather_nd %x, %i {batch_dims = 2 : i64} : (tensor<3x4xf32>, tensor<3x1xi64>) -> tensor<3xf32>
  return
}

// -----

func.func @gather_nd_tuple(%x: tensor<3x4xf32>, %i: tensor<2x3xi64>) {
  // expected-error @+2 {{index tuples of length 3 do not fit data of rank 2 after 0 batch dimensions}}
  // expected-error @+1 {{'nn.gather_nd' op failed to infer returned types}}
  %0 = nn.gather_nd %x, %i : (tensor<3x4xf32>, tensor<2x3xi64>) -> tensor<2xf32>
  return
}

// -----

func.func @gather_nd_batch_mismatch(%x: tensor<3x4x5xf32>, %i: tensor<2x1xi64>) {
  // expected-error @+2 {{batch dimensions of data [3, 4, 5] and indices [2, 1] differ}}
  // expected-error @+1 {{'nn.gather_nd' op failed to infer returned types}}
  %0 = nn.gather_nd %x, %i {batch_dims = 1 : i64} : (tensor<3x4x5xf32>, tensor<2x1xi64>) -> tensor<2x5xf32>
  return
}

// -----

func.func @scatter_nd_updates(%x: tensor<3x4xf32>, %i: tensor<2x1xi64>, %u: tensor<2x3xf32>) {
  // expected-error @+2 {{updates 'tensor<2x3xf32>' must have shape [2, 4] and the data's element type}}
  // expected-error @+1 {{'nn.scatter_nd' op failed to infer returned types}}
  %0 = nn.scatter_nd %x, %i, %u : (tensor<3x4xf32>, tensor<2x1xi64>, tensor<2x3xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @scatter_nd_reduction(%x: tensor<3x4xf32>, %i: tensor<2x1xi64>, %u: tensor<2x4xf32>) {
  // expected-error @+1 {{'nn.scatter_nd' op reduction must be none, add, mul, max or min, got 'avg'}}
  %0 = nn.scatter_nd %x, %i, %u {reduction = "avg"} : (tensor<3x4xf32>, tensor<2x1xi64>, tensor<2x4xf32>) -> tensor<3x4xf32>
  return
}
