// The bundle ABI (docs/Bundle.md): one exported `pipedream_<fn>(void **)`
// per public function, buffers in manifest order (arguments, then results
// as out-parameters), everything else internal and renamed
// `__pipedream.<fn>` (clear of libm/libc names); a public function nothing
// else calls is the body of its wrapper.

// RUN: pipedream-compile %s --inference --emit llvm-dialect -o - | FileCheck %s
// RUN: pipedream-compile %s --inference --emit llvm -o - | FileCheck %s --check-prefix=IR
// RUN: rm -rf %t && pipedream-compile %s --inference -o %t
// RUN: llvm-nm -D --defined-only %t/program.so | FileCheck %s --check-prefix=NM
// RUN: FileCheck %s --check-prefix=JSON < %t/bundle.json

// The wrapper loads buffers[0..3]; nothing else uses @two_results, so its
// body moved into the wrapper (no call passing every buffer as a memref
// descriptor), the private helper it calls renamed and internal.
// CHECK-LABEL: llvm.func internal @__pipedream.helper(
// CHECK-NOT:   @__pipedream.two_results
// CHECK-LABEL: llvm.func @pipedream_two_results(
// CHECK-SAME:      %[[BUFFERS:.*]]: !llvm.ptr) {
// CHECK:         %[[X:.*]] = llvm.load %[[BUFFERS]] : !llvm.ptr -> !llvm.ptr
// CHECK:         %[[S1:.*]] = llvm.getelementptr %[[BUFFERS]][1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK:         %[[W:.*]] = llvm.load %[[S1]] : !llvm.ptr -> !llvm.ptr
// CHECK:         %[[S2:.*]] = llvm.getelementptr %[[BUFFERS]][2] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK:         %[[Y:.*]] = llvm.load %[[S2]] : !llvm.ptr -> !llvm.ptr
// CHECK:         %[[S3:.*]] = llvm.getelementptr %[[BUFFERS]][3] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK:         %[[Z:.*]] = llvm.load %[[S3]] : !llvm.ptr -> !llvm.ptr
// CHECK:         llvm.call @__pipedream_kernel_{{[0-9]+}}(%[[X]], %[[X]], %{{.*}}, %[[W]], %[[W]], %{{.*}}, %[[Y]], %[[Y]], %{{.*}})
// CHECK:         llvm.call @__pipedream.helper(%[[X]], %[[X]],
// CHECK:         llvm.return
// CHECK-NEXT:  }

// @square_twice calls @scalar: @scalar stays a function (renamed,
// internal), its wrapper calls it with descriptors.
// CHECK-LABEL: llvm.func internal @__pipedream.scalar(
// CHECK-LABEL: llvm.func @pipedream_scalar(
// CHECK-SAME:      %[[BUFFERS:.*]]: !llvm.ptr) {
// CHECK:         %[[A:.*]] = llvm.load %[[BUFFERS]] : !llvm.ptr -> !llvm.ptr
// CHECK:         %[[B:.*]] = llvm.load %{{.*}} : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:    llvm.call @__pipedream.scalar(%[[A]], %[[A]], %{{.*}}, %[[B]], %[[B]], %{{.*}})
// CHECK-NEXT:    llvm.return
// CHECK-LABEL: llvm.func @pipedream_square_twice(
// CHECK-COUNT-2: llvm.call @__pipedream.scalar(
// CHECK-NOT:   @__pipedream.square_twice

// Private functions get no wrapper.
// CHECK-NOT: @pipedream_helper
// CHECK-NOT: @pipedream___pipedream

// IR: define void @pipedream_two_results(ptr
// IR: define void @pipedream_scalar(ptr
// IR: define void @pipedream_square_twice(ptr
// IR-NOT: define {{.*}}@two_results(

// The kernels' exports (lib/Target/CPU/Kernels/Kernels.h), then the entries.
// NM-NOT: {{ T }}
// NM: T pipedream_cpu_gemm_bf16_kernel
// NM-NEXT: T pipedream_cpu_gemm_constants
// NM-NEXT: T pipedream_cpu_gemm_kernel
// NM-NEXT: T pipedream_cpu_gemm_packed_stats
// NM-NEXT: T pipedream_cpu_gemm_prepack
// NM-NEXT: T pipedream_cpu_num_threads
// NM-NEXT: T pipedream_cpu_set_num_threads
// NM-NEXT: T pipedream_run_time_status
// NM-NEXT: T pipedream_scalar
// NM-NEXT: T pipedream_square_twice
// NM-NEXT: T pipedream_two_results
// NM-NOT: {{ T }}

// JSON:      "weights": [
// JSON-NEXT:   {"name": "w", "dtype": "f32", "shape": [4], "offset": 0, "bytes": 16}
// JSON-NEXT: ],
// JSON:      "name": "two_results",
// JSON-NEXT: "symbol": "pipedream_two_results",
// JSON-NEXT: "kind": "inference",
// JSON-NEXT: "buffers": [
// JSON-NEXT:   {"name": "x", "role": "input", "dtype": "f32", "shape": [4]},
// JSON-NEXT:   {"name": "w", "role": "weight", "dtype": "f32", "shape": [4]},
// JSON-NEXT:   {"name": "sum", "role": "output", "dtype": "f32", "shape": [4]},
// JSON-NEXT:   {"name": "output1", "role": "output", "dtype": "f32", "shape": [4]}
// JSON-NEXT: ]
// JSON:      "name": "scalar",
// JSON:        {"name": "arg0", "role": "input", "dtype": "f64", "shape": []},
// JSON-NEXT:   {"name": "output0", "role": "output", "dtype": "f64", "shape": []}

func.func private @helper(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

func.func @two_results(%x: tensor<4xf32> {nn.name = "x"},
                       %w: tensor<4xf32> {nn.name = "w", nn.param = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>})
    -> (tensor<4xf32> {nn.name = "sum"}, tensor<4xf32>) {
  %e = tensor.empty() : tensor<4xf32>
  %s = linalg.add ins(%x, %w : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %h = func.call @helper(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %s, %h : tensor<4xf32>, tensor<4xf32>
}

func.func @scalar(%x: tensor<f64>) -> tensor<f64> {
  %e = tensor.empty() : tensor<f64>
  %r = linalg.mul ins(%x, %x : tensor<f64>, tensor<f64>) outs(%e : tensor<f64>) -> tensor<f64>
  return %r : tensor<f64>
}

// A public function another one calls keeps its body (renamed, internal)
// and its wrapper calls it.
func.func @square_twice(%x: tensor<f64>) -> tensor<f64> {
  %a = func.call @scalar(%x) : (tensor<f64>) -> tensor<f64>
  %b = func.call @scalar(%a) : (tensor<f64>) -> tensor<f64>
  return %b : tensor<f64>
}
