//===- pipedream-opt.cpp - pass driver for pipedream ----------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// MlirOptMain with every upstream dialect and pass plus pipedream's: the
// tool for pass development and lit tests.
//
//===----------------------------------------------------------------------===//

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

#include "pipedream/InitAllDialects.h"
#include "pipedream/InitAllPasses.h"
#include "pipedream/Target/GPU/CUDACodegen.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  pipedream::registerAllPasses();

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  pipedream::registerAllDialects(registry);
  // GPU dialect translations and the NVVM target (gpu-module-to-binary).
  pipedream::cuda::registerCUDACodegenDialects(registry);

  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "pipedream optimizer driver\n", registry));
}
