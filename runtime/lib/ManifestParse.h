//===- ManifestParse.h - what bundle.json's parsers share -------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The pieces the parsers of bundle.json's sections share (Manifest.h is
// their interface): the Validator that names the field of every message,
// and the sections' parsers. ManifestBundle.cpp reads the document and its
// functions and weights, ManifestTraining.cpp the `training` section,
// ManifestRankPrograms.cpp the `pipeline` section (the rank programs).
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_RUNTIME_LIB_MANIFESTPARSE_H
#define PIPEDREAM_RUNTIME_LIB_MANIFESTPARSE_H

#include "Manifest.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace pipedream {
namespace runtime {
namespace manifest {

using json = nlohmann::json;

/// A short rendering of a JSON value for messages.
inline std::string show(const json &value) {
  std::string text = value.dump();
  if (text.size() > 60)
    text = text.substr(0, 57) + "...";
  return text;
}

inline const char *typeName(const json &value) {
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
    // Names and values quoted from the file may hold newlines.
    throw Error(PD_ERROR_FORMAT, oneLine(message + what));
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

inline bool isIdentifier(const std::string &name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9'))
    return false;
  for (char c : name)
    if (!(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
          (c >= '0' && c <= '9')))
      return false;
  return true;
}

inline bool isFloat(pd_dtype dtype) {
  return dtype == PD_DTYPE_F32 || dtype == PD_DTYPE_F64 ||
         dtype == PD_DTYPE_F16 || dtype == PD_DTYPE_BF16;
}

inline std::string describe(const TensorType &type) {
  return describeType(type.dtype, type.shape.data(), type.shape.size());
}


/// The `inputs` array of a training or pipeline section (`section`): data
/// input names, none the labels, none twice, in order.
std::vector<std::string> parseDataInputs(Validator &v, const json &object,
                                         const std::string &path,
                                         const std::string &section,
                                         const std::string &labels);

/// Validates bundle.json `training` against the functions already read.
void parseTraining(Validator &v, const json &value, Manifest &manifest);

/// Validates bundle.json `pipeline`: the ranks' programs, weights and
/// layout, against the functions already read.
void parsePipeline(Validator &v, const json &value, Manifest &manifest);

} // namespace manifest
} // namespace runtime
} // namespace pipedream

#endif // PIPEDREAM_RUNTIME_LIB_MANIFESTPARSE_H
