//===- Training.h - pipedream-run --data, one rank ------------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Training of a one-rank training bundle (pd_trainer), and what the
// pipeline ranks share with it: the data, the step loop (runSteps: progress,
// checkpoints, --skip-failed-steps, the test hooks), --resume.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_TOOLING_TRAINING_H
#define PIPEDREAM_TOOLING_TRAINING_H

#include "Options.h"

#include "pipedream/npy.h"
#include "pipedream/runtime.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace pipedream {
namespace tooling {

/// Shows training progress: an updating bar on a terminal (stderr), else
/// one line per step on stdout.
class Progress {
public:
  Progress(uint64_t steps, size_t batchSize);
  void step(uint64_t index, double loss, double seconds);
  /// The last line: losses and the mean step time.
  void finish();

private:
  uint64_t steps;
  size_t batchSize;
  bool bar;
  double total = 0, firstLoss = 0, lastLoss = 0;
  uint64_t ran = 0;
  std::chrono::steady_clock::time_point lastDraw;
  /// Without a terminal: when stdout was last flushed.
  std::chrono::steady_clock::time_point lastFlush;
};

/// --skip-failed-steps: the one line for a skipped step (the runtime did
/// not apply it on any rank).
void warnSkipped(uint64_t step, const char *message);

/// Whether step `done` (steps done so far, from 1) ends with a checkpoint.
inline bool checkpointDue(const Options &options, uint64_t done) {
  return options.checkpointSteps && done % options.checkpointSteps == 0;
}

/// when the load failed. `start` is the loaded step, 0 without a
/// checkpoint (a note says so).
template <typename Load>
bool resumeFrom(const Options &options, bool print, Load load,
                uint64_t &start, std::string &message) {
  start = 0;
  if (!options.resume)
    return true;
  uint64_t step = 0;
  pd_status status = load(&step);
  if (status == PD_ERROR_NOT_FOUND &&
      std::string(pd_last_error()).find("no checkpoint") !=
          std::string::npos) {
    if (print)
      std::fprintf(stderr,
                   "note: %s has no checkpoint yet; starting at step 1\n",
                   options.checkpointDir.c_str());
    return true;
  }
  if (status != PD_OK) {
    message = std::string("--resume: ") + pd_last_error();
    return false;
  }
  start = step;
  if (print) {
    std::printf("resumed from %s at step %llu of %llu\n",
                options.checkpointDir.c_str(),
                static_cast<unsigned long long>(step),
                static_cast<unsigned long long>(options.numSteps));
    std::fflush(stdout);
  }
  return true;
}

/// --data: the arrays of DATA.npz that `bundle` reads as training inputs
/// or labels, as views into `arrays` (the others are ignored, with a
/// warning when `warn`). One-rank and pipeline bundles alike.
std::vector<pd_named_array> trainingViews(const Options &options,
                                          pd_bundle *bundle,
                                          const npy::NamedArrays &arrays,
                                          bool warn);
/// The same for the arrays of `file` (--eval-data).
std::vector<pd_named_array> trainingViews(const std::string &file,
                                          pd_bundle *bundle,
                                          const npy::NamedArrays &arrays,
                                          bool warn);

/// --eval-data: "" when its `samples` split into micro-batches of
/// `microbatchSize` (every sample counts once), else the one-line error
/// naming the file.
std::string evalSamplesError(const Options &options, size_t samples,
                             size_t microbatchSize);

/// A runtime message about the training data, naming the --data file
/// instead of "training data: ".
std::string dataMessage(const Options &options, std::string text);
/// The same naming `file`.
std::string dataMessage(const std::string &file, std::string text);

/// What the training loop runs for one rank: a pd_trainer (one rank) or a
/// pd_rank rank.
struct StepFunctions {
  /// Runs one step on the samples from `first` (modulo the data's length)
  /// and sets `*loss` (on rank 0 of a pipeline).
  std::function<pd_status(uint64_t first, double *loss)> step;
  /// Writes the checkpoint of `done` steps.
  std::function<pd_status(uint64_t done)> saveCheckpoint;
  /// Gradient clipping: the last step's gradient norm (before clipping),
  /// logged as --loss-log's grad_norm column; empty without clipping.
  std::function<double()> gradNorm;
  /// --eval-data: the eval-mode loss of the current weights; empty without.
  std::function<pd_status(double *loss)> evaluate;
};

/// Whether the manifest's `optimizer` (compact JSON, may be NULL) clips
/// the gradients (`clip_grad_norm` > 0).
bool clipsGradients(const char *optimizerJSON);

/// How runSteps ended.
struct StepLoopResult {
  /// Empty when every step ran; else the one-line error.
  std::string error;
  /// The error is the step's own status (not a failed run-time check nor
  /// a checkpoint): `stepStatus`, with pd_last_error() in `error`.
  bool stepFailed = false;
  /// The error is a failed run-time check that every rank agreed on.
  bool checkFailed = false;
  /// The loss log (--loss-log) of the steps rank 0 ran: "step,loss" lines
  /// ("step,loss,grad_norm" with StepFunctions::gradNorm).
  std::string log;
};

/// The one training loop: steps [start, --steps) of rank `rank` (batch
/// `batch` samples of `samples`), with checkpoints, --skip-failed-steps and
/// the test hooks (Hooks.h; `failed`, set once another rank failed, only
/// for pipeline ranks: the beforeStep hook runs for those). Rank 0 shows
/// the progress.
StepLoopResult runSteps(const Options &options, size_t rank, size_t batch,
                        size_t samples, uint64_t start,
                        const StepFunctions &functions, Progress &progress,
                        const std::atomic<bool> *failed);

/// `--data`: trains a training bundle for --steps steps. Returns the exit
/// status.
/// A note on stderr when the run goes past the update at which the
/// bundle's learning-rate schedule (`optimizerJSON`: the manifest's
/// `optimizer`) reaches 0: `lastStep` updates of a synchronous schedule
/// (`scheduleKind` "" on one rank) run, the updates from `total_steps` on
/// change nothing but the optimizer state.
void noteScheduleEnd(const char *optimizerJSON, const char *scheduleKind,
                     uint64_t lastStep);

int train(const Options &options, pd_bundle *bundle);

} // namespace tooling
} // namespace pipedream

#endif // PIPEDREAM_TOOLING_TRAINING_H
