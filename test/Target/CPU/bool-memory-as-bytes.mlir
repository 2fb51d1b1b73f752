// RUN: pipedream-opt %s -cpu-bool-memory-as-bytes | FileCheck %s

// A mask read and a condition written: byte accesses, the i1 values
// unchanged around them.
// CHECK-LABEL: llvm.func @select_masked
// CHECK: %[[BYTE:.*]] = llvm.load %{{.*}} {alignment = 1 : i64} : !llvm.ptr -> i8
// CHECK: %[[BIT:.*]] = llvm.trunc %[[BYTE]] : i8 to i1
// CHECK: %[[SEL:.*]] = llvm.select %[[BIT]], %{{.*}}, %{{.*}} : i1, f32
// CHECK: %[[CMP:.*]] = llvm.fcmp "olt" %[[SEL]]
// CHECK: %[[WIDE:.*]] = llvm.zext %[[CMP]] : i1 to i8
// CHECK: llvm.store %[[WIDE]], %{{.*}} : i8, !llvm.ptr
// CHECK: llvm.return %[[SEL]]
llvm.func @select_masked(%mask: !llvm.ptr, %out: !llvm.ptr, %x: f32, %fill: f32) -> f32 {
  %m = llvm.load %mask {alignment = 1 : i64} : !llvm.ptr -> i1
  %s = llvm.select %m, %x, %fill : i1, f32
  %c = llvm.fcmp "olt" %s, %fill : f32
  llvm.store %c, %out : i1, !llvm.ptr
  llvm.return %s : f32
}

// Other types and vectors of i1 are left alone.
// CHECK-LABEL: llvm.func @untouched
// CHECK: llvm.load %{{.*}} : !llvm.ptr -> f32
// CHECK: llvm.load %{{.*}} : !llvm.ptr -> vector<8xi1>
// CHECK-NOT: llvm.trunc
// CHECK: llvm.store %{{.*}}, %{{.*}} : vector<8xi1>, !llvm.ptr
// CHECK-NOT: llvm.zext
llvm.func @untouched(%p: !llvm.ptr, %q: !llvm.ptr) -> f32 {
  %f = llvm.load %p : !llvm.ptr -> f32
  %v = llvm.load %p : !llvm.ptr -> vector<8xi1>
  llvm.store %v, %q : vector<8xi1>, !llvm.ptr
  llvm.return %f : f32
}
