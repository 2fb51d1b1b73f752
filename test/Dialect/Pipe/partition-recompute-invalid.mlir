// RUN: pipedream-opt %s -verify-diagnostics -pipe-partition="stages=2 recompute=some"
// RUN: not pipedream-opt %S/partition-recompute.mlir -pipe-partition="stages=2 schedule=gpipe microbatches=4 memory-limit=4500" 2>&1 | FileCheck %s --check-prefix=NOFIT

// expected-error @+1 {{pipe-partition: unknown recompute 'some' (none, full or auto)}}
module {
  func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
    %a = nn.relu %x : tensor<4xf32>
    %b = nn.relu %a : tensor<4xf32>
    return %b : tensor<4xf32>
  }
}

// Without recomputation the partitioner says it could help (the chain of
// partition-recompute.mlir: 4800 bytes at best under a 4500-byte limit).
// NOFIT: error: pipe-partition: @chain: no partition into 2 stages fits memory-limit=4500 bytes {{.*}}: raise the limit, add stages, recompute activations or use fewer micro-batches in flight
