//===- InitAllPasses.h - register pipedream passes --------------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_INITALLPASSES_H
#define PIPEDREAM_INITALLPASSES_H

#include "pipedream/Conversion/Passes.h"
#include "pipedream/Dialect/NN/Transforms/Passes.h"
#include "pipedream/Dialect/Pipe/Transforms/Passes.h"
#include "pipedream/Target/CPU/CPUCodegen.h"
#include "pipedream/Target/GPU/CUDACodegen.h"

namespace pipedream {

/// Registers every pipedream pass with the global pass registry (for
/// `pipedream-opt` and textual pipelines).
inline void registerAllPasses() {
  registerConversionPasses();
  nn::registerNNTransformsPasses();
  pipe::registerPipeTransformsPasses();
  cpu::registerCPUCodegenPasses();
  cuda::registerCUDACodegenPasses();
}

} // namespace pipedream

#endif // PIPEDREAM_INITALLPASSES_H
