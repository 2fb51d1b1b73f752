//===- RuntimeTest.cpp - the C API on a hand-built bundle -----------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Opens bundles whose program.so is TestProgram.c (built with the normal C
// compiler), so loading, weights, buffers and calls are tested without the
// MLIR compiler.
//
//===----------------------------------------------------------------------===//

#include "pipedream/runtime.h"

#include "TestUtil.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

using json = nlohmann::json;
using pipedream::test::makeBundle;
using pipedream::test::TempDir;
using pipedream::test::testManifest;
using pipedream::test::testWeights;
using pipedream::test::writeFile;

namespace {

/// Owns an open bundle.
struct Bundle {
  pd_bundle *handle = nullptr;
  ~Bundle() { pd_bundle_close(handle); }
};

::testing::AssertionResult opened(pd_status status) {
  if (status == PD_OK)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << pd_status_string(status) << ": " << pd_last_error();
}

class RuntimeTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(dir.path().empty());
    makeBundle(dir.path());
  }

  pd_function *function(const char *name) {
    pd_function *f = nullptr;
    EXPECT_EQ(pd_function_lookup(bundle.handle, name, &f), PD_OK)
        << pd_last_error();
    return f;
  }

  pd_buffer *buffer(pd_function *f, const char *name) {
    pd_buffer *b = nullptr;
    EXPECT_EQ(pd_function_find_buffer(f, name, &b), PD_OK) << pd_last_error();
    return b;
  }

  /// Opens `dir` expecting failure; returns the message.
  std::string openError(pd_status expected) {
    pd_bundle *handle = reinterpret_cast<pd_bundle *>(0x1);
    pd_status status = pd_bundle_open(dir.path().c_str(), &handle);
    EXPECT_EQ(status, expected) << pd_status_string(status) << ": "
                                << pd_last_error();
    EXPECT_EQ(handle, nullptr);
    pd_bundle_close(handle);
    return pd_last_error();
  }

  TempDir dir;
  Bundle bundle;
  const int64_t shape23[2] = {2, 3};
};

TEST_F(RuntimeTest, RunsMain) {
  ASSERT_TRUE(opened(pd_bundle_open(dir.path().c_str(), &bundle.handle)));
  EXPECT_STREQ(pd_bundle_model(bundle.handle), "test.onnx");
  EXPECT_EQ(pd_bundle_dir(bundle.handle), dir.path());
  ASSERT_EQ(pd_bundle_function_count(bundle.handle), 3u);
  EXPECT_STREQ(pd_function_name(pd_bundle_function_at(bundle.handle, 2)),
               "twice");
  EXPECT_EQ(pd_bundle_function_at(bundle.handle, 3), nullptr);

  pd_function *main = function("main");
  EXPECT_STREQ(pd_function_symbol(main), "pipedream_main");
  EXPECT_STREQ(pd_function_kind(main), "inference");
  ASSERT_EQ(pd_function_buffer_count(main), 3u);
  pd_buffer *x = pd_function_buffer_at(main, 0);
  EXPECT_STREQ(pd_buffer_name(x), "x");
  EXPECT_EQ(pd_buffer_role(x), PD_ROLE_INPUT);
  EXPECT_EQ(pd_buffer_dtype(x), PD_DTYPE_F32);
  ASSERT_EQ(pd_buffer_rank(x), 2u);
  EXPECT_EQ(pd_buffer_shape(x)[0], 2);
  EXPECT_EQ(pd_buffer_shape(x)[1], 3);
  EXPECT_EQ(pd_buffer_num_elements(x), 6u);
  EXPECT_EQ(pd_buffer_num_bytes(x), 24u);
  EXPECT_EQ(pd_function_buffer_at(main, 3), nullptr);

  std::vector<float> in = {1, 2, 3, 4, 5, 6};
  ASSERT_EQ(pd_buffer_write(x, PD_DTYPE_F32, 2, shape23, in.data(), 24), PD_OK)
      << pd_last_error();
  ASSERT_EQ(pd_function_run(main), PD_OK) << pd_last_error();
  std::vector<float> out(6);
  ASSERT_EQ(pd_buffer_read(buffer(main, "y"), PD_DTYPE_F32, 2, shape23,
                           out.data(), 24),
            PD_OK)
      << pd_last_error();
  std::vector<float> w = pipedream::test::testW();
  for (size_t i = 0; i < 6; ++i)
    EXPECT_FLOAT_EQ(out[i], in[i] * w[i] + 1) << i;
}

TEST_F(RuntimeTest, WeightsAreLoadedSharedAndAligned) {
  ASSERT_TRUE(opened(pd_bundle_open(dir.path().c_str(), &bundle.handle)));
  ASSERT_EQ(pd_bundle_weight_count(bundle.handle), 2u);
  pd_buffer *w = nullptr, *b = nullptr;
  ASSERT_EQ(pd_bundle_find_weight(bundle.handle, "w", &w), PD_OK);
  ASSERT_EQ(pd_bundle_find_weight(bundle.handle, "b", &b), PD_OK);
  EXPECT_EQ(pd_bundle_weight_at(bundle.handle, 0), w);
  EXPECT_EQ(pd_buffer_role(w), PD_ROLE_WEIGHT);
  // One copy of each weight, shared by every function using it.
  EXPECT_EQ(buffer(function("main"), "w"), w);
  EXPECT_EQ(buffer(function("affine"), "w"), w);
  EXPECT_EQ(buffer(function("affine"), "b"), b);

  std::vector<float> values(3);
  const int64_t shape3[1] = {3};
  ASSERT_EQ(pd_buffer_read(b, PD_DTYPE_F32, 1, shape3, values.data(), 12),
            PD_OK);
  EXPECT_EQ(values, pipedream::test::testB());

  for (size_t f = 0; f < pd_bundle_function_count(bundle.handle); ++f) {
    pd_function *fn = pd_bundle_function_at(bundle.handle, f);
    for (size_t i = 0; i < pd_function_buffer_count(fn); ++i)
      EXPECT_EQ(reinterpret_cast<uintptr_t>(
                    pd_buffer_const_data(pd_function_buffer_at(fn, i))) %
                    64,
                0u);
  }

  // The compiled code sees the same alignment, and the shared weights.
  pd_function *affine = function("affine");
  std::vector<float> in = {1, 1, 1, 2, 2, 2};
  ASSERT_EQ(pd_buffer_write(buffer(affine, "x"), PD_DTYPE_F32, 2, shape23,
                            in.data(), 24),
            PD_OK);
  ASSERT_EQ(pd_function_run(affine), PD_OK) << pd_last_error();
  unsigned char aligned = 0;
  ASSERT_EQ(pd_buffer_read(buffer(affine, "aligned"), PD_DTYPE_I1, 0, nullptr,
                           &aligned, 1),
            PD_OK)
      << pd_last_error();
  EXPECT_EQ(aligned, 1);
  const float *y =
      static_cast<const float *>(pd_buffer_const_data(buffer(affine, "y")));
  std::vector<float> wv = pipedream::test::testW(), bv = pipedream::test::testB();
  for (size_t i = 0; i < 6; ++i)
    EXPECT_FLOAT_EQ(y[i], in[i] * wv[i] + bv[i % 3]) << i;
}

TEST_F(RuntimeTest, WritingAWeightAffectsEveryFunction) {
  ASSERT_TRUE(opened(pd_bundle_open(dir.path().c_str(), &bundle.handle)));
  pd_buffer *w = nullptr;
  ASSERT_EQ(pd_bundle_find_weight(bundle.handle, "w", &w), PD_OK);
  std::vector<float> ones(6, 1.f), in = {1, 2, 3, 4, 5, 6};
  ASSERT_EQ(pd_buffer_write(w, PD_DTYPE_F32, 2, shape23, ones.data(), 24),
            PD_OK);
  pd_function *main = function("main");
  // In-place filling through pd_buffer_data counts as a write.
  std::memcpy(pd_buffer_data(buffer(main, "x")), in.data(), 24);
  ASSERT_EQ(pd_function_run(main), PD_OK) << pd_last_error();
  const float *y =
      static_cast<const float *>(pd_buffer_const_data(buffer(main, "y")));
  for (size_t i = 0; i < 6; ++i)
    EXPECT_FLOAT_EQ(y[i], in[i] + 1);
}

TEST_F(RuntimeTest, IntegerFunction) {
  ASSERT_TRUE(opened(pd_bundle_open(dir.path().c_str(), &bundle.handle)));
  pd_function *twice = function("twice");
  std::vector<int32_t> n = {-3, 0, 7, 2147483647};
  const int64_t shape4[1] = {4};
  ASSERT_EQ(pd_buffer_write(buffer(twice, "n"), PD_DTYPE_I32, 1, shape4,
                            n.data(), 16),
            PD_OK);
  ASSERT_EQ(pd_function_run(twice), PD_OK);
  std::vector<int64_t> m(4);
  ASSERT_EQ(pd_buffer_read(buffer(twice, "m"), PD_DTYPE_I64, 1, shape4,
                           m.data(), 32),
            PD_OK)
      << pd_last_error();
  EXPECT_EQ(m, (std::vector<int64_t>{-6, 0, 14, 4294967294LL}));
}

TEST_F(RuntimeTest, BufferChecks) {
  ASSERT_TRUE(opened(pd_bundle_open(dir.path().c_str(), &bundle.handle)));
  pd_function *main = function("main");
  pd_buffer *x = buffer(main, "x");
  std::vector<double> d(6);
  std::vector<float> f(6);
  EXPECT_EQ(pd_buffer_write(x, PD_DTYPE_F64, 2, shape23, d.data(), 48),
            PD_ERROR_MISMATCH);
  EXPECT_STREQ(pd_last_error(),
               "input 'x' of function 'main' is f32[2x3], got f64[2x3]");
  const int64_t shape32[2] = {3, 2};
  EXPECT_EQ(pd_buffer_write(x, PD_DTYPE_F32, 2, shape32, f.data(), 24),
            PD_ERROR_MISMATCH);
  EXPECT_STREQ(pd_last_error(),
               "input 'x' of function 'main' is f32[2x3], got f32[3x2]");
  const int64_t shape6[1] = {6};
  EXPECT_EQ(pd_buffer_write(x, PD_DTYPE_F32, 1, shape6, f.data(), 24),
            PD_ERROR_MISMATCH);
  EXPECT_STREQ(pd_last_error(),
               "input 'x' of function 'main' is f32[2x3], got f32[6]");
  EXPECT_EQ(pd_buffer_write(x, PD_DTYPE_F32, 2, shape23, f.data(), 20),
            PD_ERROR_MISMATCH);
  EXPECT_STREQ(pd_last_error(),
               "input 'x' of function 'main' is 24 bytes, got 20");
  EXPECT_EQ(pd_buffer_write(x, PD_DTYPE_F32, 2, shape23, nullptr, 24),
            PD_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(pd_buffer_write(x, PD_DTYPE_F32, 2, nullptr, f.data(), 24),
            PD_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(pd_buffer_write(x, static_cast<pd_dtype>(99), 2, shape23,
                            f.data(), 24),
            PD_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(pd_buffer_write(nullptr, PD_DTYPE_F32, 2, shape23, f.data(), 24),
            PD_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(pd_buffer_read(buffer(main, "y"), PD_DTYPE_I32, 2, shape23,
                           f.data(), 24),
            PD_ERROR_MISMATCH);
  EXPECT_STREQ(pd_last_error(),
               "output 'y' of function 'main' is f32[2x3], got i32[2x3]");
  pd_buffer *w = nullptr;
  ASSERT_EQ(pd_bundle_find_weight(bundle.handle, "w", &w), PD_OK);
  EXPECT_EQ(pd_buffer_write(w, PD_DTYPE_F32, 1, shape6, f.data(), 24),
            PD_ERROR_MISMATCH);
  EXPECT_STREQ(pd_last_error(), "weight 'w' is f32[2x3], got f32[6]");
  // A failed write does not count as a write.
  EXPECT_EQ(pd_function_run(main), PD_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(pd_last_error(), "function 'main': input 'x' was never written "
                                "(pd_buffer_write or pd_buffer_data)");
}

TEST_F(RuntimeTest, LookupErrors) {
  ASSERT_TRUE(opened(pd_bundle_open(dir.path().c_str(), &bundle.handle)));
  pd_function *f = reinterpret_cast<pd_function *>(0x1);
  EXPECT_EQ(pd_function_lookup(bundle.handle, "train", &f), PD_ERROR_NOT_FOUND);
  EXPECT_EQ(f, nullptr);
  EXPECT_EQ(std::string(pd_last_error()),
            dir.path() + ": no function 'train' (functions: main, affine, twice)");
  pd_buffer *b = nullptr;
  EXPECT_EQ(pd_function_find_buffer(function("main"), "z", &b),
            PD_ERROR_NOT_FOUND);
  EXPECT_STREQ(pd_last_error(),
               "function 'main' has no buffer 'z' (buffers: x, w, y)");
  EXPECT_EQ(pd_bundle_find_weight(bundle.handle, "x", &b), PD_ERROR_NOT_FOUND);
  EXPECT_EQ(pd_function_lookup(nullptr, "main", &f), PD_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(pd_function_lookup(bundle.handle, nullptr, &f),
            PD_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(pd_function_run(nullptr), PD_ERROR_INVALID_ARGUMENT);
  // Accessors tolerate NULL.
  EXPECT_STREQ(pd_function_name(nullptr), "");
  EXPECT_EQ(pd_buffer_num_bytes(nullptr), 0u);
  EXPECT_EQ(pd_buffer_data(nullptr), nullptr);
  EXPECT_EQ(pd_bundle_function_count(nullptr), 0u);
}

TEST_F(RuntimeTest, TwoOpenBundlesAreIndependent) {
  ASSERT_TRUE(opened(pd_bundle_open(dir.path().c_str(), &bundle.handle)));
  Bundle other;
  ASSERT_TRUE(opened(pd_bundle_open(dir.path().c_str(), &other.handle)));
  pd_buffer *w1 = nullptr, *w2 = nullptr;
  ASSERT_EQ(pd_bundle_find_weight(bundle.handle, "w", &w1), PD_OK);
  ASSERT_EQ(pd_bundle_find_weight(other.handle, "w", &w2), PD_OK);
  EXPECT_NE(pd_buffer_const_data(w1), pd_buffer_const_data(w2));
  static_cast<float *>(pd_buffer_data(w1))[0] = 42.f;
  EXPECT_FLOAT_EQ(static_cast<const float *>(pd_buffer_const_data(w2))[0],
                  0.5f);
}

TEST_F(RuntimeTest, MissingDirectory) {
  std::string missing = dir.file("nope");
  pd_bundle *handle = nullptr;
  EXPECT_EQ(pd_bundle_open(missing.c_str(), &handle), PD_ERROR_IO);
  EXPECT_EQ(handle, nullptr);
  EXPECT_EQ(std::string(pd_last_error()),
            missing + ": cannot open the bundle directory: No such file or "
                      "directory");
  std::string file = dir.file("bundle.json");
  EXPECT_EQ(pd_bundle_open(file.c_str(), &handle), PD_ERROR_IO);
  EXPECT_EQ(std::string(pd_last_error()), file + ": not a bundle directory");
}

TEST_F(RuntimeTest, MissingManifest) {
  std::filesystem::remove(dir.file("bundle.json"));
  EXPECT_EQ(openError(PD_ERROR_IO),
            dir.file("bundle.json") +
                ": cannot open the bundle manifest: No such file or directory");
}

TEST_F(RuntimeTest, MalformedManifest) {
  writeFile(dir.file("bundle.json"), "{\"format\": ");
  std::string message = openError(PD_ERROR_FORMAT);
  EXPECT_EQ(message.rfind(dir.file("bundle.json") + ": malformed JSON: ", 0),
            0u)
      << message;
}

TEST_F(RuntimeTest, InvalidManifestField) {
  json manifest = json::parse(testManifest());
  manifest["functions"][1]["buffers"][0]["dtype"] = "float";
  writeFile(dir.file("bundle.json"), manifest.dump());
  EXPECT_EQ(openError(PD_ERROR_FORMAT),
            dir.file("bundle.json") +
                ": functions[1].buffers[0].dtype: unknown dtype 'float' "
                "(expected one of f32 f64 f16 bf16 i64 i32 i16 i8 i1 u8 u16 "
                "u32 u64)");
}

TEST_F(RuntimeTest, MissingLibrary) {
  std::filesystem::remove(dir.file("program.so"));
  EXPECT_EQ(openError(PD_ERROR_LOAD),
            dir.file("program.so") +
                ": cannot open the bundle's library: No such file or "
                "directory");
}

TEST_F(RuntimeTest, LibraryThatIsNotALibrary) {
  writeFile(dir.file("program.so"), "not an ELF file");
  std::string message = openError(PD_ERROR_LOAD);
  EXPECT_EQ(message.rfind(dir.file("program.so") +
                              ": cannot load the bundle's library: ",
                          0),
            0u)
      << message;
}

TEST_F(RuntimeTest, MissingSymbol) {
  json manifest = json::parse(testManifest());
  manifest["functions"][2]["symbol"] = "pipedream_thrice";
  writeFile(dir.file("bundle.json"), manifest.dump());
  EXPECT_EQ(openError(PD_ERROR_LOAD),
            dir.file("program.so") +
                ": no symbol 'pipedream_thrice' for function 'twice'");
}

TEST_F(RuntimeTest, MissingWeightsFile) {
  std::filesystem::remove(dir.file("weights.bin"));
  EXPECT_EQ(openError(PD_ERROR_IO),
            dir.file("weights.bin") +
                ": cannot open the weights file: No such file or directory");
}

TEST_F(RuntimeTest, WeightsFileTooShort) {
  // `b` needs bytes [64, 76): one byte short.
  writeFile(dir.file("weights.bin"), testWeights().substr(0, 75));
  EXPECT_EQ(openError(PD_ERROR_FORMAT),
            dir.file("weights.bin") +
                ": too short: weight 'b' needs bytes [64, 76) but the file "
                "has 75");
  // An offset past the end.
  writeFile(dir.file("weights.bin"), testWeights().substr(0, 30));
  EXPECT_EQ(openError(PD_ERROR_FORMAT),
            dir.file("weights.bin") +
                ": too short: weight 'b' needs bytes [64, 76) but the file "
                "has 30");
  writeFile(dir.file("weights.bin"), "");
  EXPECT_EQ(openError(PD_ERROR_FORMAT),
            dir.file("weights.bin") +
                ": too short: weight 'w' needs bytes [0, 24) but the file "
                "has 0");
}

TEST_F(RuntimeTest, LongerWeightsFileIsFine) {
  writeFile(dir.file("weights.bin"), testWeights() + std::string(100, 'x'));
  ASSERT_TRUE(opened(pd_bundle_open(dir.path().c_str(), &bundle.handle)));
}

TEST_F(RuntimeTest, BundleWithoutWeights) {
  json manifest = json::parse(testManifest());
  manifest.erase("weights");
  manifest.erase("weights_file");
  manifest["functions"] = json::array({manifest["functions"][2]});
  writeFile(dir.file("bundle.json"), manifest.dump());
  std::filesystem::remove(dir.file("weights.bin"));
  ASSERT_TRUE(opened(pd_bundle_open(dir.path().c_str(), &bundle.handle)));
  EXPECT_EQ(pd_bundle_weight_count(bundle.handle), 0u);
}

TEST(Runtime, NullArguments) {
  pd_bundle *handle = reinterpret_cast<pd_bundle *>(0x1);
  EXPECT_EQ(pd_bundle_open(nullptr, &handle), PD_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(handle, nullptr);
  EXPECT_STREQ(pd_last_error(), "pd_bundle_open: 'dir' is NULL");
  EXPECT_EQ(pd_bundle_open("/", nullptr), PD_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(pd_bundle_open("", &handle), PD_ERROR_INVALID_ARGUMENT);
  pd_bundle_close(nullptr);
}

TEST(Runtime, LastErrorIsPerThread) {
  pd_bundle *handle = nullptr;
  EXPECT_EQ(pd_bundle_open(nullptr, &handle), PD_ERROR_INVALID_ARGUMENT);
  std::string other;
  std::thread([&] {
    other = pd_last_error();
    pd_function_run(nullptr);
  }).join();
  EXPECT_EQ(other, "");
  EXPECT_STREQ(pd_last_error(), "pd_bundle_open: 'dir' is NULL");
  pd_clear_error();
  EXPECT_STREQ(pd_last_error(), "");
}

TEST(Runtime, Enums) {
  EXPECT_EQ(pd_runtime_api_version(), PD_RUNTIME_API_VERSION);
  const pd_dtype all[] = {PD_DTYPE_F32, PD_DTYPE_F64, PD_DTYPE_F16,
                          PD_DTYPE_BF16, PD_DTYPE_I64, PD_DTYPE_I32,
                          PD_DTYPE_I8,  PD_DTYPE_I1,  PD_DTYPE_U8};
  const size_t sizes[] = {4, 8, 2, 2, 8, 4, 1, 1, 1};
  for (size_t i = 0; i < 9; ++i) {
    pd_dtype parsed;
    ASSERT_EQ(pd_dtype_from_name(pd_dtype_name(all[i]), &parsed), PD_OK);
    EXPECT_EQ(parsed, all[i]);
    EXPECT_EQ(pd_dtype_size(all[i]), sizes[i]);
  }
  pd_dtype parsed;
  EXPECT_EQ(pd_dtype_from_name("float32", &parsed), PD_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(pd_dtype_name(static_cast<pd_dtype>(42)), "?");
  EXPECT_EQ(pd_dtype_size(static_cast<pd_dtype>(42)), 0u);
  EXPECT_STREQ(pd_role_name(PD_ROLE_WEIGHT), "weight");
  EXPECT_STREQ(pd_role_name(PD_ROLE_GRAD), "grad");
  EXPECT_STREQ(pd_role_name(PD_ROLE_STATE), "state");
  EXPECT_EQ(pd_runtime_api_version(), PD_RUNTIME_API_VERSION);
  EXPECT_GE(PD_RUNTIME_API_VERSION, 2);
  EXPECT_STREQ(pd_status_string(PD_ERROR_MISMATCH), "type mismatch");
  EXPECT_STREQ(pd_status_string(static_cast<pd_status>(77)), "unknown status");
}

} // namespace
