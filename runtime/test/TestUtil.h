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
  "version": 1,
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

/// Writes a bundle into `dir`: the manifest, the weights and a copy of the
/// test program (built from TestProgram.c) as program.so.
inline void makeBundle(const std::string &dir,
                       const std::string &manifest = testManifest(),
                       const std::string &weights = testWeights()) {
  writeFile(dir + "/bundle.json", manifest);
  writeFile(dir + "/weights.bin", weights);
  std::filesystem::copy_file(
      PIPEDREAM_TEST_PROGRAM, dir + "/program.so",
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
