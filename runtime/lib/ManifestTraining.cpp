//===- ManifestTraining.cpp - bundle.json's `training` --------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The `training` section of bundle.json: loss, labels, micro-batches,
// optimizer and the step/update functions, checked against the functions.
//
//===----------------------------------------------------------------------===//

#include "ManifestParse.h"

#include <algorithm>
#include <map>
#include <set>

namespace pipedream {
namespace runtime {
namespace manifest {

namespace {

size_t positive(Validator &v, const json &object, const char *key) {
  std::string path = Validator::join("training", key);
  uint64_t value = v.unsignedInt(v.member(object, "training", key), path);
  if (value == 0)
    v.fail(path, "must be at least 1");
  if (value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    v.fail(path, std::to_string(value) + " is too large");
  return static_cast<size_t>(value);
}


} // namespace

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

int64_t parseNumClasses(Validator &v, const json &object,
                        const std::string &section) {
  std::string npath = Validator::join(section, "num_classes");
  uint64_t classes =
      v.unsignedInt(v.member(object, section, "num_classes"), npath);
  if (classes == 0 ||
      classes > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    v.fail(npath, "must be a positive number of classes, got " +
                      std::to_string(classes));
  return static_cast<int64_t>(classes);
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
  if (object.contains("gradients")) {
    std::string mode = v.string(object["gradients"], "training.gradients");
    if (mode != "accumulated" && mode != "written")
      v.fail("training.gradients",
             "unknown mode '" + mode + "' (expected accumulated or written)");
    t.gradientsWritten = mode == "written";
    if (t.gradientsWritten && t.microbatches != 1)
      v.fail("training.gradients",
             "'written' gradients need one micro-batch a step, got "
             "microbatches " +
                 std::to_string(t.microbatches));
  }
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
    t.numClasses = parseNumClasses(v, object, path);
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
  if (object.contains("grad_norm"))
    t.gradNorm = v.string(object["grad_norm"], "training.grad_norm");

  // The evaluation function: the step's data inputs (same types), weights,
  // one loss output, no updates, nothing else.
  if (object.contains("eval_function")) {
    const char *key = "training.eval_function";
    t.evalFunctionIndex = function("eval_function", t.evalFunction);
    const FunctionSpec &eval = manifest.functions[t.evalFunctionIndex];
    if (t.evalFunctionIndex == t.stepFunctionIndex ||
        t.evalFunctionIndex == t.updateFunctionIndex)
      v.fail(key, "'" + t.evalFunction +
                      "' is the step or the update function; the evaluation "
                      "function must be another");
    std::set<std::string> evalInputs;
    for (const BufferSpec &b : eval.buffers) {
      if (!b.updates.empty())
        v.fail(key, "evaluation function '" + eval.name + "' updates '" +
                        b.updates + "'; it must change nothing");
      if (b.role == PD_ROLE_GRAD || b.role == PD_ROLE_STATE)
        v.fail(key, "evaluation function '" + eval.name + "' reads " +
                        pd_role_name(b.role) + " buffer '" + b.name +
                        "'; it may read only data and weights");
      if (b.role == PD_ROLE_INPUT) {
        const BufferSpec *same = nullptr;
        for (const BufferSpec &s : step.buffers)
          if (s.name == b.name && s.role == PD_ROLE_INPUT)
            same = &s;
        if (!same || !data.count(b.name) ||
            describe(same->type) != describe(b.type))
          v.fail(key, "input '" + b.name + "' of evaluation function '" +
                          eval.name + "' is " + describe(b.type) +
                          "; it must be a data input of step function '" +
                          step.name + "' of the same type");
        evalInputs.insert(b.name);
      }
      if (b.role == PD_ROLE_OUTPUT) {
        if (!t.evalLossOutput.empty())
          v.fail(key, "evaluation function '" + eval.name +
                          "' has two outputs; exactly one, the loss, is "
                          "expected");
        if ((b.type.dtype != PD_DTYPE_F32 && b.type.dtype != PD_DTYPE_F64) ||
            b.type.numElements != 1)
          v.fail(key, "the loss output '" + b.name +
                          "' of evaluation function '" + eval.name + "' is " +
                          describe(b.type) +
                          "; expected one f32 or f64 "
                          "element");
        t.evalLossOutput = b.name;
      }
    }
    if (evalInputs != data)
      v.fail(key, "evaluation function '" + eval.name +
                      "' must read every data input of step function '" +
                      step.name + "' (training.inputs and the labels)");
    if (t.evalLossOutput.empty())
      v.fail(key, "evaluation function '" + eval.name + "' has no loss output");
  }
}

/// A positive integer field `key` of `object` at `path`; `fallback` when

} // namespace manifest
} // namespace runtime
} // namespace pipedream
