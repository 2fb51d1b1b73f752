//===- Reduction.cpp - nn reductions to linalg.reduce ---------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// `nn.reduce_{sum,mean,max,min,prod}` become one `linalg.reduce` over `axes`
// into a tensor without them (identity 0, 1 for prod, the lowest value for
// max, the highest for min), then
// (mean) an elementwise division by the reduced element count, then
// (keepdims) a `tensor.expand_shape` putting the unit dimensions back.
//
//===----------------------------------------------------------------------===//

#include "Utils.h"

#include "pipedream/Dialect/NN/IR/NNOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
namespace nn = pipedream::nn;

namespace pipedream::nn_to_linalg {
namespace {

enum class ReduceKind { Sum, Mean, Max, Min, Prod };

template <typename OpTy, ReduceKind kind>
struct ReduceLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = adaptor.getInput();
    auto type = cast<RankedTensorType>(input.getType());
    Type element = type.getElementType();
    bool isFloat = isa<FloatType>(element);
    ArrayRef<int64_t> axes = op.getAxes();
    auto reducedType =
        RankedTensorType::get(dropDims(type.getShape(), axes), element);

    Value identity = kind == ReduceKind::Max
                         ? createLowest(rewriter, loc, element)
                     : kind == ReduceKind::Min
                         ? createHighest(rewriter, loc, element)
                     : kind == ReduceKind::Prod
                         ? createScalar(rewriter, loc, element, 1.0)
                         : createScalar(rewriter, loc, element, 0.0);
    Value init = createFilled(rewriter, loc, reducedType, identity);
    Value result =
        linalg::ReduceOp::create(
            rewriter, loc, ValueRange{input}, ValueRange{init}, axes,
            [&](OpBuilder &b, Location l, ValueRange args) {
              Value r;
              if (kind == ReduceKind::Prod)
                r = createArith<arith::MulFOp, arith::MulIOp>(b, l, args[0],
                                                              args[1]);
              else if (kind == ReduceKind::Min)
                r = createMin(b, l, args[0], args[1]);
              else if (kind == ReduceKind::Max)
                // NaN propagates, as in numpy's max; unsigned integers and
                // bools compare unsigned.
                r = createMax(b, l, args[0], args[1]);
              else
                r = createArith<arith::AddFOp, arith::AddIOp>(b, l, args[0],
                                                              args[1]);
              linalg::YieldOp::create(b, l, r);
            })
            .getResult(0);

    if (kind == ReduceKind::Mean) {
      int64_t count = 1;
      for (int64_t axis : axes)
        count *= type.getDimSize(axis);
      Value countValue = createScalar(rewriter, loc, element, count);
      result = buildElementwise(
          rewriter, loc, reducedType, ValueRange{result},
          [&](OpBuilder &b, Location l, ValueRange args) -> Value {
            if (ordersUnsigned(element))
              return arith::DivUIOp::create(b, l, args[0], countValue);
            return createArith<arith::DivFOp, arith::DivSIOp>(b, l, args[0],
                                                              countValue);
          });
    }
    auto resultType = cast<RankedTensorType>(op.getType());
    rewriter.replaceOp(op,
                       reshapeTo(rewriter, loc, result, resultType.getShape()));
    return success();
  }
};

} // namespace

void populateReductionPatterns(RewritePatternSet &patterns) {
  patterns.add<ReduceLowering<nn::ReduceSumOp, ReduceKind::Sum>,
               ReduceLowering<nn::ReduceMeanOp, ReduceKind::Mean>,
               ReduceLowering<nn::ReduceMaxOp, ReduceKind::Max>,
               ReduceLowering<nn::ReduceMinOp, ReduceKind::Min>,
               ReduceLowering<nn::ReduceProdOp, ReduceKind::Prod>>(
      patterns.getContext());
}

} // namespace pipedream::nn_to_linalg
