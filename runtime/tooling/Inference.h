//===- Inference.h - pipedream-run --inputs -------------------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Inference: the bundle's inference function on the arrays of --inputs.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_TOOLING_INFERENCE_H
#define PIPEDREAM_TOOLING_INFERENCE_H

#include "Options.h"

#include "pipedream/runtime.h"

namespace pipedream {
namespace tooling {

/// Runs the inference function of `bundle` (`main`, else the only one of
/// kind `inference`) on --inputs and writes --outputs (or lists them).
/// Returns the exit status.
int runInference(const Options &options, pd_bundle *bundle);

} // namespace tooling
} // namespace pipedream

#endif // PIPEDREAM_TOOLING_INFERENCE_H
