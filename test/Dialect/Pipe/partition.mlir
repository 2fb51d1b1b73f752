// RUN: pipedream-opt %s -pipe-partition="stages=3" -mlir-print-debuginfo -mlir-print-local-scope | FileCheck %s --check-prefix=AUTO
// RUN: pipedream-opt %s -pipe-partition="stages=3 method=uniform" -mlir-print-debuginfo -mlir-print-local-scope | FileCheck %s --check-prefix=UNIFORM
// RUN: pipedream-opt %s -pipe-partition="stages=3 split-after=b,d" -mlir-print-debuginfo -mlir-print-local-scope | FileCheck %s --check-prefix=MANUAL
// RUN: pipedream-opt %s -pipe-partition="stages=2 virtual=2" -mlir-print-debuginfo -mlir-print-local-scope | FileCheck %s --check-prefix=VIRTUAL

// Six ops in a chain; "d" costs 4 (forward 2 + input gradient 1 + weight
// gradient 1), the others 1. No pipe.device: communication is free.
// auto: the slowest stage cannot be faster than "d" alone, and [a b c] [d]
// [e f] reaches it (4); uniform cuts two ops per stage (slowest c+d = 5).

// AUTO-LABEL: func.func @chain
// AUTO-SAME: %{{.*}}: tensor<4xf32> {pipe.stage = #pipe.stage<0>}
// The weight belongs to the stage of its reader.
// AUTO-SAME: %{{.*}}: tensor<4xf32> {nn.param = {{.*}}, pipe.stage = #pipe.stage<1>}
// AUTO-SAME: -> (tensor<4xf32> {pipe.stage = #pipe.stage<2>})
// The uniform partition [a b] [c d] [e f] is slower (c + d = 5).
// AUTO-SAME: pipe.partition = #pipe.partition<method = "auto", stages = 3, schedule = "1f1b", microbatches = 3, slowest = 4.000000e+00 : f64, ideal = 3.000000e+00 : f64, uniform_slowest = 5.000000e+00 : f64, auto_slowest = 4.000000e+00 : f64>
// AUTO: nn.relu {{.*}}pipe.stage = #pipe.stage<0>{{.*}} loc("a")
// AUTO: nn.relu {{.*}}pipe.stage = #pipe.stage<0>{{.*}} loc("b")
// AUTO: nn.relu {{.*}}pipe.stage = #pipe.stage<0>{{.*}} loc("c")
// AUTO: nn.mul {{.*}}pipe.stage = #pipe.stage<1>{{.*}} loc("d")
// A constant goes with its first user.
// AUTO: nn.constant {pipe.stage = #pipe.stage<2>}
// AUTO: nn.add {{.*}}pipe.stage = #pipe.stage<2>{{.*}} loc("e")
// AUTO: nn.relu {{.*}}pipe.stage = #pipe.stage<2>{{.*}} loc("f")

// UNIFORM-LABEL: func.func @chain
// UNIFORM-SAME: method = "uniform"
// UNIFORM-SAME: slowest = 5.000000e+00
// UNIFORM-SAME: uniform_slowest = 5.000000e+00 : f64, auto_slowest = 4.000000e+00 : f64
// UNIFORM: loc("a")
// UNIFORM: pipe.stage = #pipe.stage<0>{{.*}} loc("b")
// UNIFORM: pipe.stage = #pipe.stage<1>{{.*}} loc("c")
// UNIFORM: pipe.stage = #pipe.stage<1>{{.*}} loc("d")
// UNIFORM: pipe.stage = #pipe.stage<2>{{.*}} loc("e")

// MANUAL-LABEL: func.func @chain
// MANUAL-SAME: method = "manual"
// MANUAL: pipe.stage = #pipe.stage<0>{{.*}} loc("b")
// MANUAL: pipe.stage = #pipe.stage<1>{{.*}} loc("c")
// MANUAL: pipe.stage = #pipe.stage<1>{{.*}} loc("d")
// MANUAL: pipe.stage = #pipe.stage<2>{{.*}} loc("e")

// Four pieces dealt round-robin to two ranks: piece 2 is stage 0 chunk 1.
// VIRTUAL-LABEL: func.func @chain
// VIRTUAL-SAME: stages = 2, chunks = 2, schedule = "interleaved-1f1b"
// VIRTUAL: loc("a")
// VIRTUAL: pipe.stage = #pipe.stage<1, chunk = 1>{{.*}} loc("f")

#c1 = {activation_bytes = 0 : i64, backward_input = 0.0 : f64, backward_weight = 0.0 : f64, forward = 1.0 : f64, frozen_bytes = 0 : i64, output_bytes = 16 : i64, parameter_bytes = 0 : i64, source = "analytical"}
#c4 = {activation_bytes = 0 : i64, backward_input = 1.0 : f64, backward_weight = 1.0 : f64, forward = 2.0 : f64, frozen_bytes = 0 : i64, output_bytes = 16 : i64, parameter_bytes = 16 : i64, source = "analytical"}
func.func @chain(%x: tensor<4xf32>, %w: tensor<4xf32> {nn.param = dense<1.0> : tensor<4xf32>}) -> tensor<4xf32> {
  %a = nn.relu %x {pipe.cost = #c1} : tensor<4xf32> loc("a")
  %b = nn.relu %a {pipe.cost = #c1} : tensor<4xf32> loc("b")
  %c = nn.relu %b {pipe.cost = #c1} : tensor<4xf32> loc("c")
  %d = nn.mul %c, %w {pipe.cost = #c4} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("d")
  %k = nn.constant dense<2.0> : tensor<4xf32>
  %e = nn.add %d, %k {pipe.cost = #c1} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("e")
  %f = nn.relu %e {pipe.cost = #c1} : tensor<4xf32> loc("f")
  return %f : tensor<4xf32>
}
