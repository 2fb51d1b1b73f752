//===- TestUtil.h - helpers shared by the runtime unit tests ----*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_RUNTIME_TEST_TESTUTIL_H
#define PIPEDREAM_RUNTIME_TEST_TESTUTIL_H

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace pipedream {
namespace test {

/// A fresh directory under $TMPDIR, removed with everything in it.
class TempDir {
public:
  TempDir() {
    const char *base = std::getenv("TMPDIR");
    std::string pattern =
        std::string(base && *base ? base : "/tmp") + "/pd-runtime-test-XXXXXX";
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    if (mkdtemp(buffer.data()))
      dir = buffer.data();
  }
  ~TempDir() {
    std::error_code ignored;
    if (!dir.empty())
      std::filesystem::remove_all(dir, ignored);
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;

  const std::string &path() const { return dir; }
  std::string file(const std::string &name) const { return dir + "/" + name; }

private:
  std::string dir;
};

inline void writeFile(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in),
                     std::istreambuf_iterator<char>());
}

/// Weight values of the test bundle (TestProgram.c's functions).
inline std::vector<float> testW() { return {0.5f, -1.f, 2.f, 3.f, 0.f, -0.25f}; }
inline std::vector<float> testB() { return {10.f, 20.f, 30.f}; }

/// bundle.json of the test bundle: `w` at offset 0, `b` at offset 64.
inline std::string testManifest() {
  return R"({
  "format": "pipedream-bundle",
  "version": 2,
  "model": "test.onnx",
  "library": "program.so",
  "weights_file": "weights.bin",
  "weights": [
    {"name": "w", "dtype": "f32", "shape": [2, 3], "offset": 0, "bytes": 24},
    {"name": "b", "dtype": "f32", "shape": [3], "offset": 64, "bytes": 12}
  ],
  "functions": [
    {"name": "main", "symbol": "pipedream_main", "kind": "inference",
     "buffers": [
       {"name": "x", "role": "input", "dtype": "f32", "shape": [2, 3]},
       {"name": "w", "role": "weight", "dtype": "f32", "shape": [2, 3]},
       {"name": "y", "role": "output", "dtype": "f32", "shape": [2, 3]}]},
    {"name": "affine", "symbol": "pipedream_affine", "kind": "inference",
     "buffers": [
       {"name": "x", "role": "input", "dtype": "f32", "shape": [2, 3]},
       {"name": "w", "role": "weight", "dtype": "f32", "shape": [2, 3]},
       {"name": "b", "role": "weight", "dtype": "f32", "shape": [3]},
       {"name": "y", "role": "output", "dtype": "f32", "shape": [2, 3]},
       {"name": "aligned", "role": "output", "dtype": "i1", "shape": []}]},
    {"name": "twice", "symbol": "pipedream_twice", "kind": "inference",
     "buffers": [
       {"name": "n", "role": "input", "dtype": "i32", "shape": [4]},
       {"name": "m", "role": "output", "dtype": "i64", "shape": [4]}]}
  ]
})";
}

/// weights.bin of the test bundle (76 bytes).
inline std::string testWeights() {
  std::string bytes(76, '\0');
  std::vector<float> w = testW(), b = testB();
  std::memcpy(&bytes[0], w.data(), w.size() * sizeof(float));
  std::memcpy(&bytes[64], b.data(), b.size() * sizeof(float));
  return bytes;
}

/// Initial weight of the training bundle (TestProgram.c's train_linear).
inline std::vector<float> linearW() { return {0.5f, -1.f, 2.f}; }

/// bundle.json of a training bundle on TestProgram.c's linear model:
/// mse, M = 2 micro-batches of 2 samples, SGD with momentum 0.9, lr 0.1.
inline std::string linearManifest() {
  return R"({
  "format": "pipedream-bundle",
  "version": 2,
  "model": "model.onnx",
  "library": "program.so",
  "weights_file": "weights.bin",
  "weights": [
    {"name": "w", "dtype": "f32", "shape": [3], "offset": 0, "bytes": 12}
  ],
  "functions": [
    {"name": "train_microbatch", "symbol": "pipedream_train_linear",
     "kind": "train_microbatch",
     "buffers": [
       {"name": "x", "role": "input", "dtype": "f32", "shape": [2, 3]},
       {"name": "y", "role": "input", "dtype": "f32", "shape": [2]},
       {"name": "w", "role": "weight", "dtype": "f32", "shape": [3]},
       {"name": "grad:w", "role": "grad", "dtype": "f32", "shape": [3]},
       {"name": "loss", "role": "output", "dtype": "f32", "shape": []},
       {"name": "grad:w'", "role": "output", "dtype": "f32", "shape": [3],
        "updates": "grad:w"}]},
    {"name": "update", "symbol": "pipedream_update_linear", "kind": "update",
     "buffers": [
       {"name": "w", "role": "weight", "dtype": "f32", "shape": [3]},
       {"name": "grad:w", "role": "grad", "dtype": "f32", "shape": [3]},
       {"name": "momentum_buffer:w", "role": "state", "dtype": "f32",
        "shape": [3]},
       {"name": "step", "role": "state", "dtype": "f32", "shape": []},
       {"name": "w'", "role": "output", "dtype": "f32", "shape": [3],
        "updates": "w"},
       {"name": "momentum_buffer:w'", "role": "output", "dtype": "f32",
        "shape": [3], "updates": "momentum_buffer:w"},
       {"name": "step'", "role": "output", "dtype": "f32", "shape": [],
        "updates": "step"}]},
    {"name": "predict", "symbol": "pipedream_predict_linear",
     "kind": "inference",
     "buffers": [
       {"name": "x", "role": "input", "dtype": "f32", "shape": [2, 3]},
       {"name": "w", "role": "weight", "dtype": "f32", "shape": [3]},
       {"name": "p", "role": "output", "dtype": "f32", "shape": [2]}]}
  ],
  "training": {
    "loss": "mse", "labels": "y", "microbatches": 2, "microbatch_size": 2,
    "batch_size": 4, "inputs": ["x"], "step_function": "train_microbatch",
    "update_function": "update",
    "optimizer": {"kind": "momentum", "lr": 0.1, "momentum": 0.9}
  }
})";
}

/// weights.bin of the training bundle.
inline std::string linearWeights() {
  std::vector<float> w = linearW();
  std::string bytes(w.size() * sizeof(float), '\0');
  std::memcpy(&bytes[0], w.data(), bytes.size());
  return bytes;
}

/// bundle.json of a training bundle on TestProgram.c's train_probe: records
/// the rows of each micro-batch; cross-entropy over 5 classes, M = 2, b = 2.
inline std::string probeManifest() {
  return R"({
  "format": "pipedream-bundle",
  "version": 2,
  "library": "program.so",
  "functions": [
    {"name": "train_probe", "symbol": "pipedream_train_probe",
     "kind": "train_microbatch",
     "buffers": [
       {"name": "x", "role": "input", "dtype": "f32", "shape": [2, 3]},
       {"name": "labels", "role": "input", "dtype": "i64", "shape": [2]},
       {"name": "seen", "role": "state", "dtype": "f32", "shape": [4, 3]},
       {"name": "calls", "role": "state", "dtype": "f32", "shape": []},
       {"name": "loss", "role": "output", "dtype": "f32", "shape": []},
       {"name": "seen'", "role": "output", "dtype": "f32", "shape": [4, 3],
        "updates": "seen"},
       {"name": "calls'", "role": "output", "dtype": "f32", "shape": [],
        "updates": "calls"}]},
    {"name": "update_probe", "symbol": "pipedream_update_probe",
     "kind": "update",
     "buffers": [
       {"name": "calls", "role": "state", "dtype": "f32", "shape": []},
       {"name": "calls_seen", "role": "output", "dtype": "f64", "shape": []}]}
  ],
  "training": {
    "loss": "cross-entropy", "labels": "labels", "num_classes": 5,
    "microbatches": 2, "microbatch_size": 2, "batch_size": 4,
    "inputs": ["x"], "step_function": "train_probe",
    "update_function": "update_probe"
  }
})";
}

/// The test input built at `built` (a path compiled in by CMake), or the
/// file of the same name in $PIPEDREAM_TEST_FILES when that is set: the
/// GPU kit (scripts/gpu-kit.sh) runs the device tests on another machine,
/// where the build tree does not exist.
inline std::string testFile(const char *built) {
  const char *dir = std::getenv("PIPEDREAM_TEST_FILES");
  if (!dir || !*dir)
    return built;
  return std::string(dir) + "/" +
         std::filesystem::path(built).filename().string();
}

/// Writes a bundle into `dir`: the manifest, the weights and a copy of the
/// test program (built from TestProgram.c) as program.so.
inline void makeBundle(const std::string &dir,
                       const std::string &manifest = testManifest(),
                       const std::string &weights = testWeights()) {
  writeFile(dir + "/bundle.json", manifest);
  writeFile(dir + "/weights.bin", weights);
  std::filesystem::copy_file(
      testFile(PIPEDREAM_TEST_PROGRAM), dir + "/program.so",
      std::filesystem::copy_options::overwrite_existing);
}

/// True when PIPEDREAM_TEST_PYTHON can import numpy.
inline bool haveNumpy() {
  static int cached = -1;
  if (cached < 0)
    cached = std::system(PIPEDREAM_TEST_PYTHON
                         " -c 'import numpy' >/dev/null 2>&1") == 0;
  return cached == 1;
}

/// Runs a Python snippet (with `numpy as np` imported) with `args` in
/// sys.argv[1:]; true when it exits 0.
inline bool runPython(const std::string &dir, const std::string &code,
                      const std::string &args = "") {
  std::string script = dir + "/script.py";
  writeFile(script, "import sys\nimport numpy as np\n" + code);
  std::string command =
      std::string(PIPEDREAM_TEST_PYTHON) + " " + script + " " + args;
  return std::system(command.c_str()) == 0;
}

} // namespace test
} // namespace pipedream

#endif // PIPEDREAM_RUNTIME_TEST_TESTUTIL_H
