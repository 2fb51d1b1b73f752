//===- Utils.h - helpers shared by the nn-to-linalg patterns ----*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Builders the op-family lowerings share (empty/filled tensors, numpy
// broadcasting, reshapes, elementwise generics), and the per-family pattern
// population functions NNToLinalg.cpp puts together.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_LIB_CONVERSION_NNTOLINALG_UTILS_H
#define PIPEDREAM_LIB_CONVERSION_NNTOLINALG_UTILS_H

#include "pipedream/Conversion/NNToLinalg/NNToLinalg.h"

#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Transforms/DialectConversion.h"

namespace pipedream::nn_to_linalg {

/// Body of a generic: computes the value to yield from block arguments.
using ScalarFn = llvm::function_ref<mlir::Value(
    mlir::OpBuilder &, mlir::Location, mlir::ValueRange)>;

/// `tensor.empty` of a static tensor type.
mlir::Value createEmpty(mlir::OpBuilder &b, mlir::Location loc,
                        mlir::RankedTensorType type);

/// A tensor of `type` filled with `value` (`linalg.fill`).
mlir::Value createFilled(mlir::OpBuilder &b, mlir::Location loc,
                         mlir::RankedTensorType type, mlir::Value value);

/// A scalar `arith.constant` of a float or integer type holding `value`
/// (rounded to the float type, truncated toward zero for integers).
mlir::Value createScalar(mlir::OpBuilder &b, mlir::Location loc,
                         mlir::Type type, double value);

/// The lowest value of `type` (-inf for floats, the signed minimum for
/// integers): the identity of a max.
mlir::Value createLowest(mlir::OpBuilder &b, mlir::Location loc,
                         mlir::Type type);

/// The highest value of `type` (+inf for floats, the signed maximum for
/// integers, true for `i1`): the identity of a min.
mlir::Value createHighest(mlir::OpBuilder &b, mlir::Location loc,
                          mlir::Type type);

/// Indexing map reading an operand of `operandShape` inside a loop nest over
/// `resultShape` with ONNX (numpy) multidirectional broadcasting: shapes are
/// right-aligned and a size-1 operand dimension against a larger result
/// dimension reads index 0.
mlir::AffineMap getBroadcastMap(mlir::MLIRContext *ctx,
                                llvm::ArrayRef<int64_t> operandShape,
                                llvm::ArrayRef<int64_t> resultShape);

/// A `linalg.generic` over `resultType`'s shape with every loop parallel,
/// reading each input with its broadcasting map; `fn` computes the element.
mlir::Value buildElementwise(mlir::OpBuilder &b, mlir::Location loc,
                             mlir::RankedTensorType resultType,
                             mlir::ValueRange inputs, ScalarFn fn);

/// The element type an elementwise op's scalar body computes in: its
/// result's, or its first operand's (for ops whose result is i1, like the
/// predicates).
enum class ComputeType { Result, Operand };

/// Lowers a one-result elementwise op to a broadcasting `linalg.generic`
/// (buildElementwise) whose body is `Compute(op, b, loc, args, type)`, with
/// `type` chosen by `In`. `Compute` names the op's overload of a file's
/// scalar bodies.
template <typename OpTy,
          mlir::Value (*Compute)(OpTy, mlir::OpBuilder &, mlir::Location,
                                 mlir::ValueRange, mlir::Type),
          ComputeType In = ComputeType::Result>
struct ElementwiseComputeLowering : mlir::OpConversionPattern<OpTy> {
  using mlir::OpConversionPattern<OpTy>::OpConversionPattern;

  mlir::LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  mlir::ConversionPatternRewriter &rewriter) const override {
    auto resultType =
        llvm::cast<mlir::RankedTensorType>(op->getResult(0).getType());
    mlir::Type elementType = mlir::getElementTypeOrSelf(
        In == ComputeType::Result ? op->getResult(0).getType()
                                  : op->getOperand(0).getType());
    mlir::Value result = buildElementwise(
        rewriter, op.getLoc(), resultType, adaptor.getOperands(),
        [&](mlir::OpBuilder &b, mlir::Location loc, mlir::ValueRange args) {
          return Compute(op, b, loc, args, elementType);
        });
    rewriter.replaceOp(op, result);
    return mlir::success();
  }
};

/// A `linalg.generic` writing into `init` (whose type is the result type)
/// with explicit indexing maps (inputs then init) and iterator types. `fn`
/// receives every block argument, the output element last, and returns the
/// value to yield.
mlir::Value buildGeneric(mlir::OpBuilder &b, mlir::Location loc,
                         mlir::Value init, mlir::ValueRange inputs,
                         llvm::ArrayRef<mlir::AffineMap> maps,
                         llvm::ArrayRef<mlir::utils::IteratorType> iterators,
                         ScalarFn fn);

/// The map `(d0, ..., d{rank-1}) -> (the dims not in dropped)`, reading a
/// reduced (keepdims = false) operand inside the full loop nest.
mlir::AffineMap getDropDimsMap(mlir::MLIRContext *ctx, int64_t rank,
                               llvm::ArrayRef<int64_t> dropped);

/// `shape` without the dimensions in `dropped`.
llvm::SmallVector<int64_t> dropDims(llvm::ArrayRef<int64_t> shape,
                                    llvm::ArrayRef<int64_t> dropped);

/// Materializes the numpy broadcast of `value` to `shape`: drops the
/// broadcast unit dimensions with `tensor.collapse_shape`, then adds the
/// broadcast dimensions with `linalg.broadcast`. Returns `value` when its
/// shape is already `shape`.
mlir::Value broadcastTo(mlir::OpBuilder &b, mlir::Location loc,
                        mlir::Value value, llvm::ArrayRef<int64_t> shape);

/// Reshapes `value` (row-major, same element count) to `shape` with one
/// `tensor.collapse_shape` or `tensor.expand_shape` when a reassociation
/// exists, otherwise a collapse to 1-D followed by an expand.
mlir::Value reshapeTo(mlir::OpBuilder &b, mlir::Location loc, mlir::Value value,
                      llvm::ArrayRef<int64_t> shape);

/// `tensor.pad` of `value` with the constant `padValue`; no op when every
/// pad is zero.
mlir::Value padConstant(mlir::OpBuilder &b, mlir::Location loc,
                        mlir::Value value, llvm::ArrayRef<int64_t> low,
                        llvm::ArrayRef<int64_t> high, mlir::Value padValue);

/// `lhs op rhs` for the float or integer case of a binary arithmetic op.
template <typename FloatOp, typename IntOp>
mlir::Value createArith(mlir::OpBuilder &b, mlir::Location loc, mlir::Value lhs,
                        mlir::Value rhs) {
  if (llvm::isa<mlir::FloatType>(lhs.getType()))
    return FloatOp::create(b, loc, lhs, rhs);
  return IntOp::create(b, loc, lhs, rhs);
}

/// Whether integers of `type` order unsigned: the unsigned integers (ONNX
/// uint8..uint64) and `i1` (ONNX bool, false < true).
bool ordersUnsigned(mlir::Type type);

/// The larger / smaller of two scalars of one type: NaN-propagating for
/// floats, unsigned for ordersUnsigned types, signed otherwise.
mlir::Value createMax(mlir::OpBuilder &b, mlir::Location loc, mlir::Value lhs,
                      mlir::Value rhs);
mlir::Value createMin(mlir::OpBuilder &b, mlir::Location loc, mlir::Value lhs,
                      mlir::Value rhs);

/// The positions a slice of shape `sizes` with `starts` and `steps` reads,
/// as a strided window whose steps are all positive: a dimension with a
/// negative step starts at the last position the slice reads and comes
/// reversed.
struct StridedWindow {
  llvm::SmallVector<mlir::OpFoldResult> offsets, sizes, strides;
  /// The read map's results: `d` in order, `size - 1 - d` reversed.
  llvm::SmallVector<mlir::AffineExpr> readExprs;
  bool reversed = false;
};
StridedWindow getStridedWindow(mlir::Builder &b, llvm::ArrayRef<int64_t> starts,
                               llvm::ArrayRef<int64_t> steps,
                               llvm::ArrayRef<int64_t> sizes);

/// `value` (of the window's shape) with the dimensions `window` reverses
/// reversed; `value` itself when there are none.
mlir::Value reverseWindow(mlir::OpBuilder &b, mlir::Location loc,
                          mlir::Value value, const StridedWindow &window);

/// Replaces every unsigned integer type in `op` (results, block arguments,
/// attributes such as constants and the function type) by the signless
/// type of its width: the last step of convert-nn-to-linalg, after the
/// patterns chose the unsigned arith ops (arith takes signless only).
void dropIntegerSignedness(mlir::Operation *op);

/// Dense i64 vector attribute (the form linalg convolution and pooling ops
/// take their strides and dilations in).
mlir::DenseIntElementsAttr getI64VectorAttr(mlir::Builder &b,
                                            llvm::ArrayRef<int64_t> values);

/// Builds the contribution one window offset adds: a tensor of the shape of
/// the output (leading dimensions then the output's spatial ones). `offset`
/// is the window position per spatial dimension, `index` its row-major rank.
using WindowContributionFn = llvm::function_ref<mlir::Value(
    mlir::OpBuilder &, mlir::Location, llvm::ArrayRef<int64_t> offset,
    int64_t index)>;

/// The scatter-add of the backward of windowed ops (col2im): for every
/// window offset `k` (row-major), adds `contribution(k)` to the strided view
/// `acc[..., o * strides + k * dilations]` (o over `outputSpatial`) with an
/// elementwise generic in place on an extract/insert_slice pair. `acc` has
/// `acc.rank - kernel.size()` leading dimensions, which the contributions
/// share; every view must be in bounds.
mlir::Value accumulateWindows(mlir::OpBuilder &b, mlir::Location loc,
                              mlir::Value acc,
                              llvm::ArrayRef<int64_t> outputSpatial,
                              llvm::ArrayRef<int64_t> kernel,
                              llvm::ArrayRef<int64_t> strides,
                              llvm::ArrayRef<int64_t> dilations,
                              WindowContributionFn contribution);

//===----------------------------------------------------------------------===//
// Data-dependent indices
//===----------------------------------------------------------------------===//

/// A run-time index made safe to address a dimension with.
struct NormalizedIndex {
  /// `index` type, always in `[0, dimSize)`.
  mlir::Value index;
  /// i1: the ONNX index was in `[-dimSize, dimSize)`.
  mlir::Value inBounds;
};

/// Normalizes a run-time ONNX index (signless integer scalar) for a
/// dimension of static size `dimSize > 0`: a negative index counts from the
/// end (`index + dimSize`), then the result is clamped into range, so that
/// no read or write leaves the tensor, and `inBounds` says whether it had
/// to be.
///
/// NOTE: every lowering that addresses a tensor with data-dependent indices
/// (gather, gather_grad, gather_elements, gather_nd, the scatters) goes
/// through this one function: it is the place where an out-of-range index
/// is reported at run time by emitIndexRangeCheck, before the access;
/// reads use the clamped index and writes are skipped when `inBounds` is
/// false.
NormalizedIndex normalizeIndex(mlir::OpBuilder &b, mlir::Location loc,
                               mlir::Value index, int64_t dimSize);

/// The ONNX node an op comes from: the name of the first NameLoc in `loc`
/// (the importer's), or "" when there is none.
std::string getONNXNodeName(mlir::Location loc);

/// The name of the ONNX value `op` reads its indices from when they are a
/// function argument (the importer names graph inputs with a NameLoc; the
/// training and stage functions keep it with `nn.name`), else "".
std::string getIndexInputName(mlir::Operation *op, mlir::Value indices);

/// The run-time check of an index tensor (docs/Bundle.md "Run-time
/// checks"): one pass over `indices` (any shape, i32 or i64) computing its
/// minimum and maximum (a vectorizable reduction, not a branch per element
/// in the access loop), then `nn.check_index_range` against [-size, size),
/// naming `op`'s ONNX node, `opType` and the indices' input. Nothing for an
/// empty `indices`. The access itself uses normalizeIndex (clamped).
void emitIndexRangeCheck(mlir::OpBuilder &b, mlir::Location loc,
                         mlir::Value indices, int64_t size,
                         mlir::Operation *op, llvm::StringRef opType);

//===----------------------------------------------------------------------===//
// Pattern population, one function per op family
//===----------------------------------------------------------------------===//

void populateElementwisePatterns(mlir::RewritePatternSet &patterns);
void populateMatmulPatterns(mlir::RewritePatternSet &patterns);
void populateConvPatterns(mlir::RewritePatternSet &patterns);
void populatePoolingPatterns(mlir::RewritePatternSet &patterns);
void populateNormalizationPatterns(mlir::RewritePatternSet &patterns,
                                   const NNToLinalgOptions &options);
void populateReductionPatterns(mlir::RewritePatternSet &patterns);
void populateShapePatterns(mlir::RewritePatternSet &patterns);
void populateIndexingPatterns(mlir::RewritePatternSet &patterns);
void populateTrainingPatterns(mlir::RewritePatternSet &patterns);
void populateMathPatterns(mlir::RewritePatternSet &patterns);

} // namespace pipedream::nn_to_linalg

#endif // PIPEDREAM_LIB_CONVERSION_NNTOLINALG_UTILS_H
