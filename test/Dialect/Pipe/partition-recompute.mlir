// RUN: pipedream-opt %s -pipe-partition="stages=2 schedule=gpipe microbatches=4 memory-limit=4500 recompute=auto" -mlir-print-debuginfo -mlir-print-local-scope | FileCheck %s --check-prefix=AUTO
// RUN: pipedream-opt %s -pipe-partition="stages=2 schedule=gpipe microbatches=4 recompute=full" -mlir-print-local-scope | FileCheck %s --check-prefix=FULL
// RUN: pipedream-opt %s -pipe-partition="stages=2 schedule=gpipe microbatches=4 memory-limit=100000 recompute=auto" -mlir-print-local-scope | FileCheck %s --check-prefix=ROOMY

// Four ops of forward 1 each (no backward cost); a and b keep 1000 bytes
// for their backward, c and d 100; every value is 16 bytes. GPipe keeps
// the 4 micro-batches in flight on each stage. Under 4500 bytes per rank:
// - without recomputation nothing fits ([a][b c d] needs 4 x 1200 = 4800);
// - recomputing stage 0 of [a b][c d]: 4 x 16 (its input x) + 2000 (one
//   micro-batch's activations) = 2064 bytes, time 2 + 2 (the forward again)
//   = 4; stage 1 keeps 4 x 200 = 800 and does not recompute. [a][b c d]
//   would recompute stage 1 (time 6), [a b c][d] stage 0 (time 6): auto
//   picks [a b][c d] and recomputes exactly stage 0.
// AUTO: module attributes {pipe.recompute = array<i64: 0>}
// AUTO-LABEL: func.func @chain
// AUTO-SAME: slowest = 4.000000e+00
// AUTO-SAME: pipe.recompute_mode = "auto"
// AUTO: loc("b")
// AUTO: pipe.stage = #pipe.stage<1>{{.*}} loc("c")

// full: every stage recomputes; [a b][c d] (4 and 4) is the best cut.
// FULL: module attributes {pipe.recompute = array<i64: 0, 1>}
// FULL-NEXT: func.func @chain
// FULL-SAME: slowest = 4.000000e+00
// FULL-SAME: pipe.recompute_mode = "full"

// A limit everything fits under: auto recomputes nothing, and the cut is
// the one without recomputation ([a b][c d], 2 and 2).
// ROOMY: module attributes {pipe.recompute = array<i64>}
// ROOMY-NEXT: func.func @chain
// ROOMY-SAME: slowest = 2.000000e+00

#big = {activation_bytes = 1000 : i64, backward_input = 0.0 : f64, backward_weight = 0.0 : f64, forward = 1.0 : f64, frozen_bytes = 0 : i64, output_bytes = 16 : i64, parameter_bytes = 0 : i64, source = "analytical"}
#small = {activation_bytes = 100 : i64, backward_input = 0.0 : f64, backward_weight = 0.0 : f64, forward = 1.0 : f64, frozen_bytes = 0 : i64, output_bytes = 16 : i64, parameter_bytes = 0 : i64, source = "analytical"}
func.func @chain(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = nn.relu %x {pipe.cost = #big} : tensor<4xf32> loc("a")
  %b = nn.relu %a {pipe.cost = #big} : tensor<4xf32> loc("b")
  %c = nn.relu %b {pipe.cost = #small} : tensor<4xf32> loc("c")
  %d = nn.relu %c {pipe.cost = #small} : tensor<4xf32> loc("d")
  return %d : tensor<4xf32>
}
