// RUN: pipedream-opt %s -pipe-annotate-costs="device=cpu profile=%S/Inputs/profile.json" | FileCheck %s
// RUN: not pipedream-opt %s -pipe-annotate-costs="profile=%t.missing.json" 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not pipedream-opt %s -pipe-annotate-costs="device=tpu" 2>&1 | FileCheck %s --check-prefix=DEVICE
// RUN: pipedream-opt %s -pipe-annotate-costs="device=cpu profile=%S/Inputs/link.json" | FileCheck %s --check-prefix=LINK
// RUN: not pipedream-opt %s -pipe-annotate-costs="profile=%S/Inputs/link-invalid.json" 2>&1 | FileCheck %s --check-prefix=LINK-INVALID
// RUN: not pipedream-opt %s -pipe-annotate-costs="profile=%S/Inputs/link-incomplete.json" 2>&1 | FileCheck %s --check-prefix=LINK-INCOMPLETE

// Measured times replace the model: by name, op and signature ("fc1"), or
// by op and signature when no entry has the op's name ("fc2" takes fc1's
// measurement, both relus the unnamed entry). fc1's measured input gradient
// does not apply: no gradient reaches %x. The relu entry has no backward
// times: the analytical rule (input gradient = forward) applies to the
// measured forward. The add has no entry: analytical.

// CHECK-LABEL: func.func @profiled
// CHECK: nn.matmul {{.*}}backward_input = 0.000000e+00 : f64, backward_weight = 4.000000e-06 : f64, forward = 2.000000e-06 : f64{{.*}}source = "profile"
// CHECK: nn.relu {{.*}}backward_input = 1.500000e-06 : f64, backward_weight = 0.000000e+00 : f64, forward = 1.500000e-06 : f64{{.*}}source = "profile"
// CHECK: nn.matmul {{.*}}backward_input = 3.000000e-06 : f64, backward_weight = 4.000000e-06 : f64, forward = 2.000000e-06 : f64{{.*}}source = "profile"
// CHECK: nn.relu {{.*}}forward = 1.500000e-06 : f64{{.*}}source = "profile"
// CHECK: nn.add {{.*}}source = "analytical"

// A profile's measured link (pipedream-run --measure-link writes one with
// no ops) replaces the device's: the ops keep their analytical times.
// LINK: module attributes {pipe.device = {{{.*}}link_bandwidth = 2.500000e+09 : f64, link_latency = 3.000000e-05 : f64, {{.*}}name = "cpu"
// LINK: nn.matmul {{.*}}source = "analytical"
// LINK-INVALID: error: pipe-annotate-costs: {{.*}}link-invalid.json: link "bandwidth" must be a finite, positive number of bytes per second
// LINK-INCOMPLETE: error: pipe-annotate-costs: {{.*}}link-incomplete.json: "link" needs "latency" (seconds per message) and "bandwidth" (bytes per second)

// MISSING: error: pipe-annotate-costs: {{.*}}.missing.json: No such file or directory
// DEVICE: error: pipe-annotate-costs: unknown device 'tpu' (cpu or h200)
func.func @profiled(%x: tensor<4x8xf32>,
                    %w1: tensor<8x8xf32> {nn.param = dense<1.0> : tensor<8x8xf32>},
                    %w2: tensor<8x8xf32> {nn.param = dense<1.0> : tensor<8x8xf32>})
    -> tensor<4x8xf32> {
  %0 = nn.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("fc1")
  %1 = nn.relu %0 : tensor<4x8xf32> loc("relu1")
  %2 = nn.matmul %1, %w2 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("fc2")
  %3 = nn.relu %2 : tensor<4x8xf32> loc("relu2")
  %4 = nn.add %3, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("add")
  return %4 : tensor<4x8xf32>
}
