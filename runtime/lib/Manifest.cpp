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

#include <algorithm>
#include <cstdio>
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

bool isFloat(pd_dtype dtype) {
  return dtype == PD_DTYPE_F32 || dtype == PD_DTYPE_F64 ||
         dtype == PD_DTYPE_F16 || dtype == PD_DTYPE_BF16;
}

std::string describe(const TensorType &type) {
  return describeType(type.dtype, type.shape.data(), type.shape.size());
}

/// A positive integer field of `training`.
size_t positive(Validator &v, const json &object, const char *key) {
  std::string path = Validator::join("training", key);
  uint64_t value = v.unsignedInt(v.member(object, "training", key), path);
  if (value == 0)
    v.fail(path, "must be at least 1");
  if (value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    v.fail(path, std::to_string(value) + " is too large");
  return static_cast<size_t>(value);
}

/// Validates bundle.json `training` against the functions already read.
/// The `inputs` array of a training or pipeline section (`section`): data
/// input names, none the labels, none twice, in order.
std::vector<std::string> parseDataInputs(Validator &v, const json &object,
                                         const std::string &path,
                                         const std::string &section,
                                         const std::string &labels) {
  std::set<std::string> names = {labels};
  std::vector<std::string> result;
  const json &inputs =
      v.array(v.member(object, path, "inputs"), section + ".inputs");
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string ipath = Validator::index(section + ".inputs", i);
    std::string name = v.string(inputs[i], ipath);
    if (name == labels)
      v.fail(ipath, "'" + name + "' is the labels, not an input");
    if (!names.insert(name).second)
      v.fail(ipath, "input '" + name + "' is listed twice");
    result.push_back(name);
  }
  return result;
}

void parseTraining(Validator &v, const json &value, Manifest &manifest) {
  const std::string path = "training";
  const json &object = v.object(value, path);
  TrainingSpec &t = manifest.training;

  t.loss = v.string(v.member(object, path, "loss"), "training.loss");
  if (t.loss != "cross-entropy" && t.loss != "mse" && t.loss != "none")
    v.fail("training.loss", "unknown loss '" + t.loss +
                                "' (expected cross-entropy, mse or none)");
  // "none": the model's first output is the loss; labels, if any, are
  // ordinary inputs, and there is no `labels` member.
  bool hasLabels = t.loss != "none";

  std::string functionNames;
  for (const FunctionSpec &f : manifest.functions)
    functionNames += (functionNames.empty() ? "" : ", ") + f.name;
  auto function = [&](const char *key, std::string &name) -> size_t {
    std::string fpath = Validator::join(path, key);
    name = v.string(v.member(object, path, key), fpath);
    for (size_t i = 0; i < manifest.functions.size(); ++i)
      if (manifest.functions[i].name == name)
        return i;
    v.fail(fpath,
           "no function '" + name + "' (functions: " + functionNames + ")");
  };
  t.stepFunctionIndex = function("step_function", t.stepFunction);
  t.updateFunctionIndex = function("update_function", t.updateFunction);
  if (t.stepFunctionIndex == t.updateFunctionIndex)
    v.fail("training.update_function",
           "the step and the update function must differ (both are '" +
               t.stepFunction + "')");
  const FunctionSpec &step = manifest.functions[t.stepFunctionIndex];
  const FunctionSpec &update = manifest.functions[t.updateFunctionIndex];

  t.microbatches = positive(v, object, "microbatches");
  t.microbatchSize = positive(v, object, "microbatch_size");
  t.batchSize = positive(v, object, "batch_size");
  if (t.microbatchSize >
          static_cast<size_t>(std::numeric_limits<int64_t>::max()) /
              t.microbatches ||
      t.batchSize != t.microbatches * t.microbatchSize)
    v.fail("training.batch_size", std::to_string(t.batchSize) +
                                      " is not microbatches x "
                                      "microbatch_size = " +
                                      std::to_string(t.microbatches) + " x " +
                                      std::to_string(t.microbatchSize));

  // The data the step reads: `inputs` and `labels`, exactly the step
  // function's input buffers, each with microbatch_size samples.
  auto stepInput = [&](const std::string &name,
                       const std::string &where) -> const BufferSpec & {
    for (const BufferSpec &b : step.buffers)
      if (b.name == name) {
        if (b.role != PD_ROLE_INPUT)
          v.fail(where, "'" + name + "' has role " + pd_role_name(b.role) +
                            " in step function '" + step.name +
                            "'; data must be an input");
        if (b.type.shape.empty() ||
            static_cast<size_t>(b.type.shape[0]) != t.microbatchSize)
          v.fail(where, "input '" + name + "' of step function '" + step.name +
                            "' is " + describe(b.type) +
                            ": its first axis must be microbatch_size " +
                            std::to_string(t.microbatchSize));
        return b;
      }
    v.fail(where,
           "step function '" + step.name + "' has no input '" + name + "'");
  };
  if (!hasLabels && object.contains("labels"))
    v.fail("training.labels", "loss 'none' has no labels (they are "
                              "ordinary inputs); remove the member");
  if (hasLabels)
    t.labels = v.string(v.member(object, path, "labels"), "training.labels");
  const BufferSpec *labels =
      hasLabels ? &stepInput(t.labels, "training.labels") : nullptr;
  t.inputs = parseDataInputs(v, object, path, "training", t.labels);
  for (size_t i = 0; i < t.inputs.size(); ++i)
    stepInput(t.inputs[i], Validator::index("training.inputs", i));
  std::set<std::string> data(t.inputs.begin(), t.inputs.end());
  if (hasLabels)
    data.insert(t.labels);
  for (const BufferSpec &b : step.buffers)
    if (b.role == PD_ROLE_INPUT && !data.count(b.name))
      v.fail("training.inputs",
             "input '" + b.name + "' of step function '" + step.name +
                 "' is neither in training.inputs nor training.labels");

  if (t.loss == "cross-entropy") {
    std::string npath = "training.num_classes";
    uint64_t classes =
        v.unsignedInt(v.member(object, path, "num_classes"), npath);
    if (classes == 0 ||
        classes > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      v.fail(npath, "must be a positive number of classes, got " +
                        std::to_string(classes));
    t.numClasses = static_cast<int64_t>(classes);
    if (labels->type.dtype != PD_DTYPE_I64 &&
        labels->type.dtype != PD_DTYPE_I32)
      v.fail("training.labels",
             "cross-entropy takes class indices (i64), but labels '" +
                 t.labels + "' are " + describe(labels->type));
  } else if (t.loss == "mse" && !isFloat(labels->type.dtype)) {
    v.fail("training.labels", "mse takes a float target, but labels '" +
                                  t.labels + "' are " + describe(labels->type));
  }

  // The loss: the step function's only output that updates nothing.
  for (const BufferSpec &b : step.buffers) {
    if (b.role != PD_ROLE_OUTPUT || !b.updates.empty())
      continue;
    if (!t.lossOutput.empty())
      v.fail("training.step_function",
             "step function '" + step.name +
                 "' has two outputs without "
                 "'updates' ('" +
                 t.lossOutput + "' and '" + b.name +
                 "'); exactly one, the loss, is expected");
    if ((b.type.dtype != PD_DTYPE_F32 && b.type.dtype != PD_DTYPE_F64) ||
        b.type.numElements != 1)
      v.fail("training.step_function", "the loss output '" + b.name +
                                           "' of step function '" + step.name +
                                           "' is " + describe(b.type) +
                                           "; expected one f32 or f64 element");
    t.lossOutput = b.name;
  }
  if (t.lossOutput.empty())
    v.fail("training.step_function",
           "step function '" + step.name +
               "' has no loss output (an output without 'updates')");

  for (const BufferSpec &b : update.buffers)
    if (b.role == PD_ROLE_INPUT)
      v.fail("training.update_function",
             "update function '" + update.name + "' has an input '" + b.name +
                 "'; it may read only weight, grad and state buffers");

  if (object.contains("optimizer"))
    t.optimizer = v.object(object["optimizer"], "training.optimizer").dump();
}

/// A positive integer field `key` of `object` at `path`; `fallback` when
/// absent and fallback > 0.
size_t positiveAt(Validator &v, const json &object, const std::string &path,
                  const char *key, size_t fallback = 0) {
  std::string fpath = Validator::join(path, key);
  if (fallback && !object.contains(key))
    return fallback;
  uint64_t value = v.unsignedInt(v.member(object, path, key), fpath);
  if (value == 0)
    v.fail(fpath, "must be at least 1");
  if (value > static_cast<uint64_t>(std::numeric_limits<int32_t>::max()))
    v.fail(fpath, std::to_string(value) + " is too large");
  return static_cast<size_t>(value);
}

std::string ranksText(size_t count) {
  return std::to_string(count) + (count == 1 ? " rank" : " ranks");
}

/// One side of a message between two ranks, for matching sends and recvs.
struct MessageEnd {
  size_t rank;
  size_t instruction;
  int64_t tag;
  const TensorType *type;
};

/// One rank's all_reduce instruction.
struct CollectiveEnd {
  size_t instruction;
  std::string buffer;
  TensorType type;
};

std::string instructionPath(size_t rank, size_t instruction) {
  return "pipeline.ranks[" + std::to_string(rank) + "].program[" +
         std::to_string(instruction) + "]";
}

/// Validates bundle.json `pipeline` against the functions already read.
/// A rank's own weight file (docs/Bundle.md "Rank weight files"): every
/// weight the rank's functions bind, each once, at an aligned offset.
void parseRankWeights(Validator &v, const json &entry, const std::string &rpath,
                      size_t r, const Manifest &manifest, RankProgram &rank) {
  if (!entry.contains("weights_file") && !entry.contains("weights"))
    return;
  std::string fpath = Validator::join(rpath, "weights_file");
  std::string wpath = Validator::join(rpath, "weights");
  if (manifest.version < 3)
    v.fail(fpath, "rank weight files need bundle version 3 (the bundle says " +
                      std::to_string(manifest.version) + ")");
  rank.weightsFile = v.relativePath(v.member(entry, rpath, "weights_file"),
                                    fpath);
  const json &weights = v.array(v.member(entry, rpath, "weights"), wpath);
  if (entry.contains("weights_file_linked")) {
    std::string lpath = Validator::join(rpath, "weights_file_linked");
    const json &linked = v.object(entry["weights_file_linked"], lpath);
    rank.weightsFileLinked = true;
    rank.linkedBytes = v.unsignedInt(v.member(linked, lpath, "bytes"),
                                     Validator::join(lpath, "bytes"));
    rank.linkedMtimeNs = static_cast<int64_t>(
        v.unsignedInt(v.member(linked, lpath, "mtime_ns"),
                      Validator::join(lpath, "mtime_ns")));
  }
  std::map<std::string, size_t> byName;
  for (size_t i = 0; i < manifest.weights.size(); ++i)
    byName[manifest.weights[i].name] = i;
  std::set<size_t> listed;
  for (size_t k = 0; k < weights.size(); ++k) {
    std::string path = Validator::index(wpath, k);
    const json &item = v.object(weights[k], path);
    std::string name =
        v.string(v.member(item, path, "name"), Validator::join(path, "name"));
    auto it = byName.find(name);
    if (it == byName.end())
      v.fail(Validator::join(path, "name"),
             "rank " + std::to_string(r) + " lists weight '" + name +
                 "', which the bundle's 'weights' do not have");
    if (!listed.insert(it->second).second)
      v.fail(Validator::join(path, "name"),
             "rank " + std::to_string(r) + " lists weight '" + name +
                 "' twice");
    uint64_t offset = v.unsignedInt(v.member(item, path, "offset"),
                                    Validator::join(path, "offset"));
    if (offset % kAlignment != 0 ||
        offset > std::numeric_limits<uint64_t>::max() -
                     manifest.weights[it->second].bytes)
      v.fail(Validator::join(path, "offset"),
             "offset " + std::to_string(offset) + " of weight '" + name +
                 "' is not a multiple of " + std::to_string(kAlignment) +
                 " or overflows");
    rank.weights.push_back({it->second, offset});
  }
  for (size_t f : rank.functions)
    for (const BufferSpec &b : manifest.functions[f].buffers)
      if (b.role == PD_ROLE_WEIGHT && !listed.count(b.weightIndex))
        v.fail(wpath, "rank " + std::to_string(r) + "'s function '" +
                          manifest.functions[f].name + "' binds weight '" +
                          b.name + "', which the rank's weights file '" +
                          rank.weightsFile + "' does not list");
}

/// `rank_layout` (required with replicas > 1): one entry per world rank,
/// {"rank": w, "pipeline_rank": s, "replica": j}, listed in order, with
/// w = j * K + s (the layout the runtime implements; docs/Bundle.md
/// "Replicated stages").
void parseRankLayout(Validator &v, const json &object, PipelineSpec &p) {
  const std::string lpath = "pipeline.rank_layout";
  if (!object.contains("rank_layout")) {
    if (p.replicas > 1)
      v.fail(lpath, "missing: a pipeline with " + std::to_string(p.replicas) +
                        " replicas lists the stage and replica of each rank");
    return;
  }
  const json &layout = v.array(object["rank_layout"], lpath);
  if (layout.size() != p.worldRanks())
    v.fail(lpath, "has " + std::to_string(layout.size()) +
                      " entries; the pipeline has " +
                      std::to_string(p.ranks.size()) + " pipeline ranks x " +
                      std::to_string(p.replicas) + " replicas = " +
                      std::to_string(p.worldRanks()) + " ranks");
  for (size_t w = 0; w < layout.size(); ++w) {
    std::string epath = Validator::index(lpath, w);
    const json &entry = v.object(layout[w], epath);
    uint64_t rank = v.unsignedInt(v.member(entry, epath, "rank"),
                                  Validator::join(epath, "rank"));
    uint64_t program =
        v.unsignedInt(v.member(entry, epath, "pipeline_rank"),
                      Validator::join(epath, "pipeline_rank"));
    uint64_t replica = v.unsignedInt(v.member(entry, epath, "replica"),
                                     Validator::join(epath, "replica"));
    if (rank != w || program != p.programOf(w) || replica != p.replicaOf(w))
      v.fail(epath, "rank " + std::to_string(rank) + " is pipeline rank " +
                        std::to_string(program) + ", replica " +
                        std::to_string(replica) + ", but entry " +
                        std::to_string(w) + " must be rank " +
                        std::to_string(w) + ", pipeline rank " +
                        std::to_string(p.programOf(w)) + ", replica " +
                        std::to_string(p.replicaOf(w)) +
                        " (rank = replica x " +
                        std::to_string(p.ranks.size()) + " + pipeline rank)");
  }
}

void parsePipeline(Validator &v, const json &value, Manifest &manifest) {
  const std::string path = "pipeline";
  const json &object = v.object(value, path);
  PipelineSpec &p = manifest.pipeline;

  const std::string spath = "pipeline.schedule";
  const json &schedule = v.object(v.member(object, path, "schedule"), spath);
  p.kind = v.string(v.member(schedule, spath, "kind"),
                    Validator::join(spath, "kind"));
  p.stages = positiveAt(v, schedule, spath, "stages");
  p.microbatches = positiveAt(v, schedule, spath, "microbatches");
  p.chunks = positiveAt(v, schedule, spath, "chunks", 1);

  p.loss = v.string(v.member(object, path, "loss"), "pipeline.loss");
  if (p.loss != "cross-entropy" && p.loss != "mse" && p.loss != "none")
    v.fail("pipeline.loss", "unknown loss '" + p.loss +
                                "' (expected cross-entropy, mse or none)");
  // "none": the last stage's first output is the loss; what it reads are
  // ordinary inputs, and there is no `labels` member.
  const bool hasLabels = p.loss != "none";
  if (!hasLabels && object.contains("labels"))
    v.fail("pipeline.labels", "loss 'none' has no labels (they are "
                              "ordinary pipeline.inputs)");
  if (hasLabels)
    p.labels = v.string(v.member(object, path, "labels"), "pipeline.labels");
  if (p.loss == "cross-entropy") {
    std::string npath = "pipeline.num_classes";
    uint64_t classes =
        v.unsignedInt(v.member(object, path, "num_classes"), npath);
    if (classes == 0 ||
        classes > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      v.fail(npath, "must be a positive number of classes, got " +
                        std::to_string(classes));
    p.numClasses = static_cast<int64_t>(classes);
  }
  p.inputs = parseDataInputs(v, object, path, "pipeline", p.labels);
  p.microbatchSize = positiveAt(v, object, path, "microbatch_size");
  p.batchSize = positiveAt(v, object, path, "batch_size");
  p.replicas = positiveAt(v, object, path, "replicas", 1);
  // NOTE: with replicas the step's batch is split over them: every replica
  // runs the schedule's M micro-batches on its share.
  if (p.batchSize != p.replicas * p.microbatches * p.microbatchSize)
    v.fail("pipeline.batch_size",
           std::to_string(p.batchSize) +
               (p.replicas > 1
                    ? " is not replicas x schedule.microbatches x "
                      "microbatch_size = " +
                          std::to_string(p.replicas) + " x "
                    : std::string(" is not schedule.microbatches x "
                                  "microbatch_size = ")) +
               std::to_string(p.microbatches) + " x " +
               std::to_string(p.microbatchSize));
  if (object.contains("optimizer"))
    p.optimizer = v.object(object["optimizer"], "pipeline.optimizer").dump();

  for (const std::string &name : p.inputs)
    p.data.push_back({name, {}, false, {}});
  if (hasLabels)
    p.data.push_back({p.labels, {}, true, {}});
  std::vector<std::string> dataFirstUse(p.data.size());
  auto dataIndex = [&](const std::string &name) -> int {
    for (size_t i = 0; i < p.data.size(); ++i)
      if (p.data[i].name == name)
        return static_cast<int>(i);
    return -1;
  };
  std::string dataList;
  for (const PipelineData &d : p.data)
    dataList += (dataList.empty() ? "" : ", ") + d.name;

  std::map<std::string, size_t> functionIndex;
  std::string functionNames;
  for (size_t i = 0; i < manifest.functions.size(); ++i) {
    functionIndex[manifest.functions[i].name] = i;
    functionNames += (functionNames.empty() ? "" : ", ") +
                     manifest.functions[i].name;
  }

  const json &ranks =
      v.array(v.member(object, path, "ranks"), "pipeline.ranks");
  if (ranks.empty())
    v.fail("pipeline.ranks", "the pipeline has no ranks");
  size_t numRanks = ranks.size();
  // Messages per (sender, receiver), in program order.
  std::map<std::pair<size_t, size_t>, std::vector<MessageEnd>> sends, recvs;
  // all_reduce instructions by group, then rank.
  std::map<std::vector<size_t>, std::vector<std::vector<CollectiveEnd>>>
      collectives;
  // Where each micro-batch's loss is.
  std::vector<std::pair<size_t, size_t>> lossAt(
      p.microbatches, {std::numeric_limits<size_t>::max(), 0});

  for (size_t r = 0; r < numRanks; ++r) {
    std::string rpath = Validator::index("pipeline.ranks", r);
    const json &entry = v.object(ranks[r], rpath);
    if (entry.contains("rank")) {
      uint64_t given =
          v.unsignedInt(entry["rank"], Validator::join(rpath, "rank"));
      if (given != r)
        v.fail(Validator::join(rpath, "rank"),
               "entry " + std::to_string(r) + " of pipeline.ranks says rank " +
                   std::to_string(given) +
                   "; ranks must be listed in order 0, 1, ...");
    }
    p.ranks.emplace_back();
    RankProgram &rank = p.ranks.back();
    if (entry.contains("entry")) {
      rank.entry = v.string(entry["entry"], Validator::join(rpath, "entry"));
      rank.entryABI = v.unsignedInt(v.member(entry, rpath, "entry_abi"),
                                    Validator::join(rpath, "entry_abi"));
      if (rank.entryABI != kRankEntryABIVersion)
        v.fail(Validator::join(rpath, "entry_abi"),
               "native rank entry ABI " + std::to_string(rank.entryABI) +
                   " is not supported (this runtime implements " +
                   std::to_string(kRankEntryABIVersion) +
                   "); recompile the bundle");
    }
    std::string gpath = Validator::join(rpath, "registers");
    const json &registers = v.array(v.member(entry, rpath, "registers"), gpath);
    for (size_t g = 0; g < registers.size(); ++g) {
      std::string path = Validator::index(gpath, g);
      rank.registers.push_back(v.tensorType(v.object(registers[g], path), path));
    }
    std::vector<bool> defined(rank.registers.size(), false);
    std::set<size_t> called;

    std::string ppath = Validator::join(rpath, "program");
    const json &program = v.array(v.member(entry, rpath, "program"), ppath);
    for (size_t i = 0; i < program.size(); ++i) {
      std::string ipath = instructionPath(r, i);
      const json &ientry = v.object(program[i], ipath);
      std::string where = "rank " + std::to_string(r) + ", instruction " +
                          std::to_string(i) + ": ";
      auto reg = [&](const json &value, const std::string &at) -> size_t {
        uint64_t index = v.unsignedInt(value, at);
        if (index >= rank.registers.size())
          v.fail(at, where + "register " + std::to_string(index) +
                         " does not exist (rank " + std::to_string(r) +
                         " has " + std::to_string(rank.registers.size()) +
                         " registers)");
        return static_cast<size_t>(index);
      };
      auto read = [&](size_t index, const std::string &at) {
        if (!defined[index])
          v.fail(at, where + "reads register " + std::to_string(index) +
                         " before any instruction of the program writes it");
      };
      auto field = [&](const char *key) -> const json & {
        return v.member(ientry, ipath, key);
      };
      auto fieldPath = [&](const char *key) {
        return Validator::join(ipath, key);
      };
      auto microbatch = [&]() -> int64_t {
        uint64_t m = v.unsignedInt(field("microbatch"), fieldPath("microbatch"));
        if (m >= p.microbatches)
          v.fail(fieldPath("microbatch"),
                 where + "micro-batch " + std::to_string(m) +
                     " is out of range (the schedule has " +
                     std::to_string(p.microbatches) + ")");
        return static_cast<int64_t>(m);
      };
      auto peer = [&]() -> size_t {
        uint64_t q = v.unsignedInt(field("peer"), fieldPath("peer"));
        if (q >= numRanks)
          v.fail(fieldPath("peer"), where + "peer rank " + std::to_string(q) +
                                        " does not exist (the pipeline has " +
                                        ranksText(numRanks) + ")");
        if (q == r)
          v.fail(fieldPath("peer"),
                 where + "rank " + std::to_string(r) + " cannot " +
                     (ientry.value("op", "") == "send" ? "send to" :
                                                         "receive from") +
                     " itself");
        return static_cast<size_t>(q);
      };
      auto tag = [&]() -> int64_t {
        uint64_t t = v.unsignedInt(field("tag"), fieldPath("tag"));
        if (t > static_cast<uint64_t>(std::numeric_limits<int32_t>::max()))
          v.fail(fieldPath("tag"), where + "tag " + std::to_string(t) +
                                       " is too large (at most 2^31 - 1)");
        return static_cast<int64_t>(t);
      };

      PipelineInstruction ins;
      std::string op = v.string(field("op"), fieldPath("op"));
      if (op == "input") {
        ins.op = PipelineInstruction::Op::Input;
        ins.name = v.string(field("name"), fieldPath("name"));
        int d = dataIndex(ins.name);
        if (d < 0)
          v.fail(fieldPath("name"), where + "no data array '" + ins.name +
                                        "' (pipeline.inputs and labels: " +
                                        dataList + ")");
        ins.microbatch = microbatch();
        ins.dst = reg(field("dst"), fieldPath("dst"));
        const TensorType &type = rank.registers[ins.dst];
        if (type.shape.empty() ||
            static_cast<size_t>(type.shape[0]) != p.microbatchSize)
          v.fail(fieldPath("dst"),
                 where + "register " + std::to_string(ins.dst) + " is " +
                     describe(type) + ": the first axis of data '" + ins.name +
                     "' must be microbatch_size " +
                     std::to_string(p.microbatchSize));
        PipelineData &data = p.data[d];
        if (dataFirstUse[d].empty()) {
          data.type = type;
          dataFirstUse[d] = ipath;
        } else if (data.type.dtype != type.dtype ||
                   data.type.shape != type.shape) {
          v.fail(fieldPath("dst"),
                 where + "data '" + ins.name + "' is read into " +
                     describe(type) + " here but into " + describe(data.type) +
                     " at " + dataFirstUse[d]);
        }
        if (data.ranks.empty() || data.ranks.back() != r)
          data.ranks.push_back(r);
        defined[ins.dst] = true;
      } else if (op == "call") {
        ins.op = PipelineInstruction::Op::Call;
        std::string name = v.string(field("function"), fieldPath("function"));
        auto it = functionIndex.find(name);
        if (it == functionIndex.end())
          v.fail(fieldPath("function"), where + "no function '" + name +
                                            "' (functions: " + functionNames +
                                            ")");
        ins.function = it->second;
        const FunctionSpec &function = manifest.functions[ins.function];
        if (ientry.contains("weights")) {
          const json &weights = v.object(ientry["weights"], fieldPath("weights"));
          bool save = weights.contains("save"), use = weights.contains("use");
          if (save == use || weights.size() != 1)
            v.fail(fieldPath("weights"),
                   where + "expected exactly one of \"save\" and \"use\"");
          std::string key = save ? "save" : "use";
          int64_t slot = static_cast<int64_t>(
              v.unsignedInt(weights[key], fieldPath("weights") + "." + key));
          (save ? ins.saveWeights : ins.useWeights) = slot;
        }
        if (ientry.contains("chunk"))
          ins.chunk = static_cast<int64_t>(
              v.unsignedInt(ientry["chunk"], fieldPath("chunk")));
        if (ientry.contains("replica")) {
          uint64_t replica =
              v.unsignedInt(ientry["replica"], fieldPath("replica"));
          if (replica >= p.replicas)
            v.fail(fieldPath("replica"),
                   where + "replica " + std::to_string(replica) +
                       " is out of range (the pipeline has " +
                       std::to_string(p.replicas) + " replicas)");
          ins.replica = static_cast<int64_t>(replica);
        }
        if (ientry.contains("microbatch"))
          ins.microbatch = microbatch();
        if (ientry.contains("action"))
          ins.action = v.string(ientry["action"], fieldPath("action"));
        if (ientry.contains("stage"))
          ins.stage = static_cast<int64_t>(
              v.unsignedInt(ientry["stage"], fieldPath("stage")));
        std::vector<const BufferSpec *> valueIn, valueOut;
        for (const BufferSpec &b : function.buffers) {
          if (isBoundBuffer(b))
            continue;
          (b.role == PD_ROLE_INPUT ? valueIn : valueOut).push_back(&b);
        }
        auto registers = [&](const char *key,
                             const std::vector<const BufferSpec *> &buffers,
                             std::vector<size_t> &out) {
          std::string apath = fieldPath(key);
          const json &list = v.array(field(key), apath);
          const char *what = std::string(key) == "args" ? "argument" : "result";
          if (list.size() != buffers.size()) {
            std::string names;
            for (const BufferSpec *b : buffers)
              names += (names.empty() ? "" : ", ") + b->name + " " +
                       describe(b->type);
            v.fail(apath, where + "function '" + function.name + "' takes " +
                              std::to_string(buffers.size()) + " value " +
                              what + (buffers.size() == 1 ? "" : "s") + " (" +
                              (names.empty() ? "none" : names) + "), got " +
                              std::to_string(list.size()) + " registers");
          }
          for (size_t k = 0; k < list.size(); ++k) {
            std::string kpath = Validator::index(apath, k);
            size_t index = reg(list[k], kpath);
            const TensorType &type = rank.registers[index];
            if (type.dtype != buffers[k]->type.dtype ||
                type.shape != buffers[k]->type.shape)
              v.fail(kpath, where + "register " + std::to_string(index) +
                                " is " + describe(type) + " but " + what +
                                " '" + buffers[k]->name + "' of function '" +
                                function.name + "' is " +
                                describe(buffers[k]->type));
            out.push_back(index);
          }
        };
        registers("args", valueIn, ins.args);
        registers("results", valueOut, ins.results);
        for (size_t k = 0; k < ins.args.size(); ++k)
          read(ins.args[k], Validator::index(fieldPath("args"), k));
        std::set<size_t> written;
        for (size_t k = 0; k < ins.results.size(); ++k) {
          size_t index = ins.results[k];
          std::string kpath = Validator::index(fieldPath("results"), k);
          if (std::find(ins.args.begin(), ins.args.end(), index) !=
              ins.args.end())
            v.fail(kpath, where + "register " + std::to_string(index) +
                              " is both an argument and a result of the "
                              "call; results must not alias arguments");
          if (!written.insert(index).second)
            v.fail(kpath, where + "register " + std::to_string(index) +
                              " receives two results of the call");
          defined[index] = true;
        }
        called.insert(ins.function);
      } else if (op == "send" || op == "recv") {
        bool send = op == "send";
        ins.op = send ? PipelineInstruction::Op::Send
                      : PipelineInstruction::Op::Recv;
        ins.peer = peer();
        ins.tag = tag();
        if (send) {
          ins.src = reg(field("src"), fieldPath("src"));
          read(ins.src, fieldPath("src"));
          sends[{r, ins.peer}].push_back(
              {r, i, ins.tag, &rank.registers[ins.src]});
        } else {
          ins.dst = reg(field("dst"), fieldPath("dst"));
          defined[ins.dst] = true;
          recvs[{ins.peer, r}].push_back(
              {r, i, ins.tag, &rank.registers[ins.dst]});
        }
      } else if (op == "loss") {
        ins.op = PipelineInstruction::Op::Loss;
        ins.src = reg(field("src"), fieldPath("src"));
        read(ins.src, fieldPath("src"));
        const TensorType &type = rank.registers[ins.src];
        if ((type.dtype != PD_DTYPE_F32 && type.dtype != PD_DTYPE_F64) ||
            type.numElements != 1)
          v.fail(fieldPath("src"), where + "the loss register " +
                                       std::to_string(ins.src) + " is " +
                                       describe(type) +
                                       "; expected one f32 or f64 element");
        ins.microbatch = microbatch();
        auto &at = lossAt[static_cast<size_t>(ins.microbatch)];
        if (at.first != std::numeric_limits<size_t>::max())
          v.fail(ipath, where + "a second loss of micro-batch " +
                            std::to_string(ins.microbatch) + " (the first is " +
                            instructionPath(at.first, at.second) + ")");
        at = {r, i};
      } else if (op == "all_reduce") {
        ins.op = PipelineInstruction::Op::AllReduce;
        ins.name = v.string(field("buffer"), fieldPath("buffer"));
        ins.type = v.tensorType(ientry, ipath);
        if (!isFloat(ins.type.dtype))
          v.fail(fieldPath("dtype"), where + "an all-reduce sums a gradient, "
                                             "which is a float, not " +
                                             describe(ins.type));
        ins.microbatch = microbatch();
        const json &group = v.array(field("ranks"), fieldPath("ranks"));
        for (size_t k = 0; k < group.size(); ++k) {
          std::string kpath = Validator::index(fieldPath("ranks"), k);
          uint64_t q = v.unsignedInt(group[k], kpath);
          if (q >= numRanks || (!ins.group.empty() && q <= ins.group.back()))
            v.fail(kpath, where + "the ranks of an all-reduce are distinct "
                                  "ranks of the pipeline (" +
                              ranksText(numRanks) + "), ascending");
          ins.group.push_back(static_cast<size_t>(q));
        }
        if (ins.group.size() < 2 ||
            !std::binary_search(ins.group.begin(), ins.group.end(), r))
          v.fail(fieldPath("ranks"),
                 where + "an all-reduce needs two or more ranks, this one "
                         "among them");
        collectives[ins.group].resize(numRanks);
        collectives[ins.group][r].push_back({i, ins.name, ins.type});
      } else {
        v.fail(fieldPath("op"), where + "unknown op '" + op +
                                    "' (expected input, call, send, recv, "
                                    "loss or all_reduce)");
      }
      rank.program.push_back(std::move(ins));
    }
    rank.functions.assign(called.begin(), called.end());
    parseRankWeights(v, entry, rpath, r, manifest, rank);
    // An all-reduce sums a gradient accumulator the rank's functions bind.
    for (size_t i = 0; i < rank.program.size(); ++i) {
      const PipelineInstruction &ins = rank.program[i];
      if (ins.op != PipelineInstruction::Op::AllReduce)
        continue;
      const BufferSpec *found = nullptr;
      for (size_t f : rank.functions)
        for (const BufferSpec &b : manifest.functions[f].buffers)
          if (b.role == PD_ROLE_GRAD && b.name == ins.name)
            found = &b;
      std::string ipath = Validator::join(instructionPath(r, i), "buffer");
      std::string where = "rank " + std::to_string(r) + ", instruction " +
                          std::to_string(i) + ": ";
      if (!found)
        v.fail(ipath, where + "no function of the rank has a gradient "
                              "buffer '" +
                          ins.name + "' to all-reduce");
      if (found->type.dtype != ins.type.dtype ||
          found->type.shape != ins.type.shape)
        v.fail(ipath, where + "'" + ins.name + "' is " +
                          describe(found->type) + ", but the all-reduce is " +
                          describe(ins.type));
    }
  }

  // Every rank of a group runs the group's all-reduces in the same order.
  for (const auto &[group, members] : collectives) {
    size_t first = group.front();
    for (size_t q : group) {
      const auto &a = members[first], &b = members[q];
      for (size_t k = 0; k < std::max(a.size(), b.size()); ++k) {
        if (k >= a.size() || k >= b.size()) {
          size_t more = k >= a.size() ? q : first;
          size_t less = more == q ? first : q;
          v.fail(instructionPath(more, members[more][k].instruction),
                 "all-reduce " + std::to_string(k) + " of ranks " +
                     std::to_string(first) + ".. has no match on rank " +
                     std::to_string(less) + ", which runs " +
                     std::to_string(members[less].size()) +
                     " all-reduces of this group");
        }
        if (a[k].buffer != b[k].buffer || a[k].type.shape != b[k].type.shape ||
            a[k].type.dtype != b[k].type.dtype)
          v.fail(instructionPath(q, b[k].instruction),
                 "all-reduce " + std::to_string(k) + " of this group sums '" +
                     b[k].buffer + "' " + describe(b[k].type) +
                     " here but '" + a[k].buffer + "' " + describe(a[k].type) +
                     " on rank " + std::to_string(first));
      }
    }
  }

  // Every micro-batch's loss, all on one rank.
  for (size_t m = 0; m < p.microbatches; ++m) {
    if (lossAt[m].first == std::numeric_limits<size_t>::max())
      v.fail("pipeline.ranks", "no rank has a loss instruction for micro-batch " +
                                   std::to_string(m) + " (the schedule has " +
                                   std::to_string(p.microbatches) + ")");
    if (lossAt[m].first != lossAt[0].first)
      v.fail(instructionPath(lossAt[m].first, lossAt[m].second),
             "the loss of micro-batch " + std::to_string(m) + " is on rank " +
                 std::to_string(lossAt[m].first) + " but that of micro-batch 0 "
                 "on rank " + std::to_string(lossAt[0].first) +
                 "; all losses must be on the last stage's rank");
  }
  p.lossRank = lossAt[0].first;
  parseRankLayout(v, object, p);

  // Every data array is read somewhere; labels of the right kind.
  for (size_t d = 0; d < p.data.size(); ++d) {
    const PipelineData &data = p.data[d];
    std::string dpath =
        data.isLabels ? "pipeline.labels" : Validator::index("pipeline.inputs", d);
    if (data.ranks.empty())
      v.fail(dpath, "'" + data.name +
                        "' is read by no 'input' instruction of any rank");
  }
  const TensorType &labels =
      hasLabels ? p.data.back().type : TensorType{};
  if (p.loss == "cross-entropy" && labels.dtype != PD_DTYPE_I64 &&
      labels.dtype != PD_DTYPE_I32)
    v.fail("pipeline.labels", "cross-entropy takes class indices (i64), but "
                              "labels '" +
                                  p.labels + "' are " + describe(labels));
  if (p.loss == "mse" && !isFloat(labels.dtype))
    v.fail("pipeline.labels", "mse takes a float target, but labels '" +
                                  p.labels + "' are " + describe(labels));

  // Both ends of every pair list the same messages in the same order.
  std::set<std::pair<size_t, size_t>> pairs;
  for (auto &entry : sends)
    pairs.insert(entry.first);
  for (auto &entry : recvs)
    pairs.insert(entry.first);
  for (const auto &pair : pairs) {
    const std::vector<MessageEnd> &out = sends[pair];
    const std::vector<MessageEnd> &in = recvs[pair];
    std::string from = std::to_string(pair.first),
                to = std::to_string(pair.second);
    for (size_t k = 0; k < std::max(out.size(), in.size()); ++k) {
      std::string nth = "message " + std::to_string(k) + " from rank " + from +
                        " to rank " + to;
      if (k >= in.size())
        v.fail(instructionPath(out[k].rank, out[k].instruction),
               "send to rank " + to + " with tag " +
                   std::to_string(out[k].tag) + " (" + nth +
                   ") has no matching recv: rank " + to + " receives " +
                   std::to_string(in.size()) + " messages from rank " + from +
                   " and rank " + from + " sends " +
                   std::to_string(out.size()));
      if (k >= out.size())
        v.fail(instructionPath(in[k].rank, in[k].instruction),
               "recv from rank " + from + " with tag " +
                   std::to_string(in[k].tag) + " (" + nth +
                   ") has no matching send: rank " + from + " sends " +
                   std::to_string(out.size()) + " messages to rank " + to +
                   " and rank " + to + " receives " +
                   std::to_string(in.size()));
      const MessageEnd &s = out[k], &q = in[k];
      if (s.tag != q.tag)
        v.fail(instructionPath(s.rank, s.instruction),
               "send to rank " + to + " with tag " + std::to_string(s.tag) +
                   " is " + nth + ", but the matching recv " +
                   instructionPath(q.rank, q.instruction) + " expects tag " +
                   std::to_string(q.tag) +
                   " (both ranks must list their messages in the same order)");
      if (s.type->dtype != q.type->dtype || s.type->shape != q.type->shape)
        v.fail(instructionPath(s.rank, s.instruction),
               "send to rank " + to + " with tag " + std::to_string(s.tag) +
                   " sends " + describe(*s.type) + " but the matching recv " +
                   instructionPath(q.rank, q.instruction) + " receives " +
                   describe(*q.type));
    }
  }
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
