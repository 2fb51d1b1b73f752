//===- TestHooks.cpp - pipedream-run-test, the tool with test hooks -------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// pipedream-run-test: pipedream-run with the fault-injection hooks the lit
// tests drive through the environment (never installed):
//   $PIPEDREAM_TEST_KILL_AFTER_STEP = k   SIGKILLs the process (every rank
//       of a threads run) once step k (from 1) and its checkpoint are
//       done, as `kill -9` would;
//   $PIPEDREAM_TEST_CRASH_RANK = r, $PIPEDREAM_TEST_HANG_RANK = r (with
//       $PIPEDREAM_TEST_CRASH_STEP / _HANG_STEP = s, default 2)  makes
//       pipeline rank r abort or hang at the start of step s;
//   $PIPEDREAM_TEST_CHECKPOINT_KILL = file|manifest with
//       $PIPEDREAM_TEST_CHECKPOINT_KILL_STEP = S (and, for `file`,
//       $PIPEDREAM_TEST_CHECKPOINT_KILL_RANK = r, default 0)  SIGKILLs the
//       process once that temporary checkpoint file is durable but not yet
//       renamed (the runtime's checkpoint write hook, runtime/lib/
//       Checkpoint.h).
//
//===----------------------------------------------------------------------===//

#include "Tool.h"

#include "Checkpoint.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace {

/// $PIPEDREAM_TEST_<what>_RANK = r (and optionally $PIPEDREAM_TEST_<what>
/// _STEP = s, default 2): whether it applies to (rank, step).
bool applies(const char *what, size_t rank, uint64_t step) {
  std::string prefix = std::string("PIPEDREAM_TEST_") + what;
  const char *r = std::getenv((prefix + "_RANK").c_str());
  if (!r || !*r || std::strtoull(r, nullptr, 10) != rank)
    return false;
  const char *s = std::getenv((prefix + "_STEP").c_str());
  uint64_t at = s && *s ? std::strtoull(s, nullptr, 10) : 2;
  return step == at;
}

std::string beforeStep(size_t rank, uint64_t step,
                       const std::atomic<bool> &failed) {
  auto say = [&](const char *hook, const char *doing) {
    std::fprintf(stderr, "rank %zu: PIPEDREAM_TEST_%s_RANK: %s at step %llu "
                 "(test hook)\n",
                 rank, hook, doing, static_cast<unsigned long long>(step));
    std::fflush(stderr);
  };
  if (applies("CRASH", rank, step)) {
    say("CRASH", "aborting");
    std::abort();
  }
  if (applies("HANG", rank, step)) {
    say("HANG", "hanging");
    while (!failed)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return "PIPEDREAM_TEST_HANG_RANK: stopped hanging";
  }
  return "";
}

void afterStep(size_t rank, uint64_t step) {
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

/// The checkpoint writer's hook: see the file comment.
void checkpointWrite(const char *what, uint64_t step, size_t rank) {
  const char *kind = std::getenv("PIPEDREAM_TEST_CHECKPOINT_KILL");
  if (!kind || std::strcmp(kind, what) != 0)
    return;
  const char *at = std::getenv("PIPEDREAM_TEST_CHECKPOINT_KILL_STEP");
  if (!at || std::strtoull(at, nullptr, 10) != step)
    return;
  const char *r = std::getenv("PIPEDREAM_TEST_CHECKPOINT_KILL_RANK");
  if (std::strcmp(what, "file") == 0 &&
      (r && *r ? std::strtoull(r, nullptr, 10) : 0) != rank)
    return;
  std::fprintf(stderr,
               "PIPEDREAM_TEST_CHECKPOINT_KILL: killed while writing the "
               "%s of step %llu (test hook)\n",
               what, static_cast<unsigned long long>(step));
  std::fflush(stderr);
  std::raise(SIGKILL);
}

} // namespace

int main(int argc, char **argv) {
  pipedream::tooling::Hooks hooks;
  hooks.beforeStep = beforeStep;
  hooks.afterStep = afterStep;
  pipedream::runtime::setCheckpointWriteHook(checkpointWrite);
  return pipedream::tooling::runMain(argc, argv, std::move(hooks));
}
