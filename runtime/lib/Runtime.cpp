//===- Runtime.cpp - bundle loading, buffers, the C API -------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Implements pipedream/runtime.h. Internally C++ with exceptions (Error);
// every C entry point catches everything and turns it into a pd_status and
// the thread's last-error message, so nothing escapes into C callers.
//
//===----------------------------------------------------------------------===//

#include "pipedream/runtime.h"

#include "Bundle.h"
#include "Checkpoint.h"
#include "ConstantWeights.h"
#include "DataIndexChecks.h"
#include "GpuDevice.h"
#include "LinkedWeights.h"
#include "Manifest.h"
#include "Threads.h"
#include "StepSnapshot.h"
#include "Trace.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <new>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <dlfcn.h>
#include <sys/stat.h>

using pipedream::runtime::allocateAligned;
using pipedream::runtime::BufferSpec;
using pipedream::runtime::describeType;
using pipedream::runtime::ensureMemory;
using pipedream::runtime::EntryPoint;
using pipedream::runtime::Error;
using pipedream::runtime::fail;
using pipedream::runtime::FunctionSpec;
using pipedream::runtime::guarded;
using pipedream::runtime::kAlignment;
using pipedream::runtime::Manifest;
using pipedream::runtime::nullArgument;
using pipedream::runtime::PersistentSpec;
using pipedream::runtime::TensorType;
using pipedream::runtime::TrainingSpec;
using pipedream::runtime::WeightSpec;

namespace {

thread_local std::string lastError;

std::string joinPath(const std::string &dir, const std::string &file) {
  if (dir.empty())
    return file;
  if (dir.back() == '/')
    return dir + file;
  return dir + "/" + file;
}

std::string errnoText(int error) { return std::strerror(error); }

} // namespace

namespace pipedream {
namespace runtime {

void checkDataRows(const std::string &prefix, const std::string &name,
                   const pd_named_array &array, size_t bytes,
                   const pd_named_array *&first, size_t &numSamples) {
  size_t rows = static_cast<size_t>(array.shape[0]);
  if ((bytes != 0 && array.num_bytes / bytes != rows) ||
      (bytes != 0 && array.num_bytes % bytes != 0) ||
      (bytes == 0 && array.num_bytes != 0))
    throw Error(PD_ERROR_MISMATCH,
                prefix + "array '" + name + "' is " +
                    describeType(array.dtype, array.shape, array.rank) +
                    " but has " + std::to_string(array.num_bytes) +
                    " bytes of data");
  if (array.num_bytes != 0 && !array.data)
    throw Error(PD_ERROR_INVALID_ARGUMENT,
                prefix + "array '" + name + "' has NULL data");
  if (!first) {
    first = &array;
    numSamples = rows;
  } else if (rows != numSamples) {
    throw Error(PD_ERROR_MISMATCH,
                prefix +
                    "arrays have different numbers of samples (first "
                    "axis): '" +
                    first->name + "' has " + std::to_string(numSamples) +
                    ", '" + array.name + "' has " + std::to_string(rows));
  }
}

std::string describeDataType(const TensorType &type) {
  std::string text = pd_dtype_name(type.dtype);
  text += "[N";
  for (size_t i = 1; i < type.shape.size(); ++i)
    text += "x" + std::to_string(type.shape[i]);
  return text + "]";
}

std::vector<const pd_named_array *>
matchDataArrays(const std::vector<DataRead> &reads, const std::string &reader,
                const pd_named_array *arrays, size_t count,
                size_t &numSamples) {
  const std::string prefix = "training data: ";
  if (count != 0 && !arrays)
    throw Error(PD_ERROR_INVALID_ARGUMENT, prefix + "'arrays' is NULL");
  std::map<std::string, const pd_named_array *> byName;
  std::string given;
  for (size_t i = 0; i < count; ++i) {
    if (!arrays[i].name)
      throw Error(PD_ERROR_INVALID_ARGUMENT,
                  prefix + "array " + std::to_string(i) + " has no name");
    if (!byName.emplace(arrays[i].name, &arrays[i]).second)
      throw Error(PD_ERROR_INVALID_ARGUMENT,
                  prefix + "two arrays named '" + arrays[i].name + "'");
    given += (given.empty() ? "" : ", ") + std::string(arrays[i].name);
  }

  std::vector<const pd_named_array *> matched;
  std::string missing;
  size_t missingCount = 0;
  for (const DataRead &read : reads) {
    auto it = byName.find(*read.name);
    if (it == byName.end()) {
      missing += (missing.empty() ? "'" : ", '") + *read.name + "' " +
                 describeDataType(*read.type) +
                 (read.isLabels ? " (the labels)" : "");
      ++missingCount;
      continue;
    }
    matched.push_back(it->second);
  }
  if (missingCount)
    throw Error(PD_ERROR_NOT_FOUND,
                prefix + "missing " +
                    (missingCount == 1 ? "array " : "arrays ") + missing +
                    " (arrays given: " + (given.empty() ? "none" : given) +
                    ")");

  numSamples = 0;
  const pd_named_array *first = nullptr;
  for (size_t i = 0; i < matched.size(); ++i) {
    const DataRead &read = reads[i];
    const pd_named_array &array = *matched[i];
    if (array.rank != 0 && !array.shape)
      throw Error(PD_ERROR_INVALID_ARGUMENT,
                  prefix + "array '" + *read.name + "' has a NULL shape");
    const TensorType &type = *read.type;
    bool same = array.dtype == type.dtype && array.rank == type.shape.size() &&
                array.rank >= 1 && array.shape[0] >= 0;
    for (size_t d = 1; same && d < array.rank; ++d)
      same = array.shape[d] == type.shape[d];
    if (!same)
      throw Error(PD_ERROR_MISMATCH,
                  prefix + "array '" + *read.name + "' is " +
                      describeType(array.dtype, array.shape, array.rank) +
                      ", but " + reader + " " +
                      (read.isLabels ? "labels" : "input") + " '" +
                      *read.name + "' as " + describeDataType(type) +
                      " (N samples)");
    checkDataRows(prefix, *read.name, array, read.rowBytes, first,
                  numSamples);
  }
  if (first && numSamples == 0)
    throw Error(PD_ERROR_INVALID_ARGUMENT,
                prefix + "array '" + first->name +
                    "' has no samples (its first axis is 0)");
  return matched;
}

void checkLabelRange(const std::string &name, pd_dtype dtype, size_t perRow,
                     int64_t numClasses, const pd_named_array &labels,
                     size_t numSamples, size_t firstRow, size_t rows) {
  size_t elementSize = pd_dtype_size(dtype);
  const unsigned char *data = static_cast<const unsigned char *>(labels.data);
  rows = std::min(rows, numSamples);
  for (size_t r = 0; r < rows; ++r) {
    size_t row = (firstRow + r) % numSamples;
    for (size_t e = 0; e < perRow; ++e) {
      const unsigned char *at = data + (row * perRow + e) * elementSize;
      int64_t value;
      if (dtype == PD_DTYPE_I64) {
        std::memcpy(&value, at, sizeof(value));
      } else {
        int32_t narrow;
        std::memcpy(&narrow, at, sizeof(narrow));
        value = narrow;
      }
      if (value >= 0 && value < numClasses)
        continue;
      std::string where;
      if (labels.rank > 1) {
        // The element's index, e.g. [17, 3].
        where = " at [" + std::to_string(row);
        size_t rest = e;
        std::vector<int64_t> index(labels.rank - 1);
        for (size_t d = labels.rank; d-- > 1;) {
          int64_t extent = labels.shape[d];
          index[d - 1] = extent ? static_cast<int64_t>(rest % extent) : 0;
          rest = extent ? rest / extent : 0;
        }
        for (int64_t i : index)
          where += ", " + std::to_string(i);
        where += "]";
      }
      throw Error(PD_ERROR_INVALID_ARGUMENT,
                  "training data: array '" + name + "': row " +
                      std::to_string(row) + " holds " + std::to_string(value) +
                      where + ", outside [0, " + std::to_string(numClasses) +
                      ") (cross-entropy over " + std::to_string(numClasses) +
                      " classes)");
    }
  }
}

AlignedMemory allocateAligned(size_t bytes, const std::string &what) {
  size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  if (rounded == 0)
    rounded = kAlignment;
  void *memory = nullptr;
  if (posix_memalign(&memory, kAlignment, rounded) != 0 || !memory)
    throw Error(PD_ERROR_OUT_OF_MEMORY, "cannot allocate " +
                                            std::to_string(bytes) +
                                            " bytes for " + what);
  std::memset(memory, 0, rounded);
  return AlignedMemory(static_cast<unsigned char *>(memory));
}

pd_status fail(pd_status status, std::string message) {
  lastError = std::move(message);
  return status;
}

pd_status nullArgument(const char *function, const char *argument) {
  return fail(PD_ERROR_INVALID_ARGUMENT,
              std::string(function) + ": '" + argument + "' is NULL");
}

std::string takeCheckFailure(const pd_function &function) {
  if (!function.checkRecord)
    return "";
  CheckRecord *record = function.checkRecord();
  if (!record || !record->failed)
    return "";
  std::string op, node, input;
  if (const char *info = record->info) {
    op = info;
    info += op.size() + 1;
    node = info;
    info += node.size() + 1;
    input = info;
  }
  std::string text =
      (node.empty() ? std::string("a node") : "node '" + node + "'") +
      (op.empty() ? std::string() : " (op " + op + ")") + ": index " +
      std::to_string(record->value) + " out of range [" +
      std::to_string(record->lower) + ", " + std::to_string(record->upper) +
      ")" + (input.empty() ? std::string() : " in input '" + input + "'");
  *record = CheckRecord{};
  return text;
}

std::string describeNonFinite(const pd_buffer &buffer) {
  const unsigned char *memory = buffer.memory.get();
  if (!memory)
    return "";
  size_t count = buffer.type.numBytes / std::max<size_t>(
                                            pd_dtype_size(buffer.type.dtype), 1);
  auto describe = [](double value, size_t index) {
    return std::string(std::isnan(value) ? "nan" : value > 0 ? "inf" : "-inf") +
           " at element " + std::to_string(index);
  };
  switch (buffer.type.dtype) {
  case PD_DTYPE_F32: {
    // NOTE: a branch-free scan first (vectorizes); the slow search only
    // when something is not finite.
    const float *values = reinterpret_cast<const float *>(memory);
    float sum = 0;
    for (size_t i = 0; i < count; ++i)
      sum += values[i] * 0.0f;
    if (sum == 0)
      return "";
    for (size_t i = 0; i < count; ++i)
      if (!std::isfinite(values[i]))
        return describe(values[i], i);
    return "";
  }
  case PD_DTYPE_F64: {
    const double *values = reinterpret_cast<const double *>(memory);
    double sum = 0;
    for (size_t i = 0; i < count; ++i)
      sum += values[i] * 0.0;
    if (sum == 0)
      return "";
    for (size_t i = 0; i < count; ++i)
      if (!std::isfinite(values[i]))
        return describe(values[i], i);
    return "";
  }
  case PD_DTYPE_F16:
  case PD_DTYPE_BF16: {
    // Exponent all ones: 5 bits (f16) or 8 bits (bf16) below the sign.
    const uint16_t mask = buffer.type.dtype == PD_DTYPE_F16 ? 0x7c00 : 0x7f80;
    const uint16_t mantissa = static_cast<uint16_t>(~mask & 0x7fff);
    for (size_t i = 0; i < count; ++i) {
      uint16_t bits;
      std::memcpy(&bits, memory + 2 * i, 2);
      if ((bits & mask) == mask) {
        double value = (bits & mantissa) ? NAN : (bits & 0x8000) ? -INFINITY
                                                                  : INFINITY;
        return describe(value, i);
      }
    }
    return "";
  }
  default:
    return "";
  }
}

unsigned char *ensureMemory(pd_buffer &buffer) {
  // An in-place output is the buffer it updates.
  if (buffer.inPlaceOf)
    return ensureMemory(*buffer.inPlaceOf);
  if (!buffer.memory) {
    if (!buffer.onRank)
      throw Error(PD_ERROR_INVALID_ARGUMENT,
                  buffer.what +
                      " is not on this rank (none of the functions its "
                      "pipeline program calls uses it)");
    buffer.memory = allocateAligned(buffer.type.numBytes, buffer.what);
  }
  if (buffer.cuda) {
    // The caller may write through the pointer: the host copy becomes the
    // value, uploaded before the next call (GpuDevice.cpp).
    downloadBuffer(buffer);
    buffer.deviceCurrent = false;
  }
  return buffer.memory.get();
}

} // namespace runtime
} // namespace pipedream

struct pd_trainer {
  pd_bundle *bundle = nullptr;
  pd_function *step = nullptr;
  pd_function *update = nullptr;
  /// The step function's data inputs: training.inputs, then the labels.
  std::vector<pd_buffer *> data;
  pd_buffer *labels = nullptr;
  pd_buffer *loss = nullptr;
  /// Every `grad` buffer of the bundle, zeroed before each step.
  std::vector<pd_buffer *> grads;
  /// Persistent buffers (not grads) the step function updates (BatchNorm
  /// running statistics, on the host or the device), copied at the start
  /// of each step and restored when the step fails, so a failed step
  /// changes nothing.
  pipedream::runtime::StepSnapshot stepSnapshot;
  /// pd_trainer_set_check_finite.
  bool checkFinite = false;
  /// Measured events (pd_trainer_set_tracing).
  pipedream::runtime::TraceLog trace;
};

namespace pipedream {
namespace runtime {
pd_bundle *trainerBundle(pd_trainer *trainer) { return trainer->bundle; }
TraceLog &traceLogOf(pd_trainer &trainer) { return trainer.trace; }
} // namespace runtime
} // namespace pipedream

pd_buffer::~pd_buffer() { pipedream::runtime::releaseDevice(*this); }

pd_bundle::~pd_bundle() {
  for (pd_pipeline *pipeline : pipelines)
    pipedream::runtime::destroyPipeline(pipeline);
  pipelines.clear();
  trainers.clear();
  functions.clear();
  persistent.clear();
  weights.clear();
  if (library) {
    pipedream::runtime::forgetThreads(library);
    dlclose(library);
  }
}

namespace {

std::string readFile(const std::string &path, const char *what) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0)
    throw Error(PD_ERROR_IO, path + ": cannot open " + what + ": " +
                                 errnoText(errno));
  if (S_ISDIR(st.st_mode))
    throw Error(PD_ERROR_IO, path + ": cannot open " + what +
                                 ": is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error(PD_ERROR_IO, path + ": cannot open " + what + ": " +
                                 errnoText(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad())
    throw Error(PD_ERROR_IO, path + ": cannot read " + what);
  return text.str();
}

std::unique_ptr<pd_buffer> makeBuffer(const std::string &name, pd_role role,
                                      const TensorType &type, std::string what,
                                      bool allocate = true) {
  auto buffer = std::make_unique<pd_buffer>();
  buffer->name = name;
  buffer->role = role;
  buffer->type = type;
  buffer->what = std::move(what);
  if (allocate)
    buffer->memory = allocateAligned(type.numBytes, buffer->what);
  return buffer;
}

/// The functions to load: all of them, or on a rank bundle those the rank's
/// program calls (Manifest::functions indices, ascending).
std::vector<size_t> functionsToLoad(const pd_bundle &bundle) {
  if (bundle.rank >= 0)
    return bundle.manifest.pipeline.functionsOf(
        static_cast<size_t>(bundle.rank));
  std::vector<size_t> all(bundle.manifest.functions.size());
  for (size_t i = 0; i < all.size(); ++i)
    all[i] = i;
  return all;
}

/// Names of the weights, grads and states the loaded functions use (as
/// buffers or through `updates`).
std::set<std::string> persistentNamesUsed(const pd_bundle &bundle) {
  std::set<std::string> names;
  for (size_t f : functionsToLoad(bundle))
    for (const BufferSpec &b : bundle.manifest.functions[f].buffers) {
      if (b.role == PD_ROLE_WEIGHT || b.role == PD_ROLE_GRAD ||
          b.role == PD_ROLE_STATE)
        names.insert(b.name);
      if (!b.updates.empty())
        names.insert(b.updates);
    }
  return names;
}

/// Reads `bytes` at `offset` of the bundle file `file` into `memory`,
/// after checking the range against the file's size.
void readWeightBytes(const pd_bundle &bundle, const std::string &file,
                     const std::string &name, uint64_t offset, uint64_t bytes,
                     void *memory) {
  std::string path = joinPath(bundle.dir, file);
  std::FILE *stream = std::fopen(path.c_str(), "rb");
  if (!stream)
    throw Error(PD_ERROR_IO, path + ": cannot open the weights file: " +
                                 errnoText(errno));
  std::unique_ptr<std::FILE, int (*)(std::FILE *)> closer(stream, std::fclose);
  struct stat st;
  if (fstat(fileno(stream), &st) != 0 || !S_ISREG(st.st_mode))
    throw Error(PD_ERROR_IO,
                path + ": cannot open the weights file: not a regular file");
  uint64_t fileSize = static_cast<uint64_t>(st.st_size);
  if (offset > fileSize || bytes > fileSize - offset)
    throw Error(PD_ERROR_FORMAT,
                path + ": too short: weight '" + name + "' needs bytes [" +
                    std::to_string(offset) + ", " +
                    std::to_string(offset + bytes) + ") but the file has " +
                    std::to_string(fileSize));
  if (bytes == 0)
    return;
  if (fseeko(stream, static_cast<off_t>(offset), SEEK_SET) != 0 ||
      std::fread(memory, 1, bytes, stream) != bytes)
    throw Error(PD_ERROR_IO, path + ": cannot read weight '" + name +
                                 "' at offset " + std::to_string(offset));
}

/// Checks every weight against its file's size, then reads each into its
/// own aligned buffer. On a rank bundle only the rank's weights are read,
/// from the rank's own weight file when it has one (bundle version 3); the
/// others are listed without memory.
void loadWeights(pd_bundle &bundle) {
  const Manifest &manifest = bundle.manifest;
  if (manifest.weights.empty())
    return;
  // Where each weight is read from: its entry, or the rank's own file.
  std::vector<std::pair<const std::string *, uint64_t>> source;
  for (const WeightSpec &weight : manifest.weights)
    source.push_back({&weight.file, weight.offset});
  std::set<std::string> used;
  if (bundle.rank >= 0) {
    used = persistentNamesUsed(bundle);
    const pipedream::runtime::RankProgram &rank =
        manifest.pipeline.ranks[manifest.pipeline.programOf(
            static_cast<size_t>(bundle.rank))];
    if (rank.weightsFileLinked)
      pipedream::runtime::checkLinkedWeightsFile(
          joinPath(bundle.dir, rank.weightsFile), rank.linkedBytes,
          rank.linkedMtimeNs);
    if (!rank.weightsFile.empty()) {
      std::vector<bool> listed(manifest.weights.size(), false);
      for (auto [w, offset] : rank.weights) {
        source[w] = {&rank.weightsFile, offset};
        listed[w] = true;
      }
      for (size_t w = 0; w < manifest.weights.size(); ++w)
        if (used.count(manifest.weights[w].name) && !listed[w])
          throw Error(PD_ERROR_FORMAT,
                      joinPath(bundle.dir, rank.weightsFile) +
                          ": rank " + std::to_string(bundle.rank) +
                          " needs weight '" + manifest.weights[w].name +
                          "', which its weights file does not hold");
    }
  }
  // Every range first, so a short file fails before anything is read.
  std::map<std::string, uint64_t> sizes;
  for (size_t w = 0; w < manifest.weights.size(); ++w) {
    const WeightSpec &weight = manifest.weights[w];
    if (bundle.rank >= 0 && !used.count(weight.name))
      continue;
    const std::string &file = *source[w].first;
    auto it = sizes.find(file);
    if (it == sizes.end()) {
      std::string path = joinPath(bundle.dir, file);
      struct stat st;
      if (stat(path.c_str(), &st) != 0)
        throw Error(PD_ERROR_IO, path + ": cannot open the weights file: " +
                                     errnoText(errno));
      if (!S_ISREG(st.st_mode))
        throw Error(PD_ERROR_IO, path + ": cannot open the weights file: "
                                        "not a regular file");
      it = sizes.emplace(file, static_cast<uint64_t>(st.st_size)).first;
    }
    uint64_t offset = source[w].second;
    if (offset > it->second || weight.bytes > it->second - offset)
      throw Error(PD_ERROR_FORMAT,
                  joinPath(bundle.dir, file) + ": too short: weight '" +
                      weight.name + "' needs bytes [" +
                      std::to_string(offset) + ", " +
                      std::to_string(offset + weight.bytes) +
                      ") but the file has " + std::to_string(it->second));
  }
  for (size_t w = 0; w < manifest.weights.size(); ++w) {
    const WeightSpec &weight = manifest.weights[w];
    bool onRank = bundle.rank < 0 || used.count(weight.name);
    auto buffer = makeBuffer(weight.name, PD_ROLE_WEIGHT, weight.type,
                             "weight '" + weight.name + "'", onRank);
    buffer->written = true;
    buffer->onRank = onRank;
    if (onRank)
      readWeightBytes(bundle, *source[w].first, weight.name, source[w].second,
                      weight.bytes, buffer->memory.get());
    bundle.weights.push_back(std::move(buffer));
  }
}

} // namespace

namespace pipedream {
namespace runtime {
void loadWeightFromFile(pd_bundle &bundle, size_t index) {
  const WeightSpec &weight = bundle.manifest.weights[index];
  pd_buffer &buffer = *bundle.weights[index];
  unsigned char *memory = ensureMemory(buffer);
  readWeightBytes(bundle, weight.file, weight.name, weight.offset,
                  weight.bytes, memory);
}
} // namespace runtime
} // namespace pipedream

namespace {

/// dlopen()s the bundle's library and resolves the symbol of every function
/// to load.
void loadLibrary(pd_bundle &bundle) {
  std::string path = joinPath(bundle.dir, bundle.manifest.library);
  // A path with a '/' keeps dlopen from searching LD_LIBRARY_PATH.
  if (path.find('/') == std::string::npos)
    path = "./" + path;
  struct stat st;
  if (stat(path.c_str(), &st) != 0)
    throw Error(PD_ERROR_LOAD, path + ": cannot open the bundle's library: " +
                                   errnoText(errno));
  dlerror();
  bundle.library = dlopen(path.c_str(), RTLD_LOCAL | RTLD_NOW);
  if (!bundle.library) {
    const char *reason = dlerror();
    throw Error(PD_ERROR_LOAD, path + ": cannot load the bundle's library: " +
                                   (reason ? reason : "unknown dlopen error"));
  }
  // pipedream/threads.h: the kernels' thread count (Threads.cpp).
  pipedream::runtime::configureThreads(bundle.library);
  bundle.functionByIndex.assign(bundle.manifest.functions.size(), nullptr);
  // The run-time status record (docs/Bundle.md "Run-time checks"); every
  // library pipedream-compile writes exports it.
  dlerror();
  void *checkRecord = dlsym(bundle.library, "pipedream_run_time_status");
  dlerror();
  for (size_t index : functionsToLoad(bundle)) {
    const FunctionSpec &spec = bundle.manifest.functions[index];
    dlerror();
    void *symbol = dlsym(bundle.library, spec.symbol.c_str());
    const char *reason = dlerror();
    if (reason || !symbol)
      throw Error(PD_ERROR_LOAD, path + ": no symbol '" + spec.symbol +
                                     "' for function '" + spec.name + "'");
    auto function = std::make_unique<pd_function>();
    function->spec = spec;
    function->index = index;
    // NOTE: converting an object pointer to a function pointer is what
    // dlsym is specified for (POSIX).
    function->entry = reinterpret_cast<EntryPoint>(symbol);
    function->checkRecord =
        reinterpret_cast<pipedream::runtime::CheckRecordAccessor>(checkRecord);
    bundle.functionByIndex[index] = function.get();
    bundle.functions.push_back(std::move(function));
  }
}

void allocateBuffers(pd_bundle &bundle) {
  std::map<std::string, pd_buffer *> byName;
  for (auto &weight : bundle.weights)
    byName[weight->name] = weight.get();
  std::set<std::string> used;
  if (bundle.rank >= 0)
    used = persistentNamesUsed(bundle);
  bundle.persistentByIndex.assign(bundle.manifest.persistent.size(), nullptr);
  for (size_t i = 0; i < bundle.manifest.persistent.size(); ++i) {
    const PersistentSpec &spec = bundle.manifest.persistent[i];
    if (bundle.rank >= 0 && !used.count(spec.name))
      continue;
    bundle.persistent.push_back(makeBuffer(
        spec.name, spec.role, spec.type,
        std::string(pd_role_name(spec.role)) + " '" + spec.name + "'"));
    bundle.persistent.back()->written = true;
    bundle.persistentByIndex[i] = bundle.persistent.back().get();
    byName[spec.name] = bundle.persistent.back().get();
  }
  for (auto &function : bundle.functions) {
    for (const BufferSpec &spec : function->spec.buffers) {
      if (spec.role == PD_ROLE_WEIGHT) {
        function->buffers.push_back(bundle.weights[spec.weightIndex].get());
        continue;
      }
      if (spec.role == PD_ROLE_GRAD || spec.role == PD_ROLE_STATE) {
        function->buffers.push_back(
            bundle.persistentByIndex[spec.persistentIndex]);
        continue;
      }
      std::string what = std::string(pd_role_name(spec.role)) + " '" +
                         spec.name + "' of function '" + function->spec.name +
                         "'";
      // NOTE: on a rank bundle the pipeline passes registers for value
      // buffers, so they get memory only if someone uses them directly.
      // An in-place output never has any (ensureMemory gives the target's).
      function->owned.push_back(makeBuffer(spec.name, spec.role, spec.type,
                                           std::move(what),
                                           bundle.rank < 0 && !spec.inPlace));
      pd_buffer *buffer = function->owned.back().get();
      function->buffers.push_back(buffer);
      if (!spec.updates.empty()) {
        // NOTE: parseManifest checked that the target exists with the
        // same type, so the swapped allocations have the same size.
        buffer->updates = spec.updates;
        function->updates.emplace_back(buffer, byName.at(spec.updates));
        if (spec.inPlace)
          buffer->inPlaceOf = byName.at(spec.updates);
      }
    }
    function->arguments.resize(function->buffers.size());
  }
}

/// Calls `function` on its buffers, then applies its `updates`
/// (pipedream::runtime::invokeFunction; device pointers for cuda bundles).
void runFunction(pd_function &function) {
  // cuda: the index inputs' host values, before they are uploaded (the
  // host copy is the value after pd_buffer_write; one already on the
  // device only, a previous call's output, is not checked).
  for (auto &[i, check] : function.hostIndexChecks) {
    const pd_buffer &buffer = *function.buffers[i];
    if (!buffer.hostCurrent || !buffer.memory)
      continue;
    pipedream::runtime::BadIndex bad = pipedream::runtime::findBadIndex(
        *check, buffer.type.dtype, buffer.memory.get(),
        buffer.type.numElements, 1, 0, 1);
    if (bad.found)
      throw Error(PD_ERROR_CHECK_FAILED, bad.message);
  }
  for (size_t i = 0; i < function.buffers.size(); ++i) {
    pd_buffer *buffer = function.buffers[i];
    if (buffer->role == PD_ROLE_INPUT && !buffer->written)
      throw Error(PD_ERROR_INVALID_ARGUMENT,
                  "function '" + function.spec.name + "': input '" +
                      buffer->name +
                      "' was never written (pd_buffer_write or "
                      "pd_buffer_data)");
    function.arguments[i] = function.cuda
                                ? pipedream::runtime::boundArgument(*buffer)
                                : ensureMemory(*buffer);
  }
  pipedream::runtime::invokeFunction(function, function.arguments.data());
  std::string failure = pipedream::runtime::takeCheckFailure(function);
  if (!failure.empty())
    throw Error(PD_ERROR_CHECK_FAILED, failure);
}

/// The buffer's host memory for reading: a cuda buffer's device-newer
/// value is downloaded, and the device copy stays current.
unsigned char *readMemory(const pd_buffer &constBuffer) {
  pd_buffer &buffer = const_cast<pd_buffer &>(constBuffer);
  if (!buffer.cuda || !buffer.memory)
    return ensureMemory(buffer);
  pipedream::runtime::downloadBuffer(buffer);
  return buffer.memory.get();
}

/// Checks dtype, shape and byte count given by a caller against `buffer`.
pd_status checkType(const pd_buffer *buffer, pd_dtype dtype, size_t rank,
                    const int64_t *shape, size_t numBytes,
                    const char *caller) {
  if (!buffer)
    return nullArgument(caller, "buffer");
  if (rank != 0 && !shape)
    return nullArgument(caller, "shape");
  if (pd_dtype_size(dtype) == 0)
    return fail(PD_ERROR_INVALID_ARGUMENT,
                std::string(caller) + ": unknown dtype value " +
                    std::to_string(static_cast<int>(dtype)));
  const TensorType &type = buffer->type;
  bool same = dtype == type.dtype && rank == type.shape.size();
  for (size_t i = 0; same && i < rank; ++i)
    same = shape[i] == type.shape[i];
  if (!same)
    return fail(PD_ERROR_MISMATCH,
                buffer->what + " is " +
                    describeType(type.dtype, type.shape.data(),
                                 type.shape.size()) +
                    ", got " + describeType(dtype, shape, rank));
  if (numBytes != type.numBytes)
    return fail(PD_ERROR_MISMATCH, buffer->what + " is " +
                                       std::to_string(type.numBytes) +
                                       " bytes, got " +
                                       std::to_string(numBytes));
  return PD_OK;
}

} // namespace

//===----------------------------------------------------------------------===//
// Errors and enums
//===----------------------------------------------------------------------===//

const char *pd_last_error(void) { return lastError.c_str(); }

void pd_clear_error(void) { lastError.clear(); }

const char *pd_status_string(pd_status status) {
  switch (status) {
  case PD_OK:
    return "ok";
  case PD_ERROR_INVALID_ARGUMENT:
    return "invalid argument";
  case PD_ERROR_NOT_FOUND:
    return "not found";
  case PD_ERROR_IO:
    return "i/o error";
  case PD_ERROR_FORMAT:
    return "malformed file";
  case PD_ERROR_MISMATCH:
    return "type mismatch";
  case PD_ERROR_OUT_OF_MEMORY:
    return "out of memory";
  case PD_ERROR_LOAD:
    return "library load error";
  case PD_ERROR_UNSUPPORTED:
    return "unsupported";
  case PD_ERROR_INTERNAL:
    return "internal error";
  case PD_ERROR_TIMEOUT:
    return "timed out";
  case PD_ERROR_PEER:
    return "peer failed";
  case PD_ERROR_CHECK_FAILED:
    return "run-time check failed";
  case PD_STATUS_MAX_ENUM_:
    break;
  }
  return "unknown status";
}

const char *pd_dtype_name(pd_dtype dtype) {
  switch (dtype) {
  case PD_DTYPE_F32:
    return "f32";
  case PD_DTYPE_F64:
    return "f64";
  case PD_DTYPE_F16:
    return "f16";
  case PD_DTYPE_BF16:
    return "bf16";
  case PD_DTYPE_I64:
    return "i64";
  case PD_DTYPE_I32:
    return "i32";
  case PD_DTYPE_I8:
    return "i8";
  case PD_DTYPE_I1:
    return "i1";
  case PD_DTYPE_U8:
    return "u8";
  case PD_DTYPE_MAX_ENUM_:
    break;
  }
  return "?";
}

pd_status pd_dtype_from_name(const char *name, pd_dtype *out) {
  if (!name)
    return nullArgument("pd_dtype_from_name", "name");
  if (!out)
    return nullArgument("pd_dtype_from_name", "out");
  return guarded([&] {
    if (!pipedream::runtime::parseDtype(name, *out))
      return fail(PD_ERROR_INVALID_ARGUMENT,
                  std::string("unknown dtype '") + name + "' (expected one of " +
                      pipedream::runtime::dtypeNameList() + ")");
    return PD_OK;
  });
}

size_t pd_dtype_size(pd_dtype dtype) {
  switch (dtype) {
  case PD_DTYPE_F64:
  case PD_DTYPE_I64:
    return 8;
  case PD_DTYPE_F32:
  case PD_DTYPE_I32:
    return 4;
  case PD_DTYPE_F16:
  case PD_DTYPE_BF16:
    return 2;
  case PD_DTYPE_I8:
  case PD_DTYPE_I1:
  case PD_DTYPE_U8:
    return 1;
  case PD_DTYPE_MAX_ENUM_:
    break;
  }
  return 0;
}

const char *pd_role_name(pd_role role) {
  switch (role) {
  case PD_ROLE_INPUT:
    return "input";
  case PD_ROLE_OUTPUT:
    return "output";
  case PD_ROLE_WEIGHT:
    return "weight";
  case PD_ROLE_GRAD:
    return "grad";
  case PD_ROLE_STATE:
    return "state";
  case PD_ROLE_MAX_ENUM_:
    break;
  }
  return "?";
}

int pd_runtime_api_version(void) { return PD_RUNTIME_API_VERSION; }

pd_status pd_set_last_error(pd_status status, const char *message) {
  return fail(status, message ? message : "");
}

//===----------------------------------------------------------------------===//
// Bundles
//===----------------------------------------------------------------------===//

namespace {
/// Marks every buffer and function of a cuda bundle.
void markCuda(pd_bundle &bundle) {
  for (auto &weight : bundle.weights)
    weight->cuda = true;
  for (auto &buffer : bundle.persistent)
    buffer->cuda = true;
  for (auto &function : bundle.functions) {
    function->cuda = true;
    for (auto &buffer : function->owned)
      buffer->cuda = true;
    // The device code cannot report an index out of range: the data
    // inputs that are indices are checked on the host (runFunction).
    for (const auto &check : bundle.manifest.dataIndexChecks)
      for (size_t i = 0; i < function->buffers.size(); ++i)
        if (function->buffers[i]->role == PD_ROLE_INPUT &&
            function->buffers[i]->name == check.input)
          function->hostIndexChecks.emplace_back(i, &check);
  }
}

pd_status openBundle(const char *dir, int64_t rank, pd_bundle **out) {
  return guarded([&] {
    auto bundle = std::make_unique<pd_bundle>();
    bundle->rank = rank;
    bundle->dir = dir;
    if (bundle->dir.empty())
      return fail(PD_ERROR_INVALID_ARGUMENT,
                  "pd_bundle_open: the bundle directory is empty");
    struct stat st;
    if (stat(dir, &st) != 0)
      return fail(PD_ERROR_IO, bundle->dir +
                                   ": cannot open the bundle directory: " +
                                   errnoText(errno));
    if (!S_ISDIR(st.st_mode))
      return fail(PD_ERROR_IO, bundle->dir + ": not a bundle directory");
    std::string manifestPath = joinPath(bundle->dir, "bundle.json");
    bundle->manifest = pipedream::runtime::parseManifest(
        readFile(manifestPath, "the bundle manifest"), manifestPath);
    if (rank >= 0) {
      const Manifest &m = bundle->manifest;
      if (!m.hasPipeline)
        return fail(PD_ERROR_UNSUPPORTED,
                    bundle->dir +
                        ": not a pipeline bundle (bundle.json has no "
                        "'pipeline' section; pipedream-compile writes one "
                        "with --stages K), so it has no rank " +
                        std::to_string(rank));
      if (static_cast<size_t>(rank) >= m.pipeline.worldRanks())
        return fail(PD_ERROR_INVALID_ARGUMENT,
                    bundle->dir + ": rank " + std::to_string(rank) +
                        " does not exist: the pipeline has " +
                        std::to_string(m.pipeline.worldRanks()) + " ranks");
    }
    // A cuda bundle needs a device (and the support library loaded
    // RTLD_GLOBAL before program.so, which resolves its mgpu* calls there).
    bool cuda = bundle->manifest.target == "cuda";
    if (cuda)
      pipedream::runtime::requireCudaDevice("bundle " + bundle->dir +
                                            " targets cuda");
    // Cheap checks (weights file bounds) fail before dlopen runs any
    // constructor of program.so.
    loadWeights(*bundle);
    loadLibrary(*bundle);
    if (cuda)
      pipedream::runtime::checkGpuError(
          joinPath(bundle->dir, bundle->manifest.library) +
          ": loading the bundle's GPU kernels: ");
    allocateBuffers(*bundle);
    if (cuda)
      markCuda(*bundle);
    *out = bundle.release();
    return PD_OK;
  });
}

} // namespace

pd_status pd_bundle_open(const char *dir, pd_bundle **out) {
  if (!out)
    return nullArgument("pd_bundle_open", "out");
  *out = nullptr;
  if (!dir)
    return nullArgument("pd_bundle_open", "dir");
  return openBundle(dir, -1, out);
}

pd_status pd_bundle_open_rank(const char *dir, size_t rank, pd_bundle **out) {
  if (!out)
    return nullArgument("pd_bundle_open_rank", "out");
  *out = nullptr;
  if (!dir)
    return nullArgument("pd_bundle_open_rank", "dir");
  if (rank > static_cast<size_t>(INT32_MAX))
    return fail(PD_ERROR_INVALID_ARGUMENT,
                "pd_bundle_open_rank: rank " + std::to_string(rank) +
                    " is out of range");
  return openBundle(dir, static_cast<int64_t>(rank), out);
}

int64_t pd_bundle_rank(const pd_bundle *bundle) {
  return bundle ? bundle->rank : -1;
}

void pd_bundle_close(pd_bundle *bundle) { delete bundle; }

const char *pd_bundle_dir(const pd_bundle *bundle) {
  return bundle ? bundle->dir.c_str() : "";
}

const char *pd_bundle_model(const pd_bundle *bundle) {
  return bundle ? bundle->manifest.model.c_str() : "";
}

size_t pd_bundle_function_count(const pd_bundle *bundle) {
  return bundle ? bundle->functions.size() : 0;
}

pd_function *pd_bundle_function_at(pd_bundle *bundle, size_t index) {
  if (!bundle || index >= bundle->functions.size())
    return nullptr;
  return bundle->functions[index].get();
}

pd_status pd_function_lookup(pd_bundle *bundle, const char *name,
                             pd_function **out) {
  if (!out)
    return nullArgument("pd_function_lookup", "out");
  *out = nullptr;
  if (!bundle)
    return nullArgument("pd_function_lookup", "bundle");
  if (!name)
    return nullArgument("pd_function_lookup", "name");
  return guarded([&] {
    std::string names;
    for (auto &function : bundle->functions) {
      if (function->spec.name == name) {
        *out = function.get();
        return PD_OK;
      }
      names += (names.empty() ? "" : ", ") + function->spec.name;
    }
    return fail(PD_ERROR_NOT_FOUND, bundle->dir + ": no function '" + name +
                                        "' (functions: " + names + ")");
  });
}

size_t pd_bundle_weight_count(const pd_bundle *bundle) {
  return bundle ? bundle->weights.size() : 0;
}

pd_buffer *pd_bundle_weight_at(pd_bundle *bundle, size_t index) {
  if (!bundle || index >= bundle->weights.size())
    return nullptr;
  return bundle->weights[index].get();
}

pd_status pd_bundle_find_weight(pd_bundle *bundle, const char *name,
                                pd_buffer **out) {
  if (!out)
    return nullArgument("pd_bundle_find_weight", "out");
  *out = nullptr;
  if (!bundle)
    return nullArgument("pd_bundle_find_weight", "bundle");
  if (!name)
    return nullArgument("pd_bundle_find_weight", "name");
  return guarded([&] {
    for (auto &weight : bundle->weights)
      if (weight->name == name) {
        *out = weight.get();
        return PD_OK;
      }
    return fail(PD_ERROR_NOT_FOUND,
                bundle->dir + ": no weight '" + name + "'");
  });
}

//===----------------------------------------------------------------------===//
// Functions
//===----------------------------------------------------------------------===//

const char *pd_function_name(const pd_function *function) {
  return function ? function->spec.name.c_str() : "";
}

const char *pd_function_symbol(const pd_function *function) {
  return function ? function->spec.symbol.c_str() : "";
}

const char *pd_function_kind(const pd_function *function) {
  return function ? function->spec.kind.c_str() : "";
}

size_t pd_function_buffer_count(const pd_function *function) {
  return function ? function->buffers.size() : 0;
}

pd_buffer *pd_function_buffer_at(pd_function *function, size_t index) {
  if (!function || index >= function->buffers.size())
    return nullptr;
  return function->buffers[index];
}

pd_status pd_function_find_buffer(pd_function *function, const char *name,
                                  pd_buffer **out) {
  if (!out)
    return nullArgument("pd_function_find_buffer", "out");
  *out = nullptr;
  if (!function)
    return nullArgument("pd_function_find_buffer", "function");
  if (!name)
    return nullArgument("pd_function_find_buffer", "name");
  return guarded([&] {
    std::string names;
    for (pd_buffer *buffer : function->buffers) {
      if (buffer->name == name) {
        *out = buffer;
        return PD_OK;
      }
      names += (names.empty() ? "" : ", ") + buffer->name;
    }
    return fail(PD_ERROR_NOT_FOUND, "function '" + function->spec.name +
                                        "' has no buffer '" + name +
                                        "' (buffers: " + names + ")");
  });
}

pd_status pd_function_run(pd_function *function) {
  if (!function)
    return nullArgument("pd_function_run", "function");
  return guarded([&] {
    runFunction(*function);
    return PD_OK;
  });
}

//===----------------------------------------------------------------------===//
// Buffers
//===----------------------------------------------------------------------===//

const char *pd_buffer_name(const pd_buffer *buffer) {
  return buffer ? buffer->name.c_str() : "";
}

pd_role pd_buffer_role(const pd_buffer *buffer) {
  return buffer ? buffer->role : PD_ROLE_INPUT;
}

pd_dtype pd_buffer_dtype(const pd_buffer *buffer) {
  return buffer ? buffer->type.dtype : PD_DTYPE_F32;
}

size_t pd_buffer_rank(const pd_buffer *buffer) {
  return buffer ? buffer->type.shape.size() : 0;
}

const int64_t *pd_buffer_shape(const pd_buffer *buffer) {
  return buffer ? buffer->type.shape.data() : nullptr;
}

size_t pd_buffer_num_elements(const pd_buffer *buffer) {
  return buffer ? buffer->type.numElements : 0;
}

size_t pd_buffer_num_bytes(const pd_buffer *buffer) {
  return buffer ? buffer->type.numBytes : 0;
}

const char *pd_buffer_updates(const pd_buffer *buffer) {
  return buffer ? buffer->updates.c_str() : "";
}

void *pd_buffer_data(pd_buffer *buffer) {
  if (!buffer)
    return nullptr;
  unsigned char *memory = nullptr;
  if (guarded([&] {
        memory = ensureMemory(*buffer);
        return PD_OK;
      }) != PD_OK)
    return nullptr;
  buffer->written = true;
  return memory;
}

const void *pd_buffer_const_data(const pd_buffer *buffer) {
  if (!buffer || (!buffer->memory && !buffer->onRank))
    return nullptr;
  // A value buffer of a rank bundle gets its (zeroed) memory on first use.
  unsigned char *memory = nullptr;
  if (guarded([&] {
        memory = readMemory(*buffer);
        return PD_OK;
      }) != PD_OK)
    return nullptr;
  return memory;
}

pd_status pd_buffer_write(pd_buffer *buffer, pd_dtype dtype, size_t rank,
                          const int64_t *shape, const void *data,
                          size_t num_bytes) {
  return guarded([&] {
    pd_status status =
        checkType(buffer, dtype, rank, shape, num_bytes, "pd_buffer_write");
    if (status != PD_OK)
      return status;
    if (num_bytes != 0 && !data)
      return nullArgument("pd_buffer_write", "data");
    if (num_bytes != 0)
      std::memcpy(ensureMemory(*buffer), data, num_bytes);
    buffer->written = true;
    return PD_OK;
  });
}

pd_status pd_buffer_read(const pd_buffer *buffer, pd_dtype dtype, size_t rank,
                         const int64_t *shape, void *data, size_t num_bytes) {
  return guarded([&] {
    pd_status status =
        checkType(buffer, dtype, rank, shape, num_bytes, "pd_buffer_read");
    if (status != PD_OK)
      return status;
    if (num_bytes != 0 && !data)
      return nullArgument("pd_buffer_read", "data");
    if (num_bytes != 0)
      std::memcpy(data, readMemory(*buffer), num_bytes);
    return PD_OK;
  });
}

//===----------------------------------------------------------------------===//
// Persistent buffers and training information
//===----------------------------------------------------------------------===//

size_t pd_bundle_persistent_count(const pd_bundle *bundle) {
  return bundle ? bundle->weights.size() + bundle->persistent.size() : 0;
}

pd_buffer *pd_bundle_persistent_at(pd_bundle *bundle, size_t index) {
  if (!bundle)
    return nullptr;
  if (index < bundle->weights.size())
    return bundle->weights[index].get();
  index -= bundle->weights.size();
  if (index < bundle->persistent.size())
    return bundle->persistent[index].get();
  return nullptr;
}

pd_status pd_bundle_find_persistent(pd_bundle *bundle, const char *name,
                                    pd_buffer **out) {
  if (!out)
    return nullArgument("pd_bundle_find_persistent", "out");
  *out = nullptr;
  if (!bundle)
    return nullArgument("pd_bundle_find_persistent", "bundle");
  if (!name)
    return nullArgument("pd_bundle_find_persistent", "name");
  return guarded([&] {
    for (size_t i = 0; i < pd_bundle_persistent_count(bundle); ++i) {
      pd_buffer *buffer = pd_bundle_persistent_at(bundle, i);
      if (buffer->name == name) {
        *out = buffer;
        return PD_OK;
      }
    }
    return fail(PD_ERROR_NOT_FOUND, bundle->dir +
                                        ": no weight, grad or state buffer '" +
                                        name + "'");
  });
}

namespace {
const TrainingSpec *training(const pd_bundle *bundle) {
  return bundle && bundle->manifest.hasTraining ? &bundle->manifest.training
                                                : nullptr;
}
} // namespace

int pd_bundle_is_training(const pd_bundle *bundle) {
  return training(bundle) ? 1 : 0;
}

const char *pd_bundle_training_loss(const pd_bundle *bundle) {
  return training(bundle) ? training(bundle)->loss.c_str() : "";
}

const char *pd_bundle_training_labels(const pd_bundle *bundle) {
  return training(bundle) ? training(bundle)->labels.c_str() : "";
}

int64_t pd_bundle_training_num_classes(const pd_bundle *bundle) {
  return training(bundle) ? training(bundle)->numClasses : 0;
}

size_t pd_bundle_training_microbatches(const pd_bundle *bundle) {
  return training(bundle) ? training(bundle)->microbatches : 0;
}

size_t pd_bundle_training_microbatch_size(const pd_bundle *bundle) {
  return training(bundle) ? training(bundle)->microbatchSize : 0;
}

size_t pd_bundle_training_batch_size(const pd_bundle *bundle) {
  return training(bundle) ? training(bundle)->batchSize : 0;
}

size_t pd_bundle_training_input_count(const pd_bundle *bundle) {
  return training(bundle) ? training(bundle)->inputs.size() : 0;
}

const char *pd_bundle_training_input_at(const pd_bundle *bundle, size_t index) {
  const TrainingSpec *t = training(bundle);
  if (!t || index >= t->inputs.size())
    return nullptr;
  return t->inputs[index].c_str();
}

const char *pd_bundle_training_optimizer(const pd_bundle *bundle) {
  return training(bundle) ? training(bundle)->optimizer.c_str() : "";
}

pd_function *pd_bundle_training_step_function(pd_bundle *bundle) {
  const TrainingSpec *t = training(bundle);
  return t ? bundle->functionByIndex[t->stepFunctionIndex] : nullptr;
}

pd_function *pd_bundle_training_update_function(pd_bundle *bundle) {
  const TrainingSpec *t = training(bundle);
  return t ? bundle->functionByIndex[t->updateFunctionIndex] : nullptr;
}

//===----------------------------------------------------------------------===//
// Training
//===----------------------------------------------------------------------===//

namespace {

/// Bytes of one sample of a step function data buffer.
size_t rowBytes(const pd_trainer &trainer, const pd_buffer &buffer) {
  return buffer.type.numBytes /
         trainer.bundle->manifest.training.microbatchSize;
}

/// Finds and checks the array of every data buffer of the trainer (in
/// trainer.data order); sets numSamples. Throws Error.
std::vector<const pd_named_array *> matchData(const pd_trainer &trainer,
                                              const pd_named_array *arrays,
                                              size_t count,
                                              size_t &numSamples) {
  std::vector<pipedream::runtime::DataRead> reads;
  for (pd_buffer *buffer : trainer.data)
    reads.push_back({&buffer->name, &buffer->type, buffer == trainer.labels,
                     rowBytes(trainer, *buffer)});
  return pipedream::runtime::matchDataArrays(
      reads, "step function '" + trainer.step->spec.name + "' takes", arrays,
      count, numSamples);
}

/// Cross-entropy: checks that the labels of `rows` rows starting at
/// `firstRow` (modulo numSamples) are class indices in [0, num_classes).
void checkLabels(const pd_trainer &trainer, const pd_named_array &labels,
                 size_t numSamples, size_t firstRow, size_t rows) {
  const TrainingSpec &spec = trainer.bundle->manifest.training;
  if (spec.loss != "cross-entropy" || !trainer.labels)
    return;
  const pd_buffer &buffer = *trainer.labels;
  size_t perRow = rowBytes(trainer, buffer) / pd_dtype_size(buffer.type.dtype);
  pipedream::runtime::checkLabelRange(buffer.name, buffer.type.dtype, perRow,
                                      spec.numClasses, labels, numSamples,
                                      firstRow, rows);
}

/// Reads the step function's loss output (one f32 or f64 element).
double readLoss(const pd_buffer &loss) {
  if (loss.type.dtype == PD_DTYPE_F64) {
    double value;
    std::memcpy(&value, loss.memory.get(), sizeof(value));
    return value;
  }
  float value;
  std::memcpy(&value, loss.memory.get(), sizeof(value));
  return value;
}

pd_buffer *functionBuffer(pd_function &function, const std::string &name) {
  for (pd_buffer *buffer : function.buffers)
    if (buffer->name == name)
      return buffer;
  throw Error(PD_ERROR_INTERNAL, "internal error: function '" +
                                     function.spec.name + "' has no buffer '" +
                                     name + "'");
}

} // namespace

pd_status pd_trainer_create(pd_bundle *bundle, pd_trainer **out) {
  if (!out)
    return nullArgument("pd_trainer_create", "out");
  *out = nullptr;
  if (!bundle)
    return nullArgument("pd_trainer_create", "bundle");
  return guarded([&] {
    const TrainingSpec *spec = training(bundle);
    if (!spec)
      return fail(PD_ERROR_UNSUPPORTED,
                  bundle->dir +
                      ": not a training bundle (bundle.json has no "
                      "'training' section; pipedream-compile writes one "
                      "unless --inference is given)");
    if (bundle->rank >= 0)
      return fail(PD_ERROR_UNSUPPORTED,
                  bundle->dir + ": opened for pipeline rank " +
                      std::to_string(bundle->rank) +
                      " (pd_bundle_open_rank); single-rank training needs "
                      "the whole bundle (pd_bundle_open)");
    auto trainer = std::make_unique<pd_trainer>();
    trainer->bundle = bundle;
    trainer->step = bundle->functionByIndex[spec->stepFunctionIndex];
    trainer->update = bundle->functionByIndex[spec->updateFunctionIndex];
    for (const std::string &name : spec->inputs)
      trainer->data.push_back(functionBuffer(*trainer->step, name));
    // Loss "none": no labels (the model computes its own loss).
    if (!spec->labels.empty()) {
      trainer->labels = functionBuffer(*trainer->step, spec->labels);
      trainer->data.push_back(trainer->labels);
    }
    trainer->loss = functionBuffer(*trainer->step, spec->lossOutput);
    for (auto &buffer : bundle->persistent)
      if (buffer->role == PD_ROLE_GRAD)
        trainer->grads.push_back(buffer.get());
    for (auto &[output, target] : trainer->step->updates)
      if (target->role != PD_ROLE_GRAD)
        trainer->stepSnapshot.add(target);
    bundle->trainers.push_back(std::move(trainer));
    *out = bundle->trainers.back().get();
    return PD_OK;
  });
}

void pd_trainer_destroy(pd_trainer *trainer) {
  if (!trainer)
    return;
  auto &trainers = trainer->bundle->trainers;
  for (auto it = trainers.begin(); it != trainers.end(); ++it)
    if (it->get() == trainer) {
      trainers.erase(it);
      return;
    }
}

pd_status pd_trainer_set_check_finite(pd_trainer *trainer, int enabled) {
  if (!trainer)
    return nullArgument("pd_trainer_set_check_finite", "trainer");
  trainer->checkFinite = enabled != 0;
  return PD_OK;
}

size_t pd_trainer_batch_size(const pd_trainer *trainer) {
  return trainer ? trainer->bundle->manifest.training.batchSize : 0;
}

pd_status pd_trainer_check_data(pd_trainer *trainer,
                                const pd_named_array *arrays, size_t count,
                                size_t *num_samples) {
  if (num_samples)
    *num_samples = 0;
  if (!trainer)
    return nullArgument("pd_trainer_check_data", "trainer");
  return guarded([&] {
    size_t samples = 0;
    std::vector<const pd_named_array *> matched =
        matchData(*trainer, arrays, count, samples);
    if (trainer->labels)
      checkLabels(*trainer, *matched.back(), samples, 0, samples);
    if (num_samples)
      *num_samples = samples;
    return PD_OK;
  });
}

pd_status pd_trainer_step(pd_trainer *trainer, const pd_named_array *arrays,
                          size_t count, uint64_t first_sample, double *loss) {
  if (loss)
    *loss = 0;
  if (!trainer)
    return nullArgument("pd_trainer_step", "trainer");
  return guarded([&] {
    const TrainingSpec &spec = trainer->bundle->manifest.training;
    size_t samples = 0;
    std::vector<const pd_named_array *> matched =
        matchData(*trainer, arrays, count, samples);
    size_t first = static_cast<size_t>(first_sample % samples);
    // The labels are the last data buffer.
    if (trainer->labels)
      checkLabels(*trainer, *matched.back(), samples, first, spec.batchSize);

    pipedream::runtime::TraceLog &trace = trainer->trace;
    using pipedream::runtime::traceNow;
    const double stepStart = trace.enabled ? traceNow() : 0;
    for (pd_buffer *grad : trainer->grads)
      pipedream::runtime::zeroBuffer(*grad);
    trainer->stepSnapshot.save();
    // The micro-batches' GEMMs pack the weights once (released before the
    // update, or by an exception).
    pipedream::runtime::ConstantWeights constants(*trainer->bundle,
                                                  {trainer->step});
    // A failed check: the step's persistent changes are undone, the update
    // does not run.
    auto failStep = [&](const std::string &message) {
      trainer->stepSnapshot.restore();
      throw Error(PD_ERROR_CHECK_FAILED, message);
    };
    double total = 0;
    size_t b = spec.microbatchSize;
    const int64_t noValue = -1;
    for (size_t i = 0; i < spec.microbatches; ++i) {
      const double inputStart = trace.enabled ? traceNow() : 0;
      const int64_t m = static_cast<int64_t>(i);
      size_t start = (first + i * b) % samples;
      for (size_t k = 0; k < trainer->data.size(); ++k) {
        pd_buffer &buffer = *trainer->data[k];
        size_t bytes = rowBytes(*trainer, buffer);
        const unsigned char *source =
            static_cast<const unsigned char *>(matched[k]->data);
        unsigned char *target = ensureMemory(buffer);
        // Contiguous runs of rows, wrapping around the end of the data.
        for (size_t done = 0; done < b && bytes != 0;) {
          size_t row = (start + done) % samples;
          size_t run = std::min(b - done, samples - row);
          std::memcpy(target + done * bytes, source + row * bytes, run * bytes);
          done += run;
        }
        buffer.written = true;
      }
      double callStart = 0;
      if (trace.enabled) {
        trace.add("input", "", "", noValue, m, noValue, noValue, inputStart);
        callStart = traceNow();
      }
      try {
        runFunction(*trainer->step);
      } catch (const Error &e) {
        if (e.status != PD_ERROR_CHECK_FAILED)
          throw;
        failStep("micro-batch " + std::to_string(i) + ": " + e.what());
      }
      if (trace.enabled)
        trace.add("call", trainer->step->spec.name.c_str(), "FB", 0, m,
                  noValue, noValue, callStart);
      readMemory(*trainer->loss);
      double value = readLoss(*trainer->loss);
      if (trainer->checkFinite && !std::isfinite(value))
        failStep("micro-batch " + std::to_string(i) + ": the loss is " +
                 (std::isnan(value) ? "nan" : value > 0 ? "inf" : "-inf") +
                 " (check-finite)");
      total += value;
    }
    if (trainer->checkFinite)
      for (pd_buffer *grad : trainer->grads) {
        readMemory(*grad);
        std::string bad = pipedream::runtime::describeNonFinite(*grad);
        if (!bad.empty())
          failStep("gradient '" + grad->name + "' is not finite (" + bad +
                   ", check-finite)");
      }
    const double updateStart = trace.enabled ? traceNow() : 0;
    constants.release();
    runFunction(*trainer->update);
    if (trace.enabled) {
      trace.add("call", trainer->update->spec.name.c_str(), "U", 0, noValue,
                noValue, noValue, updateStart);
      trace.add("step", "", "", noValue, noValue, noValue, noValue,
                stepStart);
    }
    ++trace.steps;
    if (loss)
      *loss = total / static_cast<double>(spec.microbatches);
    return PD_OK;
  });
}
