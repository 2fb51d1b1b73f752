//===- Options.cpp - pipedream-run flags ------------------------------------===
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The command line of pipedream-run: the usage text, the flags and their
// checks (a usage error is one message, never a partial Options).
//
//===----------------------------------------------------------------------===//

#include "Options.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

namespace pipedream {
namespace tooling {

namespace {

const char kUsage[] =
    "usage: pipedream-run OUT_DIR --inputs IN.npz [--outputs OUT.npz]\n"
    "       pipedream-run OUT_DIR --data DATA.npz [--steps N]\n"
    "                     [--save-onnx TRAINED.onnx] [--loss-log LOSS.csv]\n"
    "                     [--eval-data EVAL.npz [--eval-every S]]\n"
    "                     [--trace RUN.json] [--checkpoint-dir DIR\n"
    "                     --checkpoint-every S] [--resume]\n"
    "                     [--check-finite] [--skip-failed-steps]\n"
    "                     [--ranks K] [--transport threads|mpi|nccl]\n"
    "                     [--timeout SECONDS]\n"
    "       pipedream-run --measure-link LINK.json [--ranks K]\n"
    "                     [--transport threads|mpi] [--timeout SECONDS]\n"
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
    "  --steps N                optimizer steps (default 1; 0 with\n"
    "                           --eval-data: evaluate without training)\n"
    "  --save-onnx TRAINED.onnx the bundle's model.onnx with the trained\n"
    "                           weights\n"
    "  --loss-log LOSS.csv      `step,loss` per step (step from 1)\n"
    "  --eval-data EVAL.npz     after the last step (and every S steps with\n"
    "                           --eval-every S), the mean loss of the model\n"
    "                           in eval mode (Dropout off, BatchNorm running\n"
    "                           statistics) over all of EVAL.npz, printed\n"
    "                           and logged as --loss-log's eval_loss; needs\n"
    "                           a bundle compiled with --evaluate\n"
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
    "  --measure-link LINK.json no bundle: ranks 0 and 1 of the transport\n"
    "                           (threads by default; --ranks K: MPI) bounce\n"
    "                           1 KiB-4 MiB messages; the fitted latency and\n"
    "                           bandwidth are written as a profile for\n"
    "                           pipedream-compile --cost-model LINK.json\n"
    "  -h, --help               this text\n"
    "\n"
    "Training progress goes to stderr as one updating line on a terminal,\n"
    "else to stdout as one line per step and a summary.\n";

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
  if (flag == "--eval-data")
    return &options.evalData;
  if (flag == "--eval-every")
    return &options.evalEvery;
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
  if (flag == "--measure-link")
    return &options.measureLink;
  return nullptr;
}

/// A positive decimal count that fits in 64 bits (no sign, no spaces).
bool positiveCount(const std::string &text, uint64_t &out) {
  bool digits =
      !text.empty() && std::all_of(text.begin(), text.end(),
                                   [](char c) { return c >= '0' && c <= '9'; });
  errno = 0;
  unsigned long long value =
      digits ? std::strtoull(text.c_str(), nullptr, 10) : 0;
  if (!digits || errno == ERANGE || value == 0)
    return false;
  out = value;
  return true;
}

} // namespace

const char *usage() { return kUsage; }

int error(const std::string &message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 1;
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
      const char *what = flag == "--steps" || flag == "--ranks" ||
                                 flag == "--timeout" ||
                                 flag == "--checkpoint-every" ||
                                 flag == "--threads" || flag == "--eval-every"
                             ? "a number"
                         : flag == "--checkpoint-dir" ? "a directory"
                         : flag == "--transport"      ? "threads, mpi or nccl"
                                                      : "a file name";
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
  if (!options.measureLink.empty()) {
    // No bundle: only the transport's flags apply.
    if (!options.bundleDir.empty()) {
      message = "--measure-link takes no bundle directory (got '" +
                options.bundleDir + "')";
      return false;
    }
    for (const std::string &flag : seen)
      if (flag != "--measure-link" && flag != "--ranks" &&
          flag != "--transport" && flag != "--timeout") {
        message = flag + " does not apply to --measure-link (which takes "
                         "--ranks, --transport and --timeout)";
        return false;
      }
  } else if (options.bundleDir.empty()) {
    message = "no bundle directory given (usage: pipedream-run OUT_DIR "
              "--inputs IN.npz [--outputs OUT.npz], or OUT_DIR --data "
              "DATA.npz [--steps N])";
    return false;
  }
  if (!options.steps.empty()) {
    // --steps 0 --eval-data: evaluate the weights as they are (the
    // bundle's, or --resume's checkpoint's) without training.
    if (options.steps == "0" && !options.evalData.empty()) {
      options.numSteps = 0;
    } else if (!positiveCount(options.steps, options.numSteps)) {
      message = "--steps: expected a positive integer (or 0 with "
                "--eval-data: evaluate without training), got '" +
                options.steps + "'";
      return false;
    }
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
    if (!positiveCount(options.checkpointEvery, options.checkpointSteps)) {
      message = "--checkpoint-every: expected a positive number of steps, "
                "got '" +
                options.checkpointEvery + "'";
      return false;
    }
    if (options.checkpointDir.empty()) {
      message = "--checkpoint-every needs --checkpoint-dir DIR";
      return false;
    }
  }
  if (!options.evalEvery.empty()) {
    if (!positiveCount(options.evalEvery, options.evalSteps)) {
      message = "--eval-every: expected a positive number of steps, got '" +
                options.evalEvery + "'";
      return false;
    }
    if (options.evalData.empty()) {
      message = "--eval-every needs --eval-data EVAL.npz";
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
  if (options.data.empty() && options.measureLink.empty()) {
    for (const char *flag :
         {"--steps", "--save-onnx", "--loss-log", "--eval-data", "--eval-every",
          "--ranks", "--transport", "--timeout", "--trace", "--checkpoint-dir",
          "--checkpoint-every", "--resume", "--check-finite",
          "--skip-failed-steps"})
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

} // namespace tooling
} // namespace pipedream
