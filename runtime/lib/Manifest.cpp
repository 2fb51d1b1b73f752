//===- Manifest.cpp - bundle.json parsing and validation ------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Every field of bundle.json is checked here, before any file is opened or
// any memory allocated, so a malformed bundle fails with one message naming
// the field (`functions[0].buffers[2].shape: ...`) rather than later with a
// crash inside program.so.
//
//===----------------------------------------------------------------------===//

#include "Manifest.h"

#include <nlohmann/json.hpp>

#include <limits>
#include <map>
#include <set>
#include <sstream>

using json = nlohmann::json;

namespace pipedream {
namespace runtime {

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

/// A short rendering of a JSON value for messages.
std::string show(const json &value) {
  std::string text = value.dump();
  if (text.size() > 60)
    text = text.substr(0, 57) + "...";
  return text;
}

const char *typeName(const json &value) {
  switch (value.type()) {
  case json::value_t::null:
    return "null";
  case json::value_t::object:
    return "an object";
  case json::value_t::array:
    return "an array";
  case json::value_t::string:
    return "a string";
  case json::value_t::boolean:
    return "a boolean";
  case json::value_t::number_integer:
  case json::value_t::number_unsigned:
    return "an integer";
  case json::value_t::number_float:
    return "a number";
  default:
    return "a value";
  }
}

/// Validates one JSON document, collecting the path of the field being read
/// so every message names it.
class Validator {
public:
  explicit Validator(std::string source) : source(std::move(source)) {}

  [[noreturn]] void fail(const std::string &path, const std::string &what) {
    std::string message = source + ": ";
    if (!path.empty())
      message += path + ": ";
    throw Error(PD_ERROR_FORMAT, message + what);
  }

  static std::string join(const std::string &path, const std::string &key) {
    return path.empty() ? key : path + "." + key;
  }
  static std::string index(const std::string &path, size_t i) {
    return path + "[" + std::to_string(i) + "]";
  }

  const json &member(const json &object, const std::string &path,
                     const char *key) {
    auto it = object.find(key);
    if (it == object.end())
      fail(path, std::string("missing required field '") + key + "'");
    return *it;
  }

  const json &object(const json &value, const std::string &path) {
    if (!value.is_object())
      fail(path, std::string("expected an object, got ") + typeName(value));
    return value;
  }

  const json &array(const json &value, const std::string &path) {
    if (!value.is_array())
      fail(path, std::string("expected an array, got ") + typeName(value));
    return value;
  }

  std::string string(const json &value, const std::string &path,
                     bool allowEmpty = false) {
    if (!value.is_string())
      fail(path, std::string("expected a string, got ") + typeName(value) +
                     " " + show(value));
    std::string text = value.get<std::string>();
    if (!allowEmpty && text.empty())
      fail(path, "must not be empty");
    if (text.find('\0') != std::string::npos)
      fail(path, "must not contain a NUL character");
    return text;
  }

  uint64_t unsignedInt(const json &value, const std::string &path) {
    if (value.is_number_unsigned())
      return value.get<uint64_t>();
    if (value.is_number_integer() && value.get<int64_t>() >= 0)
      return static_cast<uint64_t>(value.get<int64_t>());
    fail(path, "expected a non-negative integer, got " + show(value));
  }

  /// A path inside the bundle directory: relative, without `..`.
  std::string relativePath(const json &value, const std::string &path) {
    std::string text = string(value, path);
    if (text.front() == '/')
      fail(path, "'" + text +
                     "' must be relative to the bundle directory, not absolute");
    std::istringstream parts(text);
    std::string part;
    while (std::getline(parts, part, '/'))
      if (part == "..")
        fail(path, "'" + text + "' must stay inside the bundle directory");
    return text;
  }

  pd_dtype dtype(const json &value, const std::string &path) {
    std::string name = string(value, path, /*allowEmpty=*/true);
    pd_dtype dtype;
    if (!parseDtype(name, dtype))
      fail(path, "unknown dtype '" + name + "' (expected one of " +
                     dtypeNameList() + ")");
    return dtype;
  }

  TensorType tensorType(const json &object, const std::string &path) {
    TensorType type;
    type.dtype = dtype(member(object, path, "dtype"), join(path, "dtype"));
    std::string shapePath = join(path, "shape");
    const json &shape = array(member(object, path, "shape"), shapePath);
    if (shape.size() > kMaxRank)
      fail(shapePath, "rank " + std::to_string(shape.size()) +
                          " exceeds the maximum of " +
                          std::to_string(kMaxRank));
    for (size_t i = 0; i < shape.size(); ++i) {
      uint64_t extent = unsignedInt(shape[i], index(shapePath, i));
      if (extent > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        fail(index(shapePath, i), "extent " + std::to_string(extent) +
                                      " is too large");
      type.shape.push_back(static_cast<int64_t>(extent));
    }
    computeSizes(type, source + ": " + shapePath);
    return type;
  }

  std::string source;
};

bool isIdentifier(const std::string &name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9'))
    return false;
  for (char c : name)
    if (!(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
          (c >= '0' && c <= '9')))
      return false;
  return true;
}

} // namespace

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

Manifest parseManifest(const std::string &text, const std::string &source) {
  Validator v(source);
  json root;
  try {
    root = json::parse(text);
  } catch (const json::parse_error &e) {
    // Drop nlohmann's "[json.exception.parse_error.101] " prefix.
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
  if (!version.is_number_integer() || version.get<int64_t>() != kBundleVersion)
    v.fail("version", "unsupported bundle version " + show(version) +
                          " (this runtime reads version " +
                          std::to_string(kBundleVersion) + ")");
  manifest.version = version.get<int64_t>();

  if (root.contains("model"))
    manifest.model = v.string(root["model"], "model", /*allowEmpty=*/true);
  manifest.library = v.relativePath(v.member(root, "", "library"), "library");

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
      manifest.weights.push_back(std::move(weight));
    }
  }
  if (root.contains("weights_file"))
    manifest.weightsFile =
        v.relativePath(root["weights_file"], "weights_file");
  else if (!manifest.weights.empty())
    v.fail("", "missing required field 'weights_file' (the bundle has " +
                   std::to_string(manifest.weights.size()) + " weights)");

  // Functions.
  const json &functions =
      v.array(v.member(root, "", "functions"), "functions");
  if (functions.empty())
    v.fail("functions", "the bundle has no functions");
  std::set<std::string> functionNames, symbols;
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
        v.fail(Validator::join(bpath, "role"),
               "unsupported role '" + role +
                   "' (this runtime supports input, output, weight)");
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
      function.buffers.push_back(std::move(buffer));
    }
    manifest.functions.push_back(std::move(function));
  }
  return manifest;
}

} // namespace runtime
} // namespace pipedream
