//===- pipedream-run.cpp - run a compiled bundle --------------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// `pipedream-run OUT_DIR --inputs IN.npz [--outputs OUT.npz]`
//
// Runs the inference function of a bundle written by pipedream-compile
// (docs/Bundle.md): the function called `main`, or the bundle's only
// function of kind `inference`. Inputs are matched by name with the arrays
// of IN.npz (dtype and shape checked); every output is written to OUT.npz
// (uncompressed, as np.savez does), or summarized on stdout without
// --outputs. Any error is one line `error: ...` on stderr and exit status 1.
//
// Uses only the runtime library (no MLIR/LLVM). Training flags of the CLI
// contract (--data, --steps, --ranks...) arrive with later issues and are
// rejected here rather than ignored.
//
//===----------------------------------------------------------------------===//

#include "pipedream/npy.h"
#include "pipedream/runtime.h"

#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace {

using pipedream::npy::Array;
using pipedream::npy::NamedArrays;

const char kUsage[] =
    "usage: pipedream-run OUT_DIR --inputs IN.npz [--outputs OUT.npz]\n"
    "\n"
    "Runs the inference function of the bundle in OUT_DIR (written by\n"
    "pipedream-compile): arrays of IN.npz are matched by name with the\n"
    "function's inputs (dtype and shape must match); its outputs are written\n"
    "to OUT.npz, or listed on stdout without --outputs.\n"
    "\n"
    "options:\n"
    "  --inputs IN.npz     input arrays, named after the model's inputs\n"
    "  --outputs OUT.npz   where to write the outputs (replaced if present)\n"
    "  -h, --help          this text\n";

/// Flags of the CLI contract (../shared/CLI.md) that later issues implement.
const char *const kLaterFlags[] = {
    "--data",     "--steps",          "--ranks",        "--save-onnx",
    "--loss-log", "--trace",          "--checkpoint-dir", "--checkpoint-every",
    "--resume",
};

struct Options {
  std::string bundleDir;
  std::string inputs;
  std::string outputs;
};

int error(const std::string &message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 1;
}

/// Parses argv; returns false with `message` set on a usage error. Sets
/// `help` for -h/--help.
bool parseArguments(int argc, char **argv, Options &options, bool &help,
                    std::string &message) {
  help = false;
  bool sawInputs = false, sawOutputs = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      help = true;
      return true;
    }
    if (arg.size() > 1 && arg[0] == '-') {
      std::string flag = arg, value;
      bool hasValue = false;
      size_t equals = arg.find('=');
      if (arg.rfind("--", 0) == 0 && equals != std::string::npos) {
        flag = arg.substr(0, equals);
        value = arg.substr(equals + 1);
        hasValue = true;
      }
      for (const char *later : kLaterFlags)
        if (flag == later) {
          message = flag +
                    " is not supported yet: this pipedream-run runs inference "
                    "bundles only (--inputs/--outputs); training arrives with "
                    "a later version";
          return false;
        }
      if (flag != "--inputs" && flag != "--outputs") {
        message = "unknown option '" + flag + "' (see pipedream-run --help)";
        return false;
      }
      if (!hasValue) {
        if (i + 1 >= argc) {
          message = flag + " needs a file name";
          return false;
        }
        value = argv[++i];
      }
      if (value.empty()) {
        message = flag + " needs a file name";
        return false;
      }
      bool &seen = flag == "--inputs" ? sawInputs : sawOutputs;
      if (seen) {
        message = flag + " given twice";
        return false;
      }
      seen = true;
      (flag == "--inputs" ? options.inputs : options.outputs) = value;
      continue;
    }
    if (!options.bundleDir.empty()) {
      message = "unexpected argument '" + arg +
                "' (one bundle directory, already given: '" +
                options.bundleDir + "')";
      return false;
    }
    options.bundleDir = arg;
  }
  if (options.bundleDir.empty()) {
    message = "no bundle directory given (usage: pipedream-run OUT_DIR "
              "--inputs IN.npz [--outputs OUT.npz])";
    return false;
  }
  return true;
}

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
                 ? ": the bundle has no inference function (training "
                   "bundles need --data, which is not supported yet)"
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

int run(const Options &options) {
  pd_bundle *bundle = nullptr;
  if (pd_bundle_open(options.bundleDir.c_str(), &bundle) != PD_OK)
    return error(pd_last_error());
  struct Closer {
    pd_bundle *bundle;
    ~Closer() { pd_bundle_close(bundle); }
  } closer{bundle};

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

} // namespace

int main(int argc, char **argv) {
  Options options;
  bool help = false;
  std::string message;
  if (!parseArguments(argc, argv, options, help, message))
    return error(message);
  if (help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  return run(options);
}
