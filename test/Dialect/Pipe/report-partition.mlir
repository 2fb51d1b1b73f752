// RUN: pipedream-opt %s -pipe-partition="stages=3" -pipe-report-partition -o /dev/null | FileCheck %s
// RUN: pipedream-opt %s -pipe-partition="stages=3 split-after=b,d" -pipe-report-partition="text= json=-" -o /dev/null | FileCheck %s --check-prefix=JSON
// The report reads the recorded partition; a module whose #pipe.partition
// says another comparison reports that one (no partitioner runs).
// RUN: pipedream-opt %s -pipe-partition="stages=3" | sed -e 's/uniform_slowest = 5.0*e+00/uniform_slowest = 8.0/' | pipedream-opt -pipe-report-partition -o /dev/null | FileCheck %s --check-prefix=RECORDED

// The chain of partition.mlir: six ops, "d" costs 4 (forward 2, input and
// weight gradient 1 each), the others 1 (forward only); no pipe.device, so
// communication is free. Total 9, ideal 9 / 3 = 3; auto cuts [a b c] [d]
// [e f] (slowest 4), uniform [a b] [c d] [e f] (slowest 5, 5 / 4 = 1.25).

// CHECK: partition of @chain: auto, 3 stages, schedule 1f1b, 3 micro-batches
// CHECK-NEXT: cost model: analytical
// CHECK-NEXT: stage chunk rank   ops    forward   backward
// CHECK-NEXT: 0     0    0     3     3.00 s          0          0     3.00 s        0 B {{.*}}  a .. c
// CHECK-NEXT: 1     0    1     1     2.00 s     2.00 s          0     4.00 s       16 B {{.*}}  d .. d
// CHECK-NEXT: 2     0    2     2     2.00 s          0          0     2.00 s        0 B {{.*}}  e .. f
// CHECK-NEXT: slowest: stage 1, 4.00 s; ideal (total compute / 3): 3.00 s; slowest/ideal 1.333
// CHECK-NEXT: uniform (equal op counts): slowest 5.00 s, slowest/ideal 1.667; this partition is 1.25x faster
// CHECK-NEXT: parameters: 4 trainable (16 B), each shared weight counted once
// CHECK-NOT: auto (dynamic program)

// split-after=b,d is the uniform cut: compared with the dynamic program's 4.
// JSON: "partition": {
// JSON: "auto_slowest_time": 4,
// JSON: "method": "manual",
// JSON: "num_ops": 6,
// JSON: "slowest_stage": 1,
// JSON-NEXT: "slowest_time": 5,
// JSON: "uniform_slowest_time": 5,
// JSON: "stages": [
// JSON: "first_op": "a",
// JSON: "last_op": "b",
// JSON: "op_count": 2,

// RECORDED: uniform (equal op counts): slowest 8.00 s, slowest/ideal 2.667; this partition is 2.00x faster

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
