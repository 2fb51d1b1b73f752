// Learning-rate schedules (docs/Training.md, "Learning-rate schedules"):
// the update computes lr * factor(step) from its `step` state buffer, which
// SGD gets too when a schedule is given; without one SGD has no counter.
// RUN: pipedream-opt %s --nn-build-training="loss=cross-entropy optimizer=sgd lr=0.5 lr-schedule=cosine warmup-steps=2 total-steps=10" | FileCheck %s --check-prefix=COS
// RUN: pipedream-opt %s --nn-build-training="loss=cross-entropy optimizer=sgd lr=0.5 lr-schedule=linear total-steps=8" | FileCheck %s --check-prefix=LIN
// RUN: pipedream-opt %s --nn-build-training="loss=cross-entropy optimizer=adamw lr=0.001 weight-decay=0.1 lr-schedule=constant warmup-steps=4" | FileCheck %s --check-prefix=WARM
// RUN: pipedream-opt %s --nn-build-training="loss=cross-entropy optimizer=sgd lr=0.5" | FileCheck %s --check-prefix=NONE

// COS-LABEL: func.func @update(
// COS-SAME: %[[W:[^:]*]]: tensor<4xf32> {nn.name = "w", {{.*}}nn.role = "weight"}
// COS-SAME: %[[G:[^:]*]]: tensor<4xf32> {nn.name = "grad:w", nn.role = "grad"}
// COS-SAME: %[[S:[^:]*]]: tensor<f32> {nn.name = "step", nn.role = "state"}
// COS-SAME: tensor<f32> {nn.name = "step.next", nn.updates = "step"}
// COS: %[[TWO:.*]] = nn.constant dense<2.000000e+00> : tensor<f32>
// COS: %[[SW:.*]] = nn.sub %[[S]], %[[TWO]]
// COS: %[[EIGHT:.*]] = nn.constant dense<8.000000e+00> : tensor<f32>
// COS: %[[P:.*]] = nn.div %[[SW]], %[[EIGHT]]
// COS: %[[PC:.*]] = nn.min %{{.*}}, %[[P]]
// COS: %[[PI:.*]] = nn.constant dense<3.14159274> : tensor<f32>
// COS: %[[ANGLE:.*]] = nn.mul %[[PI]], %[[PC]]
// COS: nn.cos %[[ANGLE]]
// COS: %[[BELOW:.*]] = nn.less %[[S]], %{{.*}}
// COS: %[[RAMP:.*]] = nn.div %[[S]], %{{.*}}
// COS: %[[F:.*]] = nn.where %[[BELOW]], %[[RAMP]], %{{.*}}
// COS: %[[LR:.*]] = nn.mul %{{.*}}, %[[F]]
// COS: %[[D:.*]] = nn.mul %[[LR]], %[[G]]
// COS: nn.sub %[[W]], %[[D]]

// (T - s) / (T - W), at least 0; no warm-up.
// LIN-LABEL: func.func @update(
// LIN-SAME: %[[S:[^:]*]]: tensor<f32> {nn.name = "step", nn.role = "state"}
// LIN: %[[T:.*]] = nn.constant dense<8.000000e+00> : tensor<f32>
// LIN: %[[R:.*]] = nn.sub %[[T]], %[[S]]
// LIN: %[[Q:.*]] = nn.div %[[R]], %{{.*}}
// LIN: nn.max %{{.*}}, %[[Q]]
// LIN-NOT: nn.where

// AdamW: the decoupled decay w * (1 - lr_s * wd) follows the schedule.
// WARM-LABEL: func.func @update(
// WARM: nn.less
// WARM: %[[F:.*]] = nn.where
// WARM: %[[LR:.*]] = nn.mul %{{.*}}, %[[F]]
// WARM: %[[LD:.*]] = nn.mul %[[LR]], %{{.*}}
// WARM: nn.sub %{{.*}}, %[[LD]]

// NONE-LABEL: func.func @update(
// NONE-NOT: "step"
// NONE: return

func.func @main(%x: tensor<2x4xf32> {nn.name = "x"}, %w: tensor<4xf32> {nn.name = "w", nn.param = dense<1.0> : tensor<4xf32>}) -> tensor<2x4xf32> {
  %0 = nn.mul %x, %w : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}
