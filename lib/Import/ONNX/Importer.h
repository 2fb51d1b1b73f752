//===- Importer.h - ONNX graph importer internals ---------------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Internals shared by the importer's files: the value table, the per-node
// context every op converter works through, and the op table. Converters
// live in Convert*.cpp, grouped by op family.
//
// NOTE: every converter must leave the importer in a consistent state on
// bad input: report through NodeContext::fail/unsupported (the first error
// wins) and never index a protobuf field, input or dimension unchecked.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_LIB_IMPORT_ONNX_IMPORTER_H
#define PIPEDREAM_LIB_IMPORT_ONNX_IMPORTER_H

#include "HostTensor.h"

#include "pipedream/Dialect/NN/IR/NNOps.h"
#include "pipedream/Import/ONNX/ImportONNX.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Location.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/Twine.h"

#include <onnx/onnx_pb.h>

#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace pipedream::onnx_import {

/// One ONNX value (graph input, initializer or node output) during import.
/// Its type is always known and static. It is a constant known at import
/// (`constant`), an SSA value (`value`: a graph input, a weight argument or
/// an op result), or both once a constant has been materialized as
/// `nn.constant`.
struct ImportedValue {
  mlir::RankedTensorType type;
  int32_t dtype = kUndefined;
  /// Shared: aliases (Identity, no-op reshapes) do not copy the data.
  std::shared_ptr<const HostTensor> constant;
  mlir::Value value;
  /// Where a constant was produced, for its `nn.constant`.
  mlir::LocationAttr loc;
};

class GraphImporter;

/// What an op converter sees of one node: its inputs, attributes and
/// outputs, the builder, and error reporting that names the node.
class NodeContext {
public:
  NodeContext(GraphImporter &importer, const onnx::NodeProto &node,
              llvm::StringRef name, mlir::Location loc);

  llvm::StringRef opType() const { return node.op_type(); }
  /// The model's default-domain opset.
  int64_t opset() const;
  /// The version of the op's schema in effect at `opset()`: the opset that
  /// introduced it (ONNX's `OpSchema::SinceVersion`). Old forms are
  /// converted by testing this, e.g. `sinceVersion() < 13`.
  int64_t sinceVersion() const;
  mlir::Location getLoc() const { return loc; }
  mlir::OpBuilder &builder();
  mlir::MLIRContext *getContext();
  FoldBudget &budget();

  //===--- Inputs ---------------------------------------------------------===//
  size_t numInputs() const { return size_t(node.input_size()); }
  /// Input `i` is given (present and not the empty name).
  bool hasInput(size_t i) const;
  /// Input `i`, or null when absent.
  ImportedValue *input(size_t i);
  /// The ONNX value name of input `i` ("" when absent).
  std::string inputName(size_t i) const;
  /// When input `i` is a weight (a float initializer), marks it `nn.frozen`:
  /// an operand the model treats as a constant (a loss's class weights).
  void markFrozenWeight(size_t i);
  /// Input `i` is a float initializer (a weight argument) that
  /// requireConstant would read as an import-time constant.
  bool isWeightInput(size_t i) const;
  /// Input `i` when it is a constant known at import, else null.
  const HostTensor *constantInput(size_t i);
  /// Input `i`, which must be a known constant; reports why not otherwise.
  const HostTensor *requireConstant(size_t i, llvm::StringRef what);
  /// Every given input is a constant known at import.
  bool allInputsConstant();
  /// Input `i` as an SSA value (constants become `nn.constant`); reports a
  /// missing required input.
  mlir::Value operand(size_t i, llvm::StringRef what = "");
  /// Input `i` must be present (reports otherwise); returns its type.
  mlir::RankedTensorType inputType(size_t i, llvm::StringRef what = "");
  /// Same, for an input that must be N x C x D1 ... Dn with n >= 1 (the
  /// convolution, pooling and normalization layers); null once it failed.
  mlir::RankedTensorType spatialInputType(size_t i, llvm::StringRef what = "");
  /// Attribute 'kernel_shape', when given, must be `kernel` (the spatial
  /// dimensions of a convolution's weight); false once the node failed.
  bool checkKernelShape(llvm::ArrayRef<int64_t> kernel);
  /// Requires at least `n` inputs.
  bool requireInputs(size_t n);

  //===--- Outputs --------------------------------------------------------===//
  size_t numOutputs() const { return size_t(node.output_size()); }
  /// Output `i` is consumed by a node or is a graph output.
  bool outputUsed(size_t i) const;
  /// The fully static shape the model declares for output `i` (a graph
  /// output's type or value_info), if any: the size of a data-dependent
  /// output (NonZero, Unique, NonMaxSuppression).
  std::optional<llvm::SmallVector<int64_t>> declaredOutputShape(size_t i) const;
  /// ONNX name of output `i` ("" when absent).
  std::string outputName(size_t i) const {
    return i < numOutputs() ? node.output(int(i)) : std::string();
  }
  /// Sets output `i` to `value`; nothing for a null `value` (a build that
  /// failed and reported why) or an absent output.
  void setOutput(size_t i, mlir::Value value);
  void setOutput(size_t i, HostTensor constant);
  void setOutputAlias(size_t i, const ImportedValue &value);
  /// Sets output 0 from a folding kernel's result or reports its error.
  void setFolded(HostResult result);
  /// False, and the node fails with its message, when `error` is an error.
  bool check(llvm::Error error);
  /// `t` as an `nn.constant` at the node's location (for the constant
  /// operands of decompositions: interpolation weights, index tables); null
  /// (reported) when its type is unsupported.
  mlir::Value constantValue(const HostTensor &t);

  //===--- Attributes -----------------------------------------------------===//
  const onnx::AttributeProto *attr(llvm::StringRef name) const;
  int64_t intAttr(llvm::StringRef name, int64_t defaultValue);
  double floatAttr(llvm::StringRef name, double defaultValue);
  std::string stringAttr(llvm::StringRef name, llvm::StringRef defaultValue);
  /// std::nullopt when absent (or mistyped, which is reported).
  std::optional<llvm::SmallVector<int64_t>> intsAttr(llvm::StringRef name);
  /// The tensor value of attribute `name` decoded to a host tensor.
  std::optional<HostTensor> tensorAttr(llvm::StringRef name);

  //===--- Axes -----------------------------------------------------------===//
  /// `axis` in [-rank, rank) made non-negative; reports out of range.
  std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank,
                                       llvm::StringRef what = "axis");
  /// Normalized, sorted axes; reports out-of-range and duplicate axes.
  std::optional<llvm::SmallVector<int64_t>>
  normalizeAxes(llvm::ArrayRef<int64_t> axes, int64_t rank);
  /// Integer values of a constant 1-D (or scalar) tensor.
  static llvm::SmallVector<int64_t> toInts(const HostTensor &t);
  /// Integer values of constant input `i` (a shape, axes or bounds list),
  /// which must be an integer tensor of rank <= 1; reports otherwise.
  std::optional<llvm::SmallVector<int64_t>> constantInts(size_t i,
                                                         llvm::StringRef what);
  /// Axes of Squeeze/Unsqueeze/Reduce*: constant input `index` (newer
  /// opsets, `fromInput`) or the `axes` attribute. std::nullopt when absent;
  /// `ok` is false after an error.
  std::optional<llvm::SmallVector<int64_t>>
  axesOperand(bool fromInput, size_t index, bool &ok);

  //===--- Errors ---------------------------------------------------------===//
  /// Reports `node 'N' (op 'X', opset V): message` (first error wins).
  void fail(const llvm::Twine &message);
  /// Reports `node 'N' (op 'X', opset V): not supported[: reason]`.
  void unsupported(const llvm::Twine &reason = "");
  bool failed() const;

  //===--- Building -------------------------------------------------------===//
  /// Builds `OpTy` from its typed ODS builder arguments (without the result
  /// types), inferring the result types through the op's own inference. On
  /// an inference error (a shape mismatch) reports the op's diagnostic and
  /// returns null instead of aborting like the inferring ODS builders.
  template <typename OpTy, typename... Args>
  OpTy create(Args &&...args) {
    if (failed())
      return nullptr;
    mlir::OperationState state(loc, OpTy::getOperationName());
    if constexpr (std::is_same_v<OpTy, nn::SplitOp>)
      OpTy::build(builder(), state, mlir::TypeRange(),
                  std::forward<Args>(args)...);
    else
      OpTy::build(builder(), state, mlir::Type(), std::forward<Args>(args)...);
    state.types.clear();
    llvm::SmallVector<mlir::Type> types;
    if (mlir::failed(OpTy::inferReturnTypes(
            getContext(), state.location, state.operands,
            state.attributes.getDictionary(getContext()),
            state.getRawProperties(), state.regions, types))) {
      failFromDiagnostic();
      return nullptr;
    }
    if (!checkResultTypes(types))
      return nullptr;
    state.addTypes(types);
    return llvm::cast<OpTy>(builder().create(state));
  }

  /// `create` for single-result ops, returning the result (null on error).
  template <typename OpTy, typename... Args>
  mlir::Value createValue(Args &&...args) {
    OpTy op = create<OpTy>(std::forward<Args>(args)...);
    return op ? op->getResult(0) : mlir::Value();
  }

  /// Attribute helpers for the typed builders.
  mlir::IntegerAttr i64(int64_t v);
  mlir::FloatAttr f64(double v);
  mlir::BoolAttr boolean(bool v);
  mlir::DenseI64ArrayAttr i64s(llvm::ArrayRef<int64_t> v);

private:
  void failFromDiagnostic();
  bool checkResultTypes(llvm::ArrayRef<mlir::Type> types);
  std::string header() const;

  GraphImporter &importer;
  const onnx::NodeProto &node;
  std::string name;
  mlir::Location loc;
};

/// Converts one node (evaluating it at import when its inputs are known).
using ConvertFn = void (*)(NodeContext &);

struct OpInfo {
  ConvertFn convert = nullptr;
  /// The opsets that introduced a version of the op's schema, ascending
  /// (ONNX's Changelog.md; the first is the opset that defines the op). A
  /// node's schema version is the last one not above the model's opset.
  std::vector<int64_t> versions = {1};
  /// Oldest schema version the converter handles exactly; older ones are
  /// reported as not supported.
  int64_t oldestHandled = 1;
};

using OpTable = llvm::StringMap<OpInfo>;

/// The op table: every ONNX op type the importer converts or evaluates.
const OpTable &getOpTable();
/// The schema version of `info`'s op in effect at `opset` (0 when the op is
/// not yet defined there).
int64_t getSinceVersion(const OpInfo &info, int64_t opset);
void registerElementwiseOps(OpTable &table);
void registerShapeOps(OpTable &table);
void registerNeuralOps(OpTable &table);
/// ConvertIndexing.cpp: GatherElements/ND, Scatter*, Tile, Pad, OneHot,
/// Compress, DepthToSpace/SpaceToDepth, Einsum.
void registerIndexingOps(OpTable &table);
/// ConvertLayers.cpp: ConvTranspose, Resize/Upsample, InstanceNormalization,
/// MeanVarianceNormalization, LRN, GlobalMaxPool, LayerNormalization with
/// its statistics outputs.
void registerLayerOps(OpTable &table);
void registerLossOps(OpTable &table);
/// ConvertUnsigned.cpp: BitShift.
void registerUnsignedOps(OpTable &table);
/// ConvertDataDependent.cpp: NonZero, Unique, NonMaxSuppression (the
/// declared size of their data-dependent output, checked at run time).
void registerDataDependentOps(OpTable &table);
/// ai.onnx.preview.training's optimizers (keyed "<domain>.<op>").
void registerTrainingOps(OpTable &table);

/// The domain of ONNX's training preview ops (Adagrad, Momentum, Adam).
inline constexpr llvm::StringLiteral kPreviewTrainingDomain =
    "ai.onnx.preview.training";
/// The default ONNX domain ("" or "ai.onnx").
inline bool isDefaultDomain(llvm::StringRef domain) {
  return domain.empty() || domain == "ai.onnx";
}
/// A node's key in the op table: its op type in the default domain,
/// "<domain>.<op type>" in any other.
std::string opTableKey(const onnx::NodeProto &node);
/// Whether ONNX op `opType` may read or produce the unsigned integer
/// `value` (its lowering implements unsigned semantics); `why` says why
/// not when there is a reason beyond the op.
bool isUnsignedAwareOp(llvm::StringRef opType, const ImportedValue &value,
                       std::string &why);
/// BatchNormalization with training_mode=1 (opset 14+), composed
/// (ConvertLayers.cpp): batch statistics, and the running statistics outputs.
void convertBatchNormalizationTraining(NodeContext &ctx);
/// MaxPool's Indices output (ConvertLayers.cpp): the flat index into `x`
/// (N, C and the spatial axes; the spatial part column-major when
/// `columnMajor`, storage_order=1) of every window's first maximum, for a
/// pool of `x` with result shape `outShape`. Null on error (reported).
mlir::Value maxPoolIndices(NodeContext &ctx, mlir::Value x,
                           llvm::ArrayRef<int64_t> outShape,
                           llvm::ArrayRef<int64_t> kernel,
                           llvm::ArrayRef<int64_t> strides,
                           llvm::ArrayRef<int64_t> pads,
                           llvm::ArrayRef<int64_t> dilations, bool columnMajor);
void registerMathOps(OpTable &table);
/// ConvertRecurrent.cpp: RNN, GRU, LSTM (unrolled), ReverseSequence.
void registerRecurrentOps(OpTable &table);
/// ConvertSampling.cpp: GridSample, RoiAlign, Det.
void registerSamplingOps(OpTable &table);

/// The axes a Reduce* node reduces (from the `axes` attribute, or from
/// opset `axesFromOpset` on the `axes` input, with `noop_with_empty_axes`),
/// normalized and sorted; empty when nothing is reduced. Reads `keepdims`.
/// False after an error (reported).
bool resolveReduceAxes(NodeContext &ctx, int64_t axesFromOpset,
                       llvm::SmallVectorImpl<int64_t> &axes, bool &keepdims);

/// MLIR element type of ONNX data type `dtype` (null when unsupported).
mlir::Type getElementType(mlir::MLIRContext *context, int32_t dtype);
/// ONNX data type of an MLIR element type (kUndefined when none).
int32_t getDType(mlir::Type elementType);

/// Decodes an ONNX TensorProto (raw, typed or external data) into a host
/// tensor. `baseDir` resolves external data (empty: not allowed).
HostResult decodeTensor(const onnx::TensorProto &tensor,
                        llvm::StringRef baseDir);

} // namespace pipedream::onnx_import

#endif // PIPEDREAM_LIB_IMPORT_ONNX_IMPORTER_H
