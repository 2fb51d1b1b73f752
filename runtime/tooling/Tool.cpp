//===- Tool.cpp - pipedream-run's main --------------------------------------===
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// `pipedream-run OUT_DIR --inputs IN.npz [--outputs OUT.npz]`
// `pipedream-run OUT_DIR --data DATA.npz [--steps N] [--save-onnx T.onnx]
//                [--loss-log LOSS.csv]`
//
// Inference: runs the inference function of a bundle written by
// pipedream-compile (docs/Bundle.md): the function called `main`, or the
// bundle's only function of kind `inference`. Inputs are matched by name
// with the arrays of IN.npz (dtype and shape checked); every output is
// written to OUT.npz (uncompressed, as np.savez does), or summarized on
// stdout without --outputs.
//
// Training: runs N optimizer steps of a training bundle (pd_trainer) on the
// arrays of DATA.npz, step s on samples [s*B, (s+1)*B) modulo the data's
// length; shows progress, optionally logs the losses and writes the model
// back to ONNX with the trained weights.
//
// Pipeline bundles (a `pipeline` section): every rank runs its program;
// `--transport threads` (the default without --ranks) runs all ranks as
// threads of this process, `--ranks K` re-executes this program under
// `mpirun -np K` (or the user runs `mpirun -np K pipedream-run ...`), each
// process then being the rank MPI gives it. Rank 0 prints progress and
// writes the loss log and the trained model.
//
// Any error is one line `error: ...` on stderr and exit status 1.
// Checkpoints (--checkpoint-dir DIR --checkpoint-every S, --resume) and
// measured Chrome traces (--trace RUN.json) work for both kinds of training
// (docs/Runtime.md).
//
// The pieces: Options (flags), Inference, Training (one rank),
// PipelineLaunch (every rank: threads, mpirun, torchrun), TraceWriter.
//
//===----------------------------------------------------------------------===//

#include "Tool.h"

#include "Hooks.h"
#include "Inference.h"
#include "Options.h"
#include "PipelineLaunch.h"
#include "Training.h"

#include "pipedream/runtime.h"

#include <cstdio>
#include <string>

namespace pipedream {
namespace tooling {

namespace {

int run(const Options &options) {
  if (!options.measureLink.empty())
    return measureLink(options);
  applyThreads(options, 1);
  if (!options.data.empty()) {
    int code = 0;
    if (trainPipeline(options, code))
      return code;
  }
  pd_bundle *bundle = nullptr;
  if (pd_bundle_open(options.bundleDir.c_str(), &bundle) != PD_OK)
    return error(pd_last_error());
  struct Closer {
    pd_bundle *bundle;
    ~Closer() { pd_bundle_close(bundle); }
  } closer{bundle};
  if (!options.data.empty())
    return train(options, bundle);
  return runInference(options, bundle);
}

} // namespace

int runMain(int argc, char **argv, Hooks testHooks) {
  setHooks(std::move(testHooks));
  Options options;
  options.arguments.assign(argv, argv + argc);
  bool help = false;
  std::string message;
  if (!parseArguments(argc, argv, options, help, message))
    return error(message);
  if (help) {
    std::fputs(usage(), stdout);
    std::printf("\nThis build: MPI transport %s.\n",
                pd_transport_mpi_available() ? "available" : "not built");
    return 0;
  }
  return run(options);
}

} // namespace tooling
} // namespace pipedream
