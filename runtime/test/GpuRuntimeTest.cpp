//===- GpuRuntimeTest.cpp - the runtime on cuda bundles -------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Cuda bundles of GpuTestProgram.c (TestProgram.c behind device-pointer
// shims) against the same CPU bundles, bitwise: single-rank training, a
// 2-stage pipeline on one device (rank threads, one stream each), errors
// from the program. Built twice: into pipedream-gpu-device-tests (a real
// GPU, CTest label `gpu`) and into pipedream-gpu-fake-tests, which runs
// everywhere against GpuFakeSupport.cpp, a support library whose "device"
// memory is separate host memory (so a missing upload or download shows).
//
//===----------------------------------------------------------------------===//

#include "pipedream/gpu.h"
#include "pipedream/runtime.h"

#include "PipelineUtil.h"
#include "TestUtil.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

using json = nlohmann::json;
using pipedream::test::TempDir;

namespace {

/// The CPU bundle `manifest` as a cuda bundle of GpuTestProgram.c.
void makeCudaBundle(const std::string &dir, json manifest,
                    const std::string &weights) {
  manifest["target"] = "cuda";
  manifest["gpu_arch"] = "sm_90";
  for (json &function : manifest["functions"])
    function["symbol"] = "cuda_" + function["symbol"].get<std::string>();
  pipedream::test::writeFile(dir + "/bundle.json", manifest.dump());
  pipedream::test::writeFile(dir + "/weights.bin", weights);
  std::filesystem::copy_file(
      pipedream::test::testFile(PIPEDREAM_GPU_TEST_PROGRAM),
      dir + "/program.so", std::filesystem::copy_options::overwrite_existing);
}

struct ChainData {
  explicit ChainData(size_t n) : x(2 * n), y(n), xs{int64_t(n), 2}, ys{int64_t(n)} {
    for (size_t i = 0; i < 2 * n; ++i)
      x[i] = std::sin(0.7f * float(i) + 0.3f);
    for (size_t i = 0; i < n; ++i)
      y[i] = std::cos(1.3f * float(i));
    arrays[0] = {"x", PD_DTYPE_F32, 2, xs, x.data(), x.size() * sizeof(float)};
    arrays[1] = {"y", PD_DTYPE_F32, 1, ys, y.data(), y.size() * sizeof(float)};
  }
  std::vector<float> x, y;
  int64_t xs[2], ys[1];
  pd_named_array arrays[2];
};

struct Trained {
  std::vector<double> losses;
  std::vector<std::string> weights;
};

Trained trainSingle(const std::string &dir, const ChainData &data, int steps) {
  Trained result;
  pd_bundle *bundle = nullptr;
  EXPECT_EQ(pd_bundle_open(dir.c_str(), &bundle), PD_OK) << pd_last_error();
  if (!bundle)
    return result;
  pd_trainer *trainer = nullptr;
  EXPECT_EQ(pd_trainer_create(bundle, &trainer), PD_OK) << pd_last_error();
  for (int s = 0; s < steps; ++s) {
    double loss = 0;
    EXPECT_EQ(pd_trainer_step(trainer, data.arrays, 2, s * 8, &loss), PD_OK)
        << pd_last_error();
    result.losses.push_back(loss);
  }
  for (size_t w = 0; w < pd_bundle_weight_count(bundle); ++w) {
    pd_buffer *weight = pd_bundle_weight_at(bundle, w);
    result.weights.emplace_back(
        static_cast<const char *>(pd_buffer_const_data(weight)),
        pd_buffer_num_bytes(weight));
  }
  pd_bundle_close(bundle);
  return result;
}

TEST(GpuRuntime, CudaTrainingEqualsCpuTraining) {
  ChainData data(12);
  std::string bin;
  json manifest = pipedream::test::chainTrainingManifest(2, bin);
  TempDir cpu, cuda;
  pipedream::test::makeBundle(cpu.path(), manifest.dump(), bin);
  makeCudaBundle(cuda.path(), manifest, bin);
  Trained reference = trainSingle(cpu.path(), data, 4);
  Trained actual = trainSingle(cuda.path(), data, 4);
  ASSERT_EQ(actual.losses.size(), 4u);
  EXPECT_EQ(actual.losses, reference.losses);
  EXPECT_EQ(actual.weights, reference.weights);
  EXPECT_NE(reference.losses[0], reference.losses[3]);
}

TEST(GpuRuntime, CudaBundleReportsItsTargetAndErrors) {
  std::string bin;
  json manifest = pipedream::test::chainTrainingManifest(2, bin);
  manifest["functions"].push_back(
      {{"name", "fail"},
       {"symbol", "fail"},
       {"kind", "forward"},
       {"buffers", json::array()}});
  TempDir dir;
  makeCudaBundle(dir.path(), manifest, bin);
  pd_bundle *bundle = nullptr;
  ASSERT_EQ(pd_bundle_open(dir.path().c_str(), &bundle), PD_OK)
      << pd_last_error();
  EXPECT_STREQ(pd_bundle_target(bundle), "cuda");
  pd_function *fail = nullptr;
  ASSERT_EQ(pd_function_lookup(bundle, "fail", &fail), PD_OK);
  EXPECT_EQ(pd_function_run(fail), PD_ERROR_INTERNAL);
  EXPECT_STREQ(pd_last_error(),
               "function 'fail': cuda test program: failing on purpose");
  // The error was taken: the next call is clean.
  pd_buffer *w = nullptr;
  ASSERT_EQ(pd_bundle_find_weight(bundle, "w", &w), PD_OK);
  float values[2] = {1.5f, -2.f};
  int64_t shape[1] = {2};
  ASSERT_EQ(pd_buffer_write(w, PD_DTYPE_F32, 1, shape, values, 8), PD_OK);
  float back[2] = {0, 0};
  ASSERT_EQ(pd_buffer_read(w, PD_DTYPE_F32, 1, shape, back, 8), PD_OK);
  EXPECT_EQ(back[0], 1.5f);
  EXPECT_EQ(back[1], -2.f);
  pd_bundle_close(bundle);
}

TEST(GpuRuntime, KeptBufferPointersWorkAsOnTheCpu) {
  // pd_buffer_data pointers taken once: inputs written through them later
  // reach the device, outputs read through them show the last call.
  std::string bin;
  TempDir dir;
  makeCudaBundle(dir.path(),
                 pipedream::test::chainPipelineManifest(2, "1f1b", bin), bin);
  pd_bundle *bundle = nullptr;
  ASSERT_EQ(pd_bundle_open(dir.path().c_str(), &bundle), PD_OK)
      << pd_last_error();
  pd_function *forward = nullptr;
  ASSERT_EQ(pd_function_lookup(bundle, "stage0_F", &forward), PD_OK);
  pd_buffer *h = nullptr, *res = nullptr;
  ASSERT_EQ(pd_function_find_buffer(forward, "h", &h), PD_OK);
  ASSERT_EQ(pd_function_find_buffer(forward, "res", &res), PD_OK);
  float *in = static_cast<float *>(pd_buffer_data(h));
  const float *out = static_cast<const float *>(pd_buffer_data(res));
  ASSERT_TRUE(in && out);
  for (float scale : {1.f, -3.f, 0.5f}) {
    for (int i = 0; i < 4; ++i)
      in[i] = scale * float(i + 1);
    ASSERT_EQ(pd_function_run(forward), PD_OK) << pd_last_error();
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(out[i], scale * float(i + 1)) << "res is h, element " << i;
  }
  pd_bundle_close(bundle);
}

/// The calling thread's copies of the fake device (GpuFakeSupport.cpp):
/// {calls, bytes} to the device, to the host, device to device.
using Copies = std::array<uint64_t, 6>;
Copies fakeCopies() {
  using Get = void (*)(uint64_t *);
  auto get = reinterpret_cast<Get>(dlsym(RTLD_DEFAULT, "pd_gpu_fake_copies"));
  Copies copies{};
  EXPECT_NE(get, nullptr) << "the fake GPU library is not loaded";
  if (get)
    get(copies.data());
  return copies;
}

/// All ranks of the pipeline bundle in `dir` as threads of this process
/// (one stream each, on one GPU); rank 0's losses and gathered weights.
/// `copies`, when given, gets each rank's fake-device copies during the
/// steps.
Trained trainPipeline(const std::string &dir, int ranks, const ChainData &data,
                      int steps, std::vector<Copies> *copies = nullptr) {
  std::vector<pd_transport *> transports(ranks);
  EXPECT_EQ(pd_transport_create_threads(ranks, transports.data()), PD_OK);
  std::vector<std::string> errors(ranks);
  Trained result;
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      pd_bundle *bundle = nullptr;
      pd_rank *pipeline = nullptr;
      auto failed = [&](const char *what) {
        errors[r] = std::string(what) + ": " + pd_last_error();
        pd_transport_abort(transports[r], errors[r].c_str());
      };
      if (pd_bundle_open_rank(dir.c_str(), r, &bundle) != PD_OK)
        return failed("open");
      if (pd_rank_create(bundle, r, transports[r], &pipeline) != PD_OK) {
        pd_bundle_close(bundle);
        return failed("create");
      }
      Copies before = fakeCopies();
      for (int s = 0; s < steps && errors[r].empty(); ++s) {
        double loss = -1;
        if (pd_rank_step(pipeline, data.arrays, 2, s * 8, &loss) != PD_OK)
          failed("step");
        else if (r == 0)
          result.losses.push_back(loss);
      }
      if (copies) {
        Copies after = fakeCopies();
        for (size_t i = 0; i < after.size(); ++i)
          (*copies)[r][i] = after[i] - before[i];
      }
      if (errors[r].empty() && pd_rank_gather_weights(pipeline) != PD_OK)
        failed("gather");
      if (r == 0 && errors[r].empty())
        for (size_t w = 0; w < pd_bundle_weight_count(bundle); ++w) {
          pd_buffer *weight = pd_bundle_weight_at(bundle, w);
          const char *bytes =
              static_cast<const char *>(pd_buffer_const_data(weight));
          result.weights.emplace_back(
              bytes ? std::string(bytes, pd_buffer_num_bytes(weight)) : "");
        }
      pd_bundle_close(bundle);
    });
  for (auto &thread : threads)
    thread.join();
  for (int r = 0; r < ranks; ++r) {
    EXPECT_EQ(errors[r], "") << "rank " << r;
    pd_transport_destroy(transports[r]);
  }
  return result;
}

// The device code of a cuda bundle clamps indices but cannot report them:
// the inputs bundle.json `data_index_checks` names are checked on the host
// before the call, with the CPU code's message, and the call does not run.
TEST(GpuRuntime, DataIndexChecksRunOnTheHostBeforeTheCall) {
  std::string bin;
  json manifest = pipedream::test::chainTrainingManifest(2, bin);
  // GpuTestProgram.c's `fail` symbol: a call that runs reports itself.
  manifest["functions"].push_back(
      {{"name", "lookup"},
       {"symbol", "fail"},
       {"kind", "inference"},
       {"buffers",
        {{{"name", "idx"}, {"role", "input"}, {"dtype", "i64"},
          {"shape", {4}}}}}});
  manifest["data_index_checks"] = {{{"input", "idx"},
                                    {"lower", -3},
                                    {"upper", 3},
                                    {"node", "/tok/Gather"},
                                    {"op", "Gather"}}};
  TempDir dir;
  makeCudaBundle(dir.path(), manifest, bin);
  pd_bundle *bundle = nullptr;
  ASSERT_EQ(pd_bundle_open(dir.path().c_str(), &bundle), PD_OK)
      << pd_last_error();
  pd_function *lookup = nullptr;
  ASSERT_EQ(pd_function_lookup(bundle, "lookup", &lookup), PD_OK);
  pd_buffer *idx = nullptr;
  ASSERT_EQ(pd_function_find_buffer(lookup, "idx", &idx), PD_OK)
      << pd_last_error();
  int64_t shape[1] = {4};
  int64_t bad[4] = {0, 1, 3, -1};
  ASSERT_EQ(pd_buffer_write(idx, PD_DTYPE_I64, 1, shape, bad, sizeof(bad)),
            PD_OK);
  EXPECT_EQ(pd_function_run(lookup), PD_ERROR_CHECK_FAILED);
  EXPECT_STREQ(pd_last_error(), "node '/tok/Gather' (op Gather): index 3 out "
                                "of range [-3, 3) in input 'idx'");
  int64_t low[4] = {0, -4, 2, -1};
  ASSERT_EQ(pd_buffer_write(idx, PD_DTYPE_I64, 1, shape, low, sizeof(low)),
            PD_OK);
  EXPECT_EQ(pd_function_run(lookup), PD_ERROR_CHECK_FAILED);
  EXPECT_STREQ(pd_last_error(), "node '/tok/Gather' (op Gather): index -4 "
                                "out of range [-3, 3) in input 'idx'");
  // In range (negative ids wrap): the call runs.
  int64_t good[4] = {-3, 2, 0, -1};
  ASSERT_EQ(pd_buffer_write(idx, PD_DTYPE_I64, 1, shape, good, sizeof(good)),
            PD_OK);
  EXPECT_EQ(pd_function_run(lookup), PD_ERROR_INTERNAL);
  EXPECT_STREQ(pd_last_error(),
               "function 'lookup': cuda test program: failing on purpose");
  pd_bundle_close(bundle);
}

// The device-side status record of a compiled cuda bundle, faked by
// GpuTestProgram.c's `lookup` (device record in device memory, copied to
// program.so's host record after the call): without `data_index_checks`
// the host does not check first, so each error is the record's, decoded
// by the runtime into the CPU bundle's message; the first failing check
// wins, and the record is empty again for the next call.
TEST(GpuRuntime, DeviceStatusRecordReachesTheMessage) {
  std::string bin;
  json manifest = pipedream::test::chainTrainingManifest(2, bin);
  manifest["functions"].push_back(
      {{"name", "lookup"},
       {"symbol", "lookup"},
       {"kind", "inference"},
       {"buffers",
        {{{"name", "idx"}, {"role", "input"}, {"dtype", "i64"},
          {"shape", {4}}}}}});
  TempDir dir;
  makeCudaBundle(dir.path(), manifest, bin);
  pd_bundle *bundle = nullptr;
  ASSERT_EQ(pd_bundle_open(dir.path().c_str(), &bundle), PD_OK)
      << pd_last_error();
  pd_function *lookup = nullptr;
  ASSERT_EQ(pd_function_lookup(bundle, "lookup", &lookup), PD_OK);
  pd_buffer *idx = nullptr;
  ASSERT_EQ(pd_function_find_buffer(lookup, "idx", &idx), PD_OK);
  int64_t shape[1] = {4};
  auto run = [&](std::vector<int64_t> values) {
    EXPECT_EQ(pd_buffer_write(idx, PD_DTYPE_I64, 1, shape, values.data(),
                              values.size() * sizeof(int64_t)),
              PD_OK);
    return pd_function_run(lookup);
  };
  // Both checks fail; the first (check id 0) is reported.
  EXPECT_EQ(run({0, 500, 2, -1}), PD_ERROR_CHECK_FAILED);
  EXPECT_STREQ(pd_last_error(), "node '/tok/Gather' (op Gather): index 500 "
                                "out of range [-61, 61) in input 'idx'");
  // Only the second check (id 1) fails: its names, its bound.
  EXPECT_EQ(run({0, -4, 2, -1}), PD_ERROR_CHECK_FAILED);
  EXPECT_STREQ(pd_last_error(),
               "node '/g' (op GatherElements): index -4 out of range [-3, "
               "3) in input 'indices'");
  // In range (negative ids wrap): the call succeeds, the record was taken.
  EXPECT_EQ(run({-3, 2, 0, -1}), PD_OK) << pd_last_error();
  EXPECT_EQ(run({-62, 0, 0, 0}), PD_ERROR_CHECK_FAILED);
  EXPECT_STREQ(pd_last_error(), "node '/tok/Gather' (op Gather): index -62 "
                                "out of range [-61, 61) in input 'idx'");
  pd_bundle_close(bundle);
}

TEST(GpuRuntime, TwoStagePipelineOnOneGpuEqualsCpuTraining) {
  ChainData data(12);
  std::string bin;
  TempDir cpu;
  pipedream::test::makeBundle(
      cpu.path(), pipedream::test::chainTrainingManifest(2, bin).dump(), bin);
  Trained reference = trainSingle(cpu.path(), data, 4);
  // "gpipe native": GpuTestProgram.c's hand-written native rank entries
  // (pipeline.ranks[r].entry) instead of the interpreter.
  for (std::string kind : {"1f1b", "gpipe", "gpipe native"}) {
    TempDir cuda;
    bool native = kind == "gpipe native";
    json manifest =
        pipedream::test::chainPipelineManifest(2, native ? "gpipe" : kind, bin);
    if (native)
      for (int r = 0; r < 2; ++r) {
        manifest["pipeline"]["ranks"][r]["entry"] =
            "gpu_chain_gpipe_rank" + std::to_string(r);
        manifest["pipeline"]["ranks"][r]["entry_abi"] = 1;
      }
    makeCudaBundle(cuda.path(), manifest, bin);
    std::vector<Copies> copies(2);
    Trained actual = trainPipeline(cuda.path(), 2, data, 4, &copies);
    EXPECT_EQ(actual.losses, reference.losses) << kind;
    EXPECT_EQ(actual.weights, reference.weights) << kind;
    // Registers are device-resident: the only downloads of the steps are
    // the last stage's per-micro-batch losses (f32), and every activation
    // and gradient goes device to device (one copy into the message, one
    // out of it) over the threads transport.
    const uint64_t m = pipedream::test::kChainMicrobatches, steps = 4;
    EXPECT_EQ(copies[0][2], 0u) << kind << ": rank 0 downloaded something";
    EXPECT_EQ(copies[1][2], steps * m) << kind;
    EXPECT_EQ(copies[1][3], steps * m * sizeof(float)) << kind;
    for (int r = 0; r < 2; ++r) {
      EXPECT_EQ(copies[r][4], steps * 2 * m) << kind << ", rank " << r;
      // Uploads: this rank's input per micro-batch (x or y), plus the
      // first upload of each of its persistent buffers (weight, momentum
      // and the two `updates` outputs, grad: once each at most).
      EXPECT_GE(copies[r][0], steps * m) << kind << ", rank " << r;
      EXPECT_LE(copies[r][0], steps * m + 5) << kind << ", rank " << r;
    }
  }
}

TEST(GpuRuntime, CudaPipelineLooksUpItsNativeEntries) {
  // cuda bundles run native rank entries too: a missing one is an error
  // at pd_rank_create, as for CPU bundles.
  std::string bin;
  json manifest = pipedream::test::chainPipelineManifest(2, "gpipe", bin);
  manifest["pipeline"]["ranks"][0]["entry"] = "no_such_rank_entry";
  manifest["pipeline"]["ranks"][1]["entry"] = "gpu_chain_gpipe_rank1";
  for (int r = 0; r < 2; ++r)
    manifest["pipeline"]["ranks"][r]["entry_abi"] = 1;
  TempDir cuda;
  makeCudaBundle(cuda.path(), manifest, bin);
  pd_bundle *bundle = nullptr;
  ASSERT_EQ(pd_bundle_open_rank(cuda.path().c_str(), 0, &bundle), PD_OK)
      << pd_last_error();
  pd_transport *transports[2] = {nullptr, nullptr};
  ASSERT_EQ(pd_transport_create_threads(2, transports), PD_OK);
  pd_rank *pipeline = nullptr;
  EXPECT_EQ(pd_rank_create(bundle, 0, transports[0], &pipeline), PD_ERROR_LOAD);
  EXPECT_NE(std::string(pd_last_error()).find("no symbol 'no_such_rank_entry'"),
            std::string::npos)
      << pd_last_error();
  pd_bundle_close(bundle);
  for (pd_transport *transport : transports)
    pd_transport_destroy(transport);
}

} // namespace
