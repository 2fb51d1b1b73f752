//===- NNToLinalg.cpp - the convert-nn-to-linalg pass ---------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Puts the per-family patterns (Elementwise.cpp, Matmul.cpp, Conv.cpp,
// Pooling.cpp, Normalization.cpp, Reduction.cpp, Shape.cpp, Training.cpp)
// together and applies them as a partial conversion with the whole nn
// dialect illegal.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Conversion/NNToLinalg/NNToLinalg.h"

#include "Utils.h"

#include "pipedream/Dialect/NN/IR/NNDialect.h"
#include "pipedream/Dialect/NN/IR/NNOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/DialectConversion.h"

namespace pipedream {
#define GEN_PASS_DEF_CONVERTNNTOLINALGPASS
#include "pipedream/Conversion/Passes.h.inc"
} // namespace pipedream

using namespace mlir;

void pipedream::populateNNToLinalgConversionPatterns(
    RewritePatternSet &patterns, const NNToLinalgOptions &options) {
  nn_to_linalg::populateElementwisePatterns(patterns);
  nn_to_linalg::populateMatmulPatterns(patterns);
  nn_to_linalg::populateConvPatterns(patterns);
  nn_to_linalg::populatePoolingPatterns(patterns);
  nn_to_linalg::populateNormalizationPatterns(patterns, options);
  nn_to_linalg::populateReductionPatterns(patterns);
  nn_to_linalg::populateShapePatterns(patterns);
  nn_to_linalg::populateIndexingPatterns(patterns);
  nn_to_linalg::populateTrainingPatterns(patterns);
  nn_to_linalg::populateMathPatterns(patterns);
}

namespace {

struct ConvertNNToLinalgPass
    : pipedream::impl::ConvertNNToLinalgPassBase<ConvertNNToLinalgPass> {
  using Base::Base;

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    ConversionTarget target(*ctx);
    target.addLegalDialect<arith::ArithDialect, linalg::LinalgDialect,
                           math::MathDialect, scf::SCFDialect,
                           tensor::TensorDialect>();
    // NOTE: every nn op must be lowered; one without a pattern (or whose
    // pattern rejects it) fails the pass with an error at the op.
    target.addIllegalDialect<pipedream::nn::NNDialect>();
    // The run-time checks the lowering creates stay until the code
    // generator turns them into status-record writes.
    target.addLegalOp<pipedream::nn::CheckIndexRangeOp>();

    pipedream::NNToLinalgOptions options;
    options.decomposeSoftmax = decomposeSoftmax;
    RewritePatternSet patterns(ctx);
    pipedream::populateNNToLinalgConversionPatterns(patterns, options);
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      return signalPassFailure();
    // NOTE: the patterns read ONNX's unsigned types (ui8..ui64) to choose
    // the unsigned arith ops; arith takes signless integers only, so the
    // signedness goes once every op is lowered (the function type too:
    // every function runs this pass, so calls and callees agree).
    pipedream::nn_to_linalg::dropIntegerSignedness(getOperation());
  }
};

} // namespace
