//===- GpuFakeTest.cpp - the NCCL transport's runtime side, no GPU --------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// pipedream-gpu-fake-tests only (GpuFakeSupport.cpp's in-process "NCCL"):
// pd_transport_create_nccl bootstrapped over another transport, its error
// forwarding, and a 2-stage cuda pipeline trained over it, against the CPU
// bundle, its registers sent from and received into device memory. The
// real NCCL path is GpuDeviceTest.cpp's (one rank per GPU).
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

/// Both ranks' NCCL transports, bootstrapped over threads transports.
struct NcclPair {
  NcclPair() {
    EXPECT_EQ(pd_transport_create_threads(2, boot), PD_OK);
    std::thread other([&] { status[1] = pd_transport_create_nccl(boot[1], &nccl[1]); });
    status[0] = pd_transport_create_nccl(boot[0], &nccl[0]);
    other.join();
  }
  ~NcclPair() {
    for (int r = 0; r < 2; ++r) {
      pd_transport_destroy(nccl[r]);
      pd_transport_destroy(boot[r]);
    }
  }
  pd_transport *boot[2] = {nullptr, nullptr};
  pd_transport *nccl[2] = {nullptr, nullptr};
  pd_status status[2] = {PD_ERROR_INTERNAL, PD_ERROR_INTERNAL};
};

TEST(FakeNccl, BootstrapsOverAnotherTransport) {
  NcclPair pair;
  ASSERT_EQ(pair.status[0], PD_OK);
  ASSERT_EQ(pair.status[1], PD_OK);
  for (int r = 0; r < 2; ++r) {
    EXPECT_STREQ(pd_transport_kind(pair.nccl[r]), "nccl");
    EXPECT_EQ(pd_transport_rank(pair.nccl[r]), size_t(r));
    EXPECT_EQ(pd_transport_size(pair.nccl[r]), 2u);
  }
  float out[3] = {1.5f, -2.f, 4.f}, in[3] = {0, 0, 0};
  ASSERT_EQ(pd_transport_send(pair.nccl[0], 1, 5, out, sizeof(out)), PD_OK);
  ASSERT_EQ(pd_transport_recv(pair.nccl[1], 0, 5, in, sizeof(in)), PD_OK)
      << pd_last_error();
  EXPECT_EQ(std::vector<float>(in, in + 3), std::vector<float>(out, out + 3));
  // The support library's error reaches pd_last_error().
  ASSERT_EQ(pd_transport_send(pair.nccl[0], 1, 6, out, sizeof(out)), PD_OK);
  EXPECT_EQ(pd_transport_recv(pair.nccl[1], 0, 5, in, sizeof(in)),
            PD_ERROR_MISMATCH);
  EXPECT_STREQ(pd_last_error(),
               "fake nccl: message from rank 0 has tag 6, expected 5");
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

TEST(FakeNccl, PipelineOverNcclEqualsCpuTraining) {
  ChainData data(12);
  const int steps = 3;
  std::string bin;
  // Reference: the CPU training bundle.
  TempDir cpu;
  pipedream::test::makeBundle(
      cpu.path(), pipedream::test::chainTrainingManifest(2, bin).dump(), bin);
  std::vector<double> reference;
  {
    pd_bundle *bundle = nullptr;
    ASSERT_EQ(pd_bundle_open(cpu.path().c_str(), &bundle), PD_OK);
    pd_trainer *trainer = nullptr;
    ASSERT_EQ(pd_trainer_create(bundle, &trainer), PD_OK);
    for (int s = 0; s < steps; ++s) {
      double loss = 0;
      ASSERT_EQ(pd_trainer_step(trainer, data.arrays, 2, s * 8, &loss), PD_OK);
      reference.push_back(loss);
    }
    pd_bundle_close(bundle);
  }
  // The cuda pipeline bundle, one thread per rank, over NCCL.
  TempDir gpu;
  json manifest = pipedream::test::chainPipelineManifest(2, "1f1b", bin);
  manifest["target"] = "cuda";
  for (json &function : manifest["functions"])
    function["symbol"] = "cuda_" + function["symbol"].get<std::string>();
  pipedream::test::writeFile(gpu.path() + "/bundle.json", manifest.dump());
  pipedream::test::writeFile(gpu.path() + "/weights.bin", bin);
  std::filesystem::copy_file(PIPEDREAM_GPU_TEST_PROGRAM,
                             gpu.path() + "/program.so");
  NcclPair pair;
  ASSERT_EQ(pair.status[0], PD_OK);
  ASSERT_EQ(pair.status[1], PD_OK);
  std::vector<double> losses[2];
  std::string errors[2];
  // The fake device's copies of each rank during the steps:
  // {calls, bytes} to the device, to the host, device to device.
  using Get = void (*)(uint64_t *);
  auto fakeCopies =
      reinterpret_cast<Get>(dlsym(RTLD_DEFAULT, "pd_gpu_fake_copies"));
  ASSERT_NE(fakeCopies, nullptr);
  std::array<uint64_t, 6> copies[2] = {};
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      pd_bundle *bundle = nullptr;
      pd_rank *pipeline = nullptr;
      if (pd_bundle_open_rank(gpu.path().c_str(), r, &bundle) != PD_OK ||
          pd_rank_create(bundle, r, pair.nccl[r], &pipeline) != PD_OK) {
        errors[r] = pd_last_error();
        pd_transport_abort(pair.nccl[r], errors[r].c_str());
        pd_bundle_close(bundle);
        return;
      }
      std::array<uint64_t, 6> before{}, after{};
      fakeCopies(before.data());
      for (int s = 0; s < steps && errors[r].empty(); ++s) {
        double loss = 0;
        if (pd_rank_step(pipeline, data.arrays, 2, s * 8, &loss) != PD_OK)
          errors[r] = pd_last_error();
        losses[r].push_back(loss);
      }
      fakeCopies(after.data());
      for (size_t i = 0; i < after.size(); ++i)
        copies[r][i] = after[i] - before[i];
      pd_bundle_close(bundle);
    });
  for (auto &thread : threads)
    thread.join();
  EXPECT_EQ(errors[0], "");
  EXPECT_EQ(errors[1], "");
  EXPECT_EQ(losses[0], reference);
  EXPECT_EQ(losses[1], reference) << "the last stage knows the loss too";
  // NCCL takes the device registers directly: nothing is staged through
  // the host but the last stage's per-micro-batch losses (f32).
  const uint64_t m = pipedream::test::kChainMicrobatches;
  EXPECT_EQ(copies[0][2], 0u) << "rank 0 downloaded a register";
  EXPECT_EQ(copies[1][3], steps * m * sizeof(float));
}

/// The 2-stage chain as a cuda pipeline bundle in `dir` (the symbols of
/// GpuTestProgram.c's cuda functions), with evaluation programs.
void makeCudaChain(const std::string &dir, json manifest,
                   const std::string &bin) {
  manifest["target"] = "cuda";
  for (json &function : manifest["functions"])
    function["symbol"] = "cuda_" + function["symbol"].get<std::string>();
  pipedream::test::writeFile(dir + "/bundle.json", manifest.dump());
  pipedream::test::writeFile(dir + "/weights.bin", bin);
  std::filesystem::copy_file(PIPEDREAM_GPU_TEST_PROGRAM, dir + "/program.so");
}

TEST(FakeNccl, PipelineEvaluationEqualsCpu) {
  // 5 micro-batches evaluated, a step, evaluated again: the cuda pipeline
  // (registers in device memory, the loss downloaded) over NCCL and over
  // the threads transport equals the CPU pipeline.
  ChainData data(10);
  std::string bin;
  json manifest = pipedream::test::chainPipelineManifest(2, "1f1b", bin);
  pipedream::test::addChainEval(manifest);
  TempDir cpu, gpu;
  pipedream::test::makeBundle(cpu.path(), manifest.dump(), bin);
  makeCudaChain(gpu.path(), manifest, bin);
  auto body = [&](std::vector<double> &evals) {
    return [&](int r, pd_bundle *, pd_rank *p) -> std::string {
      for (int s = 0; s < 2; ++s) {
        double eval = 0, loss = 0;
        if (pd_rank_evaluate(p, data.arrays, 2, &eval) != PD_OK ||
            pd_rank_step(p, data.arrays, 2, 0, &loss) != PD_OK)
          return pd_last_error();
        if (r == 0)
          evals.push_back(eval);
      }
      return "";
    };
  };
  std::vector<double> reference, threads, nccl;
  EXPECT_EQ(pipedream::test::onEveryRank(cpu.path(), 2, body(reference)),
            std::vector<std::string>(2, ""));
  ASSERT_EQ(reference.size(), 2u);
  EXPECT_NE(reference[0], reference[1]) << "the step changed nothing";
  EXPECT_EQ(pipedream::test::onEveryRank(gpu.path(), 2, body(threads)),
            std::vector<std::string>(2, ""));
  EXPECT_EQ(threads, reference);
  NcclPair pair;
  ASSERT_EQ(pair.status[0], PD_OK);
  ASSERT_EQ(pair.status[1], PD_OK);
  std::string errors[2];
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r)
    ranks.emplace_back([&, r] {
      pd_bundle *bundle = nullptr;
      pd_rank *pipeline = nullptr;
      if (pd_bundle_open_rank(gpu.path().c_str(), r, &bundle) != PD_OK ||
          pd_rank_create(bundle, r, pair.nccl[r], &pipeline) != PD_OK)
        errors[r] = pd_last_error();
      else
        errors[r] = body(nccl)(r, bundle, pipeline);
      if (!errors[r].empty())
        pd_transport_abort(pair.nccl[r], errors[r].c_str());
      pd_bundle_close(bundle);
    });
  for (auto &thread : ranks)
    thread.join();
  EXPECT_EQ(errors[0], "");
  EXPECT_EQ(errors[1], "");
  EXPECT_EQ(nccl, reference);
}

TEST(FakeGpu, ReplicatedPipelineEqualsCpu) {
  // 2 stages x 2 replicas of the cuda chain over the threads transport
  // (which takes device memory): replica 1's messages go to replica 1's
  // ranks (world rank replica * K + pipeline rank), as on the CPU; the
  // steps' losses and the evaluations equal the CPU pipeline's.
  ChainData data(16);
  std::string bin;
  json manifest = pipedream::test::chainPipelineManifest(2, "1f1b", bin);
  pipedream::test::addChainEval(manifest);
  json &pipeline = manifest["pipeline"];
  pipeline["replicas"] = 2;
  pipeline["batch_size"] = 2 * pipeline["batch_size"].get<int>();
  pipeline["rank_layout"] = json::array();
  for (int w = 0; w < 4; ++w)
    pipeline["rank_layout"].push_back(
        {{"rank", w}, {"pipeline_rank", w % 2}, {"replica", w / 2}});
  TempDir cpu, gpu;
  pipedream::test::makeBundle(cpu.path(), manifest.dump(), bin);
  makeCudaChain(gpu.path(), manifest, bin);
  auto body = [&](std::vector<double> &losses) {
    return [&](int r, pd_bundle *, pd_rank *p) -> std::string {
      for (int s = 0; s < 2; ++s) {
        double eval = 0, loss = 0;
        if (pd_rank_step(p, data.arrays, 2, 0, &loss) != PD_OK ||
            pd_rank_evaluate(p, data.arrays, 2, &eval) != PD_OK)
          return pd_last_error();
        if (r == 0) {
          losses.push_back(loss);
          losses.push_back(eval);
        }
      }
      return "";
    };
  };
  std::vector<double> reference, device;
  EXPECT_EQ(pipedream::test::onEveryRank(cpu.path(), 4, body(reference)),
            std::vector<std::string>(4, ""));
  ASSERT_EQ(reference.size(), 4u);
  EXPECT_EQ(pipedream::test::onEveryRank(gpu.path(), 4, body(device)),
            std::vector<std::string>(4, ""));
  EXPECT_EQ(device, reference);
}

} // namespace
