//===- CommandLine.h - compile options bound to flags -----------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The command-line flags of CompileOptions (docs/CLI.md), declared once:
// pipedream-compile constructs CompileFlags, pipedream-profile the code
// generation subset CodegenFlags and the import subset ImportFlags,
// pipedream-translate ImportFlags, before llvm::cl parses the command line.
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
#include <string>
#include <vector>

namespace pipedream {

struct ImportOptions;

/// --input-shape and --no-onnx-checker.
class ImportFlags {
public:
  explicit ImportFlags(llvm::cl::OptionCategory &category);
  ~ImportFlags();
  /// The --input-shape values, as given.
  std::vector<std::string> inputShapes() const;
  /// False with --no-onnx-checker.
  bool runChecker() const;
  /// Sets `options`' checker and input shapes. Fails with one error on
  /// `context` (parseInputShapeOption's) for a malformed --input-shape.
  mlir::LogicalResult read(mlir::MLIRContext &context,
                           ImportOptions &options) const;

private:
  struct Flags;
  std::unique_ptr<Flags> flags;
};

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
  ImportFlags importFlags;
  struct Flags;
  std::unique_ptr<Flags> flags;
};

/// The compile options of `arguments`, parsed by pipedream-compile's own
/// flags (CompileFlags, so the same names, types, defaults and "not given"
/// rules): `--stages=2`, `-o=DIR`, `-O1`, the model as a positional
/// argument. For in-process front ends without a command line (the Python
/// module). Fails with cl's one-line message (without the program name),
/// an error diagnostic on `context` at an unknown location.
/// Thread-safe; it resets the process's LLVM command-line options.
mlir::FailureOr<CompileOptions>
parseCompileArguments(mlir::MLIRContext *context,
                      llvm::ArrayRef<std::string> arguments);

/// True when `name` (without dashes) is one of CompileFlags' flags.
bool isCompileFlag(llvm::StringRef name);

} // namespace pipedream

#endif // PIPEDREAM_PIPELINES_COMMANDLINE_H
