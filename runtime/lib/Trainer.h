//===- Trainer.h - the object behind pd_trainer -----------------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// pd_trainer (Trainer.cpp): what a bundle's trainers hold; complete here
// for ~pd_bundle, which owns them.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_RUNTIME_LIB_TRAINER_H
#define PIPEDREAM_RUNTIME_LIB_TRAINER_H

#include "Bundle.h"
#include "StepSnapshot.h"
#include "Trace.h"

#include <limits>
#include <vector>

/// A training bundle's trainer (pipedream/runtime.h).
struct pd_trainer {
  pd_bundle *bundle = nullptr;
  pd_function *step = nullptr;
  pd_function *update = nullptr;
  /// The step function's data inputs: training.inputs, then the labels.
  std::vector<pd_buffer *> data;
  pd_buffer *labels = nullptr;
  pd_buffer *loss = nullptr;
  /// Every `grad` buffer of the bundle, zeroed before each step.
  std::vector<pd_buffer *> grads;
  /// Persistent buffers (not grads) the step function updates (BatchNorm
  /// running statistics, on the host or the device), copied at the start
  /// of each step and restored when the step fails, so a failed step
  /// changes nothing.
  pipedream::runtime::StepSnapshot stepSnapshot;
  /// pd_trainer_set_check_finite.
  bool checkFinite = false;
  /// Gradient clipping: the buffer the update writes the squared norm to
  /// (training.grad_norm), and the last step's norm (pd_trainer_grad_norm).
  pd_buffer *gradNorm = nullptr;
  double lastGradNorm = std::numeric_limits<double>::quiet_NaN();
  /// pd_trainer_evaluate (training.eval_function): the function, its data
  /// buffers (in `data` order) and its loss; null without one.
  pd_function *evaluate = nullptr;
  std::vector<pd_buffer *> evalData;
  pd_buffer *evalLoss = nullptr;
  /// Measured events (pd_trainer_set_tracing).
  pipedream::runtime::TraceLog trace;
};

#endif // PIPEDREAM_RUNTIME_LIB_TRAINER_H
