//===- CheckpointTest.cpp - checkpoints and traces of trainers, pipelines -===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// pd_trainer_/pd_rank_save_checkpoint and _load_checkpoint on
// TestProgram.c's chain (SGD with momentum: the momentum buffers are state
// a resume must restore): a run that saves at step 2 and one resumed from
// that checkpoint end with bitwise the same weights as one uninterrupted
// run; damaged, foreign and half-written checkpoints; the trace events.
// The kill -9 tests of pipedream-run are test/Tools/pipedream-run/
// checkpoint.test.
//
//===----------------------------------------------------------------------===//

#include "pipedream/runtime.h"

#include "PipelineUtil.h"
#include "TestUtil.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

using json = nlohmann::json;
using pipedream::test::chainPipelineManifest;
using pipedream::test::chainTrainingManifest;
using pipedream::test::chainWeightNames;
using pipedream::test::makeBundle;
using pipedream::test::readFile;
using pipedream::test::TempDir;
using pipedream::test::writeFile;

namespace {

struct ChainData {
  explicit ChainData(size_t n)
      : x(2 * n), y(n), xs{int64_t(n), 2}, ys{int64_t(n)} {
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

std::vector<std::string> weightsOf(pd_bundle *bundle) {
  std::vector<std::string> weights;
  for (size_t w = 0; w < pd_bundle_weight_count(bundle); ++w) {
    pd_buffer *weight = pd_bundle_weight_at(bundle, w);
    const char *bytes = static_cast<const char *>(pd_buffer_const_data(weight));
    weights.emplace_back(bytes ? std::string(bytes, pd_buffer_num_bytes(weight))
                               : std::string());
  }
  return weights;
}

/// Trains steps [from, to) of the chain's training bundle in `dir`,
/// loading `ckpt` first when `resume`, saving into it after step `saveAt`
/// (0: never). Returns the final weights.
std::vector<std::string> trainRange(const std::string &dir,
                                    const std::string &ckpt, bool resume,
                                    uint64_t from, uint64_t to,
                                    uint64_t saveAt) {
  ChainData data(12);
  pd_bundle *bundle = nullptr;
  EXPECT_EQ(pd_bundle_open(dir.c_str(), &bundle), PD_OK) << pd_last_error();
  pd_trainer *trainer = nullptr;
  EXPECT_EQ(pd_trainer_create(bundle, &trainer), PD_OK) << pd_last_error();
  if (resume) {
    uint64_t step = 99;
    EXPECT_EQ(pd_trainer_load_checkpoint(trainer, ckpt.c_str(), &step), PD_OK)
        << pd_last_error();
    EXPECT_EQ(step, from);
  }
  for (uint64_t s = from; s < to; ++s) {
    EXPECT_EQ(pd_trainer_step(trainer, data.arrays, 2, s * 8, nullptr), PD_OK)
        << pd_last_error();
    if (s + 1 == saveAt)
      EXPECT_EQ(pd_trainer_save_checkpoint(trainer, ckpt.c_str(), s + 1),
                PD_OK)
          << pd_last_error();
  }
  std::vector<std::string> weights = weightsOf(bundle);
  pd_bundle_close(bundle);
  return weights;
}

std::string trainingBundle(const TempDir &dir, int stages = 2) {
  std::string bin;
  makeBundle(dir.path(), chainTrainingManifest(stages, bin).dump(), bin);
  return dir.path();
}

TEST(TrainerCheckpoint, ResumeEqualsUninterruptedBitwise) {
  TempDir bundle, ckpt;
  trainingBundle(bundle);
  std::string dir = ckpt.path() + "/ckpt";
  std::vector<std::string> whole = trainRange(bundle.path(), dir, false, 0, 5, 2);
  std::vector<std::string> resumed =
      trainRange(bundle.path(), dir, true, 2, 5, 0);
  ASSERT_EQ(whole.size(), resumed.size());
  for (size_t w = 0; w < whole.size(); ++w)
    EXPECT_EQ(whole[w], resumed[w]) << "weight " << w;
  // Without the checkpoint (momentum buffers zero, initial weights) the
  // same steps end elsewhere: the test would notice a load that did nothing.
  TempDir none;
  std::vector<std::string> fresh =
      trainRange(bundle.path(), none.path(), false, 2, 5, 0);
  EXPECT_NE(fresh, whole);

  uint64_t step = 0;
  EXPECT_EQ(pd_checkpoint_step(dir.c_str(), &step), PD_OK);
  EXPECT_EQ(step, 2u);
  EXPECT_TRUE(std::filesystem::exists(dir + "/checkpoint.json"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/step-00000002.rank-0.pdckpt"));
}

TEST(TrainerCheckpoint, NewCheckpointReplacesTheOld) {
  TempDir bundle, ckpt;
  trainingBundle(bundle);
  std::string dir = ckpt.path();
  ChainData data(12);
  pd_bundle *b = nullptr;
  ASSERT_EQ(pd_bundle_open(bundle.path().c_str(), &b), PD_OK);
  pd_trainer *t = nullptr;
  ASSERT_EQ(pd_trainer_create(b, &t), PD_OK);
  for (uint64_t s = 0; s < 4; ++s) {
    ASSERT_EQ(pd_trainer_step(t, data.arrays, 2, s * 8, nullptr), PD_OK);
    ASSERT_EQ(pd_trainer_save_checkpoint(t, dir.c_str(), s + 1), PD_OK)
        << pd_last_error();
  }
  pd_bundle_close(b);
  std::vector<std::string> files;
  for (const auto &entry : std::filesystem::directory_iterator(dir))
    files.push_back(entry.path().filename().string());
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"checkpoint.json",
                                             "step-00000004.rank-0.pdckpt"}));
  json manifest = json::parse(readFile(dir + "/checkpoint.json"));
  EXPECT_EQ(manifest["format"], "pipedream-checkpoint");
  EXPECT_EQ(manifest["step"], 4);
  EXPECT_EQ(manifest["ranks"], 1);
}

TEST(TrainerCheckpoint, InterruptedSaveKeepsThePreviousOne) {
  TempDir bundle, ckpt;
  trainingBundle(bundle);
  std::string dir = ckpt.path();
  std::vector<std::string> whole = trainRange(bundle.path(), dir, false, 0, 5, 2);
  // What a kill during the save of step 4 leaves: a temporary file, or
  // even a complete rank file, but the manifest still names step 2.
  writeFile(dir + "/step-00000004.rank-0.pdckpt.tmp-abcdef", "partial");
  writeFile(dir + "/step-00000004.rank-0.pdckpt", "whatever");
  writeFile(dir + "/checkpoint.json.tmp-123456", "{\"format\":");
  std::vector<std::string> resumed =
      trainRange(bundle.path(), dir, true, 2, 5, 0);
  EXPECT_EQ(whole, resumed);
}

/// Loads `dir` into a fresh trainer of the bundle; returns the status and
/// sets `message`.
pd_status loadInto(const std::string &bundleDir, const std::string &dir,
                   std::string &message) {
  pd_bundle *bundle = nullptr;
  EXPECT_EQ(pd_bundle_open(bundleDir.c_str(), &bundle), PD_OK);
  pd_trainer *trainer = nullptr;
  EXPECT_EQ(pd_trainer_create(bundle, &trainer), PD_OK);
  std::vector<std::string> before = weightsOf(bundle);
  uint64_t step = 0;
  pd_status status = pd_trainer_load_checkpoint(trainer, dir.c_str(), &step);
  message = status == PD_OK ? "" : pd_last_error();
  if (status != PD_OK)
    EXPECT_EQ(weightsOf(bundle), before) << "a failed load changed weights";
  pd_bundle_close(bundle);
  return status;
}

/// CRC-32 (IEEE), as the checkpoint writer computes it.
uint32_t testCrc32(const std::string &bytes, size_t size) {
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < size; ++i) {
    crc ^= static_cast<unsigned char>(bytes[i]);
    for (int k = 0; k < 8; ++k)
      crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

// A rank file with a valid CRC whose header gives a buffer fewer bytes than
// its dtype and shape need: refused (the load copies the bundle buffer's
// size from the file, so trusting the shape alone read past the file).
TEST(TrainerCheckpoint, BufferBytesMustMatchItsType) {
  TempDir bundle, ckpt;
  trainingBundle(bundle);
  std::string dir = ckpt.path();
  trainRange(bundle.path(), dir, false, 0, 2, 2);
  std::string file = dir + "/step-00000002.rank-0.pdckpt";
  std::string bytes = readFile(file);
  uint64_t headerSize = 0;
  for (int i = 7; i >= 0; --i)
    headerSize = headerSize << 8 | static_cast<unsigned char>(bytes[8 + i]);
  json header = json::parse(bytes.substr(16, headerSize));
  ASSERT_FALSE(header["buffers"].empty());
  header["buffers"][0]["bytes"] = 1;
  std::string text = header.dump();
  ASSERT_LE(text.size(), headerSize);
  text.resize(headerSize, ' ');
  bytes.replace(16, headerSize, text);
  uint32_t crc = testCrc32(bytes, bytes.size() - 16);
  for (int i = 0; i < 8; ++i)
    bytes[bytes.size() - 8 + i] =
        static_cast<char>(static_cast<uint64_t>(crc) >> (8 * i));
  writeFile(file, bytes);
  json manifest = json::parse(readFile(dir + "/checkpoint.json"));
  manifest["files"][0]["crc32"] = crc;
  writeFile(dir + "/checkpoint.json", manifest.dump());

  std::string message;
  EXPECT_EQ(loadInto(bundle.path(), dir, message), PD_ERROR_FORMAT);
  EXPECT_NE(message.find("corrupt checkpoint file"), std::string::npos)
      << message;
  EXPECT_NE(message.find("has 1 bytes, its type"), std::string::npos)
      << message;
  EXPECT_EQ(message.find('\n'), std::string::npos);
}

// A float where the manifest needs an integer: a format error (converting
// 1.8e22 to uint64_t was undefined behaviour; found by the fuzzer).
TEST(TrainerCheckpoint, FloatStepIsAFormatError) {
  TempDir ckpt;
  writeFile(ckpt.path() + "/checkpoint.json",
            "{\"format\":\"pipedream-checkpoint\",\"version\":1,"
            "\"step\":1.8446744073709552e22,\"ranks\":1,"
            "\"bundle_fingerprint\":\"x\",\"files\":[{\"rank\":0,"
            "\"file\":\"a\",\"bytes\":1,\"crc32\":0}]}");
  uint64_t step = 0;
  EXPECT_EQ(pd_checkpoint_step(ckpt.path().c_str(), &step), PD_ERROR_FORMAT);
  std::string message = pd_last_error();
  EXPECT_NE(message.find("checkpoint.json: corrupt checkpoint manifest "
                         "('step' is not a non-negative integer)"),
            std::string::npos)
      << message;
}

TEST(TrainerCheckpoint, Errors) {
  TempDir bundle, ckpt, other;
  trainingBundle(bundle);
  std::string dir = ckpt.path();
  std::string message;

  EXPECT_EQ(loadInto(bundle.path(), dir, message), PD_ERROR_NOT_FOUND);
  EXPECT_NE(message.find("no checkpoint"), std::string::npos) << message;

  trainRange(bundle.path(), dir, false, 0, 2, 2);
  ASSERT_EQ(loadInto(bundle.path(), dir, message), PD_OK) << message;

  // Another bundle: the chain of 4 stages.
  trainingBundle(other, 4);
  EXPECT_EQ(loadInto(other.path(), dir, message), PD_ERROR_MISMATCH);
  EXPECT_NE(message.find("written by another bundle"), std::string::npos)
      << message;
  EXPECT_EQ(message.find('\n'), std::string::npos);

  // A flipped byte in the rank file.
  std::string file = dir + "/step-00000002.rank-0.pdckpt";
  std::string bytes = readFile(file);
  std::string damaged = bytes;
  damaged[damaged.size() / 2] ^= 0x40;
  writeFile(file, damaged);
  EXPECT_EQ(loadInto(bundle.path(), dir, message), PD_ERROR_FORMAT);
  EXPECT_NE(message.find("corrupt checkpoint file"), std::string::npos)
      << message;
  EXPECT_NE(message.find("CRC-32"), std::string::npos) << message;
  // Truncated.
  writeFile(file, bytes.substr(0, bytes.size() - 5));
  EXPECT_EQ(loadInto(bundle.path(), dir, message), PD_ERROR_FORMAT);
  EXPECT_NE(message.find("bytes, the manifest says"), std::string::npos)
      << message;
  // Missing.
  std::filesystem::remove(file);
  EXPECT_EQ(loadInto(bundle.path(), dir, message), PD_ERROR_NOT_FOUND);
  EXPECT_NE(message.find(file), std::string::npos) << message;
  // A damaged manifest.
  writeFile(file, bytes);
  writeFile(dir + "/checkpoint.json", "{\"format\": \"pipedream-check");
  EXPECT_EQ(loadInto(bundle.path(), dir, message), PD_ERROR_FORMAT);
  EXPECT_NE(message.find("corrupt checkpoint manifest"), std::string::npos)
      << message;
  EXPECT_EQ(message.find('\n'), std::string::npos);

  EXPECT_EQ(pd_trainer_save_checkpoint(nullptr, "x", 1),
            PD_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(pd_checkpoint_step(nullptr, nullptr), PD_ERROR_INVALID_ARGUMENT);
}

//===----------------------------------------------------------------------===//
// Pipelines
//===----------------------------------------------------------------------===//

/// Runs every rank of the pipeline bundle in `dir` on a thread: `body(r,
/// pipeline)` returns "" or an error. Returns rank 0's weights after a
/// gather.
std::vector<std::string>
runRanks(const std::string &dir, int ranks,
         const std::function<std::string(int, pd_rank *)> &body) {
  std::vector<std::string> weights;
  std::vector<std::string> errors = pipedream::test::onEveryRank(
      dir, ranks, [&](int r, pd_bundle *bundle, pd_rank *p) {
        std::string error = body(r, p);
        if (error.empty() && pd_rank_gather_weights(p) != PD_OK)
          error = pd_last_error();
        if (r == 0)
          weights = weightsOf(bundle);
        return error;
      });
  for (int r = 0; r < ranks; ++r)
    EXPECT_EQ(errors[r], "") << "rank " << r;
  return weights;
}

class PipelineCheckpoint : public ::testing::TestWithParam<int> {};

TEST_P(PipelineCheckpoint, ResumeEqualsUninterruptedBitwise) {
  int ranks = GetParam();
  TempDir bundle, ckpt;
  std::string bin;
  makeBundle(bundle.path(), chainPipelineManifest(ranks, "1f1b", bin).dump(),
             bin);
  std::string dir = ckpt.path() + "/run";
  ChainData data(12);
  auto steps = [&](uint64_t from, uint64_t to, uint64_t saveAt, bool resume) {
    return [&, from, to, saveAt, resume](int, pd_rank *p) -> std::string {
      if (resume) {
        uint64_t step = 0;
        if (pd_rank_load_checkpoint(p, dir.c_str(), &step) != PD_OK)
          return pd_last_error();
        if (step != from)
          return "loaded step " + std::to_string(step);
      }
      for (uint64_t s = from; s < to; ++s) {
        if (pd_rank_step(p, data.arrays, 2, s * 8, nullptr) != PD_OK)
          return pd_last_error();
        if (s + 1 == saveAt &&
            pd_rank_save_checkpoint(p, dir.c_str(), s + 1) != PD_OK)
          return pd_last_error();
      }
      return "";
    };
  };
  std::vector<std::string> whole =
      runRanks(bundle.path(), ranks, steps(0, 5, 3, false));
  json manifest = json::parse(readFile(dir + "/checkpoint.json"));
  EXPECT_EQ(manifest["ranks"], ranks);
  EXPECT_EQ(manifest["files"].size(), size_t(ranks));
  std::vector<std::string> resumed =
      runRanks(bundle.path(), ranks, steps(3, 5, 0, true));
  ASSERT_EQ(whole.size(), resumed.size());
  EXPECT_FALSE(whole.empty());
  for (size_t w = 0; w < whole.size(); ++w)
    EXPECT_EQ(whole[w], resumed[w]) << "weight " << w;

  // A damaged rank file: every rank refuses it with the same message.
  std::string last =
      dir + "/step-00000003.rank-" + std::to_string(ranks - 1) + ".pdckpt";
  std::string bytes = readFile(last);
  bytes[bytes.size() - 20] ^= 1;
  writeFile(last, bytes);
  std::vector<std::string> messages(ranks);
  std::vector<pd_transport *> transports(ranks);
  ASSERT_EQ(pd_transport_create_threads(ranks, transports.data()), PD_OK);
  for (int r = 0; r < ranks; ++r) {
    pd_bundle *b = nullptr;
    pd_rank *p = nullptr;
    ASSERT_EQ(pd_bundle_open_rank(bundle.path().c_str(), r, &b), PD_OK);
    ASSERT_EQ(pd_rank_create(b, r, transports[r], &p), PD_OK);
    EXPECT_EQ(pd_rank_load_checkpoint(p, dir.c_str(), nullptr),
              PD_ERROR_FORMAT);
    messages[r] = pd_last_error();
    pd_bundle_close(b);
  }
  for (pd_transport *t : transports)
    pd_transport_destroy(t);
  for (int r = 0; r < ranks; ++r) {
    EXPECT_EQ(messages[r], messages[0]);
    EXPECT_NE(messages[r].find("corrupt checkpoint file (rank " +
                               std::to_string(ranks - 1)),
              std::string::npos)
        << messages[r];
  }
}

INSTANTIATE_TEST_SUITE_P(Chain, PipelineCheckpoint, ::testing::Values(2, 4),
                         [](const ::testing::TestParamInfo<int> &info) {
                           return "K" + std::to_string(info.param);
                         });

//===----------------------------------------------------------------------===//
// Traces
//===----------------------------------------------------------------------===//

TEST(Trace, TrainerRecordsEveryCall) {
  TempDir bundle;
  trainingBundle(bundle);
  ChainData data(12);
  pd_bundle *b = nullptr;
  ASSERT_EQ(pd_bundle_open(bundle.path().c_str(), &b), PD_OK);
  pd_trainer *t = nullptr;
  ASSERT_EQ(pd_trainer_create(b, &t), PD_OK);
  ASSERT_EQ(pd_trainer_step(t, data.arrays, 2, 0, nullptr), PD_OK);
  EXPECT_EQ(pd_trainer_trace_count(t), 0u) << "off by default";
  ASSERT_EQ(pd_trainer_set_tracing(t, 1), PD_OK);
  for (int s = 1; s < 3; ++s)
    ASSERT_EQ(pd_trainer_step(t, data.arrays, 2, s * 8, nullptr), PD_OK);
  // Per step: M inputs, M step-function calls, the update, the step.
  const size_t m = pipedream::test::kChainMicrobatches;
  ASSERT_EQ(pd_trainer_trace_count(t), 2 * (2 * m + 2));
  size_t calls = 0, updates = 0, stepsSeen = 0;
  for (size_t i = 0; i < pd_trainer_trace_count(t); ++i) {
    pd_trace_event e;
    ASSERT_EQ(pd_trainer_trace_event(t, i, &e), PD_OK);
    EXPECT_LE(e.start_us, e.end_us);
    EXPECT_TRUE(e.step == 1 || e.step == 2) << e.step;
    if (std::strcmp(e.op, "call") == 0 && std::strcmp(e.action, "FB") == 0) {
      EXPECT_STREQ(e.function, "train_microbatch");
      EXPECT_EQ(e.microbatch, int64_t(calls % m));
      ++calls;
    }
    updates += std::strcmp(e.action, "U") == 0;
    stepsSeen += std::strcmp(e.op, "step") == 0;
  }
  EXPECT_EQ(calls, 2 * m);
  EXPECT_EQ(updates, 2u);
  EXPECT_EQ(stepsSeen, 2u);
  pd_trace_event e;
  EXPECT_EQ(pd_trainer_trace_event(t, 999, &e), PD_ERROR_INVALID_ARGUMENT);
  pd_trainer_trace_clear(t);
  EXPECT_EQ(pd_trainer_trace_count(t), 0u);
  pd_bundle_close(b);
}

TEST(Trace, PipelineRecordsEveryInstruction) {
  const int ranks = 2;
  TempDir bundle;
  std::string bin;
  json manifest = chainPipelineManifest(ranks, "1f1b", bin);
  makeBundle(bundle.path(), manifest.dump(), bin);
  ChainData data(12);
  std::vector<size_t> counts(ranks), calls(ranks), agreements(ranks),
      expectedCalls(ranks);
  for (int r = 0; r < ranks; ++r)
    for (const json &ins : manifest["pipeline"]["ranks"][r]["program"])
      expectedCalls[r] += ins["op"] == "call";
  runRanks(bundle.path(), ranks, [&](int r, pd_rank *p) -> std::string {
    pd_rank_set_tracing(p, 1);
    for (uint64_t s = 0; s < 2; ++s)
      if (pd_rank_step(p, data.arrays, 2, s * 8, nullptr) != PD_OK)
        return pd_last_error();
    counts[r] = pd_rank_trace_count(p);
    for (size_t i = 0; i < counts[r]; ++i) {
      pd_trace_event e;
      pd_rank_trace_event(p, i, &e);
      agreements[r] += std::strcmp(e.op, "agree") == 0;
      if (std::strcmp(e.op, "call") == 0) {
        ++calls[r];
        bool update = std::strcmp(e.action, "U") == 0;
        if (!*e.action || e.stage < 0 || (!update && e.microbatch < 0))
          return "call event without action, stage or micro-batch";
      }
    }
    return "";
  });
  for (int r = 0; r < ranks; ++r) {
    size_t instructions = manifest["pipeline"]["ranks"][r]["program"].size();
    // Per step: one event per instruction, the step's, and the ranks'
    // agreement on the step's status (its own event, not part of the
    // update's call).
    EXPECT_EQ(counts[r], 2 * (instructions + 2)) << "rank " << r;
    EXPECT_EQ(agreements[r], 2u) << "rank " << r;
    EXPECT_EQ(calls[r], 2 * expectedCalls[r]) << "rank " << r;
  }
}

} // namespace
