//===- pipedream-run.cpp - run a compiled bundle --------------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// `pipedream-run OUT_DIR --inputs IN.npz [--outputs OUT.npz]`
// `pipedream-run OUT_DIR --data DATA.npz [--steps N] [--save-onnx T.onnx]
//                [--loss-log LOSS.csv]`
//
// Inference: runs the inference function of a bundle written by
// pipedream-compile (docs/Bundle.md): the function called `main`, or the
// bundle's only function of kind `inference`. Inputs are matched by name
// with the arrays of IN.npz (dtype and shape checked); every output is
// written to OUT.npz (uncompressed, as np.savez does), or summarized on
// stdout without --outputs.
//
// Training: runs N optimizer steps of a training bundle (pd_trainer) on the
// arrays of DATA.npz, step s on samples [s*B, (s+1)*B) modulo the data's
// length; shows progress, optionally logs the losses and writes the model
// back to ONNX with the trained weights.
//
// Pipeline bundles (a `pipeline` section): every rank runs its program;
// `--transport threads` (the default without --ranks) runs all ranks as
// threads of this process, `--ranks K` re-executes this program under
// `mpirun -np K` (or the user runs `mpirun -np K pipedream-run ...`), each
// process then being the rank MPI gives it. Rank 0 prints progress and
// writes the loss log and the trained model.
//
// Any error is one line `error: ...` on stderr and exit status 1.
// Checkpoints (--checkpoint-dir DIR --checkpoint-every S, --resume) and
// measured Chrome traces (--trace RUN.json) work for both kinds of training
// (docs/Runtime.md).
//
// Uses the runtime library and, for --save-onnx, its ONNX writer
// (runtime/onnx: the ONNX protobuf classes; no MLIR/LLVM).
//
//===----------------------------------------------------------------------===//

#include "pipedream/gpu.h"
#include "pipedream/npy.h"
#include "pipedream/onnx_writer.h"
#include "pipedream/runtime.h"
#include "pipedream/threads.h"

#include "PeakMemory.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <csignal>
#include <mutex>
#include <thread>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

namespace {

using pipedream::npy::Array;
using pipedream::npy::NamedArrays;

const char kUsage[] =
    "usage: pipedream-run OUT_DIR --inputs IN.npz [--outputs OUT.npz]\n"
    "       pipedream-run OUT_DIR --data DATA.npz [--steps N]\n"
    "                     [--save-onnx TRAINED.onnx] [--loss-log LOSS.csv]\n"
    "                     [--trace RUN.json] [--checkpoint-dir DIR\n"
    "                     --checkpoint-every S] [--resume]\n"
    "                     [--check-finite] [--skip-failed-steps]\n"
    "                     [--ranks K] [--transport threads|mpi|nccl]\n"
    "                     [--timeout SECONDS]\n"
    "\n"
    "Runs the bundle in OUT_DIR (written by pipedream-compile).\n"
    "\n"
    "Inference bundles: arrays of IN.npz are matched by name with the\n"
    "function's inputs (dtype and shape must match); its outputs are written\n"
    "to OUT.npz, or listed on stdout without --outputs.\n"
    "\n"
    "Training bundles: N optimizer steps on DATA.npz, whose arrays are named\n"
    "after the model's inputs and the labels, the first axis the samples;\n"
    "step s uses samples [s*B, (s+1)*B) modulo the number of samples (B the\n"
    "batch size), micro-batch i its i-th contiguous slice.\n"
    "\n"
    "options:\n"
    "  --inputs IN.npz          input arrays, named after the model's inputs\n"
    "  --outputs OUT.npz        where to write the outputs (replaced)\n"
    "  --data DATA.npz          training data: the inputs and the labels\n"
    "  --steps N                optimizer steps (default 1)\n"
    "  --save-onnx TRAINED.onnx the bundle's model.onnx with the trained\n"
    "                           weights\n"
    "  --loss-log LOSS.csv      `step,loss` per step (step from 1)\n"
    "  --trace RUN.json         Chrome trace of the run with measured\n"
    "                           durations: one lane per rank, one slice per\n"
    "                           call (F/B/W/U, stage, micro-batch) and per\n"
    "                           send/recv; pipelines also print the measured\n"
    "                           bubble fraction next to report.json's\n"
    "  --checkpoint-dir DIR     where checkpoints go (created if missing)\n"
    "  --checkpoint-every S     save weights, optimizer state and the step\n"
    "                           every S steps (atomically; the previous one\n"
    "                           stays valid until the new one is complete)\n"
    "  --resume                 continue from DIR's latest checkpoint up to\n"
    "                           --steps, with the same data order\n"
    "  --check-finite           stop at the first non-finite loss or\n"
    "                           gradient (the step is not applied)\n"
    "  --skip-failed-steps      a step that fails a run-time check (an index\n"
    "                           out of range; with --check-finite a\n"
    "                           non-finite loss or gradient) is skipped, not\n"
    "                           applied on any rank, with a warning, and\n"
    "                           training goes on\n"
    "\n"
    "Pipeline bundles (compiled with --stages K):\n"
    "  --ranks K                run K MPI processes: re-executes itself under\n"
    "                           `mpirun -np K` ($PIPEDREAM_MPIRUN overrides\n"
    "                           the mpirun found on PATH); under mpirun each\n"
    "                           process is the rank MPI gives it\n"
    "  --transport threads|mpi  threads: every rank a thread of this process\n"
    "                           (the default without --ranks and mpirun)\n"
    "  --transport nccl         cuda bundles under mpirun (or --ranks K) or\n"
    "                           torchrun (RANK, WORLD_SIZE, MASTER_ADDR,\n"
    "                           MASTER_PORT): NCCL between the ranks' GPUs\n"
    "  --timeout SECONDS        how long a rank waits for another before the\n"
    "                           run fails naming it (default\n"
    "                           $PIPEDREAM_TIMEOUT, else 60)\n"
    "  --threads N              threads of each rank's CPU kernels (GEMMs);\n"
    "                           default $PIPEDREAM_NUM_THREADS, else this\n"
    "                           process's CPUs divided among the ranks that\n"
    "                           share them; results do not depend on N\n"
    "  -h, --help               this text\n"
    "\n"
    "Training progress goes to stderr as one updating line on a terminal,\n"
    "else to stdout as one line per step and a summary.\n";


/// Flags taking a value, and where it goes.
struct Options {
  std::string bundleDir;
  std::string inputs;
  std::string outputs;
  std::string data;
  std::string saveOnnx;
  std::string lossLog;
  std::string steps;
  uint64_t numSteps = 1;
  std::string ranks;
  size_t numRanks = 0;
  std::string transport;
  std::string timeout;
  double timeoutSeconds = 0;
  std::string trace;
  std::string checkpointDir;
  std::string checkpointEvery;
  uint64_t checkpointSteps = 0;
  bool resume = false;
  bool checkFinite = false;
  // --threads (issue 21)
  std::string threads;
  int numThreads = 0;
  // --skip-failed-steps (docs/Runtime.md "Run-time checks").
  bool skipFailedSteps = false;
};

std::string *valueOf(Options &options, const std::string &flag) {
  if (flag == "--inputs")
    return &options.inputs;
  if (flag == "--outputs")
    return &options.outputs;
  if (flag == "--data")
    return &options.data;
  if (flag == "--save-onnx")
    return &options.saveOnnx;
  if (flag == "--loss-log")
    return &options.lossLog;
  if (flag == "--steps")
    return &options.steps;
  if (flag == "--ranks")
    return &options.ranks;
  if (flag == "--transport")
    return &options.transport;
  if (flag == "--timeout")
    return &options.timeout;
  if (flag == "--trace")
    return &options.trace;
  if (flag == "--checkpoint-dir")
    return &options.checkpointDir;
  if (flag == "--checkpoint-every")
    return &options.checkpointEvery;
  if (flag == "--threads")
    return &options.threads;
  return nullptr;
}

int error(const std::string &message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 1;
}

/// --skip-failed-steps: the one line for a skipped step (the runtime did
/// not apply it on any rank).
void warnSkipped(uint64_t step, const char *message) {
  std::fprintf(stderr, "warning: step %llu skipped (not applied): %s\n",
               static_cast<unsigned long long>(step), message);
  std::fflush(stderr);
}

/// Parses argv; returns false with `message` set on a usage error. Sets
/// `help` for -h/--help.
bool parseArguments(int argc, char **argv, Options &options, bool &help,
                    std::string &message) {
  help = false;
  std::set<std::string> seen;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      help = true;
      return true;
    }
    if (arg.size() > 1 && arg[0] == '-') {
      std::string flag = arg, value;
      bool hasValue = false;
      size_t equals = arg.find('=');
      if (arg.rfind("--", 0) == 0 && equals != std::string::npos) {
        flag = arg.substr(0, equals);
        value = arg.substr(equals + 1);
        hasValue = true;
      }
      if (flag == "--resume" || flag == "--check-finite" ||
          flag == "--skip-failed-steps") {
        if (hasValue) {
          message = flag + " takes no value";
          return false;
        }
        if (!seen.insert(flag).second) {
          message = flag + " given twice";
          return false;
        }
        (flag == "--resume"           ? options.resume
         : flag == "--check-finite" ? options.checkFinite
                                    : options.skipFailedSteps) = true;
        continue;
      }
      std::string *target = valueOf(options, flag);
      if (!target) {
        message = "unknown option '" + flag + "' (see pipedream-run --help)";
        return false;
      }
      const char *what =
          flag == "--steps" || flag == "--ranks" || flag == "--timeout" ||
                  flag == "--checkpoint-every" || flag == "--threads"
              ? "a number"
          : flag == "--checkpoint-dir" ? "a directory"
              : flag == "--transport" ? "threads, mpi or nccl" : "a file name";
      if (!hasValue) {
        if (i + 1 >= argc) {
          message = flag + " needs " + what;
          return false;
        }
        value = argv[++i];
      }
      if (value.empty()) {
        message = flag + " needs " + what;
        return false;
      }
      if (!seen.insert(flag).second) {
        message = flag + " given twice";
        return false;
      }
      *target = value;
      continue;
    }
    if (!options.bundleDir.empty()) {
      message = "unexpected argument '" + arg +
                "' (one bundle directory, already given: '" +
                options.bundleDir + "')";
      return false;
    }
    options.bundleDir = arg;
  }
  if (options.bundleDir.empty()) {
    message = "no bundle directory given (usage: pipedream-run OUT_DIR "
              "--inputs IN.npz [--outputs OUT.npz], or OUT_DIR --data "
              "DATA.npz [--steps N])";
    return false;
  }
  if (!options.steps.empty()) {
    const std::string &text = options.steps;
    bool digits = std::all_of(text.begin(), text.end(),
                              [](char c) { return c >= '0' && c <= '9'; });
    errno = 0;
    unsigned long long steps =
        digits ? std::strtoull(text.c_str(), nullptr, 10) : 0;
    if (!digits || errno == ERANGE || steps == 0) {
      message = "--steps: expected a positive integer, got '" + text + "'";
      return false;
    }
    options.numSteps = steps;
  }
  if (!options.ranks.empty()) {
    const std::string &text = options.ranks;
    bool digits = std::all_of(text.begin(), text.end(),
                              [](char c) { return c >= '0' && c <= '9'; });
    unsigned long long ranks =
        digits && text.size() < 6 ? std::strtoull(text.c_str(), nullptr, 10)
                                  : 0;
    if (ranks == 0) {
      message = "--ranks: expected a positive integer, got '" + text + "'";
      return false;
    }
    options.numRanks = static_cast<size_t>(ranks);
  }
  if (!options.transport.empty() && options.transport != "threads" &&
      options.transport != "mpi" && options.transport != "nccl") {
    message = "--transport: expected threads, mpi or nccl, got '" +
              options.transport + "'";
    return false;
  }
  // --threads (issue 21)
  if (!options.threads.empty()) {
    const std::string &text = options.threads;
    bool digits = text.size() <= 4 &&
                  std::all_of(text.begin(), text.end(),
                              [](char c) { return c >= '0' && c <= '9'; });
    long threads = digits ? std::strtol(text.c_str(), nullptr, 10) : 0;
    if (threads <= 0 || threads > 256) {
      message = "--threads: expected an integer from 1 to 256, got '" + text +
                "'";
      return false;
    }
    options.numThreads = static_cast<int>(threads);
  }
  if (!options.timeout.empty()) {
    char *end = nullptr;
    double value = std::strtod(options.timeout.c_str(), &end);
    if (*end != '\0' || !std::isfinite(value) || value <= 0) {
      message = "--timeout: expected a positive number of seconds, got '" +
                options.timeout + "'";
      return false;
    }
    options.timeoutSeconds = value;
  }
  if (!options.checkpointEvery.empty()) {
    const std::string &text = options.checkpointEvery;
    bool digits = std::all_of(text.begin(), text.end(),
                              [](char c) { return c >= '0' && c <= '9'; });
    errno = 0;
    unsigned long long every =
        digits ? std::strtoull(text.c_str(), nullptr, 10) : 0;
    if (!digits || errno == ERANGE || every == 0) {
      message = "--checkpoint-every: expected a positive number of steps, "
                "got '" + text + "'";
      return false;
    }
    options.checkpointSteps = every;
    if (options.checkpointDir.empty()) {
      message = "--checkpoint-every needs --checkpoint-dir DIR";
      return false;
    }
  }
  if (options.resume && options.checkpointDir.empty()) {
    message = "--resume needs --checkpoint-dir DIR (the checkpoints to "
              "resume from)";
    return false;
  }
  if (!options.checkpointDir.empty() && options.checkpointEvery.empty() &&
      !options.resume) {
    message = "--checkpoint-dir needs --checkpoint-every S (save every S "
              "steps) or --resume";
    return false;
  }
  if (options.data.empty()) {
    for (const char *flag : {"--steps", "--save-onnx", "--loss-log",
                             "--ranks", "--transport", "--timeout",
                             "--trace", "--checkpoint-dir",
                             "--checkpoint-every", "--resume",
                             "--check-finite", "--skip-failed-steps"})
      if (seen.count(flag)) {
        message = std::string(flag) +
                  " needs --data DATA.npz (it applies to training)";
        return false;
      }
  } else if (!options.inputs.empty() || !options.outputs.empty()) {
    message = "--data trains, --inputs/--outputs run inference: give one or "
              "the other";
    return false;
  }
  return true;
}

/// The function to run: the inference function called `main`, else the
/// only function of kind `inference`.
pd_function *selectFunction(pd_bundle *bundle, std::string &message) {
  std::vector<pd_function *> inference;
  std::string names;
  for (size_t i = 0; i < pd_bundle_function_count(bundle); ++i) {
    pd_function *function = pd_bundle_function_at(bundle, i);
    names += std::string(names.empty() ? "" : ", ") +
             pd_function_name(function) + " (" + pd_function_kind(function) +
             ")";
    if (std::strcmp(pd_function_kind(function), "inference") != 0)
      continue;
    if (std::strcmp(pd_function_name(function), "main") == 0)
      return function;
    inference.push_back(function);
  }
  if (inference.size() == 1)
    return inference.front();
  message = std::string(pd_bundle_dir(bundle)) +
            (inference.empty()
                 ? (pd_bundle_is_training(bundle)
                        ? ": the bundle has no inference function (it is a "
                          "training bundle: train it with --data DATA.npz)"
                        : ": the bundle has no inference function")
                 : ": the bundle has several inference functions and none "
                   "is called 'main'") +
            "; functions: " + names;
  return nullptr;
}

std::string describeBuffer(const pd_buffer *buffer) {
  return pipedream::npy::describe(
      pd_buffer_dtype(buffer),
      std::vector<int64_t>(pd_buffer_shape(buffer),
                           pd_buffer_shape(buffer) + pd_buffer_rank(buffer)));
}

//===----------------------------------------------------------------------===//
// Training
//===----------------------------------------------------------------------===//

// --save-onnx and the atomic writes of the loss log and the trace come from
// the small library next to the runtime (runtime/onnx), shared with the
// Python package.
using pipedream::OnnxWriter;
using pipedream::writeFileAtomically;

/// Shows training progress: an updating bar on a terminal (stderr), else
/// one line per step on stdout.
class Progress {
public:
  Progress(uint64_t steps, size_t batchSize)
      : steps(steps), batchSize(batchSize), bar(isatty(STDERR_FILENO)) {}

  void step(uint64_t index, double loss, double seconds) {
    total += seconds;
    if (ran++ == 0)
      firstLoss = loss;
    lastLoss = loss;
    double rate = seconds > 0 ? batchSize / seconds : 0;
    if (!bar) {
      std::printf("step %llu/%llu loss %.6f samples/s %.1f\n",
                  static_cast<unsigned long long>(index),
                  static_cast<unsigned long long>(steps), loss, rate);
      std::fflush(stdout);
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

  /// The last line: losses and the mean step time.
  void finish() {
    if (ran == 0) {
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

private:
  uint64_t steps;
  size_t batchSize;
  bool bar;
  double total = 0, firstLoss = 0, lastLoss = 0;
  uint64_t ran = 0;
  std::chrono::steady_clock::time_point lastDraw;
};

//===----------------------------------------------------------------------===//
// Checkpoints and traces
//===----------------------------------------------------------------------===//

/// A test hook: $PIPEDREAM_TEST_KILL_AFTER_STEP = k SIGKILLs this process
/// (every rank of a threads run) once step k (from 1) and its checkpoint
/// are done, as `kill -9` would. For the resume tests only.
void killAfterStepHook(uint64_t step, size_t rank = 0) {
  if (rank != 0)
    return;
  const char *at = std::getenv("PIPEDREAM_TEST_KILL_AFTER_STEP");
  if (!at || !*at || std::strtoull(at, nullptr, 10) != step)
    return;
  std::fflush(stdout);
  std::fprintf(stderr,
               "PIPEDREAM_TEST_KILL_AFTER_STEP: killed after step %llu "
               "(test hook)\n",
               static_cast<unsigned long long>(step));
  std::fflush(stderr);
  std::raise(SIGKILL);
}

/// Whether step `done` (steps done so far, from 1) ends with a checkpoint.
bool checkpointDue(const Options &options, uint64_t done) {
  return options.checkpointSteps && done % options.checkpointSteps == 0;
}

/// "F3 s1" (action, micro-batch, stage) as pipedream-compile --trace
/// names slices; "send to 1 (tag 3)", "recv from 1 (tag 3)", "step 4".
std::string sliceName(const pd_trace_event &e, uint64_t step) {
  std::string op = e.op;
  if (op == "call") {
    std::string name = *e.action ? e.action : e.function;
    if (e.microbatch >= 0)
      name += std::to_string(e.microbatch);
    if (e.stage >= 0)
      name += " s" + std::to_string(e.stage);
    return name;
  }
  if (op == "send" || op == "recv")
    return op + (op == "send" ? " to " : " from ") + std::to_string(e.peer) +
           " (tag " + std::to_string(e.tag) + ")";
  if (op == "all_reduce")
    return std::string("all-reduce ") + e.function;
  return "step " + std::to_string(step);
}

/// The Chrome-trace slices of one rank's events (absolute times; rebased
/// when written): calls, sends, receives (the time spent waiting) and
/// steps. `firstStep` is the run's step of the object's step 0 (after a
/// resume).
nlohmann::json traceSlices(size_t rank, const std::vector<pd_trace_event> &events,
                           uint64_t firstStep) {
  nlohmann::json slices = nlohmann::json::array();
  for (const pd_trace_event &e : events) {
    std::string op = e.op;
    if (op != "call" && op != "send" && op != "recv" && op != "step" &&
        op != "all_reduce")
      continue;
    uint64_t step = firstStep + e.step + 1;
    nlohmann::json args = {{"rank", rank}, {"step", step}};
    if (op == "call") {
      args["function"] = e.function;
      args["action"] = e.action;
      args["stage"] = e.stage;
      args["microbatch"] = e.microbatch;
    } else if (op == "all_reduce") {
      args["buffer"] = e.function;
    } else if (op != "step") {
      args["peer"] = e.peer;
      args["tag"] = e.tag;
    }
    slices.push_back({{"name", sliceName(e, step)},
                      {"cat", op == "call" && *e.action ? e.action : e.op},
                      {"ph", "X"},
                      {"pid", 0},
                      {"tid", rank},
                      {"ts", e.start_us},
                      {"dur", e.end_us - e.start_us},
                      {"args", args}});
  }
  return slices;
}

/// The events recorded by a trainer or pipeline.
template <typename Count, typename At>
std::vector<pd_trace_event> traceEvents(Count count, At at) {
  std::vector<pd_trace_event> events(count());
  for (size_t i = 0; i < events.size(); ++i)
    at(i, &events[i]);
  return events;
}

/// The measured bubble fraction of the last step in `slices`: the time
/// the ranks did not spend in calls over ranks x the step's span (first
/// rank's start to last rank's end). NaN without steps.
double measuredBubble(const nlohmann::json &slices, size_t ranks) {
  uint64_t last = 0;
  for (const auto &slice : slices)
    last = std::max(last, slice["args"]["step"].get<uint64_t>());
  double begin = INFINITY, end = -INFINITY, busy = 0;
  for (const auto &slice : slices) {
    if (slice["args"]["step"].get<uint64_t>() != last)
      continue;
    double ts = slice["ts"].get<double>(), dur = slice["dur"].get<double>();
    if (slice["name"].get<std::string>().rfind("step ", 0) == 0) {
      begin = std::min(begin, ts);
      end = std::max(end, ts + dur);
    } else if (slice["args"].contains("function")) {
      busy += dur;
    }
  }
  if (!(end > begin) || ranks == 0)
    return NAN;
  return std::max(0.0, 1.0 - busy / (static_cast<double>(ranks) * (end - begin)));
}

/// Writes --trace: metadata lanes, the slices rebased to the earliest one,
/// and `otherData` with the measured (and, from OUT_DIR/report.json, the
/// simulated) bubble fraction, which pipelines also print.
bool writeTrace(const Options &options, size_t ranks, bool pipeline,
                nlohmann::json slices, std::string &message) {
  double origin = INFINITY;
  for (const auto &slice : slices)
    origin = std::min(origin, slice["ts"].get<double>());
  for (auto &slice : slices)
    slice["ts"] = slice["ts"].get<double>() - origin;
  double measured = measuredBubble(slices, ranks);
  nlohmann::json simulated = nullptr;
  {
    std::ifstream in(options.bundleDir + "/report.json");
    if (in) {
      nlohmann::json report = nlohmann::json::parse(in, nullptr, false);
      if (!report.is_discarded() && report.is_object() &&
          report.contains("bubble_fraction") &&
          report["bubble_fraction"].is_number())
        simulated = report["bubble_fraction"];
    }
  }
  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"name", "process_name"},
                    {"ph", "M"},
                    {"pid", 0},
                    {"args", {{"name", "pipedream-run " + options.bundleDir}}}});
  for (size_t r = 0; r < ranks; ++r) {
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", 0},
                      {"tid", r},
                      {"args", {{"name", "rank " + std::to_string(r)}}}});
    events.push_back({{"name", "thread_sort_index"},
                      {"ph", "M"},
                      {"pid", 0},
                      {"tid", r},
                      {"args", {{"sort_index", r}}}});
  }
  for (auto &slice : slices)
    events.push_back(std::move(slice));
  nlohmann::json root = {
      {"traceEvents", events},
      {"displayTimeUnit", "ms"},
      {"otherData",
       {{"ranks", ranks},
        {"measured_bubble_fraction",
         std::isnan(measured) ? nlohmann::json(nullptr)
                              : nlohmann::json(measured)},
        {"simulated_bubble_fraction", simulated}}}};
  if (pipeline && !std::isnan(measured)) {
    std::printf("bubble fraction: measured %.1f%% (last step, %zu ranks)",
                100 * measured, ranks);
    if (simulated.is_number())
      std::printf(", simulated %.1f%% (report.json)",
                  100 * simulated.get<double>());
    std::printf("\n");
    std::fflush(stdout);
  }
  return writeFileAtomically(options.trace, root.dump(1) + "\n", message);
}

/// --resume: prints where training continues; false with `message` set
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

/// `--data`: trains a training bundle for --steps steps.
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
  std::set<std::string> used = {pd_bundle_training_labels(bundle)};
  for (size_t i = 0; i < pd_bundle_training_input_count(bundle); ++i)
    used.insert(pd_bundle_training_input_at(bundle, i));
  std::vector<pd_named_array> views;
  for (const auto &[name, array] : arrays) {
    if (!used.count(name)) {
      std::fprintf(stderr,
                   "warning: %s: array '%s' is neither a training input nor "
                   "the labels; ignored\n",
                   options.data.c_str(), name.c_str());
      continue;
    }
    views.push_back({name.c_str(), array.dtype, array.shape.size(),
                     array.shape.data(), array.data.data(), array.data.size()});
  }
  // The runtime's messages start with "training data: "; name the file.
  auto dataError = [&]() {
    std::string text = pd_last_error();
    const std::string prefix = "training data: ";
    if (text.rfind(prefix, 0) == 0)
      text = text.substr(prefix.size());
    return error(options.data + ": " + text);
  };
  size_t samples = 0;
  if (pd_trainer_check_data(trainer, views.data(), views.size(), &samples) !=
      PD_OK)
    return dataError();

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

  size_t batch = pd_trainer_batch_size(trainer);
  Progress progress(options.numSteps, batch);
  std::string log = "step,loss\n";
  for (uint64_t s = start; s < options.numSteps; ++s) {
    // Samples [s*B, (s+1)*B) modulo the data's length.
    uint64_t first = static_cast<uint64_t>(static_cast<unsigned __int128>(s) *
                                           batch % samples);
    double loss = 0;
    auto begin = std::chrono::steady_clock::now();
    if (pd_status status =
            pd_trainer_step(trainer, views.data(), views.size(), first, &loss);
        status != PD_OK) {
      // A failed run-time check: the step was not applied, the last
      // checkpoint is intact.
      if (status == PD_ERROR_CHECK_FAILED && options.skipFailedSteps) {
        warnSkipped(s + 1, pd_last_error());
        if (checkpointDue(options, s + 1) &&
            pd_trainer_save_checkpoint(trainer, options.checkpointDir.c_str(),
                                       s + 1) != PD_OK)
          return error(pd_last_error());
        continue;
      }
      if (status == PD_ERROR_CHECK_FAILED)
        return error("step " + std::to_string(s + 1) + ", " +
                     pd_last_error());
      return dataError();
    }
    std::chrono::duration<double> seconds =
        std::chrono::steady_clock::now() - begin;
    if (checkpointDue(options, s + 1) &&
        pd_trainer_save_checkpoint(trainer, options.checkpointDir.c_str(),
                                   s + 1) != PD_OK)
      return error(pd_last_error());
    progress.step(s + 1, loss, seconds.count());
    char line[64];
    std::snprintf(line, sizeof(line), "%llu,%.9g\n",
                  static_cast<unsigned long long>(s + 1), loss);
    log += line;
    killAfterStepHook(s + 1);
  }
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

//===----------------------------------------------------------------------===//
// Pipelines
//===----------------------------------------------------------------------===//

/// argv of this process, for re-executing it under mpirun.
std::vector<std::string> gArguments;

/// A test hook: $PIPEDREAM_TEST_<what>_RANK = r (and optionally
/// $PIPEDREAM_TEST_<what>_STEP = s, default 2) makes rank r crash or hang
/// at the start of step s. Returns true when it applies to (rank, step).
bool testHook(const char *what, size_t rank, uint64_t step) {
  std::string prefix = std::string("PIPEDREAM_TEST_") + what;
  const char *r = std::getenv((prefix + "_RANK").c_str());
  if (!r || !*r || std::strtoull(r, nullptr, 10) != rank)
    return false;
  const char *s = std::getenv((prefix + "_STEP").c_str());
  uint64_t at = s && *s ? std::strtoull(s, nullptr, 10) : 2;
  return step == at;
}

/// What every rank shares: the options, the data and where to report.
struct PipelineRun {
  const Options *options = nullptr;
  NamedArrays arrays;
  std::vector<pd_named_array> views;
  /// Set when a rank fails, so a hung test rank stops waiting.
  std::atomic<bool> failed{false};
  /// One process per rank (MPI): each rank's peak memory is its own.
  bool processPerRank = false;
  /// The process's resident size before the bundle was opened.
  uint64_t startResident = 0;
};

/// Strips the runtime's "training data: " and names the data file.
std::string dataMessage(const Options &options, std::string text) {
  const std::string prefix = "training data: ";
  if (text.rfind(prefix, 0) == 0)
    text = text.substr(prefix.size());
  return options.data + ": " + text;
}

/// Runs rank `rank` of the pipeline for --steps steps. Returns "" or the
/// error; `quiet` is set for an error every rank reports the same way
/// (data, model), which only rank 0 prints.
std::string runRank(PipelineRun &run, size_t rank, pd_transport *transport,
                    bool &quiet, bool &agreed) {
  const Options &options = *run.options;
  quiet = false;
  agreed = false;
  pd_bundle *bundle = nullptr;
  if (pd_bundle_open_rank(options.bundleDir.c_str(), rank, &bundle) != PD_OK)
    return pd_last_error();
  struct Closer {
    pd_bundle *bundle;
    ~Closer() { pd_bundle_close(bundle); }
  } closer{bundle};
  if (options.timeoutSeconds > 0)
    pd_transport_set_timeout(transport, options.timeoutSeconds);
  pd_pipeline *pipeline = nullptr;
  if (pd_pipeline_create(bundle, rank, transport, &pipeline) != PD_OK)
    return pd_last_error();

  size_t samples = 0;
  if (pd_pipeline_check_data(pipeline, run.views.data(), run.views.size(),
                             &samples) != PD_OK) {
    quiet = true;
    return dataMessage(options, pd_last_error());
  }
  OnnxWriter onnx;
  std::string message;
  if (rank == 0 && !options.saveOnnx.empty() && !onnx.load(bundle, message))
    return message;

  uint64_t start = 0;
  if (!resumeFrom(
          options, rank == 0,
          [&](uint64_t *step) {
            return pd_pipeline_load_checkpoint(
                pipeline, options.checkpointDir.c_str(), step);
          },
          start, message)) {
    // Every rank reads the same files and fails alike.
    quiet = true;
    return message;
  }
  if (!options.trace.empty())
    pd_pipeline_set_tracing(pipeline, 1);
  if (options.checkFinite)
    pd_pipeline_set_check_finite(pipeline, 1);

  size_t batch = pd_pipeline_batch_size(pipeline);
  Progress progress(options.numSteps, batch);
  std::string log = "step,loss\n";
  for (uint64_t s = start; s < options.numSteps; ++s) {
    if (testHook("CRASH", rank, s + 1)) {
      std::fprintf(stderr,
                   "rank %zu: PIPEDREAM_TEST_CRASH_RANK: aborting at step "
                   "%llu (test hook)\n",
                   rank, static_cast<unsigned long long>(s + 1));
      std::fflush(stderr);
      std::abort();
    }
    if (testHook("HANG", rank, s + 1)) {
      std::fprintf(stderr,
                   "rank %zu: PIPEDREAM_TEST_HANG_RANK: hanging at step %llu "
                   "(test hook)\n",
                   rank, static_cast<unsigned long long>(s + 1));
      std::fflush(stderr);
      while (!run.failed)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      return "PIPEDREAM_TEST_HANG_RANK: stopped hanging";
    }
    uint64_t first = static_cast<uint64_t>(static_cast<unsigned __int128>(s) *
                                           batch % samples);
    double loss = 0;
    auto begin = std::chrono::steady_clock::now();
    if (pd_status status = pd_pipeline_step(pipeline, run.views.data(),
                                            run.views.size(), first, &loss);
        status != PD_OK) {
      // Every rank has the same agreed message (it names the rank that
      // failed): printed once.
      if (status == PD_ERROR_CHECK_FAILED && options.skipFailedSteps) {
        if (rank == 0)
          warnSkipped(s + 1, pd_last_error());
        if (checkpointDue(options, s + 1) &&
            pd_pipeline_save_checkpoint(pipeline, options.checkpointDir.c_str(),
                                        s + 1) != PD_OK)
          return pd_last_error();
        continue;
      }
      if (status == PD_ERROR_CHECK_FAILED) {
        quiet = agreed = true;
        return "step " + std::to_string(s + 1) + ", " + pd_last_error();
      }
      return pd_last_error();
    }
    std::chrono::duration<double> seconds =
        std::chrono::steady_clock::now() - begin;
    if (checkpointDue(options, s + 1) &&
        pd_pipeline_save_checkpoint(pipeline, options.checkpointDir.c_str(),
                                    s + 1) != PD_OK)
      return pd_last_error();
    killAfterStepHook(s + 1, rank);
    if (rank != 0)
      continue;
    progress.step(s + 1, loss, seconds.count());
    char line[64];
    std::snprintf(line, sizeof(line), "%llu,%.9g\n",
                  static_cast<unsigned long long>(s + 1), loss);
    log += line;
    // Rank 0 only: its checkpoint save returns once the manifest is
    // written; under mpirun the other ranks then die with it.
  }
  if (!options.saveOnnx.empty() &&
      pd_pipeline_gather_weights(pipeline) != PD_OK)
    return pd_last_error();
  // --trace: every rank's slices to rank 0 (size, then the JSON text).
  nlohmann::json slices;
  if (!options.trace.empty()) {
    slices = traceSlices(
        rank,
        traceEvents([&] { return pd_pipeline_trace_count(pipeline); },
                    [&](size_t i, pd_trace_event *e) {
                      pd_pipeline_trace_event(pipeline, i, e);
                    }),
        start);
    size_t ranks = pd_bundle_pipeline_ranks(bundle);
    if (rank != 0) {
      std::string text = slices.dump();
      uint64_t size = text.size();
      if (pd_transport_send(transport, 0, PD_TAG_TRACE, &size,
                            sizeof(size)) != PD_OK ||
          pd_transport_send(transport, 0, PD_TAG_TRACE, text.data(),
                            text.size()) != PD_OK)
        return std::string("sending the trace to rank 0: ") + pd_last_error();
    } else {
      for (size_t r = 1; r < ranks; ++r) {
        uint64_t size = 0;
        std::string text;
        if (pd_transport_recv(transport, r, PD_TAG_TRACE, &size,
                              sizeof(size)) == PD_OK) {
          text.resize(size);
          if (pd_transport_recv(transport, r, PD_TAG_TRACE, &text[0],
                                size) != PD_OK)
            text.clear();
        }
        if (text.size() != size || size == 0)
          return "gathering the trace from rank " + std::to_string(r) +
                 ": " + pd_last_error();
        for (auto &slice : nlohmann::json::parse(text))
          slices.push_back(std::move(slice));
      }
    }
  }
  // --- Measured peak memory (PeakMemory.h) ---
  // With a process per rank every rank sends its peak to rank 0; rank
  // threads share one process, which runThreads reports.
  std::vector<pipedream::run::ResidentMemory> peaks;
  if (run.processPerRank) {
    uint64_t mine[2] = {pipedream::run::peakResidentBytes(),
                        run.startResident};
    if (rank != 0) {
      if (pd_transport_send(transport, 0, PD_TAG_TRACE, mine,
                            sizeof(mine)) != PD_OK)
        return std::string("sending the peak memory to rank 0: ") +
               pd_last_error();
    } else {
      peaks.resize(pd_bundle_pipeline_ranks(bundle));
      peaks[0] = {mine[0], mine[1]};
      for (size_t r = 1; r < peaks.size(); ++r) {
        uint64_t theirs[2] = {0, 0};
        if (pd_transport_recv(transport, r, PD_TAG_TRACE, theirs,
                              sizeof(theirs)) != PD_OK)
          return "gathering the peak memory from rank " + std::to_string(r) +
                 ": " + pd_last_error();
        peaks[r] = {theirs[0], theirs[1]};
      }
    }
  }
  // --- end of measured peak memory ---
  if (rank != 0)
    return "";
  progress.finish();
  if (run.processPerRank) {
    std::printf("%s", pipedream::run::describePeakMemory(
                          options.bundleDir, peaks, /*threads=*/false,
                          peaks.size())
                          .c_str());
    std::fflush(stdout);
  }
  if (!options.trace.empty() &&
      !writeTrace(options, pd_bundle_pipeline_ranks(bundle), true,
                  std::move(slices), message))
    return message;
  if (!options.lossLog.empty() &&
      !writeFileAtomically(options.lossLog, log, message))
    return message;
  if (!options.saveOnnx.empty() && !onnx.save(options.saveOnnx, message))
    return message;
  return "";
}

/// Reads --data and keeps the arrays a pipeline reads (warning about the
/// others when `warn`).
bool loadData(PipelineRun &run, pd_bundle *bundle, bool warn,
              std::string &message) {
  const Options &options = *run.options;
  if (!pipedream::npy::readNpz(options.data, run.arrays, message))
    return false;
  std::set<std::string> used = {pd_bundle_pipeline_labels(bundle)};
  for (size_t i = 0; i < pd_bundle_pipeline_input_count(bundle); ++i)
    used.insert(pd_bundle_pipeline_input_at(bundle, i));
  for (const auto &[name, array] : run.arrays) {
    if (!used.count(name)) {
      if (warn)
        std::fprintf(stderr,
                     "warning: %s: array '%s' is neither a training input "
                     "nor the labels; ignored\n",
                     options.data.c_str(), name.c_str());
      continue;
    }
    run.views.push_back({name.c_str(), array.dtype, array.shape.size(),
                         array.shape.data(), array.data.data(),
                         array.data.size()});
  }
  return true;
}

std::string rankMessage(size_t rank, const std::string &text) {
  std::string prefix = "rank " + std::to_string(rank) + ": ";
  return text.rfind(prefix, 0) == 0 ? text : prefix + text;
}

/// True when this process was started by mpirun (Open MPI).
bool underMpirun();
void applyThreads(const Options &options, size_t ranksHere);

/// torchrun-style environment with --transport nccl: RANK and WORLD_SIZE
/// set and no mpirun.
bool underTorchrun(const Options &options) {
  return options.transport == "nccl" && !underMpirun() && std::getenv("RANK") &&
         std::getenv("WORLD_SIZE");
}

/// Under mpirun (or torchrun with --transport nccl): this process is one
/// rank.
int runMpiRank(const Options &options) {
  pd_transport *transport = nullptr;
  bool torchrun = underTorchrun(options);
  if ((torchrun ? pd_transport_create_nccl(nullptr, &transport)
                : pd_transport_create_mpi(&transport)) != PD_OK)
    return error(pd_last_error());
  size_t rank = pd_transport_rank(transport);
  size_t size = pd_transport_size(transport);
  // mpirun ends the other ranks with SIGTERM when one fails: say so.
  static char terminated[160];
  std::snprintf(terminated, sizeof(terminated),
                "error: rank %zu: terminated by signal (mpirun stops every "
                "rank when one fails; see the other ranks' messages)\n",
                rank);
  std::signal(SIGTERM, [](int) {
    ssize_t ignored = ::write(STDERR_FILENO, terminated, std::strlen(terminated));
    (void)ignored;
    std::_Exit(1);
  });
  // Failures end the process without MPI_Finalize (peers may be gone);
  // mpirun then stops the others.
  auto die = [&](const std::string &message, bool print) {
    if (print)
      std::fprintf(stderr, "error: %s\n", rankMessage(rank, message).c_str());
    std::fflush(stdout);
    std::fflush(stderr);
    pd_transport_abort(transport, message.c_str());
    std::_Exit(1);
    return 1;
  };
  // --transport nccl: the MPI transport only bootstraps the communicator.
  pd_transport *bootstrap = nullptr;
  if (options.transport == "nccl" && !torchrun) {
    bootstrap = transport;
    if (pd_transport_create_nccl(bootstrap, &transport) != PD_OK)
      return die(pd_last_error(), true);
  }
  if (options.numRanks && options.numRanks != size)
    return die("--ranks " + std::to_string(options.numRanks) +
                   " but mpirun started " + std::to_string(size) +
                   " processes",
               rank == 0);
  pd_bundle *bundle = nullptr;
  if (pd_bundle_open_rank(options.bundleDir.c_str(), rank, &bundle) != PD_OK)
    return die(pd_last_error(), true);
  size_t ranks = pd_bundle_pipeline_ranks(bundle);
  PipelineRun run;
  run.options = &options;
  run.processPerRank = true;
  std::string message;
  bool loaded = loadData(run, bundle, rank == 0, message);
  pd_bundle_close(bundle);
  // The start of the measurement: MPI, the libraries and the data arrays
  // are up, the first open's weights are freed (PeakMemory.h).
  run.startResident = pipedream::run::residentBytesAfterRelease();
  if (ranks != size)
    return die(options.bundleDir + ": the pipeline has " +
                   std::to_string(ranks) + " ranks but mpirun started " +
                   std::to_string(size) + " processes (run it with -np " +
                   std::to_string(ranks) + " or --ranks " +
                   std::to_string(ranks) + ")",
               rank == 0);
  if (!loaded)
    return die(message, rank == 0);
  bool quiet = false, agreed = false;
  message = runRank(run, rank, transport, quiet, agreed);
  if (!message.empty() && agreed) {
    // Every rank stopped at the same failed step, told by the others: an
    // orderly end (MPI_Finalize together), rank 0 prints the message. The
    // first to exit non-zero makes mpirun stop the others, which need not
    // say so: their message is rank 0's.
    std::signal(SIGTERM, SIG_DFL);
    if (rank == 0)
      std::fprintf(stderr, "error: %s\n", message.c_str());
    std::fflush(stdout);
    std::fflush(stderr);
    pd_transport_destroy(transport);
    if (bootstrap)
      pd_transport_destroy(bootstrap);
    return 1;
  }
  if (!message.empty())
    return die(message, !quiet || rank == 0);
  std::fflush(stdout);
  pd_transport_destroy(transport);
  if (bootstrap)
    pd_transport_destroy(bootstrap);
  return 0;
}

/// Every rank a thread of this process.
int runThreads(const Options &options, size_t ranks, pd_bundle *rankZero,
               uint64_t startResident) {
  if (options.numRanks && options.numRanks != ranks)
    return error("--ranks " + std::to_string(options.numRanks) + ": " +
                 options.bundleDir + " is a pipeline of " +
                 std::to_string(ranks) + " ranks");
  applyThreads(options, ranks);
  auto run = std::make_shared<PipelineRun>();
  run->options = &options;
  std::string message;
  if (!loadData(*run, rankZero, true, message))
    return error(message);
  std::vector<pd_transport *> transports(ranks);
  if (pd_transport_create_threads(ranks, transports.data()) != PD_OK)
    return error(pd_last_error());

  struct Outcome {
    std::mutex mutex;
    std::condition_variable done;
    size_t finished = 0;
    std::vector<std::string> errors;
    std::vector<bool> quiet;
  };
  auto outcome = std::make_shared<Outcome>();
  outcome->errors.resize(ranks);
  outcome->quiet.resize(ranks);
  std::vector<std::thread> threads;
  for (size_t r = 0; r < ranks; ++r)
    threads.emplace_back([run, outcome, r, &transports] {
      bool quiet = false, agreed = false;
      std::string error = runRank(*run, r, transports[r], quiet, agreed);
      if (!error.empty() && !agreed) {
        run->failed = true;
        pd_transport_abort(transports[r], error.c_str());
      }
      std::lock_guard<std::mutex> lock(outcome->mutex);
      outcome->errors[r] = error;
      outcome->quiet[r] = quiet;
      ++outcome->finished;
      outcome->done.notify_all();
    });
  // Every rank ends by itself: a failing rank aborts the transport, so the
  // others fail at once or within the timeout.
  {
    std::unique_lock<std::mutex> lock(outcome->mutex);
    outcome->done.wait(lock, [&] { return outcome->finished == ranks; });
  }
  for (auto &thread : threads)
    thread.join();
  for (pd_transport *transport : transports)
    pd_transport_destroy(transport);
  int status = 0;
  std::set<std::string> printed;
  for (size_t r = 0; r < ranks; ++r) {
    const std::string &text = outcome->errors[r];
    if (text.empty())
      continue;
    status = 1;
    std::string line = outcome->quiet[r] ? text : rankMessage(r, text);
    if (printed.insert(line).second)
      std::fprintf(stderr, "error: %s\n", line.c_str());
  }
  if (status == 0)
    std::printf("%s", pipedream::run::describePeakMemory(
                          options.bundleDir,
                          {{pipedream::run::peakResidentBytes(),
                            startResident}},
                          /*threads=*/true, ranks)
                          .c_str());
  return status;
}

/// Finds mpirun: $PIPEDREAM_MPIRUN, else `mpirun` on PATH.
std::string findMpirun() {
  if (const char *path = std::getenv("PIPEDREAM_MPIRUN"))
    if (*path)
      return path;
  const char *path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    std::string candidate = (dir.empty() ? "." : dir) + "/mpirun";
    if (::access(candidate.c_str(), X_OK) == 0)
      return candidate;
  }
  return "";
}

/// --ranks K outside mpirun: re-executes this program under mpirun.
int launchMpirun(const Options &options, size_t ranks) {
  if (options.numRanks != ranks)
    return error("--ranks " + std::to_string(options.numRanks) + ": " +
                 options.bundleDir + " is a pipeline of " +
                 std::to_string(ranks) + " ranks");
  if (!pd_transport_mpi_available())
    return error("--ranks " + std::to_string(ranks) +
                 ": this pipedream-run was built without MPI (install "
                 "openmpi-bin libopenmpi-dev and rebuild), or run the ranks "
                 "as threads with --transport threads");
  std::string mpirun = findMpirun();
  if (mpirun.empty())
    return error("--ranks " + std::to_string(ranks) +
                 ": mpirun not found on PATH (install openmpi-bin, set "
                 "PIPEDREAM_MPIRUN, or use --transport threads)");
  char self[PATH_MAX];
  ssize_t length = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (length <= 0)
    return error(std::string("cannot find this program's path: ") +
                 std::strerror(errno));
  self[length] = '\0';
  std::vector<std::string> args = {mpirun};
  // Open MPI refuses root without this flag, and K ranks on fewer cores
  // (slots) without --oversubscribe; binding to cores is off since ranks
  // may share them.
  if (::geteuid() == 0)
    args.push_back("--allow-run-as-root");
  args.push_back("--oversubscribe");
  args.push_back("--bind-to");
  args.push_back("none");
  args.push_back("-np");
  args.push_back(std::to_string(ranks));
  args.push_back(self);
  for (size_t i = 1; i < gArguments.size(); ++i)
    args.push_back(gArguments[i]);
  // Docker and similar sandboxes forbid the cross-memory attach Open MPI's
  // shared-memory transport uses for large messages; copying is as fast
  // for the sizes a CPU pipeline sends.
  setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", 0);
  std::vector<char *> argv;
  for (std::string &arg : args)
    argv.push_back(&arg[0]);
  argv.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  ::execv(mpirun.c_str(), argv.data());
  return error(mpirun + ": cannot execute: " + std::strerror(errno));
}

/// True when this process was started by mpirun (Open MPI).
bool underMpirun() {
  const char *size = std::getenv("OMPI_COMM_WORLD_SIZE");
  return size && *size;
}

//===-- --threads (issue 21) ---------------------------------------------===//

/// Threads of the CPU kernels per rank (pipedream/threads.h): --threads N,
/// else $PIPEDREAM_NUM_THREADS (program.so reads it), else this process's
/// CPUs divided among the `ranksHere` ranks that share them (the pipeline's
/// ranks for the threads transport; mpirun's or torchrun's local ranks
/// sharing one affinity mask when not bound).
void applyThreads(const Options &options, size_t ranksHere) {
  if (options.numThreads > 0) {
    pd_set_num_threads(options.numThreads);
    return;
  }
  if (std::getenv("PIPEDREAM_NUM_THREADS"))
    return;
  for (const char *local : {"OMPI_COMM_WORLD_LOCAL_SIZE", "LOCAL_WORLD_SIZE"})
    if (const char *text = std::getenv(local)) {
      long n = std::strtol(text, nullptr, 10);
      if (n > 1)
        ranksHere = std::max(ranksHere, static_cast<size_t>(n));
    }
  cpu_set_t set;
  int cpus = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
  size_t share = std::max<size_t>(1, static_cast<size_t>(cpus) /
                                         std::max<size_t>(1, ranksHere));
  pd_set_num_threads(static_cast<int>(share));
}

//===-- end --threads ----------------------------------------------------===//

/// --data on a pipeline bundle: sets `code` and returns true; returns false
/// for any other bundle (trained by `train`).
bool trainPipeline(const Options &options, int &code) {
  if ((underMpirun() && options.transport != "threads") ||
      underTorchrun(options)) {
    code = runMpiRank(options);
    return true;
  }
  pd_bundle *bundle = nullptr;
  uint64_t startResident = pipedream::run::currentResidentBytes();
  pd_status status =
      pd_bundle_open_rank(options.bundleDir.c_str(), 0, &bundle);
  if (status == PD_ERROR_UNSUPPORTED &&
      std::string(pd_last_error()).find("not a pipeline bundle") !=
          std::string::npos) {
    if (!options.ranks.empty() || !options.transport.empty()) {
      code = error(std::string(pd_last_error()) +
                   "; --ranks and --transport apply to pipeline bundles");
      return true;
    }
    return false;
  }
  if (status != PD_OK) {
    code = error(pd_last_error());
    return true;
  }
  struct Closer {
    pd_bundle *bundle;
    ~Closer() { pd_bundle_close(bundle); }
  } closer{bundle};
  size_t ranks = pd_bundle_pipeline_ranks(bundle);
  if ((options.transport == "mpi" || options.transport == "nccl") &&
      options.ranks.empty()) {
    code = error("--transport " + options.transport +
                 ": give --ranks K (this program then runs under mpirun) or "
                 "start it with mpirun -np K" +
                 (options.transport == "nccl" ? " or torchrun" : ""));
    return true;
  }
  if (options.transport == "threads" || options.ranks.empty()) {
    code = runThreads(options, ranks, bundle, startResident);
    return true;
  }
  code = launchMpirun(options, ranks);
  return true;
}

int run(const Options &options) {
  applyThreads(options, 1);
  if (!options.data.empty()) {
    int code = 0;
    if (trainPipeline(options, code))
      return code;
  }
  pd_bundle *bundle = nullptr;
  if (pd_bundle_open(options.bundleDir.c_str(), &bundle) != PD_OK)
    return error(pd_last_error());
  struct Closer {
    pd_bundle *bundle;
    ~Closer() { pd_bundle_close(bundle); }
  } closer{bundle};
  if (!options.data.empty())
    return train(options, bundle);

  std::string message;
  pd_function *function = selectFunction(bundle, message);
  if (!function)
    return error(message);
  std::string functionName = pd_function_name(function);

  std::vector<pd_buffer *> inputs, outputs;
  std::string inputNames;
  for (size_t i = 0; i < pd_function_buffer_count(function); ++i) {
    pd_buffer *buffer = pd_function_buffer_at(function, i);
    if (pd_buffer_role(buffer) == PD_ROLE_INPUT) {
      inputs.push_back(buffer);
      inputNames += std::string(inputNames.empty() ? "" : ", ") +
                    pd_buffer_name(buffer) + " " + describeBuffer(buffer);
    } else if (pd_buffer_role(buffer) == PD_ROLE_OUTPUT) {
      outputs.push_back(buffer);
    }
  }

  if (!inputs.empty() && options.inputs.empty())
    return error("function '" + functionName + "' has inputs (" + inputNames +
                 "): pass them with --inputs IN.npz");
  if (!options.inputs.empty()) {
    NamedArrays arrays;
    if (!pipedream::npy::readNpz(options.inputs, arrays, message))
      return error(message);
    std::map<std::string, const Array *> byName;
    std::string arrayNames;
    for (const auto &entry : arrays) {
      byName[entry.first] = &entry.second;
      arrayNames += (arrayNames.empty() ? "" : ", ") + entry.first;
    }
    for (pd_buffer *buffer : inputs) {
      std::string name = pd_buffer_name(buffer);
      auto it = byName.find(name);
      if (it == byName.end())
        return error(options.inputs + ": no array '" + name + "' for input '" +
                     name + "' of function '" + functionName +
                     "' (arrays: " +
                     (arrayNames.empty() ? "none" : arrayNames) + ")");
      const Array &array = *it->second;
      if (pd_buffer_write(buffer, array.dtype, array.shape.size(),
                          array.shape.data(), array.data.data(),
                          array.data.size()) != PD_OK)
        return error(options.inputs + ": array '" + name +
                     "': " + pd_last_error());
      byName.erase(it);
    }
    for (const auto &unused : byName)
      std::fprintf(stderr,
                   "warning: %s: array '%s' is not an input of function "
                   "'%s'; ignored\n",
                   options.inputs.c_str(), unused.first.c_str(),
                   functionName.c_str());
  }

  if (pd_function_run(function) != PD_OK)
    return error(pd_last_error());

  NamedArrays results;
  for (pd_buffer *buffer : outputs) {
    Array array;
    array.dtype = pd_buffer_dtype(buffer);
    array.shape.assign(pd_buffer_shape(buffer),
                       pd_buffer_shape(buffer) + pd_buffer_rank(buffer));
    const unsigned char *data =
        static_cast<const unsigned char *>(pd_buffer_const_data(buffer));
    array.data.assign(data, data + pd_buffer_num_bytes(buffer));
    results.emplace_back(pd_buffer_name(buffer), std::move(array));
  }
  if (options.outputs.empty()) {
    for (const auto &result : results)
      std::printf("%s: %s\n", result.first.c_str(),
                  pipedream::npy::describe(result.second.dtype,
                                           result.second.shape)
                      .c_str());
    return 0;
  }
  if (!pipedream::npy::writeNpz(options.outputs, results,
                                pipedream::npy::Compression::Stored, message))
    return error(message);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  gArguments.assign(argv, argv + argc);
  Options options;
  bool help = false;
  std::string message;
  if (!parseArguments(argc, argv, options, help, message))
    return error(message);
  if (help) {
    std::fputs(kUsage, stdout);
    std::printf("\nThis build: MPI transport %s.\n",
                pd_transport_mpi_available() ? "available" : "not built");
    return 0;
  }
  return run(options);
}
