//===- Bundle.cpp - the compiled bundle: manifest and weights -------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Compiler/Bundle.h"

#include "pipedream/Dialect/NN/IR/NNDialect.h"
#include "pipedream/Dialect/NN/IR/NNOps.h"
#include "pipedream/Support/Diagnostics.h"
#include "pipedream/Support/MappedFiles.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/bit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <map>

using namespace mlir;

namespace pipedream {

/// cpu-in-place-updates' mark on a result: the index of the argument it
/// updates in place (lib/Target/CPU/InPlaceUpdates.cpp).
static constexpr llvm::StringLiteral kInPlaceAttrName = "pipedream.in_place";

std::string getBundleDType(Type type) {
  if (type.isF32())
    return "f32";
  if (type.isF64())
    return "f64";
  if (type.isF16())
    return "f16";
  if (type.isBF16())
    return "bf16";
  if (auto integer = dyn_cast<IntegerType>(type)) {
    unsigned width = integer.getWidth();
    if (integer.isUnsigned())
      return width == 8 || width == 16 || width == 32 || width == 64
                 ? "u" + std::to_string(width)
                 : "";
    if (width == 64 || width == 32 || width == 16 || width == 8 || width == 1)
      return "i" + std::to_string(width);
  }
  return "";
}

/// Bytes one element of `type` takes in a buffer (i1: one byte).
static int64_t getElementBytes(Type type) {
  return std::max<int64_t>(1, (type.getIntOrFloatBitWidth() + 7) / 8);
}

static std::string typeToString(Type type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  type.print(os);
  return s;
}

/// The bytes of a dense_resource value (a view of its blob, no copy).
static FailureOr<ArrayRef<char>>
getResourceBytes(DenseResourceElementsAttr resource,
                 llvm::function_ref<InFlightDiagnostic()> emitError) {
  auto type = cast<ShapedType>(resource.getType());
  int64_t bytes =
      type.getNumElements() * getElementBytes(type.getElementType());
  AsmResourceBlob *blob = resource.getRawHandle().getBlob();
  if (!blob)
    return emitError() << "its value is an elided or missing resource blob";
  ArrayRef<char> data = blob->getData();
  if (static_cast<int64_t>(data.size()) != bytes)
    return emitError() << "its resource blob holds " +
                              std::to_string(data.size()) +
                              " bytes, expected " + std::to_string(bytes);
  return data;
}

/// Appends the raw little-endian bytes of `value` to `out`.
static LogicalResult
appendElements(ElementsAttr value, std::vector<char> &out,
               llvm::function_ref<InFlightDiagnostic()> emitError) {
  auto type = cast<ShapedType>(value.getType());
  Type elementType = type.getElementType();
  int64_t numElements = type.getNumElements();
  int64_t elementBytes = getElementBytes(elementType);
  int64_t bytes = numElements * elementBytes;

  if (auto resource = dyn_cast<DenseResourceElementsAttr>(value)) {
    auto data = getResourceBytes(resource, emitError);
    if (failed(data))
      return failure();
    out.insert(out.end(), data->begin(), data->end());
    return success();
  }

  if (auto dense = dyn_cast<DenseElementsAttr>(value)) {
    if (elementType.isInteger(1)) {
      // Bit-packed in the attribute; one byte per element in buffers.
      for (bool b : dense.getValues<bool>())
        out.push_back(b ? 1 : 0);
      return success();
    }
    ArrayRef<char> raw = dense.getRawData();
    if (dense.isSplat()) {
      if (static_cast<int64_t>(raw.size()) != elementBytes)
        return emitError() << "unexpected splat storage";
      for (int64_t i = 0; i < numElements; ++i)
        out.insert(out.end(), raw.begin(), raw.end());
      return success();
    }
    if (static_cast<int64_t>(raw.size()) != bytes)
      return emitError() << "unexpected dense storage size";
    out.insert(out.end(), raw.begin(), raw.end());
    return success();
  }

  // Any other ElementsAttr: element by element.
  auto appendInt = [&](const APInt &v) {
    for (int64_t i = 0; i < elementBytes; ++i)
      out.push_back(static_cast<char>(
          v.extractBitsAsZExtValue(std::min<int64_t>(8, v.getBitWidth() - 8 * i),
                                   8 * i)));
  };
  if (isa<FloatType>(elementType)) {
    if (auto values = value.tryGetValues<APFloat>()) {
      for (APFloat v : *values)
        appendInt(v.bitcastToAPInt());
      return success();
    }
  } else if (auto values = value.tryGetValues<APInt>()) {
    for (APInt v : *values)
      appendInt(v);
    return success();
  }
  return emitError() << "its value attribute cannot be read as elements";
}

/// The packed copies of `weight` (a function argument) the CPU GEMM keeps
/// when it is constant (Kernels/Gemm.cpp, constantPackedB): one per
/// orientation (bit 0: op(B) = B, bit 1: B^T) in which it reaches the B
/// operand (any
/// operand but the first) of an nn.matmul or nn.gemm, directly or through
/// nn.transpose / nn.reshape. Both happen in training: the forward of
/// x W^T reads W transposed, the backward's dY W reads it as stored (the
/// code generator folds the transpose into the GEMM,
/// cpu-fold-transposes-into-contractions).
static unsigned gemmPackedOrientations(Value weight) {
  SmallVector<std::pair<Value, bool>> work{{weight, false}};
  bool orientations[2] = {false, false};
  for (int steps = 0; !work.empty() && steps < 64; ++steps) {
    auto [v, transposed] = work.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      Operation *owner = use.getOwner();
      StringRef name = owner->getName().getStringRef();
      if ((name == "nn.matmul" || name == "nn.gemm") &&
          use.getOperandNumber() > 0) {
        auto transB = owner->getAttrOfType<BoolAttr>("trans_b");
        orientations[transposed != (transB && transB.getValue())] = true;
        continue;
      }
      bool flips = false;
      if (name == "nn.transpose") {
        // Its last dimension moves: the stored rows are no longer op(B)'s.
        auto perm = owner->getAttrOfType<DenseI64ArrayAttr>("perm");
        flips = !perm || perm.empty() ||
                perm.asArrayRef().back() != int64_t(perm.size()) - 1;
      } else if (name != "nn.reshape") {
        continue;
      }
      for (Value r : owner->getResults())
        work.push_back({r, transposed != flips});
    }
  }
  return unsigned(orientations[0]) | unsigned(orientations[1]) << 1;
}

LogicalResult collectBundle(ModuleOp module, StringRef model, StringRef kind,
                            StringRef symbolPrefix, Bundle &bundle) {
  MLIRContext *context = module.getContext();
  bundle.model = model.str();
  llvm::StringMap<size_t> weightIndex;

  auto describe = [&](func::FuncOp func, Type type, StringRef what,
                      BundleBuffer &buffer) -> LogicalResult {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor || !tensor.hasStaticShape())
      return emitError(context)
             << "function '" << func.getSymName() << "': " << what << " '"
             << buffer.name << "' has type " << typeToString(type)
             << "; bundles need statically shaped tensors (fix dynamic "
                "dimensions with --input-shape NAME=DxD)";
    buffer.dtype = getBundleDType(tensor.getElementType());
    if (buffer.dtype.empty())
      return emitError(context) << "function '" + func.getSymName().str() +
                                       "': " + what.str() + " '" + buffer.name +
                                       "' has element type " +
                                       typeToString(tensor.getElementType()) +
                                       ": not supported (bundles hold f32, "
                                       "f64, f16, bf16, i64, i32, "
                                       "i16, i8, i1, u8, u16, u32 and u64 buffers)";
    buffer.shape.assign(tensor.getShape().begin(), tensor.getShape().end());
    return success();
  };

  for (auto func : module.getOps<func::FuncOp>()) {
    if (!func.isPublic() || func.isDeclaration())
      continue;
    BundleFunction function;
    function.name = func.getSymName().str();
    function.symbol = (symbolPrefix + func.getSymName()).str();
    function.kind = kind.empty() ? func.getSymName().str() : kind.str();

    llvm::StringMap<unsigned> seenNames;
    for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
      BundleBuffer buffer;
      auto name =
          func.getArgAttrOfType<StringAttr>(i, nn::NNDialect::kNameAttrName);
      buffer.name = name ? name.getValue().str() : "arg" + std::to_string(i);
      Attribute param = func.getArgAttr(i, nn::NNDialect::kParamAttrName);
      buffer.role = param ? "weight" : "input";
      if (auto role = func.getArgAttrOfType<StringAttr>(
              i, nn::NNDialect::kRoleAttrName)) {
        StringRef r = role.getValue();
        if (r != "input" && r != "weight" && r != "grad" && r != "state")
          return emitError(context)
                 << "function '" + function.name + "': argument '" +
                        buffer.name + "' has unknown role '" + r.str() + "'";
        if ((r == "weight") != static_cast<bool>(param))
          return emitError(context)
                 << "function '" + function.name + "': argument '" +
                        buffer.name + "' has role '" + r.str() + "' but " +
                        (param ? "an" : "no") + " initial value (nn.param)";
        buffer.role = r.str();
      }
      if (failed(describe(func, func.getArgument(i).getType(), buffer.role,
                          buffer)))
        return failure();
      if (buffer.role == "weight")
        buffer.gemmOrientations = gemmPackedOrientations(func.getArgument(i));
      if (!seenNames.insert({buffer.name, i}).second)
        return emitError(context) << "function '" + function.name +
                                         "': two buffers are named '" +
                                         buffer.name + "'";

      if (param) {
        auto value = dyn_cast<ElementsAttr>(param);
        if (!value || value.getType() != func.getArgument(i).getType())
          return emitError(context)
                 << "weight '" + buffer.name +
                        "': nn.param is not an elements attribute of the "
                        "argument's type";
        auto [it, inserted] =
            weightIndex.insert({buffer.name, bundle.weights.size()});
        if (!inserted) {
          const BundleWeight &existing = bundle.weights[it->second];
          if (existing.dtype != buffer.dtype || existing.shape != buffer.shape)
            return emitError(context)
                   << "weight '" + buffer.name +
                          "' is used with two different types";
        } else {
          BundleWeight weight;
          weight.name = buffer.name;
          weight.dtype = buffer.dtype;
          weight.shape = buffer.shape;
          uint64_t aligned =
              llvm::alignTo(bundle.weightFileBytes, kBundleWeightAlignment);
          weight.offset = aligned;
          auto emitWeightError = [&] {
            return emitError(context) << "weight '" << buffer.name << "': ";
          };
          // NOTE: a resource blob (every large weight) is viewed, not
          // copied: with external data it is the mapped side file.
          if (auto resource = dyn_cast<DenseResourceElementsAttr>(value)) {
            auto data = getResourceBytes(resource, emitWeightError);
            if (failed(data))
              return failure();
            weight.view = *data;
          } else if (failed(appendElements(value, weight.ownedData,
                                           emitWeightError))) {
            return failure();
          }
          weight.bytes = weight.getData().size();
          bundle.weightFileBytes = aligned + weight.bytes;
          bundle.weights.push_back(std::move(weight));
        }
      }
      function.buffers.push_back(std::move(buffer));
    }

    for (unsigned i = 0, e = func.getNumResults(); i < e; ++i) {
      BundleBuffer buffer;
      auto name = func.getResultAttrOfType<StringAttr>(
          i, nn::NNDialect::kNameAttrName);
      buffer.name =
          name ? name.getValue().str() : "output" + std::to_string(i);
      buffer.role = "output";
      if (auto updates = func.getResultAttrOfType<StringAttr>(
              i, nn::NNDialect::kUpdatesAttrName))
        buffer.updates = updates.getValue().str();
      if (failed(describe(func, func.getResultTypes()[i], "output", buffer)))
        return failure();
      if (!seenNames.insert({buffer.name, i}).second) {
        // An output named like an input (ONNX allows passing an input
        // through): keep the manifest's names unique.
        buffer.name += ".output";
        if (!seenNames.insert({buffer.name, i}).second)
          return emitError(context) << "function '" + function.name +
                                           "': two buffers are named '" +
                                           buffer.name + "'";
      }
      function.buffers.push_back(std::move(buffer));
    }
    // Outputs that update an argument of the function: computed in that
    // argument's buffer on CPU (docs/Bundle.md "in_place"). The mark on the
    // result is what cpu-in-place-updates reads (it survives
    // stripModelAttributes).
    unsigned numArgs = func.getNumArguments();
    for (unsigned i = 0, e = func.getNumResults(); i < e; ++i) {
      BundleBuffer &output = function.buffers[numArgs + i];
      func.removeResultAttr(i, StringAttr::get(func.getContext(),
                                               kInPlaceAttrName));
      if (output.updates.empty())
        continue;
      for (unsigned j = 0; j < numArgs; ++j) {
        const BundleBuffer &arg = function.buffers[j];
        if (arg.name != output.updates || arg.role == "input" ||
            func.getArgumentTypes()[j] != func.getResultTypes()[i])
          continue;
        output.inPlace = true;
        func.setResultAttr(
            i, kInPlaceAttrName,
            IntegerAttr::get(IntegerType::get(func.getContext(), 64), j));
        break;
      }
    }
    bundle.functions.push_back(std::move(function));
  }
  if (bundle.functions.empty())
    return emitError(context) << "the module has no public function to compile";
  return success();
}

/// A JSON string literal (quoted, escaped).
static std::string quote(StringRef text) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::json::Value(text.str());
  return s;
}

static std::string shapeToJSON(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (auto [i, d] : llvm::enumerate(shape))
    s += (i ? ", " : "") + std::to_string(d);
  return s + "]";
}

std::vector<BundleDataIndexCheck>
collectDataIndexChecks(ModuleOp module, ArrayRef<std::string> dataNames) {
  std::vector<BundleDataIndexCheck> checks;
  module.walk([&](nn::CheckIndexRangeOp op) {
    if (!llvm::is_contained(dataNames, op.getInput().str()))
      return;
    BundleDataIndexCheck check{op.getInput().str(),
                               op.getLowerAttr().getInt(),
                               op.getUpperAttr().getInt(),
                               op.getNode().str(), op.getOpType().str()};
    // Several calls (forward and backward of a pipeline stage) lower one op.
    for (const BundleDataIndexCheck &c : checks)
      if (c.input == check.input && c.lower == check.lower &&
          c.upper == check.upper && c.node == check.node &&
          c.opType == check.opType)
        return;
    checks.push_back(std::move(check));
  });
  return checks;
}

std::string renderBundleManifest(const Bundle &bundle) {
  // Written by hand rather than with llvm::json::Object, which sorts keys:
  // the field order of docs/Bundle.md, one weight or buffer per line.
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "{\n";
  os << "  \"format\": \"pipedream-bundle\",\n";
  // 2: program.so has the run-time status record (docs/Bundle.md);
  // 3: weights may live in rank weight files ("file", pipeline.ranks[r].
  // weights_file). A bundle without them stays version 2.
  os << "  \"version\": " << (bundle.rankWeights.empty() ? 2 : 3) << ",\n";
  os << "  \"model\": " << quote(bundle.model) << ",\n";
  os << "  \"target\": " << quote(bundle.target) << ",\n";
  if (!bundle.gpuArch.empty())
    os << "  \"gpu_arch\": " << quote(bundle.gpuArch) << ",\n";
  os << "  \"library\": " << quote(bundle.library) << ",\n";
  os << "  \"weights_file\": " << quote(bundle.weightsFile) << ",\n";
  os << "  \"weights\": [";
  for (auto [i, w] : llvm::enumerate(bundle.weights))
    os << (i ? "," : "") << "\n    {\"name\": " << quote(w.name)
       << ", \"dtype\": " << quote(w.dtype)
       << ", \"shape\": " << shapeToJSON(w.shape)
       << (w.file.empty() ? "" : ", \"file\": " + quote(w.file))
       << ", \"offset\": " << w.offset << ", \"bytes\": " << w.bytes << "}";
  os << (bundle.weights.empty() ? "],\n" : "\n  ],\n");
  os << "  \"functions\": [";
  for (auto [i, f] : llvm::enumerate(bundle.functions)) {
    os << (i ? "," : "") << "\n    {\n";
    os << "      \"name\": " << quote(f.name) << ",\n";
    os << "      \"symbol\": " << quote(f.symbol) << ",\n";
    os << "      \"kind\": " << quote(f.kind) << ",\n";
    os << "      \"buffers\": [";
    for (auto [j, b] : llvm::enumerate(f.buffers))
      os << (j ? "," : "") << "\n        {\"name\": " << quote(b.name)
         << ", \"role\": " << quote(b.role)
         << ", \"dtype\": " << quote(b.dtype)
         << ", \"shape\": " << shapeToJSON(b.shape)
         << (b.updates.empty() ? "" : ", \"updates\": " + quote(b.updates))
         << (b.inPlace && bundle.target != "cuda" ? ", \"in_place\": true"
                                                  : "")
         << "}";
    os << (f.buffers.empty() ? "]\n" : "\n      ]\n");
    os << "    }";
  }
  os << (bundle.functions.empty() ? "]" : "\n  ]");
  if (!bundle.trainingJSON.empty())
    os << ",\n  \"training\": " << bundle.trainingJSON;
  if (!bundle.pipelineJSON.empty())
    os << ",\n  \"pipeline\": " << bundle.pipelineJSON;
  if (!bundle.dataIndexChecks.empty()) {
    os << ",\n  \"data_index_checks\": [";
    for (auto [i, c] : llvm::enumerate(bundle.dataIndexChecks))
      os << (i ? "," : "") << "\n    {\"input\": " << quote(c.input)
         << ", \"lower\": " << c.lower << ", \"upper\": " << c.upper
         << ", \"node\": " << quote(c.node) << ", \"op\": " << quote(c.opType)
         << "}";
    os << "\n  ]";
  }
  os << "\n}\n";
  return text;
}

/// Writes a weight file of `size` bytes: each of `weights` (data, offset)
/// at its offset, zeros between; streamed, so no copy of the weights is
/// made in memory.
static LogicalResult
writeWeightFile(StringRef path, uint64_t size,
                ArrayRef<std::pair<ArrayRef<char>, uint64_t>> weights,
                MLIRContext *context) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (!ec) {
    uint64_t at = 0;
    static const char zeros[kBundleWeightAlignment] = {};
    for (auto [data, offset] : weights) {
      if (offset < at)
        return emitError(context)
               << (path + ": overlapping weights (internal error)").str();
      for (; at < offset; at += std::min<uint64_t>(offset - at, sizeof(zeros)))
        os.write(zeros, std::min<uint64_t>(offset - at, sizeof(zeros)));
      os.write(data.data(), data.size());
      at += data.size();
    }
    for (; at < size; at += std::min<uint64_t>(size - at, sizeof(zeros)))
      os.write(zeros, std::min<uint64_t>(size - at, sizeof(zeros)));
    os.close();
    ec = os.error();
  }
  if (ec)
    return emitError(context) << (path + ": " + ec.message()).str();
  return success();
}

LogicalResult assignRankWeightFiles(MLIRContext *context, Bundle &bundle,
                                    llvm::json::Array &ranks,
                                    bool linkExternal) {
  // Linked files: the model's file -> its name in the bundle.
  std::map<std::string, std::string> linkNames;
  llvm::StringSet<> usedNames;
  llvm::StringMap<size_t> weightIndex;
  for (auto [i, w] : llvm::enumerate(bundle.weights))
    weightIndex[w.name] = i;
  llvm::StringMap<const BundleFunction *> functions;
  for (const BundleFunction &f : bundle.functions)
    functions[f.name] = &f;

  std::vector<BundleRankWeights> files(ranks.size());
  std::vector<bool> held(bundle.weights.size(), false);
  for (auto [r, value] : llvm::enumerate(ranks)) {
    llvm::json::Object *rank = value.getAsObject();
    llvm::json::Array *program = rank ? rank->getArray("program") : nullptr;
    if (!program)
      return emitError(context)
             << "rank " + std::to_string(r) + " has no program";
    // The weights the rank's functions bind, in bundle order.
    std::vector<bool> uses(bundle.weights.size(), false);
    for (const llvm::json::Value &inst : *program) {
      const llvm::json::Object *object = inst.getAsObject();
      if (!object || object->getString("op") != "call")
        continue;
      auto name = object->getString("function");
      auto it = name ? functions.find(*name) : functions.end();
      if (it == functions.end())
        return emitError(context)
               << "rank " + std::to_string(r) +
                      " calls a function the bundle does not have";
      // Bound weights, and weights an output replaces (`updates`).
      for (const BundleBuffer &b : it->second->buffers) {
        StringRef bound = b.role == "weight" ? StringRef(b.name)
                                             : StringRef(b.updates);
        if (auto w = weightIndex.find(bound); w != weightIndex.end())
          uses[w->second] = true;
      }
    }
    BundleRankWeights &file = files[r];
    file.file = "weights.rank" + std::to_string(r) + ".bin";
    // Every weight of the rank an aligned view of the same file of the
    // model: link that file (the offsets are the model's).
    std::optional<FileView> source;
    std::vector<uint64_t> sourceOffsets(uses.size(), 0);
    bool linked = linkExternal;
    for (size_t w = 0; linked && w < uses.size(); ++w) {
      if (!uses[w])
        continue;
      std::optional<FileView> view =
          lookupFileView(bundle.weights[w].getData());
      if (!view || view->offset % kBundleWeightAlignment != 0 ||
          (source && (view->path != source->path ||
                      view->mtimeNs != source->mtimeNs ||
                      view->fileSize != source->fileSize)))
        linked = false;
      else
        source = view, sourceOffsets[w] = view->offset;
    }
    if (linked && source) {
      auto [it, inserted] = linkNames.try_emplace(source->path);
      if (inserted) {
        std::string base =
            "external." + llvm::sys::path::filename(source->path).str();
        std::string name = base;
        for (int k = 2; !usedNames.insert(name).second; ++k)
          name = base + "." + std::to_string(k);
        it->second = name;
      }
      file.file = it->second;
      file.linkedFrom = source->path;
      file.mtimeNs = source->mtimeNs;
      file.fileBytes = source->fileSize;
    } else {
      linked = false;
    }
    llvm::json::Array entries;
    for (size_t w = 0; w < uses.size(); ++w) {
      if (!uses[w])
        continue;
      BundleWeight &weight = bundle.weights[w];
      uint64_t offset = sourceOffsets[w];
      if (!linked) {
        offset = llvm::alignTo(file.fileBytes, kBundleWeightAlignment);
        file.fileBytes = offset + weight.bytes;
      }
      file.weights.push_back({w, offset});
      if (!held[w]) {
        held[w] = true;
        weight.file = file.file;
        weight.offset = offset;
      }
      entries.push_back(llvm::json::Object{
          {"name", weight.name}, {"offset", static_cast<int64_t>(offset)}});
    }
    (*rank)["weights_file"] = file.file;
    (*rank)["weights"] = std::move(entries);
    if (linked)
      (*rank)["weights_file_linked"] =
          llvm::json::Object{{"bytes", static_cast<int64_t>(file.fileBytes)},
                             {"mtime_ns", file.mtimeNs}};
  }
  // weights.bin: what no rank holds.
  bundle.weightFileBytes = 0;
  for (auto [w, weight] : llvm::enumerate(bundle.weights)) {
    if (held[w])
      continue;
    weight.offset =
        llvm::alignTo(bundle.weightFileBytes, kBundleWeightAlignment);
    bundle.weightFileBytes = weight.offset + weight.bytes;
  }
  bundle.rankWeights = std::move(files);
  return success();
}

/// Bytes of one element of a manifest dtype (i1: one byte).
static int64_t dtypeBytes(StringRef dtype) {
  return llvm::StringSwitch<int64_t>(dtype)
      .Cases({"f64", "i64", "u64"}, 8)
      .Cases({"f32", "i32", "u32"}, 4)
      .Cases({"f16", "bf16", "u16", "i16"}, 2)
      .Default(1);
}

static int64_t bufferBytes(StringRef dtype, ArrayRef<int64_t> shape) {
  int64_t n = dtypeBytes(dtype);
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// The CPU GEMM's default budget of packed constant copies per thread
/// (Kernels/Gemm.cpp packBudget: PIPEDREAM_GEMM_PACKED_MB, 128).
static constexpr int64_t kGemmPackedBudget = int64_t(128) << 20;

llvm::json::Array rankMemoryJSON(const Bundle &bundle,
                                 const llvm::json::Array &ranks) {
  llvm::StringMap<const BundleFunction *> functions;
  for (const BundleFunction &f : bundle.functions)
    functions[f.name] = &f;
  llvm::json::Array out;
  for (auto [r, value] : llvm::enumerate(ranks)) {
    const llvm::json::Object *rank = value.getAsObject();
    if (!rank)
      continue;
    llvm::StringSet<> called;
    if (const llvm::json::Array *program = rank->getArray("program"))
      for (const llvm::json::Value &inst : *program)
        if (const llvm::json::Object *o = inst.getAsObject())
          if (o->getString("op") == "call")
            if (auto name = o->getString("function"))
              called.insert(*name);
    int64_t weights = 0, grads = 0, states = 0, updates = 0, registers = 0;
    int64_t packed = 0;
    llvm::StringSet<> persistent;
    // The orientations of each weight already counted as packed.
    llvm::StringMap<unsigned> packedOrientations;
    for (const auto &entry : called) {
      auto it = functions.find(entry.getKey());
      if (it == functions.end())
        continue;
      // Weights the function itself updates are not constant in it.
      llvm::StringSet<> updatedHere;
      for (const BundleBuffer &b : it->second->buffers)
        if (!b.updates.empty())
          updatedHere.insert(b.updates);
      for (const BundleBuffer &b : it->second->buffers) {
        int64_t bytes = bufferBytes(b.dtype, b.shape);
        if (b.role == "weight" && b.dtype == "f32" &&
            !updatedHere.contains(b.name)) {
          unsigned &seen = packedOrientations[b.name];
          packed += bytes * llvm::popcount(b.gemmOrientations & ~seen);
          seen |= b.gemmOrientations;
        }
        // In-place outputs have no buffer of their own (docs/Bundle.md).
        if (b.role == "output" && !b.updates.empty() && !b.inPlace)
          updates += bytes;
        if ((b.role != "weight" && b.role != "grad" && b.role != "state") ||
            !persistent.insert(b.name).second)
          continue;
        (b.role == "weight" ? weights : b.role == "grad" ? grads : states) +=
            bytes;
      }
    }
    if (const llvm::json::Array *regs = rank->getArray("registers")) {
      for (const llvm::json::Value &reg : *regs) {
        const llvm::json::Object *o = reg.getAsObject();
        const llvm::json::Array *shape = o ? o->getArray("shape") : nullptr;
        auto dtype = o ? o->getString("dtype") : std::nullopt;
        if (!shape || !dtype)
          continue;
        SmallVector<int64_t> dims;
        for (const llvm::json::Value &d : *shape)
          dims.push_back(d.getAsInteger().value_or(0));
        registers += bufferBytes(*dtype, dims);
      }
    }
    // The CPU GEMM's packed copies of the constant weights (one per weight
    // per step, measured: bench/README.md), at most its budget per thread
    // (PIPEDREAM_GEMM_PACKED_MB, 128 MiB; the rank's calls run on one).
    packed = bundle.target == "cpu" ? std::min(packed, kGemmPackedBudget) : 0;
    out.push_back(llvm::json::Object{
        {"rank", static_cast<int64_t>(r)},
        {"weight_bytes", weights},
        {"gradient_bytes", grads},
        {"optimizer_state_bytes", states},
        {"update_output_bytes", updates},
        {"register_bytes", registers},
        {"packed_weight_bytes", packed},
        {"total_bytes",
         weights + grads + states + updates + registers + packed}});
  }
  return out;
}

/// Writes `data` to `path` (created or truncated).
static LogicalResult writeFile(StringRef path, StringRef data,
                               MLIRContext *context) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (!ec) {
    os << data;
    os.close();
    ec = os.error();
  }
  if (ec)
    return emitError(context) << (path + ": " + ec.message()).str();
  return success();
}

/// The size and modification time (ns) of `path`.
static std::error_code fileStamp(StringRef path, uint64_t &size,
                                 int64_t &mtimeNs) {
  llvm::sys::fs::file_status status;
  if (std::error_code ec = llvm::sys::fs::status(path, status))
    return ec;
  size = status.getSize();
  mtimeNs = std::chrono::duration_cast<std::chrono::nanoseconds>(
                status.getLastModificationTime().time_since_epoch())
                .count();
  return {};
}

/// Puts the model's file `rank.linkedFrom` at `path`: a hard link, or a
/// copy with the same modification time where the file systems differ.
/// Fails (an error on `context` naming the file) when the file changed
/// since it was imported (size or time).
static LogicalResult linkWeightFile(MLIRContext *context,
                                    const BundleRankWeights &rank,
                                    StringRef path) {
  uint64_t size = 0;
  int64_t mtime = 0;
  if (std::error_code ec = fileStamp(rank.linkedFrom, size, mtime))
    return emitError(context) << rank.linkedFrom << ": " << ec.message();
  if (size != rank.fileBytes || mtime != rank.mtimeNs)
    return emitError(context)
           << rank.linkedFrom
           << ": the model's external data changed during the compilation";
  if (!llvm::sys::fs::create_hard_link(rank.linkedFrom, path))
    return success();
  if (std::error_code ec = llvm::sys::fs::copy_file(rank.linkedFrom, path))
    return emitError(context)
           << rank.linkedFrom
           << ": cannot copy into the bundle: " << ec.message();
  int fd = -1;
  std::error_code ec = llvm::sys::fs::openFileForWrite(
      path, fd, llvm::sys::fs::CD_OpenExisting, llvm::sys::fs::OF_None);
  if (!ec) {
    llvm::sys::TimePoint<> time{std::chrono::duration_cast<
        llvm::sys::TimePoint<>::duration>(std::chrono::nanoseconds(mtime))};
    ec = llvm::sys::fs::setLastAccessAndModificationTime(fd, time);
    llvm::sys::Process::SafelyCloseFileDescriptor(fd);
  }
  if (!ec)
    ec = fileStamp(path, size, mtime);
  if (!ec && mtime != rank.mtimeNs)
    ec = std::make_error_code(std::errc::operation_not_supported);
  if (ec)
    return emitError(context) << path
                              << ": cannot give the copied weights their "
                                 "modification time: "
                              << ec.message();
  return success();
}

LogicalResult
writeBundle(MLIRContext *context, const Bundle &bundle, StringRef outputDir,
            llvm::function_ref<LogicalResult(StringRef)> writeLibrary) {
  llvm::SmallString<256> target(outputDir);
  // createUniqueDirectory resolves a relative model against the system's
  // temporary directory, not the working directory: work with absolute
  // paths (messages keep the path as given).
  if (std::error_code ec = llvm::sys::fs::make_absolute(target))
    return emitError(context) << (outputDir + ": " + ec.message()).str();
  llvm::sys::path::remove_dots(target, /*remove_dot_dot=*/true);
  if (target.empty())
    target = ".";
  bool exists = llvm::sys::fs::exists(target);
  if (exists && !llvm::sys::fs::is_directory(target))
    return emitError(context)
           << (outputDir + ": exists and is not a directory").str();

  // The temporary directory is a sibling, so the final renames stay within
  // one file system.
  llvm::SmallString<256> parent = llvm::sys::path::parent_path(target);
  if (parent.empty())
    parent = ".";
  if (!llvm::sys::fs::is_directory(parent))
    return emitError(context)
           << (outputDir + ": parent directory '" + parent + "' does not exist")
                  .str();
  llvm::SmallString<256> temp;
  {
    llvm::SmallString<256> model(target);
    model += ".tmp"; // createUniqueDirectory appends "-XXXXXX".
    if (std::error_code ec = llvm::sys::fs::createUniqueDirectory(model, temp))
      return emitError(context)
             << (outputDir +
                 ": cannot create a temporary directory: " + ec.message())
                    .str();
  }
  // createUniqueDirectory makes it private (0700); the bundle directory gets
  // the usual permissions.
  (void)llvm::sys::fs::setPermissions(
      temp, static_cast<llvm::sys::fs::perms>(llvm::sys::fs::all_all &
                                              ~llvm::sys::fs::getUmask()));
  bool keepTemp = false;
  llvm::scope_exit cleanup([&] {
    if (!keepTemp)
      llvm::sys::fs::remove_directories(temp);
  });

  auto inTemp = [&](StringRef name) {
    llvm::SmallString<256> path(temp);
    llvm::sys::path::append(path, name);
    return path;
  };
  if (failed(writeLibrary(inTemp(bundle.library))))
    return failure();
  {
    std::vector<std::pair<ArrayRef<char>, uint64_t>> common;
    for (const BundleWeight &w : bundle.weights)
      if (w.file.empty())
        common.push_back({w.getData(), w.offset});
    if (failed(writeWeightFile(inTemp(bundle.weightsFile),
                               bundle.weightFileBytes, common, context)))
      return failure();
  }
  llvm::StringSet<> linkedDone;
  for (const BundleRankWeights &rank : bundle.rankWeights) {
    if (!rank.linkedFrom.empty()) {
      if (linkedDone.insert(rank.file).second &&
          failed(linkWeightFile(context, rank, inTemp(rank.file))))
        return failure();
      continue;
    }
    std::vector<std::pair<ArrayRef<char>, uint64_t>> held;
    for (auto [w, offset] : rank.weights)
      held.push_back({bundle.weights[w].getData(), offset});
    if (failed(
            writeWeightFile(inTemp(rank.file), rank.fileBytes, held, context)))
      return failure();
  }
  for (const auto &[name, source] : bundle.copiedFiles) {
    if (std::error_code ec = llvm::sys::fs::copy_file(source, inTemp(name)))
      return emitError(context)
             << source + ": cannot copy into the bundle: " + ec.message();
  }
  if (failed(writeFile(inTemp("bundle.json"), renderBundleManifest(bundle),
                       context)))
    return failure();

  if (!exists) {
    if (std::error_code ec = llvm::sys::fs::rename(temp, target))
      return emitError(context) << (outputDir + ": " + ec.message()).str();
    keepTemp = true;
    return success();
  }
  // Existing directory: the manifest goes last, so a reader never sees a
  // new bundle.json next to an old library.
  SmallVector<StringRef> names = {StringRef(bundle.library),
                                  StringRef(bundle.weightsFile)};
  llvm::StringSet<> renamed;
  for (const BundleRankWeights &rank : bundle.rankWeights)
    if (renamed.insert(rank.file).second)
      names.push_back(rank.file);
  for (const auto &file : bundle.copiedFiles)
    names.push_back(file.first);
  names.push_back("bundle.json");
  for (StringRef name : names) {
    llvm::SmallString<256> to(target);
    llvm::sys::path::append(to, name);
    if (std::error_code ec = llvm::sys::fs::rename(inTemp(name), to))
      return emitError(context) << (to + ": " + ec.message()).str();
  }
  return success();
}

} // namespace pipedream
