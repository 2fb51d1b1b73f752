//===- CommandLine.h - compile options bound to flags -----------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The command-line flags of CompileOptions (docs/CLI.md), declared once:
// pipedream-compile constructs CompileFlags, pipedream-profile the code
// generation subset CodegenFlags, before llvm::cl parses the command line.
// The flags are registered with LLVM's global option registry when the
// object is constructed (never at static initialization, so that tools
// linking this library without wanting these flags, such as pipedream-opt,
// do not get them).
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_PIPELINES_COMMANDLINE_H
#define PIPEDREAM_PIPELINES_COMMANDLINE_H

#include "pipedream/Pipelines/Options.h"

#include "llvm/Support/CommandLine.h"

#include <memory>

namespace pipedream {

/// --target-cpu, -O, --gemm and --no-run-time-checks.
class CodegenFlags {
public:
  explicit CodegenFlags(llvm::cl::OptionCategory &category);
  ~CodegenFlags();
  /// Copies the flags' values into `options`.
  // NOTE: the in-process linker (lld) resets every LLVM command-line option
  // to its default: read the flags before anything is compiled.
  void read(CompileOptions &options) const;

private:
  struct Flags;
  std::unique_ptr<Flags> flags;
};

/// Every flag of pipedream-compile that fills CompileOptions.
class CompileFlags {
public:
  explicit CompileFlags(llvm::cl::OptionCategory &category);
  ~CompileFlags();
  /// The options the command line gave (see CodegenFlags::read's note).
  CompileOptions read() const;

private:
  CodegenFlags codegen;
  struct Flags;
  std::unique_ptr<Flags> flags;
};

} // namespace pipedream

#endif // PIPEDREAM_PIPELINES_COMMANDLINE_H
