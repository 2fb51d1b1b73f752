//===- bundle-json-fuzzer.cpp - libFuzzer target for bundle.json ----------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// parseManifest (runtime/lib/ManifestBundle.cpp, ManifestTraining.cpp,
// ManifestRankPrograms.cpp) on arbitrary text: bundle.json with its
// functions, training section and the pipeline's rank programs.
// It may only throw runtime::Error, with a one-line message naming the
// file; any other exception escapes and is reported as a crash.
//
//===----------------------------------------------------------------------===//

#include "FuzzCheck.h"

#include "Manifest.h"

#include <cstddef>
#include <cstdint>

using namespace pipedream;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string source = "fuzz/bundle.json";
  try {
    runtime::parseManifest(
        std::string(reinterpret_cast<const char *>(data), size), source);
  } catch (const runtime::Error &e) {
    if (e.status != PD_ERROR_FORMAT)
      fuzz::fatal("parseManifest error is not PD_ERROR_FORMAT", e.what());
    fuzz::checkError(e.what(), source + ": ");
  }
  return 0;
}
