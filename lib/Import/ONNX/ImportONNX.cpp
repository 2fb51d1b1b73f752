//===- ImportONNX.cpp - ONNX model to nn dialect --------------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Loading (protobuf, external data, checker), graph structure (names,
// topological order, inputs and outputs, weights) and the per-node context.
// The op converters live in Convert*.cpp.
//
//===----------------------------------------------------------------------===//

#include "BatchRespecialize.h"
#include "ExternalData.h"
#include "Importer.h"
#include "TorchProvenance.h"
#include "Proto/ONNXChecker.h"

#include "pipedream/Dialect/NN/IR/NNDialect.h"
#include "pipedream/Dialect/NN/Transforms/Passes.h"
#include "pipedream/Support/Diagnostics.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cstring>
#include <mutex>
#include <queue>

using namespace mlir;
using namespace pipedream;
using namespace pipedream::onnx_import;

namespace {
/// Elements charged to one import's folding (about 256 MiB of host data).
constexpr int64_t kFoldBudgetElements = int64_t(1) << 25;
/// Constants and weights with more elements use dense_resource blobs.
constexpr int64_t kMaxInlineElements = 64;
/// Supported default-domain opsets.
constexpr int64_t kMinOpset = 1, kMaxOpset = 21;
} // namespace

/// A user-provided string made safe for a one-line message.
static std::string sanitize(StringRef text) {
  std::string out;
  for (char c : text.take_front(200))
    out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
  if (text.size() > 200)
    out += "...";
  return out;
}

//===----------------------------------------------------------------------===//
// Element types and tensor data
//===----------------------------------------------------------------------===//

Type onnx_import::getElementType(MLIRContext *context, int32_t dtype) {
  Builder b(context);
  switch (dtype) {
  case kFloat: return b.getF32Type();
  case kDouble: return b.getF64Type();
  case kFloat16: return b.getF16Type();
  case kBFloat16: return b.getBF16Type();
  case kBool: return b.getI1Type();
  // NOTE: nn's signed integers are signless (lowered as signed); ONNX's
  // unsigned types are MLIR's unsigned integers, which only the ops
  // checkUnsignedOperands admits may read or produce (docs/Importer.md).
  case kInt8: return b.getIntegerType(8);
  case kInt16: return b.getIntegerType(16);
  case kInt32: return b.getIntegerType(32);
  case kInt64: return b.getIntegerType(64);
  case kUInt8: return b.getIntegerType(8, /*isSigned=*/false);
  case kUInt16: return b.getIntegerType(16, /*isSigned=*/false);
  case kUInt32: return b.getIntegerType(32, /*isSigned=*/false);
  case kUInt64: return b.getIntegerType(64, /*isSigned=*/false);
  default: return nullptr;
  }
}

int32_t onnx_import::getDType(Type type) {
  if (type.isF32()) return kFloat;
  if (type.isF64()) return kDouble;
  if (type.isF16()) return kFloat16;
  if (type.isBF16()) return kBFloat16;
  if (type.isUnsignedInteger(8)) return kUInt8;
  if (type.isUnsignedInteger(16)) return kUInt16;
  if (type.isUnsignedInteger(32)) return kUInt32;
  if (type.isUnsignedInteger(64)) return kUInt64;
  if (type.isInteger(1)) return kBool;
  if (type.isInteger(8)) return kInt8;
  if (type.isInteger(16)) return kInt16;
  if (type.isInteger(32)) return kInt32;
  if (type.isInteger(64)) return kInt64;
  return kUndefined;
}

/// Appends `count` little-endian values of `width` bytes taken from a typed
/// protobuf field.
template <typename Field>
static void appendTyped(const Field &field, int64_t width,
                        std::vector<char> &storage) {
  // Sized by the field (bounded by the file), never by the claimed dims.
  storage.reserve(storage.size() + size_t(field.size()) * size_t(width));
  for (auto v : field) {
    uint64_t bits;
    if constexpr (std::is_same_v<std::decay_t<decltype(v)>, float>) {
      uint32_t b32;
      std::memcpy(&b32, &v, 4);
      bits = b32;
    } else if constexpr (std::is_same_v<std::decay_t<decltype(v)>, double>) {
      std::memcpy(&bits, &v, 8);
    } else {
      bits = uint64_t(v);
    }
    for (int64_t i = 0; i < width; ++i)
      storage.push_back(char((bits >> (8 * i)) & 0xff));
  }
}

/// The data of `tensor` in ONNX raw layout (little-endian, one byte per
/// bool), viewing raw_data or the mapped external data when possible.
/// `shape` gets the dimensions; `external`, when given, owns external data
/// (else it is copied into `storage`).
static llvm::Expected<ArrayRef<char>>
getTensorBytes(const onnx::TensorProto &tensor, StringRef baseDir,
               SmallVectorImpl<int64_t> &shape, std::vector<char> &storage,
               std::unique_ptr<llvm::MemoryBuffer> *external = nullptr) {
  int32_t dtype = tensor.data_type();
  if (!isSupportedDType(dtype))
    return makeError("data type " + dtypeName(dtype) + " is not supported");
  if (tensor.has_segment())
    return makeError("segmented tensors are not supported");
  shape.assign(tensor.dims().begin(), tensor.dims().end());
  auto n = checkedNumElements(shape);
  if (!n)
    return makeError("invalid or too large dimensions " + shapeToString(shape));
  int64_t width = dtypeByteWidth(dtype);
  int64_t bytes = *n * width;
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL) {
    auto data = readExternalData(tensor, baseDir, bytes);
    if (!data)
      return data.takeError();
    if (external) {
      *external = std::move(data->buffer);
      return data->bytes;
    }
    storage.assign(data->bytes.begin(), data->bytes.end());
    return ArrayRef<char>(storage);
  }
  if (tensor.has_raw_data()) {
    const std::string &raw = tensor.raw_data();
    if (int64_t(raw.size()) != bytes)
      return makeError("raw data holds " + std::to_string(raw.size()) +
                       " bytes but dimensions " + shapeToString(shape) +
                       " of " + dtypeName(dtype) + " need " +
                       std::to_string(bytes));
    return ArrayRef<char>(raw.data(), raw.size());
  }
  int64_t count = 0;
  auto mismatch = [&] {
    return makeError("holds " + std::to_string(count) +
                     " values but dimensions " + shapeToString(shape) +
                     " need " + std::to_string(*n));
  };
  switch (dtype) {
  case kFloat:
    count = tensor.float_data_size();
    if (count != *n)
      return mismatch();
    appendTyped(tensor.float_data(), width, storage);
    break;
  case kDouble:
    count = tensor.double_data_size();
    if (count != *n)
      return mismatch();
    appendTyped(tensor.double_data(), width, storage);
    break;
  case kInt64:
    count = tensor.int64_data_size();
    if (count != *n)
      return mismatch();
    appendTyped(tensor.int64_data(), width, storage);
    break;
  case kUInt32:
  case kUInt64:
    count = tensor.uint64_data_size();
    if (count != *n)
      return mismatch();
    appendTyped(tensor.uint64_data(), width, storage);
    break;
  default: // int32_data holds the narrower types (and 16-bit float bits).
    count = tensor.int32_data_size();
    if (count != *n)
      return mismatch();
    appendTyped(tensor.int32_data(), width, storage);
    break;
  }
  return ArrayRef<char>(storage);
}

/// Host tensor from ONNX raw layout bytes (size already checked).
static HostTensor hostFromBytes(int32_t dtype, ArrayRef<int64_t> shape,
                                ArrayRef<char> bytes) {
  HostTensor t = HostTensor::zeros(dtype, shape);
  int64_t width = dtypeByteWidth(dtype), n = checkedNumElements(shape).value_or(0);
  for (int64_t e = 0; e < n; ++e) {
    uint64_t bits = 0;
    for (int64_t i = 0; i < width; ++i)
      bits |= uint64_t(static_cast<unsigned char>(bytes[e * width + i]))
              << (8 * i);
    switch (dtype) {
    case kFloat: {
      uint32_t b32 = uint32_t(bits);
      float f;
      std::memcpy(&f, &b32, 4);
      t.floats[e] = f;
      break;
    }
    case kDouble: {
      double d;
      std::memcpy(&d, &bits, 8);
      t.floats[e] = d;
      break;
    }
    case kFloat16:
    case kBFloat16: {
      llvm::APFloat f(dtype == kFloat16 ? llvm::APFloat::IEEEhalf()
                                        : llvm::APFloat::BFloat(),
                      llvm::APInt(16, bits));
      bool lost;
      f.convert(llvm::APFloat::IEEEdouble(),
                llvm::APFloat::rmNearestTiesToEven, &lost);
      t.floats[e] = f.convertToDouble();
      break;
    }
    default:
      t.setInt(e, int64_t(bits));
      break;
    }
  }
  return t;
}

HostResult onnx_import::decodeTensor(const onnx::TensorProto &tensor,
                                     StringRef baseDir) {
  SmallVector<int64_t> shape;
  std::vector<char> storage;
  auto bytes = getTensorBytes(tensor, baseDir, shape, storage);
  if (!bytes)
    return bytes.takeError();
  return hostFromBytes(tensor.data_type(), shape, *bytes);
}

/// Host tensor in MLIR's raw buffer layout (little-endian, element width).
static std::vector<char> hostToBytes(const HostTensor &t) {
  int64_t width = dtypeByteWidth(t.dtype);
  std::vector<char> bytes;
  bytes.reserve(t.numElements() * width);
  for (int64_t e = 0, n = t.numElements(); e < n; ++e) {
    uint64_t bits = 0;
    switch (t.dtype) {
    case kFloat: {
      float f = float(t.floats[e]); // already rounded to float precision
      uint32_t b32;
      std::memcpy(&b32, &f, 4);
      bits = b32;
      break;
    }
    case kDouble:
      std::memcpy(&bits, &t.floats[e], 8);
      break;
    case kFloat16:
    case kBFloat16: {
      llvm::APFloat f(t.floats[e]);
      bool lost;
      f.convert(t.dtype == kFloat16 ? llvm::APFloat::IEEEhalf()
                                    : llvm::APFloat::BFloat(),
                llvm::APFloat::rmNearestTiesToEven, &lost);
      bits = f.bitcastToAPInt().getZExtValue();
      break;
    }
    default:
      bits = uint64_t(t.ints[e]);
      break;
    }
    for (int64_t i = 0; i < width; ++i)
      bytes.push_back(char((bits >> (8 * i)) & 0xff));
  }
  return bytes;
}

/// A resource blob key from an ONNX name: identifier characters only.
static std::string blobKey(StringRef name) {
  std::string key;
  for (char c : name.take_front(100))
    key += llvm::isAlnum(c) ? c : '_';
  if (key.empty() || llvm::isDigit(key.front()))
    key = "t_" + key;
  return key;
}

/// An elements attribute holding `bytes` (MLIR raw layout, not bool):
/// dense for small tensors, a dense_resource blob for large ones.
/// When `owner` (a mapping of external data that holds `bytes`) is given
/// and the data is aligned for the element type, the blob points into the
/// mapping and keeps it alive instead of copying it.
static ElementsAttr
elementsFromBytes(RankedTensorType type, ArrayRef<char> bytes,
                  StringRef nameHint,
                  std::unique_ptr<llvm::MemoryBuffer> owner = nullptr) {
  if (type.getNumElements() <= kMaxInlineElements)
    return DenseElementsAttr::getFromRawBuffer(type, bytes);
  size_t align = std::max<size_t>(
      1, (type.getElementType().getIntOrFloatBitWidth() + 7) / 8);
  // NOTE: the blob is immutable (nothing writes through it), so a
  // read-only mapping of the model's side file is a valid backing store.
  if (owner && reinterpret_cast<uintptr_t>(bytes.data()) % align == 0) {
    std::shared_ptr<llvm::MemoryBuffer> mapping(std::move(owner));
    return DenseResourceElementsAttr::get(
        type, blobKey(nameHint),
        AsmResourceBlob(bytes, align,
                        [mapping](void *, size_t, size_t) mutable {
                          mapping.reset();
                        },
                        /*dataIsMutable=*/false));
  }
  return DenseResourceElementsAttr::get(
      type, blobKey(nameHint),
      HeapAsmResourceBlob::allocateAndCopyWithAlign(bytes, align,
                                                    /*dataIsMutable=*/false));
}

//===----------------------------------------------------------------------===//
// GraphImporter
//===----------------------------------------------------------------------===//

namespace pipedream::onnx_import {

/// Imports one ModelProto into a new module.
class GraphImporter {
public:
  GraphImporter(MLIRContext &context, StringRef modelName, StringRef baseDir,
                const ImportOptions &options)
      : context(context), builder(&context), modelName(modelName.str()),
        baseDir(baseDir.str()), options(options), budget(kFoldBudgetElements),
        fileLoc(FileLineColLoc::get(&context, modelName, 0, 0)) {}

  /// Imports `model`. The model may be reordered (nodes sorted) in place.
  FailureOr<OwningOpRef<ModuleOp>> run(onnx::ModelProto &model);

  /// Reports the import's first error, `MODEL: message`, as an error
  /// diagnostic on the context at an unknown location (the message alone is
  /// the user's line); later errors are fallout of the first and dropped.
  void fail(const Twine &message);
  /// Whether the import has reported an error.
  bool failed() const { return hasFailed; }

  /// The SSA value of `v`, materializing a constant as `nn.constant`.
  Value materialize(ImportedValue &v, StringRef nameHint);
  /// An elements attribute for a host tensor of `type`.
  ElementsAttr toElementsAttr(const HostTensor &t, RankedTensorType type,
                              StringRef nameHint);
  /// The type of a host tensor; an error when unsupported.
  llvm::Expected<RankedTensorType> typeOf(const HostTensor &t);

  MLIRContext &context;
  OpBuilder builder;
  std::string modelName, baseDir;
  const ImportOptions &options;
  FoldBudget budget;
  Location fileLoc;
  int64_t opset = 0;
  /// The model imports an opset of the default domain.
  bool hasDefaultOpset = false;
  /// ONNX name -> value.
  llvm::StringMap<ImportedValue> values;
  /// Names read by some node or listed as graph outputs.
  llvm::StringSet<> used;
  /// The fully static shapes the model declares for its values (graph
  /// outputs and value_info): the size of a data-dependent output.
  llvm::StringMap<SmallVector<int64_t>> declaredShapes;
  /// Arguments (by number) converters declared constants of the model
  /// (NodeContext::markFrozenWeight): they get `nn.frozen`.
  llvm::DenseSet<unsigned> frozenArgs;
  /// Float initializers (weights) by name, and the values of those an op
  /// reads as import-time constants (NodeContext::requireConstant: a Clip
  /// bound, a Pad value the exporter left in an initializer).
  llvm::StringMap<const onnx::TensorProto *> weightProtos;
  llvm::StringMap<std::shared_ptr<const HostTensor>> weightConstants;
  /// Node name -> "node 'N' (op 'X', opset V)", to name verifier errors.
  llvm::StringMap<std::string> nodeHeaders;
  /// First error diagnostic seen during import.
  std::string diagnostic;
  std::optional<Location> diagnosticLoc;
  /// fail() reported the import's error.
  bool hasFailed = false;
  /// Set while fail() emits its diagnostic: run()'s handler passes it on to
  /// the caller's handler instead of keeping it.
  bool reporting = false;
  /// Static batch re-specialization (docs/Importer.md "Static batch"): the
  /// tracker, the graph inputs whose static dimension 0 is resized, and the
  /// replaced constant inputs of the node being converted.
  BatchRespecializer *respec = nullptr;
  const llvm::StringSet<> *resizedInputs = nullptr;
  llvm::DenseMap<size_t, ImportedValue> inputOverrides;
  /// Words for the note ("micro-batch" or "batch").
  std::string batchNoun = "batch";
  /// The reference import of a re-specialization: shapes only, no weight
  /// values.
  bool referenceOnly = false;
  /// The opset of `node`'s domain the model imports (0 when none).
  int64_t nodeOpset(const onnx::NodeProto &node) const;

private:
  bool collectOpset(const onnx::ModelProto &model);
  bool checkValueType(const onnx::TypeProto &type, const std::string &quoted);
  /// Unsigned integer operands (outputs == false) or results of `node`
  /// only for the ops whose lowering implements unsigned semantics
  /// (isUnsignedAwareOp, ConvertUnsigned.cpp); else a "not supported".
  bool checkUnsignedOperands(const onnx::NodeProto &node,
                             const std::string &header, bool outputs);
  bool importInputs(const onnx::GraphProto &graph,
                    SmallVectorImpl<std::string> &inputNames,
                    SmallVectorImpl<Type> &inputTypes);
  bool sortNodes(const onnx::GraphProto &graph, const llvm::StringSet<> &defined,
                 std::vector<int> &order);
  bool checkOps(const onnx::GraphProto &graph, const std::vector<int> &order);
  bool runChecker(onnx::ModelProto &model);
  std::string nodeName(const onnx::NodeProto &node, int index) const;
  std::string nodeHeader(const onnx::NodeProto &node, int index) const;
  std::string describeDiagnostic(const std::string &message,
                                 std::optional<Location> loc);
  void failRespecialization(const std::string &header, const std::string &why) {
    fail(header + ": cannot re-specialize the static batch " +
         Twine(respec->getOldBatch()) + " to " + Twine(respec->getNewBatch()) +
         ": " + why + "; export the model with a dynamic batch axis "
         "(torch.onnx.export dynamic_axes)");
  }

  llvm::StringMap<int64_t> domainOpsets;
};

} // namespace pipedream::onnx_import

void GraphImporter::fail(const Twine &message) {
  if (hasFailed)
    return;
  hasFailed = true;
  reporting = true;
  pipedream::emitError(&context) << sanitize(modelName) << ": " << message;
  reporting = false;
}

llvm::Expected<RankedTensorType> GraphImporter::typeOf(const HostTensor &t) {
  Type element = getElementType(&context, t.dtype);
  if (!element)
    return makeError("data type " + dtypeName(t.dtype) + " is not supported");
  if (!checkedNumElements(t.shape))
    return makeError("invalid or too large shape " + shapeToString(t.shape));
  return RankedTensorType::get(t.shape, element);
}

ElementsAttr GraphImporter::toElementsAttr(const HostTensor &t,
                                           RankedTensorType type,
                                           StringRef nameHint) {
  if (t.dtype == kBool) {
    SmallVector<bool> bits;
    for (int64_t v : t.ints)
      bits.push_back(v != 0);
    return DenseElementsAttr::get(type, bits);
  }
  std::vector<char> bytes = hostToBytes(t);
  return elementsFromBytes(type, bytes, nameHint);
}

Value GraphImporter::materialize(ImportedValue &v, StringRef nameHint) {
  if (v.value)
    return v.value;
  if (!v.constant)
    return nullptr;
  Location loc = v.loc ? Location(v.loc) : fileLoc;
  ElementsAttr attr = toElementsAttr(*v.constant, v.type, nameHint);
  v.value = nn::ConstantOp::create(builder, loc, attr).getResult();
  return v.value;
}

int64_t GraphImporter::nodeOpset(const onnx::NodeProto &node) const {
  StringRef domain = node.domain();
  if (domain.empty() || domain == "ai.onnx")
    return opset;
  auto it = domainOpsets.find(domain);
  return it == domainOpsets.end() ? 0 : it->second;
}

std::string GraphImporter::nodeName(const onnx::NodeProto &node,
                                    int index) const {
  if (!node.name().empty())
    return node.name();
  return "#" + std::to_string(index);
}

std::string GraphImporter::nodeHeader(const onnx::NodeProto &node,
                                      int index) const {
  std::string op = node.op_type();
  StringRef domain = node.domain();
  if (!domain.empty() && domain != "ai.onnx")
    op = node.domain() + "." + op;
  return "node '" + sanitize(nodeName(node, index)) + "' (op '" +
         sanitize(op) + "', opset " + std::to_string(nodeOpset(node)) + ")";
}

bool GraphImporter::collectOpset(const onnx::ModelProto &model) {
  bool found = false;
  for (const auto &entry : model.opset_import()) {
    StringRef domain = entry.domain();
    if (domain.empty() || domain == "ai.onnx") {
      opset = entry.version();
      found = true;
    } else {
      domainOpsets[domain] = entry.version();
    }
  }
  if (!found && model.ir_version() < 3) {
    // Before IR version 3 models had no opset_import: opset 1.
    opset = 1;
    found = true;
  }
  // A model without the default domain is only an error once a node needs
  // it (checkOps); nodes of other domains are reported as not supported.
  hasDefaultOpset = found;
  if (found && (opset < kMinOpset || opset > kMaxOpset)) {
    fail("default-domain opset " + Twine(opset) +
         " is not supported (supported: " + Twine(kMinOpset) + " to " +
         Twine(kMaxOpset) + "); convert the model with "
                            "onnx.version_converter");
    return false;
  }
  return true;
}

/// "2x16" for messages and suggested options.
static std::string dimsToOption(ArrayRef<int64_t> dims) {
  std::string s;
  for (auto [i, d] : llvm::enumerate(dims)) {
    if (i)
      s += "x";
    s += std::to_string(d);
  }
  return s;
}

/// A graph input or output must be a tensor of a supported element type.
bool GraphImporter::checkValueType(const onnx::TypeProto &type,
                                   const std::string &quoted) {
  const char *kind = nullptr;
  switch (type.value_case()) {
  case onnx::TypeProto::kTensorType: break;
  case onnx::TypeProto::kSequenceType: kind = "a sequence"; break;
  case onnx::TypeProto::kMapType: kind = "a map"; break;
  case onnx::TypeProto::kOptionalType: kind = "an optional"; break;
  case onnx::TypeProto::kSparseTensorType: kind = "a sparse tensor"; break;
  default: kind = "of an unknown kind"; break;
  }
  if (kind) {
    fail(quoted + " is " + kind + ": not supported (only tensors)");
    return false;
  }
  int32_t dtype = type.tensor_type().elem_type();
  if (!getElementType(&context, dtype)) {
    fail(quoted + " has element type " + dtypeName(dtype) +
         ": not supported");
    return false;
  }
  return true;
}

bool GraphImporter::checkUnsignedOperands(const onnx::NodeProto &node,
                                          const std::string &header,
                                          bool outputs) {
  const auto &names = outputs ? node.output() : node.input();
  for (const std::string &name : names) {
    auto it = values.find(name);
    if (name.empty() || it == values.end() || !it->second.type)
      continue;
    Type element = it->second.type.getElementType();
    if (!element.isUnsignedInteger())
      continue;
    std::string why;
    if (isUnsignedAwareOp(node.op_type(), it->second, why))
      continue;
    fail(header + ": not supported: " + (outputs ? "output '" : "input '") +
         sanitize(name) + "' of element type " + dtypeName(getDType(element)) +
         (why.empty() ? " (unsigned integers reach only the ops "
                        "docs/Importer.md lists)"
                      : " (" + why + ")"));
    return false;
  }
  return true;
}

bool GraphImporter::importInputs(const onnx::GraphProto &graph,
                                 SmallVectorImpl<std::string> &inputNames,
                                 SmallVectorImpl<Type> &inputTypes) {
  llvm::StringSet<> initializerNames;
  for (const auto &init : graph.initializer())
    initializerNames.insert(init.name());
  // A misspelt --input-shape is reported before any missing shape.
  for (const auto &entry : options.inputShapes) {
    bool found = llvm::any_of(graph.input(), [&](const auto &input) {
      return input.name() == entry.getKey() &&
             !initializerNames.contains(input.name());
    });
    if (!found) {
      fail("--input-shape names '" + sanitize(entry.getKey()) +
           "', which is not a graph input of the model");
      return false;
    }
  }
  llvm::StringSet<> seen;
  for (const auto &input : graph.input()) {
    const std::string &name = input.name();
    // An input with an initializer of the same name is a weight with a
    // default value (IR < 4 style): the initializer wins.
    if (initializerNames.contains(name))
      continue;
    std::string quoted = "graph input '" + sanitize(name) + "'";
    if (name.empty()) {
      fail("a graph input has an empty name");
      return false;
    }
    if (!seen.insert(name).second) {
      fail(quoted + " is listed twice");
      return false;
    }
    if (!input.has_type()) {
      fail(quoted + " has no type");
      return false;
    }
    if (!checkValueType(input.type(), quoted))
      return false;
    const auto &tensorType = input.type().tensor_type();
    Type element = getElementType(&context, tensorType.elem_type());
    // Model dims: -1 marks dynamic ones, with their dim_param names.
    std::optional<SmallVector<int64_t>> modelDims;
    SmallVector<std::string> dimNames;
    if (tensorType.has_shape()) {
      modelDims.emplace();
      for (const auto &dim : tensorType.shape().dim()) {
        if (dim.has_dim_value() && dim.dim_value() >= 0) {
          modelDims->push_back(dim.dim_value());
          dimNames.push_back("");
        } else {
          modelDims->push_back(-1);
          dimNames.push_back(dim.has_dim_param() ? dim.dim_param() : "");
        }
      }
    }
    SmallVector<int64_t> dims;
    auto given = options.inputShapes.find(name);
    if (given != options.inputShapes.end()) {
      dims.assign(given->second.begin(), given->second.end());
      std::string option =
          "--input-shape " + sanitize(name) + "=" + dimsToOption(dims);
      if (modelDims && modelDims->size() != dims.size()) {
        fail(option + ": the model gives " + quoted + " rank " +
             Twine(modelDims->size()) + ", not " + Twine(dims.size()));
        return false;
      }
      bool resized = resizedInputs && resizedInputs->contains(name);
      for (size_t d = 0; modelDims && d < dims.size(); ++d) {
        if (d == 0 && resized)
          continue; // the static batch, re-specialized
        if ((*modelDims)[d] >= 0 && (*modelDims)[d] != dims[d]) {
          fail(option + ": dimension " + Twine(d) + " of " + quoted +
               " is " + Twine((*modelDims)[d]) +
               " in the model (only the batch dimension 0 of a static "
               "shape can be overridden)");
          return false;
        }
      }
    } else if (!modelDims) {
      fail(quoted + " has no shape: give one with --input-shape " +
           sanitize(name) + "=D0xD1...");
      return false;
    } else {
      dims = *modelDims;
      if (options.batchSize > 0 && !dims.empty()) {
        if (dims[0] >= 0 && dims[0] != options.batchSize &&
            !(resizedInputs && resizedInputs->contains(name))) {
          fail(quoted + " has a static batch dimension of " + Twine(dims[0]) +
               ", but the micro-batch is " + Twine(options.batchSize) +
               " samples (--batch-size / --microbatches); export the model "
               "with a dynamic batch axis or match its batch size");
          return false;
        }
        dims[0] = options.batchSize;
      }
      for (auto [d, size] : llvm::enumerate(dims)) {
        if (size >= 0)
          continue;
        SmallVector<int64_t> example(dims);
        for (int64_t &e : example)
          e = e < 0 ? 1 : e;
        std::string param =
            dimNames[d].empty() ? "" : " ('" + sanitize(dimNames[d]) + "')";
        fail(quoted + " has dynamic dimension " + Twine(d) + param +
             "; give its shape with --input-shape, e.g. --input-shape " +
             sanitize(name) + "=" + dimsToOption(example));
        return false;
      }
    }
    if (!checkedNumElements(dims)) {
      fail(quoted + " has an invalid or too large shape " +
           shapeToString(dims));
      return false;
    }
    inputNames.push_back(name);
    inputTypes.push_back(RankedTensorType::get(dims, element));
  }
  return true;
}

bool GraphImporter::sortNodes(const onnx::GraphProto &graph,
                              const llvm::StringSet<> &defined,
                              std::vector<int> &order) {
  int numNodes = graph.node_size();
  // Producer of every node output; graph inputs and initializers are
  // defined from the start.
  llvm::StringMap<int> producer;
  for (int i = 0; i < numNodes; ++i) {
    for (const std::string &out : graph.node(i).output()) {
      if (out.empty())
        continue;
      if (defined.contains(out) || !producer.try_emplace(out, i).second) {
        fail(nodeHeader(graph.node(i), i) + ": output '" + sanitize(out) +
             "' is already defined (a graph must define each name once)");
        return false;
      }
    }
  }
  std::vector<int> pending(numNodes, 0);
  std::vector<std::vector<int>> consumers(numNodes);
  for (int i = 0; i < numNodes; ++i) {
    const auto &node = graph.node(i);
    for (const std::string &in : node.input()) {
      if (in.empty() || defined.contains(in))
        continue;
      auto it = producer.find(in);
      if (it == producer.end()) {
        fail(nodeHeader(node, i) + ": input '" + sanitize(in) +
             "' is not defined (no graph input, initializer or node output "
             "has this name)");
        return false;
      }
      ++pending[i];
      consumers[it->second].push_back(i);
    }
  }
  // Kahn's algorithm, preferring file order among ready nodes so that a
  // sorted file keeps its order.
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < numNodes; ++i)
    if (pending[i] == 0)
      ready.push(i);
  while (!ready.empty()) {
    int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int c : consumers[i])
      if (--pending[c] == 0)
        ready.push(c);
  }
  if (int(order.size()) != numNodes) {
    for (int i = 0; i < numNodes; ++i) {
      if (pending[i] != 0) {
        fail(nodeHeader(graph.node(i), i) +
             ": is on a cycle; the graph cannot be sorted topologically");
        return false;
      }
    }
  }
  return true;
}

bool GraphImporter::checkOps(const onnx::GraphProto &graph,
                             const std::vector<int> &order) {
  const OpTable &table = getOpTable();
  for (int i : order) {
    const auto &node = graph.node(i);
    StringRef domain = node.domain();
    if (isDefaultDomain(domain) && !hasDefaultOpset) {
      fail(nodeHeader(node, i) +
           ": the model imports no opset of the default ONNX domain");
      return false;
    }
    auto it = table.find(opTableKey(node));
    if (it == table.end()) {
      fail(nodeHeader(node, i) + ": not supported");
      return false;
    }
    if (!isDefaultDomain(domain) && nodeOpset(node) == 0) {
      fail(nodeHeader(node, i) + ": the model imports no opset of domain '" +
           sanitize(domain.str()) + "'");
      return false;
    }
    const OpInfo &info = it->second;
    int64_t since = getSinceVersion(info, nodeOpset(node));
    if (since == 0) {
      fail(nodeHeader(node, i) + ": not supported: '" +
           sanitize(node.op_type()) + "' is defined from opset " +
           Twine(info.versions.front()));
      return false;
    }
    if (since < info.oldestHandled) {
      fail(nodeHeader(node, i) + ": not supported: the opset-" +
           Twine(since) + " form of '" + sanitize(node.op_type()) +
           "' (handled from opset " + Twine(info.oldestHandled) + ")");
      return false;
    }
  }
  return true;
}

bool GraphImporter::runChecker(onnx::ModelProto &model) {
  // Newer models are valid but unknown to the linked ONNX library, whose
  // checker would reject them.
  if (!options.runChecker ||
      model.ir_version() > onnx_proto::checkerMaxIRVersion() ||
      opset > onnx_proto::checkerMaxOpset())
    return true;
  // ONNX 1.12's checker insists on a shape for every graph input and
  // output, though the format allows unknown ones: lend an empty shape to
  // those without for the check (it does not compare shapes) and take it
  // back afterwards.
  SmallVector<onnx::TypeProto_Tensor *> lent;
  auto *graph = model.mutable_graph();
  for (auto *infos : {graph->mutable_input(), graph->mutable_output()}) {
    for (auto &info : *infos) {
      if (info.has_type() && info.type().has_tensor_type() &&
          !info.type().tensor_type().has_shape()) {
        auto *tensorType = info.mutable_type()->mutable_tensor_type();
        tensorType->mutable_shape();
        lent.push_back(tensorType);
      }
    }
  }
  // The checker resolves external data against the working directory when
  // given a ModelProto: point it at the model's directory the same way.
  SmallVector<std::pair<std::string *, std::string>> moved;
  if (!baseDir.empty()) {
    for (auto &init : *graph->mutable_initializer()) {
      if (init.data_location() != onnx::TensorProto::EXTERNAL)
        continue;
      for (auto &entry : *init.mutable_external_data()) {
        if (entry.key() != "location" ||
            llvm::sys::path::is_absolute(entry.value()))
          continue;
        SmallString<256> path(baseDir);
        llvm::sys::path::append(path, entry.value());
        moved.emplace_back(entry.mutable_value(), entry.value());
        *entry.mutable_value() = std::string(path);
      }
    }
  }
  std::optional<std::string> rejected = onnx_proto::checkModel(model);
  for (auto *tensorType : lent)
    tensorType->clear_shape();
  for (auto &[value, original] : moved)
    *value = original;
  if (rejected)
    fail("invalid ONNX model: " + sanitize(*rejected));
  return !rejected;
}

std::string GraphImporter::describeDiagnostic(const std::string &message,
                                              std::optional<Location> loc) {
  std::string header;
  if (loc) {
    (*loc)->walk([&](Location l) {
      if (auto named = dyn_cast<NameLoc>(l)) {
        auto it = nodeHeaders.find(named.getName().getValue());
        if (it != nodeHeaders.end()) {
          header = it->second;
          return WalkResult::interrupt();
        }
      }
      return WalkResult::advance();
    });
  }
  return header.empty() ? message : header + ": " + message;
}

FailureOr<OwningOpRef<ModuleOp>>
GraphImporter::run(onnx::ModelProto &model) {
  // Keep the first error diagnostic (type inference, verifier) to report it
  // with the node that caused it.
  // NOTE: the verifier may report from worker threads.
  std::mutex diagnosticMutex;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    // The importer's own error (fail()) is for the caller's handler.
    if (reporting)
      return failure();
    std::lock_guard<std::mutex> lock(diagnosticMutex);
    if (diag.getSeverity() == DiagnosticSeverity::Error &&
        diagnostic.empty()) {
      std::string text = diag.str();
      diagnostic = sanitize(StringRef(text).split('\n').first);
      diagnosticLoc = diag.getLocation();
    }
    return success();
  });

  if (!model.has_graph()) {
    fail("not an ONNX model (no graph)");
    return failure();
  }
  if (!collectOpset(model))
    return failure();
  const onnx::GraphProto &graph = model.graph();

  // Structure first: every name defined once, a topological order, only
  // supported ops; then ONNX's checker.
  llvm::StringSet<> defined;
  for (const auto &input : graph.input())
    defined.insert(input.name());
  for (const auto &init : graph.initializer())
    defined.insert(init.name());
  std::vector<int> order;
  if (!sortNodes(graph, defined, order) || !checkOps(graph, order))
    return failure();
  if (!llvm::equal(order, llvm::seq<int>(0, int(order.size())))) {
    // Store the nodes sorted (the checker insists on it).
    auto *nodes = model.mutable_graph()->mutable_node();
    google::protobuf::RepeatedPtrField<onnx::NodeProto> sorted;
    for (int i : order)
      *sorted.Add() = std::move(*nodes->Mutable(i));
    nodes->Swap(&sorted);
    for (size_t i = 0; i < order.size(); ++i)
      order[i] = int(i);
  }
  if (!runChecker(model))
    return failure();
  for (const auto &output : graph.output()) {
    if (output.has_type() &&
        !checkValueType(output.type(),
                        "graph output '" + sanitize(output.name()) + "'"))
      return failure();
  }

  // Graph inputs, then weights (floating-point initializers) as arguments.
  SmallVector<std::string> argNames;
  SmallVector<Type> argTypes;
  if (!importInputs(graph, argNames, argTypes))
    return failure();
  size_t numInputs = argNames.size();
  SmallVector<const onnx::TensorProto *> weights;
  for (const auto &init : graph.initializer()) {
    std::string quoted = "initializer '" + sanitize(init.name()) + "'";
    if (init.name().empty()) {
      fail("an initializer has an empty name");
      return failure();
    }
    if (values.count(init.name())) {
      fail(quoted + " is defined twice");
      return failure();
    }
    int32_t dtype = init.data_type();
    SmallVector<int64_t> dims(init.dims().begin(), init.dims().end());
    Type element = getElementType(&context, dtype);
    if (!element) {
      fail(quoted + " has data type " + dtypeName(dtype) + ": not supported");
      return failure();
    }
    if (!checkedNumElements(dims)) {
      fail(quoted + " has invalid or too large dimensions " +
           shapeToString(dims));
      return failure();
    }
    ImportedValue &v = values[init.name()];
    v.type = RankedTensorType::get(dims, element);
    v.dtype = dtype;
    v.loc = NameLoc::get(StringAttr::get(&context, init.name()), fileLoc);
    if (isFloatDType(dtype)) {
      weights.push_back(&init);
      weightProtos[init.name()] = &init;
      argNames.push_back(init.name());
      argTypes.push_back(v.type);
      continue;
    }
    // Integer and bool initializers are constants.
    auto constant = decodeTensor(init, baseDir);
    if (!constant) {
      fail(quoted + ": " + llvm::toString(constant.takeError()));
      return failure();
    }
    v.constant = std::make_shared<const HostTensor>(std::move(*constant));
  }

  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  Builder b(&context);
  (*module)->setAttr(import_attrs::kModel, b.getStringAttr(modelName));
  std::string producer = model.producer_name();
  if (!model.producer_version().empty())
    producer += (producer.empty() ? "" : " ") + model.producer_version();
  (*module)->setAttr(import_attrs::kProducer,
                     b.getStringAttr(sanitize(producer)));
  (*module)->setAttr(import_attrs::kOpset, b.getI64IntegerAttr(opset));
  {
    // For --train's error on an initializer that cannot be trained.
    SmallVector<Attribute> constantNames;
    for (const auto &init : graph.initializer())
      if (!isFloatDType(init.data_type()))
        constantNames.push_back(b.getStringAttr(init.name()));
    if (!constantNames.empty())
      (*module)->setAttr(import_attrs::kConstantInitializers,
                         b.getArrayAttr(constantNames));
  }

  builder.setInsertionPointToEnd(module->getBody());
  auto func = func::FuncOp::create(builder, fileLoc, "main",
                                   b.getFunctionType(argTypes, {}));
  Block *body = func.addEntryBlock();
  builder.setInsertionPointToEnd(body);
  for (size_t i = 0; i < argNames.size(); ++i) {
    BlockArgument arg = body->getArgument(i);
    arg.setLoc(NameLoc::get(StringAttr::get(&context, argNames[i]), fileLoc));
    ImportedValue &v = values[argNames[i]];
    if (i < numInputs) {
      v.type = cast<RankedTensorType>(argTypes[i]);
      v.dtype = getDType(v.type.getElementType());
    }
    v.value = arg;
  }


  for (const auto &node : graph.node())
    for (const std::string &in : node.input())
      if (!in.empty())
        used.insert(in);
  for (const auto &out : graph.output())
    used.insert(out.name());
  auto declare = [&](const onnx::ValueInfoProto &info) {
    if (!info.has_type() || !info.type().has_tensor_type() ||
        !info.type().tensor_type().has_shape())
      return;
    SmallVector<int64_t> dims;
    for (const auto &d : info.type().tensor_type().shape().dim()) {
      if (!d.has_dim_value() || d.dim_value() < 0)
        return;
      dims.push_back(d.dim_value());
    }
    declaredShapes[info.name()] = std::move(dims);
  };
  for (const auto &info : graph.value_info())
    declare(info);
  for (const auto &out : graph.output())
    declare(out);

  // Convert in topological order.
  const OpTable &table = getOpTable();
  for (int i : order) {
    const auto &node = graph.node(i);
    std::string name = nodeName(node, i);
    nodeHeaders[name] = nodeHeader(node, i);
    Location loc = NameLoc::get(StringAttr::get(&context, name), fileLoc);
    NodeContext ctx(*this, node, name, loc);
    inputOverrides.clear();
    if (respec)
      if (llvm::Error e = respec->prepare(node, ctx.sinceVersion(), values,
                                          inputOverrides)) {
        failRespecialization(nodeHeaders[name], llvm::toString(std::move(e)));
        return failure();
      }
    if (!checkUnsignedOperands(node, nodeHeaders[name], /*outputs=*/false))
      return failure();
    table.lookup(opTableKey(node)).convert(ctx);
    inputOverrides.clear();
    if (failed() ||
        !checkUnsignedOperands(node, nodeHeaders[name], /*outputs=*/true))
      return failure();
    if (respec)
      if (llvm::Error e = respec->finish(node, values)) {
        failRespecialization(nodeHeaders[name], llvm::toString(std::move(e)));
        return failure();
      }
    // Every output a later node reads must have been defined.
    for (const std::string &out : node.output()) {
      if (!out.empty() && used.contains(out) && !values.count(out)) {
        fail(nodeHeaders[name] + ": output '" + sanitize(out) +
             "' was not produced");
        return failure();
      }
    }
  }

  // Graph outputs.
  SmallVector<Value> results;
  SmallVector<std::string> resultNames;
  for (const auto &out : graph.output()) {
    auto it = values.find(out.name());
    if (it == values.end()) {
      fail("graph output '" + sanitize(out.name()) +
           "' is not defined by any node, input or initializer");
      return failure();
    }
    if (respec)
      if (llvm::Error e = respec->checkOutput(out.name())) {
        fail("cannot re-specialize the static batch " +
             Twine(respec->getOldBatch()) + " to " +
             Twine(respec->getNewBatch()) + ": " +
             llvm::toString(std::move(e)) +
             "; export the model with a dynamic batch axis "
             "(torch.onnx.export dynamic_axes)");
        return failure();
      }
    results.push_back(materialize(it->second, out.name()));
    resultNames.push_back(out.name());
  }
  if (results.empty()) {
    fail("the graph has no outputs");
    return failure();
  }
  func::ReturnOp::create(builder, fileLoc, results);

  // Drop ops nothing reads (dead shape computations, unused constants) and
  // weights only those ops read.
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(*body)))
    if (isOpTriviallyDead(&op))
      op.erase();
  llvm::BitVector unusedArgs(body->getNumArguments());
  for (size_t i = numInputs; i < body->getNumArguments(); ++i)
    if (body->getArgument(i).use_empty())
      unusedArgs.set(i);

  // Weight values (nn.param) of the remaining weights.
  SmallVector<ElementsAttr> params;
  for (size_t w = 0; w < weights.size() && !referenceOnly; ++w) {
    if (unusedArgs.test(numInputs + w))
      continue;
    const onnx::TensorProto &init = *weights[w];
    SmallVector<int64_t> dims;
    std::vector<char> storage;
    std::unique_ptr<llvm::MemoryBuffer> external;
    auto bytes = getTensorBytes(init, baseDir, dims, storage, &external);
    if (!bytes) {
      fail("initializer '" + sanitize(init.name()) +
           "': " + llvm::toString(bytes.takeError()));
      return failure();
    }
    auto type = cast<RankedTensorType>(argTypes[numInputs + w]);
    params.push_back(
        elementsFromBytes(type, *bytes, init.name(), std::move(external)));
  }
  if (::mlir::failed(func.eraseArguments(unusedArgs))) {
    fail("internal error: cannot erase unused weight arguments");
    return failure();
  }
  func.setType(b.getFunctionType(body->getArgumentTypes(),
                                 ValueRange(results).getTypes()));
  auto nameAttr = [&](StringRef n) {
    return b.getNamedAttr(nn::NNDialect::kNameAttrName, b.getStringAttr(n));
  };
  size_t w = 0, argIndex = 0;
  TorchProvenance provenance(graph);
  for (size_t i = 0; i < argNames.size(); ++i) {
    if (unusedArgs.test(i))
      continue;
    SmallVector<NamedAttribute> attrs{nameAttr(argNames[i])};
    if (i >= numInputs)
      if (DictionaryAttr origin = provenance.originOf(argNames[i], b))
        attrs.push_back(b.getNamedAttr(nn::NNDialect::kOriginAttrName, origin));
    if (i >= numInputs && !referenceOnly)
      attrs.push_back(
          b.getNamedAttr(nn::NNDialect::kParamAttrName, params[w++]));
    if (i >= numInputs && frozenArgs.contains(unsigned(i)))
      attrs.push_back(
          b.getNamedAttr(nn::NNDialect::kFrozenAttrName, b.getUnitAttr()));
    func.setArgAttrs(argIndex++, attrs);
  }
  for (auto [i, name] : llvm::enumerate(resultNames))
    func.setResultAttrs(i, {nameAttr(name)});
  // Float initializers read only as import-time constants are constants
  // too (for --train's and --freeze's messages).
  if (!weightConstants.empty()) {
    SmallVector<Attribute> constantNames;
    if (auto names =
            (*module)->getAttrOfType<ArrayAttr>(import_attrs::kConstantInitializers))
      llvm::append_range(constantNames, names.getValue());
    for (size_t i = numInputs; i < argNames.size(); ++i)
      if (unusedArgs.test(i) && weightConstants.count(argNames[i]))
        constantNames.push_back(b.getStringAttr(argNames[i]));
    (*module)->setAttr(import_attrs::kConstantInitializers,
                       b.getArrayAttr(constantNames));
  }
  if (respec) {
    std::string what = respec->rewrittenSummary();
    (*module)->setAttr(
        import_attrs::kBatchRespecialized,
        b.getStringAttr("static batch " + Twine(respec->getOldBatch()) +
                        " re-specialized to " + batchNoun + " " +
                        Twine(respec->getNewBatch()) + " (" +
                        (what.empty() ? std::string("no constants")
                                      : what) +
                        " rewritten)"));
  }

  // GELU spelled out (Div, Erf, Add, Mul, Mul: PyTorch below opset 20)
  // as one nn.gelu (nn-fuse-activations).
  if (::mlir::failed(nn::fuseActivations(*module))) {
    fail("internal error: the activation fusion did not converge");
    return failure();
  }
  if (::mlir::failed(mlir::verify(*module))) {
    fail(describeDiagnostic(diagnostic.empty() ? "the imported module does "
                                                 "not verify"
                                               : diagnostic,
                            diagnosticLoc));
    return failure();
  }
  return module;
}

//===----------------------------------------------------------------------===//
// NodeContext
//===----------------------------------------------------------------------===//

NodeContext::NodeContext(GraphImporter &importer, const onnx::NodeProto &node,
                         StringRef name, Location loc)
    : importer(importer), node(node), name(name.str()), loc(loc) {}

int64_t NodeContext::opset() const { return importer.opset; }
int64_t NodeContext::sinceVersion() const {
  auto it = getOpTable().find(opTableKey(node));
  return it == getOpTable().end()
             ? 0
             : getSinceVersion(it->second, importer.nodeOpset(node));
}
OpBuilder &NodeContext::builder() { return importer.builder; }
MLIRContext *NodeContext::getContext() { return &importer.context; }
FoldBudget &NodeContext::budget() { return importer.budget; }

std::string NodeContext::header() const {
  auto it = importer.nodeHeaders.find(name);
  return it != importer.nodeHeaders.end() ? it->second : "node '" + name + "'";
}

void NodeContext::fail(const Twine &message) {
  importer.fail(header() + ": " + message);
}

void NodeContext::unsupported(const Twine &reason) {
  std::string text = reason.str();
  fail(text.empty() ? Twine("not supported") : "not supported: " + text);
}

bool NodeContext::failed() const { return importer.failed(); }

void NodeContext::failFromDiagnostic() {
  fail(importer.diagnostic.empty() ? "result type inference failed"
                                   : importer.diagnostic);
}

bool NodeContext::checkResultTypes(ArrayRef<Type> types) {
  for (Type t : types) {
    auto ranked = dyn_cast<RankedTensorType>(t);
    if (!ranked || !ranked.hasStaticShape() ||
        !checkedNumElements(ranked.getShape())) {
      fail("result type " + (ranked ? shapeToString(ranked.getShape())
                                    : std::string("?")) +
           " is invalid or too large");
      return false;
    }
  }
  return true;
}

bool NodeContext::hasInput(size_t i) const {
  return i < numInputs() && !node.input(int(i)).empty();
}

std::string NodeContext::inputName(size_t i) const {
  return hasInput(i) ? sanitize(node.input(int(i))) : std::string();
}

ImportedValue *NodeContext::input(size_t i) {
  if (!hasInput(i))
    return nullptr;
  auto replaced = importer.inputOverrides.find(i);
  if (replaced != importer.inputOverrides.end())
    return &replaced->second;
  auto it = importer.values.find(node.input(int(i)));
  return it == importer.values.end() ? nullptr : &it->second;
}

void NodeContext::markFrozenWeight(size_t i) {
  ImportedValue *v = input(i);
  if (!v || !v->value)
    return;
  auto arg = dyn_cast<BlockArgument>(v->value);
  if (arg && arg.getOwner()->getParentOp() &&
      isa<func::FuncOp>(arg.getOwner()->getParentOp()))
    importer.frozenArgs.insert(arg.getArgNumber());
}

const HostTensor *NodeContext::constantInput(size_t i) {
  ImportedValue *v = input(i);
  return v && v->constant ? &*v->constant : nullptr;
}

bool NodeContext::isWeightInput(size_t i) const {
  return hasInput(i) && !importer.inputOverrides.count(i) &&
         importer.weightProtos.count(node.input(int(i)));
}

const HostTensor *NodeContext::requireConstant(size_t i, StringRef what) {
  if (!hasInput(i)) {
    fail("missing input '" + what + "'");
    return nullptr;
  }
  if (const HostTensor *t = constantInput(i))
    return t;
  // A float initializer where the op needs a constant (torch's dynamo
  // exporter writes ReLU6's Clip bounds as initializers): its value is
  // known, and the weight is frozen, so every reader sees that value.
  auto proto = importer.weightProtos.find(node.input(int(i)));
  if (proto != importer.weightProtos.end() &&
      !importer.inputOverrides.count(i)) {
    std::shared_ptr<const HostTensor> &cached =
        importer.weightConstants[proto->first()];
    if (!cached) {
      auto decoded = decodeTensor(*proto->second, importer.baseDir);
      if (!decoded) {
        fail("initializer '" + sanitize(proto->first()) +
             "': " + llvm::toString(decoded.takeError()));
        return nullptr;
      }
      cached = std::make_shared<const HostTensor>(std::move(*decoded));
    }
    markFrozenWeight(i);
    return &*cached;
  }
  std::string valueName = sanitize(node.input(int(i)));
  unsupported("input '" + what + "'" +
              (valueName == what ? "" : " ('" + valueName + "')") +
              " is not a constant that can be computed at import time");
  return nullptr;
}

bool NodeContext::allInputsConstant() {
  for (size_t i = 0; i < numInputs(); ++i)
    if (hasInput(i) && !constantInput(i))
      return false;
  return true;
}

bool NodeContext::requireInputs(size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (!input(i)) {
      fail("expects at least " + Twine(n) + " inputs, input " + Twine(i) +
           " is missing");
      return false;
    }
  }
  return true;
}

Value NodeContext::operand(size_t i, StringRef what) {
  if (failed())
    return nullptr;
  ImportedValue *v = input(i);
  if (!v) {
    fail("missing input " +
         (what.empty() ? Twine(i) : Twine("'") + what + "'"));
    return nullptr;
  }
  return importer.materialize(*v, node.input(int(i)));
}

RankedTensorType NodeContext::inputType(size_t i, StringRef what) {
  ImportedValue *v = input(i);
  if (!v) {
    fail("missing input " +
         (what.empty() ? Twine(i) : Twine("'") + what + "'"));
    return nullptr;
  }
  return v->type;
}

RankedTensorType NodeContext::spatialInputType(size_t i, StringRef what) {
  RankedTensorType type = inputType(i, what);
  if (type && type.getRank() < 3) {
    fail("input must be N x C x D1 ... Dn, got rank " + Twine(type.getRank()));
    return nullptr;
  }
  return type;
}

bool NodeContext::checkKernelShape(ArrayRef<int64_t> kernel) {
  if (auto given = intsAttr("kernel_shape")) {
    if (ArrayRef<int64_t>(*given) != kernel) {
      fail("kernel_shape " + shapeToString(*given) +
           " differs from the weight's " + shapeToString(kernel));
      return false;
    }
  }
  return true;
}

bool NodeContext::outputUsed(size_t i) const {
  return i < numOutputs() && !node.output(int(i)).empty() &&
         importer.used.contains(node.output(int(i)));
}

std::optional<SmallVector<int64_t>>
NodeContext::declaredOutputShape(size_t i) const {
  if (i >= numOutputs() || node.output(int(i)).empty())
    return std::nullopt;
  auto it = importer.declaredShapes.find(node.output(int(i)));
  if (it == importer.declaredShapes.end())
    return std::nullopt;
  return it->second;
}

void NodeContext::setOutput(size_t i, Value value) {
  if (!value || i >= numOutputs() || node.output(int(i)).empty())
    return;
  auto type = cast<RankedTensorType>(value.getType());
  ImportedValue &v = importer.values[node.output(int(i))];
  v.type = type;
  v.dtype = getDType(type.getElementType());
  v.value = value;
}

void NodeContext::setOutput(size_t i, HostTensor constant) {
  if (i >= numOutputs() || node.output(int(i)).empty())
    return;
  llvm::Expected<RankedTensorType> type = importer.typeOf(constant);
  if (!check(type.takeError()))
    return;
  // Constant nodes only decode what the file holds; every computed result
  // counts against the folding budget.
  if (opType() != "Constant" &&
      !check(importer.budget.charge(constant.numElements())))
    return;
  ImportedValue &v = importer.values[node.output(int(i))];
  v.type = *type;
  v.dtype = constant.dtype;
  v.loc = loc;
  v.constant = std::make_shared<const HostTensor>(std::move(constant));
}

Value NodeContext::constantValue(const HostTensor &t) {
  if (failed())
    return nullptr;
  llvm::Expected<RankedTensorType> type = importer.typeOf(t);
  if (!check(type.takeError()))
    return nullptr;
  if (!check(importer.budget.charge(t.numElements())))
    return nullptr;
  ElementsAttr attr = importer.toElementsAttr(t, *type, "");
  return nn::ConstantOp::create(builder(), loc, attr).getResult();
}

void NodeContext::setOutputAlias(size_t i, const ImportedValue &value) {
  if (i >= numOutputs() || node.output(int(i)).empty())
    return;
  ImportedValue copy = value;
  importer.values[node.output(int(i))] = std::move(copy);
}

void NodeContext::setFolded(HostResult result) {
  if (!result) {
    check(result.takeError());
    return;
  }
  setOutput(0, std::move(*result));
}

bool NodeContext::check(llvm::Error error) {
  if (!error)
    return true;
  fail(llvm::toString(std::move(error)));
  return false;
}

const onnx::AttributeProto *NodeContext::attr(StringRef attrName) const {
  for (const auto &a : node.attribute())
    if (a.name() == attrName)
      return &a;
  return nullptr;
}

int64_t NodeContext::intAttr(StringRef attrName, int64_t defaultValue) {
  const auto *a = attr(attrName);
  if (!a)
    return defaultValue;
  if (a->type() == onnx::AttributeProto::INT ||
      (a->type() == onnx::AttributeProto::UNDEFINED && a->has_i()))
    return a->i();
  fail("attribute '" + attrName + "' must be an int");
  return defaultValue;
}

double NodeContext::floatAttr(StringRef attrName, double defaultValue) {
  const auto *a = attr(attrName);
  if (!a)
    return defaultValue;
  if (a->type() == onnx::AttributeProto::FLOAT ||
      (a->type() == onnx::AttributeProto::UNDEFINED && a->has_f()))
    return a->f();
  fail("attribute '" + attrName + "' must be a float");
  return defaultValue;
}

std::string NodeContext::stringAttr(StringRef attrName,
                                    StringRef defaultValue) {
  const auto *a = attr(attrName);
  if (!a)
    return defaultValue.str();
  if (a->type() == onnx::AttributeProto::STRING ||
      (a->type() == onnx::AttributeProto::UNDEFINED && a->has_s()))
    return a->s();
  fail("attribute '" + attrName + "' must be a string");
  return defaultValue.str();
}

std::optional<SmallVector<int64_t>> NodeContext::intsAttr(StringRef attrName) {
  const auto *a = attr(attrName);
  if (!a)
    return std::nullopt;
  if (a->type() == onnx::AttributeProto::INTS ||
      a->type() == onnx::AttributeProto::UNDEFINED)
    return SmallVector<int64_t>(a->ints().begin(), a->ints().end());
  fail("attribute '" + attrName + "' must be a list of ints");
  return std::nullopt;
}

std::optional<HostTensor> NodeContext::tensorAttr(StringRef attrName) {
  const auto *a = attr(attrName);
  if (!a)
    return std::nullopt;
  if (a->type() != onnx::AttributeProto::TENSOR &&
      !(a->type() == onnx::AttributeProto::UNDEFINED && a->has_t())) {
    fail("attribute '" + attrName + "' must be a tensor");
    return std::nullopt;
  }
  auto t = decodeTensor(a->t(), importer.baseDir);
  if (!t) {
    fail("attribute '" + attrName + "': " + llvm::toString(t.takeError()));
    return std::nullopt;
  }
  return std::move(*t);
}

std::optional<int64_t> NodeContext::normalizeAxis(int64_t axis, int64_t rank,
                                                  StringRef what) {
  if (axis < -rank || axis >= rank) {
    fail(what + " " + Twine(axis) + " is out of range for rank " +
         Twine(rank));
    return std::nullopt;
  }
  return axis < 0 ? axis + rank : axis;
}

std::optional<SmallVector<int64_t>>
NodeContext::normalizeAxes(ArrayRef<int64_t> axes, int64_t rank) {
  SmallVector<int64_t> result;
  for (int64_t a : axes) {
    auto n = normalizeAxis(a, rank);
    if (!n)
      return std::nullopt;
    result.push_back(*n);
  }
  llvm::sort(result);
  if (std::adjacent_find(result.begin(), result.end()) != result.end()) {
    fail("axes " + shapeToString(axes) + " name an axis twice");
    return std::nullopt;
  }
  return result;
}

SmallVector<int64_t> NodeContext::toInts(const HostTensor &t) {
  SmallVector<int64_t> out;
  for (int64_t i = 0, n = t.numElements(); i < n; ++i)
    out.push_back(t.getInt(i));
  return out;
}

std::optional<SmallVector<int64_t>> NodeContext::constantInts(size_t i,
                                                              StringRef what) {
  const HostTensor *t = requireConstant(i, what);
  if (!t)
    return std::nullopt;
  if (t->isFloat() || t->rank() > 1) {
    fail("input '" + what + "' must be a 1-D integer tensor");
    return std::nullopt;
  }
  return toInts(*t);
}

std::optional<SmallVector<int64_t>>
NodeContext::axesOperand(bool fromInput, size_t index, bool &ok) {
  ok = true;
  if (fromInput) {
    if (!hasInput(index))
      return std::nullopt;
    auto axes = constantInts(index, "axes");
    ok = axes.has_value();
    return axes;
  }
  auto axes = intsAttr("axes");
  ok = !failed();
  return axes;
}

IntegerAttr NodeContext::i64(int64_t v) {
  return IntegerAttr::get(IntegerType::get(getContext(), 64), v);
}
FloatAttr NodeContext::f64(double v) {
  return FloatAttr::get(Float64Type::get(getContext()), v);
}
BoolAttr NodeContext::boolean(bool v) { return BoolAttr::get(getContext(), v); }
DenseI64ArrayAttr NodeContext::i64s(ArrayRef<int64_t> v) {
  return DenseI64ArrayAttr::get(getContext(), v);
}

int64_t onnx_import::getSinceVersion(const OpInfo &info, int64_t opset) {
  int64_t since = 0;
  for (int64_t v : info.versions)
    if (v <= opset)
      since = v;
  return since;
}

std::string onnx_import::opTableKey(const onnx::NodeProto &node) {
  if (isDefaultDomain(node.domain()))
    return node.op_type();
  return node.domain() + "." + node.op_type();
}

const OpTable &onnx_import::getOpTable() {
  static const OpTable table = [] {
    OpTable t;
    registerElementwiseOps(t);
    registerShapeOps(t);
    registerNeuralOps(t);
    registerIndexingOps(t);
    registerLayerOps(t);
    registerLossOps(t);
    registerMathOps(t);
    registerRecurrentOps(t);
    registerSamplingOps(t);
    registerUnsignedOps(t);
    registerTrainingOps(t);
    registerDataDependentOps(t);
    return t;
  }();
  return table;
}

//===----------------------------------------------------------------------===//
// Static batch re-specialization
//===----------------------------------------------------------------------===//

namespace {
/// The graph inputs whose static batch dimension (0) an import resizes.
struct BatchPlan {
  int64_t oldBatch = 0, newBatch = 0;
  /// Static dimension 0 resized.
  llvm::StringSet<> resized;
  /// Dynamic dimension 0 set by ImportOptions::batchSize: batch inputs too.
  llvm::StringSet<> filled;
};
} // namespace

/// Finds the graph inputs whose static dimension 0 differs from the one
/// asked for (--input-shape, ImportOptions::batchSize); an error when they
/// disagree on the batch.
static llvm::Error planBatch(const onnx::GraphProto &graph,
                             const ImportOptions &options, BatchPlan &plan) {
  llvm::StringSet<> initializers;
  for (const auto &init : graph.initializer())
    initializers.insert(init.name());
  struct Static {
    std::string name;
    int64_t dim0;
    bool given;
  };
  SmallVector<Static> statics;
  std::string first;
  for (const auto &input : graph.input()) {
    if (initializers.contains(input.name()) || !input.has_type() ||
        !input.type().has_tensor_type() ||
        !input.type().tensor_type().has_shape())
      continue;
    const auto &shape = input.type().tensor_type().shape();
    if (shape.dim_size() == 0)
      continue;
    auto given = options.inputShapes.find(input.name());
    int64_t requested;
    if (given != options.inputShapes.end()) {
      if (given->second.size() != size_t(shape.dim_size()))
        continue; // importInputs reports the rank
      for (int d = 1; d < shape.dim_size(); ++d) {
        const auto &dim = shape.dim(d);
        if (dim.has_dim_value() && dim.dim_value() >= 0 &&
            dim.dim_value() != given->second[d]) {
          return makeError(
              "--input-shape " + sanitize(input.name()) + "=" +
              dimsToOption(given->second) + ": dimension " + std::to_string(d) +
              " of graph input '" + sanitize(input.name()) + "' is " +
              std::to_string(dim.dim_value()) +
              " in the model (only the batch dimension 0 of a static "
              "shape can be overridden)");
        }
      }
      requested = given->second[0];
    } else if (options.batchSize > 0) {
      requested = options.batchSize;
    } else {
      requested = -1;
    }
    const auto &dim = shape.dim(0);
    bool isStatic = dim.has_dim_value() && dim.dim_value() >= 0;
    if (!isStatic) {
      if (given == options.inputShapes.end() && requested > 0)
        plan.filled.insert(input.name());
      continue;
    }
    statics.push_back(
        {input.name(), dim.dim_value(), given != options.inputShapes.end()});
    if (requested < 0 || requested == dim.dim_value())
      continue;
    std::string quoted = "graph input '" + sanitize(input.name()) + "'";
    if (dim.dim_value() == 0)
      return makeError(quoted +
                       " has the static batch 0: an empty batch cannot be "
                       "re-specialized");
    if (plan.oldBatch &&
        (plan.oldBatch != dim.dim_value() || plan.newBatch != requested)) {
      return makeError(
          quoted + " resizes static batch " + std::to_string(dim.dim_value()) +
          " to " + std::to_string(requested) + ", but " + first + " resizes " +
          std::to_string(plan.oldBatch) + " to " +
          std::to_string(plan.newBatch) + "; the batch inputs must agree");
    }
    plan.oldBatch = dim.dim_value();
    plan.newBatch = requested;
    plan.resized.insert(input.name());
    if (first.empty())
      first = quoted;
  }
  if (!plan.oldBatch)
    return llvm::Error::success();
  if (plan.newBatch == 0)
    return makeError(first + ": cannot re-specialize the static batch " +
                     std::to_string(plan.oldBatch) + " to an empty batch");
  // Another input at the old batch that nothing resizes would keep it:
  // ask rather than guess whether it carries samples.
  for (const Static &s : statics) {
    if (s.given || plan.resized.contains(s.name) || s.dim0 != plan.oldBatch)
      continue;
    return makeError("graph input '" + sanitize(s.name) +
                     "' also has the static batch " +
                     std::to_string(plan.oldBatch) + " that " + first +
                     " re-specializes to " + std::to_string(plan.newBatch) +
                     ": give its shape with --input-shape too");
  }
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Public API
//===----------------------------------------------------------------------===//

void pipedream::registerONNXImportDialects(DialectRegistry &registry) {
  registry.insert<nn::NNDialect, func::FuncDialect>();
}

FailureOr<OwningOpRef<ModuleOp>>
pipedream::importONNXBuffer(StringRef bytes, StringRef modelName,
                            StringRef baseDir, MLIRContext &context,
                            const ImportOptions &options) {
  context.loadDialect<nn::NNDialect, func::FuncDialect>();
  auto fail = [&](const Twine &message) {
    return pipedream::emitError(&context)
           << sanitize(modelName) << ": " << message;
  };
  if (bytes.size() > size_t(std::numeric_limits<int>::max()))
    return fail("the file is larger than 2 GiB; store the weights as ONNX "
                "external data");
  onnx::ModelProto model;
  if (!model.ParseFromArray(bytes.data(), int(bytes.size())))
    return fail("cannot parse the file as an ONNX model (truncated, corrupt or "
                "not ONNX)");
  StringRef dataDir = options.allowExternalData ? baseDir : StringRef();
  BatchPlan plan;
  if (model.has_graph()) {
    if (llvm::Error planError = planBatch(model.graph(), options, plan))
      return fail(llvm::toString(std::move(planError)));
  }
  std::optional<BatchRespecializer> respec;
  if (plan.oldBatch) {
    // The reference: the model at its own batch, shapes only.
    ImportOptions refOptions = options;
    for (auto &entry : refOptions.inputShapes)
      if (plan.resized.contains(entry.getKey()))
        entry.getValue()[0] = plan.oldBatch;
    if (refOptions.batchSize > 0)
      refOptions.batchSize = plan.oldBatch;
    onnx::ModelProto refModel = model;
    llvm::StringMap<ReferenceValue> reference;
    {
      GraphImporter ref(context, modelName, dataDir, refOptions);
      ref.referenceOnly = true;
      if (::mlir::failed(ref.run(refModel))) {
        if (!ref.failed())
          return fail("import failed");
        return failure();
      }
      for (auto &entry : ref.values)
        reference[entry.getKey()] = ReferenceValue{
            SmallVector<int64_t>(entry.getValue().type.getShape()),
            entry.getValue().constant};
    }
    respec.emplace(plan.oldBatch, plan.newBatch, std::move(reference));
    for (const auto &entry : plan.resized)
      respec->addBatchInput(entry.getKey());
    for (const auto &entry : plan.filled)
      respec->addBatchInput(entry.getKey());
  }
  GraphImporter importer(context, modelName, dataDir, options);
  if (respec) {
    importer.respec = &*respec;
    importer.resizedInputs = &plan.resized;
    if (options.batchSize > 0)
      importer.batchNoun = "micro-batch";
  }
  auto module = importer.run(model);
  if (::mlir::failed(module) && !importer.failed())
    return fail("import failed");
  return module;
}

FailureOr<OwningOpRef<ModuleOp>>
pipedream::importONNXFile(StringRef path, MLIRContext &context,
                          const ImportOptions &options) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return pipedream::emitError(&context)
           << sanitize(path)
           << ": cannot open the file: " << buffer.getError().message();
  SmallString<256> dir(path);
  llvm::sys::path::remove_filename(dir);
  if (dir.empty())
    dir = ".";
  return importONNXBuffer((*buffer)->getBuffer(), path, dir, context, options);
}

void pipedream::printImportNote(ModuleOp module, StringRef path) {
  if (auto note =
          module->getAttrOfType<StringAttr>(import_attrs::kBatchRespecialized))
    llvm::errs() << "note: " << path << ": " << note.getValue() << "\n";
}

LogicalResult pipedream::parseInputShapeOption(MLIRContext &context,
                                               StringRef text,
                                               ImportOptions &options) {
  size_t eq = text.rfind('=');
  if (eq == StringRef::npos || eq == 0)
    return pipedream::emitError(&context)
           << "invalid --input-shape '" << sanitize(text)
           << "': expected NAME=DxD... (e.g. input_ids=2x16)";
  StringRef name = text.take_front(eq), dimsText = text.drop_front(eq + 1);
  SmallVector<int64_t> dims;
  if (!dimsText.empty()) {
    SmallVector<StringRef> parts;
    dimsText.split(parts, 'x');
    for (StringRef part : parts) {
      int64_t d;
      if (part.trim().getAsInteger(10, d) || d < 0 || d > kMaxDim)
        return pipedream::emitError(&context)
               << "invalid --input-shape '" << sanitize(text) << "': '"
               << sanitize(part) << "' is not a dimension size";
      dims.push_back(d);
    }
  }
  options.inputShapes[name] = dims;
  return success();
}
