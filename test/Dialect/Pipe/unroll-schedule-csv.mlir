// pipe-unroll-schedule with schedule-csv=FILE: a user's schedule in
// torch.distributed.pipelining's CSV format replaces the generated one, is
// verified, and is unrolled in its own order.

// custom-k2m4.csv: rank 0 runs three forwards before its first backward
// (one more than 1F1B's warm-up); the program follows it and verifies.
// RUN: pipedream-opt %S/Inputs/two-stages.mlir -pipe-unroll-schedule="kind=1f1b microbatches=4 schedule-csv=%S/Inputs/custom-k2m4.csv" -pipe-verify-schedule | FileCheck %s
// RUN: pipedream-opt %S/Inputs/two-stages.mlir -pipe-unroll-schedule="kind=1f1b microbatches=4 schedule-csv=%S/Inputs/custom-k2m4.csv" -pipe-project-ranks -pipe-verify-schedule -o /dev/null
// The hand-written torch 1F1B gives the same program as kind=1f1b.
// RUN: pipedream-opt %S/Inputs/two-stages.mlir -pipe-unroll-schedule="kind=1f1b microbatches=4 schedule-csv=%S/Inputs/torch-1f1b-k2m4.csv" > %t.csv.mlir
// RUN: pipedream-opt %S/Inputs/two-stages.mlir -pipe-unroll-schedule="kind=1f1b microbatches=4" > %t.gen.mlir
// RUN: diff %t.csv.mlir %t.gen.mlir
// Rejected: an invalid schedule (the verifier's message), a malformed file
// (row and column), a file that does not fit the stage functions.
// RUN: not pipedream-opt %S/Inputs/two-stages.mlir -pipe-unroll-schedule="kind=1f1b microbatches=2 schedule-csv=%S/Inputs/custom-k2m2-invalid.csv" 2>&1 | FileCheck %s --check-prefix=INVALID
// RUN: not pipedream-opt %S/Inputs/two-stages.mlir -pipe-unroll-schedule="kind=1f1b microbatches=2 schedule-csv=%S/Inputs/custom-k2m2-malformed.csv" 2>&1 | FileCheck %s --check-prefix=MALFORMED
// RUN: not pipedream-opt %S/Inputs/two-stages.mlir -pipe-unroll-schedule="kind=1f1b microbatches=2 schedule-csv=%S/Inputs/custom-k2m4.csv" 2>&1 | FileCheck %s --check-prefix=RANGE
// RUN: not pipedream-opt %S/Inputs/two-stages.mlir -pipe-unroll-schedule="kind=1f1b microbatches=4 schedule-csv=%S/Inputs/does-not-exist.csv" 2>&1 | FileCheck %s --check-prefix=MISSING

// CHECK-LABEL: pipe.program @train
// CHECK: pipe.call_stage F @s0_F({{.*}}) stage 0 microbatch 0
// CHECK: pipe.call_stage F @s0_F({{.*}}) stage 0 microbatch 1
// CHECK: pipe.call_stage F @s0_F({{.*}}) stage 0 microbatch 2
// CHECK-NOT: @s0_
// CHECK: pipe.call_stage B @s0_B({{.*}}) stage 0 microbatch 0
// CHECK-NOT: @s0_
// CHECK: pipe.call_stage F @s0_F({{.*}}) stage 0 microbatch 3
// CHECK-NOT: @s0_
// CHECK: pipe.call_stage B @s0_B({{.*}}) stage 0 microbatch 1
// CHECK-NOT: @s0_
// CHECK: pipe.call_stage B @s0_B({{.*}}) stage 0 microbatch 2
// CHECK-NOT: @s0_
// CHECK: pipe.call_stage B @s0_B({{.*}}) stage 0 microbatch 3
// CHECK-NOT: @s0_
// CHECK: pipe.call_stage U @s0_U

// INVALID: error: pipe-unroll-schedule: {{.*}}custom-k2m2-invalid.csv: the custom schedule is invalid: rank 1, action 0 (B of stage 1 micro-batch 0): B runs before its F
// MALFORMED: error: pipe-unroll-schedule: {{.*}}custom-k2m2-malformed.csv: row 2, column 4: '1X1' has unknown action type 'X' (expected F, B, I or W, or one of torch's SEND_F
// RANGE: error: pipe-unroll-schedule: {{.*}}custom-k2m4.csv: row 1, column 3: '0F2': micro-batch 2 is out of range: the schedule has 2 micro-batches
// MISSING: error: pipe-unroll-schedule: {{.*}}does-not-exist.csv: cannot open the schedule CSV
