//===- Driver.h - ONNX model to a bundle, as a library ----------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The compiler driver behind `pipedream-compile` (tools/pipedream-compile is
// a thin command-line front end over it) and the Python package (python/):
// import, training program, partitioning, scheduling, code generation and
// the bundle of docs/Bundle.md. Options are a plain struct; errors are the
// one-line messages the CLI prints after "error: ".
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_DRIVER_DRIVER_H
#define PIPEDREAM_DRIVER_DRIVER_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pipedream {

/// Code generators `--target` selects.
enum class CompileTarget { CPU, CUDA };

/// Parses a `--target` value; nullopt for a target that is not built.
std::optional<CompileTarget> parseCompileTarget(llvm::StringRef name);

/// Everything `pipedream-compile` reads from its command line. An unset
/// std::optional means "not given" (several defaults depend on other flags
/// and some flags are refused in some modes only when given).
struct CompileOptions {
  // Input and output.
  /// MODEL.onnx, or a `.mlir` file with an nn- or linalg-level module.
  std::string input;
  /// The bundle directory. With an IR phase (`emit` other than `bundle`) the
  /// driver does not write it: the IR comes back in CompileResult::ir.
  std::string output;
  /// bundle (default), nn, train, linalg, llvm-dialect, llvm, partitioned or
  /// scheduled.
  std::string emit = "bundle";
  /// Forward only, one rank.
  bool inference = false;
  /// `NAME=DxD...` fixes of graph input shapes.
  std::vector<std::string> inputShapes;
  /// Runs the ONNX checker on the model.
  bool runONNXChecker = true;

  // Code generation.
  std::string target = "cpu";
  std::string targetCPU = "native";
  unsigned optLevel = 3;
  std::string gemm = "auto";
  /// --no-run-time-checks clears it (CPUCodegenOptions::runTimeChecks).
  bool runTimeChecks = true;
  /// --target cuda: GPU architecture (default sm_90) and storage type of
  /// floating-point tensors (f32; bf16 not implemented yet). Unset when not
  /// given (refused with --target cpu).
  std::optional<std::string> gpuArch;
  std::optional<std::string> dtype;

  // Training (docs/CLI.md; docs/Bundle.md "Training bundles").
  std::optional<std::string> loss;
  std::optional<std::string> labelsName;  ///< default "labels"
  std::optional<int64_t> microbatches;    ///< default: 1, or K for pipelines
  std::optional<int64_t> batchSize;
  std::optional<std::string> optimizer;   ///< default "sgd"
  std::optional<double> lr;               ///< default 0.01 (sgd), 0.001 (adam)
  std::optional<double> momentum;
  std::optional<bool> nesterov;
  std::optional<double> weightDecay;      ///< default 0
  std::optional<double> beta1;            ///< default 0.9
  std::optional<double> beta2;            ///< default 0.999
  std::optional<double> eps;              ///< default 1e-8
  /// Weights to keep fixed / to train whatever the trainable rule says
  /// (names or regular expressions, entries may be comma-separated;
  /// docs/Training.md "Trainable and frozen weights").
  std::vector<std::string> freeze, train;

  // Pipelines (docs/Pipe.md).
  std::optional<int64_t> stages;          ///< K, default 1
  int64_t virtualStages = 1;              ///< V
  std::string partition = "auto";
  std::vector<std::string> splitAfter;
  std::string costModel = "analytical";
  std::string device = "cpu";
  std::string memoryLimit;
  std::optional<std::string> schedule;    ///< default "1f1b"
  /// Renders the human-readable partition/schedule report into
  /// CompileResult::reportText.
  bool report = false;
  /// Writes the JSON report to this file.
  std::string reportJSON;
  /// With `emit` scheduled (or a pipeline bundle): Chrome trace / SVG files.
  std::string trace;
  std::string timeline;
  // --- schedules from and to torch's CSV (issue 17) ---
  /// With `emit` scheduled: run this torch.distributed.pipelining schedule
  /// CSV instead of the generated one (kind and M inferred from the file
  /// unless --schedule / --microbatches are given).
  std::string scheduleCsv;
  /// With `emit` scheduled: write the schedule in torch's CSV format.
  std::string exportScheduleCsv;
  // --- end issue 17 ---

  //===--- Compile time (issue 16; ctime) ---------------------------------===//
  /// --time-phases: print the wall and CPU time of every phase, with MLIR's
  /// pass timing, to stderr (include/pipedream/Support/CompileTiming.h).
  bool timePhases = false;
  /// --codegen-threads: threads for LLVM optimization and code generation
  /// (the module is split); 0 picks the hardware's, 1 compiles one module.
  unsigned codegenThreads = 0;
  /// --outline-kernels=false keeps every loop nest inside its function
  /// (cpu-outline-kernels, lib/Target/CPU/OutlineKernels.cpp).
  bool outlineKernels = true;
  /// --cache-dir: compiled objects by a hash of their LLVM IR; empty: the
  /// default ($PIPEDREAM_CACHE_DIR, else $XDG_CACHE_HOME/pipedream, else
  /// ~/.cache/pipedream). --no-cache or PIPEDREAM_NO_CACHE=1 disables it.
  std::string cacheDir;
  bool noCache = false;
  //===--------------------------------------------------------------------===//
};

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

/// Registers the passes the driver names in textual pipelines (and that
/// --mlir-print-ir-after=PASS may name) and MLIR's pass-manager
/// command-line options, which the driver's pass managers apply (their
/// defaults without a command line). Idempotent; compile() calls it.
void registerDriverPasses();

/// Compiles per `options`. Writes the bundle (and report.json) into
/// `options.output` unless an IR phase was asked for, and the report, trace
/// and timeline files that `options` names.
CompileResult compile(const CompileOptions &options);

} // namespace pipedream

#endif // PIPEDREAM_DRIVER_DRIVER_H
