//===- PipedreamModule.cpp - pipedream._pipedream (pybind11) --------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The native half of the Python package (python/pipedream/__init__.py is the
// other): the compiler driver in-process (pipedream::compile, lib/Driver)
// and the runtime's pipeline C API (runtime/include/pipedream/runtime.h),
// every rank a thread of this process over the threads transport, as
// `pipedream-run --transport threads` runs them.
//
//   compile(options: dict) -> dict(error, has_ir, ir, report_json,
//                                  report_text)
//   PipelineTrainer(bundle_dir)   .train(arrays, steps) -> [loss, ...]
//                                 .weights() -> {name: ndarray}
//                                 .save_onnx(path)
//
// Errors: compile() returns its one-line message (the package raises
// CompileError); the trainer raises ValueError for bad data and
// RuntimeError for a failed rank.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Driver/Driver.h"
#include "pipedream/Pipelines/CommandLine.h"
#include "pipedream/Support/Diagnostics.h"
#include "pipedream/onnx_writer.h"
#include "pipedream/rank_threads.h"
#include "pipedream/runtime.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <mutex>
#include <string>
#include <vector>

namespace py = pybind11;

namespace {

//===----------------------------------------------------------------------===//
// Compiler
//===----------------------------------------------------------------------===//

/// The value of one keyword as flag text: Python's own spelling of
/// numbers (repr round-trips doubles), "true"/"false" for booleans.
std::string flagValue(py::handle v) {
  if (py::isinstance<py::bool_>(v))
    return v.cast<bool>() ? "true" : "false";
  if (py::isinstance<py::int_>(v) || py::isinstance<py::float_>(v))
    return py::repr(v).cast<std::string>();
  if (py::isinstance<py::str>(v))
    return v.cast<std::string>();
  if (py::isinstance<py::bytes>(v) || py::isinstance<py::sequence>(v))
    throw py::type_error("expected a number, a string or a boolean");
  return py::str(v).cast<std::string>();
}

/// The compile options of the keyword dictionary the package builds: each
/// key is a pipedream-compile flag with '_' for '-' (an absent key or None
/// is a flag not given), parsed by pipedream-compile's own flags
/// (pipedream/Pipelines/CommandLine.h), so names, types, defaults and
/// checks are the command line's. The Python spellings of the flags that
/// are not words: input (the model), output (-o), opt_level (-O),
/// input_shapes (--input-shape), onnx_checker=False (--no-onnx-checker).
mlir::FailureOr<pipedream::CompileOptions>
readOptions(mlir::MLIRContext *context, const py::dict &kw) {
  std::vector<std::string> args;
  std::optional<std::string> input;
  for (auto item : kw) {
    std::string key = item.first.cast<std::string>();
    py::handle v = item.second;
    if (v.is_none())
      continue;
    std::string flag = key;
    std::replace(flag.begin(), flag.end(), '_', '-');
    if (key == "input") {
      input = v.cast<std::string>();
      continue;
    }
    if (key == "onnx_checker") {
      if (!v.cast<bool>())
        args.push_back("--no-onnx-checker");
      continue;
    }
    if (key == "output")
      flag = "o";
    else if (key == "opt_level")
      flag = "O";
    else if (key == "input_shapes")
      flag = "input-shape";
    if (!pipedream::isCompileFlag(flag) || flag == "no-onnx-checker")
      throw py::type_error("compile: unknown option '" + key + "'");
    std::vector<py::handle> values;
    if (!py::isinstance<py::str>(v) && py::isinstance<py::sequence>(v))
      for (py::handle element : v.cast<py::sequence>())
        values.push_back(element);
    else
      values.push_back(v);
    for (py::handle element : values) {
      std::string value;
      try {
        value = flagValue(element);
      } catch (const py::type_error &e) {
        throw py::type_error("compile: option '" + key + "': " + e.what());
      }
      args.push_back((flag == "O" ? "-O" : "--" + flag + "=") + value);
    }
  }
  if (input) {
    args.push_back("--");
    args.push_back(*input);
  }
  return pipedream::parseCompileArguments(context, args);
}

py::dict compile(const py::dict &kw) {
  pipedream::CompileResult result;
  mlir::FailureOr<pipedream::CompileOptions> options;
  {
    // The keywords are parsed before the compile's own context exists.
    mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
    pipedream::FirstErrorHandler errors(&context);
    options = readOptions(&context, kw);
    if (mlir::failed(options))
      result.error = errors.orElse("invalid compile options");
  }
  if (mlir::failed(options)) {
    py::dict out;
    out["error"] = result.error;
    out["has_ir"] = false;
    out["ir"] = "";
    out["report_json"] = "";
    out["report_text"] = "";
    return out;
  }
  {
    py::gil_scoped_release release;
    result = pipedream::compile(*options);
  }
  py::dict out;
  out["error"] = result.error;
  out["has_ir"] = result.hasIR;
  // IR text may hold any bytes a name had; decode leniently.
  out["ir"] = py::reinterpret_steal<py::object>(PyUnicode_DecodeUTF8(
      result.ir.data(), static_cast<Py_ssize_t>(result.ir.size()),
      "replace"));
  out["report_json"] = result.reportJSON;
  out["report_text"] = result.reportText;
  return out;
}

//===----------------------------------------------------------------------===//
// Pipeline training
//===----------------------------------------------------------------------===//

std::optional<pd_dtype> dtypeOf(const py::dtype &dtype) {
  char kind = dtype.kind();
  size_t size = dtype.itemsize();
  if (kind == 'f' && size == 4)
    return PD_DTYPE_F32;
  if (kind == 'f' && size == 8)
    return PD_DTYPE_F64;
  if (kind == 'f' && size == 2)
    return PD_DTYPE_F16;
  if (kind == 'i' && size == 8)
    return PD_DTYPE_I64;
  if (kind == 'i' && size == 4)
    return PD_DTYPE_I32;
  if (kind == 'i' && size == 1)
    return PD_DTYPE_I8;
  if (kind == 'i' && size == 2)
    return PD_DTYPE_I16;
  if (kind == 'b' && size == 1)
    return PD_DTYPE_I1;
  if (kind == 'u' && size == 1)
    return PD_DTYPE_U8;
  if (kind == 'u' && size == 2)
    return PD_DTYPE_U16;
  if (kind == 'u' && size == 4)
    return PD_DTYPE_U32;
  if (kind == 'u' && size == 8)
    return PD_DTYPE_U64;
  return std::nullopt;
}

const char *numpyName(pd_dtype dtype) {
  switch (dtype) {
  case PD_DTYPE_F32:
    return "float32";
  case PD_DTYPE_F64:
    return "float64";
  case PD_DTYPE_F16:
    return "float16";
  case PD_DTYPE_I64:
    return "int64";
  case PD_DTYPE_I32:
    return "int32";
  case PD_DTYPE_I8:
    return "int8";
  case PD_DTYPE_I1:
    return "bool";
  case PD_DTYPE_U8:
    return "uint8";
  case PD_DTYPE_U16:
    return "uint16";
  case PD_DTYPE_U32:
    return "uint32";
  case PD_DTYPE_U64:
    return "uint64";
  case PD_DTYPE_I16:
    return "int16";
  case PD_DTYPE_BF16: // numpy has no bfloat16: the raw bits
    return "uint16";
  default:
    return nullptr;
  }
}

/// Every rank of a pipeline bundle, opened once and kept (weights and
/// optimizer state live on across train() calls), each run on its own
/// thread per call.
class PipelineTrainer {
public:
  explicit PipelineTrainer(const std::string &dir) : dir(dir) {
    pd_bundle *first = nullptr;
    if (pd_bundle_open_rank(dir.c_str(), 0, &first) != PD_OK)
      throw std::runtime_error(pd_last_error());
    bundles.push_back(first);
    size_t ranks = pd_bundle_pipeline_ranks(first);
    for (size_t r = 1; r < ranks; ++r) {
      pd_bundle *bundle = nullptr;
      if (pd_bundle_open_rank(dir.c_str(), r, &bundle) != PD_OK) {
        std::string message = pd_last_error();
        close();
        throw std::runtime_error(message);
      }
      bundles.push_back(bundle);
    }
    transports.resize(ranks);
    if (pd_transport_create_threads(ranks, transports.data()) != PD_OK) {
      std::string message = pd_last_error();
      transports.clear();
      close();
      throw std::runtime_error(message);
    }
    for (size_t r = 0; r < ranks; ++r) {
      pd_rank *pipeline = nullptr;
      if (pd_rank_create(bundles[r], r, transports[r], &pipeline) != PD_OK) {
        std::string message = pd_last_error();
        close();
        throw std::runtime_error(message);
      }
      pipelines.push_back(pipeline);
    }
  }
  ~PipelineTrainer() { close(); }
  PipelineTrainer(const PipelineTrainer &) = delete;
  PipelineTrainer &operator=(const PipelineTrainer &) = delete;

  size_t ranks() const { return bundles.size(); }
  size_t batchSize() const { return pd_rank_batch_size(pipelines[0]); }
  uint64_t steps() const { return stepsDone; }
  /// Gradient clipping: each step's gradient norm before clipping (NaN
  /// without clipping), over every train() call.
  const std::vector<double> &gradNorms() const { return norms; }
  std::vector<std::string> inputNames() const {
    std::vector<std::string> names;
    for (size_t i = 0; i < pd_bundle_pipeline_input_count(bundles[0]); ++i)
      names.push_back(pd_bundle_pipeline_input_at(bundles[0], i));
    return names;
  }
  std::string labelsName() const {
    return pd_bundle_pipeline_labels(bundles[0]);
  }

  /// `steps` optimizer steps; step s (counted over every call) on samples
  /// [s*B, (s+1)*B) modulo the data's length, as pipedream-run does.
  /// The arrays of `data` as the runtime's views (DataViews keeps
  /// contiguous copies, where needed, alive), checked against the pipeline
  /// (ValueError); `samples` is their number of samples.
  struct DataViews {
    std::vector<py::array> arrays;
    std::vector<std::string> names;
    std::vector<std::vector<int64_t>> shapes;
    std::vector<pd_named_array> views;
    size_t samples = 0;
  };
  void viewData(const py::dict &data, DataViews &d) {
    for (auto item : data) {
      d.names.push_back(item.first.cast<std::string>());
      py::array array = py::array::ensure(
          item.second, py::array::c_style | py::array::forcecast);
      if (!array)
        throw py::value_error("training data: '" + d.names.back() +
                              "' is not an array");
      d.arrays.push_back(array);
    }
    for (size_t i = 0; i < d.arrays.size(); ++i) {
      std::optional<pd_dtype> dtype = dtypeOf(d.arrays[i].dtype());
      if (!dtype)
        throw py::value_error("training data: '" + d.names[i] + "' has dtype " +
                              py::str(d.arrays[i].dtype()).cast<std::string>() +
                              ", which pipedream does not have");
      d.shapes.emplace_back(d.arrays[i].shape(),
                            d.arrays[i].shape() + d.arrays[i].ndim());
      d.views.push_back({d.names[i].c_str(), *dtype, d.shapes[i].size(),
                         d.shapes[i].data(), d.arrays[i].data(),
                         static_cast<size_t>(d.arrays[i].nbytes())});
    }
    if (pd_rank_check_data(pipelines[0], d.views.data(), d.views.size(),
                           &d.samples) != PD_OK)
      throw py::value_error(pd_last_error());
  }

  /// The mean eval-mode loss over every sample of `data` (pd_rank_evaluate
  /// on every rank), changing nothing.
  double evaluate(const py::dict &data) {
    usable();
    if (!pd_rank_can_evaluate(pipelines[0]))
      throw std::runtime_error(
          dir + ": the pipeline has no evaluation program: compile it with "
                "evaluate=True");
    DataViews d;
    viewData(data, d);
    size_t b = pd_bundle_pipeline_microbatch_size(bundles[0]);
    if (b == 0 || d.samples % b != 0)
      throw py::value_error("evaluation data: " + std::to_string(d.samples) +
                            " samples, not a multiple of the micro-batch "
                            "size " +
                            std::to_string(b) + " (every sample counts once)");
    double loss = std::nan("");
    std::vector<RankError> errors(ranks());
    {
      py::gil_scoped_release release;
      runRanks(errors, [&](size_t r) {
        double mine = 0;
        pd_status status = pd_rank_evaluate(pipelines[r], d.views.data(),
                                            d.views.size(), &mine);
        if (r == 0)
          loss = mine;
        return status;
      });
    }
    // An agreed failed check (every rank's) leaves the pipeline usable.
    raiseIfFailed(errors, /*agreedFailureKeepsUsable=*/true);
    return loss;
  }

  std::vector<double> train(const py::dict &data, uint64_t steps) {
    usable();
    DataViews d;
    viewData(data, d);
    std::vector<pd_named_array> &views = d.views;
    size_t samples = d.samples;
    size_t batch = batchSize();
    std::vector<double> losses(steps, std::nan("")),
        stepNorms(steps, std::nan(""));
    uint64_t start = stepsDone;
    std::vector<RankError> errors(ranks());
    {
      py::gil_scoped_release release;
      runRanks(errors, [&](size_t r) {
        for (uint64_t s = 0; s < steps; ++s) {
          uint64_t first = static_cast<uint64_t>(
              static_cast<unsigned __int128>(start + s) * batch % samples);
          double loss = 0;
          if (pd_status status = pd_rank_step(pipelines[r], views.data(),
                                              views.size(), first, &loss);
              status != PD_OK)
            return status;
          if (r == 0) {
            losses[s] = loss;
            stepNorms[s] = pd_rank_grad_norm(pipelines[r]);
          }
        }
        // Rank 0's bundle then holds every trained weight.
        return pd_rank_gather_weights(pipelines[r]);
      });
    }
    raiseIfFailed(errors);
    stepsDone += steps;
    norms.insert(norms.end(), stepNorms.begin(), stepNorms.end());
    return losses;
  }

  /// Every weight, as trained so far (copies).
  py::dict weights() {
    gather();
    py::dict out;
    for (size_t i = 0; i < pd_bundle_weight_count(bundles[0]); ++i) {
      pd_buffer *buffer = pd_bundle_weight_at(bundles[0], i);
      const char *dtype = numpyName(pd_buffer_dtype(buffer));
      const void *data = pd_buffer_const_data(buffer);
      if (!dtype || !data)
        continue;
      std::vector<py::ssize_t> shape(pd_buffer_shape(buffer),
                                     pd_buffer_shape(buffer) +
                                         pd_buffer_rank(buffer));
      py::array array{py::dtype(dtype), shape};
      std::memcpy(array.mutable_data(), data, pd_buffer_num_bytes(buffer));
      out[py::str(pd_buffer_name(buffer))] = array;
    }
    return out;
  }

  /// The bundle's model.onnx with the trained weights, to `path`.
  void saveOnnx(const std::string &path) {
    gather();
    pipedream::OnnxWriter writer;
    std::string message;
    if (!writer.load(bundles[0], message) || !writer.save(path, message))
      throw std::runtime_error(message);
  }

private:
  void usable() const {
    if (broken)
      throw std::runtime_error(
          "this trainer's pipeline failed earlier (" + brokenMessage +
          "); compile or open the bundle again");
  }

  struct RankError {
    pd_status status = PD_OK;
    std::string message;
  };

  /// Runs `body(rank) -> pd_status` on one thread per rank
  /// (pipedream/rank_threads.h, as pipedream-run runs them); a rank that
  /// fails aborts its transport so that the others stop waiting for it.
  template <typename Body>
  void runRanks(std::vector<RankError> &errors, Body body) {
    pipedream::runRanksOnThreads(transports, [&](size_t r) {
      pipedream::RankOutcome outcome;
      pd_status status = body(r);
      if (status != PD_OK) {
        errors[r] = {status, pd_last_error()};
        outcome.error = errors[r].message;
        // An empty message still aborts: the others must stop waiting.
        if (outcome.error.empty())
          outcome.error = pd_status_string(status);
        // A failed check every rank agreed on: nobody waits for this one,
        // and the transports stay usable.
        outcome.abort = status != PD_ERROR_CHECK_FAILED;
      }
      return outcome;
    });
  }

  /// Raises the root cause: the first rank that failed by itself (the
  /// others then fail with PD_ERROR_PEER or PD_ERROR_TIMEOUT naming it).
  void raiseIfFailed(const std::vector<RankError> &errors,
                     bool agreedFailureKeepsUsable = false) {
    const RankError *cause = nullptr;
    size_t rank = 0;
    for (size_t r = 0; r < errors.size(); ++r) {
      const RankError &e = errors[r];
      if (e.status == PD_OK)
        continue;
      bool secondary =
          e.status == PD_ERROR_PEER || e.status == PD_ERROR_TIMEOUT;
      if (!cause || (!secondary && (cause->status == PD_ERROR_PEER ||
                                    cause->status == PD_ERROR_TIMEOUT))) {
        cause = &e;
        rank = r;
      }
    }
    if (!cause)
      return;
    broken =
        !(agreedFailureKeepsUsable &&
          std::all_of(errors.begin(), errors.end(), [](const RankError &e) {
            return e.status == PD_ERROR_CHECK_FAILED;
          }));
    brokenMessage = cause->message;
    std::string prefix = "rank " + std::to_string(rank) + ": ";
    throw std::runtime_error(cause->message.rfind(prefix, 0) == 0
                                 ? cause->message
                                 : prefix + cause->message);
  }

  void gather() {
    usable();
    std::vector<RankError> errors(ranks());
    {
      py::gil_scoped_release release;
      runRanks(errors,
               [&](size_t r) { return pd_rank_gather_weights(pipelines[r]); });
    }
    raiseIfFailed(errors);
  }

  void close() {
    for (pd_rank *pipeline : pipelines)
      pd_rank_destroy(pipeline);
    pipelines.clear();
    for (pd_bundle *bundle : bundles)
      pd_bundle_close(bundle);
    bundles.clear();
    for (pd_transport *transport : transports)
      pd_transport_destroy(transport);
    transports.clear();
  }

  std::string dir;
  std::vector<pd_bundle *> bundles;
  std::vector<pd_transport *> transports;
  std::vector<pd_rank *> pipelines;
  uint64_t stepsDone = 0;
  std::vector<double> norms;
  bool broken = false;
  std::string brokenMessage;
};

} // namespace

PYBIND11_MODULE(_pipedream, m) {
  m.doc() = "pipedream's compiler driver and pipeline runtime (native part "
            "of the pipedream package)";
  m.def("compile", &compile, py::arg("options"),
        "Runs the compiler driver; returns dict(error, has_ir, ir, "
        "report_json, report_text).");
  m.def("runtime_api_version", &pd_runtime_api_version);
  py::class_<PipelineTrainer>(m, "PipelineTrainer")
      .def(py::init<const std::string &>(), py::arg("bundle_dir"))
      .def_property_readonly("ranks", &PipelineTrainer::ranks)
      .def_property_readonly("batch_size", &PipelineTrainer::batchSize)
      .def_property_readonly("steps", &PipelineTrainer::steps)
      .def_property_readonly("grad_norms", &PipelineTrainer::gradNorms)
      .def_property_readonly("input_names", &PipelineTrainer::inputNames)
      .def_property_readonly("labels_name", &PipelineTrainer::labelsName)
      .def("train", &PipelineTrainer::train, py::arg("data"), py::arg("steps"))
      .def("evaluate", &PipelineTrainer::evaluate, py::arg("data"))
      .def("weights", &PipelineTrainer::weights)
      .def("save_onnx", &PipelineTrainer::saveOnnx, py::arg("path"));
}
