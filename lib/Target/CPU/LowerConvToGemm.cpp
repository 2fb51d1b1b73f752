//===- LowerConvToGemm.cpp - convolutions as im2col + contraction ---------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Rewrites 2-D convolutions on tensors into an im2col gather followed by a
// matmul-like contraction (upstream `linalg::rewriteInIm2Col`), so the
// convolution's arithmetic reaches BLAS after bufferization
// (cpu-lower-gemm-to-blas). The im2col buffer costs KH*KW times the input;
// for the convolution sizes of the models we compile that is far cheaper
// than running the direct convolution as scalar loops.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Target/CPU/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"

namespace pipedream::cpu {
#define GEN_PASS_DEF_LOWERCONVTOGEMMPASS
#include "pipedream/Target/CPU/Passes.h.inc"
} // namespace pipedream::cpu

using namespace mlir;

namespace {

struct LowerConvToGemmPass
    : pipedream::cpu::impl::LowerConvToGemmPassBase<LowerConvToGemmPass> {
  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> convs;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (op.hasPureTensorSemantics() &&
          isa<linalg::Conv2DNchwFchwOp, linalg::Conv2DNhwcHwcfOp,
              linalg::Conv2DNhwcFhwcOp>(op.getOperation()))
        convs.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : convs) {
      rewriter.setInsertionPoint(op);
      // A convolution im2col does not handle stays a convolution (and
      // becomes loops): not an error.
      (void)llvm::TypeSwitch<Operation *, LogicalResult>(op.getOperation())
          .Case<linalg::Conv2DNchwFchwOp, linalg::Conv2DNhwcHwcfOp,
                linalg::Conv2DNhwcFhwcOp>([&](auto conv) -> LogicalResult {
            auto result = linalg::rewriteInIm2Col(rewriter, conv);
            return failed(result) ? failure() : success();
          })
          .Default([](Operation *) { return failure(); });
    }
  }
};

} // namespace
