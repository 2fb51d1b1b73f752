// RUN: pipedream-opt %s -split-input-file -verify-diagnostics -pipe-partition="stages=3 split-after=a,nope"
// RUN: not pipedream-opt %s -pipe-partition="stages=3 split-after=a" 2>&1 | FileCheck %s --check-prefix=COUNT
// RUN: not pipedream-opt %s -pipe-partition="stages=3 split-after=a,c" 2>&1 | FileCheck %s --check-prefix=LAST
// RUN: not pipedream-opt %s -pipe-partition="stages=3 split-after=a,a" 2>&1 | FileCheck %s --check-prefix=TWICE

// COUNT: error: pipe-partition: split-after names 1 nodes but 3 stages need 2
// LAST: error: pipe-partition: split-after: 'c' is the last op; the last stage would be empty
// TWICE: error: pipe-partition: split-after: 'a' given twice

// expected-error @+1 {{pipe-partition: split-after: no op is named 'nope' (names are the ONNX node names the importer gives each op as its location, e.g. '/block/attn/MatMul')}}
func.func @names(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = nn.relu %x : tensor<4xf32> loc("a")
  %1 = nn.relu %0 : tensor<4xf32> loc("b")
  %2 = nn.relu %1 : tensor<4xf32> loc("c")
  return %2 : tensor<4xf32>
}
