// RUN: pipedream-opt %s -split-input-file -cpu-merge-equal-functions -verify-diagnostics | FileCheck %s
// RUN: pipedream-opt %s -split-input-file -cpu-merge-equal-functions="symbol-prefix=pd_" | FileCheck %s --check-prefix=PREFIX

// Two pipeline stages holding the same block: equal bodies (SSA names,
// locations, weight names and values, the `pipe` annotations differ),
// weights as arguments. The
// second becomes its entry wrapper forwarding to the first's, and takes
// over the declaration a native rank entry calls; the rank entry and the
// third stage (another constant) are left alone.
// CHECK-LABEL: func.func private @pipedream_stage1_F(!llvm.ptr)
// CHECK-LABEL: func.func @stage1_F(
// CHECK-SAME:      %{{.*}}: tensor<4x4xf32> {nn.name = "block1.w", {{.*}}}, %{{.*}}: tensor<2x4xf32>) -> (tensor<2x4xf32> {pipe.send = 2 : i64})
// CHECK-SAME:      attributes {pipe.stage = #pipe.stage<1>}
// CHECK:         linalg.matmul
// CHECK:         linalg.generic
// CHECK-LABEL: func.func @pipedream_stage2_F(%arg0: !llvm.ptr) attributes {pipedream.cpu.export}
// CHECK-NEXT:    call @pipedream_stage1_F(%arg0) : (!llvm.ptr) -> ()
// CHECK-NEXT:    return
// CHECK-NOT:   func.func @stage2_F
// CHECK-LABEL: func.func @stage3_F(
// CHECK:         arith.constant 2.000000e+00 : f32
// CHECK-LABEL: func.func @rank0(
// CHECK:         call @pipedream_stage2_F(%arg1) : (!llvm.ptr) -> ()
// PREFIX-LABEL: func.func private @pd_stage1_F(!llvm.ptr)
// PREFIX-LABEL: func.func @pd_stage2_F(%arg0: !llvm.ptr) attributes {pipedream.cpu.export}
// PREFIX-NEXT:    call @pd_stage1_F(%arg0) : (!llvm.ptr) -> ()
#map = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func private @pipedream_stage2_F(!llvm.ptr)
  func.func @stage1_F(%w: tensor<4x4xf32> {nn.name = "block1.w", nn.param = dense<1.0> : tensor<4x4xf32>}, %x: tensor<2x4xf32>) -> (tensor<2x4xf32> {pipe.send = 2 : i64})
      attributes {pipe.stage = #pipe.stage<1>} {
    %zero = arith.constant 0.000000e+00 : f32
    %e = tensor.empty() : tensor<2x4xf32>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4xf32>) -> tensor<2x4xf32>
    %m = linalg.matmul ins(%x, %w : tensor<2x4xf32>, tensor<4x4xf32>) outs(%f : tensor<2x4xf32>) -> tensor<2x4xf32>
    %c = arith.constant 1.000000e+00 : f32
    %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
        ins(%m : tensor<2x4xf32>) outs(%e : tensor<2x4xf32>) {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %c : f32
      linalg.yield %s : f32
    } -> tensor<2x4xf32>
    return %r : tensor<2x4xf32>
  }
  func.func @stage2_F(%weight: tensor<4x4xf32> {nn.name = "block2.w", nn.param = dense<2.0> : tensor<4x4xf32>}, %input: tensor<2x4xf32>) -> (tensor<2x4xf32> {pipe.send = 3 : i64})
      attributes {pipe.stage = #pipe.stage<2>} {
    %0 = arith.constant 0.000000e+00 : f32
    %1 = tensor.empty() : tensor<2x4xf32>
    %2 = linalg.fill ins(%0 : f32) outs(%1 : tensor<2x4xf32>) -> tensor<2x4xf32> loc("block7")
    %3 = linalg.matmul ins(%input, %weight : tensor<2x4xf32>, tensor<4x4xf32>) outs(%2 : tensor<2x4xf32>) -> tensor<2x4xf32>
    %4 = arith.constant 1.000000e+00 : f32
    %5 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
        ins(%3 : tensor<2x4xf32>) outs(%1 : tensor<2x4xf32>) {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %4 : f32
      linalg.yield %s : f32
    } -> tensor<2x4xf32>
    return %5 : tensor<2x4xf32>
  }
  func.func @stage3_F(%w: tensor<4x4xf32>, %x: tensor<2x4xf32>) -> tensor<2x4xf32> {
    %zero = arith.constant 0.000000e+00 : f32
    %e = tensor.empty() : tensor<2x4xf32>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4xf32>) -> tensor<2x4xf32>
    %m = linalg.matmul ins(%x, %w : tensor<2x4xf32>, tensor<4x4xf32>) outs(%f : tensor<2x4xf32>) -> tensor<2x4xf32>
    %c = arith.constant 2.000000e+00 : f32
    %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
        ins(%m : tensor<2x4xf32>) outs(%e : tensor<2x4xf32>) {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %c : f32
      linalg.yield %s : f32
    } -> tensor<2x4xf32>
    return %r : tensor<2x4xf32>
  }
  func.func @rank0(%ctx: !llvm.ptr, %buffers: !llvm.ptr) -> i32 attributes {pipedream.cpu.export} {
    func.call @pipedream_stage2_F(%buffers) : (!llvm.ptr) -> ()
    %ok = arith.constant 0 : i32
    return %ok : i32
  }
}

// -----

// What keeps equal bodies apart: another attribute that lowering reads (an
// in-place result), the argument order (the same uses of other weights),
// a private function (not a bundle function).
// CHECK-LABEL: func.func @f(
// CHECK-LABEL: func.func @in_place(
// CHECK:         arith.addf
// CHECK-LABEL: func.func @swapped(
// CHECK:         arith.subf
// CHECK-LABEL: func.func private @helper(
// CHECK:         arith.subf
// CHECK-NOT:   pipedream.cpu.export
func.func @f(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func @in_place(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32> {pipedream.in_place = 0 : i64}) {
  %0 = arith.addf %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func @g(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.subf %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func @swapped(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.subf %b, %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func private @helper(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.subf %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A call of a replaced function calls the kept one.
// CHECK-LABEL: func.func @first(
// CHECK-LABEL: func.func @pipedream_second(%arg0: !llvm.ptr) attributes {pipedream.cpu.export}
// CHECK-LABEL: func.func @caller(
// CHECK:         call @first(%arg0)
func.func @first(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = math.exp %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func @second(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = math.exp %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func @caller(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = func.call @second(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A function something other than a call names (as a pipe.program names
// its stages before the rank programs are lowered) is not replaced.
// CHECK-LABEL: func.func @one(
// CHECK-LABEL: func.func @named(
// CHECK:         math.tanh
// CHECK-LABEL: func.func @pipedream_three(%arg0: !llvm.ptr) attributes {pipedream.cpu.export}
// CHECK-NEXT:    call @pipedream_one(%arg0)
// CHECK-LABEL: func.func @user(
// CHECK:         constant @named
func.func @one(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = math.tanh %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func @named(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = math.tanh %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func @three(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = math.tanh %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func @user() -> ((tensor<4xf32>) -> tensor<4xf32>) {
  %f = func.constant @named : (tensor<4xf32>) -> tensor<4xf32>
  return %f : (tensor<4xf32>) -> tensor<4xf32>
}
