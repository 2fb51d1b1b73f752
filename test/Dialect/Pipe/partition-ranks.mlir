// RUN: pipedream-opt %s -pipe-partition="ranks=3 microbatches=12" -mlir-print-local-scope | FileCheck %s
// RUN: pipedream-opt %s -pipe-partition="ranks=4 microbatches=12" -mlir-print-local-scope | FileCheck %s --check-prefix=FOUR
// RUN: pipedream-opt %s -pipe-partition="ranks=3 microbatches=12 schedule=pipedream" -mlir-print-local-scope | FileCheck %s --check-prefix=ASYNC

// PipeDream's planner with replication over N ranks (ReplicationPlanner.h):
// "light" (1 s) holds 12000 parameter bytes, "heavy" (4 s) none; the link
// moves 1000 B/s, so a cut also costs its 16-byte activation and gradient
// (0.016 s per micro-batch, shared by a stage's replicas). On 3 ranks the
// optimum replicates only the heavy, parameter-free op: [light] x1,
// [heavy] x2, bottleneck max(1 + 0.016, (4 + 0.016)/2) = 2.008. Both
// replications divide the 12 micro-batches and the schedule is
// synchronous, so that non-uniform plan (PipeDream's 1F1B-RR) is applied
// and recorded as pipe.stage_replicas; the best uniform one, 1 stage x 3
// replicas, 5/3 + the ring all-reduce of 12000 B over 3 once per step of 12
// micro-batches (2 * 2/3 * 12000 / 1000 / 12 = 4/3) = 3, is listed.
// A 3 x 1 plan needs three ops. (Every K x R plan has R dividing M.)

// CHECK-LABEL: func.func @two
// CHECK-SAME: pipe.partition = #pipe.partition<method = "auto", stages = 2,
// CHECK-SAME: replicas = 1, replicated_slowest = 2.008000e+00 : f64, plans = <stages = 2, replicas = [1, 2], slowest = 2.008000e+00 : f64, uniform = false, chosen = true>, <stages = 1, replicas = [3], slowest = 3.000000e+00 : f64, uniform = true, chosen = false>>
// CHECK-SAME: pipe.stage_replicas = array<i64: 1, 2>
// CHECK: nn.relu {{.*}}pipe.stage = #pipe.stage<0>
// CHECK: nn.relu {{.*}}pipe.stage = #pipe.stage<1>

// Four ranks: 1 x 4 costs 5/4 + 2 * 3/4 = 2.75; 2 x 2 costs
// max((1 + 0.016)/2 + 1, (4 + 0.016)/2) = 2.008, the best uniform plan;
// the optimum, chosen, is 1-3: max(1.016, 4.016/3 = 1.3387).
// FOUR: pipe.partition = #pipe.partition<method = "auto", stages = 2,
// FOUR-SAME: replicas = 1, replicated_slowest = 1.3386666666666667 : f64, plans = <stages = 2, replicas = [1, 3], slowest = 1.3386666666666667 : f64, uniform = false, chosen = true>, <stages = 1, replicas = [4], slowest = 2.750000e+00 : f64, uniform = true, chosen = false>, <stages = 2, replicas = [2, 2], slowest = 2.008000e+00 : f64, uniform = true, chosen = false>>
// FOUR-SAME: pipe.stage_replicas = array<i64: 1, 3>
// FOUR: nn.relu {{.*}}pipe.stage = #pipe.stage<0>
// FOUR: nn.relu {{.*}}pipe.stage = #pipe.stage<1>

// An asynchronous schedule keeps a K x R plan (the replicas of a stage
// would update at different times): 1 x 3 is applied, the non-uniform
// optimum only listed.
// ASYNC: pipe.partition = #pipe.partition<method = "auto", stages = 1,
// ASYNC-SAME: replicas = 3, replicated_slowest = 3.000000e+00 : f64, plans = <stages = 2, replicas = [1, 2], slowest = 2.008000e+00 : f64, uniform = false, chosen = false>, <stages = 1, replicas = [3], slowest = 3.000000e+00 : f64, uniform = true, chosen = true>>
// ASYNC-NOT: pipe.stage_replicas

#light = {activation_bytes = 0 : i64, backward_input = 0.0 : f64, backward_weight = 0.0 : f64, forward = 1.0 : f64, frozen_bytes = 0 : i64, output_bytes = 0 : i64, parameter_bytes = 12000 : i64, source = "analytical"}
#heavy = {activation_bytes = 0 : i64, backward_input = 0.0 : f64, backward_weight = 0.0 : f64, forward = 4.0 : f64, frozen_bytes = 0 : i64, output_bytes = 0 : i64, parameter_bytes = 0 : i64, source = "analytical"}
module attributes {pipe.device = {link_bandwidth = 1000.0 : f64, link_latency = 0.0 : f64, name = "test"}} {
  func.func @two(%x: tensor<4xf32>) -> tensor<4xf32> {
    %a = nn.relu %x {pipe.cost = #light} : tensor<4xf32> loc("light")
    %b = nn.relu %a {pipe.cost = #heavy} : tensor<4xf32> loc("heavy")
    return %b : tensor<4xf32>
  }
}
