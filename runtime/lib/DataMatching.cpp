//===- DataMatching.cpp - training data against a bundle ------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Matching the caller's named arrays (pd_named_array) with what a trainer
// or pipeline rank reads: names, dtypes, trailing shapes, the number of
// samples, the label range.
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

} // namespace runtime
} // namespace pipedream
