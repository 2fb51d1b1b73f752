//===- Matmul.cpp - nn.matmul and nn.gemm to linalg contractions ----------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// `nn.matmul` (numpy matmul) becomes `linalg.matmul` when the rhs is a
// matrix (lhs batch dimensions fold into M, no copy) and
// `linalg.batch_matmul` otherwise (batch dimensions broadcast with
// `linalg.broadcast`, then collapsed into one). 1-D operands are expanded
// to matrices and the promoted dimension collapsed away afterwards.
//
// A lhs that is a `linalg.transpose` of the last two dimensions only (the
// weight gradient x^T dY of the matmul rule) is read through the
// contraction's indexing map instead, so that transpose is never
// materialized: cpu-vectorize-gemm takes A in either layout. A transposed
// rhs (dY W^T) stays materialized: the vectorized kernel needs B row-major,
// and transpose + kernel measured faster than cblas_sgemm with CblasTrans
// (dY [1024 x 1024] x W^T, W [256 x 1024]: 2.9 ms against 4.2 ms).
//
// The weight gradient of a batched matmul with a shared weight,
// `reduce_sum(x^T dY, batch axes)` (x [b..., K, M], dY [b..., K, N]), is one
// GEMM with the batch folded into K: [(b, K), M]^T x [(b, K), N]. Neither the
// per-batch products nor the reduction are materialized.
//
// `nn.gemm` becomes one `linalg.matmul` whose indexing maps express
// `trans_a` / `trans_b`; `c` (broadcast, scaled by beta) is the accumulator
// when alpha is 1, otherwise `alpha * AB + beta * C` is a final generic.
//
//===----------------------------------------------------------------------===//

#include "Utils.h"

#include "pipedream/Dialect/NN/IR/NNOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
namespace nn = pipedream::nn;

namespace pipedream::nn_to_linalg {
namespace {

/// `lhs [M, K] x rhs [K, N]` into a zero-filled `[M, N]` accumulator.
Value buildMatmul(OpBuilder &b, Location loc, Value lhs, Value rhs) {
  auto lhsType = cast<RankedTensorType>(lhs.getType());
  auto rhsType = cast<RankedTensorType>(rhs.getType());
  Type element = lhsType.getElementType();
  auto resultType = RankedTensorType::get(
      {lhsType.getDimSize(0), rhsType.getDimSize(1)}, element);
  Value init =
      createFilled(b, loc, resultType, createScalar(b, loc, element, 0.0));
  return linalg::MatmulOp::create(b, loc, TypeRange{resultType},
                                  ValueRange{lhs, rhs}, ValueRange{init})
      .getResult(0);
}

/// The input of `value`'s producer when that is a linalg.transpose swapping
/// the last two dimensions and keeping the others, else null.
Value getSwappedLastTwo(Value value) {
  auto transpose = value.getDefiningOp<linalg::TransposeOp>();
  if (!transpose)
    return {};
  ArrayRef<int64_t> perm = transpose.getPermutation();
  int64_t rank = perm.size();
  if (rank < 2 || perm[rank - 2] != rank - 1 || perm[rank - 1] != rank - 2)
    return {};
  for (int64_t i = 0; i < rank - 2; ++i)
    if (perm[i] != i)
      return {};
  return transpose.getInput();
}

struct MatMulLowering : OpConversionPattern<nn::MatMulOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(nn::MatMulOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value lhs = adaptor.getLhs(), rhs = adaptor.getRhs();
    auto lhsType = cast<RankedTensorType>(lhs.getType());
    auto rhsType = cast<RankedTensorType>(rhs.getType());
    Type element = lhsType.getElementType();

    // numpy promotion of vectors to matrices.
    SmallVector<int64_t> l(lhsType.getShape()), r(rhsType.getShape());
    if (l.size() == 1) {
      l.insert(l.begin(), 1);
      lhs = reshapeTo(rewriter, loc, lhs, l);
    }
    if (r.size() == 1) {
      r.push_back(1);
      rhs = reshapeTo(rewriter, loc, rhs, r);
    }
    int64_t m = l[l.size() - 2], k = l.back(), n = r.back();
    ArrayRef<int64_t> lBatch = ArrayRef(l).drop_back(2);
    ArrayRef<int64_t> rBatch = ArrayRef(r).drop_back(2);

    // A transposed lhs, read in its original layout [..., K, M]. A batched
    // one only when the rhs is batched too (the matrix-rhs path folds the
    // lhs batch into M, which needs [..., M, K]).
    Value lhsT = (!rBatch.empty() || lBatch.empty())
                     ? getSwappedLastTwo(lhs)
                     : Value();
    MLIRContext *ctx = rewriter.getContext();

    Value product;
    if (rBatch.empty()) {
      // [b..., M, K] x [K, N]: the batch folds into M, a single matmul.
      int64_t rows = m;
      for (int64_t d : lBatch)
        rows *= d;
      if (!lhsT) {
        Value flat = reshapeTo(rewriter, loc, lhs, {rows, k});
        product = buildMatmul(rewriter, loc, flat, rhs);
      } else {
        AffineExpr dm, dn, dk;
        bindDims(ctx, dm, dn, dk);
        // Only a 2-D lhs gets here (rows == M).
        auto resultType = RankedTensorType::get({rows, n}, element);
        Value init = createFilled(rewriter, loc, resultType,
                                  createScalar(rewriter, loc, element, 0.0));
        auto matmul = linalg::MatmulOp::create(
            rewriter, loc, TypeRange{resultType}, ValueRange{lhsT, rhs},
            ValueRange{init});
        matmul.setIndexingMapsAttr(rewriter.getAffineMapArrayAttr(
            {AffineMap::get(3, 0, {dk, dm}, ctx),
             AffineMap::get(3, 0, {dk, dn}, ctx),
             AffineMap::get(3, 0, {dm, dn}, ctx)}));
        product = matmul.getResult(0);
      }
    } else {
      // Both batched: one batch_matmul over the broadcast batch, folded into
      // a single dimension. A transposed lhs stays in its layout [..., K, M]
      // and the indexing maps read it transposed.
      auto batch = nn::detail::broadcastShapes(lBatch, rBatch);
      if (!batch)
        return rewriter.notifyMatchFailure(op, "batch shapes do not broadcast");
      int64_t batchSize = 1;
      for (int64_t d : *batch)
        batchSize *= d;
      SmallVector<int64_t> lMatrix =
          lhsT ? SmallVector<int64_t>{k, m} : SmallVector<int64_t>{m, k};
      SmallVector<int64_t> lFull(*batch), rFull(*batch);
      lFull.append(lMatrix);
      rFull.append({k, n});
      Value lb = reshapeTo(rewriter, loc,
                           broadcastTo(rewriter, loc, lhsT ? lhsT : lhs, lFull),
                           {batchSize, lMatrix[0], lMatrix[1]});
      Value rb =
          reshapeTo(rewriter, loc, broadcastTo(rewriter, loc, rhs, rFull),
                    {batchSize, k, n});
      auto resultType = RankedTensorType::get({batchSize, m, n}, element);
      Value init = createFilled(rewriter, loc, resultType,
                                createScalar(rewriter, loc, element, 0.0));
      auto matmul =
          linalg::BatchMatmulOp::create(rewriter, loc, TypeRange{resultType},
                                        ValueRange{lb, rb}, ValueRange{init});
      if (lhsT) {
        AffineExpr db, dm, dn, dk;
        bindDims(ctx, db, dm, dn, dk);
        matmul.setIndexingMapsAttr(rewriter.getAffineMapArrayAttr(
            {AffineMap::get(4, 0, {db, dk, dm}, ctx),
             AffineMap::get(4, 0, {db, dk, dn}, ctx),
             AffineMap::get(4, 0, {db, dm, dn}, ctx)}));
      }
      product = matmul.getResult(0);
    }
    // The product ([rows, N] or [batch, M, N]) has the result's elements in
    // order; the batch dimensions reappear and the promoted unit dimensions
    // disappear in one reshape.
    auto resultType = cast<RankedTensorType>(op.getType());
    rewriter.replaceOp(
        op, reshapeTo(rewriter, loc, product, resultType.getShape()));
    return success();
  }
};

/// reduce_sum over all batch axes of matmul(transpose(x), dY): one
/// contraction over (batch, K). See the file comment.
struct BatchReducedMatMulLowering : OpConversionPattern<nn::ReduceSumOp> {
  BatchReducedMatMulLowering(MLIRContext *ctx)
      : OpConversionPattern(ctx, /*benefit=*/2) {}

  LogicalResult
  matchAndRewrite(nn::ReduceSumOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto matmul = op.getInput().getDefiningOp<nn::MatMulOp>();
    if (!matmul || !matmul->hasOneUse())
      return failure();
    auto transpose = matmul.getLhs().getDefiningOp<nn::TransposeOp>();
    if (!transpose)
      return failure();
    auto xType = cast<RankedTensorType>(transpose.getInput().getType());
    auto dyType = cast<RankedTensorType>(matmul.getRhs().getType());
    int64_t rank = xType.getRank();
    if (rank < 3 || dyType.getRank() != rank ||
        !isa<FloatType>(xType.getElementType()) ||
        xType.getShape().drop_back(2) != dyType.getShape().drop_back(2) ||
        xType.getDimSize(rank - 2) != dyType.getDimSize(rank - 2))
      return failure();
    SmallVector<int64_t> swapped = llvm::to_vector(llvm::seq<int64_t>(0, rank));
    std::swap(swapped[rank - 2], swapped[rank - 1]);
    if (transpose.getPerm() != ArrayRef(swapped))
      return failure();
    SmallVector<int64_t> axes(op.getAxes());
    llvm::sort(axes);
    if (axes != llvm::to_vector(llvm::seq<int64_t>(0, rank - 2)))
      return failure();

    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Type element = xType.getElementType();
    int64_t rows = 1;
    for (int64_t d : xType.getShape().drop_back(1))
      rows *= d;
    int64_t m = xType.getShape().back(), n = dyType.getShape().back();
    Value x = reshapeTo(rewriter, loc,
                        rewriter.getRemappedValue(transpose.getInput()),
                        {rows, m});
    Value dy = reshapeTo(rewriter, loc,
                         rewriter.getRemappedValue(matmul.getRhs()),
                         {rows, n});
    auto productType = RankedTensorType::get({m, n}, element);
    Value init = createFilled(rewriter, loc, productType,
                              createScalar(rewriter, loc, element, 0.0));
    AffineExpr dm, dn, dk;
    bindDims(ctx, dm, dn, dk);
    auto product =
        linalg::MatmulOp::create(rewriter, loc, TypeRange{productType},
                                 ValueRange{x, dy}, ValueRange{init});
    product.setIndexingMapsAttr(rewriter.getAffineMapArrayAttr(
        {AffineMap::get(3, 0, {dk, dm}, ctx),
         AffineMap::get(3, 0, {dk, dn}, ctx),
         AffineMap::get(3, 0, {dm, dn}, ctx)}));
    auto resultType = cast<RankedTensorType>(op.getType());
    rewriter.replaceOp(op, reshapeTo(rewriter, loc, product.getResult(0),
                                     resultType.getShape()));
    return success();
  }
};

struct GemmLowering : OpConversionPattern<nn::GemmOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(nn::GemmOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto resultType = cast<RankedTensorType>(op.getType());
    Type element = resultType.getElementType();
    double alpha = op.getAlpha().convertToDouble();
    double beta = op.getBeta().convertToDouble();
    Value c = adaptor.getC();
    if (beta == 0.0)
      c = nullptr;

    // The accumulator: beta * C broadcast to M x N when alpha is 1 (the
    // matmul then adds AB to it), zeros otherwise.
    // NOTE: the accumulator is always a new tensor, even when C already is
    // M x N: with function-boundary bufferization, accumulating into C itself
    // would write into the caller's buffer.
    bool cInAccumulator = c && alpha == 1.0;
    Value init;
    if (cInAccumulator) {
      Value betaValue =
          beta == 1.0 ? Value() : createScalar(rewriter, loc, element, beta);
      init = buildElementwise(
          rewriter, loc, resultType, ValueRange{c},
          [&](OpBuilder &b, Location l, ValueRange args) -> Value {
            if (!betaValue)
              return args[0];
            return arith::MulFOp::create(b, l, betaValue, args[0]);
          });
    } else {
      init = createFilled(rewriter, loc, resultType,
                          createScalar(rewriter, loc, element, 0.0));
    }

    // (m, n, k) loops; transposes are read through the maps.
    MLIRContext *ctx = rewriter.getContext();
    AffineExpr m, n, k;
    bindDims(ctx, m, n, k);
    AffineMap aMap = AffineMap::get(3, 0,
                                    op.getTransA() ? ArrayRef<AffineExpr>{k, m}
                                                   : ArrayRef<AffineExpr>{m, k},
                                    ctx);
    AffineMap bMap = AffineMap::get(3, 0,
                                    op.getTransB() ? ArrayRef<AffineExpr>{n, k}
                                                   : ArrayRef<AffineExpr>{k, n},
                                    ctx);
    AffineMap cMap = AffineMap::get(3, 0, {m, n}, ctx);
    auto matmul = linalg::MatmulOp::create(
        rewriter, loc, TypeRange{resultType},
        ValueRange{adaptor.getA(), adaptor.getB()}, ValueRange{init});
    if (op.getTransA() || op.getTransB())
      matmul.setIndexingMapsAttr(
          rewriter.getAffineMapArrayAttr({aMap, bMap, cMap}));
    Value result = matmul.getResult(0);

    if (!cInAccumulator && (alpha != 1.0 || c)) {
      Value alphaValue = createScalar(rewriter, loc, element, alpha);
      SmallVector<Value> inputs{result};
      Value betaValue;
      if (c) {
        inputs.push_back(c);
        if (beta != 1.0)
          betaValue = createScalar(rewriter, loc, element, beta);
      }
      result = buildElementwise(
          rewriter, loc, resultType, inputs,
          [&](OpBuilder &b, Location l, ValueRange args) -> Value {
            Value scaled = args[0];
            if (alpha != 1.0)
              scaled = arith::MulFOp::create(b, l, alphaValue, scaled);
            if (args.size() == 1)
              return scaled;
            Value bias = args[1];
            if (betaValue)
              bias = arith::MulFOp::create(b, l, betaValue, bias);
            return arith::AddFOp::create(b, l, scaled, bias);
          });
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void populateMatmulPatterns(RewritePatternSet &patterns) {
  patterns.add<MatMulLowering, GemmLowering, BatchReducedMatMulLowering>(
      patterns.getContext());
}

} // namespace pipedream::nn_to_linalg
