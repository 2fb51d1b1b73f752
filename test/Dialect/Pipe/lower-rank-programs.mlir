// RUN: pipedream-opt %s -split-input-file -pipe-lower-rank-programs | FileCheck %s
// RUN: pipedream-opt %s -split-input-file -pipe-lower-rank-programs="symbol-prefix=my_" | FileCheck %s --check-prefix=PREFIX
// GPipe, K = 2, M = 1, per-rank view. Rank 0: its input is loaded into
// register 0 (instruction 0), s0_F (a weight, then the value argument)
// gets register 0 in buffer slot 1 and its results registers 1 and 2 in
// slots 2 and 3 (instruction 1), register 1 is sent (instruction 2), the
// received gradient lands in register 1 again (it is dead after the send:
// liveness reuse), the stashed activation stays in register 2 until s0_B
// reads it. Every runtime call (through the table ctx->runtime, slots
// input 0, call_begin 1, call_end 2, send 3, recv 4, loss 5) is checked and
// a non-zero status is returned at once.

// CHECK-DAG: func.func private @pipedream_s0_F(!llvm.ptr)
// CHECK-DAG: func.func private @pipedream_s0_B(!llvm.ptr)
// CHECK-DAG: func.func private @pipedream_s1_F(!llvm.ptr)
// CHECK-NOT: pipe.program
// PREFIX-DAG: func.func private @my_s0_F(!llvm.ptr)
// PREFIX-DAG: call @my_s0_F

// CHECK-LABEL: func.func private @pipeline_rank0(
// CHECK-SAME: %[[CTX:.*]]: !llvm.ptr, %[[REGS:.*]]: !llvm.ptr) -> i32
// CHECK-SAME: attributes {pipe.rank = 0 : i64, pipedream.cpu.export}
// CHECK: %[[TABLE:.*]] = llvm.load %[[CTX]] : !llvm.ptr -> !llvm.ptr
// CHECK: %[[BUFS:.*]] = llvm.alloca %{{.*}} x !llvm.ptr
// Instruction 0: input into register 0.
// CHECK: %[[I0:.*]] = arith.constant 0 : i64
// CHECK: %[[R0SLOT:.*]] = llvm.getelementptr %[[REGS]][0]
// CHECK: %[[R0:.*]] = llvm.load %[[R0SLOT]]
// CHECK: %[[INSLOT:.*]] = llvm.getelementptr %[[TABLE]][0]
// CHECK: %[[INPUT:.*]] = llvm.load %[[INSLOT]]
// CHECK: %[[S0:.*]] = llvm.call %[[INPUT]](%[[CTX]], %[[I0]], %[[R0]]) : !llvm.ptr, (!llvm.ptr, i64, !llvm.ptr) -> i32
// CHECK: %[[OK0:.*]] = arith.cmpi eq, %[[S0]]
// CHECK: cf.cond_br %[[OK0]], ^[[NEXT0:.*]], ^[[FAIL:.*]](%[[S0]] : i32)
// Instruction 1: s0_F, value slots 1 (register 0), 2 and 3 (registers 1, 2).
// CHECK: ^[[NEXT0]]:
// CHECK: %[[I1:.*]] = arith.constant 1 : i64
// CHECK: llvm.getelementptr %[[REGS]][0]
// CHECK: llvm.getelementptr %[[BUFS]][1]
// CHECK: llvm.getelementptr %[[REGS]][1]
// CHECK: llvm.getelementptr %[[BUFS]][2]
// CHECK: llvm.getelementptr %[[REGS]][2]
// CHECK: llvm.getelementptr %[[BUFS]][3]
// CHECK: llvm.getelementptr %[[TABLE]][1]
// CHECK: llvm.call %{{.*}}(%[[CTX]], %[[I1]], %[[BUFS]]) : !llvm.ptr, (!llvm.ptr, i64, !llvm.ptr) -> i32
// CHECK: cf.cond_br %{{.*}}, ^[[CALL:.*]], ^[[FAIL]](
// CHECK: ^[[CALL]]:
// CHECK-NEXT: call @pipedream_s0_F(%[[BUFS]]) : (!llvm.ptr) -> ()
// CHECK: llvm.getelementptr %[[TABLE]][2]
// CHECK: llvm.call %{{.*}}(%[[CTX]], %[[I1]]) : !llvm.ptr, (!llvm.ptr, i64) -> i32
// Instruction 2: send register 1 (32 bytes) to rank 1, tag 0.
// CHECK: %[[I2:.*]] = arith.constant 2 : i64
// CHECK: %[[PEER:.*]] = arith.constant 1 : i64
// CHECK: %[[TAG:.*]] = arith.constant 0 : i64
// CHECK: llvm.getelementptr %[[REGS]][1]
// CHECK: %[[BYTES:.*]] = arith.constant 32 : i64
// CHECK: llvm.getelementptr %[[TABLE]][3]
// CHECK: llvm.call %{{.*}}(%[[CTX]], %[[I2]], %[[PEER]], %[[TAG]], %{{.*}}, %[[BYTES]]) : !llvm.ptr, (!llvm.ptr, i64, i64, i64, !llvm.ptr, i64) -> i32
// Instruction 3: recv into register 1 (reused).
// CHECK: arith.constant 3 : i64
// CHECK: llvm.getelementptr %[[REGS]][1]
// CHECK: llvm.getelementptr %[[TABLE]][4]
// Instruction 4: s0_B reads the restored activation (register 2, slot 0)
// and the gradient (register 1, slot 1); its grad accumulator (slot 2)
// and its `updates` output (slot 3) are bound by the runtime.
// CHECK: arith.constant 4 : i64
// CHECK: llvm.getelementptr %[[REGS]][2]
// CHECK: llvm.getelementptr %[[BUFS]][0]
// CHECK: llvm.getelementptr %[[REGS]][1]
// CHECK: llvm.getelementptr %[[BUFS]][1]
// CHECK-NOT: llvm.getelementptr %[[BUFS]]
// CHECK: llvm.getelementptr %[[TABLE]][1]
// CHECK: call @pipedream_s0_B(%[[BUFS]])
// CHECK: llvm.getelementptr %[[TABLE]][2]
// CHECK: cf.cond_br %{{.*}}, ^[[END:.*]], ^[[FAIL]](
// CHECK: ^[[END]]:
// CHECK-NEXT: %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK-NEXT: return %[[ZERO]] : i32
// CHECK: ^[[FAIL]](%[[STATUS:.*]]: i32):
// CHECK-NEXT: return %[[STATUS]] : i32

// Rank 1: recv (instruction 0), s1_F, s1_B, send, then the loss of
// micro-batch 0 (register 1, the f32 result of s1_F) last.
// CHECK-LABEL: func.func private @pipeline_rank1(
// CHECK-SAME: attributes {pipe.rank = 1 : i64, pipedream.cpu.export}
// CHECK: llvm.getelementptr %{{.*}}[4]
// CHECK: call @pipedream_s1_F
// CHECK: call @pipedream_s1_B
// CHECK: llvm.getelementptr %{{.*}}[3]
// CHECK: %[[LI:.*]] = arith.constant 4 : i64
// CHECK: %[[LM:.*]] = arith.constant 0 : i64
// CHECK: llvm.getelementptr %{{.*}}[1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK: llvm.getelementptr %{{.*}}[5]
// CHECK: llvm.call %{{.*}}(%{{.*}}, %[[LI]], %[[LM]], %{{.*}}) : !llvm.ptr, (!llvm.ptr, i64, i64, !llvm.ptr) -> i32

func.func @s0_F(%w: tensor<2x4xf32> {nn.param = dense<1.0> : tensor<2x4xf32>}, %x: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<0>} {
  return %x, %w : tensor<2x4xf32>, tensor<2x4xf32>
}
func.func @s0_B(%r: tensor<2x4xf32>, %g: tensor<2x4xf32>, %acc: tensor<2x4xf32> {nn.role = "grad"}) -> (tensor<2x4xf32> {nn.updates = "grad:w"}) attributes {pipe.stage = #pipe.stage<0>} {
  return %g : tensor<2x4xf32>
}
func.func private @s1_F(tensor<2x4xf32>) -> (tensor<f32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1_B(tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<1>}

pipe.program @step_rank0 rank 0 schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 1> (%x: tensor<2x4xf32> {pipe.input = "x", pipe.microbatch = 0 : i64}) {
  %a:2 = pipe.call_stage F @s0_F(%x) stage 0 microbatch 0 : (tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
  pipe.send %a#0 to 1 tag 0 : tensor<2x4xf32>
  pipe.stash %a#1 into activation slot 0 stage 0 microbatch 0 : tensor<2x4xf32>
  %r = pipe.restore activation slot 0 stage 0 microbatch 0 : tensor<2x4xf32>
  %g = pipe.recv from 1 tag 0 : tensor<2x4xf32>
  pipe.call_stage B @s0_B(%r, %g) stage 0 microbatch 0 : (tensor<2x4xf32>, tensor<2x4xf32>) -> ()
  pipe.return
}
pipe.program @step_rank1 rank 1 schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 1> () -> tensor<f32> {
  %y = pipe.recv from 0 tag 0 : tensor<2x4xf32>
  %f:2 = pipe.call_stage F @s1_F(%y) stage 1 microbatch 0 : (tensor<2x4xf32>) -> (tensor<f32>, tensor<2x4xf32>)
  pipe.stash %f#1 into activation slot 0 stage 1 microbatch 0 : tensor<2x4xf32>
  %r = pipe.restore activation slot 0 stage 1 microbatch 0 : tensor<2x4xf32>
  %d = pipe.call_stage B @s1_B(%r) stage 1 microbatch 0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  pipe.send %d to 0 tag 0 : tensor<2x4xf32>
  pipe.return %f#0 : tensor<f32>
}

// -----

// A module without programs is left alone.
// CHECK-LABEL: func.func @no_programs
// CHECK-NOT: pipeline_rank
func.func @no_programs() {
  return
}
