//===- GpuTest.cpp - the GPU runtime's parts that need no device ----------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Runs on every machine (CI has no GPU): the row-major contract of
// pd_gpu_gemm_* and its mapping onto column-major cuBLAS (checked against a
// CPU reference of the contract), argument checks, bundle.json `target`
// fields, the torchrun environment parsing, and opening a cuda bundle
// without a device. GpuDeviceTest.cpp has the tests that need one.
//
//===----------------------------------------------------------------------===//

#include "pipedream/gpu.h"
#include "pipedream/runtime.h"

#include "GpuDevice.h"
#include "NcclBootstrap.h"
#include "GpuGemm.h"
#include "Manifest.h"

#include "PipelineUtil.h"
#include "TestUtil.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <climits>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

using pipedream::runtime::checkGemm;
using pipedream::runtime::ColumnMajorGemm;
using pipedream::runtime::Error;
using pipedream::runtime::exchangeNcclId;
using pipedream::runtime::parseManifest;
using pipedream::runtime::parseTorchrunEnv;
using pipedream::runtime::RowMajorGemm;
using pipedream::runtime::toColumnMajor;
using pipedream::runtime::TorchrunEnv;
using pipedream::test::TempDir;

namespace {

//===----------------------------------------------------------------------===//
// GEMM: the row-major contract and its column-major mapping
//===----------------------------------------------------------------------===//

/// The contract, literally: C[b][i][j] = alpha * sum_p opA(i,p) opB(p,j) +
/// beta * C[b][i][j] on row-major storage.
void rowMajorReference(const RowMajorGemm &g, float alpha, const float *A,
                       const float *B, float beta, float *C) {
  for (int64_t b = 0; b < g.batch; ++b)
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) {
        double sum = 0;
        for (int64_t p = 0; p < g.k; ++p) {
          const float *a = A + b * g.strideA;
          const float *bb = B + b * g.strideB;
          double x = g.transA ? a[p * g.lda + i] : a[i * g.lda + p];
          double y = g.transB ? bb[j * g.ldb + p] : bb[p * g.ldb + j];
          sum += x * y;
        }
        float &c = C[b * g.strideC + i * g.ldc + j];
        c = static_cast<float>(alpha * sum + beta * c);
      }
}

/// What cuBLAS computes for a column-major call (the BLAS definition):
/// C(i,j) at C[i + j*ldc], A(i,p) at A[i + p*lda] (op = transpose: A(p,i)).
void columnMajorBlas(const ColumnMajorGemm &c, float alpha, const float *A,
                     const float *B, float beta, float *C) {
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t j = 0; j < c.n; ++j)
      for (int64_t i = 0; i < c.m; ++i) {
        double sum = 0;
        for (int64_t p = 0; p < c.k; ++p) {
          const float *a = A + b * c.strideA;
          const float *bb = B + b * c.strideB;
          double x = c.transA ? a[p + i * c.lda] : a[i + p * c.lda];
          double y = c.transB ? bb[j + p * c.ldb] : bb[p + j * c.ldb];
          sum += x * y;
        }
        float &out = C[b * c.strideC + i + j * c.ldc];
        out = static_cast<float>(alpha * sum + beta * out);
      }
}

struct GemmCase {
  int64_t batch, m, n, k;
  bool transA, transB;
  /// Extra elements per row (ld = cols + pad) and broadcast of A or B.
  int64_t pad;
  bool broadcastA, broadcastB;
};

RowMajorGemm layout(const GemmCase &t) {
  RowMajorGemm g;
  g.batch = t.batch;
  g.m = t.m;
  g.n = t.n;
  g.k = t.k;
  g.transA = t.transA;
  g.transB = t.transB;
  int64_t aRows = t.transA ? t.k : t.m, aCols = t.transA ? t.m : t.k;
  int64_t bRows = t.transB ? t.n : t.k, bCols = t.transB ? t.k : t.n;
  g.lda = std::max<int64_t>(aCols, 1) + t.pad;
  g.ldb = std::max<int64_t>(bCols, 1) + t.pad;
  g.ldc = std::max<int64_t>(t.n, 1) + t.pad;
  g.strideA = t.broadcastA ? 0 : aRows * g.lda + 3;
  g.strideB = t.broadcastB ? 0 : bRows * g.ldb + 1;
  g.strideC = t.m * g.ldc + 2;
  return g;
}

class GemmMapping : public ::testing::TestWithParam<GemmCase> {};

TEST_P(GemmMapping, ColumnMajorCallComputesTheRowMajorContract) {
  const GemmCase &t = GetParam();
  RowMajorGemm g = layout(t);
  ASSERT_EQ(checkGemm(g, "pd_gpu_gemm_f32"), "");
  std::mt19937 rng(static_cast<unsigned>(t.m * 131 + t.n * 17 + t.k));
  std::uniform_real_distribution<float> dist(-1, 1);
  auto fill = [&](size_t n) {
    std::vector<float> v(n);
    for (float &x : v)
      x = dist(rng);
    return v;
  };
  int64_t aRows = t.transA ? t.k : t.m, bRows = t.transB ? t.n : t.k;
  std::vector<float> A = fill((t.batch - 1) * g.strideA + aRows * g.lda + 1);
  std::vector<float> B = fill((t.batch - 1) * g.strideB + bRows * g.ldb + 1);
  std::vector<float> C0 = fill(t.batch * g.strideC + 1);
  std::vector<float> expected = C0, actual = C0;
  const float alpha = 0.75f, beta = -0.5f;
  rowMajorReference(g, alpha, A.data(), B.data(), beta, expected.data());
  ColumnMajorGemm c = toColumnMajor(g);
  ASSERT_TRUE(c.swapped);
  columnMajorBlas(c, alpha, B.data(), A.data(), beta, actual.data());
  for (size_t i = 0; i < expected.size(); ++i)
    ASSERT_NEAR(actual[i], expected[i], 1e-5) << "element " << i;
  // The padding between rows and batch items is untouched.
  for (int64_t b = 0; b < t.batch; ++b)
    for (int64_t i = 0; i < t.m; ++i)
      for (int64_t j = t.n; j < g.ldc; ++j) {
        size_t at = b * g.strideC + i * g.ldc + j;
        ASSERT_EQ(actual[at], C0[at]);
      }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, GemmMapping,
    ::testing::Values(GemmCase{1, 2, 3, 4, false, false, 0, false, false},
                      GemmCase{1, 5, 7, 3, true, false, 0, false, false},
                      GemmCase{1, 5, 7, 3, false, true, 0, false, false},
                      GemmCase{1, 4, 6, 9, true, true, 0, false, false},
                      GemmCase{3, 4, 5, 6, false, false, 2, false, false},
                      GemmCase{3, 4, 5, 6, true, true, 1, false, false},
                      GemmCase{4, 3, 2, 5, false, true, 0, true, false},
                      GemmCase{4, 3, 2, 5, true, false, 3, false, true},
                      GemmCase{2, 1, 8, 1, false, false, 0, false, false},
                      GemmCase{2, 6, 1, 4, true, false, 0, false, false},
                      GemmCase{1, 3, 3, 0, false, false, 0, false, false}),
    [](const ::testing::TestParamInfo<GemmCase> &info) {
      const GemmCase &t = info.param;
      return "b" + std::to_string(t.batch) + "m" + std::to_string(t.m) + "n" +
             std::to_string(t.n) + "k" + std::to_string(t.k) +
             (t.transA ? "_tA" : "") + (t.transB ? "_tB" : "") +
             (t.pad ? "_pad" : "") + (t.broadcastA ? "_bcastA" : "") +
             (t.broadcastB ? "_bcastB" : "");
    });

RowMajorGemm valid() {
  RowMajorGemm g;
  g.batch = 2;
  g.m = 2;
  g.n = 3;
  g.k = 4;
  g.lda = 4;
  g.ldb = 3;
  g.ldc = 3;
  g.strideA = 8;
  g.strideB = 12;
  g.strideC = 6;
  return g;
}

TEST(GemmArguments, AcceptsAValidCall) {
  EXPECT_EQ(checkGemm(valid(), "f"), "");
}

TEST(GemmArguments, NamesWhatIsWrong) {
  std::map<std::string, std::function<void(RowMajorGemm &)>> cases = {
      {"f: negative size (batch 2, m -1, n 3, k 4)",
       [](RowMajorGemm &g) { g.m = -1; }},
      {"f: lda 3 < 4 (A is 2x4 row-major, transA 0)",
       [](RowMajorGemm &g) { g.lda = 3; }},
      {"f: lda 3 < 4 (A is 2x4 row-major, transA 1)",
       [](RowMajorGemm &g) {
         g.transA = true;
         g.m = 4;
         g.k = 2;
         g.lda = 3;
         g.strideA = 16;
         g.strideC = 12;
       }},
      {"f: ldb 2 < 3 (B is 4x3 row-major, transB 0)",
       [](RowMajorGemm &g) { g.ldb = 2; }},
      {"f: ldc 2 < 3 (C is 2x3 row-major)",
       [](RowMajorGemm &g) { g.ldc = 2; }},
      {"f: strideC is 0 with batch 2 (batch items would write the same C)",
       [](RowMajorGemm &g) { g.strideC = 0; }},
      {"f: strideC 5 makes batch items of C overlap (each is 2x3 with ldc 3)",
       [](RowMajorGemm &g) { g.strideC = 5; }},
      {"f: negative batch stride (strideA -1, strideB 12, strideC 6)",
       [](RowMajorGemm &g) { g.strideA = -1; }},
      {"f: A is NULL", [](RowMajorGemm &g) { g.nullA = true; }},
      {"f: C is NULL", [](RowMajorGemm &g) { g.nullC = true; }},
      {"f: size 4294967296 does not fit cuBLAS's 32-bit arguments",
       [](RowMajorGemm &g) {
         g.batch = 1;
         g.k = 4294967296;
         g.lda = 4294967296;
       }},
  };
  for (auto &[message, mutate] : cases) {
    RowMajorGemm g = valid();
    mutate(g);
    EXPECT_EQ(checkGemm(g, "f"), message);
  }
  // Empty products need no pointers; k = 0 still needs C.
  RowMajorGemm empty = valid();
  empty.m = 0;
  empty.nullA = empty.nullB = empty.nullC = true;
  EXPECT_EQ(checkGemm(empty, "f"), "");
  RowMajorGemm noK = valid();
  noK.k = 0;
  noK.lda = 1;
  noK.nullA = noK.nullB = true;
  EXPECT_EQ(checkGemm(noK, "f"), "");
}

TEST(GemmArguments, OneRowMatricesMayHaveAnyRowStride) {
  // A 1x4 A with lda 1 (a size-1 dimension's stride in a memref layout).
  RowMajorGemm g = valid();
  g.batch = 1;
  g.m = 1;
  g.lda = 1;
  g.ldc = 0;
  EXPECT_NE(checkGemm(g, "f"), "");
  pipedream::runtime::normalizeLeadingDimensions(g);
  EXPECT_EQ(g.lda, 4);
  EXPECT_EQ(g.ldc, 3);
  EXPECT_EQ(g.ldb, 3);
  EXPECT_EQ(checkGemm(g, "f"), "");
  // Two rows: the stride matters and stays wrong.
  RowMajorGemm two = valid();
  two.lda = 1;
  pipedream::runtime::normalizeLeadingDimensions(two);
  EXPECT_EQ(two.lda, 1);
  EXPECT_EQ(checkGemm(two, "f"), "f: lda 1 < 4 (A is 2x4 row-major, transA 0)");
}

//===----------------------------------------------------------------------===//
// bundle.json `target` and `gpu_arch`
//===----------------------------------------------------------------------===//

nlohmann::json minimalManifest() {
  return {{"format", "pipedream-bundle"},
          {"version", 2},
          {"library", "program.so"},
          {"functions",
           {{{"name", "main"},
             {"symbol", "pipedream_main"},
             {"kind", "forward"},
             {"buffers",
              {{{"name", "x"},
                {"role", "input"},
                {"dtype", "f32"},
                {"shape", {2}}},
               {{"name", "y"},
                {"role", "output"},
                {"dtype", "f32"},
                {"shape", {2}}}}}}}}};
}

std::string manifestError(const nlohmann::json &m) {
  try {
    parseManifest(m.dump(), "b/bundle.json");
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

TEST(GpuManifest, TargetDefaultsToCpu) {
  auto m = parseManifest(minimalManifest().dump(), "b/bundle.json");
  EXPECT_EQ(m.target, "cpu");
  EXPECT_EQ(m.gpuArch, "");
}

TEST(GpuManifest, ReadsCudaTargetAndArch) {
  nlohmann::json j = minimalManifest();
  j["target"] = "cuda";
  j["gpu_arch"] = "sm_90a";
  auto m = parseManifest(j.dump(), "b/bundle.json");
  EXPECT_EQ(m.target, "cuda");
  EXPECT_EQ(m.gpuArch, "sm_90a");
}

TEST(GpuManifest, RejectsBadTargetFields) {
  nlohmann::json j = minimalManifest();
  j["target"] = "tpu";
  EXPECT_NE(manifestError(j).find("b/bundle.json: target: unknown target "
                                  "'tpu' (expected \"cpu\" or \"cuda\")"),
            std::string::npos)
      << manifestError(j);
  j["target"] = 3;
  EXPECT_NE(manifestError(j).find("target: expected a string"),
            std::string::npos)
      << manifestError(j);
  j["target"] = "cpu";
  j["gpu_arch"] = "sm_90";
  EXPECT_NE(manifestError(j).find("gpu_arch: only a \"cuda\" target has a "
                                  "gpu_arch"),
            std::string::npos)
      << manifestError(j);
  j["target"] = "cuda";
  j["gpu_arch"] = "hopper";
  EXPECT_NE(manifestError(j).find("gpu_arch: expected an architecture like "
                                  "\"sm_90\", got \"hopper\""),
            std::string::npos)
      << manifestError(j);
}

TEST(GpuManifest, DeviceTestBundlesParse) {
  // The manifests GpuDeviceTest.cpp writes (checked here, where CI runs).
  std::string bin;
  nlohmann::json training = pipedream::test::chainTrainingManifest(2, bin);
  training["functions"].push_back({{"name", "fail"},
                                   {"symbol", "cuda_fail"},
                                   {"kind", "forward"},
                                   {"buffers", nlohmann::json::array()}});
  std::vector<nlohmann::json> manifests = {
      training, pipedream::test::chainPipelineManifest(2, "1f1b", bin),
      pipedream::test::chainPipelineManifest(2, "gpipe", bin)};
  for (nlohmann::json &m : manifests) {
    m["target"] = "cuda";
    m["gpu_arch"] = "sm_90";
    EXPECT_EQ(manifestError(m), "");
  }
}

//===----------------------------------------------------------------------===//
// Opening a cuda bundle without a device
//===----------------------------------------------------------------------===//

TEST(GpuBundle, NoDeviceIsAOneLineError) {
  if (pd_gpu_device_check() == PD_OK)
    GTEST_SKIP() << "a CUDA device is present (GpuDeviceTest covers it)";
  TempDir dir;
  nlohmann::json j = minimalManifest();
  j["target"] = "cuda";
  j["gpu_arch"] = "sm_90";
  pipedream::test::writeFile(dir.path() + "/bundle.json", j.dump());
  // No program.so: the device check comes first.
  pd_bundle *bundle = reinterpret_cast<pd_bundle *>(1);
  EXPECT_EQ(pd_bundle_open(dir.path().c_str(), &bundle), PD_ERROR_UNSUPPORTED);
  EXPECT_EQ(bundle, nullptr);
  std::string message = pd_last_error();
  EXPECT_TRUE(message.rfind("no CUDA device: ", 0) == 0 ||
              message.rfind("no CUDA support: ", 0) == 0)
      << message;
  EXPECT_NE(message.find("(bundle " + dir.path() + " targets cuda)"),
            std::string::npos)
      << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST(GpuBundle, DeviceCheckAndNameWithoutADevice) {
  if (pd_gpu_device_check() == PD_OK)
    GTEST_SKIP() << "a CUDA device is present";
  std::string message = pd_last_error();
  EXPECT_TRUE(message.rfind("no CUDA device: cudaGetDeviceCount: ", 0) == 0 ||
              message.rfind("no CUDA support: ", 0) == 0)
      << message;
  EXPECT_STREQ(pd_gpu_device_name(), "");
}

TEST(GpuBundle, CpuBundleReportsItsTarget) {
  TempDir dir;
  pipedream::test::makeBundle(dir.path());
  pd_bundle *bundle = nullptr;
  ASSERT_EQ(pd_bundle_open(dir.path().c_str(), &bundle), PD_OK)
      << pd_last_error();
  EXPECT_STREQ(pd_bundle_target(bundle), "cpu");
  pd_bundle_close(bundle);
  EXPECT_STREQ(pd_bundle_target(nullptr), "");
}

TEST(GpuBundle, NcclTransportWithoutADevice) {
  if (pd_gpu_device_check() == PD_OK)
    GTEST_SKIP() << "a CUDA device is present";
  pd_transport *transport = reinterpret_cast<pd_transport *>(1);
  EXPECT_EQ(pd_transport_create_nccl(nullptr, &transport),
            PD_ERROR_UNSUPPORTED);
  EXPECT_EQ(transport, nullptr);
  std::string message = pd_last_error();
  EXPECT_TRUE(message.rfind("no CUDA", 0) == 0) << message;
}

//===----------------------------------------------------------------------===//
// torchrun environment
//===----------------------------------------------------------------------===//

std::string parseEnv(const std::map<std::string, std::string> &vars,
                     TorchrunEnv &env) {
  std::string error;
  bool ok = parseTorchrunEnv(
      [&](const char *name) -> const char * {
        auto it = vars.find(name);
        return it == vars.end() ? nullptr : it->second.c_str();
      },
      env, error);
  return ok ? "" : error;
}

TEST(TorchrunEnv, ReadsRankSizeAndAddress) {
  TorchrunEnv env;
  EXPECT_EQ(parseEnv({{"RANK", "2"},
                      {"WORLD_SIZE", "4"},
                      {"MASTER_ADDR", "node0"},
                      {"MASTER_PORT", "29500"}},
                     env),
            "");
  EXPECT_EQ(env.rank, 2u);
  EXPECT_EQ(env.size, 4u);
  EXPECT_EQ(env.address, "node0");
  // torchrun's own store has MASTER_PORT: the id exchange uses the next.
  EXPECT_EQ(env.port, 29501);
  EXPECT_EQ(parseEnv({{"RANK", "0"},
                      {"WORLD_SIZE", "1"},
                      {"MASTER_ADDR", "127.0.0.1"},
                      {"MASTER_PORT", "29500"},
                      {"PIPEDREAM_NCCL_PORT", "40000"}},
                     env),
            "");
  EXPECT_EQ(env.port, 40000);
}

TEST(TorchrunEnv, NamesTheBadVariable) {
  TorchrunEnv env;
  std::map<std::string, std::string> good = {{"RANK", "1"},
                                             {"WORLD_SIZE", "2"},
                                             {"MASTER_ADDR", "h"},
                                             {"MASTER_PORT", "29500"}};
  auto without = [&](const std::string &name) {
    auto vars = good;
    vars.erase(name);
    return vars;
  };
  auto with = [&](const std::string &name, const std::string &value) {
    auto vars = good;
    vars[name] = value;
    return vars;
  };
  EXPECT_EQ(parseEnv(without("RANK"), env),
            "$RANK is not set (run under torchrun, or set RANK, WORLD_SIZE, "
            "MASTER_ADDR and MASTER_PORT)");
  EXPECT_EQ(parseEnv(without("MASTER_ADDR"), env),
            "$MASTER_ADDR is not set (the host of rank 0)");
  EXPECT_EQ(parseEnv(with("RANK", "2"), env),
            "$RANK is '2', expected an integer in [0, 1]");
  EXPECT_EQ(parseEnv(with("WORLD_SIZE", "two"), env),
            "$WORLD_SIZE is 'two', expected an integer in [1, 1048576]");
  EXPECT_EQ(parseEnv(with("MASTER_PORT", "65535"), env),
            "$MASTER_PORT is '65535', expected an integer in [1, 65534]");
  EXPECT_EQ(parseEnv(with("PIPEDREAM_NCCL_PORT", "0"), env),
            "$PIPEDREAM_NCCL_PORT is '0', expected an integer in [1, 65535]");
}

/// A TCP port nobody listens on now (bound, read, closed).
int freePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr *>(&address), length), 0);
  EXPECT_EQ(getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length),
            0);
  close(fd);
  return ntohs(address.sin_port);
}

TEST(TorchrunBootstrap, EveryRankGetsRankZerosId) {
  const size_t ranks = 3;
  int port = freePort();
  std::vector<std::vector<unsigned char>> ids(
      ranks, std::vector<unsigned char>(PD_GPU_NCCL_ID_BYTES, 0));
  for (size_t i = 0; i < PD_GPU_NCCL_ID_BYTES; ++i)
    ids[0][i] = static_cast<unsigned char>(i * 7 + 1);
  std::vector<std::string> errors(ranks);
  std::vector<std::thread> threads;
  // Clients first: they retry until rank 0 listens.
  for (size_t r = ranks; r-- > 0;)
    threads.emplace_back([&, r] {
      TorchrunEnv env;
      env.rank = r;
      env.size = ranks;
      env.address = "localhost";
      env.port = port;
      try {
        exchangeNcclId(env, 30, ids[r].data());
      } catch (const Error &e) {
        errors[r] = e.what();
      }
    });
  for (auto &thread : threads)
    thread.join();
  for (size_t r = 0; r < ranks; ++r) {
    EXPECT_EQ(errors[r], "") << "rank " << r;
    EXPECT_EQ(ids[r], ids[0]) << "rank " << r;
  }
}

TEST(TorchrunBootstrap, MissingRankZeroTimesOut) {
  TorchrunEnv env;
  env.rank = 1;
  env.size = 2;
  env.address = "127.0.0.1";
  env.port = freePort();
  unsigned char id[PD_GPU_NCCL_ID_BYTES];
  try {
    exchangeNcclId(env, 0.3, id);
    FAIL() << "expected a timeout";
  } catch (const Error &e) {
    EXPECT_EQ(e.status, PD_ERROR_TIMEOUT);
    EXPECT_EQ(std::string(e.what()),
              "NCCL bootstrap (127.0.0.1:" + std::to_string(env.port) +
                  "): rank 0 did not accept a connection before the timeout");
  }
}

} // namespace
