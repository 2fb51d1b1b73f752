// RUN: pipedream-opt %s -split-input-file -verify-diagnostics -pipe-report-partition -o /dev/null

// expected-error @+1 {{no partitioned function (run pipe-partition first)}}
module {
  func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
    %0 = nn.relu %x : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----

// A partition whose stages go backwards in op order (not one pipe-partition
// leaves).
func.func @g(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.partition = #pipe.partition<method = "manual", stages = 2, schedule = "1f1b", microbatches = 2, slowest = 1.0 : f64, ideal = 1.0 : f64>} {
  %0 = nn.relu %x {pipe.stage = #pipe.stage<1>} : tensor<4xf32>
  // expected-error @+1 {{the stages are not contiguous in op order}}
  %1 = nn.relu %0 {pipe.stage = #pipe.stage<0>} : tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

func.func @h(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.partition = #pipe.partition<method = "manual", stages = 2, schedule = "1f1b", microbatches = 2, slowest = 1.0 : f64, ideal = 1.0 : f64>} {
  %0 = nn.relu %x {pipe.stage = #pipe.stage<0>} : tensor<4xf32>
  // expected-error @+1 {{an op has no pipe.stage}}
  %1 = nn.relu %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}
