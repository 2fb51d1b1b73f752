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
//       pipeline rank r abort or hang at the start of step s.
// (The checkpoint writer's own hook, $PIPEDREAM_TEST_CHECKPOINT_KILL, is
// in the runtime library: runtime/lib/Checkpoint.cpp.)
//
//===----------------------------------------------------------------------===//

#include "Tool.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
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
  if (applies("CRASH", rank, step)) {
    std::fprintf(stderr,
                 "rank %zu: PIPEDREAM_TEST_CRASH_RANK: aborting at step "
                 "%llu (test hook)\n",
                 rank, static_cast<unsigned long long>(step));
    std::fflush(stderr);
    std::abort();
  }
  if (applies("HANG", rank, step)) {
    std::fprintf(stderr,
                 "rank %zu: PIPEDREAM_TEST_HANG_RANK: hanging at step %llu "
                 "(test hook)\n",
                 rank, static_cast<unsigned long long>(step));
    std::fflush(stderr);
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

} // namespace

int main(int argc, char **argv) {
  pipedream::tooling::Hooks hooks;
  hooks.beforeStep = beforeStep;
  hooks.afterStep = afterStep;
  return pipedream::tooling::runMain(argc, argv, std::move(hooks));
}
