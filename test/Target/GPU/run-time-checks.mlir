// RUN: pipedream-opt %s --pipedream-cuda-lowering=to-nvvm=true | FileCheck %s
// RUN: pipedream-opt %s --pipedream-cuda-lowering="to-nvvm=true run-time-checks=false" | FileCheck %s --check-prefix=NOCHECKS

// An index check through the CUDA lowering to NVVM (cuda-lower-run-time-checks,
// cuda-map-to-kernels, cuda-define-run-time-status): the min/max reduction
// and the check run on the device, the check writes the device record in a
// single-thread kernel, and the host copies it (mgpuMemcpy) into the
// thread-local record the runtime reads through pipedream_run_time_status.
// CHECK-DAG: llvm.mlir.global internal constant @pipedream.cuda_check_info.0("Gather\00/tok/Gather\00idx\00")
// CHECK-DAG: llvm.mlir.global internal thread_local @pipedream.run_time_status()
// Host: the record allocated on the device, the kernels launched, the
// stream synchronized, the take function called, the record freed.
// CHECK-LABEL: llvm.func @pipedream_main(
// CHECK: %[[REC:.*]] = llvm.call @mgpuMemAlloc
// CHECK: gpu.launch_func
// CHECK: llvm.call @mgpuStreamSynchronize
// CHECK: llvm.call @__pipedream.pipedream.cuda_take_run_time_status(%[[REC]], %[[REC]],
// CHECK: llvm.call @mgpuMemFree(%[[REC]],
// The check's kernel (with the sequential min/max before it): the bounds
// compared, then failed = 1, the value, the bounds and the check id 0
// stored into the record.
// CHECK: gpu.module @pipedream_kernels
// CHECK: llvm.icmp "sge" %{{.*}}, %{{.*}} : i64
// CHECK: llvm.icmp "eq"
// CHECK-COUNT-5: llvm.store %{{.*}}, %{{.*}} : i64, !llvm.ptr
// The take function: device record to the host, waited for, then the
// thread-local record filled with the check's names.
// CHECK: llvm.func internal @__pipedream.pipedream.cuda_take_run_time_status(
// CHECK: llvm.call @mgpuMemcpy
// CHECK: llvm.call @mgpuStreamSynchronize
// CHECK: "llvm.intr.threadlocal.address"
// CHECK: llvm.store %{{.*}}, %{{.*}} : !llvm.ptr, !llvm.ptr
// CHECK-LABEL: llvm.func @pipedream_run_time_status() -> !llvm.ptr attributes {pipedream.cpu.export}

// --no-run-time-checks: no check kernel, no device record; the host record
// and its accessor stay (a record that never fails).
// NOCHECKS-NOT: pipedream.cuda_take_run_time_status
// NOCHECKS-NOT: cuda_check_info
// NOCHECKS: llvm.func @pipedream_run_time_status() -> !llvm.ptr

#id = affine_map<(d0) -> (d0)>
#scalar = affine_map<(d0) -> ()>
func.func @main(%idx: tensor<12xi64>) {
  %hi = arith.constant 9223372036854775807 : i64
  %lo = arith.constant -9223372036854775808 : i64
  %e0 = tensor.empty() : tensor<i64>
  %init0 = linalg.fill ins(%hi : i64) outs(%e0 : tensor<i64>) -> tensor<i64>
  %e1 = tensor.empty() : tensor<i64>
  %init1 = linalg.fill ins(%lo : i64) outs(%e1 : tensor<i64>) -> tensor<i64>
  %r:2 = linalg.generic {indexing_maps = [#id, #scalar, #scalar], iterator_types = ["reduction"]}
      ins(%idx : tensor<12xi64>) outs(%init0, %init1 : tensor<i64>, tensor<i64>) {
  ^bb0(%in: i64, %a: i64, %b: i64):
    %mn = arith.minsi %in, %a : i64
    %mx = arith.maxsi %in, %b : i64
    linalg.yield %mn, %mx : i64, i64
  } -> (tensor<i64>, tensor<i64>)
  %min = tensor.extract %r#0[] : tensor<i64>
  %max = tensor.extract %r#1[] : tensor<i64>
  nn.check_index_range %min, %max {lower = -61 : i64, upper = 61 : i64,
      node = "/tok/Gather", op_type = "Gather", input = "idx"} : i64
  return
}
