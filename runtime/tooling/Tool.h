//===- Tool.h - pipedream-run's main --------------------------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// pipedream-run as a library call: tools/pipedream-run is this with no
// hooks, the test-only pipedream-run-test this with the test hooks.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_TOOLING_TOOL_H
#define PIPEDREAM_TOOLING_TOOL_H

#include "Hooks.h"

namespace pipedream {
namespace tooling {

/// Parses argv and runs the tool; returns the exit status.
int runMain(int argc, char **argv, Hooks hooks = {});

} // namespace tooling
} // namespace pipedream

#endif // PIPEDREAM_TOOLING_TOOL_H
