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
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

namespace pipedream::cpu {
#define GEN_PASS_DEF_LOWERCONVTOGEMMPASS
#include "pipedream/Target/CPU/Passes.h.inc"
} // namespace pipedream::cpu

using namespace mlir;

namespace {

/// An NCHW x FCHW convolution (all operands of one float type) as an
/// im2col over loops n, c, kh, kw, oh, ow, whose input indices are affine
/// in them (oh * sh + kh * dh, ow * sw + kw * dw), collapsed to
/// [N, C*KH*KW, OH*OW], and the contraction [F, C*KH*KW] x that, expanded
/// back to [N, F, OH, OW]. Upstream's rewriteInIm2Col makes the same
/// contraction but loops its im2col over the collapsed OH*OW, so every
/// element's input index took a division and a remainder and the copy
/// ran element by element (a small CNN's forward spent 9% of its step in
/// it); here the innermost loop reads a row of the input with stride sw.
/// Failure (nothing changed) for mixed element types.
FailureOr<Value> rewriteNchwFchw(RewriterBase &rewriter,
                                 linalg::Conv2DNchwFchwOp conv) {
  Value input = conv.getInputs()[0], filter = conv.getInputs()[1],
        init = conv.getOutputs()[0];
  auto inputType = cast<RankedTensorType>(input.getType());
  auto filterType = cast<RankedTensorType>(filter.getType());
  auto outType = cast<RankedTensorType>(init.getType());
  Type element = outType.getElementType();
  if (!isa<FloatType>(element) || inputType.getElementType() != element ||
      filterType.getElementType() != element || !inputType.hasStaticShape() ||
      !filterType.hasStaticShape() || !outType.hasStaticShape())
    return failure();
  SmallVector<int64_t> strides(conv.getStrides().getValues<int64_t>());
  SmallVector<int64_t> dilations(conv.getDilations().getValues<int64_t>());
  int64_t n = outType.getDimSize(0), f = outType.getDimSize(1),
          oh = outType.getDimSize(2), ow = outType.getDimSize(3);
  int64_t c = filterType.getDimSize(1), kh = filterType.getDimSize(2),
          kw = filterType.getDimSize(3);
  Location loc = conv.getLoc();
  MLIRContext *ctx = rewriter.getContext();
  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };

  // cols[n, c, kh, kw, oh, ow] = x[n, c, oh * sh + kh * dh, ow * sw + kw * dw]
  auto colType = RankedTensorType::get({n, c, kh, kw, oh, ow}, element);
  AffineMap read =
      AffineMap::get(6, 0,
                     {d(0), d(1), d(4) * strides[0] + d(2) * dilations[0],
                      d(5) * strides[1] + d(3) * dilations[1]},
                     ctx);
  Value empty =
      tensor::EmptyOp::create(rewriter, loc, colType.getShape(), element);
  auto im2col = linalg::GenericOp::create(
      rewriter, loc, TypeRange{colType}, ValueRange{input}, ValueRange{empty},
      ArrayRef<AffineMap>{read, rewriter.getMultiDimIdentityMap(6)},
      SmallVector<utils::IteratorType>(6, utils::IteratorType::parallel),
      [](OpBuilder &b, Location l, ValueRange args) {
        linalg::YieldOp::create(b, l, args[0]);
      });
  Value cols = tensor::CollapseShapeOp::create(
      rewriter, loc, im2col.getResult(0),
      ArrayRef<ReassociationIndices>{{0}, {1, 2, 3}, {4, 5}});
  Value weights = tensor::CollapseShapeOp::create(
      rewriter, loc, filter, ArrayRef<ReassociationIndices>{{0}, {1, 2, 3}});
  SmallVector<ReassociationIndices> outGroups{{0}, {1}, {2, 3}};
  Value out = tensor::CollapseShapeOp::create(rewriter, loc, init, outGroups);

  // out[n, f, p] += weights[f, k] * cols[n, k, p]; loops n, f, p | k.
  auto gemm = linalg::GenericOp::create(
      rewriter, loc, TypeRange{out.getType()}, ValueRange{weights, cols},
      ValueRange{out},
      ArrayRef<AffineMap>{AffineMap::get(4, 0, {d(1), d(3)}, ctx),
                          AffineMap::get(4, 0, {d(0), d(3), d(2)}, ctx),
                          AffineMap::get(4, 0, {d(0), d(1), d(2)}, ctx)},
      {utils::IteratorType::parallel, utils::IteratorType::parallel,
       utils::IteratorType::parallel, utils::IteratorType::reduction},
      [](OpBuilder &b, Location l, ValueRange args) {
        Value product = arith::MulFOp::create(b, l, args[0], args[1]);
        linalg::YieldOp::create(
            b, l, Value(arith::AddFOp::create(b, l, args[2], product)));
      });
  return Value(tensor::ExpandShapeOp::create(rewriter, loc, outType,
                                             gemm.getResult(0), outGroups));
}

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
          .Case<linalg::Conv2DNchwFchwOp>(
              [&](linalg::Conv2DNchwFchwOp conv) -> LogicalResult {
                FailureOr<Value> result = rewriteNchwFchw(rewriter, conv);
                if (succeeded(result)) {
                  rewriter.replaceOp(conv, *result);
                  return success();
                }
                return failed(linalg::rewriteInIm2Col(rewriter, conv))
                           ? failure()
                           : success();
              })
          .Case<linalg::Conv2DNhwcHwcfOp, linalg::Conv2DNhwcFhwcOp>(
              [&](auto conv) -> LogicalResult {
                auto result = linalg::rewriteInIm2Col(rewriter, conv);
                return failed(result) ? failure() : success();
              })
          .Default([](Operation *) { return failure(); });
    }
  }
};

} // namespace
