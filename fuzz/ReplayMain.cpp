//===- ReplayMain.cpp - run a fuzz target over files, without libFuzzer ---===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The main() of the pipedream-fuzz-replay-<target> executables, built in
// every build (no sanitizer, no libFuzzer): feeds every file under the
// given files and directories (recursively, in name order) to the target's
// LLVMFuzzerTestOneInput once. CTest runs it over fuzz/corpus/<target> and
// fuzz/regressions/<target>, so the inputs that once crashed a parser stay
// fixed in the normal build. Paths that do not exist are skipped; finding
// no input at all is an error.
//
//===----------------------------------------------------------------------===//

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

namespace fs = std::filesystem;

int main(int argc, char **argv) {
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    fs::path path(argv[i]);
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
      for (fs::recursive_directory_iterator it(path, ec), end; it != end;
           it.increment(ec))
        if (it->is_regular_file(ec) && it->path().filename() != "README.md")
          files.push_back(it->path());
    } else if (fs::is_regular_file(path, ec)) {
      files.push_back(path);
    }
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    std::fprintf(stderr, "%s: no inputs found\n", argv[0]);
    return 1;
  }
  auto start = std::chrono::steady_clock::now();
  for (const fs::path &file : files) {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "%s: cannot read %s\n", argv[0], file.c_str());
      return 1;
    }
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                            std::istreambuf_iterator<char>());
    // Printed first, so a crash names its input.
    std::fprintf(stderr, "replaying %s (%zu bytes)\n", file.c_str(),
                 bytes.size());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t *>(bytes.data()),
                           bytes.size());
  }
  double ms = std::chrono::duration<double, std::milli>(
                  std::chrono::steady_clock::now() - start)
                  .count();
  std::printf("replayed %zu inputs in %.0f ms, no failure\n", files.size(), ms);
  return 0;
}
