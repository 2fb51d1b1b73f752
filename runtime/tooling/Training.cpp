//===- Training.cpp - pipedream-run --data, one rank ------------------------===
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Training: runs N optimizer steps of a training bundle (pd_trainer) on the
// arrays of DATA.npz, step s on samples [s*B, (s+1)*B) modulo the data's
// length; shows progress, optionally logs the losses and writes the model
// back to ONNX with the trained weights.
//
//===----------------------------------------------------------------------===//

#include "Training.h"

#include "Hooks.h"
#include "TraceWriter.h"

#include "pipedream/npy.h"
#include "pipedream/onnx_writer.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <set>
#include <string>
#include <unistd.h>
#include <vector>

namespace pipedream {
namespace tooling {

using pipedream::npy::NamedArrays;
using pipedream::OnnxWriter;
using pipedream::writeFileAtomically;

Progress::Progress(uint64_t steps, size_t batchSize)
    : steps(steps), batchSize(batchSize), bar(isatty(STDERR_FILENO)) {}

void Progress::step(uint64_t index, double loss, double seconds) {
  total += seconds;
  if (ran++ == 0)
    firstLoss = loss;
  lastLoss = loss;
  double rate = seconds > 0 ? batchSize / seconds : 0;
  if (!bar) {
    std::printf("step %llu/%llu loss %.6f samples/s %.1f\n",
                static_cast<unsigned long long>(index),
                static_cast<unsigned long long>(steps), loss, rate);
    // Flushed at most once a second (and after the last step): each flush
    // wakes whatever reads the pipe (mpirun forwards rank 0's output), and
    // on a machine whose cores all run ranks that took 40-150 us of rank
    // 0's time between steps, on the pipeline's critical path.
    auto now = std::chrono::steady_clock::now();
    if (index == steps || now - lastFlush >= std::chrono::seconds(1)) {
      std::fflush(stdout);
      lastFlush = now;
    }
    return;
  }
  auto now = std::chrono::steady_clock::now();
  if (index != steps && now - lastDraw < std::chrono::milliseconds(50))
    return;
  lastDraw = now;
  const int width = 30;
  int filled = static_cast<int>(width * index / steps);
  std::string line(filled, '#');
  line.append(width - filled, '.');
  double meanRate = total > 0 ? batchSize * index / total : 0;
  std::fprintf(stderr, "\r\033[Kstep %llu/%llu [%s] loss %.6f %.1f samples/s",
               static_cast<unsigned long long>(index),
               static_cast<unsigned long long>(steps), line.c_str(), loss,
               meanRate);
  if (index == steps)
    std::fputc('\n', stderr);
  std::fflush(stderr);
}

void Progress::finish() {
  if (ran == 0) {
    if (steps == 0)
      std::printf("trained 0 steps (--steps 0)\n");
    else
      std::printf("trained 0 steps (all %llu steps were done already)\n",
                  static_cast<unsigned long long>(steps));
    std::fflush(stdout);
    return;
  }
  double mean = total / ran;
  std::printf("trained %llu steps: loss %.6f -> %.6f, mean step time %.3f "
              "ms, %.1f samples/s\n",
              static_cast<unsigned long long>(ran), firstLoss, lastLoss,
              mean * 1e3, mean > 0 ? batchSize / mean : 0.0);
  std::fflush(stdout);
}

void warnSkipped(uint64_t step, const char *message) {
  std::fprintf(stderr, "warning: step %llu skipped (not applied): %s\n",
               static_cast<unsigned long long>(step), message);
  std::fflush(stderr);
}

std::vector<pd_named_array> trainingViews(const Options &options,
                                          pd_bundle *bundle,
                                          const NamedArrays &arrays,
                                          bool warn) {
  return trainingViews(options.data, bundle, arrays, warn);
}

std::vector<pd_named_array> trainingViews(const std::string &file,
                                          pd_bundle *bundle,
                                          const NamedArrays &arrays,
                                          bool warn) {
  bool pipeline = pd_bundle_is_pipeline(bundle);
  std::set<std::string> used = {pipeline ? pd_bundle_pipeline_labels(bundle)
                                         : pd_bundle_training_labels(bundle)};
  size_t inputs = pipeline ? pd_bundle_pipeline_input_count(bundle)
                           : pd_bundle_training_input_count(bundle);
  for (size_t i = 0; i < inputs; ++i)
    used.insert(pipeline ? pd_bundle_pipeline_input_at(bundle, i)
                         : pd_bundle_training_input_at(bundle, i));
  std::vector<pd_named_array> views;
  for (const auto &[name, array] : arrays) {
    if (!used.count(name)) {
      if (warn)
        std::fprintf(stderr,
                     "warning: %s: array '%s' is neither a training input "
                     "nor the labels; ignored\n",
                     file.c_str(), name.c_str());
      continue;
    }
    views.push_back({name.c_str(), array.dtype, array.shape.size(),
                     array.shape.data(), array.data.data(), array.data.size()});
  }
  return views;
}

std::string evalSamplesError(const Options &options, size_t samples,
                             size_t microbatchSize) {
  if (microbatchSize != 0 && samples % microbatchSize == 0)
    return "";
  return options.evalData + ": " + std::to_string(samples) +
         " samples, not a multiple of the micro-batch size " +
         std::to_string(microbatchSize) + " (every sample counts once)";
}

std::string dataMessage(const Options &options, std::string text) {
  return dataMessage(options.data, std::move(text));
}

std::string dataMessage(const std::string &file, std::string text) {
  const std::string prefix = "training data: ";
  if (text.rfind(prefix, 0) == 0)
    text = text.substr(prefix.size());
  return file + ": " + text;
}

StepLoopResult runSteps(const Options &options, size_t rank, size_t batch,
                        size_t samples, uint64_t start,
                        const StepFunctions &functions, Progress &progress,
                        const std::atomic<bool> *failed) {
  StepLoopResult result;
  result.log = functions.gradNorm ? "step,loss,grad_norm" : "step,loss";
  result.log += functions.evaluate ? ",eval_loss\n" : "\n";
  auto saveIfDue = [&](uint64_t done) {
    if (checkpointDue(options, done) &&
        functions.saveCheckpoint(done) != PD_OK) {
      result.error = pd_last_error();
      return false;
    }
    return true;
  };
  // --eval-data: the eval-mode loss now, as text for the log; false (with
  // result.error) when it failed.
  auto evaluate = [&](std::string &column) {
    double evalLoss = 0;
    if (pd_status status = functions.evaluate(&evalLoss); status != PD_OK) {
      result.error = options.evalData + ": " + pd_last_error();
      // A pipeline's failed check is agreed by every rank: said once.
      result.checkFailed = status == PD_ERROR_CHECK_FAILED;
      return false;
    }
    char value[48];
    std::snprintf(value, sizeof(value), "%.9g", evalLoss);
    column = value;
    return true;
  };
  auto printEval = [&](uint64_t done, const std::string &column) {
    std::printf("eval loss after step %llu: %s\n",
                static_cast<unsigned long long>(done), column.c_str());
    std::fflush(stdout);
  };
  // No step to run (--steps 0, or resumed at the last step): the weights
  // as they are.
  if (functions.evaluate && start >= options.numSteps) {
    std::string column;
    if (!evaluate(column))
      return result;
    if (rank == 0)
      printEval(start, column);
  }
  for (uint64_t s = start; s < options.numSteps; ++s) {
    if (failed && hooks().beforeStep) {
      result.error = hooks().beforeStep(rank, s + 1, *failed);
      if (!result.error.empty())
        return result;
    }
    // Samples [s*B, (s+1)*B) modulo the data's length.
    uint64_t first = static_cast<uint64_t>(static_cast<unsigned __int128>(s) *
                                           batch % samples);
    double loss = 0;
    auto begin = std::chrono::steady_clock::now();
    if (pd_status status = functions.step(first, &loss); status != PD_OK) {
      // A failed run-time check: the step was not applied (on any rank:
      // the message is agreed and names the rank), the last checkpoint is
      // intact.
      if (status == PD_ERROR_CHECK_FAILED && options.skipFailedSteps) {
        if (rank == 0)
          warnSkipped(s + 1, pd_last_error());
        if (!saveIfDue(s + 1))
          return result;
        continue;
      }
      result.error =
          status == PD_ERROR_CHECK_FAILED
              ? "step " + std::to_string(s + 1) + ", " + pd_last_error()
              : std::string(pd_last_error());
      result.checkFailed = status == PD_ERROR_CHECK_FAILED;
      result.stepFailed = !result.checkFailed;
      return result;
    }
    std::chrono::duration<double> seconds =
        std::chrono::steady_clock::now() - begin;
    // NOTE: rank 0's save returns once the manifest is written; under
    // mpirun the other ranks then die with it (the kill-after-step hook).
    if (!saveIfDue(s + 1))
      return result;
    // --eval-data: every options.evalSteps steps and after the last.
    std::string evalColumn;
    if (functions.evaluate &&
        ((options.evalSteps && (s + 1) % options.evalSteps == 0) ||
         s + 1 == options.numSteps)) {
      if (!evaluate(evalColumn))
        return result;
    }
    if (rank == 0) {
      progress.step(s + 1, loss, seconds.count());
      if (!evalColumn.empty())
        printEval(s + 1, evalColumn);
      char line[96];
      if (functions.gradNorm)
        std::snprintf(line, sizeof(line), "%llu,%.9g,%.9g",
                      static_cast<unsigned long long>(s + 1), loss,
                      functions.gradNorm());
      else
        std::snprintf(line, sizeof(line), "%llu,%.9g",
                      static_cast<unsigned long long>(s + 1), loss);
      result.log += line;
      if (functions.evaluate)
        result.log += "," + evalColumn;
      result.log += "\n";
    }
    if (hooks().afterStep)
      hooks().afterStep(rank, s + 1);
  }
  return result;
}

bool clipsGradients(const char *optimizerJSON) {
  if (!optimizerJSON)
    return false;
  nlohmann::json optimizer =
      nlohmann::json::parse(optimizerJSON, nullptr, /*allow_exceptions=*/false);
  return optimizer.is_object() && optimizer.contains("clip_grad_norm") &&
         optimizer["clip_grad_norm"].is_number() &&
         optimizer["clip_grad_norm"].get<double>() > 0;
}

void noteScheduleEnd(const char *optimizerJSON, const char *scheduleKind,
                     uint64_t lastStep) {
  // Asynchronous schedules update several times a step.
  std::string kind = scheduleKind ? scheduleKind : "";
  if (!optimizerJSON || kind == "pipedream" || kind == "2bw")
    return;
  nlohmann::json optimizer =
      nlohmann::json::parse(optimizerJSON, nullptr, /*allow_exceptions=*/false);
  if (!optimizer.is_object() || !optimizer.contains("lr_schedule"))
    return;
  const nlohmann::json &schedule = optimizer["lr_schedule"];
  if (!schedule.is_object() || !schedule.contains("kind") ||
      !schedule["kind"].is_string() || !schedule.contains("total_steps") ||
      !schedule["total_steps"].is_number_unsigned())
    return;
  std::string scheduleName = schedule["kind"].get<std::string>();
  uint64_t total = schedule["total_steps"].get<uint64_t>();
  if ((scheduleName != "linear" && scheduleName != "cosine") ||
      lastStep <= total)
    return;
  std::string which = lastStep == total + 1
                          ? "step " + std::to_string(lastStep) + " runs"
                          : "steps " + std::to_string(total + 1) + " to " +
                                std::to_string(lastStep) + " run";
  std::fprintf(stderr,
               "note: --steps %llu runs past the learning-rate schedule, "
               "which reaches 0 at update %llu (--total-steps): %s at "
               "learning rate 0\n",
               static_cast<unsigned long long>(lastStep),
               static_cast<unsigned long long>(total), which.c_str());
}

int train(const Options &options, pd_bundle *bundle) {
  if (!pd_bundle_is_training(bundle))
    return error(std::string(pd_bundle_dir(bundle)) +
                 ": not a training bundle (bundle.json has no 'training' "
                 "section), so --data does not apply; run it with --inputs "
                 "IN.npz, or compile the model without --inference");
  pd_trainer *trainer = nullptr;
  if (pd_trainer_create(bundle, &trainer) != PD_OK)
    return error(pd_last_error());

  std::string message;
  NamedArrays arrays;
  if (!pipedream::npy::readNpz(options.data, arrays, message))
    return error(message);
  std::vector<pd_named_array> views =
      trainingViews(options, bundle, arrays, /*warn=*/true);
  size_t samples = 0;
  if (pd_trainer_check_data(trainer, views.data(), views.size(), &samples) !=
      PD_OK)
    return error(dataMessage(options, pd_last_error()));

  OnnxWriter onnx;
  if (!options.saveOnnx.empty() && !onnx.load(bundle, message))
    return error(message);

  uint64_t start = 0;
  if (!resumeFrom(
          options, true,
          [&](uint64_t *step) {
            return pd_trainer_load_checkpoint(
                trainer, options.checkpointDir.c_str(), step);
          },
          start, message))
    return error(message);
  if (!options.trace.empty())
    pd_trainer_set_tracing(trainer, 1);
  if (options.checkFinite)
    pd_trainer_set_check_finite(trainer, 1);

  noteScheduleEnd(pd_bundle_training_optimizer(bundle), "", options.numSteps);
  size_t batch = pd_trainer_batch_size(trainer);
  Progress progress(options.numSteps, batch);
  StepFunctions functions;
  functions.step = [&](uint64_t first, double *loss) {
    return pd_trainer_step(trainer, views.data(), views.size(), first, loss);
  };
  functions.saveCheckpoint = [&](uint64_t done) {
    return pd_trainer_save_checkpoint(trainer, options.checkpointDir.c_str(),
                                      done);
  };
  if (clipsGradients(pd_bundle_training_optimizer(bundle)))
    functions.gradNorm = [&] { return pd_trainer_grad_norm(trainer); };
  // --eval-data: checked before the first step.
  NamedArrays evalArrays;
  std::vector<pd_named_array> evalViews;
  if (!options.evalData.empty()) {
    if (!pd_trainer_can_evaluate(trainer))
      return error(std::string(pd_bundle_dir(bundle)) +
                   ": --eval-data needs an evaluation function: compile the "
                   "bundle with pipedream-compile --evaluate");
    if (!pipedream::npy::readNpz(options.evalData, evalArrays, message))
      return error(message);
    evalViews =
        trainingViews(options.evalData, bundle, evalArrays, /*warn=*/true);
    size_t evalSamples = 0;
    if (pd_trainer_check_data(trainer, evalViews.data(), evalViews.size(),
                              &evalSamples) != PD_OK)
      return error(dataMessage(options.evalData, pd_last_error()));
    std::string bad = evalSamplesError(
        options, evalSamples, pd_bundle_training_microbatch_size(bundle));
    if (!bad.empty())
      return error(bad);
    functions.evaluate = [&](double *loss) {
      return pd_trainer_evaluate(trainer, evalViews.data(), evalViews.size(),
                                 loss);
    };
  }
  StepLoopResult steps = runSteps(options, /*rank=*/0, batch, samples, start,
                                  functions, progress, /*failed=*/nullptr);
  if (!steps.error.empty())
    // A one-rank step fails on its data (or a failed run-time check).
    return error(steps.stepFailed ? dataMessage(options, steps.error)
                                  : steps.error);
  const std::string &log = steps.log;
  progress.finish();

  if (!options.trace.empty()) {
    std::vector<pd_trace_event> events = traceEvents(
        [&] { return pd_trainer_trace_count(trainer); },
        [&](size_t i, pd_trace_event *e) {
          pd_trainer_trace_event(trainer, i, e);
        });
    if (!writeTrace(options, 1, false, traceSlices(0, events, start),
                    message))
      return error(message);
  }
  if (!options.lossLog.empty() &&
      !writeFileAtomically(options.lossLog, log, message))
    return error(message);
  if (!options.saveOnnx.empty() && !onnx.save(options.saveOnnx, message))
    return error(message);
  return 0;
}

} // namespace tooling
} // namespace pipedream
