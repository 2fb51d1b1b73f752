//===- Runtime.cpp - the C API: bundles, functions, buffers --------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Implements pipedream/runtime.h. Internally C++ with exceptions (Error);
// every C entry point catches everything and turns it into a pd_status and
// the thread's last-error message, so nothing escapes into C callers.
// This file: the accessors of bundles, functions and buffers and running a
// function; Status.cpp (errors, enums), BundleLoading.cpp (pd_bundle_open),
// DataMatching.cpp (training data), Trainer.cpp (pd_trainer).
//
//===----------------------------------------------------------------------===//

#include "pipedream/runtime.h"

#include "Bundle.h"
#include "Checkpoint.h"
#include "ConstantWeights.h"
#include "DataIndexChecks.h"
#include "GpuDevice.h"
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

using pipedream::runtime::describeType;
using pipedream::runtime::ensureMemory;
using pipedream::runtime::fail;
using pipedream::runtime::guarded;
using pipedream::runtime::nullArgument;
using pipedream::runtime::TensorType;
using pipedream::runtime::TrainingSpec;

namespace pipedream {
namespace runtime {

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
      (op.empty() ? std::string() : " (op " + op + ")") + ": ";
  if (!input.empty() && input[0] == '\x01') {
    // A data-dependent size (nn.check_size): [lower, lower + 1) is the size
    // the model declares and the bundle computes.
    text += "the input values give " + std::to_string(record->value) +
            " entries for output '" + input.substr(1) +
            "', but the model declares " + std::to_string(record->lower) +
            " (pipedream compiles the declared size of a data-dependent "
            "output)";
  } else {
    text += "index " + std::to_string(record->value) + " out of range [" +
            std::to_string(record->lower) + ", " +
            std::to_string(record->upper) + ")" +
            (input.empty() ? std::string() : " in input '" + input + "'");
  }
  *record = CheckRecord{};
  return text;
}

namespace {

/// "nan at element 3" (describeNonFinite's words).
std::string describeValue(double value, size_t index) {
  return std::string(std::isnan(value) ? "nan" : value > 0 ? "inf" : "-inf") +
         " at element " + std::to_string(index);
}

/// The first non-finite of `count` floats or doubles, described; "" when
/// all are finite.
template <typename T>
std::string firstNonFinite(const T *values, size_t count) {
  // NOTE: a branch-free scan first (vectorizes); the slow search only
  // when something is not finite.
  T sum = 0;
  for (size_t i = 0; i < count; ++i)
    sum += values[i] * T(0);
  if (sum == 0)
    return "";
  for (size_t i = 0; i < count; ++i)
    if (!std::isfinite(values[i]))
      return describeValue(values[i], i);
  return "";
}

} // namespace

std::string describeNonFinite(const pd_buffer &buffer) {
  const unsigned char *memory = buffer.memory.get();
  if (!memory)
    return "";
  size_t count = buffer.type.numBytes / std::max<size_t>(
                                            pd_dtype_size(buffer.type.dtype), 1);
  switch (buffer.type.dtype) {
  case PD_DTYPE_F32:
    return firstNonFinite(reinterpret_cast<const float *>(memory), count);
  case PD_DTYPE_F64:
    return firstNonFinite(reinterpret_cast<const double *>(memory), count);
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
        return describeValue(value, i);
      }
    }
    return "";
  }
  default:
    return "";
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


} // namespace runtime
} // namespace pipedream

using pipedream::runtime::readMemory;
using pipedream::runtime::runFunction;

namespace {

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
  // bf16 and u16 both travel as .npy `<u2` (runtime.h): the same bits.
  auto isU2 = [](pd_dtype d) {
    return d == PD_DTYPE_BF16 || d == PD_DTYPE_U16;
  };
  bool same = (dtype == type.dtype || (isU2(dtype) && isU2(type.dtype))) &&
              rank == type.shape.size();
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

namespace {

const std::string &itemName(const pd_function &function) {
  return function.spec.name;
}
const std::string &itemName(const pd_buffer &buffer) { return buffer.name; }

/// A lookup by name (pd_function_lookup, pd_*_find_*): checks the
/// arguments (`api` names the entry point, `ownerArgument` its first
/// argument), then sets `*out` to the first of the `count` items `at(i)`
/// named `name`; else fails with PD_ERROR_NOT_FOUND and `missing(names)`,
/// `names` the items' names, comma-separated.
template <typename Owner, typename Item, typename At, typename Missing>
pd_status findByName(const char *api, const char *ownerArgument,
                     Owner *owner, const char *name, Item **out,
                     size_t (*count)(const Owner *), At at, Missing missing) {
  if (!out)
    return nullArgument(api, "out");
  *out = nullptr;
  if (!owner)
    return nullArgument(api, ownerArgument);
  if (!name)
    return nullArgument(api, "name");
  return guarded([&] {
    std::string names;
    for (size_t i = 0; i < count(owner); ++i) {
      Item *item = at(i);
      if (itemName(*item) == name) {
        *out = item;
        return PD_OK;
      }
      names += (names.empty() ? "" : ", ") + itemName(*item);
    }
    return fail(PD_ERROR_NOT_FOUND, missing(names));
  });
}

} // namespace

pd_status pd_function_lookup(pd_bundle *bundle, const char *name,
                             pd_function **out) {
  return findByName(
      "pd_function_lookup", "bundle", bundle, name, out,
      pd_bundle_function_count,
      [&](size_t i) { return bundle->functions[i].get(); },
      [&](const std::string &names) {
        return bundle->dir + ": no function '" + name + "' (functions: " +
               names + ")";
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
  return findByName(
      "pd_bundle_find_weight", "bundle", bundle, name, out,
      pd_bundle_weight_count,
      [&](size_t i) { return bundle->weights[i].get(); },
      [&](const std::string &) {
        return bundle->dir + ": no weight '" + name + "'";
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
  return findByName(
      "pd_function_find_buffer", "function", function, name, out,
      pd_function_buffer_count,
      [&](size_t i) { return function->buffers[i]; },
      [&](const std::string &names) {
        return "function '" + function->spec.name + "' has no buffer '" +
               name + "' (buffers: " + names + ")";
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
  return findByName(
      "pd_bundle_find_persistent", "bundle", bundle, name, out,
      pd_bundle_persistent_count,
      [&](size_t i) { return pd_bundle_persistent_at(bundle, i); },
      [&](const std::string &) {
        return bundle->dir + ": no weight, grad or state buffer '" + name +
               "'";
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

