// RUN: pipedream-opt %s -verify-diagnostics -pipe-partition="ranks=2 method=uniform"

// expected-error @+1 {{pipe-partition: ranks=2: the replication planner needs method=auto, no split-after and virtual=1}}
module {
  func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
    %a = nn.relu %x : tensor<4xf32>
    return %a : tensor<4xf32>
  }
}
