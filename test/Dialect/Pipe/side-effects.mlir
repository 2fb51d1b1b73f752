// RUN: pipedream-opt %s -cse -canonicalize | FileCheck %s

// Transfers are pure: identical ones merge and unused ones disappear.
// CHECK-LABEL: pipe.program @pure_transfers
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT: %[[T:.*]] = pipe.transfer %[[X]] from stage 0 to stage 1
// CHECK-NEXT: pipe.return %[[T]], %[[T]]
pipe.program @pure_transfers
    schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 1>
    (%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %a = pipe.transfer %x from stage 0 to stage 1 : tensor<4xf32>
  %b = pipe.transfer %x from stage 0 to stage 1 : tensor<4xf32>
  %unused = pipe.transfer %x from stage 0 to stage 1 chunk 0 : tensor<4xf32>
  pipe.return %a, %b : tensor<4xf32>, tensor<4xf32>
}

// Receives and restores are never merged or erased, even when unused: the
// peer's send would hang, the slot would never be freed.
// CHECK-LABEL: pipe.program @effectful
// CHECK-NEXT: pipe.recv from 1 tag 0
// CHECK-NEXT: pipe.recv from 1 tag 0
// CHECK-NEXT: pipe.restore activation slot 0 stage 0 microbatch 0
// CHECK-NEXT: pipe.restore activation slot 0 stage 0 microbatch 0
// CHECK-NEXT: pipe.return
pipe.program @effectful rank 0
    schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 1> () {
  %0 = pipe.recv from 1 tag 0 : tensor<4xf32>
  %1 = pipe.recv from 1 tag 0 : tensor<4xf32>
  %2 = pipe.restore activation slot 0 stage 0 microbatch 0 : tensor<4xf32>
  %3 = pipe.restore activation slot 0 stage 0 microbatch 0 : tensor<4xf32>
  pipe.return
}
