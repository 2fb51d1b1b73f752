//===- FuzzCheck.h - shared checks of the fuzz targets ----------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// What every parser promises on bad input (docs/Fuzzing.md): a non-empty,
// one-line error, starting with the file name where the parser is given
// one. A target that sees a broken promise aborts, which libFuzzer reports
// as a crash and the replay test (ReplayMain.cpp) as a failure.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_FUZZ_FUZZCHECK_H
#define PIPEDREAM_FUZZ_FUZZCHECK_H

#include <cstdio>
#include <cstdlib>
#include <string>

namespace pipedream {
namespace fuzz {

[[noreturn]] inline void fatal(const char *what, const std::string &detail) {
  std::fprintf(stderr, "fuzz check failed: %s: %s\n", what, detail.c_str());
  std::abort();
}

/// `error` is a non-empty single line that starts with `source` (when not
/// empty).
inline void checkError(const std::string &error, const std::string &source) {
  if (error.empty())
    fatal("empty error message", "");
  if (error.find('\n') != std::string::npos)
    fatal("error message is not one line", error);
  if (!source.empty() && error.compare(0, source.size(), source) != 0)
    fatal("error message does not start with the file name", error);
}

} // namespace fuzz
} // namespace pipedream

#endif // PIPEDREAM_FUZZ_FUZZCHECK_H
