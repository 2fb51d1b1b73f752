//===- Options.h - pipedream-run flags ------------------------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The command line of pipedream-run (runtime/tooling, the library behind
// the tool): every flag, parsed and checked once.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_TOOLING_OPTIONS_H
#define PIPEDREAM_TOOLING_OPTIONS_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace pipedream {
namespace tooling {

/// Flags taking a value, and where it goes.
struct Options {
  std::string bundleDir;
  std::string inputs;
  std::string outputs;
  std::string data;
  std::string saveOnnx;
  std::string lossLog;
  /// --eval-data EVAL.npz [--eval-every S]: the eval-mode loss of the
  /// weights on EVAL.npz every S steps (0: after the last step only).
  std::string evalData;
  std::string evalEvery;
  uint64_t evalSteps = 0;
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
  /// --measure-link FILE: no bundle; the transport's link (LinkMeasure.h).
  std::string measureLink;
  /// argv of this process, for re-executing it under mpirun.
  std::vector<std::string> arguments;
};

/// The --help text.
const char *usage();

/// Parses argv; returns false with `message` set on a usage error. Sets
/// `help` for -h/--help.
bool parseArguments(int argc, char **argv, Options &options, bool &help,
                    std::string &message);

/// Prints `error: MESSAGE` on stderr; returns the exit status 1.
int error(const std::string &message);

} // namespace tooling
} // namespace pipedream

#endif // PIPEDREAM_TOOLING_OPTIONS_H
