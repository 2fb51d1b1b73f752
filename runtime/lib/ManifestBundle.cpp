//===- ManifestBundle.cpp - bundle.json parsing and validation ------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Every field of bundle.json is checked here, before any file is opened or
// any memory allocated, so a malformed bundle fails with one message naming
// the field (`functions[0].buffers[2].shape: ...`) rather than later with a
// crash inside program.so. This file reads the document, its functions,
// weights and data index checks; the sections' parsers are ManifestParse.h's.
//
//===----------------------------------------------------------------------===//

#include "ManifestParse.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <sstream>

namespace pipedream {
namespace runtime {

using namespace manifest;

namespace {

struct DtypeEntry {
  const char *name;
  pd_dtype dtype;
};

constexpr DtypeEntry kDtypes[] = {
    {"f32", PD_DTYPE_F32}, {"f64", PD_DTYPE_F64}, {"f16", PD_DTYPE_F16},
    {"bf16", PD_DTYPE_BF16}, {"i64", PD_DTYPE_I64}, {"i32", PD_DTYPE_I32},
    {"i8", PD_DTYPE_I8},   {"i1", PD_DTYPE_I1},   {"u8", PD_DTYPE_U8},
};

} // namespace

std::string oneLine(const std::string &text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "\\x%02x", c);
      out += hex;
    } else {
      out += ch;
    }
  }
  return out;
}

bool parseDtype(const std::string &name, pd_dtype &out) {
  for (const DtypeEntry &entry : kDtypes)
    if (name == entry.name) {
      out = entry.dtype;
      return true;
    }
  return false;
}

bool parseRole(const std::string &name, pd_role &out) {
  if (name == "input")
    out = PD_ROLE_INPUT;
  else if (name == "output")
    out = PD_ROLE_OUTPUT;
  else if (name == "weight")
    out = PD_ROLE_WEIGHT;
  else if (name == "grad")
    out = PD_ROLE_GRAD;
  else if (name == "state")
    out = PD_ROLE_STATE;
  else
    return false;
  return true;
}

const char *dtypeNameList() { return "f32 f64 f16 bf16 i64 i32 i8 i1 u8"; }

void computeSizes(TensorType &type, const std::string &what) {
  size_t elements = 1;
  for (int64_t extent : type.shape) {
    if (extent < 0)
      throw Error(PD_ERROR_FORMAT,
                  what + ": negative extent " + std::to_string(extent));
    uint64_t e = static_cast<uint64_t>(extent);
    if (e != 0 && elements > std::numeric_limits<size_t>::max() / e)
      throw Error(PD_ERROR_FORMAT, what + ": " +
                                       describeType(type.dtype,
                                                    type.shape.data(),
                                                    type.shape.size()) +
                                       " has too many elements");
    elements *= static_cast<size_t>(e);
  }
  size_t elementSize = pd_dtype_size(type.dtype);
  if (elementSize == 0)
    throw Error(PD_ERROR_FORMAT, what + ": unknown dtype");
  // Leave room for rounding the allocation up to kAlignment.
  if (elements > (std::numeric_limits<size_t>::max() - kAlignment) /
                     elementSize)
    throw Error(PD_ERROR_FORMAT,
                what + ": " +
                    describeType(type.dtype, type.shape.data(),
                                 type.shape.size()) +
                    " is too large");
  type.numElements = elements;
  type.numBytes = elements * elementSize;
}

std::string describeType(pd_dtype dtype, const int64_t *shape, size_t rank) {
  std::string text = pd_dtype_name(dtype);
  text += "[";
  for (size_t i = 0; i < rank; ++i) {
    if (i)
      text += "x";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

namespace {

/// Registers a grad/state buffer of a function, or checks it against the
/// buffer of the same name another function declared; returns its index in
/// Manifest::persistent.
size_t persistentBuffer(Validator &v, Manifest &manifest,
                        const std::map<std::string, size_t> &weightIndex,
                        std::map<std::string, size_t> &persistentIndex,
                        const BufferSpec &buffer,
                        const std::string &functionName,
                        const std::string &path) {
  const char *role = pd_role_name(buffer.role);
  if (weightIndex.count(buffer.name))
    v.fail(Validator::join(path, "name"), std::string(role) + " buffer '" +
                                              buffer.name +
                                              "' has the name of a weight");
  auto it = persistentIndex.find(buffer.name);
  if (it == persistentIndex.end()) {
    persistentIndex.emplace(buffer.name, manifest.persistent.size());
    manifest.persistent.push_back({buffer.name, buffer.role, buffer.type});
    return manifest.persistent.size() - 1;
  }
  const PersistentSpec &first = manifest.persistent[it->second];
  // Find the function that declared it first, for the message.
  std::string where;
  for (const FunctionSpec &f : manifest.functions)
    for (const BufferSpec &b : f.buffers)
      if (where.empty() && b.name == buffer.name && b.role == first.role)
        where = f.name;
  if (where.empty())
    where = functionName;
  if (first.role != buffer.role)
    v.fail(Validator::join(path, "role"),
           "buffer '" + buffer.name + "' is " + role + " here but " +
               pd_role_name(first.role) + " in function '" + where + "'");
  if (first.type.dtype != buffer.type.dtype ||
      first.type.shape != buffer.type.shape)
    v.fail(path, std::string(role) + " buffer '" + buffer.name + "' is " +
                     describeType(buffer.type.dtype, buffer.type.shape.data(),
                                  buffer.type.shape.size()) +
                     " here but " +
                     describeType(first.type.dtype, first.type.shape.data(),
                                  first.type.shape.size()) +
                     " in function '" + where + "'");
  return it->second;
}

} // namespace

/// `data_index_checks`: [{"input", "lower", "upper", "node", "op"}, ...].
void parseDataIndexChecks(Validator &v, const json &value, Manifest &manifest) {
  const std::string path = "data_index_checks";
  const json &list = v.array(value, path);
  auto signedInt = [&](const json &object, const std::string &at,
                       const char *key) {
    const json &field = v.member(object, at, key);
    std::string fieldPath = Validator::join(at, key);
    if (field.is_number_unsigned() &&
        field.get<uint64_t>() <=
            static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return static_cast<int64_t>(field.get<uint64_t>());
    if (field.is_number_integer() && !field.is_number_unsigned())
      return field.get<int64_t>();
    v.fail(fieldPath, "expected an integer, got " + show(field));
  };
  for (size_t i = 0; i < list.size(); ++i) {
    std::string at = Validator::index(path, i);
    const json &object = v.object(list[i], at);
    DataIndexCheck check;
    check.input =
        v.string(v.member(object, at, "input"), Validator::join(at, "input"));
    check.lower = signedInt(object, at, "lower");
    check.upper = signedInt(object, at, "upper");
    if (check.lower >= check.upper)
      v.fail(at, "empty range [" + std::to_string(check.lower) + ", " +
                     std::to_string(check.upper) + ")");
    check.node = v.string(v.member(object, at, "node"),
                          Validator::join(at, "node"), /*allowEmpty=*/true);
    check.opType =
        v.string(v.member(object, at, "op"), Validator::join(at, "op"));
    manifest.dataIndexChecks.push_back(std::move(check));
  }
}

Manifest parseManifest(const std::string &text, const std::string &source) {
  Validator v(source);
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception &e) {
    // parse_error, and out_of_range for a number like 1e999. Drop
    // nlohmann's "[json.exception.parse_error.101] " prefix.
    std::string what = e.what();
    size_t close = what.find("] ");
    if (what.rfind("[json.exception", 0) == 0 && close != std::string::npos)
      what = what.substr(close + 2);
    v.fail("", "malformed JSON: " + what);
  }
  v.object(root, "");

  Manifest manifest;
  std::string format = v.string(v.member(root, "", "format"), "format");
  if (format != kBundleFormat)
    v.fail("format", "expected \"" + std::string(kBundleFormat) +
                         "\", got \"" + format + "\"");
  const json &version = v.member(root, "", "version");
  const std::string versions = "versions " +
                               std::to_string(kMinBundleVersion) + " to " +
                               std::to_string(kBundleVersion);
  if (version.is_number_integer() && version.get<int64_t>() >= 1 &&
      version.get<int64_t>() < kMinBundleVersion)
    v.fail("version", "bundle version " + show(version) +
                          " was written by an older pipedream-compile, "
                          "whose code does not check indices at run time "
                          "(this runtime reads " + versions +
                          "): recompile the model with pipedream-compile");
  if (!version.is_number_integer() ||
      version.get<int64_t>() < kMinBundleVersion ||
      version.get<int64_t>() > kBundleVersion)
    v.fail("version", "unsupported bundle version " + show(version) +
                          " (this runtime reads " + versions + ")");
  manifest.version = version.get<int64_t>();

  if (root.contains("model"))
    manifest.model = v.string(root["model"], "model", /*allowEmpty=*/true);
  manifest.library = v.relativePath(v.member(root, "", "library"), "library");
  // Device target (docs/Bundle.md): absent means cpu.
  if (root.contains("target")) {
    manifest.target = v.string(root["target"], "target");
    if (manifest.target != "cpu" && manifest.target != "cuda")
      v.fail("target", "unknown target '" + manifest.target +
                           "' (expected \"cpu\" or \"cuda\")");
  }
  if (root.contains("gpu_arch")) {
    manifest.gpuArch = v.string(root["gpu_arch"], "gpu_arch");
    if (manifest.target != "cuda")
      v.fail("gpu_arch", "only a \"cuda\" target has a gpu_arch (target is "
                         "\"" + manifest.target + "\")");
    if (manifest.gpuArch.rfind("sm_", 0) != 0 || manifest.gpuArch.size() < 5 ||
        manifest.gpuArch.find_first_not_of("0123456789abcdefghijklmnopqrstuvwxyz",
                                           3) != std::string::npos)
      v.fail("gpu_arch", "expected an architecture like \"sm_90\", got \"" +
                             manifest.gpuArch + "\"");
  }

  // Weights.
  std::map<std::string, size_t> weightIndex;
  if (root.contains("weights")) {
    const json &weights = v.array(root["weights"], "weights");
    for (size_t i = 0; i < weights.size(); ++i) {
      std::string path = Validator::index("weights", i);
      const json &entry = v.object(weights[i], path);
      WeightSpec weight;
      weight.name =
          v.string(v.member(entry, path, "name"), Validator::join(path, "name"));
      if (!weightIndex.emplace(weight.name, i).second)
        v.fail(Validator::join(path, "name"),
               "duplicate weight '" + weight.name + "'");
      weight.type = v.tensorType(entry, path);
      weight.offset = v.unsignedInt(v.member(entry, path, "offset"),
                                    Validator::join(path, "offset"));
      if (weight.offset % kAlignment != 0)
        v.fail(Validator::join(path, "offset"),
               "offset " + std::to_string(weight.offset) + " of weight '" +
                   weight.name + "' is not a multiple of " +
                   std::to_string(kAlignment));
      weight.bytes = v.unsignedInt(v.member(entry, path, "bytes"),
                                   Validator::join(path, "bytes"));
      if (weight.bytes != weight.type.numBytes)
        v.fail(Validator::join(path, "bytes"),
               std::to_string(weight.bytes) + " bytes, but weight '" +
                   weight.name + "' of type " +
                   describeType(weight.type.dtype, weight.type.shape.data(),
                                weight.type.shape.size()) +
                   " needs " + std::to_string(weight.type.numBytes));
      if (weight.offset >
          std::numeric_limits<uint64_t>::max() - weight.bytes)
        v.fail(Validator::join(path, "offset"), "offset + bytes overflows");
      if (entry.contains("file")) {
        if (manifest.version < 3)
          v.fail(Validator::join(path, "file"),
                 "a weight's 'file' needs bundle version 3 (the bundle says " +
                     std::to_string(manifest.version) + ")");
        weight.file =
            v.relativePath(entry["file"], Validator::join(path, "file"));
      }
      manifest.weights.push_back(std::move(weight));
    }
  }
  if (root.contains("weights_file"))
    manifest.weightsFile =
        v.relativePath(root["weights_file"], "weights_file");
  else if (!manifest.weights.empty())
    v.fail("", "missing required field 'weights_file' (the bundle has " +
                   std::to_string(manifest.weights.size()) + " weights)");
  for (WeightSpec &weight : manifest.weights)
    if (weight.file.empty())
      weight.file = manifest.weightsFile;

  // Functions.
  const json &functions =
      v.array(v.member(root, "", "functions"), "functions");
  if (functions.empty())
    v.fail("functions", "the bundle has no functions");
  std::set<std::string> functionNames, symbols;
  std::map<std::string, size_t> persistentIndex;
  for (size_t f = 0; f < functions.size(); ++f) {
    std::string path = Validator::index("functions", f);
    const json &entry = v.object(functions[f], path);
    FunctionSpec function;
    function.name =
        v.string(v.member(entry, path, "name"), Validator::join(path, "name"));
    if (!functionNames.insert(function.name).second)
      v.fail(Validator::join(path, "name"),
             "duplicate function '" + function.name + "'");
    function.symbol = v.string(v.member(entry, path, "symbol"),
                               Validator::join(path, "symbol"));
    if (!isIdentifier(function.symbol))
      v.fail(Validator::join(path, "symbol"),
             "'" + function.symbol + "' is not a C identifier");
    if (!symbols.insert(function.symbol).second)
      v.fail(Validator::join(path, "symbol"),
             "symbol '" + function.symbol + "' is used by two functions");
    function.kind =
        v.string(v.member(entry, path, "kind"), Validator::join(path, "kind"));

    std::string buffersPath = Validator::join(path, "buffers");
    const json &buffers = v.array(v.member(entry, path, "buffers"),
                                  buffersPath);
    std::set<std::string> bufferNames;
    for (size_t b = 0; b < buffers.size(); ++b) {
      std::string bpath = Validator::index(buffersPath, b);
      const json &bentry = v.object(buffers[b], bpath);
      BufferSpec buffer;
      buffer.name = v.string(v.member(bentry, bpath, "name"),
                             Validator::join(bpath, "name"));
      if (!bufferNames.insert(buffer.name).second)
        v.fail(Validator::join(bpath, "name"),
               "duplicate buffer '" + buffer.name + "' in function '" +
                   function.name + "'");
      std::string role = v.string(v.member(bentry, bpath, "role"),
                                  Validator::join(bpath, "role"), true);
      if (!parseRole(role, buffer.role))
        v.fail(
            Validator::join(bpath, "role"),
            "unsupported role '" + role +
                "' (this runtime supports input, output, weight, grad, state)");
      buffer.type = v.tensorType(bentry, bpath);
      if (buffer.role == PD_ROLE_WEIGHT) {
        auto it = weightIndex.find(buffer.name);
        if (it == weightIndex.end())
          v.fail(Validator::join(bpath, "name"),
                 "weight buffer '" + buffer.name +
                     "' names no entry of 'weights'");
        buffer.weightIndex = it->second;
        const TensorType &expected = manifest.weights[it->second].type;
        if (expected.dtype != buffer.type.dtype ||
            expected.shape != buffer.type.shape)
          v.fail(bpath, "weight buffer '" + buffer.name + "' is " +
                            describeType(buffer.type.dtype,
                                         buffer.type.shape.data(),
                                         buffer.type.shape.size()) +
                            " but the weight is " +
                            describeType(expected.dtype, expected.shape.data(),
                                         expected.shape.size()));
      }
      if (buffer.role == PD_ROLE_GRAD || buffer.role == PD_ROLE_STATE)
        buffer.persistentIndex =
            persistentBuffer(v, manifest, weightIndex, persistentIndex, buffer,
                             function.name, bpath);
      if (bentry.contains("updates")) {
        std::string upath = Validator::join(bpath, "updates");
        buffer.updates = v.string(bentry["updates"], upath);
        if (buffer.role != PD_ROLE_OUTPUT)
          v.fail(upath, "only output buffers may update a persistent "
                        "buffer; '" +
                            buffer.name + "' has role " +
                            pd_role_name(buffer.role));
      }
      if (bentry.contains("in_place")) {
        std::string ipath = Validator::join(bpath, "in_place");
        if (!bentry["in_place"].is_boolean())
          v.fail(ipath, std::string("expected true or false, got ") +
                            typeName(bentry["in_place"]));
        buffer.inPlace = bentry["in_place"].get<bool>();
        if (buffer.inPlace && buffer.updates.empty())
          v.fail(ipath, "output '" + buffer.name +
                            "' is in place but updates nothing (no "
                            "'updates')");
        if (buffer.inPlace && manifest.target == "cuda")
          v.fail(ipath, "in-place outputs are for CPU bundles; a cuda "
                        "bundle's outputs are swapped in");
      }
      function.buffers.push_back(std::move(buffer));
    }
    manifest.functions.push_back(std::move(function));
  }

  // `updates` may name a grad or state buffer that a later function
  // introduces, so they are checked once every function is read.
  for (size_t f = 0; f < manifest.functions.size(); ++f) {
    const FunctionSpec &function = manifest.functions[f];
    std::map<std::string, std::string> updatedBy;
    for (size_t b = 0; b < function.buffers.size(); ++b) {
      const BufferSpec &buffer = function.buffers[b];
      if (buffer.updates.empty())
        continue;
      std::string upath = Validator::index(
          Validator::join(Validator::index("functions", f), "buffers"), b);
      upath = Validator::join(upath, "updates");
      const TensorType *target = nullptr;
      auto w = weightIndex.find(buffer.updates);
      if (w != weightIndex.end())
        target = &manifest.weights[w->second].type;
      auto p = persistentIndex.find(buffer.updates);
      if (p != persistentIndex.end())
        target = &manifest.persistent[p->second].type;
      if (!target)
        v.fail(upath, "output '" + buffer.name + "' updates '" +
                          buffer.updates +
                          "', which is no persistent buffer (weight, grad or "
                          "state) of the bundle");
      if (target->dtype != buffer.type.dtype ||
          target->shape != buffer.type.shape)
        v.fail(upath,
               "output '" + buffer.name + "' is " +
                   describeType(buffer.type.dtype, buffer.type.shape.data(),
                                buffer.type.shape.size()) +
                   " but the persistent buffer '" + buffer.updates +
                   "' it updates is " +
                   describeType(target->dtype, target->shape.data(),
                                target->shape.size()));
      // In place: the function must bind the buffer it writes into.
      if (buffer.inPlace &&
          std::none_of(function.buffers.begin(), function.buffers.end(),
                       [&](const BufferSpec &other) {
                         return other.role != PD_ROLE_OUTPUT &&
                                other.role != PD_ROLE_INPUT &&
                                other.name == buffer.updates;
                       }))
        v.fail(upath, "output '" + buffer.name + "' updates '" +
                          buffer.updates +
                          "' in place, but function '" + function.name +
                          "' has no weight, grad or state buffer '" +
                          buffer.updates + "'");
      auto [it, inserted] = updatedBy.emplace(buffer.updates, buffer.name);
      if (!inserted)
        v.fail(upath, "outputs '" + it->second + "' and '" + buffer.name +
                          "' of function '" + function.name +
                          "' both update '" + buffer.updates + "'");
    }
  }

  if (root.contains("training")) {
    manifest.hasTraining = true;
    parseTraining(v, root["training"], manifest);
  }
  if (root.contains("data_index_checks"))
    parseDataIndexChecks(v, root["data_index_checks"], manifest);
  if (root.contains("pipeline")) {
    manifest.hasPipeline = true;
    parsePipeline(v, root["pipeline"], manifest);
  }
  return manifest;
}

} // namespace runtime
} // namespace pipedream
