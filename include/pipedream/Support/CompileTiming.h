//===- CompileTiming.h - per-phase compile times ----------------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// `pipedream-compile --time-phases`: the wall and CPU time of each phase of a
// compilation (import, autodiff, partition, schedule, lowering, LLVM opt,
// codegen, link...) with MLIR's pass timing nested under the phases that run
// pass managers. One CompileTimingSession is active per process at a time
// (the driver opens it in compile()); phases opened while none is active, or
// from another thread than the session's, cost nothing and record nothing.
//
//   pipedream::CompileTimingSession session(enabled, llvm::errs());
//   { pipedream::TimedPhase phase("import"); ... }
//   pipedream::attachPassTiming(pm);   // MLIR pass timing under the phase
//
// The report goes to the session's stream when the session ends: a table of
// the phases (wall seconds, process CPU seconds: user + system over all
// threads, so parallel code generation shows as CPU > wall), then MLIR's
// timing tree.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_SUPPORT_COMPILETIMING_H
#define PIPEDREAM_SUPPORT_COMPILETIMING_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>

namespace mlir {
class PassManager;
} // namespace mlir

namespace pipedream {

/// Enables phase timing for its lifetime and prints the report at its end.
class CompileTimingSession {
public:
  /// A disabled session records nothing and prints nothing.
  CompileTimingSession(bool enabled, llvm::raw_ostream &os);
  ~CompileTimingSession();
  CompileTimingSession(const CompileTimingSession &) = delete;
  CompileTimingSession &operator=(const CompileTimingSession &) = delete;

  struct Impl;

private:
  std::unique_ptr<Impl> impl;
};

/// Times the enclosing scope as the phase `name`, nested in the phase open
/// around it (if any).
class TimedPhase {
public:
  explicit TimedPhase(llvm::StringRef name);
  ~TimedPhase();
  TimedPhase(const TimedPhase &) = delete;
  TimedPhase &operator=(const TimedPhase &) = delete;

private:
  bool active = false;
};

/// True while a session is enabled (for callers that would do extra work to
/// describe a phase).
bool isCompileTimingEnabled();

/// Nests `pm`'s pass timing under the innermost open phase. No-op without
/// an enabled session. NOTE: `pm` must run before that phase closes.
void attachPassTiming(mlir::PassManager &pm);

} // namespace pipedream

#endif // PIPEDREAM_SUPPORT_COMPILETIMING_H
