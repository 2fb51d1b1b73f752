//===- PipelineTest.cpp - pipeline bundles, transports, rank executors ----===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Pipeline bundles (docs/Bundle.md "Pipeline bundles") of TestProgram.c's
// linear chain: every rank on its own thread over the in-process transport
// must equal single-rank training (pd_trainer on the equivalent training
// bundle) bitwise, for K = 2 and 4, GPipe and 1F1B; manifest validation
// names the rank and the instruction; a rank that never answers makes the
// others fail within the timeout, naming it.
//
//===----------------------------------------------------------------------===//

#include "pipedream/runtime.h"

#include "IdleWork.h"
#include "Manifest.h"
#include "PipelineUtil.h"
#include "TestUtil.h"
#include "Transport.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

using json = nlohmann::json;
using pipedream::runtime::Error;
using pipedream::runtime::Manifest;
using pipedream::runtime::parseManifest;
using pipedream::test::addChainEval;
using pipedream::test::chainPipelineManifest;
using pipedream::test::chainTrainingManifest;
using pipedream::test::chainWeightNames;
using pipedream::test::makeBundle;
using pipedream::test::onEveryRank;
using pipedream::test::TempDir;

namespace {

/// Data of `n` samples: x f32[n x 2], y f32[n].
struct ChainData {
  explicit ChainData(size_t n) : x(2 * n), y(n), xs{int64_t(n), 2}, ys{int64_t(n)} {
    for (size_t i = 0; i < 2 * n; ++i)
      x[i] = std::sin(0.7f * static_cast<float>(i) + 0.3f);
    for (size_t i = 0; i < n; ++i)
      y[i] = std::cos(1.3f * static_cast<float>(i));
    arrays[0] = {"x", PD_DTYPE_F32, 2, xs, x.data(), x.size() * sizeof(float)};
    arrays[1] = {"y", PD_DTYPE_F32, 1, ys, y.data(), y.size() * sizeof(float)};
  }
  std::vector<float> x, y;
  int64_t xs[2], ys[1];
  pd_named_array arrays[2];
};

struct Result {
  std::vector<double> losses;
  /// Weight bytes by name, after the last step.
  std::vector<std::string> weights;
};

/// Single-rank training of the chain with pd_trainer.
Result trainSingleRank(int stages, const ChainData &data, int steps) {
  TempDir dir;
  std::string bin;
  makeBundle(dir.path(), chainTrainingManifest(stages, bin).dump(), bin);
  pd_bundle *bundle = nullptr;
  Result result;
  EXPECT_EQ(pd_bundle_open(dir.path().c_str(), &bundle), PD_OK)
      << pd_last_error();
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
  for (const std::string &name : chainWeightNames(stages)) {
    pd_buffer *w = nullptr;
    EXPECT_EQ(pd_bundle_find_weight(bundle, name.c_str(), &w), PD_OK);
    result.weights.emplace_back(
        static_cast<const char *>(pd_buffer_const_data(w)),
        pd_buffer_num_bytes(w));
  }
  pd_bundle_close(bundle);
  return result;
}

/// Runs every rank of the pipeline bundle in `dir` on its own thread for
/// `steps` steps, then gathers the weights on rank 0. Returns rank 0's
/// losses and weights; `lossRankLosses` gets the last rank's.
Result trainPipeline(const std::string &dir, int ranks, const ChainData &data,
                     int steps, std::vector<double> *lossRankLosses = nullptr) {
  std::vector<pd_transport *> transports(ranks);
  EXPECT_EQ(pd_transport_create_threads(ranks, transports.data()), PD_OK);
  std::vector<std::vector<double>> losses(ranks);
  std::vector<std::string> errors(ranks);
  Result result;
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
      for (int s = 0; s < steps; ++s) {
        double loss = -1;
        if (pd_rank_step(pipeline, data.arrays, 2, s * 8, &loss) != PD_OK)
          break;
        losses[r].push_back(loss);
      }
      if (errors[r].empty() && losses[r].size() == size_t(steps) &&
          pd_rank_gather_weights(pipeline) != PD_OK)
        errors[r] = std::string("gather: ") + pd_last_error();
      else if (losses[r].size() != size_t(steps))
        errors[r] = std::string("step: ") + pd_last_error();
      if (r == 0)
        for (size_t w = 0; w < pd_bundle_weight_count(bundle); ++w) {
          pd_buffer *weight = pd_bundle_weight_at(bundle, w);
          const char *bytes =
              static_cast<const char *>(pd_buffer_const_data(weight));
          result.weights.emplace_back(bytes ? std::string(bytes, pd_buffer_num_bytes(weight))
                                            : std::string());
        }
      pd_bundle_close(bundle);
    });
  for (auto &thread : threads)
    thread.join();
  for (int r = 0; r < ranks; ++r) {
    EXPECT_EQ(errors[r], "") << "rank " << r;
    pd_transport_destroy(transports[r]);
  }
  result.losses = losses[0];
  if (lossRankLosses)
    *lossRankLosses = losses[ranks - 1];
  for (int r = 1; r + 1 < ranks; ++r)
    for (double loss : losses[r])
      EXPECT_TRUE(std::isnan(loss)) << "rank " << r << " knows no loss";
  return result;
}

struct ChainCase {
  int stages;
  const char *kind;
};

class PipelineEqualsSingleRank : public ::testing::TestWithParam<ChainCase> {};

TEST_P(PipelineEqualsSingleRank, Bitwise) {
  const ChainCase &c = GetParam();
  // 12 samples, batches of 8: the second step wraps around.
  ChainData data(12);
  const int steps = 4;
  Result reference = trainSingleRank(c.stages, data, steps);
  ASSERT_EQ(reference.losses.size(), size_t(steps));

  TempDir dir;
  std::string bin;
  makeBundle(dir.path(), chainPipelineManifest(c.stages, c.kind, bin).dump(),
             bin);
  std::vector<double> lastRank;
  Result pipeline = trainPipeline(dir.path(), c.stages, data, steps, &lastRank);
  ASSERT_EQ(pipeline.losses.size(), size_t(steps));
  for (int s = 0; s < steps; ++s) {
    EXPECT_EQ(pipeline.losses[s], reference.losses[s]) << "step " << s;
    EXPECT_EQ(lastRank[s], reference.losses[s]) << "step " << s;
  }
  // Training moved: the loss changes from step to step.
  EXPECT_NE(reference.losses[0], reference.losses[2]);
  ASSERT_EQ(pipeline.weights.size(), reference.weights.size());
  std::vector<std::string> names = chainWeightNames(c.stages);
  for (size_t w = 0; w < names.size(); ++w)
    EXPECT_EQ(pipeline.weights[w], reference.weights[w])
        << "weight " << names[w] << " differs from single-rank training";
}

INSTANTIATE_TEST_SUITE_P(
    Chain, PipelineEqualsSingleRank,
    ::testing::Values(ChainCase{2, "1f1b"}, ChainCase{2, "gpipe"},
                      ChainCase{4, "1f1b"}, ChainCase{4, "gpipe"}),
    [](const ::testing::TestParamInfo<ChainCase> &info) {
      return "K" + std::to_string(info.param.stages) + "_" + info.param.kind;
    });

//===----------------------------------------------------------------------===//
// Rank bundles
//===----------------------------------------------------------------------===//

TEST(PipelineBundle, RankHoldsOnlyItsFunctionsAndBuffers) {
  TempDir dir;
  std::string bin;
  makeBundle(dir.path(), chainPipelineManifest(4, "1f1b", bin).dump(), bin);
  pd_bundle *bundle = nullptr;
  ASSERT_EQ(pd_bundle_open_rank(dir.path().c_str(), 1, &bundle), PD_OK)
      << pd_last_error();
  EXPECT_EQ(pd_bundle_rank(bundle), 1);
  EXPECT_TRUE(pd_bundle_is_pipeline(bundle));
  EXPECT_EQ(pd_bundle_pipeline_ranks(bundle), 4u);
  EXPECT_STREQ(pd_bundle_pipeline_schedule(bundle), "1f1b");
  EXPECT_EQ(pd_bundle_pipeline_microbatches(bundle), 4u);
  EXPECT_EQ(pd_bundle_pipeline_batch_size(bundle), 8u);
  EXPECT_EQ(pd_bundle_pipeline_loss_rank(bundle), 3u);
  EXPECT_STREQ(pd_bundle_pipeline_input_at(bundle, 0), "x");
  EXPECT_STREQ(pd_bundle_pipeline_labels(bundle), "y");
  ASSERT_EQ(pd_bundle_function_count(bundle), 3u);
  EXPECT_STREQ(pd_function_name(pd_bundle_function_at(bundle, 0)), "stage1_F");
  // Every weight is listed, only W1 is here.
  ASSERT_EQ(pd_bundle_weight_count(bundle), 4u);
  for (size_t w = 0; w < 4; ++w) {
    pd_buffer *weight = pd_bundle_weight_at(bundle, w);
    EXPECT_EQ(pd_buffer_const_data(weight) != nullptr,
              std::string(pd_buffer_name(weight)) == "W1")
        << pd_buffer_name(weight);
  }
  pd_buffer *w0 = pd_bundle_weight_at(bundle, 0);
  float values[4];
  int64_t shape[2] = {2, 2};
  EXPECT_EQ(pd_buffer_read(w0, PD_DTYPE_F32, 2, shape, values, sizeof(values)),
            PD_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pd_last_error()).find("not on this rank"),
            std::string::npos)
      << pd_last_error();
  // grad:W1 and momentum_buffer:W1 only.
  EXPECT_EQ(pd_bundle_persistent_count(bundle), 4u + 2u);
  pd_trainer *trainer = nullptr;
  EXPECT_EQ(pd_trainer_create(bundle, &trainer), PD_ERROR_UNSUPPORTED);
  pd_bundle_close(bundle);

  EXPECT_EQ(pd_bundle_open_rank(dir.path().c_str(), 4, &bundle),
            PD_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pd_last_error()).find("rank 4 does not exist"),
            std::string::npos)
      << pd_last_error();
}

TEST(PipelineBundle, WholeBundleRunsARankToo) {
  // pd_bundle_open (every function) works for each rank as well.
  TempDir dir;
  std::string bin;
  makeBundle(dir.path(), chainPipelineManifest(2, "1f1b", bin).dump(), bin);
  ChainData data(8);
  pd_transport *t[2];
  ASSERT_EQ(pd_transport_create_threads(2, t), PD_OK);
  std::vector<double> loss(2, 0);
  std::vector<pd_status> status(2, PD_OK);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      pd_bundle *bundle = nullptr;
      pd_rank *p = nullptr;
      status[r] = pd_bundle_open(dir.path().c_str(), &bundle);
      if (status[r] == PD_OK)
        status[r] = pd_rank_create(bundle, r, t[r], &p);
      if (status[r] == PD_OK)
        status[r] = pd_rank_step(p, data.arrays, 2, 0, &loss[r]);
      pd_bundle_close(bundle);
    });
  for (auto &thread : threads)
    thread.join();
  EXPECT_EQ(status[0], PD_OK);
  EXPECT_EQ(status[1], PD_OK);
  EXPECT_EQ(loss[0], loss[1]);
  EXPECT_GT(loss[0], 0);
  pd_transport_destroy(t[0]);
  pd_transport_destroy(t[1]);
}

// The pd_pipeline names of API version 5 (runtime.h, "Deprecated names")
// are the pd_rank functions: the same rank, batch, step and loss.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
TEST(PipelineBundle, DeprecatedPipelineNamesAreTheRankFunctions) {
  TempDir dir;
  std::string bin;
  makeBundle(dir.path(), chainPipelineManifest(2, "1f1b", bin).dump(), bin);
  ChainData data(8);
  pd_transport *t[2];
  ASSERT_EQ(pd_transport_create_threads(2, t), PD_OK);
  std::vector<double> loss(2, 0), oldLoss(2, 0);
  std::vector<pd_status> status(2, PD_OK);
  std::vector<size_t> index(2, 9), batch(2, 0);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      pd_bundle *bundle = nullptr;
      pd_pipeline *p = nullptr;
      status[r] = pd_bundle_open_rank(dir.path().c_str(), r, &bundle);
      if (status[r] == PD_OK)
        status[r] = pd_pipeline_create(bundle, r, t[r], &p);
      if (status[r] == PD_OK) {
        index[r] = pd_pipeline_rank(p);
        batch[r] = pd_pipeline_batch_size(p);
        status[r] = pd_pipeline_step(p, data.arrays, 2, 0, &oldLoss[r]);
      }
      pd_pipeline_destroy(p);
      pd_rank *q = nullptr;
      if (status[r] == PD_OK)
        status[r] = pd_rank_create(bundle, r, t[r], &q);
      if (status[r] == PD_OK) {
        EXPECT_EQ(pd_rank_batch_size(q), batch[r]);
        status[r] = pd_rank_step(q, data.arrays, 2, 0, &loss[r]);
      }
      pd_bundle_close(bundle);
    });
  for (auto &thread : threads)
    thread.join();
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(status[r], PD_OK) << r;
    EXPECT_EQ(index[r], size_t(r));
    EXPECT_GT(batch[r], 0u);
  }
  // The second step starts from the first one's update: a different loss,
  // computed by the same program.
  EXPECT_GT(oldLoss[0], 0);
  EXPECT_NE(loss[0], oldLoss[0]);
  pd_transport_destroy(t[0]);
  pd_transport_destroy(t[1]);
}
#pragma GCC diagnostic pop

TEST(PipelineBundle, CreateChecksRankAndTransport) {
  TempDir dir;
  std::string bin;
  makeBundle(dir.path(), chainPipelineManifest(2, "1f1b", bin).dump(), bin);
  pd_bundle *bundle = nullptr;
  ASSERT_EQ(pd_bundle_open_rank(dir.path().c_str(), 0, &bundle), PD_OK);
  pd_transport *three[3];
  ASSERT_EQ(pd_transport_create_threads(3, three), PD_OK);
  pd_rank *p = nullptr;
  EXPECT_EQ(pd_rank_create(bundle, 0, three[0], &p), PD_ERROR_MISMATCH);
  EXPECT_NE(std::string(pd_last_error())
                .find("the pipeline has 2 ranks but the transport 3"),
            std::string::npos)
      << pd_last_error();
  EXPECT_EQ(pd_rank_create(bundle, 1, three[1], &p), PD_ERROR_INVALID_ARGUMENT);
  for (pd_transport *t : three)
    pd_transport_destroy(t);
  pd_bundle_close(bundle);

  TempDir training;
  makeBundle(training.path(), chainTrainingManifest(2, bin).dump(), bin);
  EXPECT_EQ(pd_bundle_open_rank(training.path().c_str(), 0, &bundle),
            PD_ERROR_UNSUPPORTED);
  EXPECT_NE(std::string(pd_last_error()).find("not a pipeline bundle"),
            std::string::npos);
}

TEST(PipelineBundle, DataChecks) {
  TempDir dir;
  std::string bin;
  makeBundle(dir.path(), chainPipelineManifest(2, "1f1b", bin).dump(), bin);
  pd_bundle *bundle = nullptr;
  ASSERT_EQ(pd_bundle_open_rank(dir.path().c_str(), 1, &bundle), PD_OK);
  pd_transport *t[2];
  ASSERT_EQ(pd_transport_create_threads(2, t), PD_OK);
  pd_rank *p = nullptr;
  ASSERT_EQ(pd_rank_create(bundle, 1, t[1], &p), PD_OK) << pd_last_error();
  ChainData data(8);
  size_t samples = 0;
  EXPECT_EQ(pd_rank_check_data(p, data.arrays, 2, &samples), PD_OK);
  EXPECT_EQ(samples, 8u);
  // Every rank checks every array: rank 1 reads only y but refuses no x.
  EXPECT_EQ(pd_rank_check_data(p, data.arrays + 1, 1, &samples),
            PD_ERROR_NOT_FOUND);
  EXPECT_STREQ(pd_last_error(), "training data: missing array 'x' f32[Nx2] "
                                "(arrays given: y)");
  int64_t bad[2] = {8, 3};
  pd_named_array wrong = data.arrays[0];
  wrong.shape = bad;
  pd_named_array arrays[2] = {wrong, data.arrays[1]};
  EXPECT_EQ(pd_rank_check_data(p, arrays, 2, &samples), PD_ERROR_MISMATCH);
  EXPECT_STREQ(pd_last_error(),
               "training data: array 'x' is f32[8x3], but the pipeline reads "
               "input 'x' as f32[Nx2] (N samples)");
  pd_transport_destroy(t[0]);
  pd_transport_destroy(t[1]);
  pd_bundle_close(bundle);
}

// Evaluation (pd_rank_evaluate): the ranks' evaluation programs run the
// forward of each micro-batch; before any step, the mean over the step's 8
// samples is step 1's loss (the same F on the same weights, through the
// step's program), bitwise; evaluating between steps changes none of
// them; the loss is on rank 0 and the loss rank only.
TEST(PipelineBundle, EvaluateIsTheForwardsMeanAndChangesNothing) {
  for (int stages : {2, 4}) {
    TempDir dir, plainDir;
    std::string bin;
    json manifest = chainPipelineManifest(stages, "1f1b", bin);
    makeBundle(plainDir.path(), manifest.dump(), bin);
    addChainEval(manifest);
    makeBundle(dir.path(), manifest.dump(), bin);
    ChainData data(8);
    Result plain = trainPipeline(plainDir.path(), stages, data, 3);
    std::vector<std::vector<double>> evals(stages), losses(stages);
    std::vector<std::string> errors = onEveryRank(
        dir.path(), stages, [&](int r, pd_bundle *, pd_rank *p) -> std::string {
          if (!pd_rank_can_evaluate(p))
            return "cannot evaluate";
          for (int s = 0; s < 3; ++s) {
            double eval = 0, loss = 0;
            if (pd_rank_evaluate(p, data.arrays, 2, &eval) != PD_OK ||
                pd_rank_step(p, data.arrays, 2, s * 8, &loss) != PD_OK)
              return pd_last_error();
            evals[r].push_back(eval);
            losses[r].push_back(loss);
          }
          return "";
        });
    for (int r = 0; r < stages; ++r)
      EXPECT_EQ(errors[r], "") << "rank " << r;
    ASSERT_EQ(evals[0].size(), 3u);
    // Every step's data is all 8 samples: the evaluation before step s is
    // step s's loss.
    EXPECT_EQ(losses[0], plain.losses) << stages << " stages";
    for (int s = 0; s < 3; ++s)
      EXPECT_EQ(evals[0][s], losses[0][s]) << "step " << s + 1;
    EXPECT_EQ(evals[stages - 1], evals[0]);
    for (int r = 1; r + 1 < stages; ++r)
      EXPECT_TRUE(std::isnan(evals[r][0])) << "rank " << r;
  }
}

/// `rank_layout` of K pipeline ranks on R replicas (rank = replica*K + s).
json replicaLayout(int k, int r);

TEST(PipelineBundle, EvaluateSplitsMicrobatchesOverReplicas) {
  // 5 micro-batches of 2 samples: 3 on replica 0, 2 on replica 1; the sum
  // over the replicas' loss ranks on rank 0 is the unreplicated mean.
  ChainData data(10);
  for (int replicas : {2, 3}) {
    TempDir dir, plainDir;
    std::string bin;
    json manifest = chainPipelineManifest(2, "1f1b", bin);
    addChainEval(manifest);
    makeBundle(plainDir.path(), manifest.dump(), bin);
    manifest["pipeline"]["replicas"] = replicas;
    manifest["pipeline"]["batch_size"] =
        replicas * manifest["pipeline"]["batch_size"].get<int>();
    manifest["pipeline"]["rank_layout"] = replicaLayout(2, replicas);
    makeBundle(dir.path(), manifest.dump(), bin);
    double plain = 0;
    std::vector<std::string> errors = onEveryRank(
        plainDir.path(), 2, [&](int r, pd_bundle *, pd_rank *p) -> std::string {
          double loss = 0;
          if (pd_rank_evaluate(p, data.arrays, 2, &loss) != PD_OK)
            return pd_last_error();
          if (r == 0)
            plain = loss;
          return "";
        });
    ASSERT_EQ(errors, std::vector<std::string>(2, ""));
    const int world = 2 * replicas;
    // `zeroReplica1`: replica 1's stage-0 weight W0 zeroed, which changes
    // the loss of the micro-batches replica 1 evaluates (1 and 4, or 1).
    auto evaluate = [&](bool zeroReplica1) {
      std::vector<double> losses(world);
      std::vector<std::string> errors = onEveryRank(
          dir.path(), world,
          [&](int r, pd_bundle *bundle, pd_rank *p) -> std::string {
            pd_buffer *w0 = nullptr;
            if (zeroReplica1 && r == 2) {
              if (pd_bundle_find_weight(bundle, "W0", &w0) != PD_OK)
                return pd_last_error();
              std::memset(pd_buffer_data(w0), 0, pd_buffer_num_bytes(w0));
            }
            return pd_rank_evaluate(p, data.arrays, 2, &losses[r]) == PD_OK
                       ? ""
                       : pd_last_error();
          });
      EXPECT_EQ(errors, std::vector<std::string>(world, "")) << replicas;
      return losses;
    };
    std::vector<double> losses = evaluate(false);
    EXPECT_NEAR(losses[0], plain, 1e-12 * std::abs(plain)) << replicas;
    // Rank 0 alone has the whole mean: each loss rank holds a share.
    for (int r = 1; r < world; ++r)
      EXPECT_TRUE(std::isnan(losses[r])) << "rank " << r;
    double changed = evaluate(true)[0];
    EXPECT_TRUE(std::isfinite(changed));
    EXPECT_GT(std::abs(changed - plain), 1e-6 * std::abs(plain)) << replicas;
  }
}

TEST(PipelineBundle, EvaluateErrors) {
  TempDir dir, plainDir;
  std::string bin;
  json manifest = chainPipelineManifest(2, "1f1b", bin);
  makeBundle(plainDir.path(), manifest.dump(), bin);
  addChainEval(manifest);
  makeBundle(dir.path(), manifest.dump(), bin);
  ChainData data(8), odd(3);
  std::vector<std::string> errors = onEveryRank(
      plainDir.path(), 2, [&](int, pd_bundle *, pd_rank *p) -> std::string {
        double loss = 0;
        if (pd_rank_can_evaluate(p))
          return "can evaluate";
        if (pd_rank_evaluate(p, data.arrays, 2, &loss) != PD_ERROR_UNSUPPORTED)
          return "evaluated";
        std::string message = pd_last_error();
        if (message.find("the pipeline has no evaluation program: compile it "
                         "with pipedream-compile --evaluate") ==
            std::string::npos)
          return message;
        return std::isnan(loss) ? "" : "loss set";
      });
  EXPECT_EQ(errors, std::vector<std::string>(2, ""));
  // Three samples are not micro-batches of 2: every rank refuses alike.
  errors = onEveryRank(
      dir.path(), 2, [&](int, pd_bundle *, pd_rank *p) -> std::string {
        double loss = 0;
        if (pd_rank_evaluate(p, odd.arrays, 2, &loss) !=
            PD_ERROR_INVALID_ARGUMENT)
          return "evaluated";
        std::string message = pd_last_error();
        if (message.find("3 samples, not a multiple of the micro-batch size 2 "
                         "(every sample counts once)") == std::string::npos)
          return message;
        return "";
      });
  EXPECT_EQ(errors, std::vector<std::string>(2, ""));
  EXPECT_EQ(pd_rank_evaluate(nullptr, data.arrays, 2, nullptr),
            PD_ERROR_INVALID_ARGUMENT);
}

//===----------------------------------------------------------------------===//
// Transports, timeouts, failures
//===----------------------------------------------------------------------===//

TEST(ThreadsTransport, MatchesByPeerAndTag) {
  pd_transport *t[3];
  ASSERT_EQ(pd_transport_create_threads(3, t), PD_OK);
  EXPECT_EQ(pd_transport_rank(t[2]), 2u);
  EXPECT_EQ(pd_transport_size(t[2]), 3u);
  EXPECT_STREQ(pd_transport_kind(t[0]), "threads");
  int a = 1, b = 2, c = 3, got = 0;
  ASSERT_EQ(pd_transport_send(t[1], 0, 5, &a, sizeof(a)), PD_OK);
  ASSERT_EQ(pd_transport_send(t[1], 0, 6, &b, sizeof(b)), PD_OK);
  ASSERT_EQ(pd_transport_send(t[2], 0, 5, &c, sizeof(c)), PD_OK);
  EXPECT_EQ(pd_transport_recv(t[0], 2, 5, &got, sizeof(got)), PD_OK);
  EXPECT_EQ(got, 3);
  EXPECT_EQ(pd_transport_recv(t[0], 1, 6, &got, sizeof(got)), PD_OK);
  EXPECT_EQ(got, 2);
  EXPECT_EQ(pd_transport_recv(t[0], 1, 5, &got, sizeof(got)), PD_OK);
  EXPECT_EQ(got, 1);
  ASSERT_EQ(pd_transport_send(t[1], 0, 7, &a, sizeof(a)), PD_OK);
  double wide = 0;
  EXPECT_EQ(pd_transport_recv(t[0], 1, 7, &wide, sizeof(wide)),
            PD_ERROR_MISMATCH);
  EXPECT_STREQ(pd_last_error(),
               "the message from rank 1 with tag 7 has 4 bytes, expected 8");
  EXPECT_EQ(pd_transport_send(t[0], 0, 1, &a, sizeof(a)),
            PD_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(pd_transport_send(t[0], 3, 1, &a, sizeof(a)),
            PD_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(pd_transport_set_timeout(t[0], 0), PD_ERROR_INVALID_ARGUMENT);
  for (pd_transport *x : t)
    pd_transport_destroy(x);
}

/// Messages in parts (Transport.h, the message groups of MessageGroups.h):
/// the parts' bytes in order, whatever the parts on either side.
TEST(ThreadsTransport, MessagesInParts) {
  using pipedream::runtime::MessagePart;
  pd_transport *t[2];
  ASSERT_EQ(pd_transport_create_threads(2, t), PD_OK);
  int a[3] = {1, 2, 3}, b[2] = {4, 5}, whole[5] = {6, 7, 8, 9, 10};
  MessagePart sent[] = {{a, sizeof(a)}, {nullptr, 0}, {b, sizeof(b)}};
  ASSERT_EQ(pipedream::runtime::sendParts(*t[1], 0, 1, sent, 3), PD_OK);
  ASSERT_EQ(pipedream::runtime::sendParts(*t[1], 0, 2, sent, 3), PD_OK);
  ASSERT_EQ(pd_transport_send(t[1], 0, 3, whole, sizeof(whole)), PD_OK);
  int x[1] = {0}, y[4] = {0, 0, 0, 0}, got[5] = {0, 0, 0, 0, 0};
  MessagePart received[] = {{x, sizeof(x)}, {y, sizeof(y)}};
  ASSERT_EQ(pipedream::runtime::recvParts(*t[0], 1, 1, received, 2), PD_OK);
  EXPECT_EQ(x[0], 1);
  EXPECT_EQ(std::vector<int>(y, y + 4), (std::vector<int>{2, 3, 4, 5}));
  ASSERT_EQ(pd_transport_recv(t[0], 1, 2, got, sizeof(got)), PD_OK);
  EXPECT_EQ(std::vector<int>(got, got + 5), (std::vector<int>{1, 2, 3, 4, 5}));
  ASSERT_EQ(pipedream::runtime::recvParts(*t[0], 1, 3, received, 2), PD_OK);
  EXPECT_EQ(x[0], 6);
  EXPECT_EQ(std::vector<int>(y, y + 4), (std::vector<int>{7, 8, 9, 10}));
  // Parts adding up to another size than the message's: a mismatch.
  ASSERT_EQ(pipedream::runtime::sendParts(*t[1], 0, 4, sent, 3), PD_OK);
  MessagePart fewer[] = {{x, sizeof(x)}, {y, 2 * sizeof(int)}};
  EXPECT_EQ(pipedream::runtime::recvParts(*t[0], 1, 4, fewer, 2),
            PD_ERROR_MISMATCH);
  EXPECT_STREQ(pd_last_error(),
               "the message from rank 1 with tag 4 has 20 bytes, expected 12");
  for (pd_transport *z : t)
    pd_transport_destroy(z);
}

TEST(ThreadsTransport, AllReduceSumsOverTheGroup) {
  pd_transport *t[3];
  ASSERT_EQ(pd_transport_create_threads(3, t), PD_OK);
  // Ranks 0 and 2 sum {r + 0.5, 10 r}; then all three sum doubles.
  std::vector<std::array<float, 2>> pair(3);
  std::vector<double> all(3);
  std::vector<pd_status> status(3, PD_OK), status3(3, PD_OK);
  std::vector<std::thread> threads;
  for (size_t r = 0; r < 3; ++r)
    threads.emplace_back([&, r] {
      if (r != 1) {
        const size_t group[] = {0, 2};
        pair[r] = {r + 0.5f, 10.0f * r};
        status[r] = pd_transport_all_reduce(t[r], group, 2, pair[r].data(), 2,
                                            PD_DTYPE_F32);
      }
      const size_t everyone[] = {0, 1, 2};
      all[r] = 0.1 * (r + 1);
      status3[r] = pd_transport_all_reduce(t[r], everyone, 3, &all[r], 1,
                                           PD_DTYPE_F64);
    });
  for (auto &thread : threads)
    thread.join();
  for (size_t r : {0, 2}) {
    EXPECT_EQ(status[r], PD_OK);
    EXPECT_EQ(pair[r][0], 0.5f + 2.5f);
    EXPECT_EQ(pair[r][1], 20.0f);
  }
  for (size_t r = 0; r < 3; ++r) {
    EXPECT_EQ(status3[r], PD_OK);
    EXPECT_EQ(all[r], (0.1 + 0.2) + 0.3) << "rank " << r; // rank order
  }
  // Bad groups.
  float x = 1;
  const size_t notMine[] = {1, 2};
  EXPECT_EQ(pd_transport_all_reduce(t[0], notMine, 2, &x, 1, PD_DTYPE_F32),
            PD_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pd_last_error()).find("this one (0) among them"),
            std::string::npos)
      << pd_last_error();
  const size_t descending[] = {2, 0};
  EXPECT_EQ(pd_transport_all_reduce(t[0], descending, 2, &x, 1, PD_DTYPE_F32),
            PD_ERROR_INVALID_ARGUMENT);
  const size_t ok[] = {0, 1};
  EXPECT_EQ(pd_transport_all_reduce(t[0], ok, 2, &x, 1, PD_DTYPE_I64),
            PD_ERROR_UNSUPPORTED);
  // A peer that never joins: the timeout.
  ASSERT_EQ(pd_transport_set_timeout(t[0], 0.2), PD_OK);
  EXPECT_EQ(pd_transport_all_reduce(t[0], ok, 2, &x, 1, PD_DTYPE_F32),
            PD_ERROR_TIMEOUT);
  EXPECT_NE(std::string(pd_last_error()).find("waiting for the all-reduce"),
            std::string::npos)
      << pd_last_error();
  for (pd_transport *x : t)
    pd_transport_destroy(x);
}

TEST(UserTransport, WithoutAllReduceIsUnsupported) {
  pd_transport_ops ops{};
  ops.send = [](void *, size_t, int64_t, const void *, size_t, double) {
    return PD_OK;
  };
  ops.recv = [](void *, size_t, int64_t, void *, size_t, double) {
    return PD_OK;
  };
  pd_transport *t = nullptr;
  ASSERT_EQ(pd_transport_create(&ops, nullptr, 0, 2, &t), PD_OK);
  const size_t group[] = {0, 1};
  float x = 1;
  EXPECT_EQ(pd_transport_all_reduce(t, group, 2, &x, 1, PD_DTYPE_F32),
            PD_ERROR_UNSUPPORTED);
  EXPECT_STREQ(pd_last_error(),
               "the custom transport has no all-reduce (pd_transport_ops."
               "all_reduce), which pipelines with shared weights need");
  pd_transport_destroy(t);
}

// A receive that waits runs the thread's idle work (IdleWork.h: a pipeline
// rank packs the step's weights ahead), a unit at a time, looking for the
// message between units, until the work says none is left; then the work
// is cleared. Here the third unit posts the awaited message (rank 1's
// send from this thread: threads-transport sends never block).
pd_transport *gIdleTransport = nullptr;
int gIdleUnits = 0;

int32_t idleUnit() {
  ++gIdleUnits;
  if (gIdleUnits < 3)
    return 1;
  int value = 42;
  EXPECT_EQ(pd_transport_send(gIdleTransport, 0, 9, &value, sizeof(value)),
            PD_OK);
  return 0;
}

TEST(ThreadsTransport, WaitingReceiveRunsIdleWork) {
  pd_transport *t[2];
  ASSERT_EQ(pd_transport_create_threads(2, t), PD_OK);
  gIdleTransport = t[1];
  gIdleUnits = 0;
  pipedream::runtime::setIdleWork(idleUnit);
  // The message came while the receive ran its last unit: it must look
  // again before it sleeps (else it sleeps until the timeout's last look).
  ASSERT_EQ(pd_transport_set_timeout(t[0], 30), PD_OK);
  int got = 0;
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(pd_transport_recv(t[0], 1, 9, &got, sizeof(got)), PD_OK);
  EXPECT_LT(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count(),
      15)
      << "the receive slept until its timeout";
  EXPECT_EQ(got, 42);
  EXPECT_EQ(gIdleUnits, 3);
  EXPECT_EQ(pipedream::runtime::tIdleWork, nullptr) << "not cleared";
  // Cleared: a later wait runs nothing.
  int value = 7;
  ASSERT_EQ(pd_transport_send(t[1], 0, 10, &value, sizeof(value)), PD_OK);
  EXPECT_EQ(pd_transport_recv(t[0], 1, 10, &got, sizeof(got)), PD_OK);
  EXPECT_EQ(gIdleUnits, 3);
  pd_transport_destroy(t[0]);
  pd_transport_destroy(t[1]);
}

TEST(ThreadsTransport, TimeoutNamesThePeer) {
  pd_transport *t[2];
  ASSERT_EQ(pd_transport_create_threads(2, t), PD_OK);
  ASSERT_EQ(pd_transport_set_timeout(t[0], 0.2), PD_OK);
  int got = 0;
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(pd_transport_recv(t[0], 1, 3, &got, sizeof(got)),
            PD_ERROR_TIMEOUT);
  double seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                       .count();
  EXPECT_GE(seconds, 0.19);
  EXPECT_LT(seconds, 5);
  EXPECT_NE(std::string(pd_last_error())
                .find("timed out after 0.2 s waiting for rank 1 (tag 3, 4 "
                      "bytes)"),
            std::string::npos)
      << pd_last_error();
  pd_transport_destroy(t[0]);
  pd_transport_destroy(t[1]);
}

// Rank 2 waits for rank 1, which waits for rank 0, which is stuck: rank 2's
// shorter timeout expires first, but it is rank 1's report, naming rank 0,
// that reaches rank 2 (a timeout names the stuck rank, not one that is only
// waiting for it).
TEST(ThreadsTransport, TimeoutInAChainNamesTheStuckRank) {
  pd_transport *t[3];
  ASSERT_EQ(pd_transport_create_threads(3, t), PD_OK);
  // Rank 2's timeout must run out while rank 1 waits (rank 1's longer):
  // 1 s leaves a loaded machine (a full test run on 2 cores) time to start
  // rank 1's wait; with 0.3 s it sometimes had not.
  ASSERT_EQ(pd_transport_set_timeout(t[1], 4.0), PD_OK);
  ASSERT_EQ(pd_transport_set_timeout(t[2], 1.0), PD_OK);
  pd_status rank1 = PD_OK;
  std::string rank1Error;
  std::thread waiter([&] {
    int got = 0;
    rank1 = pd_transport_recv(t[1], 0, 5, &got, sizeof(got));
    rank1Error = pd_last_error();
    // What a rank does when its step fails (pipedream-run, pd_rank).
    pd_transport_abort(t[1], rank1Error.c_str());
  });
  // Rank 1 is waiting long before rank 2's 1 s has passed.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  int got = 0;
  auto start = std::chrono::steady_clock::now();
  pd_status rank2 = pd_transport_recv(t[2], 1, 6, &got, sizeof(got));
  std::string rank2Error = pd_last_error();
  double seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                       .count();
  waiter.join();
  EXPECT_EQ(rank1, PD_ERROR_TIMEOUT);
  EXPECT_NE(rank1Error.find("timed out after 4 s waiting for rank 0"),
            std::string::npos)
      << rank1Error;
  EXPECT_EQ(rank2, PD_ERROR_PEER);
  EXPECT_NE(rank2Error.find("rank 1 failed: "), std::string::npos)
      << rank2Error;
  EXPECT_NE(rank2Error.find("waiting for rank 0"), std::string::npos)
      << rank2Error;
  EXPECT_LT(seconds, 30);
  for (pd_transport *e : t)
    pd_transport_destroy(e);
}

// Two ranks waiting for each other (programs that do not match) both time
// out: a cycle of waits is reported, not waited on for ever.
TEST(ThreadsTransport, CycleOfWaitsTimesOut) {
  pd_transport *t[2];
  ASSERT_EQ(pd_transport_create_threads(2, t), PD_OK);
  ASSERT_EQ(pd_transport_set_timeout(t[0], 0.3), PD_OK);
  ASSERT_EQ(pd_transport_set_timeout(t[1], 0.3), PD_OK);
  pd_status status[2] = {PD_OK, PD_OK};
  std::vector<std::thread> ranks;
  for (size_t r = 0; r < 2; ++r)
    ranks.emplace_back([&, r] {
      int got = 0;
      status[r] = pd_transport_recv(t[r], 1 - r, 7, &got, sizeof(got));
    });
  for (std::thread &rank : ranks)
    rank.join();
  EXPECT_EQ(status[0], PD_ERROR_TIMEOUT);
  EXPECT_EQ(status[1], PD_ERROR_TIMEOUT);
  for (pd_transport *e : t)
    pd_transport_destroy(e);
}

TEST(ThreadsTransport, EnvironmentSetsTheDefaultTimeout) {
  setenv("PIPEDREAM_TIMEOUT", "2.5", 1);
  pd_transport *t[2];
  ASSERT_EQ(pd_transport_create_threads(2, t), PD_OK);
  EXPECT_EQ(pd_transport_timeout(t[0]), 2.5);
  pd_transport_destroy(t[0]);
  pd_transport_destroy(t[1]);
  setenv("PIPEDREAM_TIMEOUT", "soon", 1);
  ASSERT_EQ(pd_transport_create_threads(2, t), PD_OK);
  EXPECT_EQ(pd_transport_timeout(t[0]), 60);
  pd_transport_destroy(t[0]);
  pd_transport_destroy(t[1]);
  unsetenv("PIPEDREAM_TIMEOUT");
}

/// Rank 0 of the 2-stage chain runs a step while rank 1 does `other`.
pd_status stepRankZero(const std::function<void(pd_transport *)> &other,
                       double timeout, double &seconds, std::string &message) {
  TempDir dir;
  std::string bin;
  makeBundle(dir.path(), chainPipelineManifest(2, "1f1b", bin).dump(), bin);
  pd_transport *t[2];
  EXPECT_EQ(pd_transport_create_threads(2, t), PD_OK);
  pd_transport_set_timeout(t[0], timeout);
  pd_bundle *bundle = nullptr;
  EXPECT_EQ(pd_bundle_open_rank(dir.path().c_str(), 0, &bundle), PD_OK);
  pd_rank *p = nullptr;
  EXPECT_EQ(pd_rank_create(bundle, 0, t[0], &p), PD_OK);
  std::thread thread(other, t[1]);
  ChainData data(8);
  auto start = std::chrono::steady_clock::now();
  double loss = 0;
  pd_status status = pd_rank_step(p, data.arrays, 2, 0, &loss);
  seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                          start)
                .count();
  message = pd_last_error();
  thread.join();
  pd_bundle_close(bundle);
  pd_transport_destroy(t[0]);
  pd_transport_destroy(t[1]);
  return status;
}

TEST(PipelineFaults, SilentRankTimesOut) {
  double seconds = 0;
  std::string message;
  // Rank 1 never runs: rank 0's first recv (the gradient of micro-batch 0)
  // waits for the timeout.
  pd_status status =
      stepRankZero([](pd_transport *) {}, 0.3, seconds, message);
  EXPECT_EQ(status, PD_ERROR_TIMEOUT);
  EXPECT_LT(seconds, 5);
  EXPECT_NE(message.find("rank 0: instruction "), std::string::npos)
      << message;
  EXPECT_NE(message.find("(recv from rank 1, tag 1): timed out after 0.3 s "
                         "waiting for rank 1"),
            std::string::npos)
      << message;
}

TEST(PipelineFaults, FailedRankIsNamedAtOnce) {
  double seconds = 0;
  std::string message;
  pd_status status = stepRankZero(
      [](pd_transport *t) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        pd_transport_abort(t, "instruction 3 (call stage1_F): it broke");
      },
      30, seconds, message);
  EXPECT_EQ(status, PD_ERROR_PEER);
  EXPECT_LT(seconds, 5);
  EXPECT_NE(message.find("rank 1 failed: instruction 3 (call stage1_F): it "
                         "broke"),
            std::string::npos)
      << message;
}

//===----------------------------------------------------------------------===//
// bundle.json `pipeline` validation
//===----------------------------------------------------------------------===//

struct BadCase {
  const char *label;
  std::function<void(json &)> edit;
  const char *message;
};

void PrintTo(const BadCase &c, std::ostream *os) { *os << c.label; }

class PipelineManifestErrors : public ::testing::TestWithParam<BadCase> {};

json &ins(json &m, int rank, int i) {
  return m["pipeline"]["ranks"][rank]["program"][i];
}

/// An all_reduce instruction of ranks 0 and 1 (micro-batch 3).
json allReduce(const std::string &buffer, std::vector<int64_t> shape) {
  return json{{"op", "all_reduce"}, {"buffer", buffer},
              {"ranks", {0, 1}},    {"dtype", "f32"},
              {"shape", shape},     {"microbatch", 3}};
}

/// `rank_layout` of K pipeline ranks on R replicas (rank = replica*K + s).
json replicaLayout(int k, int r) {
  json layout = json::array();
  for (int j = 0; j < r; ++j)
    for (int s = 0; s < k; ++s)
      layout.push_back(
          {{"rank", j * k + s}, {"pipeline_rank", s}, {"replica", j}});
  return layout;
}

TEST_P(PipelineManifestErrors, NamesRankAndInstruction) {
  std::string bin;
  json manifest = chainPipelineManifest(2, "1f1b", bin);
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
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

// Rank 0 of the 2-stage 1F1B chain: 0 input x m0, 1 call F m0, 2 send m0,
// 3 input x m1, 4 call F m1, 5 send m1, 6 recv grad m0, 7 call B m0, ...
// Rank 1: 0 recv m0, 1 input y, 2 call F, 3 loss, 4 call B, 5 send grad m0.
const BadCase kBadCases[] = {
    {"UnknownOp",
     [](json &m) { ins(m, 0, 1)["op"] = "jump"; },
     "pipeline.ranks[0].program[1].op: rank 0, instruction 1: unknown op "
     "'jump' (expected input, call, send, recv, loss or all_reduce)"},
    {"AllReduceUnknownBuffer",
     [](json &m) {
       for (int r : {0, 1}) {
         auto &p = m["pipeline"]["ranks"][r]["program"];
         p.insert(p.end() - 1, allReduce("grad:nope", {2, 2}));
       }
     },
     "no function of the rank has a gradient buffer 'grad:nope' to "
     "all-reduce"},
    {"AllReduceType",
     [](json &m) {
       auto &p = m["pipeline"]["ranks"][0]["program"];
       p.insert(p.end() - 1, allReduce("grad:W0", {2}));
     },
     "'grad:W0' is f32[2x2], but the all-reduce is f32[2]"},
    {"AllReduceUnmatched",
     [](json &m) {
       auto &p = m["pipeline"]["ranks"][0]["program"];
       p.insert(p.end() - 1, allReduce("grad:W0", {2, 2}));
     },
     "all-reduce 0 of ranks 0.. has no match on rank 1, which runs 0 "
     "all-reduces of this group"},
    {"AllReduceNotAMember",
     [](json &m) {
       json a = allReduce("grad:W0", {2, 2});
       a["ranks"] = {1};
       auto &p = m["pipeline"]["ranks"][0]["program"];
       p.insert(p.end() - 1, a);
     },
     "an all-reduce needs two or more ranks, this one among them"},
    {"RegisterOutOfRange",
     [](json &m) { ins(m, 0, 2)["src"] = 99; },
     "pipeline.ranks[0].program[2].src: rank 0, instruction 2: register 99 "
     "does not exist (rank 0 has"},
    {"ReadBeforeWrite",
     [](json &m) { ins(m, 0, 1)["args"][0] = 5; },
     "pipeline.ranks[0].program[1].args[0]: rank 0, instruction 1: reads "
     "register 5 before any instruction of the program writes it"},
    {"TooFewArgs",
     [](json &m) { ins(m, 0, 1)["args"] = json::array(); },
     "rank 0, instruction 1: function 'stage0_F' takes 1 value argument (h "
     "f32[2x2]), got 0 registers"},
    {"WrongResultType",
     [](json &m) {
       m["pipeline"]["ranks"][0]["registers"].push_back(
           {{"dtype", "f64"}, {"shape", {2, 2}}});
       ins(m, 0, 1)["results"][1] =
           m["pipeline"]["ranks"][0]["registers"].size() - 1;
     },
     "is f64[2x2] but result 'res' of function 'stage0_F' is f32[2x2]"},
    {"ResultAliasesArgument",
     [](json &m) { ins(m, 0, 1)["results"][0] = ins(m, 0, 1)["args"][0]; },
     "results must not alias arguments"},
    {"UnknownFunction",
     [](json &m) { ins(m, 0, 1)["function"] = "stage9_F"; },
     "rank 0, instruction 1: no function 'stage9_F' (functions: stage0_F"},
    {"PeerOutOfRange",
     [](json &m) { ins(m, 0, 2)["peer"] = 2; },
     "pipeline.ranks[0].program[2].peer: rank 0, instruction 2: peer rank 2 "
     "does not exist (the pipeline has 2 ranks)"},
    {"SendToSelf",
     [](json &m) { ins(m, 0, 2)["peer"] = 0; },
     "rank 0 cannot send to itself"},
    {"TagMismatch",
     [](json &m) { ins(m, 1, 0)["tag"] = 8; },
     "pipeline.ranks[0].program[2]: send to rank 1 with tag 0 is message 0 "
     "from rank 0 to rank 1, but the matching recv pipeline.ranks[1]."
     "program[0] expects tag 8"},
    {"ShapeMismatch",
     [](json &m) {
       // Rank 1 receives micro-batch 0 into a f32[2x3] register (and reads
       // x into the register its F takes, to stay well-formed otherwise).
       auto &registers = m["pipeline"]["ranks"][1]["registers"];
       registers.push_back({{"dtype", "f32"}, {"shape", {2, 3}}});
       ins(m, 1, 0)["dst"] = registers.size() - 1;
       auto &program = m["pipeline"]["ranks"][1]["program"];
       program.insert(program.begin() + 1,
                      json{{"op", "input"}, {"name", "x"}, {"microbatch", 0},
                           {"dst", 0}});
     },
     "sends f32[2x2] but the matching recv pipeline.ranks[1].program[0] "
     "receives f32[2x3]"},
    {"MissingRecv",
     [](json &m) {
       auto &p = m["pipeline"]["ranks"][0]["program"];
       // Drop rank 0's last recv and the B that needs it.
       for (size_t i = p.size(); i-- > 0;)
         if (p[i]["op"] == "recv") {
           p.erase(i + 1);
           p.erase(i);
           break;
         }
     },
     "send to rank 0 with tag 7 (message 3 from rank 1 to rank 0) has no "
     "matching recv: rank 0 receives 3 messages from rank 1 and rank 1 sends "
     "4"},
    {"MicrobatchOutOfRange",
     [](json &m) { ins(m, 0, 0)["microbatch"] = 4; },
     "rank 0, instruction 0: micro-batch 4 is out of range (the schedule has "
     "4)"},
    {"UnknownData",
     [](json &m) { ins(m, 0, 0)["name"] = "z"; },
     "no data array 'z' (pipeline.inputs and labels: x, y)"},
    {"DataWrongFirstAxis",
     [](json &m) {
       m["pipeline"]["ranks"][0]["registers"][0]["shape"] = {3, 2};
       m["pipeline"]["ranks"][0]["registers"][0]["dtype"] = "f32";
     },
     "the first axis of data 'x' must be microbatch_size 2"},
    {"DuplicateLoss",
     [](json &m) { ins(m, 1, 9)["microbatch"] = 0; },
     "pipeline.ranks[1].program[9]: rank 1, instruction 9: a second loss of "
     "micro-batch 0 (the first is pipeline.ranks[1].program[3])"},
    {"LossNotScalar",
     [](json &m) { ins(m, 1, 3)["src"] = 0; },
     "the loss register 0 is f32[2x2]; expected one f32 or f64 element"},
    {"BatchSize",
     [](json &m) { m["pipeline"]["batch_size"] = 9; },
     "pipeline.batch_size: 9 is not schedule.microbatches x microbatch_size "
     "= 4 x 2"},
    {"ReplicasWithoutLayout",
     [](json &m) {
       m["pipeline"]["replicas"] = 2;
       m["pipeline"]["batch_size"] = 16;
     },
     "pipeline.rank_layout: missing: a pipeline with 2 replicas lists the "
     "stage and replica of each rank"},
    {"ReplicasBatchSize",
     [](json &m) {
       m["pipeline"]["replicas"] = 2;
       m["pipeline"]["rank_layout"] = replicaLayout(2, 2);
     },
     "pipeline.batch_size: 8 is not replicas x schedule.microbatches x "
     "microbatch_size = 2 x 4 x 2"},
    {"RankLayoutSize",
     [](json &m) {
       m["pipeline"]["replicas"] = 2;
       m["pipeline"]["batch_size"] = 16;
       m["pipeline"]["rank_layout"] = replicaLayout(2, 1);
     },
     "pipeline.rank_layout: has 2 entries; the pipeline has 2 pipeline ranks "
     "x 2 replicas = 4 ranks"},
    {"RankLayoutOrder",
     [](json &m) {
       m["pipeline"]["replicas"] = 2;
       m["pipeline"]["batch_size"] = 16;
       json layout = replicaLayout(2, 2);
       layout[1]["replica"] = 1;
       layout[1]["pipeline_rank"] = 0;
       m["pipeline"]["rank_layout"] = layout;
     },
     "pipeline.rank_layout[1]: rank 1 is pipeline rank 0, replica 1, but "
     "entry 1 must be rank 1, pipeline rank 1, replica 0 (rank = replica x 2 "
     "+ pipeline rank)"},
    {"CallReplicaOutOfRange",
     [](json &m) { ins(m, 0, 1)["replica"] = 1; },
     "rank 0, instruction 1: replica 1 is out of range (the pipeline has 1 "
     "replicas)"},
    {"RankOrder",
     [](json &m) { m["pipeline"]["ranks"][1]["rank"] = 0; },
     "pipeline.ranks[1].rank: entry 1 of pipeline.ranks says rank 0"},
    {"WeightVersionsBoth",
     [](json &m) { ins(m, 0, 1)["weights"] = {{"save", 0}, {"use", 0}}; },
     "expected exactly one of \"save\" and \"use\""},
    {"ArgumentType",
     [](json &m) {
       m["pipeline"]["ranks"][1]["registers"][1]["dtype"] = "i64";
     },
     "rank 1, instruction 2: register 1 is i64[2] but argument 'y' of "
     "function 'stage1_F' is f32[2]"},
};

INSTANTIATE_TEST_SUITE_P(Cases, PipelineManifestErrors,
                         ::testing::ValuesIn(kBadCases),
                         [](const ::testing::TestParamInfo<BadCase> &info) {
                           return std::string(info.param.label);
                         });

/// `eval` on every rank of the 2-stage chain, then `edit` (for the error
/// cases of evaluation programs).
std::function<void(json &)> withEval(std::function<void(json &)> edit) {
  return [edit](json &m) {
    addChainEval(m);
    edit(m);
  };
}

json &evalIns(json &m, int rank, int i) {
  return m["pipeline"]["ranks"][rank]["eval"]["program"][i];
}

// The evaluation programs of the 2-stage chain: rank 0: 0 input x, 1 call
// F, 2 send; rank 1: 0 recv, 1 input y, 2 call F, 3 loss.
const BadCase kBadEvalCases[] = {
    {"EvalOnOneRank",
     withEval([](json &m) { m["pipeline"]["ranks"][1].erase("eval"); }),
     "pipeline.ranks: 1 of 2 ranks have an evaluation program (`eval`); "
     "every rank needs one"},
    {"EvalAllReduce", withEval([](json &m) {
       auto &p = m["pipeline"]["ranks"][0]["eval"]["program"];
       p.insert(p.end(), allReduce("grad:W0", {2, 2}));
     }),
     "pipeline.ranks[0].eval.program[3].op: rank 0, evaluation instruction "
     "3: unknown op 'all_reduce' (an evaluation program has input, call, "
     "send, recv and loss)"},
    {"EvalMicrobatch",
     withEval([](json &m) { evalIns(m, 0, 0)["microbatch"] = 1; }),
     "pipeline.ranks[0].eval.program[0].microbatch: rank 0, evaluation "
     "instruction 0: micro-batch 1 is out of range (an evaluation program "
     "runs micro-batch 0)"},
    {"EvalNoLoss", withEval([](json &m) {
       m["pipeline"]["ranks"][1]["eval"]["program"].erase(3);
     }),
     "pipeline.ranks: no rank's evaluation program has a loss instruction"},
    {"EvalTagMismatch", withEval([](json &m) { evalIns(m, 1, 0)["tag"] = 5; }),
     "pipeline.ranks[0].eval.program[2]: send to rank 1 with tag 0 is "
     "message 0 from rank 0 to rank 1, but the matching recv "
     "pipeline.ranks[1].eval.program[0] expects tag 5"},
    {"EvalMissingSend", withEval([](json &m) {
       m["pipeline"]["ranks"][0]["eval"]["program"].erase(2);
     }),
     "pipeline.ranks[1].eval.program[0]: recv from rank 0 with tag 0 "
     "(message 0 from rank 0 to rank 1) has no matching send"},
    {"EvalReadsOtherData", withEval([](json &m) {
       evalIns(m, 0, 0)["name"] = "y";
       m["pipeline"]["ranks"][0]["eval"]["registers"][0]["shape"] = {2};
     }),
     "pipeline.ranks[0].eval.program[0].name: rank 0, evaluation "
     "instruction 0: rank 0's step reads no 'y'; its evaluation reads what "
     "its step reads"},
    {"EvalReadBeforeWrite",
     withEval([](json &m) { evalIns(m, 1, 2)["args"][0] = 3; }),
     "pipeline.ranks[1].eval.program[2].args[0]: rank 1, evaluation "
     "instruction 2: reads register 3 before any instruction of the program "
     "writes it"},
};

INSTANTIATE_TEST_SUITE_P(Eval, PipelineManifestErrors,
                         ::testing::ValuesIn(kBadEvalCases),
                         [](const ::testing::TestParamInfo<BadCase> &info) {
                           return std::string(info.param.label);
                         });

TEST(PipelineManifest, ParsesEvaluationPrograms) {
  std::string bin;
  json manifest = chainPipelineManifest(4, "1f1b", bin);
  EXPECT_FALSE(
      parseManifest(manifest.dump(), "b/bundle.json").pipeline.evaluates);
  addChainEval(manifest);
  Manifest m = parseManifest(manifest.dump(), "b/bundle.json");
  EXPECT_TRUE(m.pipeline.evaluates);
  for (size_t r = 0; r < 4; ++r) {
    EXPECT_TRUE(m.pipeline.ranks[r].hasEval);
    // The step's program is the step's, the evaluation's its own.
    EXPECT_GT(m.pipeline.ranks[r].program.size(),
              m.pipeline.ranks[r].evalProgram.size());
  }
  EXPECT_EQ(m.pipeline.ranks[0].evalProgram.size(), 3u);
  EXPECT_EQ(m.pipeline.ranks[3].evalProgram.size(), 4u);
  EXPECT_EQ(m.pipeline.ranks[3].evalProgram.back().op,
            pipedream::runtime::RankInstruction::Op::Loss);
}

TEST(PipelineManifest, ParsesTheChain) {
  std::string bin;
  Manifest m = parseManifest(chainPipelineManifest(4, "1f1b", bin).dump(),
                             "b/bundle.json");
  ASSERT_TRUE(m.hasPipeline);
  EXPECT_EQ(m.pipeline.ranks.size(), 4u);
  EXPECT_EQ(m.pipeline.lossRank, 3u);
  EXPECT_EQ(m.pipeline.kind, "1f1b");
  ASSERT_EQ(m.pipeline.data.size(), 2u);
  EXPECT_EQ(m.pipeline.data[0].ranks, std::vector<size_t>{0});
  EXPECT_EQ(m.pipeline.data[1].ranks, std::vector<size_t>{3});
  EXPECT_TRUE(m.pipeline.data[1].isLabels);
  EXPECT_EQ(m.pipeline.ranks[1].functions.size(), 3u);
  EXPECT_EQ(m.pipeline.replicas, 1u);
  EXPECT_EQ(m.pipeline.worldRanks(), 4u);
}

TEST(PipelineManifest, ParsesReplicas) {
  std::string bin;
  json manifest = chainPipelineManifest(2, "1f1b", bin);
  manifest["pipeline"]["replicas"] = 3;
  manifest["pipeline"]["batch_size"] = 24;
  manifest["pipeline"]["rank_layout"] = replicaLayout(2, 3);
  Manifest m = parseManifest(manifest.dump(), "b/bundle.json");
  EXPECT_EQ(m.pipeline.replicas, 3u);
  EXPECT_EQ(m.pipeline.worldRanks(), 6u);
  EXPECT_EQ(m.pipeline.programOf(5), 1u);
  EXPECT_EQ(m.pipeline.replicaOf(5), 2u);
  EXPECT_EQ(m.pipeline.worldRank(1, 2), 5u);
}

} // namespace
