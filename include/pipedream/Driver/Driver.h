//===- Driver.h - ONNX model to a bundle, as a library ----------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The compiler driver behind `pipedream-compile` (tools/pipedream-compile is
// a thin command-line front end over it) and the Python package (python/):
// import, training program, partitioning, scheduling, code generation and
// the bundle of docs/Bundle.md. The options are pipedream/Pipelines/Options.h's
// (resolved and checked once, for the single-rank and the pipelined flow
// alike); errors are the one-line messages the CLI prints after "error: ".
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_DRIVER_DRIVER_H
#define PIPEDREAM_DRIVER_DRIVER_H

#include "pipedream/Pipelines/Options.h"

#include "llvm/Support/CommandLine.h"

#include <string>

namespace pipedream {

/// What one compilation produced.
struct CompileResult {
  /// Empty on success, else the one-line message (without "error: ").
  std::string error;
  /// True when `emit` named an IR phase: `ir` holds that phase's text.
  bool hasIR = false;
  std::string ir;
  /// The JSON report of a partitioned/scheduled/pipeline compilation
  /// (`--report-json`), rendered; empty for the other modes.
  std::string reportJSON;
  /// With CompileOptions::report: the partition and schedule report text.
  std::string reportText;

  bool succeeded() const { return error.empty(); }
};

/// Registers the passes the driver's pass managers run (so that
/// --mlir-print-ir-after=PASS may name them) and MLIR's pass-manager
/// command-line options, which the driver's pass managers apply (their
/// defaults without a command line). Idempotent; compile() calls it.
void registerDriverPasses();

/// The command line of a compiler tool (pipedream-compile,
/// pipedream-profile): registers the driver's passes and MLIR's asm-printer,
/// context and pass-manager options, shows only `category` in --help, and
/// parses. A bad flag prints the one-line `error: ...` (without the tool's
/// name) and returns false.
bool parseCompilerCommandLine(int argc, char **argv,
                              llvm::cl::OptionCategory &category,
                              llvm::StringRef overview);

/// Compiles per `options`. Writes the bundle (and report.json) into
/// `options.output` unless an IR phase was asked for, and the report, trace
/// and timeline files that `options` names.
CompileResult compile(const CompileOptions &options);

} // namespace pipedream

#endif // PIPEDREAM_DRIVER_DRIVER_H
