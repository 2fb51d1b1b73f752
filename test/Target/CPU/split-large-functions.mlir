// RUN: pipedream-opt %s -split-input-file -cpu-split-large-functions="max-ops=2" | FileCheck %s

// Nine ops (besides the constant and the alloca) in runs of two: five
// parts, the alloca in between staying in @f. The argument and the alloca
// go through the frame; %a, %b, %d0, %e and %d cross runs (%c stays inside
// its run); %e reuses the slot of %d0 and %d the slot of %a, both freed by
// the run that defines them (loads come first); constants are cloned into
// the runs that use them; the return reads %d back.
// CHECK-LABEL: llvm.func @f(
// CHECK-SAME:      %[[P:.*]]: !llvm.ptr) -> i64 {
// CHECK:         %[[FRAME:.*]] = llvm.alloca %{{.*}} x !llvm.array<40 x i8> {alignment = 16 : i64}
// CHECK-NEXT:    llvm.store %[[P]], %[[FRAME]] : !llvm.ptr, !llvm.ptr
// CHECK:         llvm.call @f.part0(%[[FRAME]])
// CHECK-NEXT:    %[[BUF:.*]] = llvm.alloca
// CHECK-NEXT:    %[[BUFSLOT:.*]] = llvm.getelementptr %[[FRAME]][24]
// CHECK-NEXT:    llvm.store %[[BUF]], %[[BUFSLOT]]
// CHECK-NEXT:    llvm.call @f.part1(%[[FRAME]])
// CHECK-NEXT:    llvm.call @f.part2(%[[FRAME]])
// CHECK-NEXT:    llvm.call @f.part3(%[[FRAME]])
// CHECK-NEXT:    llvm.call @f.part4(%[[FRAME]])
// CHECK-NEXT:    %[[DSLOT:.*]] = llvm.getelementptr %[[FRAME]][8]
// CHECK-NEXT:    %[[D:.*]] = llvm.load %[[DSLOT]] : !llvm.ptr -> i64
// CHECK-NEXT:    llvm.return %[[D]] : i64
// d = (e + b) + a, stored where a was.
// CHECK-LABEL: llvm.func internal @f.part3(
// CHECK-SAME:      %[[F3:.*]]: !llvm.ptr) attributes {no_inline} {
// CHECK-DAG:     %[[E3:.*]] = llvm.load %{{.*}} : !llvm.ptr -> i64
// CHECK:         %[[S:.*]] = llvm.add
// CHECK-NEXT:    %[[D3:.*]] = llvm.add %[[S]],
// CHECK-NEXT:    %[[S8:.*]] = llvm.getelementptr %[[F3]][8]
// CHECK-NEXT:    llvm.store %[[D3]], %[[S8]] : i64, !llvm.ptr
// CHECK-NEXT:    llvm.return
// CHECK-LABEL: llvm.func internal @f.part0(
// CHECK-SAME:      %[[F0:.*]]: !llvm.ptr) attributes {no_inline} {
// CHECK-NEXT:    %[[P0:.*]] = llvm.load %[[F0]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:    %[[ONE:.*]] = llvm.mlir.constant(1 : i64) : i64
// CHECK-NEXT:    %[[A:.*]] = llvm.load %[[P0]] : !llvm.ptr -> i64
// CHECK-NEXT:    %[[B:.*]] = llvm.add %[[A]], %[[ONE]] : i64
// CHECK-NEXT:    %[[SA:.*]] = llvm.getelementptr %[[F0]][8]
// CHECK-NEXT:    llvm.store %[[A]], %[[SA]] : i64, !llvm.ptr
// CHECK-NEXT:    %[[SB:.*]] = llvm.getelementptr %[[F0]][16]
// CHECK-NEXT:    llvm.store %[[B]], %[[SB]] : i64, !llvm.ptr
// CHECK-NEXT:    llvm.return
llvm.func @f(%p: !llvm.ptr) -> i64 {
  %one = llvm.mlir.constant(1 : i64) : i64
  %a = llvm.load %p : !llvm.ptr -> i64
  %b = llvm.add %a, %one : i64
  %buf = llvm.alloca %one x i64 : (i64) -> !llvm.ptr
  %c = llvm.mul %a, %b : i64
  %d0 = llvm.add %c, %one : i64
  llvm.store %d0, %buf : i64, !llvm.ptr
  %e = llvm.load %buf : !llvm.ptr -> i64
  %f = llvm.add %e, %b : i64
  %d = llvm.add %f, %a : i64
  llvm.store %d, %p : i64, !llvm.ptr
  llvm.return %d : i64
}

// -----

// Small functions, several blocks, and stack save/restore are left alone.
// CHECK-LABEL: llvm.func @small(
// CHECK-NOT:     llvm.call
// CHECK-LABEL: llvm.func @blocks(
// CHECK-NOT:     llvm.call
// CHECK-LABEL: llvm.func @stack(
// CHECK-NOT:     llvm.call @stack.part
// CHECK-NOT:   part
llvm.func @small(%a: i64) -> i64 {
  %b = llvm.add %a, %a : i64
  %c = llvm.mul %b, %b : i64
  llvm.return %c : i64
}
llvm.func @blocks(%a: i64, %x: i1) -> i64 {
  %b = llvm.add %a, %a : i64
  %c = llvm.mul %b, %b : i64
  %d = llvm.mul %c, %b : i64
  %e = llvm.mul %d, %b : i64
  %f = llvm.mul %e, %b : i64
  llvm.cond_br %x, ^bb1, ^bb2
^bb1:
  llvm.return %f : i64
^bb2:
  llvm.return %a : i64
}
llvm.func @stack(%a: i64) -> i64 {
  %s = llvm.intr.stacksave : !llvm.ptr
  %b = llvm.add %a, %a : i64
  %c = llvm.mul %b, %b : i64
  %d = llvm.mul %c, %b : i64
  %e = llvm.mul %d, %b : i64
  %f = llvm.mul %e, %b : i64
  llvm.intr.stackrestore %s : !llvm.ptr
  llvm.return %f : i64
}
