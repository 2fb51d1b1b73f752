//===- NNGradientsElementwise.cpp - derivative rules ------------------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// See NNGradients.h for the contract every rule follows.
//
//===----------------------------------------------------------------------===//

#include "NNGradients.h"

using namespace mlir;

namespace pipedream::nn::detail {

void attachElementwiseGradientModels(MLIRContext *context) {
  (void)context;
}

} // namespace pipedream::nn::detail
