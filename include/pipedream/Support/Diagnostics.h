//===- Diagnostics.h - the first error as a one-line message ----*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Library code reports errors as MLIR diagnostics at a location and returns
// failure; the tools print one line, `error: MESSAGE`. FirstErrorHandler is
// the one place that turns the first error diagnostic of a context into
// that line (later errors are usually fallout of the first): the driver
// (pipedream-compile, pipedream-profile, the Python module) installs one per
// compile.
//
// NOTE: an error whose message already names what it is about (a file, a
// flag, a function) is emitted at an unknown location (emitError(context)
// below) and prints as the message alone; one at an op's location prints
// as "LOCATION: message". Because only the first error counts, a caller may
// add a fallback error after a failure ("scheduling failed"): it is the
// message only when nothing more precise was reported.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_SUPPORT_DIAGNOSTICS_H
#define PIPEDREAM_SUPPORT_DIAGNOSTICS_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/Twine.h"

#include <mutex>
#include <string>

namespace pipedream {

/// The first line of `text` (the tools' errors are one line).
std::string firstLine(const llvm::Twine &text);

/// Prints `error: ` and the first line of `message` on stderr; returns the
/// tools' exit status for an error, 1.
int printError(const llvm::Twine &message);

/// An error diagnostic at an unknown location: the message alone is the
/// user's line. `return emitError(context) << "...";` converts to failure.
mlir::InFlightDiagnostic emitError(mlir::MLIRContext *context);

/// While alive, captures the first error diagnostic reported to a context
/// and swallows the others (notes, warnings and later errors). Safe when
/// diagnostics come from worker threads (the verifier's).
class FirstErrorHandler {
public:
  /// How the message starts: "LOCATION: message" (the message alone for an
  /// unknown location) or the message alone (for passes whose messages
  /// already name what they refer to).
  enum class Format { WithLocation, MessageOnly };

  explicit FirstErrorHandler(mlir::MLIRContext *context,
                             Format format = Format::WithLocation);
  FirstErrorHandler(const FirstErrorHandler &) = delete;
  FirstErrorHandler &operator=(const FirstErrorHandler &) = delete;

  /// Whether an error was reported.
  bool hasError() const;
  /// The first error, one line; `fallback` when none was reported.
  std::string orElse(const llvm::Twine &fallback) const;
  /// Sets how the next errors are formatted; returns the previous format
  /// (a phase whose passes name what they refer to, see ScopedFormat).
  Format setFormat(Format newFormat);
  /// Forgets the captured error: the next one is captured (a tool that
  /// goes on after a failure it reported as a warning).
  void clear();

private:
  mutable std::mutex mutex;
  std::string text;
  bool captured = false;
  Format format;
  mlir::ScopedDiagnosticHandler handler;
};

/// While alive, `handler` formats errors as `format`.
class ScopedErrorFormat {
public:
  ScopedErrorFormat(FirstErrorHandler &handler,
                    FirstErrorHandler::Format format)
      : handler(handler), previous(handler.setFormat(format)) {}
  ~ScopedErrorFormat() { handler.setFormat(previous); }
  ScopedErrorFormat(const ScopedErrorFormat &) = delete;
  ScopedErrorFormat &operator=(const ScopedErrorFormat &) = delete;

private:
  FirstErrorHandler &handler;
  FirstErrorHandler::Format previous;
};

} // namespace pipedream

#endif // PIPEDREAM_SUPPORT_DIAGNOSTICS_H
