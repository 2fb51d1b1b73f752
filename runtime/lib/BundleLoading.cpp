//===- BundleLoading.cpp - opening a bundle -------------------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// pd_bundle_open / pd_bundle_open_rank: bundle.json (Manifest.h), program.so,
// the buffers and their aligned memory, the weights (weights.bin or a rank's
// file).
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
#include "Trainer.h"

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
using pipedream::runtime::WeightSpec;

namespace {

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

pd_buffer::~pd_buffer() { pipedream::runtime::releaseDevice(*this); }

pd_bundle::~pd_bundle() {
  for (pd_rank *pipeline : pipelines)
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

} // namespace

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
