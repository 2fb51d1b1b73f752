//===- GpuDeviceTest.cpp - GPU runtime tests that need a CUDA device ------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// CTest label `gpu`. Exits 77 (CTest: skipped) when no CUDA device is
// usable, so machines without one (CI) report these as skipped, not passed.
// Checks pd_gpu_gemm_f32/bf16 against a CPU reference of the row-major
// contract, the mgpu* launch path on a hand-written PTX kernel (and a fatbin
// of it when nvcc was found at build time) and NCCL send/recv to self; the
// runtime on cuda bundles (GpuRuntimeTest.cpp, linked in) on a real device.
//
//===----------------------------------------------------------------------===//

#include "pipedream/gpu.h"
#include "pipedream/runtime.h"

#include "GpuSupport.h"
#include "TestUtil.h"


#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#if PIPEDREAM_HAVE_NCCL
#include <nccl.h>
#endif

extern "C" {
void *mgpuModuleLoad(void *data, size_t size);
void *mgpuModuleLoadJIT(void *data, int optLevel);
void mgpuModuleUnload(void *module);
void *mgpuModuleGetFunction(void *module, const char *name);
void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t smem, void *stream,
                      void **params, void **extra, size_t paramsCount);
void *mgpuStreamCreate();
void mgpuStreamDestroy(void *stream);
void mgpuStreamSynchronize(void *stream);
void *mgpuEventCreate();
void mgpuEventRecord(void *event, void *stream);
void mgpuEventSynchronize(void *event);
void mgpuEventDestroy(void *event);
void *mgpuMemAlloc(uint64_t bytes, void *stream, bool isHostShared);
void mgpuMemFree(void *pointer, void *stream);
void mgpuMemcpy(void *dst, void *src, size_t bytes, void *stream);
void mgpuMemset32(void *dst, unsigned value, size_t count, void *stream);
void mgpuMemset16(void *dst, unsigned short value, size_t count,
                  void *stream);
void pd_gpu_gemm_f32(int64_t batch, int64_t m, int64_t n, int64_t k,
                     int32_t transA, int32_t transB, float alpha,
                     const float *A, int64_t lda, int64_t strideA,
                     const float *B, int64_t ldb, int64_t strideB, float beta,
                     float *C, int64_t ldc, int64_t strideC);
void pd_gpu_gemm_bf16(int64_t batch, int64_t m, int64_t n, int64_t k,
                      int32_t transA, int32_t transB, float alpha,
                      const void *A, int64_t lda, int64_t strideA,
                      const void *B, int64_t ldb, int64_t strideB, float beta,
                      void *C, int64_t ldc, int64_t strideC);
}


namespace {

const pd_gpu_support &gpu() { return *pd_gpu_support_get(); }

std::string takeError() {
  char message[2048];
  return gpu().take_error(message, sizeof(message)) ? message : "";
}

/// Device copy of host floats (freed by the caller with gpu().free).
template <typename T> void *upload(const std::vector<T> &host) {
  void *device = gpu().alloc(host.size() * sizeof(T));
  EXPECT_NE(device, nullptr) << takeError();
  EXPECT_EQ(gpu().copy_to_device(device, host.data(), host.size() * sizeof(T)),
            0);
  return device;
}

template <typename T> std::vector<T> download(void *device, size_t count) {
  std::vector<T> host(count);
  EXPECT_EQ(gpu().copy_to_host(host.data(), device, count * sizeof(T)), 0);
  EXPECT_EQ(gpu().synchronize(), 0) << takeError();
  return host;
}

//===----------------------------------------------------------------------===//
// GEMMs vs the CPU reference of the row-major contract
//===----------------------------------------------------------------------===//

struct Gemm {
  int64_t batch, m, n, k;
  bool transA, transB;
  int64_t pad;
  bool broadcastB;
};

uint16_t toBf16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  bits += 0x7FFF + ((bits >> 16) & 1); // round to nearest even
  return static_cast<uint16_t>(bits >> 16);
}

float fromBf16(uint16_t x) {
  uint32_t bits = static_cast<uint32_t>(x) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

/// Runs one case in f32 or bf16 and compares with the reference computed
/// in double on the same (rounded) inputs.
void checkGemm(const Gemm &t, bool bf16) {
  int64_t aRows = t.transA ? t.k : t.m, aCols = t.transA ? t.m : t.k;
  int64_t bRows = t.transB ? t.n : t.k, bCols = t.transB ? t.k : t.n;
  int64_t lda = aCols + t.pad, ldb = bCols + t.pad, ldc = t.n + t.pad;
  int64_t strideA = aRows * lda, strideB = t.broadcastB ? 0 : bRows * ldb;
  int64_t strideC = t.m * ldc;
  size_t aSize = t.batch * strideA, bSize = (t.broadcastB ? 1 : t.batch) *
                                                bRows * ldb,
         cSize = t.batch * strideC;
  std::mt19937 rng(static_cast<unsigned>(t.m * 7 + t.n * 3 + t.k));
  std::uniform_real_distribution<float> dist(-1, 1);
  auto fill = [&](size_t n) {
    std::vector<float> v(n);
    for (float &x : v)
      x = bf16 ? fromBf16(toBf16(dist(rng))) : dist(rng);
    return v;
  };
  std::vector<float> A = fill(aSize), B = fill(bSize), C = fill(cSize);
  const float alpha = 1.25f, beta = 0.5f;
  std::vector<double> expected(cSize);
  for (size_t i = 0; i < cSize; ++i)
    expected[i] = C[i];
  for (int64_t b = 0; b < t.batch; ++b)
    for (int64_t i = 0; i < t.m; ++i)
      for (int64_t j = 0; j < t.n; ++j) {
        double sum = 0;
        for (int64_t p = 0; p < t.k; ++p) {
          const float *a = A.data() + b * strideA;
          const float *bb = B.data() + b * strideB;
          sum += double(t.transA ? a[p * lda + i] : a[i * lda + p]) *
                 double(t.transB ? bb[j * ldb + p] : bb[p * ldb + j]);
        }
        double &c = expected[b * strideC + i * ldc + j];
        c = alpha * sum + beta * c;
      }
  std::vector<float> actual(cSize);
  if (bf16) {
    auto narrow = [](const std::vector<float> &v) {
      std::vector<uint16_t> out(v.size());
      for (size_t i = 0; i < v.size(); ++i)
        out[i] = toBf16(v[i]);
      return out;
    };
    void *dA = upload(narrow(A)), *dB = upload(narrow(B)),
         *dC = upload(narrow(C));
    pd_gpu_gemm_bf16(t.batch, t.m, t.n, t.k, t.transA, t.transB, alpha, dA,
                     lda, strideA, dB, ldb, strideB, beta, dC, ldc, strideC);
    EXPECT_EQ(gpu().synchronize(), 0);
    EXPECT_EQ(takeError(), "");
    std::vector<uint16_t> out = download<uint16_t>(dC, cSize);
    for (size_t i = 0; i < cSize; ++i)
      actual[i] = fromBf16(out[i]);
    for (void *p : {dA, dB, dC})
      gpu().free(p);
  } else {
    void *dA = upload(A), *dB = upload(B), *dC = upload(C);
    pd_gpu_gemm_f32(t.batch, t.m, t.n, t.k, t.transA, t.transB, alpha,
                    static_cast<float *>(dA), lda, strideA,
                    static_cast<float *>(dB), ldb, strideB, beta,
                    static_cast<float *>(dC), ldc, strideC);
    EXPECT_EQ(gpu().synchronize(), 0);
    EXPECT_EQ(takeError(), "");
    actual = download<float>(dC, cSize);
    for (void *p : {dA, dB, dC})
      gpu().free(p);
  }
  // f32 accumulation, TF32 off: error ~ k * 2^-24; bf16 output: 2^-8.
  double tolerance = bf16 ? 1e-2 : 1e-5 * std::sqrt(double(t.k) + 1);
  for (size_t i = 0; i < cSize; ++i)
    ASSERT_NEAR(actual[i], expected[i],
                tolerance * (1 + std::fabs(expected[i])))
        << "element " << i << (bf16 ? " (bf16)" : " (f32)");
}

const Gemm kGemms[] = {
    {1, 64, 48, 32, false, false, 0, false},
    {1, 33, 17, 65, true, false, 0, false},
    {1, 33, 17, 65, false, true, 3, false},
    {3, 20, 30, 40, true, true, 1, false},
    {4, 16, 8, 24, false, false, 0, true},
    {2, 1, 128, 256, false, true, 0, false},
};

TEST(GpuGemm, F32MatchesTheRowMajorReference) {
  for (const Gemm &t : kGemms)
    checkGemm(t, false);
}

TEST(GpuGemm, Bf16MatchesTheRowMajorReference) {
  for (const Gemm &t : kGemms)
    checkGemm(t, true);
}

TEST(GpuGemm, BadArgumentsAreRecordedNotRun) {
  pd_gpu_gemm_f32(1, 2, 3, 4, 0, 0, 1, nullptr, 4, 0, nullptr, 3, 0, 0,
                  nullptr, 2, 0);
  EXPECT_EQ(takeError(), "pd_gpu_gemm_f32: ldc 2 < 3 (C is 2x3 row-major)");
  EXPECT_EQ(takeError(), "");
}

//===----------------------------------------------------------------------===//
// mgpu*: module load, launch, memory
//===----------------------------------------------------------------------===//

/// GpuAddOne.ptx: add_one(float *data, u32 n) adds 1 to data[0, n).
std::string addOnePtx() {
  std::string path = pipedream::test::testFile(PIPEDREAM_TEST_PTX);
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  return std::string((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
}

void launchAddOne(void *module) {
  ASSERT_NE(module, nullptr) << takeError();
  void *function = mgpuModuleGetFunction(module, "add_one");
  ASSERT_NE(function, nullptr) << takeError();
  void *stream = mgpuStreamCreate();
  ASSERT_NE(stream, nullptr);
  EXPECT_EQ(mgpuStreamCreate(), stream) << "one stream per thread";
  const uint32_t n = 1000;
  void *data = mgpuMemAlloc(n * sizeof(float), stream, false);
  ASSERT_NE(data, nullptr) << takeError();
  // 2.0f everywhere, then + 1 in the kernel.
  mgpuMemset32(data, 0x40000000u, n, stream);
  uint32_t count = n;
  void *params[] = {&data, &count};
  mgpuLaunchKernel(function, (n + 255) / 256, 1, 1, 256, 1, 1, 0, stream,
                   params, nullptr, 2);
  void *event = mgpuEventCreate();
  mgpuEventRecord(event, stream);
  mgpuEventSynchronize(event);
  mgpuEventDestroy(event);
  std::vector<float> host(n);
  mgpuMemcpy(host.data(), data, n * sizeof(float), stream);
  mgpuStreamSynchronize(stream);
  mgpuMemFree(data, stream);
  mgpuStreamSynchronize(stream);
  mgpuStreamDestroy(stream); // the thread's stream: a no-op
  EXPECT_EQ(takeError(), "");
  for (uint32_t i = 0; i < n; ++i)
    ASSERT_EQ(host[i], 3.0f) << "element " << i;
}

TEST(GpuLaunch, PtxModuleRunsOnTheThreadStream) {
  std::string ptx = addOnePtx();
  void *module = mgpuModuleLoadJIT(&ptx[0], 2);
  launchAddOne(module);
  mgpuModuleUnload(module);
  EXPECT_EQ(takeError(), "");
}

#ifdef PIPEDREAM_TEST_FATBIN
TEST(GpuLaunch, FatbinModuleRuns) {
  std::string path = pipedream::test::testFile(PIPEDREAM_TEST_FATBIN);
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << path;
  std::string blob((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  void *module = mgpuModuleLoad(&blob[0], blob.size());
  launchAddOne(module);
  mgpuModuleUnload(module);
}
#endif

TEST(GpuLaunch, MissingKernelIsRecorded) {
  std::string ptx = addOnePtx();
  void *module = mgpuModuleLoadJIT(&ptx[0], 2);
  ASSERT_NE(module, nullptr) << takeError();
  EXPECT_EQ(mgpuModuleGetFunction(module, "no_such_kernel"), nullptr);
  std::string error = takeError();
  EXPECT_EQ(error.rfind("cuda: cudaLibraryGetKernel: ", 0), 0u) << error;
  mgpuModuleUnload(module);
  // A bad PTX module: the driver's log is in the message.
  std::string bad = ".version 7.0\n.target sm_75\nnot ptx\n";
  EXPECT_EQ(mgpuModuleLoadJIT(&bad[0], 2), nullptr);
  error = takeError();
  EXPECT_EQ(error.rfind("cuda: cudaLibraryLoadData (PTX", 0), 0u) << error;
}

TEST(GpuLaunch, Memset16FillsNonUniformPatterns) {
  void *stream = mgpuStreamCreate();
  const size_t n = 1001;
  void *data = mgpuMemAlloc(n * 2, stream, false);
  mgpuMemset16(data, 0x3F80, n, stream); // bf16 1.0
  std::vector<uint16_t> host(n);
  mgpuMemcpy(host.data(), data, n * 2, stream);
  mgpuStreamSynchronize(stream);
  mgpuMemFree(data, stream);
  void *managed = mgpuMemAlloc(64, stream, true);
  ASSERT_NE(managed, nullptr);
  static_cast<unsigned char *>(managed)[0] = 7; // host-visible
  mgpuMemFree(managed, stream);
  mgpuStreamSynchronize(stream);
  EXPECT_EQ(takeError(), "");
  for (size_t i = 0; i < n; ++i)
    ASSERT_EQ(host[i], 0x3F80) << "element " << i;
}

//===----------------------------------------------------------------------===//
// NCCL
//===----------------------------------------------------------------------===//

#if PIPEDREAM_HAVE_NCCL
TEST(GpuNccl, OneRankSendsToItselfInAGroup) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t comm = nullptr;
  ASSERT_EQ(ncclCommInitRank(&comm, 1, id, 0), ncclSuccess);
  std::vector<float> values(257);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = 0.5f * float(i);
  void *send = upload(values);
  void *recv = gpu().alloc(values.size() * sizeof(float));
  void *stream = mgpuStreamCreate();
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclSend(send, values.size(), ncclFloat32, 0, comm,
                     static_cast<cudaStream_t>(stream)),
            ncclSuccess);
  ASSERT_EQ(ncclRecv(recv, values.size(), ncclFloat32, 0, comm,
                     static_cast<cudaStream_t>(stream)),
            ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  EXPECT_EQ(download<float>(recv, values.size()), values);
  gpu().free(send);
  gpu().free(recv);
  ncclCommDestroy(comm);
}
#endif

TEST(GpuNccl, TransportFromTorchrunEnvironment) {
  setenv("RANK", "0", 1);
  setenv("WORLD_SIZE", "1", 1);
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  setenv("MASTER_PORT", "29517", 1);
  pd_transport *transport = nullptr;
  pd_status status = pd_transport_create_nccl(nullptr, &transport);
#if PIPEDREAM_HAVE_NCCL
  ASSERT_EQ(status, PD_OK) << pd_last_error();
  EXPECT_STREQ(pd_transport_kind(transport), "nccl");
  EXPECT_EQ(pd_transport_size(transport), 1u);
  double out = 2.5, in = 0;
  EXPECT_EQ(pd_transport_send(transport, 0, 7, &out, sizeof(out)), PD_OK);
  EXPECT_EQ(pd_transport_recv(transport, 0, 7, &in, sizeof(in)), PD_OK)
      << pd_last_error();
  EXPECT_EQ(in, 2.5);
  // Nothing queued: a recv from itself would wait forever.
  EXPECT_EQ(pd_transport_recv(transport, 0, 7, &in, sizeof(in)),
            PD_ERROR_INVALID_ARGUMENT);
  pd_transport_destroy(transport);
#else
  EXPECT_NE(status, PD_OK);
#endif
}

} // namespace

int main(int argc, char **argv) {
  if (pd_gpu_device_check() != PD_OK) {
    std::printf("SKIPPED: %s\n", pd_last_error());
    return 77;
  }
  std::printf("device: %s\n", pd_gpu_device_name());
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
