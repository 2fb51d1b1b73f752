// RUN: pipedream-opt %s --nn-autodiff | FileCheck %s
// RUN: pipedream-opt %s --nn-autodiff=split-backward | FileCheck %s --check-prefix=SPLIT
// RUN: pipedream-opt %s --nn-autodiff=input-gradients=false | FileCheck %s --check-prefix=WEIGHTS
// RUN: pipedream-opt %s --nn-autodiff=functions=twice | FileCheck %s --check-prefix=ONLY

// A Linear + tanh: the forward saves the input (a residual: a pipeline stage
// stashes it) and tanh's output; the weight is an argument of the backward,
// never a residual; the constant 1 of tanh's rule is rematerialized.
func.func @linear(%x: tensor<2x3xf32>, %w: tensor<3x4xf32> {nn.name = "w", nn.param = dense<1.0> : tensor<3x4xf32>}) -> tensor<2x4xf32> {
  %0 = nn.matmul %x, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %1 = nn.tanh %0 : tensor<2x4xf32>
  return %1 : tensor<2x4xf32>
}

// CHECK-LABEL: func.func @linear(
// CHECK-LABEL: func.func @linear_forward(
// CHECK-SAME: %[[X:.*]]: tensor<2x3xf32>, %[[W:.*]]: tensor<3x4xf32> {nn.name = "w"
// CHECK-SAME: -> (tensor<2x4xf32>, tensor<2x3xf32> {nn.residual = 0 : i64}, tensor<2x4xf32> {nn.residual = 1 : i64})
// CHECK: %[[MM:.*]] = nn.matmul %[[X]], %[[W]]
// CHECK: %[[Y:.*]] = nn.tanh %[[MM]]
// CHECK: return %[[Y]], %[[X]], %[[Y]]
// CHECK-LABEL: func.func @linear_backward(
// CHECK-SAME: %[[BW:.*]]: tensor<3x4xf32> {nn.name = "w"
// CHECK-SAME: %[[R0:.*]]: tensor<2x3xf32> {nn.residual = 0 : i64}
// CHECK-SAME: %[[R1:.*]]: tensor<2x4xf32> {nn.residual = 1 : i64}
// CHECK-SAME: %[[DY:.*]]: tensor<2x4xf32> {nn.grad_of_result = 0 : i64}
// CHECK-SAME: -> (tensor<2x3xf32> {nn.grad_of = 0 : i64}, tensor<3x4xf32> {nn.grad_of = 1 : i64})
// CHECK: %[[ONE:.*]] = nn.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[SQ:.*]] = nn.mul %[[R1]], %[[R1]]
// CHECK: %[[D:.*]] = nn.sub %[[ONE]], %[[SQ]]
// CHECK: %[[DT:.*]] = nn.mul %[[DY]], %[[D]]
// CHECK: %[[WT:.*]] = nn.transpose %[[BW]]
// CHECK: %[[DX:.*]] = nn.matmul %[[DT]], %[[WT]]
// CHECK: %[[XT:.*]] = nn.transpose %[[R0]]
// CHECK: %[[DW:.*]] = nn.matmul %[[XT]], %[[DT]]
// CHECK: return %[[DX]], %[[DW]]

// Zero-bubble split: B computes dx and hands tanh's gradient to W, which
// needs only the stashed input and that carry.
// SPLIT-LABEL: func.func @linear_backward_input(
// SPLIT-SAME: {nn.residual = 1 : i64}
// SPLIT-SAME: {nn.grad_of_result = 0 : i64}
// SPLIT-SAME: -> (tensor<2x3xf32> {nn.grad_of = 0 : i64}, tensor<2x4xf32> {nn.carry = 0 : i64})
// SPLIT-NOT: nn.residual = 0
// SPLIT: return
// SPLIT-LABEL: func.func @linear_backward_weight(
// SPLIT-SAME: %[[R0:.*]]: tensor<2x3xf32> {nn.residual = 0 : i64}, %[[C:.*]]: tensor<2x4xf32> {nn.carry = 0 : i64}
// SPLIT-SAME: -> (tensor<3x4xf32> {nn.grad_of = 1 : i64})
// SPLIT: %[[XT:.*]] = nn.transpose %[[R0]]
// SPLIT: nn.matmul %[[XT]], %[[C]]

// Only the weight's gradient: no dx, and the input is still a residual.
// WEIGHTS-LABEL: func.func @linear_backward(
// WEIGHTS-SAME: -> (tensor<3x4xf32> {nn.grad_of = 1 : i64})

// A value used twice: the gradients of both uses are summed. An integer
// argument gets no gradient, and neither does the `nn.no_grad` one.
func.func @twice(%x: tensor<4xf32>, %n: tensor<4xi64>, %c: tensor<4xf32> {nn.no_grad}) -> (tensor<4xf32>, tensor<4xi64>) {
  %0 = nn.mul %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = nn.add %0, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %1, %n : tensor<4xf32>, tensor<4xi64>
}

// CHECK-LABEL: func.func @twice_backward(
// CHECK-SAME: %[[X:.*]]: tensor<4xf32> {nn.residual = 0 : i64}, %[[DY:.*]]: tensor<4xf32> {nn.grad_of_result = 0 : i64}
// CHECK-SAME: -> (tensor<4xf32> {nn.grad_of = 0 : i64})
// CHECK-DAG: %[[A:.*]] = nn.mul %[[DY]], %[[X]]
// CHECK-DAG: %[[B:.*]] = nn.mul %[[DY]], %[[X]]
// CHECK: %[[S:.*]] = nn.add %{{.*}}, %{{.*}}
// CHECK: return %[[S]]

// ONLY-NOT: func.func @linear_forward
// ONLY: func.func @twice_forward
// ONLY-NOT: func.func @linear_forward

// A result that does not depend on the argument: its gradient is zero.
func.func @constant_result(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = nn.constant dense<2.0> : tensor<3xf32>
  return %0 : tensor<3xf32>
}
// CHECK-LABEL: func.func @constant_result_backward(
// CHECK-SAME: %{{.*}}: tensor<3xf32> {nn.grad_of_result = 0 : i64}) -> (tensor<3xf32> {nn.grad_of = 0 : i64})
// CHECK: %[[Z:.*]] = nn.constant dense<0.000000e+00> : tensor<3xf32>
// CHECK: return %[[Z]]

// A Linear as torch exports it: x @ transpose(W). The transposed weight is
// weight-derived (a memory-bound op of the weight alone): the forward does
// not return it (a pipeline stage would stash a copy per micro-batch in
// flight), the backward takes W and transposes it again.
func.func @linear_wt(%x: tensor<2x3xf32>, %w: tensor<4x3xf32> {nn.name = "w", nn.param = dense<1.0> : tensor<4x3xf32>}) -> tensor<2x4xf32> {
  %t = nn.transpose %w {perm = array<i64: 1, 0>} : (tensor<4x3xf32>) -> tensor<3x4xf32>
  %0 = nn.matmul %x, %t : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}
// CHECK-LABEL: func.func @linear_wt_forward(
// CHECK-SAME: -> (tensor<2x4xf32>, tensor<2x3xf32> {nn.residual = 0 : i64})
// CHECK-NOT: nn.residual = 1
// CHECK-LABEL: func.func @linear_wt_backward(
// CHECK-SAME: %[[W:.*]]: tensor<4x3xf32> {nn.name = "w"
// CHECK-SAME: %[[X:.*]]: tensor<2x3xf32> {nn.residual = 0 : i64}
// CHECK-SAME: %[[DY:.*]]: tensor<2x4xf32> {nn.grad_of_result = 0 : i64}
// CHECK: %[[T:.*]] = nn.transpose %[[W]]
// CHECK: nn.transpose %[[T]]
// CHECK: return
// B recomputes the transpose too; W needs no weight at all.
// SPLIT-LABEL: func.func @linear_wt_backward_input(
// SPLIT-SAME: %[[W:.*]]: tensor<4x3xf32> {nn.name = "w"
// SPLIT: nn.transpose %[[W]]
// SPLIT-LABEL: func.func @linear_wt_backward_weight(
// SPLIT-NOT: nn.name = "w"
// SPLIT: return

// Not rematerialized: a value of a weight the function updates (a running
// statistic: its buffer changes after the forward), and a compute-bound op
// of weights alone (a product of two weights: more flops than bytes).
func.func @kept(%x: tensor<8x8xf32>, %m: tensor<8x8xf32> {nn.name = "m", nn.param = dense<1.0> : tensor<8x8xf32>}, %a: tensor<8x8xf32> {nn.name = "a", nn.param = dense<1.0> : tensor<8x8xf32>}, %b: tensor<8x8xf32> {nn.name = "b", nn.param = dense<1.0> : tensor<8x8xf32>}) -> (tensor<8x8xf32>, tensor<8x8xf32> {nn.updates = "m"}) {
  %s = nn.tanh %m : tensor<8x8xf32>
  %0 = nn.mul %x, %s : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %p = nn.matmul %a, %b : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %1 = nn.mul %0, %p : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %m2 = nn.add %m, %x : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  return %1, %m2 : tensor<8x8xf32>, tensor<8x8xf32>
}
// CHECK-LABEL: func.func @kept_forward(
// CHECK: %[[S:.*]] = nn.tanh
// CHECK: %[[P:.*]] = nn.matmul
// CHECK: return {{.*}}%[[S]], {{.*}}%[[P]]
// CHECK-LABEL: func.func @kept_backward(
// CHECK-SAME: {nn.residual = 1 : i64}
// CHECK-SAME: {nn.residual = 3 : i64}
// CHECK-NOT: nn.tanh
// CHECK: return
