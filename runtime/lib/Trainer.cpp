//===- Trainer.cpp - pd_trainer -------------------------------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// pd_trainer: one optimizer step of a training bundle (the step function on
// a batch's micro-batches, gradient accumulation, the update), run-time
// checks and traces.
//
//===----------------------------------------------------------------------===//

#include "pipedream/runtime.h"

#include "Bundle.h"
#include "Checkpoint.h"
#include "ConstantWeights.h"
#include "DataIndexChecks.h"
#include "GpuDevice.h"
#include "Manifest.h"
#include "Threads.h"
#include "StepSnapshot.h"
#include "Trace.h"
#include "Trainer.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <new>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <dlfcn.h>
#include <sys/stat.h>

using pipedream::runtime::ensureMemory;
using pipedream::runtime::Error;
using pipedream::runtime::fail;
using pipedream::runtime::guarded;
using pipedream::runtime::nullArgument;
using pipedream::runtime::readMemory;
using pipedream::runtime::runFunction;
using pipedream::runtime::TrainingSpec;

namespace pipedream {
namespace runtime {
pd_bundle *trainerBundle(pd_trainer *trainer) { return trainer->bundle; }
TraceLog &traceLogOf(pd_trainer &trainer) { return trainer.trace; }
} // namespace runtime
} // namespace pipedream

//===----------------------------------------------------------------------===//
// Training
//===----------------------------------------------------------------------===//

namespace {

/// Bytes of one sample of a step function data buffer.
size_t rowBytes(const pd_trainer &trainer, const pd_buffer &buffer) {
  return buffer.type.numBytes /
         trainer.bundle->manifest.training.microbatchSize;
}

/// Finds and checks the array of every data buffer of the trainer (in
/// trainer.data order); sets numSamples. Throws Error.
std::vector<const pd_named_array *> matchData(const pd_trainer &trainer,
                                              const pd_named_array *arrays,
                                              size_t count,
                                              size_t &numSamples) {
  std::vector<pipedream::runtime::DataRead> reads;
  for (pd_buffer *buffer : trainer.data)
    reads.push_back({&buffer->name, &buffer->type, buffer == trainer.labels,
                     rowBytes(trainer, *buffer)});
  return pipedream::runtime::matchDataArrays(
      reads, "step function '" + trainer.step->spec.name + "' takes", arrays,
      count, numSamples);
}

/// Cross-entropy: checks that the labels of `rows` rows starting at
/// `firstRow` (modulo numSamples) are class indices in [0, num_classes).
void checkLabels(const pd_trainer &trainer, const pd_named_array &labels,
                 size_t numSamples, size_t firstRow, size_t rows) {
  const TrainingSpec &spec = trainer.bundle->manifest.training;
  if (spec.loss != "cross-entropy" || !trainer.labels)
    return;
  const pd_buffer &buffer = *trainer.labels;
  size_t perRow = rowBytes(trainer, buffer) / pd_dtype_size(buffer.type.dtype);
  pipedream::runtime::checkLabelRange(buffer.name, buffer.type.dtype, perRow,
                                      spec.numClasses, labels, numSamples,
                                      firstRow, rows);
}

/// Reads the step function's loss output (one f32 or f64 element).
double readLoss(const pd_buffer &loss) {
  if (loss.type.dtype == PD_DTYPE_F64) {
    double value;
    std::memcpy(&value, loss.memory.get(), sizeof(value));
    return value;
  }
  float value;
  std::memcpy(&value, loss.memory.get(), sizeof(value));
  return value;
}

pd_buffer *functionBuffer(pd_function &function, const std::string &name) {
  for (pd_buffer *buffer : function.buffers)
    if (buffer->name == name)
      return buffer;
  throw Error(PD_ERROR_INTERNAL, "internal error: function '" +
                                     function.spec.name + "' has no buffer '" +
                                     name + "'");
}

} // namespace

pd_status pd_trainer_create(pd_bundle *bundle, pd_trainer **out) {
  if (!out)
    return nullArgument("pd_trainer_create", "out");
  *out = nullptr;
  if (!bundle)
    return nullArgument("pd_trainer_create", "bundle");
  return guarded([&] {
    const TrainingSpec *spec =
        bundle->manifest.hasTraining ? &bundle->manifest.training : nullptr;
    if (!spec)
      return fail(PD_ERROR_UNSUPPORTED,
                  bundle->dir +
                      ": not a training bundle (bundle.json has no "
                      "'training' section; pipedream-compile writes one "
                      "unless --inference is given)");
    if (bundle->rank >= 0)
      return fail(PD_ERROR_UNSUPPORTED,
                  bundle->dir + ": opened for pipeline rank " +
                      std::to_string(bundle->rank) +
                      " (pd_bundle_open_rank); single-rank training needs "
                      "the whole bundle (pd_bundle_open)");
    auto trainer = std::make_unique<pd_trainer>();
    trainer->bundle = bundle;
    trainer->step = bundle->functionByIndex[spec->stepFunctionIndex];
    trainer->update = bundle->functionByIndex[spec->updateFunctionIndex];
    for (const std::string &name : spec->inputs)
      trainer->data.push_back(functionBuffer(*trainer->step, name));
    // Loss "none": no labels (the model computes its own loss).
    if (!spec->labels.empty()) {
      trainer->labels = functionBuffer(*trainer->step, spec->labels);
      trainer->data.push_back(trainer->labels);
    }
    trainer->loss = functionBuffer(*trainer->step, spec->lossOutput);
    for (auto &buffer : bundle->persistent) {
      if (buffer->role == PD_ROLE_GRAD)
        trainer->grads.push_back(buffer.get());
      if (!spec->gradNorm.empty() && buffer->name == spec->gradNorm)
        trainer->gradNorm = buffer.get();
    }
    for (auto &[output, target] : trainer->step->updates)
      if (target->role != PD_ROLE_GRAD)
        trainer->stepSnapshot.add(target);
    if (!spec->evalFunction.empty()) {
      trainer->evaluate = bundle->functionByIndex[spec->evalFunctionIndex];
      for (pd_buffer *buffer : trainer->data)
        trainer->evalData.push_back(
            functionBuffer(*trainer->evaluate, buffer->name));
      trainer->evalLoss =
          functionBuffer(*trainer->evaluate, spec->evalLossOutput);
    }
    bundle->trainers.push_back(std::move(trainer));
    *out = bundle->trainers.back().get();
    return PD_OK;
  });
}

void pd_trainer_destroy(pd_trainer *trainer) {
  if (!trainer)
    return;
  auto &trainers = trainer->bundle->trainers;
  for (auto it = trainers.begin(); it != trainers.end(); ++it)
    if (it->get() == trainer) {
      trainers.erase(it);
      return;
    }
}

pd_status pd_trainer_set_check_finite(pd_trainer *trainer, int enabled) {
  if (!trainer)
    return nullArgument("pd_trainer_set_check_finite", "trainer");
  trainer->checkFinite = enabled != 0;
  return PD_OK;
}

size_t pd_trainer_batch_size(const pd_trainer *trainer) {
  return trainer ? trainer->bundle->manifest.training.batchSize : 0;
}

pd_status pd_trainer_check_data(pd_trainer *trainer,
                                const pd_named_array *arrays, size_t count,
                                size_t *num_samples) {
  if (num_samples)
    *num_samples = 0;
  if (!trainer)
    return nullArgument("pd_trainer_check_data", "trainer");
  return guarded([&] {
    size_t samples = 0;
    std::vector<const pd_named_array *> matched =
        matchData(*trainer, arrays, count, samples);
    if (trainer->labels)
      checkLabels(*trainer, *matched.back(), samples, 0, samples);
    if (num_samples)
      *num_samples = samples;
    return PD_OK;
  });
}

double pd_trainer_grad_norm(const pd_trainer *trainer) {
  return trainer ? trainer->lastGradNorm
                 : std::numeric_limits<double>::quiet_NaN();
}

namespace {
/// Copies `b` rows of every data array, from row `start` on (wrapping
/// around the `samples` rows), into `buffers` (in trainer.data order).
void copyMicrobatch(const pd_trainer &trainer,
                    const std::vector<pd_buffer *> &buffers,
                    const std::vector<const pd_named_array *> &matched,
                    size_t start, size_t b, size_t samples) {
  for (size_t k = 0; k < buffers.size(); ++k) {
    pd_buffer &buffer = *buffers[k];
    size_t bytes = rowBytes(trainer, buffer);
    const unsigned char *source =
        static_cast<const unsigned char *>(matched[k]->data);
    unsigned char *target = ensureMemory(buffer);
    // Contiguous runs of rows, wrapping around the end of the data.
    for (size_t done = 0; done < b && bytes != 0;) {
      size_t row = (start + done) % samples;
      size_t run = std::min(b - done, samples - row);
      std::memcpy(target + done * bytes, source + row * bytes, run * bytes);
      done += run;
    }
    buffer.written = true;
  }
}
} // namespace

int pd_trainer_can_evaluate(const pd_trainer *trainer) {
  return trainer && trainer->evaluate ? 1 : 0;
}

pd_status pd_trainer_evaluate(pd_trainer *trainer, const pd_named_array *arrays,
                              size_t count, double *loss) {
  if (loss)
    *loss = 0;
  if (!trainer)
    return nullArgument("pd_trainer_evaluate", "trainer");
  return guarded([&] {
    const TrainingSpec &spec = trainer->bundle->manifest.training;
    if (!trainer->evaluate)
      return fail(PD_ERROR_UNSUPPORTED,
                  trainer->bundle->dir +
                      ": the bundle has no evaluation function (compile "
                      "it with pipedream-compile --evaluate)");
    size_t samples = 0;
    std::vector<const pd_named_array *> matched =
        matchData(*trainer, arrays, count, samples);
    size_t b = spec.microbatchSize;
    if (samples % b != 0)
      return fail(PD_ERROR_INVALID_ARGUMENT,
                  "evaluation data of " + std::to_string(samples) +
                      " samples: not a multiple of the micro-batch size " +
                      std::to_string(b) + " (every sample counts once)");
    if (trainer->labels)
      checkLabels(*trainer, *matched.back(), samples, 0, samples);
    std::vector<pd_function *> reused;
    if (samples > b)
      reused.push_back(trainer->evaluate);
    pipedream::runtime::ConstantWeights constants(*trainer->bundle, reused);
    pipedream::runtime::TraceLog &trace = trainer->trace;
    using pipedream::runtime::traceNow;
    const double evalStart = trace.enabled ? traceNow() : 0;
    const int64_t noValue = -1;
    double total = 0;
    for (size_t start = 0; start < samples; start += b) {
      const auto m = static_cast<int64_t>(start / b);
      const double callStart = trace.enabled ? traceNow() : 0;
      copyMicrobatch(*trainer, trainer->evalData, matched, start, b, samples);
      runFunction(*trainer->evaluate);
      readMemory(*trainer->evalLoss);
      total += readLoss(*trainer->evalLoss);
      if (trace.enabled)
        trace.add("call", trainer->evaluate->spec.name.c_str(), "E", 0, m,
                  noValue, noValue, callStart);
    }
    if (trace.enabled)
      trace.add("evaluate", "", "E", noValue, noValue, noValue, noValue,
                evalStart);
    if (loss)
      *loss = total / static_cast<double>(samples / b);
    return PD_OK;
  });
}

pd_status pd_trainer_step(pd_trainer *trainer, const pd_named_array *arrays,
                          size_t count, uint64_t first_sample, double *loss) {
  if (loss)
    *loss = 0;
  if (!trainer)
    return nullArgument("pd_trainer_step", "trainer");
  return guarded([&] {
    const TrainingSpec &spec = trainer->bundle->manifest.training;
    size_t samples = 0;
    std::vector<const pd_named_array *> matched =
        matchData(*trainer, arrays, count, samples);
    size_t first = static_cast<size_t>(first_sample % samples);
    // The labels are the last data buffer.
    if (trainer->labels)
      checkLabels(*trainer, *matched.back(), samples, first, spec.batchSize);

    pipedream::runtime::TraceLog &trace = trainer->trace;
    using pipedream::runtime::traceNow;
    const double stepStart = trace.enabled ? traceNow() : 0;
    // Accumulated gradients start from zero; written ones (one
    // micro-batch) are the step function's to write.
    if (!spec.gradientsWritten)
      for (pd_buffer *grad : trainer->grads)
        pipedream::runtime::zeroBuffer(*grad);
    trainer->stepSnapshot.save();
    // The micro-batches' GEMMs pack the weights once (released before the
    // update, or by an exception) when there are several: a copy that one
    // micro-batch uses costs more than the per-call packing it replaces
    // (lib/Target/CPU/README.md, "Weights packed once").
    std::vector<pd_function *> reused;
    if (spec.microbatches > 1)
      reused.push_back(trainer->step);
    pipedream::runtime::ConstantWeights constants(*trainer->bundle, reused);
    // A failed check: the step's persistent changes are undone, the update
    // does not run.
    auto failStep = [&](const std::string &message) {
      trainer->stepSnapshot.restore();
      throw Error(PD_ERROR_CHECK_FAILED, message);
    };
    double total = 0;
    size_t b = spec.microbatchSize;
    const int64_t noValue = -1;
    for (size_t i = 0; i < spec.microbatches; ++i) {
      const double inputStart = trace.enabled ? traceNow() : 0;
      const int64_t m = static_cast<int64_t>(i);
      size_t start = (first + i * b) % samples;
      copyMicrobatch(*trainer, trainer->data, matched, start, b, samples);
      double callStart = 0;
      if (trace.enabled) {
        trace.add("input", "", "", noValue, m, noValue, noValue, inputStart);
        callStart = traceNow();
      }
      try {
        runFunction(*trainer->step);
      } catch (const Error &e) {
        if (e.status != PD_ERROR_CHECK_FAILED)
          throw;
        failStep("micro-batch " + std::to_string(i) + ": " + e.what());
      }
      if (trace.enabled)
        trace.add("call", trainer->step->spec.name.c_str(), "FB", 0, m,
                  noValue, noValue, callStart);
      readMemory(*trainer->loss);
      double value = readLoss(*trainer->loss);
      if (trainer->checkFinite && !std::isfinite(value))
        failStep("micro-batch " + std::to_string(i) + ": the loss is " +
                 (std::isnan(value) ? "nan" : value > 0 ? "inf" : "-inf") +
                 " (check-finite)");
      total += value;
    }
    if (trainer->checkFinite)
      for (pd_buffer *grad : trainer->grads) {
        readMemory(*grad);
        std::string bad = pipedream::runtime::describeNonFinite(*grad);
        if (!bad.empty())
          failStep("gradient '" + grad->name + "' is not finite (" + bad +
                   ", check-finite)");
      }
    const double updateStart = trace.enabled ? traceNow() : 0;
    constants.release();
    runFunction(*trainer->update);
    if (trainer->gradNorm) {
      readMemory(*trainer->gradNorm);
      trainer->lastGradNorm = std::sqrt(readLoss(*trainer->gradNorm));
    }
    if (trace.enabled) {
      trace.add("call", trainer->update->spec.name.c_str(), "U", 0, noValue,
                noValue, noValue, updateStart);
      trace.add("step", "", "", noValue, noValue, noValue, noValue,
                stepStart);
    }
    ++trace.steps;
    if (loss)
      *loss = total / static_cast<double>(spec.microbatches);
    return PD_OK;
  });
}

