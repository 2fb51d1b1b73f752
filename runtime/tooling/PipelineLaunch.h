//===- PipelineLaunch.h - pipedream-run on pipeline bundles ---------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Every rank of a pipeline bundle: as threads of this process, as mpirun's
// processes (--ranks K re-executes the tool under mpirun), or torchrun's.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_TOOLING_PIPELINE_LAUNCH_H
#define PIPEDREAM_TOOLING_PIPELINE_LAUNCH_H

#include "Options.h"

#include <cstddef>

namespace pipedream {
namespace tooling {

/// --data on a pipeline bundle: sets `code` (the exit status) and returns
/// true; returns false for any other bundle (trained by `train`).
bool trainPipeline(const Options &options, int &code);

/// Threads of the CPU kernels per rank (pipedream/threads.h): --threads N,
/// else $PIPEDREAM_NUM_THREADS (program.so reads it), else this process's
/// CPUs divided among the `ranksHere` ranks that share them (the pipeline's
/// ranks for the threads transport; mpirun's or torchrun's local ranks
/// sharing one affinity mask when not bound).
void applyThreads(const Options &options, size_t ranksHere);

/// --measure-link FILE: the link between two ranks of the transport a
/// pipeline would use (LinkMeasure.h), written by rank 0 as a profile that
/// `pipedream-compile --cost-model FILE` reads. Returns the exit status.
int measureLink(const Options &options);

} // namespace tooling
} // namespace pipedream

#endif // PIPEDREAM_TOOLING_PIPELINE_LAUNCH_H
