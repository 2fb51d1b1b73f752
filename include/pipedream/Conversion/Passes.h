//===- Passes.h - pipedream conversion passes -------------------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_CONVERSION_PASSES_H
#define PIPEDREAM_CONVERSION_PASSES_H

#include "pipedream/Conversion/NNToLinalg/NNToLinalg.h"

#include "mlir/Pass/Pass.h"

namespace pipedream {

#define GEN_PASS_REGISTRATION
#include "pipedream/Conversion/Passes.h.inc"

} // namespace pipedream

#endif // PIPEDREAM_CONVERSION_PASSES_H
