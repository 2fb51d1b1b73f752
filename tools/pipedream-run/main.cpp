//===- main.cpp - pipedream-run: run a compiled bundle --------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// `pipedream-run OUT_DIR --inputs IN.npz [--outputs OUT.npz]`
// `pipedream-run OUT_DIR --data DATA.npz [--steps N] ...`
//
// The tool is the runtime's tooling library (runtime/tooling: flags,
// inference, the training loops, the pipeline launch, the trace writer)
// with no test hooks; see runtime/tooling/Tool.cpp and docs/Runtime.md.
//
//===----------------------------------------------------------------------===//

#include "Tool.h"

int main(int argc, char **argv) {
  return pipedream::tooling::runMain(argc, argv);
}
