//===- Inference.cpp - pipedream-run --inputs -------------------------------===
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Inference: runs the inference function of a bundle written by
// pipedream-compile (docs/Bundle.md): the function called `main`, or the
// bundle's only function of kind `inference`. Inputs are matched by name
// with the arrays of IN.npz (dtype and shape checked); every output is
// written to OUT.npz (uncompressed, as np.savez does), or summarized on
// stdout without --outputs.
//
//===----------------------------------------------------------------------===//

#include "Inference.h"

#include "pipedream/npy.h"

#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace pipedream {
namespace tooling {

using pipedream::npy::Array;
using pipedream::npy::NamedArrays;

namespace {

/// The function to run: the inference function called `main`, else the
/// only function of kind `inference`.
pd_function *selectFunction(pd_bundle *bundle, std::string &message) {
  std::vector<pd_function *> inference;
  std::string names;
  for (size_t i = 0; i < pd_bundle_function_count(bundle); ++i) {
    pd_function *function = pd_bundle_function_at(bundle, i);
    names += std::string(names.empty() ? "" : ", ") +
             pd_function_name(function) + " (" + pd_function_kind(function) +
             ")";
    if (std::strcmp(pd_function_kind(function), "inference") != 0)
      continue;
    if (std::strcmp(pd_function_name(function), "main") == 0)
      return function;
    inference.push_back(function);
  }
  if (inference.size() == 1)
    return inference.front();
  message = std::string(pd_bundle_dir(bundle)) +
            (inference.empty()
                 ? (pd_bundle_is_training(bundle)
                        ? ": the bundle has no inference function (it is a "
                          "training bundle: train it with --data DATA.npz)"
                        : ": the bundle has no inference function")
                 : ": the bundle has several inference functions and none "
                   "is called 'main'") +
            "; functions: " + names;
  return nullptr;
}

std::string describeBuffer(const pd_buffer *buffer) {
  return pipedream::npy::describe(
      pd_buffer_dtype(buffer),
      std::vector<int64_t>(pd_buffer_shape(buffer),
                           pd_buffer_shape(buffer) + pd_buffer_rank(buffer)));
}

} // namespace

int runInference(const Options &options, pd_bundle *bundle) {
  std::string message;
  pd_function *function = selectFunction(bundle, message);
  if (!function)
    return error(message);
  std::string functionName = pd_function_name(function);

  std::vector<pd_buffer *> inputs, outputs;
  std::string inputNames;
  for (size_t i = 0; i < pd_function_buffer_count(function); ++i) {
    pd_buffer *buffer = pd_function_buffer_at(function, i);
    if (pd_buffer_role(buffer) == PD_ROLE_INPUT) {
      inputs.push_back(buffer);
      inputNames += std::string(inputNames.empty() ? "" : ", ") +
                    pd_buffer_name(buffer) + " " + describeBuffer(buffer);
    } else if (pd_buffer_role(buffer) == PD_ROLE_OUTPUT) {
      outputs.push_back(buffer);
    }
  }

  if (!inputs.empty() && options.inputs.empty())
    return error("function '" + functionName + "' has inputs (" + inputNames +
                 "): pass them with --inputs IN.npz");
  if (!options.inputs.empty()) {
    NamedArrays arrays;
    if (!pipedream::npy::readNpz(options.inputs, arrays, message))
      return error(message);
    std::map<std::string, const Array *> byName;
    std::string arrayNames;
    for (const auto &entry : arrays) {
      byName[entry.first] = &entry.second;
      arrayNames += (arrayNames.empty() ? "" : ", ") + entry.first;
    }
    for (pd_buffer *buffer : inputs) {
      std::string name = pd_buffer_name(buffer);
      auto it = byName.find(name);
      if (it == byName.end())
        return error(options.inputs + ": no array '" + name + "' for input '" +
                     name + "' of function '" + functionName +
                     "' (arrays: " +
                     (arrayNames.empty() ? "none" : arrayNames) + ")");
      const Array &array = *it->second;
      if (pd_buffer_write(buffer, array.dtype, array.shape.size(),
                          array.shape.data(), array.data.data(),
                          array.data.size()) != PD_OK)
        return error(options.inputs + ": array '" + name +
                     "': " + pd_last_error());
      byName.erase(it);
    }
    for (const auto &unused : byName)
      std::fprintf(stderr,
                   "warning: %s: array '%s' is not an input of function "
                   "'%s'; ignored\n",
                   options.inputs.c_str(), unused.first.c_str(),
                   functionName.c_str());
  }

  if (pd_function_run(function) != PD_OK)
    return error(pd_last_error());

  NamedArrays results;
  for (pd_buffer *buffer : outputs) {
    Array array;
    array.dtype = pd_buffer_dtype(buffer);
    array.shape.assign(pd_buffer_shape(buffer),
                       pd_buffer_shape(buffer) + pd_buffer_rank(buffer));
    const unsigned char *data =
        static_cast<const unsigned char *>(pd_buffer_const_data(buffer));
    array.data.assign(data, data + pd_buffer_num_bytes(buffer));
    results.emplace_back(pd_buffer_name(buffer), std::move(array));
  }
  if (options.outputs.empty()) {
    for (const auto &result : results)
      std::printf("%s: %s\n", result.first.c_str(),
                  pipedream::npy::describe(result.second.dtype,
                                           result.second.shape)
                      .c_str());
    return 0;
  }
  if (!pipedream::npy::writeNpz(options.outputs, results,
                                pipedream::npy::Compression::Stored, message))
    return error(message);
  return 0;
}

} // namespace tooling
} // namespace pipedream
