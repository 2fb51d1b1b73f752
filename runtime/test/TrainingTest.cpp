//===- TrainingTest.cpp - training bundles: roles, updates, the trainer ---===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Training bundles (docs/Bundle.md "Training bundles") whose program.so is
// TestProgram.c: a linear model with the mse loss and SGD with momentum
// (checked against a reference computed here in double precision), and a
// probe that records which rows each micro-batch received.
//
//===----------------------------------------------------------------------===//

#include "pipedream/runtime.h"

#include "Manifest.h"
#include "TestUtil.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

using json = nlohmann::json;
using pipedream::runtime::Error;
using pipedream::runtime::Manifest;
using pipedream::runtime::parseManifest;
using pipedream::test::linearManifest;
using pipedream::test::linearW;
using pipedream::test::linearWeights;
using pipedream::test::makeBundle;
using pipedream::test::probeManifest;
using pipedream::test::TempDir;

namespace {

//===----------------------------------------------------------------------===//
// bundle.json: roles, updates, training
//===----------------------------------------------------------------------===//

TEST(TrainingManifest, ParsesRolesUpdatesAndTraining) {
  Manifest m = parseManifest(linearManifest(), "b/bundle.json");
  ASSERT_EQ(m.persistent.size(), 3u);
  EXPECT_EQ(m.persistent[0].name, "grad:w");
  EXPECT_EQ(m.persistent[0].role, PD_ROLE_GRAD);
  EXPECT_EQ(m.persistent[1].name, "momentum_buffer:w");
  EXPECT_EQ(m.persistent[1].role, PD_ROLE_STATE);
  EXPECT_EQ(m.persistent[2].name, "step");
  EXPECT_TRUE(m.persistent[2].type.shape.empty());
  const auto &step = m.functions[0].buffers;
  EXPECT_EQ(step[3].role, PD_ROLE_GRAD);
  EXPECT_EQ(step[3].persistentIndex, 0u);
  EXPECT_EQ(step[5].updates, "grad:w");
  EXPECT_EQ(m.functions[1].buffers[1].persistentIndex, 0u);
  EXPECT_EQ(m.functions[1].buffers[4].updates, "w");

  ASSERT_TRUE(m.hasTraining);
  const auto &t = m.training;
  EXPECT_EQ(t.loss, "mse");
  EXPECT_EQ(t.labels, "y");
  EXPECT_EQ(t.numClasses, 0);
  EXPECT_EQ(t.microbatches, 2u);
  EXPECT_EQ(t.microbatchSize, 2u);
  EXPECT_EQ(t.batchSize, 4u);
  EXPECT_EQ(t.inputs, std::vector<std::string>{"x"});
  EXPECT_EQ(t.stepFunctionIndex, 0u);
  EXPECT_EQ(t.updateFunctionIndex, 1u);
  EXPECT_EQ(t.lossOutput, "loss");
  EXPECT_EQ(json::parse(t.optimizer),
            json::parse(R"({"kind": "momentum", "lr": 0.1, "momentum": 0.9})"));
  // No gradient clipping: no squared-norm buffer.
  EXPECT_TRUE(t.gradNorm.empty());
  json clipped = json::parse(linearManifest());
  clipped["training"]["grad_norm"] = "grad:w";
  EXPECT_EQ(parseManifest(clipped.dump(), "b/bundle.json").training.gradNorm,
            "grad:w");

  Manifest probe = parseManifest(probeManifest(), "b/bundle.json");
  EXPECT_EQ(probe.training.numClasses, 5);
  EXPECT_TRUE(probe.training.optimizer.empty());
  EXPECT_FALSE(parseManifest(pipedream::test::testManifest(), "b").hasTraining);
}

TEST(TrainingManifest, UpdatesMayNameABufferOfALaterFunction) {
  json m = json::parse(linearManifest());
  std::swap(m["functions"][0], m["functions"][1]);
  m["training"]["step_function"] = "train_microbatch";
  Manifest parsed = parseManifest(m.dump(), "b/bundle.json");
  EXPECT_EQ(parsed.persistent[0].name, "grad:w");
  EXPECT_EQ(parsed.training.stepFunctionIndex, 1u);
}

struct BadCase {
  const char *label;
  std::function<void(json &)> edit;
  const char *message;
};

void PrintTo(const BadCase &c, std::ostream *os) { *os << c.label; }

class TrainingManifestErrors : public ::testing::TestWithParam<BadCase> {};

TEST_P(TrainingManifestErrors, NamesTheField) {
  json manifest = json::parse(linearManifest());
  GetParam().edit(manifest);
  std::string message;
  try {
    parseManifest(manifest.dump(), "b/bundle.json");
  } catch (const Error &e) {
    EXPECT_EQ(e.status, PD_ERROR_FORMAT);
    message = e.what();
  }
  EXPECT_NE(message.find(GetParam().message), std::string::npos)
      << "got: " << message;
  EXPECT_EQ(message.rfind("b/bundle.json: ", 0), 0u) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

json &buffer(json &m, int f, int b) { return m["functions"][f]["buffers"][b]; }

/// Adds TestProgram.c's evaluation function of the linear model to `m`
/// and names it training.eval_function; returns its entry.
json &evalFunction(json &m) {
  m["functions"].push_back(json::parse(R"(
    {"name": "evaluate", "symbol": "pipedream_eval_linear", "kind": "evaluate",
     "buffers": [
       {"name": "x", "role": "input", "dtype": "f32", "shape": [2, 3]},
       {"name": "y", "role": "input", "dtype": "f32", "shape": [2]},
       {"name": "w", "role": "weight", "dtype": "f32", "shape": [3]},
       {"name": "loss", "role": "output", "dtype": "f32", "shape": []}]})"));
  m["training"]["eval_function"] = "evaluate";
  return m["functions"].back();
}

const BadCase kBadCases[] = {
    {"EvalFunctionMissing",
     [](json &m) { m["training"]["eval_function"] = "nope"; },
     "training.eval_function: no function 'nope'"},
    {"EvalFunctionIsTheUpdate",
     [](json &m) { m["training"]["eval_function"] = "update"; },
     "'update' is the step or the update function"},
    {"EvalFunctionUpdates",
     [](json &m) {
       evalFunction(m)["buffers"].push_back(json::parse(
           R"({"name": "w'", "role": "output", "dtype": "f32", "shape": [3],
               "updates": "w"})"));
     },
     "evaluation function 'evaluate' updates 'w'; it must change nothing"},
    {"EvalFunctionReadsAGrad",
     [](json &m) {
       evalFunction(m)["buffers"][2] =
           json::parse(R"({"name": "grad:w", "role": "grad", "dtype": "f32",
                           "shape": [3]})");
     },
     "reads grad buffer 'grad:w'"},
    {"EvalFunctionInputOfAnotherType",
     [](json &m) {
       evalFunction(m)["buffers"][0]["shape"] = {4, 3};
     },
     "input 'x' of evaluation function 'evaluate' is f32[4x3]"},
    {"EvalFunctionMissesTheLabels",
     [](json &m) { evalFunction(m)["buffers"].erase(1); },
     "must read every data input of step function 'train_microbatch'"},
    {"EvalFunctionWithoutLoss",
     [](json &m) { evalFunction(m)["buffers"].erase(3); },
     "evaluation function 'evaluate' has no loss output"},
    {"UpdatesOnInput", [](json &m) { buffer(m, 0, 0)["updates"] = "w"; },
     "functions[0].buffers[0].updates: only output buffers may update a "
     "persistent buffer; 'x' has role input"},
    {"UpdatesNotString", [](json &m) { buffer(m, 0, 5)["updates"] = 3; },
     "functions[0].buffers[5].updates: expected a string, got an integer 3"},
    {"UpdatesNothing", [](json &m) { buffer(m, 0, 5)["updates"] = "grad:v"; },
     "functions[0].buffers[5].updates: output 'grad:w'' updates 'grad:v', "
     "which is no persistent buffer (weight, grad or state) of the bundle"},
    {"UpdatesAnOutput", [](json &m) { buffer(m, 0, 5)["updates"] = "loss"; },
     "updates 'loss', which is no persistent buffer"},
    {"UpdatesOtherType", [](json &m) { buffer(m, 1, 6)["updates"] = "w"; },
     "functions[1].buffers[6].updates: output 'step'' is f32[] but the "
     "persistent buffer 'w' it updates is f32[3]"},
    {"TwoOutputsUpdateOne", [](json &m) { buffer(m, 1, 5)["updates"] = "w"; },
     "outputs 'w'' and 'momentum_buffer:w'' of function 'update' both "
     "update 'w'"},
    {"GradNamedLikeAWeight",
     [](json &m) {
       m["functions"][0]["buffers"].erase(2);
       buffer(m, 0, 2)["name"] = "w";
     },
     "functions[0].buffers[2].name: grad buffer 'w' has the name of a weight"},
    {"GradTypeDiffers", [](json &m) { buffer(m, 1, 1)["dtype"] = "f64"; },
     "functions[1].buffers[1]: grad buffer 'grad:w' is f64[3] here but f32[3] "
     "in function 'train_microbatch'"},
    {"GradIsStateElsewhere", [](json &m) { buffer(m, 1, 1)["role"] = "state"; },
     "functions[1].buffers[1].role: buffer 'grad:w' is state here but grad "
     "in function 'train_microbatch'"},
    {"TrainingNotObject", [](json &m) { m["training"] = "mse"; },
     "training: expected an object, got a string"},
    {"UnknownLoss", [](json &m) { m["training"]["loss"] = "hinge"; },
     "training.loss: unknown loss 'hinge' (expected cross-entropy, mse or "
     "none)"},
    {"NoneLossWithLabels", [](json &m) { m["training"]["loss"] = "none"; },
     "training.labels: loss 'none' has no labels (they are ordinary inputs); "
     "remove the member"},
    {"MissingLoss", [](json &m) { m["training"].erase("loss"); },
     "training: missing required field 'loss'"},
    {"NoStepFunction",
     [](json &m) { m["training"]["step_function"] = "train"; },
     "training.step_function: no function 'train' (functions: "
     "train_microbatch, update, predict)"},
    {"StepIsUpdate",
     [](json &m) { m["training"]["update_function"] = "train_microbatch"; },
     "training.update_function: the step and the update function must "
     "differ"},
    {"ZeroMicrobatches", [](json &m) { m["training"]["microbatches"] = 0; },
     "training.microbatches: must be at least 1"},
    {"UnknownGradients", [](json &m) { m["training"]["gradients"] = "summed"; },
     "training.gradients: unknown mode 'summed' (expected accumulated or "
     "written)"},
    {"WrittenGradientsOfTwoMicrobatches",
     [](json &m) { m["training"]["gradients"] = "written"; },
     "training.gradients: 'written' gradients need one micro-batch a step, "
     "got microbatches 2"},
    {"BatchSize", [](json &m) { m["training"]["batch_size"] = 8; },
     "training.batch_size: 8 is not microbatches x microbatch_size = 2 x 2"},
    {"FirstAxis",
     [](json &m) {
       m["training"]["microbatch_size"] = 4;
       m["training"]["batch_size"] = 8;
     },
     "training.labels: input 'y' of step function 'train_microbatch' is "
     "f32[2]: its first axis must be microbatch_size 4"},
    {"ScalarInput", [](json &m) { buffer(m, 0, 1)["shape"] = json::array(); },
     "input 'y' of step function 'train_microbatch' is f32[]: its first "
     "axis must be microbatch_size 2"},
    {"LabelsNotAnInput", [](json &m) { m["training"]["labels"] = "z"; },
     "training.labels: step function 'train_microbatch' has no input 'z'"},
    {"LabelsAWeight", [](json &m) { m["training"]["labels"] = "w"; },
     "training.labels: 'w' has role weight in step function "
     "'train_microbatch'; data must be an input"},
    {"InputTwice",
     [](json &m) {
       m["training"]["inputs"] = {"x", "x"};
     },
     "training.inputs[1]: input 'x' is listed twice"},
    {"LabelsAsInput",
     [](json &m) {
       m["training"]["inputs"] = {"x", "y"};
     },
     "training.inputs[1]: 'y' is the labels, not an input"},
    {"InputNotCovered",
     [](json &m) { m["training"]["inputs"] = json::array(); },
     "training.inputs: input 'x' of step function 'train_microbatch' is "
     "neither in training.inputs nor training.labels"},
    {"CrossEntropyNeedsClasses",
     [](json &m) { m["training"]["loss"] = "cross-entropy"; },
     "training: missing required field 'num_classes'"},
    {"CrossEntropyNeedsIndices",
     [](json &m) {
       m["training"]["loss"] = "cross-entropy";
       m["training"]["num_classes"] = 3;
     },
     "training.labels: cross-entropy takes class indices (i64), but labels "
     "'y' are f32[2]"},
    {"ZeroClasses",
     [](json &m) {
       m["training"]["loss"] = "cross-entropy";
       m["training"]["num_classes"] = 0;
     },
     "training.num_classes: must be a positive number of classes, got 0"},
    {"MseNeedsFloat", [](json &m) { buffer(m, 0, 1)["dtype"] = "i64"; },
     "training.labels: mse takes a float target, but labels 'y' are i64[2]"},
    {"NoLoss", [](json &m) { buffer(m, 0, 4)["updates"] = "step"; },
     "training.step_function: step function 'train_microbatch' has no loss "
     "output (an output without 'updates')"},
    {"TwoLosses", [](json &m) { buffer(m, 0, 5).erase("updates"); },
     "training.step_function: step function 'train_microbatch' has two "
     "outputs without 'updates' ('loss' and 'grad:w''); exactly one, the "
     "loss, is expected"},
    {"LossNotScalar", [](json &m) { buffer(m, 0, 4)["shape"] = {2}; },
     "training.step_function: the loss output 'loss' of step function "
     "'train_microbatch' is f32[2]; expected one f32 or f64 element"},
    {"UpdateWithInput",
     [](json &m) {
       m["functions"][1]["buffers"].push_back({{"name", "lr"},
                                               {"role", "input"},
                                               {"dtype", "f32"},
                                               {"shape", json::array()}});
     },
     "training.update_function: update function 'update' has an input 'lr'; "
     "it may read only weight, grad and state buffers"},
    {"OptimizerNotObject", [](json &m) { m["training"]["optimizer"] = "adam"; },
     "training.optimizer: expected an object, got a string"},
};

INSTANTIATE_TEST_SUITE_P(All, TrainingManifestErrors,
                         ::testing::ValuesIn(kBadCases),
                         [](const ::testing::TestParamInfo<BadCase> &info) {
                           return std::string(info.param.label);
                         });

//===----------------------------------------------------------------------===//
// The runtime: persistent buffers, swaps, the trainer
//===----------------------------------------------------------------------===//

::testing::AssertionResult ok(pd_status status) {
  if (status == PD_OK)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << pd_status_string(status) << ": " << pd_last_error();
}

std::vector<float> floats(const pd_buffer *buffer) {
  const float *data = static_cast<const float *>(pd_buffer_const_data(buffer));
  return std::vector<float>(data, data + pd_buffer_num_elements(buffer));
}

/// A data array of the caller, described for the trainer.
template <typename T> struct Data {
  std::string name;
  pd_dtype dtype;
  std::vector<int64_t> shape;
  std::vector<T> values;

  pd_named_array view() const {
    return {name.c_str(), dtype,         shape.size(),
            shape.data(), values.data(), values.size() * sizeof(T)};
  }
};

class TrainingTest : public ::testing::Test {
protected:
  void open(const std::string &manifest, const std::string &weights = "") {
    makeBundle(dir.path(), manifest, weights);
    ASSERT_TRUE(ok(pd_bundle_open(dir.path().c_str(), &bundle)));
    ASSERT_TRUE(ok(pd_trainer_create(bundle, &trainer)));
  }
  void TearDown() override {
    pd_trainer_destroy(trainer);
    pd_bundle_close(bundle);
  }

  pd_buffer *persistent(const char *name) {
    pd_buffer *b = nullptr;
    EXPECT_TRUE(ok(pd_bundle_find_persistent(bundle, name, &b)));
    return b;
  }

  TempDir dir;
  pd_bundle *bundle = nullptr;
  pd_trainer *trainer = nullptr;
};

/// The linear model's data: n samples of 3 features and a target.
struct LinearData {
  Data<float> x{"x", PD_DTYPE_F32, {}, {}};
  Data<float> y{"y", PD_DTYPE_F32, {}, {}};
  explicit LinearData(int n) {
    x.shape = {n, 3};
    y.shape = {n};
    for (int r = 0; r < n; ++r) {
      for (int j = 0; j < 3; ++j)
        x.values.push_back(std::sin(1.0f + r * 3 + j));
      y.values.push_back(std::cos(2.0f + r));
    }
  }
  std::vector<pd_named_array> arrays() const { return {x.view(), y.view()}; }
};

/// torch.optim.SGD(lr=0.1, momentum=0.9) on mean((x . w - y)^2), in double.
struct LinearReference {
  std::vector<double> w, buf{0, 0, 0}, grad{0, 0, 0};
  explicit LinearReference(const std::vector<float> &w0)
      : w(w0.begin(), w0.end()) {}

  /// One step on rows first, first+1, ... (4 of them, modulo n); the loss.
  double step(const LinearData &data, size_t first) {
    size_t n = data.y.values.size();
    double loss = 0;
    grad = {0, 0, 0};
    for (size_t k = 0; k < 4; ++k) {
      size_t r = (first + k) % n;
      double err = -data.y.values[r];
      for (int j = 0; j < 3; ++j)
        err += data.x.values[r * 3 + j] * w[j];
      loss += err * err / 4;
      for (int j = 0; j < 3; ++j)
        grad[j] += 2 * err * data.x.values[r * 3 + j] / 4;
    }
    for (int j = 0; j < 3; ++j) {
      buf[j] = 0.9 * buf[j] + grad[j];
      w[j] -= 0.1 * buf[j];
    }
    return loss;
  }
};

void expectNear(const std::vector<float> &got, const std::vector<double> &want,
                const char *what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-5 * (1 + std::fabs(want[i])))
        << what << "[" << i << "]";
}

TEST_F(TrainingTest, TrainingInformation) {
  open(linearManifest(), linearWeights());
  EXPECT_EQ(pd_bundle_is_training(bundle), 1);
  EXPECT_STREQ(pd_bundle_training_loss(bundle), "mse");
  EXPECT_STREQ(pd_bundle_training_labels(bundle), "y");
  EXPECT_EQ(pd_bundle_training_num_classes(bundle), 0);
  EXPECT_EQ(pd_bundle_training_microbatches(bundle), 2u);
  EXPECT_EQ(pd_bundle_training_microbatch_size(bundle), 2u);
  EXPECT_EQ(pd_bundle_training_batch_size(bundle), 4u);
  EXPECT_EQ(pd_trainer_batch_size(trainer), 4u);
  ASSERT_EQ(pd_bundle_training_input_count(bundle), 1u);
  EXPECT_STREQ(pd_bundle_training_input_at(bundle, 0), "x");
  EXPECT_EQ(pd_bundle_training_input_at(bundle, 1), nullptr);
  EXPECT_EQ(json::parse(pd_bundle_training_optimizer(bundle))["lr"], 0.1);
  EXPECT_STREQ(pd_function_name(pd_bundle_training_step_function(bundle)),
               "train_microbatch");
  EXPECT_STREQ(pd_function_name(pd_bundle_training_update_function(bundle)),
               "update");
  // Without gradient clipping there is no norm to report.
  EXPECT_TRUE(std::isnan(pd_trainer_grad_norm(trainer)));
  EXPECT_TRUE(std::isnan(pd_trainer_grad_norm(nullptr)));
  EXPECT_TRUE(std::isnan(pd_rank_grad_norm(nullptr)));

  // Persistent buffers: weights first, then grad/state, one per name.
  ASSERT_EQ(pd_bundle_persistent_count(bundle), 4u);
  EXPECT_STREQ(pd_buffer_name(pd_bundle_persistent_at(bundle, 0)), "w");
  EXPECT_EQ(pd_buffer_role(pd_bundle_persistent_at(bundle, 1)), PD_ROLE_GRAD);
  EXPECT_EQ(pd_buffer_role(pd_bundle_persistent_at(bundle, 3)), PD_ROLE_STATE);
  EXPECT_EQ(pd_bundle_persistent_at(bundle, 4), nullptr);
  pd_function *step = pd_bundle_training_step_function(bundle);
  pd_function *update = pd_bundle_training_update_function(bundle);
  EXPECT_EQ(pd_function_buffer_at(step, 3), persistent("grad:w"));
  EXPECT_EQ(pd_function_buffer_at(update, 1), persistent("grad:w"));
  EXPECT_STREQ(pd_buffer_updates(pd_function_buffer_at(step, 5)), "grad:w");
  EXPECT_STREQ(pd_buffer_updates(pd_function_buffer_at(step, 4)), "");
  for (const char *name : {"grad:w", "momentum_buffer:w", "step"})
    for (float v : floats(persistent(name)))
      EXPECT_EQ(v, 0.0f) << name;
  pd_buffer *missing = nullptr;
  EXPECT_EQ(pd_bundle_find_persistent(bundle, "grad:v", &missing),
            PD_ERROR_NOT_FOUND);
  EXPECT_NE(std::string(pd_last_error())
                .find("no weight, grad or state "
                      "buffer 'grad:v'"),
            std::string::npos);
}

TEST_F(TrainingTest, AccessorsOfAnInferenceBundle) {
  makeBundle(dir.path());
  ASSERT_TRUE(ok(pd_bundle_open(dir.path().c_str(), &bundle)));
  EXPECT_EQ(pd_bundle_is_training(bundle), 0);
  EXPECT_STREQ(pd_bundle_training_loss(bundle), "");
  EXPECT_EQ(pd_bundle_training_batch_size(bundle), 0u);
  EXPECT_EQ(pd_bundle_training_step_function(bundle), nullptr);
  pd_trainer *t = reinterpret_cast<pd_trainer *>(0x1);
  EXPECT_EQ(pd_trainer_create(bundle, &t), PD_ERROR_UNSUPPORTED);
  EXPECT_EQ(t, nullptr);
  EXPECT_EQ(std::string(pd_last_error()),
            dir.path() + ": not a training bundle (bundle.json has no "
                         "'training' section; pipedream-compile writes one "
                         "unless --inference is given)");
}

TEST_F(TrainingTest, RunSwapsUpdatedBuffersWithoutCopying) {
  open(linearManifest(), linearWeights());
  pd_function *step = pd_bundle_training_step_function(bundle);
  pd_buffer *grad = persistent("grad:w");
  pd_buffer *gradOut = pd_function_buffer_at(step, 5);
  const void *gradMemory = pd_buffer_const_data(grad);
  const void *outMemory = pd_buffer_const_data(gradOut);

  LinearData data(2);
  pd_buffer *x = pd_function_buffer_at(step, 0);
  pd_buffer *y = pd_function_buffer_at(step, 1);
  ASSERT_TRUE(ok(pd_buffer_write(x, PD_DTYPE_F32, 2, data.x.shape.data(),
                                 data.x.values.data(), 24)));
  ASSERT_TRUE(ok(pd_buffer_write(y, PD_DTYPE_F32, 1, data.y.shape.data(),
                                 data.y.values.data(), 8)));
  ASSERT_TRUE(ok(pd_function_run(step)));
  // The memories traded places: the accumulator holds the new value.
  EXPECT_EQ(pd_buffer_const_data(grad), outMemory);
  EXPECT_EQ(pd_buffer_const_data(gradOut), gradMemory);
  std::vector<float> first = floats(grad);
  for (float v : floats(gradOut))
    EXPECT_EQ(v, 0.0f);
  // A second run reads the new accumulator and adds to it.
  ASSERT_TRUE(ok(pd_function_run(step)));
  EXPECT_EQ(pd_buffer_const_data(grad), gradMemory);
  std::vector<float> second = floats(grad);
  for (int j = 0; j < 3; ++j)
    EXPECT_FLOAT_EQ(second[j], 2 * first[j]) << j;
}

TEST_F(TrainingTest, StepsMatchTheReference) {
  open(linearManifest(), linearWeights());
  LinearData data(6); // not a multiple of the batch: steps wrap around
  std::vector<pd_named_array> arrays = data.arrays();
  size_t samples = 0;
  ASSERT_TRUE(ok(
      pd_trainer_check_data(trainer, arrays.data(), arrays.size(), &samples)));
  EXPECT_EQ(samples, 6u);

  LinearReference reference(linearW());
  pd_buffer *w = nullptr;
  ASSERT_TRUE(ok(pd_bundle_find_weight(bundle, "w", &w)));
  for (int s = 0; s < 4; ++s) {
    double loss = -1;
    ASSERT_TRUE(ok(pd_trainer_step(trainer, arrays.data(), arrays.size(),
                                   uint64_t(s) * 4, &loss)));
    double want = reference.step(data, (s * 4) % 6);
    EXPECT_NEAR(loss, want, 1e-5 * (1 + want)) << "step " << s;
    // The accumulator holds this step's gradient only: zeroed each step.
    expectNear(floats(persistent("grad:w")), reference.grad, "grad:w");
    expectNear(floats(persistent("momentum_buffer:w")), reference.buf,
               "momentum_buffer:w");
    expectNear(floats(w), reference.w, "w");
    EXPECT_EQ(floats(persistent("step"))[0], float(s + 1));
  }

  // Other functions see the trained weight.
  pd_function *predict = nullptr;
  ASSERT_TRUE(ok(pd_function_lookup(bundle, "predict", &predict)));
  pd_buffer *x = pd_function_buffer_at(predict, 0);
  const int64_t shape23[] = {2, 3};
  ASSERT_TRUE(ok(
      pd_buffer_write(x, PD_DTYPE_F32, 2, shape23, data.x.values.data(), 24)));
  ASSERT_TRUE(ok(pd_function_run(predict)));
  std::vector<float> p = floats(pd_function_buffer_at(predict, 2));
  for (int r = 0; r < 2; ++r) {
    double want = 0;
    for (int j = 0; j < 3; ++j)
      want += data.x.values[r * 3 + j] * reference.w[j];
    EXPECT_NEAR(p[r], want, 1e-5) << r;
  }
}

/// linearManifest with an evaluation function (training.eval_function).
std::string evalManifest() {
  json m = json::parse(linearManifest());
  evalFunction(m);
  return m.dump();
}

TEST_F(TrainingTest, EvaluateIsTheMeanLossAndChangesNothing) {
  open(evalManifest(), linearWeights());
  EXPECT_EQ(pd_trainer_can_evaluate(trainer), 1);
  LinearData train(4), held(6);
  std::vector<pd_named_array> arrays = train.arrays(),
                              evalArrays = held.arrays();
  double loss = -1;
  ASSERT_TRUE(
      ok(pd_trainer_step(trainer, arrays.data(), arrays.size(), 0, &loss)));
  LinearReference reference(linearW());
  reference.step(train, 0);
  std::vector<float> w = floats(persistent("w")),
                     buf = floats(persistent("momentum_buffer:w"));
  // The mean over all 6 held-out samples (3 micro-batches of 2).
  double want = 0;
  for (size_t r = 0; r < 6; ++r) {
    double err = -held.y.values[r];
    for (int j = 0; j < 3; ++j)
      err += held.x.values[r * 3 + j] * reference.w[j];
    want += err * err / 6;
  }
  double got = -1;
  ASSERT_TRUE(ok(pd_trainer_evaluate(trainer, evalArrays.data(),
                                     evalArrays.size(), &got)));
  EXPECT_NEAR(got, want, 1e-5 * (1 + want));
  EXPECT_EQ(floats(persistent("w")), w);
  EXPECT_EQ(floats(persistent("momentum_buffer:w")), buf);
  // Every sample counts once: 5 is not a multiple of the micro-batch.
  LinearData odd(5);
  std::vector<pd_named_array> oddArrays = odd.arrays();
  EXPECT_EQ(
      pd_trainer_evaluate(trainer, oddArrays.data(), oddArrays.size(), &got),
      PD_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pd_last_error())
                .find("5 samples: not a multiple of the micro-batch size 2"),
            std::string::npos)
      << pd_last_error();
  EXPECT_EQ(got, 0);
  EXPECT_EQ(pd_trainer_evaluate(nullptr, nullptr, 0, &got),
            PD_ERROR_INVALID_ARGUMENT);
}

TEST_F(TrainingTest, EvaluateWithoutAnEvaluationFunction) {
  open(linearManifest(), linearWeights());
  EXPECT_EQ(pd_trainer_can_evaluate(trainer), 0);
  EXPECT_EQ(pd_trainer_can_evaluate(nullptr), 0);
  LinearData held(2);
  std::vector<pd_named_array> arrays = held.arrays();
  double loss = -1;
  EXPECT_EQ(pd_trainer_evaluate(trainer, arrays.data(), arrays.size(), &loss),
            PD_ERROR_UNSUPPORTED);
  EXPECT_NE(std::string(pd_last_error()).find("--evaluate"), std::string::npos);
}

TEST_F(TrainingTest, WrittenGradientsAreTheStepFunctionsToWrite) {
  // One micro-batch a step. "accumulated" (the default): the trainer
  // zeroes grad:w before the step. "written" (what pipedream-compile
  // writes for M = 1, whose step function writes the gradient): it leaves
  // grad:w alone, so this test program, which adds to it, is seen adding
  // to the value set before the step.
  LinearData data(2);
  std::vector<pd_named_array> arrays = data.arrays();
  std::vector<float> grads[2];
  for (int written = 0; written < 2; ++written) {
    json manifest = json::parse(linearManifest());
    manifest["training"]["microbatches"] = 1;
    manifest["training"]["batch_size"] = 2;
    if (written)
      manifest["training"]["gradients"] = "written";
    // A bundle directory each (the first program.so stays mapped).
    std::string path = dir.path() + (written ? "/written" : "/accumulated");
    std::filesystem::create_directories(path);
    makeBundle(path, manifest.dump(), linearWeights());
    ASSERT_TRUE(ok(pd_bundle_open(path.c_str(), &bundle)));
    ASSERT_TRUE(ok(pd_trainer_create(bundle, &trainer)));
    std::vector<float> before = {100.0f, 200.0f, 300.0f};
    const int64_t shape[] = {3};
    ASSERT_TRUE(ok(pd_buffer_write(persistent("grad:w"), PD_DTYPE_F32, 1, shape,
                                   before.data(), 12)));
    ASSERT_TRUE(
        ok(pd_trainer_step(trainer, arrays.data(), arrays.size(), 0, nullptr)));
    grads[written] = floats(persistent("grad:w"));
    TearDown();
    trainer = nullptr;
    bundle = nullptr;
  }
  for (int j = 0; j < 3; ++j)
    EXPECT_FLOAT_EQ(grads[1][j], 100.0f * (j + 1) + grads[0][j]) << j;
}

TEST_F(TrainingTest, ExactBatchesAndSmallData) {
  open(linearManifest(), linearWeights());
  // Three samples: a batch of four takes rows 0, 1, 2, 0.
  LinearData data(3);
  std::vector<pd_named_array> arrays = data.arrays();
  LinearReference reference(linearW());
  double loss = 0;
  ASSERT_TRUE(
      ok(pd_trainer_step(trainer, arrays.data(), arrays.size(), 0, &loss)));
  double want = reference.step(data, 0);
  EXPECT_NEAR(loss, want, 1e-5 * (1 + want));
  ASSERT_TRUE(
      ok(pd_trainer_step(trainer, arrays.data(), arrays.size(), 4, nullptr)));
  reference.step(data, 1);
  pd_buffer *w = nullptr;
  ASSERT_TRUE(ok(pd_bundle_find_weight(bundle, "w", &w)));
  expectNear(floats(w), reference.w, "w");
}

/// x rows r = {r, r + 0.25, r + 0.5}; labels r mod 5.
struct ProbeData {
  Data<float> x{"x", PD_DTYPE_F32, {}, {}};
  Data<int64_t> labels{"labels", PD_DTYPE_I64, {}, {}};
  explicit ProbeData(int n) {
    x.shape = {n, 3};
    labels.shape = {n};
    for (int r = 0; r < n; ++r) {
      for (int j = 0; j < 3; ++j)
        x.values.push_back(r + 0.25f * j);
      labels.values.push_back(r % 5);
    }
  }
  std::vector<pd_named_array> arrays() const {
    return {labels.view(), x.view()};
  }
};

TEST_F(TrainingTest, MicrobatchesAreContiguousSlicesOfTheBatch) {
  open(probeManifest());
  ProbeData data(5);
  std::vector<pd_named_array> arrays = data.arrays();
  double loss = 0;
  // Step 1 of a 5-sample data set: rows 4, 0 | 1, 2.
  ASSERT_TRUE(
      ok(pd_trainer_step(trainer, arrays.data(), arrays.size(), 4, &loss)));
  std::vector<float> seen = floats(persistent("seen"));
  const int rows[] = {4, 0, 1, 2};
  for (int k = 0; k < 4; ++k)
    for (int j = 0; j < 3; ++j)
      EXPECT_EQ(seen[k * 3 + j], rows[k] + 0.25f * j) << k << "," << j;
  // Micro-batch losses labels[0] + 10 * labels[1]: 4 + 0 and 1 + 20.
  EXPECT_DOUBLE_EQ(loss, (4.0 + 21.0) / 2);
  EXPECT_EQ(floats(persistent("calls"))[0], 2.0f);
  // The update ran after both micro-batches.
  pd_function *update = pd_bundle_training_update_function(bundle);
  double callsSeen = 0;
  int64_t scalar = 0;
  ASSERT_TRUE(ok(pd_buffer_read(pd_function_buffer_at(update, 1), PD_DTYPE_F64,
                                0, &scalar, &callsSeen, 8)));
  EXPECT_EQ(callsSeen, 2.0);
}

TEST_F(TrainingTest, LabelsOutOfRange) {
  open(probeManifest());
  ProbeData data(8);
  data.labels.values[6] = 5;
  std::vector<pd_named_array> arrays = data.arrays();
  EXPECT_EQ(
      pd_trainer_check_data(trainer, arrays.data(), arrays.size(), nullptr),
      PD_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(pd_last_error(),
               "training data: array 'labels': row 6 holds 5, outside [0, 5) "
               "(cross-entropy over 5 classes)");
  // A step checks only its own rows: rows 0-3 are fine, rows 4-7 are not,
  // and nothing runs then.
  ASSERT_TRUE(
      ok(pd_trainer_step(trainer, arrays.data(), arrays.size(), 0, nullptr)));
  data.labels.values[6] = -1;
  EXPECT_EQ(pd_trainer_step(trainer, arrays.data(), arrays.size(), 4, nullptr),
            PD_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(pd_last_error(),
               "training data: array 'labels': row 6 holds -1, outside "
               "[0, 5) (cross-entropy over 5 classes)");
  EXPECT_EQ(floats(persistent("calls"))[0], 2.0f);
}

TEST_F(TrainingTest, LabelsOutOfRangeNameTheElement) {
  json m = json::parse(probeManifest());
  // Labels i64[2x2]: one class per position, like a sequence model's.
  m["functions"][0]["buffers"][1]["shape"] = {2, 2};
  makeBundle(dir.path(), m.dump(), "");
  ASSERT_TRUE(ok(pd_bundle_open(dir.path().c_str(), &bundle)));
  ASSERT_TRUE(ok(pd_trainer_create(bundle, &trainer)));
  ProbeData data(3);
  data.labels.shape = {3, 2};
  data.labels.values = {0, 1, 2, 3, 4, 7};
  std::vector<pd_named_array> arrays = data.arrays();
  EXPECT_EQ(
      pd_trainer_check_data(trainer, arrays.data(), arrays.size(), nullptr),
      PD_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(pd_last_error(),
               "training data: array 'labels': row 2 holds 7 at [2, 1], "
               "outside [0, 5) (cross-entropy over 5 classes)");
}

TEST_F(TrainingTest, BadData) {
  open(probeManifest());
  ProbeData data(5);
  auto errorOf = [&](const std::vector<pd_named_array> &arrays,
                     pd_status expected) {
    size_t samples = 7;
    EXPECT_EQ(
        pd_trainer_check_data(trainer, arrays.data(), arrays.size(), &samples),
        expected);
    EXPECT_EQ(samples, 0u);
    // A step refuses the same data with the same message, running nothing.
    std::string message = pd_last_error();
    EXPECT_EQ(
        pd_trainer_step(trainer, arrays.data(), arrays.size(), 0, nullptr),
        expected);
    EXPECT_EQ(message, pd_last_error());
    EXPECT_EQ(floats(persistent("calls"))[0], 0.0f);
    return message;
  };

  EXPECT_EQ(errorOf({}, PD_ERROR_NOT_FOUND),
            "training data: missing arrays 'x' f32[Nx3], 'labels' i64[N] "
            "(the labels) (arrays given: none)");
  Data<float> other{"other", PD_DTYPE_F32, {5}, std::vector<float>(5)};
  EXPECT_EQ(errorOf({data.x.view(), other.view()}, PD_ERROR_NOT_FOUND),
            "training data: missing array 'labels' i64[N] (the labels) "
            "(arrays given: x, other)");

  Data<double> x64{"x", PD_DTYPE_F64, {5, 3}, std::vector<double>(15)};
  EXPECT_EQ(errorOf({x64.view(), data.labels.view()}, PD_ERROR_MISMATCH),
            "training data: array 'x' is f64[5x3], but step function "
            "'train_probe' takes input 'x' as f32[Nx3] (N samples)");
  Data<float> x4{"x", PD_DTYPE_F32, {5, 4}, std::vector<float>(20)};
  EXPECT_EQ(errorOf({x4.view(), data.labels.view()}, PD_ERROR_MISMATCH),
            "training data: array 'x' is f32[5x4], but step function "
            "'train_probe' takes input 'x' as f32[Nx3] (N samples)");
  Data<int32_t> labels32{"labels", PD_DTYPE_I32, {5}, std::vector<int32_t>(5)};
  EXPECT_EQ(errorOf({data.x.view(), labels32.view()}, PD_ERROR_MISMATCH),
            "training data: array 'labels' is i32[5], but step function "
            "'train_probe' takes labels 'labels' as i64[N] (N samples)");

  ProbeData shorter(4);
  EXPECT_EQ(errorOf({data.x.view(), shorter.labels.view()}, PD_ERROR_MISMATCH),
            "training data: arrays have different numbers of samples (first "
            "axis): 'x' has 5, 'labels' has 4");
  ProbeData empty(0);
  EXPECT_EQ(errorOf(empty.arrays(), PD_ERROR_INVALID_ARGUMENT),
            "training data: array 'x' has no samples (its first axis is 0)");

  pd_named_array cut = data.x.view();
  cut.num_bytes -= 4;
  EXPECT_EQ(errorOf({cut, data.labels.view()}, PD_ERROR_MISMATCH),
            "training data: array 'x' is f32[5x3] but has 56 bytes of data");
  std::vector<pd_named_array> twice = {data.x.view(), data.x.view(),
                                       data.labels.view()};
  EXPECT_EQ(errorOf(twice, PD_ERROR_INVALID_ARGUMENT),
            "training data: two arrays named 'x'");
}

TEST_F(TrainingTest, NullArgumentsAndLeftoverTrainers) {
  open(probeManifest());
  EXPECT_EQ(pd_trainer_create(nullptr, nullptr), PD_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(pd_trainer_step(nullptr, nullptr, 0, 0, nullptr),
            PD_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(pd_trainer_step(trainer, nullptr, 2, 0, nullptr),
            PD_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(pd_trainer_batch_size(nullptr), 0u);
  pd_trainer_destroy(nullptr);
  // A second trainer is left for pd_bundle_close to free.
  pd_trainer *other = nullptr;
  ASSERT_TRUE(ok(pd_trainer_create(bundle, &other)));
  EXPECT_NE(other, trainer);
}

} // namespace
