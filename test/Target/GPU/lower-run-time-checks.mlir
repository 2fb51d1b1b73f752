// RUN: pipedream-opt %s -split-input-file -cuda-lower-run-time-checks | FileCheck %s
// RUN: pipedream-opt %s -split-input-file -pass-pipeline='builtin.module(cuda-lower-run-time-checks, func.func(cuda-map-to-kernels, cuda-allocate-device-memory), cuda-define-run-time-status)' | FileCheck %s --check-prefix=KERNEL

// The device half of a cuda bundle's status record: a memref<5xi64> per
// function (failed, value, lower, upper, check id), zero-filled at entry,
// written by each check when it fails first, handed to
// pipedream.cuda_take_run_time_status and freed before the return.
// CHECK-LABEL: func.func @check(
// CHECK-SAME: %[[MINBUF:.*]]: memref<i32>, %[[MAXBUF:.*]]: memref<i32>)
// CHECK: %[[REC:.*]] = memref.alloc() : memref<5xi64>
// CHECK: linalg.fill ins(%{{.*}} : i64) outs(%[[REC]] : memref<5xi64>)
// CHECK: %[[MIN:.*]] = memref.load %[[MINBUF]][]
// CHECK: %[[MAX:.*]] = memref.load %[[MAXBUF]][]
// CHECK: %[[MIN64:.*]] = arith.extsi %[[MIN]] : i32 to i64
// CHECK: %[[MAX64:.*]] = arith.extsi %[[MAX]] : i32 to i64
// CHECK: %[[LOWER:.*]] = arith.constant -61 : i64
// CHECK: %[[UPPER:.*]] = arith.constant 61 : i64
// CHECK: %[[LOW:.*]] = arith.cmpi slt, %[[MIN64]], %[[LOWER]] : i64
// CHECK: %[[HIGH:.*]] = arith.cmpi sge, %[[MAX64]], %[[UPPER]] : i64
// CHECK: %[[BAD:.*]] = arith.ori %[[LOW]], %[[HIGH]] : i1
// CHECK: scf.if %[[BAD]] {
// CHECK:   %[[FAILED:.*]] = memref.load %[[REC]][%{{.*}}] : memref<5xi64>
// CHECK:   %[[FIRST:.*]] = arith.cmpi eq, %[[FAILED]], %{{.*}} : i64
// CHECK:   scf.if %[[FIRST]] {
// CHECK:     %[[VALUE:.*]] = arith.select %[[HIGH]], %[[MAX64]], %[[MIN64]] : i64
// CHECK:     memref.store %{{.*}}, %[[REC]][%{{.*}}] : memref<5xi64>
// CHECK:     memref.store %[[VALUE]], %[[REC]][%{{.*}}] : memref<5xi64>
// CHECK:     memref.store %[[LOWER]], %[[REC]][%{{.*}}] : memref<5xi64>
// CHECK:     memref.store %[[UPPER]], %[[REC]][%{{.*}}] : memref<5xi64>
// CHECK:     %[[ID:.*]] = arith.constant 0 : i64
// CHECK-NEXT: %{{.*}} = arith.constant 4 : index
// CHECK-NEXT: memref.store %[[ID]], %[[REC]][%{{.*}}] : memref<5xi64>
// The second check of the function: id 1, the same record.
// CHECK: arith.constant 1 : i64
// CHECK-NOT: nn.check_index_range
// CHECK: call @pipedream.cuda_take_run_time_status(%[[REC]]) : (memref<5xi64>) -> ()
// CHECK-NEXT: memref.dealloc %[[REC]] : memref<5xi64>
// CHECK-NEXT: return
// CHECK: func.func private @pipedream.cuda_take_run_time_status(memref<5xi64>) attributes {pipedream.cuda.checks = {{\[\[}}"Gather", "/tok/Gather", "idx"], ["GatherElements", "/g", "indices"]]}

// After cuda-map-to-kernels and cuda-allocate-device-memory the record is
// device memory and each check a single-thread kernel reading min and max
// where the reduction left them; no host code touches device memory.
// KERNEL-DAG: llvm.mlir.global internal thread_local @pipedream.run_time_status() {{.*}} : !llvm.struct<(i64, i64, i64, i64, ptr)>
// KERNEL-DAG: llvm.mlir.global internal constant @pipedream.cuda_check_info.0("Gather\00/tok/Gather\00idx\00")
// KERNEL-DAG: llvm.mlir.global internal constant @pipedream.cuda_check_info.1("GatherElements\00/g\00indices\00")
// KERNEL-LABEL: func.func @check(
// KERNEL: %[[REC:.*]] = gpu.alloc () : memref<5xi64>
// KERNEL: gpu.launch
// KERNEL: memref.store %{{.*}}, %[[REC]]
// KERNEL: gpu.launch blocks
// KERNEL: memref.load %arg0[]
// KERNEL: memref.load %arg1[]
// KERNEL: scf.if
// KERNEL: memref.load %[[REC]]
// KERNEL: memref.store %{{.*}}, %[[REC]]
// KERNEL: gpu.terminator
// KERNEL: call @pipedream.cuda_take_run_time_status(%[[REC]])
// KERNEL: gpu.dealloc %[[REC]] : memref<5xi64>
// The host half: the device record copied to the host, the thread-local
// record (the CPU target's) filled from it when empty, with the names of
// the check whose id the device record holds.
// KERNEL-LABEL: func.func private @pipedream.cuda_take_run_time_status(
// KERNEL-SAME: %[[DEV:.*]]: memref<5xi64>) {
// KERNEL: %[[HOST:.*]] = memref.alloca() : memref<5xi64>
// KERNEL: gpu.memcpy  %[[HOST]], %[[DEV]] : memref<5xi64>, memref<5xi64>
// KERNEL: %[[F:.*]] = memref.load %[[HOST]]
// KERNEL: scf.if
// KERNEL: "llvm.intr.threadlocal.address"
// KERNEL: scf.if
// KERNEL: llvm.mlir.addressof @pipedream.cuda_check_info.0
// KERNEL: arith.select
// KERNEL: llvm.mlir.addressof @pipedream.cuda_check_info.1
// KERNEL: arith.select
// KERNEL: llvm.store
// KERNEL-NOT: pipedream.cuda.checks
// KERNEL-LABEL: func.func @pipedream_run_time_status() -> !llvm.ptr attributes {pipedream.cpu.export}
func.func @check(%min: memref<i32>, %max: memref<i32>) {
  %a = memref.load %min[] : memref<i32>
  %b = memref.load %max[] : memref<i32>
  nn.check_index_range %a, %b {lower = -61 : i64, upper = 61 : i64,
      node = "/tok/Gather", op_type = "Gather", input = "idx"} : i32
  nn.check_index_range %a, %b {lower = -3 : i64, upper = 3 : i64,
      node = "/g", op_type = "GatherElements", input = "indices"} : i32
  return
}

// -----

// Without checks, no device record; the host record and its accessor are
// still defined (cuda-define-run-time-status).
// CHECK-LABEL: func.func @none(
// CHECK-NOT: memref.alloc
// CHECK-NOT: pipedream.cuda_take_run_time_status
// KERNEL: llvm.mlir.global internal thread_local @pipedream.run_time_status()
// KERNEL-LABEL: func.func @none(
// KERNEL-NOT: pipedream.cuda_take_run_time_status
// KERNEL: func.func @pipedream_run_time_status()
func.func @none(%x: memref<4xf32>) {
  return
}

// -----

// A check of kind size keeps U+0001 before the output's name (as on CPUs).
// CHECK-LABEL: func.func @size(
// CHECK: func.func private @pipedream.cuda_take_run_time_status(memref<5xi64>) attributes {pipedream.cuda.checks = {{\[\[}}"NonZero", "nz", "\01result"]]}
func.func @size(%n: memref<i64>) {
  %a = memref.load %n[] : memref<i64>
  nn.check_index_range %a, %a {lower = 8 : i64, upper = 9 : i64, kind = "size",
      node = "nz", op_type = "NonZero", input = "result"} : i64
  return
}
