// RUN: pipedream-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(gpu-async-region,cuda-stream-order-library-calls))' | FileCheck %s

// Kernel, GEMM, kernel: one stream, the only synchronization at the end.
// CHECK-LABEL: func.func @kernel_gemm_kernel
// CHECK: %[[T0:.*]] = gpu.wait async
// CHECK: %[[T1:.*]] = gpu.launch_func async [%[[T0]]] @kernels::@k
// CHECK-NOT: gpu.wait
// CHECK: call @pd_gpu_gemm_f32
// CHECK-NOT: gpu.wait
// CHECK: %[[T2:.*]] = gpu.launch_func async [%[[T1]]] @kernels::@k
// CHECK: gpu.wait [%[[T2]]]
// CHECK-NEXT: return
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k() kernel {
      gpu.return
    }
  }
  func.func private @pd_gpu_gemm_f32()
  func.func @kernel_gemm_kernel() {
    %c1 = arith.constant 1 : index
    gpu.launch_func @kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    call @pd_gpu_gemm_f32() : () -> ()
    gpu.launch_func @kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    return
  }
}

// -----

// Any other call keeps the host synchronization (it may read the buffers).
// CHECK-LABEL: func.func @other_call
// CHECK: gpu.launch_func async
// CHECK: gpu.wait [%{{.*}}]
// CHECK: call @host_function
// CHECK: gpu.wait async
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k() kernel {
      gpu.return
    }
  }
  func.func private @host_function()
  func.func @other_call() {
    %c1 = arith.constant 1 : index
    gpu.launch_func @kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    call @host_function() : () -> ()
    gpu.launch_func @kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    return
  }
}

// -----

// A GEMM last: the function still returns with its device work done (a
// synchronization of the current stream after the call).
// CHECK-LABEL: func.func @gemm_last
// CHECK: gpu.launch_func async
// CHECK: gpu.wait [%{{.*}}]
// CHECK: call @pd_gpu_gemm_f32
// CHECK-NEXT: %[[T:.*]] = gpu.wait async
// CHECK-NEXT: gpu.wait [%[[T]]]
// CHECK-NEXT: return
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k() kernel {
      gpu.return
    }
  }
  func.func private @pd_gpu_gemm_f32()
  func.func @gemm_last() {
    %c1 = arith.constant 1 : index
    gpu.launch_func @kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    call @pd_gpu_gemm_f32() : () -> ()
    return
  }
}
