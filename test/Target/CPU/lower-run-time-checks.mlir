// RUN: pipedream-opt %s -split-input-file -cpu-lower-run-time-checks | FileCheck %s
// RUN: pipedream-opt %s -split-input-file -cpu-lower-run-time-checks=drop-checks | FileCheck %s --check-prefix=DROP
// The status record (docs/Bundle.md "Run-time checks"): a thread-local
// global, its exported accessor, and each check a conditional write of the
// first failure (value, bounds, "op\0node\0input\0").

// CHECK-DAG: llvm.mlir.global internal constant @[[INFO:pipedream.check_info.0]]("Gather\00/tok/Gather\00idx\00")
// CHECK-DAG: llvm.mlir.global internal thread_local @pipedream.run_time_status() {{.*}} : !llvm.struct<(i64, i64, i64, i64, ptr)>
// CHECK-LABEL: func.func @check(
// CHECK-SAME: %[[MIN:.*]]: i32, %[[MAX:.*]]: i32)
// CHECK: %[[MIN64:.*]] = arith.extsi %[[MIN]] : i32 to i64
// CHECK: %[[MAX64:.*]] = arith.extsi %[[MAX]] : i32 to i64
// CHECK: %[[LOWER:.*]] = arith.constant -61 : i64
// CHECK: %[[UPPER:.*]] = arith.constant 61 : i64
// CHECK: %[[LOW:.*]] = arith.cmpi slt, %[[MIN64]], %[[LOWER]] : i64
// CHECK: %[[HIGH:.*]] = arith.cmpi sge, %[[MAX64]], %[[UPPER]] : i64
// CHECK: %[[BAD:.*]] = arith.ori %[[LOW]], %[[HIGH]] : i1
// CHECK: scf.if %[[BAD]] {
// CHECK:   %[[G:.*]] = llvm.mlir.addressof @pipedream.run_time_status
// CHECK:   %[[REC:.*]] = "llvm.intr.threadlocal.address"(%[[G]])
// CHECK:   %[[FAILED:.*]] = llvm.load
// CHECK:   %[[FIRST:.*]] = arith.cmpi eq, %[[FAILED]], %{{.*}} : i64
// CHECK:   scf.if %[[FIRST]] {
// CHECK:     %[[VALUE:.*]] = arith.select %[[HIGH]], %[[MAX64]], %[[MIN64]] : i64
// CHECK:     llvm.getelementptr %[[REC]][0, 1]
// CHECK-NEXT: llvm.store %[[VALUE]]
// CHECK:     llvm.getelementptr %[[REC]][0, 2]
// CHECK-NEXT: llvm.store %[[LOWER]]
// CHECK:     llvm.getelementptr %[[REC]][0, 3]
// CHECK-NEXT: llvm.store %[[UPPER]]
// CHECK:     llvm.getelementptr %[[REC]][0, 4]
// CHECK-NEXT: llvm.store
// CHECK-NOT: nn.check_index_range
// CHECK-LABEL: func.func @pipedream_run_time_status() -> !llvm.ptr attributes {pipedream.cpu.export}
// CHECK: "llvm.intr.threadlocal.address"

// With drop-checks (the CUDA pipeline, --no-run-time-checks) the checks go,
// and no record is added.
// DROP-NOT: run_time_status
// DROP-LABEL: func.func @check(
// DROP-NEXT: return
// DROP-NOT: pipedream_run_time_status
func.func @check(%min: i32, %max: i32) {
  nn.check_index_range %min, %max {input = "idx", lower = -61 : i64, node = "/tok/Gather", op_type = "Gather", upper = 61 : i64} : i32
  return
}

// -----

// A check of kind size (nn.check_size): its input name is the output's,
// after U+0001, so the runtime words the message as a size.
// CHECK-DAG: llvm.mlir.global internal constant @{{.*}}("NonZero\00nz\00\01result\00")
// CHECK-LABEL: func.func @size(
// CHECK: arith.constant 8 : i64
// CHECK: arith.constant 9 : i64
func.func @size(%n: i64) {
  nn.check_index_range %n, %n {input = "result", kind = "size", lower = 8 : i64, node = "nz", op_type = "NonZero", upper = 9 : i64} : i64
  return
}

// -----

// A module without checks still exports the record.
// CHECK-LABEL: func.func @pipedream_run_time_status()
func.func @no_checks() {
  return
}
