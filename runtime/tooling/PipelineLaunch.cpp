//===- PipelineLaunch.cpp - pipedream-run on pipeline bundles -------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Pipeline bundles (a `pipeline` section): every rank runs its program;
// `--transport threads` (the default without --ranks) runs all ranks as
// threads of this process, `--ranks K` re-executes this program under
// `mpirun -np K` (or the user runs `mpirun -np K pipedream-run ...`), each
// process then being the rank MPI gives it. Rank 0 prints progress and
// writes the loss log and the trained model.
//
//===----------------------------------------------------------------------===//

#include "PipelineLaunch.h"

#include "LinkMeasure.h"
#include "PeakMemory.h"
#include "TraceWriter.h"
#include "Training.h"

#include "pipedream/gpu.h"
#include "pipedream/npy.h"
#include "pipedream/onnx_writer.h"
#include "pipedream/rank_threads.h"
#include "pipedream/runtime.h"
#include "pipedream/threads.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <sched.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

namespace pipedream {
namespace tooling {

using pipedream::npy::NamedArrays;
using pipedream::OnnxWriter;
using pipedream::writeFileAtomically;

namespace {

/// What every rank shares: the options, the data and where to report.
struct PipelineRun {
  const Options *options = nullptr;
  NamedArrays arrays;
  std::vector<pd_named_array> views;
  /// --eval-data: its arrays (none without).
  NamedArrays evalArrays;
  std::vector<pd_named_array> evalViews;
  /// Set when a rank fails, so a hung test rank stops waiting (Hooks.h).
  std::atomic<bool> failed{false};
  /// One process per rank (MPI): each rank's peak memory is its own.
  bool processPerRank = false;
  /// The process's resident size before the bundle was opened.
  uint64_t startResident = 0;
};

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
  pd_rank *pipeline = nullptr;
  if (pd_rank_create(bundle, rank, transport, &pipeline) != PD_OK)
    return pd_last_error();

  size_t samples = 0;
  if (pd_rank_check_data(pipeline, run.views.data(), run.views.size(),
                         &samples) != PD_OK) {
    quiet = true;
    return dataMessage(options, pd_last_error());
  }
  // --eval-data: checked on every rank alike before the first step.
  std::function<pd_status(double *)> evaluate;
  if (!options.evalData.empty()) {
    quiet = true;
    if (!pd_rank_can_evaluate(pipeline))
      return options.bundleDir +
             ": --eval-data needs an evaluation program: compile the bundle "
             "with pipedream-compile --evaluate";
    size_t evalSamples = 0;
    if (pd_rank_check_data(pipeline, run.evalViews.data(), run.evalViews.size(),
                           &evalSamples) != PD_OK)
      return dataMessage(options.evalData, pd_last_error());
    std::string bad = evalSamplesError(
        options, evalSamples, pd_bundle_pipeline_microbatch_size(bundle));
    if (!bad.empty())
      return bad;
    quiet = false;
    evaluate = [&](double *loss) {
      return pd_rank_evaluate(pipeline, run.evalViews.data(),
                              run.evalViews.size(), loss);
    };
  }
  OnnxWriter onnx;
  std::string message;
  if (rank == 0 && !options.saveOnnx.empty() && !onnx.load(bundle, message))
    return message;

  uint64_t start = 0;
  if (!resumeFrom(
          options, rank == 0,
          [&](uint64_t *step) {
            return pd_rank_load_checkpoint(pipeline,
                                           options.checkpointDir.c_str(), step);
          },
          start, message)) {
    // Every rank reads the same files and fails alike.
    quiet = true;
    return message;
  }
  if (!options.trace.empty())
    pd_rank_set_tracing(pipeline, 1);
  if (options.checkFinite)
    pd_rank_set_check_finite(pipeline, 1);

  if (rank == 0)
    noteScheduleEnd(pd_bundle_pipeline_optimizer(bundle),
                    pd_bundle_pipeline_schedule(bundle), options.numSteps);
  size_t batch = pd_rank_batch_size(pipeline);
  Progress progress(options.numSteps, batch);
  StepFunctions functions;
  functions.step = [&](uint64_t first, double *loss) {
    return pd_rank_step(pipeline, run.views.data(), run.views.size(), first,
                        loss);
  };
  functions.saveCheckpoint = [&](uint64_t done) {
    return pd_rank_save_checkpoint(pipeline, options.checkpointDir.c_str(),
                                   done);
  };
  if (clipsGradients(pd_bundle_pipeline_optimizer(bundle)))
    functions.gradNorm = [&] { return pd_rank_grad_norm(pipeline); };
  functions.evaluate = evaluate;
  StepLoopResult steps = runSteps(options, rank, batch, samples, start,
                                  functions, progress, &run.failed);
  if (!steps.error.empty()) {
    // Every rank has the same agreed message of a failed check (it names
    // the rank that failed): printed once.
    quiet = agreed = steps.checkFailed;
    return steps.error;
  }
  const std::string &log = steps.log;
  if (!options.saveOnnx.empty() && pd_rank_gather_weights(pipeline) != PD_OK)
    return pd_last_error();
  // --trace: every rank's slices to rank 0 (size, then the JSON text).
  nlohmann::json slices;
  if (!options.trace.empty()) {
    slices =
        traceSlices(rank,
                    traceEvents([&] { return pd_rank_trace_count(pipeline); },
                                [&](size_t i, pd_trace_event *e) {
                                  pd_rank_trace_event(pipeline, i, e);
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
  if (!pipedream::npy::readNpz(run.options->data, run.arrays, message))
    return false;
  run.views = trainingViews(*run.options, bundle, run.arrays, warn);
  const std::string &eval = run.options->evalData;
  if (!eval.empty()) {
    if (!pipedream::npy::readNpz(eval, run.evalArrays, message))
      return false;
    run.evalViews = trainingViews(eval, bundle, run.evalArrays, warn);
  }
  return true;
}

std::string rankMessage(size_t rank, const std::string &text) {
  std::string prefix = "rank " + std::to_string(rank) + ": ";
  return text.rfind(prefix, 0) == 0 ? text : prefix + text;
}

/// True when this process was started by mpirun (Open MPI).
bool underMpirun();
bool crossMemoryAttachWorks();

/// torchrun-style environment with --transport nccl: RANK and WORLD_SIZE
/// set and no mpirun.
bool underTorchrun(const Options &options) {
  return options.transport == "nccl" && !underMpirun() && std::getenv("RANK") &&
         std::getenv("WORLD_SIZE");
}

/// Under mpirun (or torchrun with --transport nccl): this process is one
/// rank.
int runMpiRank(const Options &options) {
  // Open MPI gives each rank a pseudo-terminal as stdout (its output
  // forwarding), so the C library wrote out every line as it was printed:
  // rank 0's per-step progress line cost it ~200 us a step, on the
  // pipeline's critical path (issue 21; bench/pipeline.py K = 2: the
  // other rank waited that long for its first activation). Buffered as
  // through a pipe, the lines go out at most once a second and at the end
  // (Progress::step), and before every exit (die(), the test hooks).
  // Nothing has been written to stdout yet, as setvbuf requires.
  if (isatty(STDOUT_FILENO))
    std::setvbuf(stdout, nullptr, _IOFBF, BUFSIZ);
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

  // Every rank ends by itself: a failing rank aborts the transport, so the
  // others fail at once or within the timeout (pipedream/rank_threads.h).
  std::vector<char> quiet(ranks, 0); // not vector<bool>: written by every rank
  std::vector<pipedream::RankOutcome> outcomes = pipedream::runRanksOnThreads(
      transports, [&](size_t r) {
        bool agreed = false, rankQuiet = false;
        pipedream::RankOutcome outcome;
        outcome.error = runRank(*run, r, transports[r], rankQuiet, agreed);
        quiet[r] = rankQuiet;
        outcome.abort = !agreed;
        if (!outcome.error.empty() && !agreed)
          run->failed = true;
        return outcome;
      });
  for (pd_transport *transport : transports)
    pd_transport_destroy(transport);
  int status = 0;
  std::set<std::string> printed;
  for (size_t r = 0; r < ranks; ++r) {
    const std::string &text = outcomes[r].error;
    if (text.empty())
      continue;
    status = 1;
    std::string line = quiet[r] ? text : rankMessage(r, text);
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
  for (size_t i = 1; i < options.arguments.size(); ++i)
    args.push_back(options.arguments[i]);
  // Open MPI's shared-memory transport moves a large message (above 4 KiB:
  // every activation) with cross-memory attach, the receiver reading the
  // sender's buffer once it matches. Docker and similar sandboxes forbid
  // it; there it copies through shared memory in fragments, and fragments
  // after the first leave only when the sender's progress thread gets the
  // CPU from its rank's compute: on a loaded 2-core machine, alternating
  // runs gave p90 receive latencies of 0.2-2.9 ms against 0.1-1.3 ms with
  // cross-memory attach (issue 21). So
  // "none" only where the probe fails (the user's setting wins either way).
  if (!crossMemoryAttachWorks())
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

/// Whether one process may read another's memory with process_vm_readv,
/// as Open MPI's shared-memory transport does for a large message when its
/// single-copy mechanism is "cma" (its default): two sibling processes
/// (as mpirun's ranks are: Yama's ptrace_scope 1 allows only a parent to
/// read its descendants), one reading a word of the other's. Docker's
/// default seccomp profile and similar sandboxes refuse the call.
bool crossMemoryAttachWorks() {
  int ready[2], done[2];
  if (::pipe(ready) != 0)
    return false;
  if (::pipe(done) != 0) {
    ::close(ready[0]);
    ::close(ready[1]);
    return false;
  }
  static volatile uint64_t word = 0;
  word = 0x706970656472ull;
  // The holder: tells the reader it is up, then waits for it to finish.
  pid_t holder = ::fork();
  if (holder == 0) {
    char c = 1;
    (void)!::write(ready[1], &c, 1);
    (void)!::read(done[0], &c, 1);
    ::_exit(0);
  }
  bool works = false;
  if (holder > 0) {
    char c = 0;
    (void)!::read(ready[0], &c, 1);
    pid_t reader = ::fork();
    if (reader == 0) {
      uint64_t got = 0;
      struct iovec local = {&got, sizeof(got)};
      struct iovec remote = {const_cast<uint64_t *>(&word), sizeof(got)};
      ssize_t n = ::process_vm_readv(holder, &local, 1, &remote, 1, 0);
      ::_exit(n == ssize_t(sizeof(got)) && got == word ? 0 : 1);
    }
    int status = 0;
    if (reader > 0 && ::waitpid(reader, &status, 0) == reader)
      works = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    (void)!::write(done[1], &c, 1);
    ::waitpid(holder, &status, 0);
  }
  for (int fd : {ready[0], ready[1], done[0], done[1]})
    ::close(fd);
  return works;
}

/// True when this process was started by mpirun (Open MPI).
bool underMpirun() {
  const char *size = std::getenv("OMPI_COMM_WORLD_SIZE");
  return size && *size;
}

} // namespace

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

/// --measure-link FILE (LinkMeasure.h): ranks 0 and 1 of the threads
/// transport (the default; --ranks K threads with --transport threads) or
/// of mpirun's processes (--ranks K, or started by mpirun); rank 0 writes
/// FILE.
int measureLink(const Options &options) {
  // As for training: under mpirun MPI unless --transport threads.
  std::string kind = !options.transport.empty() ? options.transport
                     : underMpirun() || !options.ranks.empty() ? "mpi"
                                                               : "threads";
  if (kind == "nccl")
    return error("--measure-link: measures the threads or the mpi transport, "
                 "not nccl");
  auto write = [&](const LinkFit &fit, size_t ranks) {
    std::string message;
    if (!writeFileAtomically(options.measureLink,
                             linkProfileJson(fit, kind, ranks), message))
      return error(message);
    std::printf("link (%s transport, ranks 0 and 1): %.1f us per message, "
                "%.2f GB/s; wrote %s\n",
                kind.c_str(), fit.latency * 1e6, fit.bandwidth / 1e9,
                options.measureLink.c_str());
    return 0;
  };
  if (underMpirun() && kind != "threads") {
    pd_transport *transport = nullptr;
    if (pd_transport_create_mpi(&transport) != PD_OK)
      return error(pd_last_error());
    if (options.timeoutSeconds > 0)
      pd_transport_set_timeout(transport, options.timeoutSeconds);
    size_t rank = pd_transport_rank(transport);
    size_t size = pd_transport_size(transport);
    LinkFit fit;
    std::string message = measureLinkOnRank(transport, rank, fit);
    if (!message.empty()) {
      if (rank == 0)
        std::fprintf(stderr, "error: %s\n", message.c_str());
      std::fflush(stderr);
      pd_transport_abort(transport, message.c_str());
      std::_Exit(1);
    }
    int status = rank == 0 ? write(fit, size) : 0;
    pd_transport_destroy(transport);
    return status;
  }
  if (kind == "threads") {
    size_t ranks = options.numRanks ? options.numRanks : 2;
    std::vector<pd_transport *> transports(ranks);
    if (pd_transport_create_threads(ranks, transports.data()) != PD_OK)
      return error(pd_last_error());
    if (options.timeoutSeconds > 0)
      for (pd_transport *transport : transports)
        pd_transport_set_timeout(transport, options.timeoutSeconds);
    LinkFit fit;
    std::vector<pipedream::RankOutcome> outcomes =
        pipedream::runRanksOnThreads(transports, [&](size_t r) {
          LinkFit mine;
          pipedream::RankOutcome outcome;
          outcome.error = measureLinkOnRank(transports[r], r, mine);
          if (r == 0)
            fit = mine;
          return outcome;
        });
    for (pd_transport *transport : transports)
      pd_transport_destroy(transport);
    for (const pipedream::RankOutcome &outcome : outcomes)
      if (!outcome.error.empty())
        return error(outcome.error);
    return write(fit, ranks);
  }
  if (options.ranks.empty())
    return error("--transport mpi: give --ranks K (this program then runs "
                 "under mpirun) or start it with mpirun -np K");
  return launchMpirun(options, options.numRanks);
}

} // namespace tooling
} // namespace pipedream
