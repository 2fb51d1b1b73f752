//===- profile-json-fuzzer.cpp - libFuzzer target for profile JSON --------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Profile::parse (lib/Dialect/Pipe/Transforms/CostModel.cpp), the reader of
// pipedream-profile's output that --cost-model / --profile use, on
// arbitrary text: a one-line error naming the file, or a profile whose
// toJSON() parses back to the same entries.
//
//===----------------------------------------------------------------------===//

#include "FuzzCheck.h"

#include "pipedream/Dialect/Pipe/Transforms/CostModel.h"

#include <cmath>
#include <cstddef>
#include <cstdint>

using namespace pipedream;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string source = "fuzz/profile.json";
  std::string error;
  auto profile = pipe::Profile::parse(
      llvm::StringRef(reinterpret_cast<const char *>(data), size), source,
      error);
  if (!profile) {
    fuzz::checkError(error, source + ": ");
    return 0;
  }
  for (const pipe::ProfileEntry &e : profile->entries)
    if (!(e.forward >= 0 && std::isfinite(e.forward)))
      fuzz::fatal("profile accepted with a bad forward time", e.op);
  auto again = pipe::Profile::parse(profile->toJSON(), source, error);
  if (!again)
    fuzz::fatal("Profile::parse rejects what toJSON wrote", error);
  if (again->entries.size() != profile->entries.size() ||
      again->device != profile->device)
    fuzz::fatal("round trip changed the profile", source);
  return 0;
}
